"""The container probe against a real (offline, busybox) LXC container entered with lxc-attach.

busybox has no systemd-detect-virt: the container's kind must come from the `lxc:NAME` target spec, and a GPU-less
host makes every GPU check not applicable. A container that does not exist is unreachable: unknown, never ok.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from gpuaudit.probes import container
from gpuaudit.probes.core.collect.ssh_transport import SshOptions
from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
from gpuaudit.probes.core.models import ProbeResult
from gpuaudit.probes.core.run.runner import Audit
from gpuaudit.probes.core.run.session import live_bindings
from lxc_kit import REQUIRED, busybox_container, lxc_missing

pytestmark = pytest.mark.skipif(  # in CI (REQUIRED) the tests run and fail on a missing lxc
    not REQUIRED and lxc_missing() is not None, reason=str(lxc_missing())
)


@pytest.fixture
def lxc_container():
    yield from busybox_container("gacont")


def audit(spec: str) -> ProbeResult:
    host = parse_host_spec(None)
    bindings = live_bindings(host, parse_container_spec(spec, host=host), SshOptions())

    async def go() -> ProbeResult:
        result = None
        async for ev in Audit(bindings, [container.PROBE]).events():
            if (r := getattr(ev, "result", None)) is not None and r.status in ("done", "failed"):
                result = r
        assert result is not None
        return result

    return asyncio.run(go())


def nvidia_on_this_host() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or any(
        p.read_text().strip() == "0x10de" for p in Path("/sys/bus/pci/devices").glob("*/vendor")
    )


def test_lxc_kind_from_the_target_spec_and_no_gpu_checks_on_a_gpu_less_host(lxc_container):
    r = audit(f"lxc:{lxc_container}")
    assert r.status == "done", r.error
    ctr = r.facts["container"]
    assert ctr["wrapper_kind"] == "lxc"
    found = {f.id: f for f in r.findings}
    assert found["container.shm_ipc"].observed == "lxc container, not Docker"
    assert (
        "RDMA devices: none" in found["container.memlock"].observed
    )  # busybox ls: exit 1 "No such file"
    if not nvidia_on_this_host():
        for check in container.CHECKS:
            if check.needs_gpu and check.id in found and "host" in check.roles:
                assert found[check.id].observed.startswith(
                    "no NVIDIA GPU or driver on this host"
                ), check.id
    for f in r.findings:  # nothing judged from data that was not read
        if f.severity.value == "unknown":
            assert ":" in f.observed and f.observed.split(":")[0], f


def test_missing_container_is_unknown_never_ok():
    r = audit("lxc:no-such-ct-gaxyz")
    found = {f.id: f for f in r.findings}
    for check in container.CHECKS:
        if "container" in check.roles:
            f = found[check.id]
            assert f.severity.value == "unknown" and "unreachable" in f.observed, (
                check.id,
                f.observed,
            )
