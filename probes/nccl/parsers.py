"""Pure parsers for the NCCL probe's commands (topology matrices, ldconfig); IOMMU and ACS are shared combiners."""

from __future__ import annotations

import re

from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.nvidia_smi import parse_topo_m
from gpuaudit.probes.core.parsing import parse_once

_P2P_CODES = {"OK", "CNS", "GNS", "TNS", "NS", "U", "X"}


@parse_once
def parse_gpu_matrix(text: str) -> tuple[dict[str, str], list[str], int]:
    """`nvidia-smi topo -m` or `topo -p2p r` -> (pair cells "i-j" for i<j, NUMA affinity per GPU, GPU count).

        <TAB>GPU0<TAB>GPU1<TAB>CPU Affinity<TAB>NUMA Affinity<TAB>GPU NUMA ID
        GPU0<TAB> X <TAB>SYS<TAB>0-55,112-167<TAB>0<TAB><TAB>N/A
        GPU1<TAB>SYS<TAB> X <TAB>56-111,168-223<TAB>1<TAB><TAB>N/A
    A view of the shared `nvidia_smi.parse_topo_m`. Raises ParseError when there is no GPU header row.
    """
    m = parse_topo_m(text)
    idx = {g: int(g[3:]) for g in m.gpus}
    if not idx:
        raise ParseError("no GPU header row")
    cells = {
        f"{idx[a]}-{idx[b]}": v
        for (a, b), v in m.links.items()
        if a in idx and b in idx and idx[a] < idx[b]
    }
    return cells, [m.numa_affinity.get(g, "") for g in m.gpus], len(idx)


@parse_once
def parse_ldconfig_nccl(text: str) -> list[str]:
    """`ldconfig -p | grep libnccl` -> library paths.

    <TAB>libnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2
    """
    return [m.group(1) for m in re.finditer(r"=>\s*(\S*libnccl\S*)", text)]


def nccl_version_from_path(path: str) -> str | None:
    """ "/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.7" -> "2.27.7"; a bare ".so.2" -> None."""
    m = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", path)
    return m.group(1) if m else None
