"""nccl.* rules over facts (pass / fail / boundary / precondition not met / unknown), and end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuaudit.probes import nccl
from gpuaudit.probes.core.run.events import ProbeFinished
from gpuaudit.probes.core.run.runner import Audit, AuditOptions
from gpuaudit.probes.core.run.session import directory_bindings
from judge_facts import judge, one

F = nccl.NcclFacts
CASE = Path(__file__).resolve().parents[2] / "snapshots/examples/case-study"
FIX = Path(__file__).resolve().parents[1] / "fixtures/nvidia"
OK8 = {f"{i}-{j}": "OK" for i in range(8) for j in range(i + 1, 8)}
TOPO8 = {
    f"{i}-{j}": ("NODE" if i // 4 == j // 4 else "SYS") for i in range(8) for j in range(i + 1, 8)
}
HOST = dict(
    gpu_names=["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8,
    topo=TOPO8,
    gpu_numa=["0"] * 4 + ["1"] * 4,
    p2p_read=OK8,
    p2p_write=OK8,
    iommu_translated=False,
    iommu_detail="GPU functions' domains: identity×16",
    acs_redirect=[],
    cpu_vendor="AMD",
    gpu_count=8,
    engine_listed=True,
)
ENG = dict(
    engine_listed=True,
    engine_kind="sglang",
    engine_tp=8,
    custom_allreduce_disabled=False,
    engine_env_readable=True,
    engine_env={},
)


def sev(facts, fid, active=False):
    return one(nccl.PROBE, facts, fid, active).severity.value


@pytest.mark.parametrize(
    "host,expected",
    [
        (F(**HOST), "ok"),
        (F(**(HOST | {"p2p_read": OK8 | {"0-4": "CNS"}})), "warning"),
        (
            F(
                **(
                    HOST
                    | {
                        "gpu_names": ["NVIDIA GeForce RTX 2080 Ti"] * 2,
                        "p2p_read": {"0-1": "NS"},
                        "p2p_write": {},
                    }
                )
            ),
            "info",
        ),
        (
            F(**(HOST | {"p2p_read": {}, "problems": {"smi_topo_p2p_r": "tool not installed"}})),
            "unknown",
        ),
    ],
)
def test_p2p_matrix(host, expected):
    assert sev({"host": host}, "nccl.p2p_matrix") == expected


@pytest.mark.parametrize(
    "vendor,env,topo,expected",
    [
        ("AMD", {}, TOPO8, "ok"),
        ("Intel", {}, TOPO8, "info"),  # NCCL's PXB cutoff on Intel: by design
        ("Intel", {"NCCL_P2P_LEVEL": "SYS"}, TOPO8, "ok"),
        ("Intel", {}, {"0-1": "NV18"}, "ok"),
        (None, {}, TOPO8, "unknown"),  # paths over the CPU, vendor unread: no verdict
    ],
)
def test_topology_class(vendor, env, topo, expected):
    facts = {
        "host": F(**(HOST | {"cpu_vendor": vendor, "topo": topo})),
        "container": F(**(ENG | {"engine_env": env})),
    }
    assert sev(facts, "nccl.topology_class") == expected
    assert sev({"host": F(problems={"smi_topo_m": "x"})}, "nccl.topology_class") == "unknown"


@pytest.mark.parametrize(
    "env,translated,expected",
    [
        ({}, False, "ok"),
        ({"NCCL_P2P_DISABLE": "1"}, False, "warning"),  # stale workaround
        ({"NCCL_SHM_DISABLE": "1"}, False, "warning"),
        ({"NCCL_DEBUG": "INFO"}, False, "info"),
        ({"NCCL_MIN_NCHANNELS": "8"}, False, "info"),
        (
            {"NCCL_P2P_DISABLE": "1"},
            True,
            "info",
        ),  # IOMMU translating + ACS: the disable may be the fix
    ],
)
def test_env_overrides(env, translated, expected):
    host = F(**(HOST | {"iommu_translated": translated, "acs_redirect": ["0000:00:01.1"]}))
    facts = {"host": host, "container": F(**(ENG | {"engine_env": env}))}
    assert sev(facts, "nccl.env_overrides") == expected


def test_env_overrides_unknown_and_no_engine():
    assert (
        sev(
            {"host": F(**HOST), "container": F(**(ENG | {"engine_env_readable": False}))},
            "nccl.env_overrides",
        )
        == "unknown"
    )
    assert (
        sev({"host": F(**HOST), "container": F(engine_listed=True)}, "nccl.env_overrides") == "n/a"
    )
    assert (
        sev({"host": F(**HOST), "container": F()}, "nccl.env_overrides") == "unknown"
    )  # container scan not read
    assert sev({"host": F(problems={"engine_procs": "x"})}, "nccl.env_overrides") == "unknown"


@pytest.mark.parametrize(
    "translated,acs,env,tp,expected",
    [
        (False, [], {}, 8, "ok"),
        (
            False,
            ["0000:00:01.1"],
            {},
            8,
            "ok",
        ),  # passthrough: redirected peer traffic is not translated
        (True, ["0000:00:01.1"], {}, 8, "critical"),
        (True, ["0000:00:01.1"], {"NCCL_P2P_DISABLE": "1"}, 8, "warning"),
        (True, ["0000:00:01.1"], {}, 1, "warning"),  # boundary: TP=1 uses no P2P
        (True, [], {}, 8, "warning"),
        (True, None, {}, 8, "warning"),  # ACS unread
        (None, [], {}, 8, "unknown"),  # IOMMU state not known: never ok
    ],
)
def test_iommu_acs_gate(translated, acs, env, tp, expected):
    host = F(**(HOST | {"iommu_translated": translated, "acs_redirect": acs}))
    facts = {"host": host, "container": F(**(ENG | {"engine_env": env, "engine_tp": tp}))}
    assert sev(facts, "nccl.iommu_acs_gate") == expected


def test_iommu_gate_off_and_unknown():
    assert (
        sev(
            {"host": F(iommu_translated=False, iommu_detail="no IOMMU unit")}, "nccl.iommu_acs_gate"
        )
        == "ok"
    )
    assert (
        sev({"host": F(problems={"iommu_state": "x", "proc_cmdline": "y"})}, "nccl.iommu_acs_gate")
        == "unknown"
    )


@pytest.mark.parametrize(
    "env,gate_host,expected",
    [
        ({}, {}, "ok"),
        ({"NCCL_P2P_DISABLE": "1"}, {}, "warning"),
        (
            {"NCCL_P2P_LEVEL": "SYS"},
            {"iommu_translated": True, "acs_redirect": ["0000:00:01.1"]},
            "critical",
        ),
        ({"NCCL_P2P_LEVEL": "SYS"}, {}, "ok"),
    ],
)
def test_env_vs_topology(env, gate_host, expected):
    facts = {"host": F(**(HOST | gate_host)), "container": F(**(ENG | {"engine_env": env}))}
    assert sev(facts, "nccl.env_vs_topology") == expected
    assert not [
        f for f in judge(nccl.PROBE, {"host": F(**HOST)}) if f.id == "nccl.env_vs_topology"
    ]  # needs a container


@pytest.mark.parametrize(
    "disabled,tp,topo,expected",
    [
        (False, 8, TOPO8, "ok"),
        (True, 8, TOPO8, "info"),
        (True, 8, {"0-1": "NV18"}, "warning"),
        (True, 1, TOPO8, "n/a"),
    ],
)
def test_custom_allreduce(disabled, tp, topo, expected):
    facts = {
        "host": F(**(HOST | {"topo": topo})),
        "container": F(**(ENG | {"custom_allreduce_disabled": disabled, "engine_tp": tp})),
    }
    assert sev(facts, "nccl.custom_allreduce") == expected


@pytest.mark.parametrize(
    "vendor,topo,env,expected",
    [
        ("AMD", TOPO8, {}, "info"),
        ("AMD", TOPO8, {"NCCL_MIN_NCHANNELS": "8"}, "ok"),
        ("Intel", TOPO8, {}, "n/a"),
        ("AMD", {"0-1": "NODE"}, {}, "n/a"),
    ],
)
def test_amd_dual_socket(vendor, topo, env, expected):
    facts = {
        "host": F(**(HOST | {"cpu_vendor": vendor, "topo": topo})),
        "container": F(**(ENG | {"engine_env": env})),
    }
    assert sev(facts, "nccl.amd_dual_socket_model") == expected


def test_library_in_use():
    lib = "/x/nvidia/nccl/lib/libnccl.so.2"
    assert (
        sev(
            {"container": F(**ENG, engine_nccl_libs=[lib], torch_nccl="2.27.7")},
            "nccl.library_in_use",
        )
        == "ok"
    )
    two = [lib, "/opt/nccl/lib/libnccl.so.2.21.5"]
    assert sev({"container": F(**ENG, engine_nccl_libs=two)}, "nccl.library_in_use") == "warning"
    old = ["/usr/lib/libnccl.so.2.21.5"]
    assert (
        sev(
            {"container": F(**ENG, engine_nccl_libs=old, torch_nccl="2.27.7")},
            "nccl.library_in_use",
        )
        == "info"
    )


def _perf_facts(name: str, topo: dict, p2p: dict) -> dict:
    rec = (FIX / "nccl-tests-all-reduce-perf" / name).read_text()
    from gpuaudit.probes.core.models import CommandRecord

    out = {
        "nccl_all_reduce_perf": CommandRecord(
            target="host",
            probe_id="nccl",
            command_id="nccl_all_reduce_perf",
            command="x",
            exit_status=0,
            stdout=rec,
        )
    }
    f = nccl.extract(out, "host")
    return {"host": f.model_copy(update={"topo": topo, "p2p_read": p2p})}


def test_active_allreduce_rows_from_the_corpus():
    # 2× RTX 2080 Ti without P2P: 4 GB/s is what host staging gives; small-message latency ≈ 12 µs
    facts = _perf_facts("rtx2080ti-2gpu-pcie-no-p2p.txt", {"0-1": "PIX"}, {"0-1": "NS"})
    assert (
        sev(facts, "nccl.allreduce_bw", True) == "ok"
        and sev(facts, "nccl.allreduce_lat", True) == "ok"
    )
    # the same numbers where P2P is reported OK: far below a P2P PCIe figure
    facts = _perf_facts("rtx2080ti-2gpu-pcie-no-p2p.txt", {"0-1": "PIX"}, {"0-1": "OK"})
    bw = one(nccl.PROBE, facts, "nccl.allreduce_bw", active=True)
    assert (
        bw.severity.value == "warning"
        and "load-generating" in bw.title
        and "peak busbw 4.0" in bw.observed
    )
    facts = _perf_facts(
        "v100-sxm2-8gpu-single-node-nvlink-1size.txt", {"0-1": "NV2"}, {"0-1": "OK"}
    )
    assert sev(facts, "nccl.allreduce_bw", True) == "ok"
    assert not [
        f for f in judge(nccl.PROBE, {"host": F(**HOST)}) if f.id.startswith("nccl.allreduce")
    ]  # passive: none


def test_active_command_is_declared_active_and_labelled():
    cmd = next(c for c in nccl.COMMANDS if c.id == "nccl_all_reduce_perf")
    assert cmd.active and "load-generating" in cmd.description
    assert all(not c.active for c in nccl.COMMANDS if c is not cmd)


async def _run(d: Path, active: bool = False):
    async for ev in Audit(
        directory_bindings(d), [nccl.PROBE], AuditOptions(active=active)
    ).events():
        if isinstance(ev, ProbeFinished):
            return ev.result


async def test_end_to_end_case_study():
    r = await _run(CASE / "before")
    by = {f.id: f.severity.value for f in r.findings}
    assert (
        r.status == "done" and by["nccl.p2p_matrix"] == "ok" and by["nccl.iommu_acs_gate"] == "ok"
    )
    assert by["nccl.amd_dual_socket_model"] == "info" and "critical" not in by.values()
    assert len(by) == 9 and "P2P all OK" in r.summary and by["nccl.transport_observed"] == "unknown"
    # --active against a recording without nccl-tests: the command reports "not installed" -> unknown, never ok
    r = await _run(CASE / "before", active=True)
    assert {f.id: f.severity.value for f in r.findings}["nccl.allreduce_bw"] == "unknown"


async def test_end_to_end_gpu_less(tmp_path: Path):
    (tmp_path / "host").mkdir()
    (tmp_path / "host/engine_procs.out").write_text("@@none\n")
    (tmp_path / "host/proc_cmdline.out").write_text("BOOT_IMAGE=/vmlinuz ro quiet\n")
    r = await _run(tmp_path)
    assert r.status == "done"
    assert all(f.severity.value == "unknown" or f.severity.value == "n/a" for f in r.findings), [
        (f.id, f.severity.value, f.observed) for f in r.findings
    ]
