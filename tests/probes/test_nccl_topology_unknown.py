"""An unread `nvidia-smi topo -m` never reads as PCIe downstream, and a machine without NVIDIA hardware gets
"not applicable" instead of unknown spam (real outputs; sources in the fixtures' SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes import nccl
from gpuaudit.probes.core.judge.checks import judge_checks
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import directory_bindings
from gpuaudit.probes.core.sources import with_presence

FIX = Path(__file__).resolve().parents[1] / "fixtures"
A100_RUN = (
    FIX
    / "nvidia/nccl-tests-all-reduce-perf/a100-sxm4-80gb-8gpu-single-node-mpirun-ofi-noise-lines.txt"
)
B300_TOPO = FIX / "nvidia/nvidia-smi-topo-m/b300-sxm6-8gpu-nv18-9nic-590-underline-header-esc.txt"
P2P_OK = FIX / "nvidia/nvidia-smi-topo-p2p/h100-8gpu-p2p-r-all-ok.txt"
SGLANG_NO_CUSTOM_AR = (
    "@@pid 7\n@@exe /usr/bin/python3\n@@cmdline\npython3\n-m\nsglang.launch_server\n--tp\n8\n"
    "--disable-custom-all-reduce\n\n@@environ\nNCCL_DEBUG=WARN\n@@maps\n@@end\n"
)


def rec(cid: str, stdout: str, exit_status: int = 0) -> CommandRecord:
    return CommandRecord(
        target="host",
        probe_id="nccl",
        command_id=cid,
        command=cid,
        exit_status=exit_status,
        stdout=stdout,
    )


def judged(topo_stdout: str) -> dict:
    outputs = {
        "host": {
            "smi_topo_m": rec("smi_topo_m", topo_stdout),
            "smi_topo_p2p_r": rec("smi_topo_p2p_r", P2P_OK.read_text()),
            "nccl_all_reduce_perf": rec("nccl_all_reduce_perf", A100_RUN.read_text()),
            "engine_procs": rec("engine_procs", SGLANG_NO_CUSTOM_AR),
        }
    }
    facts = {"host": nccl.extract(outputs["host"], "host")}
    return {f.id: f for f in judge_checks(nccl.CHECKS, facts, outputs)}


def test_empty_topology_is_unknown_not_pcie():
    """Before: an empty `topo -m` read as "pcie": 24 µs passed the PCIe limit on an NVLink A100 box (ok), and a
    disabled custom all-reduce was only "info"."""
    by = judged("")
    assert (
        by["nccl.topology_class"].severity.value == "unknown"
        and "smi_topo_m" in by["nccl.topology_class"].observed
    )
    lat = by["nccl.allreduce_lat"]
    assert (
        lat.severity.value == "unknown"
        and "interconnect unknown" in lat.observed
        and "24.4 µs" in lat.observed
    )
    assert by["nccl.custom_allreduce"].severity.value == "unknown"
    assert (
        by["nccl.allreduce_bw"].severity.value == "ok"
    )  # 233 GB/s passes every interconnect's floor


def test_nvlink_topology_with_escape_sequences_is_judged_as_nvlink():
    by = judged(B300_TOPO.read_text())
    assert by["nccl.topology_class"].title == "All GPU pairs connected by NVLink"
    assert (
        by["nccl.allreduce_lat"].severity.value == "warning"
    )  # 24 µs is above the NVSwitch figure
    assert by["nccl.custom_allreduce"].severity.value == "warning"  # disabled on NVLink


async def test_no_nvidia_gpu_and_no_engine_means_not_applicable():
    """Before: GPU checks on a machine without NVIDIA hardware were unknown "tool not installed"."""
    async for ev in Audit(
        directory_bindings(FIX / "engine/no-gpu-host", ("host",)),
        [with_presence(nccl.PROBE)],
        AuditOptions(active=True),
    ).events():
        if isinstance(ev, ProbeFinished):
            r = ev.result
    by = {f.id: f for f in r.findings}
    no_gpu = "no NVIDIA GPU or driver on this host"
    for fid in (
        "nccl.p2p_matrix",
        "nccl.topology_class",
        "nccl.amd_dual_socket_model",
        "nccl.iommu_acs_gate",
        "nccl.allreduce_bw",
        "nccl.allreduce_lat",
    ):
        assert (by[fid].severity.value, by[fid].observed) == ("n/a", no_gpu), fid
    for fid in ("nccl.env_overrides", "nccl.library_in_use", "nccl.custom_allreduce"):
        assert (by[fid].severity.value, by[fid].observed) == (
            "n/a",
            "no serving engine found (no SGLang/vLLM/TGI server process)",
        ), fid
    assert (
        by["nccl.transport_observed"].severity.value,
        by["nccl.transport_observed"].observed,
    ) == (
        "n/a",
        "no SGLang/vLLM/TGI API server found",
    )
    assert not [f.id for f in r.findings if f.severity.value == "unknown"]


def test_volatile_facts_are_fields_of_the_models():
    from gpuaudit.probes import python as py

    assert nccl.PROBE.volatile_facts <= set(nccl.NcclFacts.model_fields)
    assert py.PROBE.volatile_facts <= set(py.PythonFacts.model_fields)
    assert {"allreduce", "allreduce_peak", "nccl_channels"} <= nccl.PROBE.volatile_facts
