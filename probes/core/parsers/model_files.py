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
from gpuaudit.probes.core.parsers.engine_lines import (  # declared apart (issue 30)
    MODEL_FILES_SHELL as MODEL_FILES_SHELL,
)
from gpuaudit.probes.core.parsing import parse_once


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
