"""The engine's Python environment: a read-only inspection snippet, its JSON, and collect-env reports.

Owner: the python/nccl probes. Public API:

* `PYENV_SHELL`                        the command (uses the `{python}` template parameter)
* `parse_pyenv_json(text) -> PyEnv`    the snippet's output
* `parse_collect_env(text) -> PyEnv`   `python -m torch.utils.collect_env`, vLLM `collect_env.py` (old and
                                       sectioned formats) and `python3 -m sglang.check_env` reports
* `cuda_major_minor(text)`, `arch_sms(arch_list)` helpers

Design: nothing is executed that a target user chose (issue 29). A stdlib-only reader (`pyenv_reader.py`), run
by the target's root-owned python3 with `-I -S -B`, reads the engine's environment as data: the venv's
`pyvenv.cfg`, `site-packages/*.dist-info/METADATA`, `torch/version.py` (version, CUDA), the compiled arch flags
string in `torch/lib/libtorch_python.so` (what `torch._C._cuda_getArchFlags()` returns) and the NCCL version
from the nvidia-nccl package or a versioned libnccl file name. Under root it drops to the engine process's own
uid/gid before reading any of its files. Never a CUDA context (PROBES.md §0.2), never an import of the engine's code.
"""

from __future__ import annotations

import json
import re

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.reader_lines import (  # the reader's command line, declared apart (issue 30)
    PACKAGES as PACKAGES,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    PYENV_SHELL as PYENV_SHELL,
)
from gpuaudit.probes.core.parsers.reader_lines import (
    READER as READER,
)
from gpuaudit.probes.core.parsing import parse_once
from gpuaudit.probes.core.record import Record


class PyEnv(Record, frozen=True):
    """What a Python environment carries (from the snippet or a collect-env report)."""

    interpreter: str | None = None
    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    """`torch.version.cuda`: the CUDA the wheel was built for ("13.0"); None for CPU-only builds."""
    arch_list: list[str] | None = None
    """Compiled arch flags ("sm_90", "sm_120", "compute_120"); None when unknown."""
    nccl: str | None = None
    """NCCL version torch links (bundled wheel or system)."""
    packages: dict[str, str] = {}
    torch_error: str | None = None
    cuda_runtime: str | None = None
    """collect-env only: "CUDA runtime version" (toolkit found on the system)."""
    driver: str | None = None
    """collect-env only: the driver version it saw."""
    compute_caps: list[str] = []
    """collect-env (sglang) only: "9.0" per GPU group."""
    env: dict[str, str] = {}
    """collect-env only: its environment-variable section."""


@parse_once
def parse_pyenv_json(text: str) -> PyEnv:
    """Output of `PYENV_SHELL` -> PyEnv.

        @@python /usr/bin/python3.12
        {"python": "3.12.3", "executable": "/usr/bin/python3.12", "packages": {"torch": "2.9.1+cu130"},
         "torch": "2.9.1+cu130", "torch_cuda": "13.0", "arch_list": ["sm_90", "sm_100", "sm_120"], "nccl": "2.27.7"}
    Raises ParseError when no JSON line is present.
    """
    interp = None
    data = None
    for line in text.splitlines():
        if line.startswith("@@python "):
            interp = line[9:].strip() or None
        elif line.lstrip().startswith("{"):
            try:
                data = json.loads(line)
            except ValueError as exc:
                raise ParseError(f"unparsable JSON from the inspection snippet: {exc}") from exc
    if not isinstance(data, dict):
        amb = next((ln for ln in text.splitlines() if ln.startswith("@@ambiguous ")), None)
        if amb is not None:  # engines of several owners (issue 29): nothing was read
            raise ParseError(
                "which process is the serving engine is ambiguous: API servers of different owners "
                f"({amb[12:].strip()[:400]}): none read"
            )
        raise ParseError("no JSON line in the output")
    arch = data.get("arch_list")
    return PyEnv(
        interpreter=data.get("executable") or interp,
        python=data.get("python"),
        torch=data.get("torch"),
        torch_cuda=data.get("torch_cuda"),
        arch_list=[str(a) for a in arch] if isinstance(arch, list) else None,
        nccl=data.get("nccl"),
        packages={str(k): str(v) for k, v in (data.get("packages") or {}).items()},
        torch_error=data.get("torch_error"),
    )


# --------------------------------------------------------------------------- collect-env reports

_PIP = re.compile(r"^\[(?:pip3?|conda)\]\s+([A-Za-z0-9_.\-]+)==(\S+)")


def _kv(line: str) -> tuple[str, str] | None:
    m = re.match(r"^([A-Za-z][A-Za-z0-9 _./()\-]*?)\s*:\s?(.*)$", line)
    return (m.group(1).strip(), m.group(2).strip()) if m else None


@parse_once
def parse_collect_env(text: str) -> PyEnv:
    """A torch/vLLM collect_env or SGLang check_env report -> PyEnv.

        PyTorch version: 2.9.0
        CUDA used to build PyTorch: 13.0
        CUDA runtime version: 13.0.88
        Nvidia driver version: 570.172.08
        [pip3] triton==3.5.0+gitbbb06c03
    The sectioned vLLM format uses `Key   : value`; SGLang uses `PyTorch: 2.11.0+cu130`,
    `flashinfer_python: 0.6.12` and `GPU 0,1 Compute Capability: 9.0`. Raises ParseError when
    nothing recognisable is found.
    """
    vals: dict[str, str] = {}
    packages: dict[str, str] = {}
    caps: list[str] = []
    env: dict[str, str] = {}
    in_env = False
    sglang = bool(re.search(r"^PyTorch: ", text, re.M))
    for raw in text.splitlines():
        line = raw.rstrip()
        if re.match(r"^\s*Environment Variables\s*$", line):
            in_env = True
            continue
        # the sectioned format lists variables under "Environment Variables"; the old one just appends them
        if em := re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line):
            env.setdefault(em.group(1), em.group(2))
            continue
        if in_env and line.startswith("====="):
            continue
        if pm := _PIP.match(line):
            packages.setdefault(pm.group(1).lower().replace("_", "-"), pm.group(2))
            continue
        if cm := re.match(r"^GPU [0-9, ]+ Compute Capability:\s*(\S+)", line):
            caps.append(cm.group(1))
            continue
        kv = _kv(line)
        if kv is None:
            continue
        key, val = kv
        vals.setdefault(key, val)
        if sglang and re.fullmatch(r"[a-z][a-z0-9_\-]*", key) and val and val != "Module Not Found":
            packages.setdefault(key.lower().replace("_", "-"), val)
    torch_v = vals.get("PyTorch version") or vals.get("PyTorch")
    if not torch_v and not packages:
        raise ParseError("no PyTorch version and no package list: not a collect-env report")
    torch_cuda = vals.get("CUDA used to build PyTorch")
    if (
        torch_cuda in (None, "", "N/A", "None", "Could not collect")
        and torch_v
        and (m := re.search(r"\+cu(\d+)(\d)$", torch_v))
    ):
        torch_cuda = f"{int(m.group(1))}.{m.group(2)}"  # "+cu130" -> "13.0"
    if torch_cuda in ("", "N/A", "None", "Could not collect"):
        torch_cuda = None
    driver = vals.get("Nvidia driver version") or vals.get("CUDA Driver Version")
    runtime = vals.get("CUDA runtime version")
    if runtime is None and (nv := vals.get("NVCC")) and (m := re.search(r"release (\d+\.\d+)", nv)):
        runtime = m.group(1)
    pyv = vals.get("Python version") or vals.get("Python")
    if torch_v:
        packages.setdefault("torch", torch_v)
    vllm_v = vals.get("vLLM Version")
    if vllm_v:
        packages.setdefault("vllm", vllm_v.split()[0])
    return PyEnv(
        python=pyv.split()[0] if pyv else None,
        torch=torch_v,
        torch_cuda=torch_cuda,
        packages=packages,
        cuda_runtime=runtime if runtime not in ("", "N/A", "Could not collect") else None,
        driver=driver if driver not in ("", "N/A", "Could not collect") else None,
        compute_caps=caps,
        env=env,
    )


# --------------------------------------------------------------------------- helpers


def cuda_major_minor(text: str | None) -> tuple[int, int] | None:
    """ "13.0", "12.8.93", "cu128" -> (13, 0) / (12, 8) / (12, 8); None when unreadable."""
    if not text:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.search(r"cu(\d+)(\d)\b", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def arch_sms(arch_list: list[str]) -> tuple[set[int], set[int]]:
    """["sm_90", "sm_120", "compute_120", "sm_100a"] -> ({90, 100, 120}, {120}): SASS and PTX targets."""
    sass: set[int] = set()
    ptx: set[int] = set()
    for a in arch_list:
        m = re.fullmatch(r"(sm|compute)_(\d+)[a-z]?", a.strip())
        if m:
            (sass if m.group(1) == "sm" else ptx).add(int(m.group(2)))
    return sass, ptx
