#!/bin/sh
# Benchmark stand-in for GPU/hardware tools on a GPU-less machine (NOT a real tool): the benchmark links
# nvidia-smi, lspci, dmidecode, numactl and systemd-detect-virt to this script on the test sshd's PATH.
# It replays a real recorded output (outputs/, see each SOURCES.md) after a typical duration of the real
# tool, so the audit's timing resembles a GPU server's:
#   nvidia-smi -q        0.8 s  (driver round trips for every GPU field; 0.3-1 s typical with persistence mode)
#   other nvidia-smi     0.3 s  (driver init dominates each call)
#   lspci -vv/-vvv       0.1 s  (config-space reads of every device)   other lspci  0.05 s
#   dmidecode            0.15 s                                          numactl, systemd-detect-virt  0.01 s
# GPUAUDIT_BENCH_FAST=1 skips the delays (quick mode). GPUAUDIT_BENCH_BIG=REC:BYTES makes the calls of
# recording REC (e.g. smi-q-xml) print BYTES of filler instead (the big-output scenario).
here=$(dirname "$0")
out="$here/outputs"
tool=$(basename "$0")
case "$tool $*" in
  "nvidia-smi -q -x"*) rec=smi-q-xml; delay=0.8; file=nvidia/nvidia-smi-q/a100-sxm4-80gb-4gpu-555.txt ;;  # text, not XML
  "nvidia-smi -q"*|"nvidia-smi -a"*) rec=smi-q; delay=0.8; file=nvidia/nvidia-smi-q/a100-sxm4-80gb-4gpu-555.txt ;;
  "nvidia-smi topo -m"*) rec=smi-topo; delay=0.3; file=nvidia/nvidia-smi-topo-m/a100-sxm4-4gpu-nv12-roce-nic-raw-tabs.txt ;;
  "nvidia-smi nvlink"*) rec=smi-nvlink; delay=0.3; file=nvidia/nvidia-smi-nvlink-s/a100-sxm4-4gpu-12links-25gbs-raw-tabs.txt ;;
  "nvidia-smi --query"*) rec=smi-query; delay=0.3; file=nvidia/nvidia-smi-query-gpu-csv/a100-sxm4-4gpu-index-name-mem-computecap-driver.txt ;;
  nvidia-smi*) rec=smi; delay=0.3; file=nvidia/nvidia-smi/a100-sxm4-80gb-4gpu-555.txt ;;
  "lspci "*-vv*) rec=lspci-vv; delay=0.1; file=system/lspci-vvv/connectx7-esc8000a-32gt-acs-off-unsupreq.txt ;;
  lspci*) rec=lspci; delay=0.05; file=system/lspci-vvv/connectx7-esc8000a-32gt-acs-off-unsupreq.txt ;;
  dmidecode*) rec=dmidecode; delay=0.15; file=system/dmidecode/dell-r7625-full.txt ;;
  numactl*) rec=numactl; delay=0.01; file=system/numactl-hardware/asus-esc8000a-e12-epyc9374f-2s-smt-off.txt ;;
  systemd-detect-virt*) rec=virt; delay=0.01; file=system/systemd-detect-virt/proxmox-lxc-rockylinux86.txt ;;
  *) echo "$tool: benchmark stand-in has no recording for: $*" >&2; exit 1 ;;
esac
[ -n "$GPUAUDIT_BENCH_FAST" ] || sleep "$delay"
if [ -n "$GPUAUDIT_BENCH_BIG" ] && [ "${GPUAUDIT_BENCH_BIG%%:*}" = "$rec" ]; then
  yes "benchmark filler: a huge output from a stand-in $tool, not a real recording" | head -c "${GPUAUDIT_BENCH_BIG#*:}"
  exit 0
fi
exec cat "$out/$file"
