"""judge(): every driver rule in display order."""

from __future__ import annotations

from collections.abc import Iterator

from gpuaudit.probes.core.models import Finding
from gpuaudit.probes.core.spec import FactsByTarget
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.rules_install import (
    _compat_libs,
    _dkms_kernel_match,
    _module_params,
    _persistence_host_vs_container,
    _userspace_match,
)
from gpuaudit.probes.driver.rules_state import (
    _compute_mode,
    _ecc_rowremap,
    _mig_mode,
    _min_for_arch,
    _persistence,
    _version_flavor,
    _xid_history,
)


def judge(facts: FactsByTarget) -> Iterator[Finding]:
    host: DriverFacts | None = facts.get("host")
    ctr: DriverFacts | None = facts.get("container")
    if host is not None:
        yield from _judge_host(host)
    yield _userspace_match(host, ctr)
    yield _persistence_host_vs_container(host, ctr)
    if ctr is not None:
        yield _compat_libs(ctr, host, "container")
    elif host is not None:
        yield _compat_libs(host, host, "host")


def _judge_host(h: DriverFacts) -> Iterator[Finding]:
    yield _version_flavor(h)
    yield _min_for_arch(h)
    yield _persistence(h)
    yield _xid_history(h)
    yield _ecc_rowremap(h)
    yield _mig_mode(h)
    yield _compute_mode(h)
    yield _dkms_kernel_match(h)
    yield _module_params(h)
