"""The engine scans' command lines: which processes are the serving engine, their status, logs and model files.

Text only, built from parts (the names scanned for, the environment kept, the read-as-owner helper): declaring
the commands (probes/core/sources.py, the catalogue an audit launches from) loads no parsing code, so an audit's
first commands leave before the parsers load (issue 30). engine.py and model_files.py parse what these print and
re-export them; `embedded_lines`/`choice_source` embed this folder's modules in target-side readers.
"""

from __future__ import annotations

from pathlib import Path

# Variables worth keeping from an engine's environment; everything else (and every secret) stays behind.
# Prefixes end in "_"; whole names are matched with their "=". The discovery command's grep is built from it.
ENV_KEEP = (
    "NCCL_",
    "CUDA_",
    "TORCH_",
    "PYTORCH_",
    "VLLM_",
    "SGLANG_",
    "SGL_",
    "FLASHINFER_",
    "OMP_",
    "NVIDIA_",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "TRITON_",
    "TGI_",
    "MKL_NUM_THREADS",
)
_ENV_GREP = "|".join(k if k.endswith("_") else k + "=" for k in ENV_KEEP)

# The scans below fork twice per process to read its command line (`$(tr ... < cmdline)`): 1 s for 90
# processes on a loaded box, seconds on a server running thousands, and they were an audit's slowest commands.
# One grep over every command line first names the candidates; the loop forks only for those (and for the
# PIDs nvidia-smi lists), and its own tests then decide exactly as before. Where grep cannot run (missing:
# 127; an argument list over the kernel's limit: 126) every process is read as before. The names are spelled once
# here: the grep's pattern and the loop's own `case` test (`_NAME_CASE`); the logs' patterns are a subset.
SCAN_NAMES = "sglang|vllm|VLLM|text-generation-"
_NAME_CASE = "|".join(f"*{name}*" for name in SCAN_NAMES.split("|"))
"""The loop's own test on a command line (a `case` pattern): the same names as the grep's."""


def scan_candidates(names: str = SCAN_NAMES) -> str:
    """Shell: `cand` = the cmdline paths whose text matches `names` (one grep), or ALL when grep could not run or
    does not read past a NUL: this shell's own command line (`sh\\0-c\\0<this script>`) holds the names only after
    one, so a grep that stops at the first NUL (regexec without REG_STARTEND) would miss `python3 -m sglang...`."""
    return (
        f"cand=$(grep -l -s -E '{names}' /proc/[0-9]*/cmdline 2>/dev/null); "
        "[ $? -lt 126 ] || cand=ALL; "
        f"grep -q -s -E '{names}' /proc/$$/cmdline || cand=ALL; "
    )


def skip_unless_candidate(apps: bool) -> str:
    """Shell, first in the loop over `d`: next process unless grep named it (or nvidia-smi did, with `apps`)."""
    other = (
        'k=; for a in $apps; do [ "${a%%,*}" = "${d#/proc/}" ] && k=1; done; [ -n "$k" ] || continue;;'
        if apps
        else "continue;;"
    )
    return f'case "$cand" in ALL|*"$d/cmdline"*) ;; *) {other} esac; '


def engine_loop(app_pid: str, limit: int) -> str:
    """Shell: the engine scans' loop head (procs, status): for each process `d` that grep named or nvidia-smi
    listed, `p` its pid and `c` its command line; our own shells (`@@p` markers) skipped; a process matches by
    name or by a PID in `$apps` (`app_pid`: how one entry of it reads as a pid); `@@more` after `limit` of them."""
    return (
        scan_candidates()
        + "n=0; for d in /proc/[0-9]*; do "
        + skip_unless_candidate(apps=True)
        + "p=${d#/proc/}; "
        "c=$(tr '\\0' ' ' 2>/dev/null < $d/cmdline); [ -n \"$c\" ] || continue; "
        "case \"$c\" in *@@p*|*@@gpuaudit-*|*'export LC_ALL'*) continue;; esac; hit=; "
        f'case "$c" in {_NAME_CASE}) hit=1;; esac; '
        f'for a in $apps; do [ "{app_pid}" = "$p" ] && hit=1; done; [ -n "$hit" ] || continue; '
        f"n=$((n+1)); [ $n -le {limit} ] || {{ echo '@@more'; break; }}; "
    )


# Finds engine processes by name (SGLang/vLLM/TGI, including setproctitle'd workers) and by the PIDs
# nvidia-smi reports (host side; inside a container nvidia-smi lists none). Our own shell, whose
# command line contains a marker "@@p..." (this one, the pyenv one), is skipped. Read-only: only /proc reads and echo.
ENGINE_PROCS_SHELL = (
    'echo "@@auditor $(id -u)"; '
    "apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' '); "
    + engine_loop(app_pid="$a", limit=32)
    + 'echo "@@pid $p"; echo "@@uid $(awk \'/^Uid:/ {print $3}\' $d/status 2>/dev/null)"; '
    "printf '@@exe %s\\n' \"$(readlink $d/exe 2>/dev/null | tr '\\n' ' ')\"; echo '@@cmdline'; "
    "tr '\\0' '\\n' 2>/dev/null < $d/cmdline; echo; echo '@@environ'; "
    "tr '\\0' '\\n' 2>/dev/null < $d/environ | grep -E '^("
    + _ENV_GREP
    + ")' || echo '@@environ-unreadable'; "
    "echo '@@maps'; grep -o '/[^ ]*libnccl[^ ]*' $d/maps 2>/dev/null | sort -u; echo '@@end'; done; "
    "[ $n -gt 0 ] || echo '@@none'"
)


def embedded_lines(name: str) -> list[str]:
    """A module of this folder as lines to embed in a target-side python3 -I -S -B reader: comment lines,
    one-line docstrings and blank lines dropped."""
    lines = []
    for line in (Path(__file__).with_name(name)).read_text("utf-8").splitlines():
        bare = line.strip()
        if bare and not bare.startswith("#") and not (bare[:3] == '"""' == bare[-3:]):
            lines.append(line)
    return lines


def choice_source() -> list[str]:
    """engine_choice.py as lines to embed (`embedded_lines`) in a target-side reader (pyenv_reader.py, the metrics
    finder); it holds no single quote."""
    return embedded_lines("engine_choice.py")


# Same discovery as ENGINE_PROCS_SHELL (name match or nvidia-smi compute PID; our own shells carry "@@p"),
# then per process: affinity, RSS/swap/thread count from /proc/<pid>/status and the resident kB per NUMA
# node summed from /proc/<pid>/numa_maps (pages x kernelpagesize_kB). `@@apps` maps host PIDs to GPU UUIDs.
# Read-only: /proc reads, awk sums (no ">" anywhere: the lint), echo.
ENGINE_STATUS_SHELL = (
    'echo "@@auditor $(id -u)"; '
    "apps=$(nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader 2>/dev/null | tr -d ' '); "
    'echo \'@@apps\'; for a in $apps; do echo "$a"; done; echo "@@online $(cat /sys/devices/system/cpu/online 2>/dev/null)"; '
    + engine_loop(app_pid="${a%%,*}", limit=64)
    + "echo \"@@pid $p\"; echo \"@@uid $(awk '/^Uid:/ {print $3}' $d/status 2>/dev/null)\"; printf '@@cmd %s\\n' \"$(printf %s \"$c\" | tr '\\n' ' ' | cut -c1-160)\"; "
    "grep -E '^(Cpus_allowed_list|Mems_allowed_list|VmRSS|VmSwap|Threads):' $d/status 2>/dev/null; echo '@@numa'; "
    'awk \'{k=4; for(i=2;i<=NF;i++) if ($i ~ /^kernelpagesize_kB=/) {split($i,b,"="); k=b[2]} '
    'for(i=2;i<=NF;i++) if ($i ~ /^N[0-9]+=/) {split($i,a,"="); s[a[1]]+=a[2]*k}} END{for(x in s) print x, s[x]}\' '
    "$d/numa_maps 2>/dev/null || echo '@@numa-unreadable'; echo '@@end'; done; [ $n -gt 0 ] || echo '@@none'"
)


# Reads a file a target user controls as that user (issue 29): `rd CMD...` runs CMD with the uid/gid of the
# process in $d when the audit is root and the process is not (setpriv; without setpriv it refuses), so a
# symlink from the user's tree to a root-only file fails as it would for the user. Define after $d is set.
AS_OWNER_SHELL = (
    "u=$(awk '/^Uid:/ {print $3}' $d/status 2>/dev/null); g=$(awk '/^Gid:/ {print $3}' $d/status 2>/dev/null); "
    'rd() { if [ "$(id -u)" != 0 ] || [ "$u" = 0 ]; then "$@"; '
    'elif [ -n "$u" ] && [ -n "$g" ] && command -v setpriv 1>/dev/null; then '
    'setpriv --reuid="$u" --regid="$g" --clear-groups -- "$@"; '
    'else echo "refused: reading as uid ${u:-unknown} needs setpriv" 1>&2; return 1; fi; }; '
)

# The engine's API server (at most two): where its stdout goes (a regular file, else the systemd unit's
# journal), then the NCCL INFO lines that name a transport (the first 96) and the engine's own throughput lines
# (the last 20), both from one pass over the log (awk prints the @@throughput section at its end).
ENGINE_LOGS_SHELL = (
    'echo "@@auditor $(id -u)"; '
    + scan_candidates()
    + "n=0; for d in /proc/[0-9]*; do "
    + skip_unless_candidate(apps=False)
    + "c=$(tr '\\0' ' ' 2>/dev/null < $d/cmdline); "
    "case \"$c\" in *@@p*|*@@gpuaudit-*|*'export LC_ALL'*) continue;; *sglang.launch_server*|*sglang.srt.entrypoints*|*'sglang serve'*|"
    "*vllm.entrypoints*|*'vllm serve'*|*text-generation-launcher*) ;; *) continue;; esac; "
    "n=$((n+1)); [ $n -le 2 ] || { echo '@@more'; break; }; o=$(readlink $d/fd/1 2>/dev/null); "
    + AS_OWNER_SHELL
    + 'j=$(grep -o \'[^/]*[.]service\' $d/cgroup 2>/dev/null | tail -n1); echo "@@pid ${d#/proc/}"; echo "@@uid $u"; '
    "q=$(printf %s \"$o\" | tr '\\n' ' '); printf '@@stdout %s\\n' \"$q\"; "
    'if [ -f "$o" ]; then printf \'@@source file %s\\n\' "$q"; src() { rd tail -n 200000 "$o"; }; '
    'elif [ -n "$j" ]; then printf \'@@source journal %s\\n\' "$j"; src() { journalctl -u "$j" -b -n 200000 --no-pager -o cat 2>/dev/null; }; '
    "else echo '@@source none'; src() { :; }; fi; "
    "echo '@@nccl'; src | awk '/NCCL INFO.*( via |Connected all|NCCL version)/ { if (k < 96) print; k++ } "
    "/gen throughput|generation throughput|Mean acceptance length/ { t[m % 20] = $0; m++ } "
    "END { print \"@@throughput\"; for (i = (m < 20 ? 0 : m - 20); i < m; i++) print t[i % 20] }'; echo '@@end'; done; "
    "[ $n -gt 0 ] || echo '@@none'"
)


MODEL_FILES_SHELL = (
    scan_candidates()
    + "for d in /proc/[0-9]*; do "
    + skip_unless_candidate(apps=False)
    + "c=$(tr '\\0' '\\n' 2>/dev/null < $d/cmdline); case \"$c\" in *@@p*|*@@gpuaudit-*|*'export LC_ALL'*) continue;;"
    " *sglang.launch_server*|*sglang.srt.entrypoints*|*sglang*serve*|*vllm.entrypoints*|*vllm*serve*) ;;"
    " *) continue;; e"
    'sac; m=$(printf \'%s\\n\' "$c" | awk \'f && !/^-/ { print; exit } f { f = 0 } $0 == "--model-path" || $0 == "--model" || $0 ='
    '= "serve" { f = 1 } /^--model(-path)?=/ { sub(/^--model(-path)?=/, ""); print; exit }\'); [ -n "$m" ]'
    " || continue; "
    + AS_OWNER_SHELL
    + 'echo "@@pid ${d#/proc/}"; echo "@@uid $u"; printf \'@@model %s\\n\' "$m"; case "$m" in /*) p=$m;; *) p=$(readlink $d/cwd 2>/dev/null)/$m;; es'
    "ac; if [ ! -d \"$p\" ]; then h=$(tr '\\0' '\\n' 2>/dev/null < $d/environ | grep -m1 '^HF_HOME=' | cut -d"
    '= -f2-); r=models--$(printf %s "$m" | sed \'s#/#--#g\'); for hub in "${h:-/nonexistent}/hub" /root/.ca'
    "che/huggingface/hub /home/*/.cache/huggingface/hub; do "
    # a hub of another user is not read for a root engine: rd reads as the engine's uid, and as root
    # it would follow that user's symlinks (config.json -> a root-only file) into the report
    'ho=$(stat -c %u "$hub" 2>/dev/null); [ "$ho" = 0 ] || [ "$ho" = "$u" ] || continue; '
    's=$(ls -d "$hub/$r"/snapshots/* 2>/dev/null |'
    ' head -n1); if [ -n "$s" ]; then p=$s; break; fi; done; fi; printf \'@@path %s\\n\' "$p"; for f in config.json h'
    'f_quant_config.json; do if [ -f "$p/$f" ] && ! rd test -r "$p/$f"; then echo "unreadable as the engi'
    'ne\'s user: $p/$f" 1>&2; elif [ -f "$p/$f" ]; then echo "@@file $f"; rd head -c 1048576 "$p/$f"; ech'
    'o; fi; done; if [ -f "$p/model.safetensors.index.json" ] && rd test -r "$p/model.safetensors.index.js'
    "on\"; then echo '@@file model.safetensors.index.json (head)'; rd head -c 4096 \"$p/model.safetensors."
    "index.json\"; echo; fi; echo '@@end'; break; done"
)
