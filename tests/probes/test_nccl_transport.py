"""nccl.transport_observed: NCCL_DEBUG=INFO channel lines vs the driver's P2P matrix (synthetic facts)."""

from __future__ import annotations

import pytest
from gpuaudit.probes import nccl as c
from judge_facts import one

OK = {"0-1": "OK"}


def facts(channels=(), sources=("journal sglang.service",), p2p=OK, env=None, readable=True):
    ctr = c.NcclFacts(
        log_sources=list(sources) if sources is not None else None,
        nccl_channels=list(channels),
        engine_kind="sglang",
        engine_env=env or {},
        engine_env_readable=readable,
    )
    return {"host": c.NcclFacts(p2p_read=p2p, log_sources=[]), "container": ctr}


@pytest.mark.parametrize(
    "f,severity,needle",
    [
        (facts([(0, 1, "P2P"), (1, 0, "P2P")]), "ok", "P2P 2"),  # pass
        (
            facts([(0, 1, "P2P"), (1, 0, "SHM")]),
            "warning",
            "GPU1->GPU0 via SHM",
        ),  # fail: vetoed P2P
        (facts([(0, 1, "NET")]), "warning", "via NET"),  # fail: NET
        (
            facts([(0, 1, "SHM")], p2p={"0-1": "CNS"}),
            "info",
            "SHM 1",
        ),  # boundary: pair not P2P-capable
        (facts([(0, 1, "SHM")], p2p={}), "info", "not read"),  # P2P matrix unknown
        (
            facts(env={"NCCL_DEBUG": "WARN"}),
            "unknown",
            "set NCCL_DEBUG=INFO",
        ),  # no lines: debug off
        (facts(env={"NCCL_DEBUG": "INFO"}), "unknown", "log rotated"),  # no lines though INFO
        (facts(sources=("none (pipe:[7])",)), "unknown", "not a file"),  # log not reachable
    ],
)
def test_transport_observed(f, severity, needle):
    x = one(c.PROBE, f, "nccl.transport_observed")
    assert x.severity.value == severity and needle in x.observed + x.fix, x.observed


def test_transport_not_read_and_no_engine():
    f = {
        "host": c.NcclFacts(problems={"engine_logs": "needs root"}),
        "container": c.NcclFacts(problems={"engine_logs": "exit 2"}),
    }
    x = one(
        c.PROBE, f, "nccl.transport_observed"
    )  # judged on the engine's container: its own log scan failed
    assert x.severity.value == "unknown" and "engine_logs: exit 2" in x.observed
    y = one(
        c.PROBE,
        {"host": c.NcclFacts(log_sources=[]), "container": c.NcclFacts(log_sources=[])},
        "nccl.transport_observed",
    )
    assert y.severity.value == "n/a" and y.observed == "no SGLang/vLLM/TGI API server found"
