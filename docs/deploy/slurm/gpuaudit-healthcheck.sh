#!/bin/sh
# Slurm HealthCheckProgram (slurm.conf: HealthCheckProgram=/usr/local/sbin/gpuaudit-healthcheck.sh,
# HealthCheckInterval=3600) or an NHC-style check, run as root by slurmd.
#
# * slurmd starts it with an EMPTY environment (only PWD and SLURMD_NODENAME): PATH is set and exported here.
# * The node is unhealthy (exit 1 of `gpuaudit-tui --health` with a CRITICAL line): it is drained with the
#   line as reason ("gpuaudit: CRITICAL [host] pcie.max_read_req ..."), cut at a word boundary.
# * The node is healthy again: a node drained by THIS script (reason starting "gpuaudit: " or
#   "gpuaudit failed: ") is resumed; a drain with any other reason (an admin's, NHC's) is never touched.
# * The auditor itself failed (not installed, a bad upgrade, a traceback, the deadline): logged (syslog tag
#   gpuaudit-healthcheck, and GPUAUDIT_LOG if set) and NOT drained, unless GPUAUDIT_DRAIN_ON_FAILURE=yes
#   (then the reason starts "gpuaudit failed: ").
# * Slurm kills a health check after 60 s: the audit gets TERM at GPUAUDIT_DEADLINE (40 s; it stops every
#   command it started, each in its own process group) and KILL 5 s later; commands get 8 s each.
#
# Site settings, all optional, in /etc/default/gpuaudit-healthcheck (a shell fragment):
#   GPUAUDIT_PROBES=driver,pcie,power,nvlink,kernel,numa   GPUAUDIT_DEADLINE=40   GPUAUDIT_DRAIN_ON_FAILURE=no
#   GPUAUDIT_LOG=/var/log/gpuaudit-healthcheck.log   PATH=...   SLURM_CONF=...
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
GPUAUDIT_HC_CONF=${GPUAUDIT_HC_CONF:-/etc/default/gpuaudit-healthcheck}
# shellcheck disable=SC1090
[ -r "$GPUAUDIT_HC_CONF" ] && . "$GPUAUDIT_HC_CONF"
[ -n "${SLURM_CONF:-}" ] && export SLURM_CONF
PROBES=${GPUAUDIT_PROBES:-driver,pcie,power,nvlink,kernel,numa}
DEADLINE=${GPUAUDIT_DEADLINE:-40}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
MAX_REASON=200

log() {
  logger -t gpuaudit-healthcheck -- "$NODE: $1" 2>/dev/null
  [ -n "$GPUAUDIT_LOG" ] && printf '%s %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NODE" "$1" >>"$GPUAUDIT_LOG"
  return 0
}

# At most MAX_REASON bytes, cut at the last space before the limit (never mid-word), "..." when cut.
cut_reason() {
  printf '%s\n' "$1" | awk -v n="$MAX_REASON" '{
    if (length($0) <= n) { print; exit }
    s = substr($0, 1, n - 3); if (substr($0, n - 2, 1) != " ") sub(/ [^ ]*$/, "", s)
    sub(/ +$/, "", s); print s "..." }'
}

# scontrol is bounded too (5 s a call, at most two calls a run): 45 + 10 s stays under Slurm's 60 s
SHOW=""
show_node() { SHOW=$(timeout 5 scontrol show node "$NODE" 2>/dev/null); }
node_field() {  # State or Reason of this node, from the last `scontrol show node`
  printf '%s\n' "$SHOW" | sed -n "s/^ *$1=//p" | head -n 1
}

ours() {  # a reason this script wrote
  case "$1" in "gpuaudit: "* | "gpuaudit failed: "*) return 0 ;; esac
  return 1
}

drain() {
  reason=$(cut_reason "$1")
  show_node
  current=$(node_field Reason)
  case "$(node_field State)" in
    *DRAIN* | *FAIL*)
      if [ -n "$current" ] && ! ours "$current"; then
        log "not draining (already drained by someone else: $current): $reason"
        return 0
      fi ;;
  esac
  log "draining: $reason"
  timeout 5 scontrol update nodename="$NODE" state=drain reason="$reason"
}

resume_if_ours() {
  show_node
  state=$(node_field State)
  case "$state" in *DRAIN*) ;; *) return 0 ;; esac
  current=$(node_field Reason)
  current=${current% \[*\]}  # scontrol appends " [user@time]"
  if ours "$current"; then
    log "healthy again: resuming (was: $current)"
    timeout 5 scontrol update nodename="$NODE" state=resume
  fi
}

# TERM at the deadline (the audit kills its commands' process groups), KILL 5 s later as the backstop.
errors=$(mktemp 2>/dev/null || echo /dev/null)
line=$(timeout -k 5 "$DEADLINE" gpuaudit-tui --health --fail-on critical --timeout 8 --probes "$PROBES" 2>"$errors")
rc=$?
last_error=$(tail -n 1 "$errors" 2>/dev/null | cut -c1-200)
[ "$errors" != /dev/null ] && rm -f "$errors"
line=$(printf '%s\n' "$line" | head -n 1)
case "$rc:$line" in
  0:*)
    echo "gpuaudit: $line"
    resume_if_ours
    exit 0 ;;
  1:CRITICAL\ *)
    echo "gpuaudit: $line"
    drain "gpuaudit: $line"
    exit 1 ;;
  124:* | 137:*) why="the audit did not finish in $DEADLINE s (stopped)" ;;
  126:* | 127:*) why="gpuaudit-tui could not be run (exit $rc; is it installed in $PATH?)" ;;
  *) why="exit $rc${line:+: $line}" ;;
esac
# The auditor failed: that says nothing about the node's health.
echo "gpuaudit failed: $why"
log "auditor failed: $why${last_error:+ (stderr: $last_error)}"
case "${GPUAUDIT_DRAIN_ON_FAILURE:-no}" in
  yes | 1 | true) drain "gpuaudit failed: $why" ;;
esac
exit 0
