"""nccl-tests output, P2P/topology matrices, IOMMU groups, ACS control lines, ldconfig."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.parsers.nccl_tests import human_size, parse_all_reduce_perf
from gpuaudit.probes.nccl import nccl_version_from_path, parse_gpu_matrix, parse_ldconfig_nccl

FIX = Path(__file__).resolve().parents[1] / "fixtures/nvidia"


@pytest.mark.parametrize(
    "name,ngpus,ranks,rows,peak,avg,version",
    [
        ("a100-sxm4-40gb-2node-16gpu-rdma-oke.txt", 1, 16, 2, 180.06, 175.531, "2.14.3+cuda11.7"),
        (
            "a100-sxm4-40gb-2node-sharp-old-format-error-column.txt",
            1,
            16,
            29,
            105.46,
            29.0317,
            None,
        ),
        (
            "a100-sxm4-80gb-8gpu-single-node-mpirun-ofi-noise-lines.txt",
            1,
            8,
            30,
            232.81,
            72.7724,
            None,
        ),
        ("h100-gcp-a3mega-2node-16gpu-tcpxo.txt", 1, 16, 31, 338.82, 70.742, None),
        ("h100-sxm-2node-16gpu-roce-oci.txt", 1, 16, 5, 464.57, 458.452, None),
        ("rtx2080ti-2gpu-pcie-no-p2p.txt", 2, 2, 28, 4.0, 2.05774, None),
        ("v100-sxm2-8gpu-single-node-nvlink-1size.txt", 8, 8, 1, 135.5, 135.455, None),
    ],
)
def test_all_reduce_perf_corpus(name, ngpus, ranks, rows, peak, avg, version):
    r = parse_all_reduce_perf((FIX / "nccl-tests-all-reduce-perf" / name).read_text())
    assert (r.n_gpus, r.ranks, len(r.rows), r.peak_busbw, r.avg_busbw, r.nccl_version) == (
        ngpus,
        ranks,
        rows,
        peak,
        avg,
        version,
    )
    assert r.errors() == 0


def test_all_reduce_perf_details():
    r = parse_all_reduce_perf(
        (FIX / "nccl-tests-all-reduce-perf/rtx2080ti-2gpu-pcie-no-p2p.txt").read_text()
    )
    assert r.rows[0].size_b == 8 and r.rows[0].time_us == 12.25 and r.rows[-1].busbw_inplace == 4.0
    assert r.devices[0] == "NVIDIA GeForce RTX 2080 Ti" and r.out_of_bounds_ok is True
    old = parse_all_reduce_perf(
        (
            FIX
            / "nccl-tests-all-reduce-perf/a100-sxm4-40gb-2node-sharp-old-format-error-column.txt"
        ).read_text()
    )
    assert old.rows[0].wrong == "4e-07"
    with pytest.raises(ParseError):
        parse_all_reduce_perf("# nThread 1 nGpus 8\n#\n")
    assert human_size(268435456) == "256M" and human_size(8) == "8B"


@pytest.mark.parametrize(
    "name,n,cell",
    [
        ("h100-8gpu-p2p-r-all-ok.txt", 8, "OK"),
        ("l4-2gpu-p2p-r-cns-chipset-not-supported.txt", 2, "CNS"),
        ("rtx2080ti-2gpu-p2p-p-not-supported.txt", 2, "NS"),
    ],
)
def test_p2p_matrices(name, n, cell):
    cells, _numa, count = parse_gpu_matrix((FIX / "nvidia-smi-topo-p2p" / name).read_text())
    assert count == n and len(cells) == n * (n - 1) // 2 and set(cells.values()) == {cell}


def test_topology_embedded_in_collect_env():
    text = (FIX / "collect-env/vllm-collect-env-a30-4gpu-535-docker.txt").read_text()
    block = text.split("GPU Topology:\n", 1)[1]
    cells, numa, n = parse_gpu_matrix(block)
    assert (
        n == 4
        and cells["0-1"] == "NV4"
        and cells["0-2"] == "SYS"
        and cells["2-3"] == "NV4"
        and numa == ["0", "0", "1", "1"]
    )


def test_topo_m_fixtures_of_the_shared_folder_when_present():
    folder = FIX / "nvidia-smi-topo-m"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        pytest.skip("nvidia-smi-topo-m fixtures are copied by their owner")
    for f in files:
        cells, numa, n = parse_gpu_matrix(f.read_text())
        assert n >= 2 and len(cells) == n * (n - 1) // 2, f.name


def test_matrix_rejects_garbage():
    with pytest.raises(ParseError):
        parse_gpu_matrix(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
        )


def test_ldconfig():
    libs = parse_ldconfig_nccl(
        "\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2\n"
    )
    assert libs == ["/lib/x86_64-linux-gnu/libnccl.so.2"]
    assert (
        nccl_version_from_path("/usr/lib/libnccl.so.2.27.7") == "2.27.7"
        and nccl_version_from_path(libs[0]) is None
    )
