"""The serving engine's model files (config.json, hf_quant_config.json, the head of the safetensors index).

The shell finds the first SGLang/vLLM server process, takes its --model-path / --model / `serve` argument, resolves a
relative path against the process's cwd and a Hugging Face repo id against the hub cache (HF_HOME of the process,
root's and users' caches), then prints each file capped (1 MiB; the index only its first 4 KiB, where
`metadata.total_size` sits). Its own shell is skipped by the `@@p` marker every engine scan carries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.engine import (
    AS_OWNER_SHELL,
    scan_candidates,
    skip_unless_candidate,
)
from gpuaudit.probes.core.parsing import parse_once

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


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The served model's folder: its config files as the listing gives them, and the engine process it was read for."""

    model: str
    """What the engine was given (a path or a Hugging Face repo id)."""
    path: str
    files: dict[str, str] = field(default_factory=dict)
    """file name -> text ("model.safetensors.index.json (head)" holds only the first 4 KiB)."""
    pid: int | None = None
    """The process whose model this is (the first API server with a model argument; None in older outputs):
    the roofline uses the files only when it is the engine the python probe judged (issue 29)."""
    uid: int | None = None
    """That process's owner (effective uid); None when not read."""

    def json(self, name: str) -> dict[str, Any] | None:
        """A file parsed as a JSON object; None when absent. Raises ParseError when present but unreadable."""
        text = self.files.get(name)
        if text is None:
            return None
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"{name}: not JSON ({str(exc)[:80]})") from None
        if not isinstance(doc, dict):
            raise ParseError(f"{name}: not a JSON object")
        return doc

    @property
    def total_size(self) -> int | None:
        """`metadata.total_size` of the safetensors index: the checkpoint's exact bytes on disk."""
        m = re.search(
            r'"total_size"\s*:\s*(\d+)', self.files.get("model.safetensors.index.json (head)", "")
        )
        return int(m.group(1)) if m else None


@parse_once
def parse_model_files(text: str) -> ModelFiles | None:
    """Output of MODEL_FILES_SHELL -> the files, or None when no engine with a model argument runs.

    @@model zai-org/GLM-5
    @@path /root/.cache/huggingface/hub/models--zai-org--GLM-5/snapshots/0a1b2c
    @@file config.json
    {"architectures": ["GlmMoeDsaForCausalLM"], ...}
    @@end
    """
    model = path = None
    files: dict[str, str] = {}
    current: str | None = None
    ended = False
    head: dict[str, int | None] = {}
    for line in text.splitlines():
        if model is None and line[:6] in ("@@pid ", "@@uid ") and line[2:5] not in head:
            # the header the shell prints before any file content: a file's line cannot set it
            head[line[2:5]] = int(line[6:].strip()) if line[6:].strip().isdigit() else None
        elif line.startswith("@@model "):
            model = line[8:].strip()
        elif line.startswith("@@path "):
            path = line[7:].strip()
        elif line.startswith("@@file "):
            current = line[7:].strip()
            files[current] = ""
        elif line == "@@end":
            ended = True
            current = None
        elif current is not None:
            files[current] += line + "\n"
    if model is None:
        return None
    if not ended:
        raise ParseError("model files: output ends before @@end (cut short)")
    return ModelFiles(
        model=model, path=path or "", files=files, pid=head.get("pid"), uid=head.get("uid")
    )
