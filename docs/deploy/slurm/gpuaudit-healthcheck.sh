#!/bin/sh
# Slurm HealthCheckProgram (slurm.conf: HealthCheckProgram=/usr/local/sbin/gpuaudit-healthcheck.sh,
# HealthCheckInterval=3600) or an NHC check. Slurm kills a health check after 60 s: the audit gets 50 s
# in all (commands 8 s each) and only the probes that judge node health, never load-generating ones.
# On a critical finding the node is drained with a one-line reason: worst check, its owner and the fix.
PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
PROBES="${GPUAUDIT_PROBES:-driver,pcie,power,nvlink,kernel,numa}"
line=$(timeout -s KILL 50 gpuaudit-tui --health --fail-on critical --timeout 8 --probes "$PROBES" 2>/dev/null)
rc=$?
case $rc in
  0) exit 0 ;;
  1) reason="gpuaudit: $line" ;;
  137) reason="gpuaudit: audit did not finish in 50 s" ;;
  *) reason="gpuaudit: could not audit this node (exit $rc): $line" ;;
esac
echo "$reason"
if [ -n "$SLURMD_NODENAME" ] || command -v scontrol >/dev/null 2>&1; then
  scontrol update nodename="${SLURMD_NODENAME:-$(hostname -s)}" state=drain reason="$(printf %.200s "$reason")"
fi
exit 1
