"""A real offline busybox LXC container for the tests that enter one with lxc-attach (one helper: three test
files wrote it each). Where CI installs lxc (GPUAUDIT_REQUIRE_SSHD=1, .ci/run) a missing tool or a failed
lxc-create fails the test instead of skipping it."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRED = os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1"


def lxc_missing() -> str | None:
    """Why no container can be made here (not root, no lxc, no busybox-static), or None."""
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("lxc-create") is None or not os.path.exists("/bin/busybox"):
        return "needs Debian's lxc and busybox-static"
    return None


def not_here(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"LXC required in CI: {why}")
    pytest.skip(why)


def busybox_container(prefix: str) -> Iterator[str]:
    """Yield the name of a started busybox container with no network at all; stopped and destroyed after.
    Use as a fixture body: `yield from busybox_container("gatest")`."""
    if (why := lxc_missing()) is not None:
        not_here(why)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create = subprocess.run(
        ["lxc-create", "-n", name, "-t", "busybox"], capture_output=True, text=True
    )
    if create.returncode != 0:
        not_here(f"lxc-create failed: {create.stderr[-300:]}")
    try:
        cfg = Path(f"/var/lib/lxc/{name}/config")
        # no network at all: the container must never reach anything
        lines = [ln for ln in cfg.read_text().splitlines() if not ln.startswith("lxc.net.")]
        cfg.write_text("\n".join(lines + ["lxc.net.0.type = empty", ""]))
        subprocess.run(["lxc-start", "-n", name, "-d"], check=True, capture_output=True)
        yield name
    finally:
        subprocess.run(["lxc-stop", "-k", "-n", name], capture_output=True)
        subprocess.run(["lxc-destroy", "-n", name], capture_output=True)
