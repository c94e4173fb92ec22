"""Network namespaces for tests that need separate host addresses (10.200.0.0/16 only, root only).

`with Netns(octet) as ns:` creates namespace `ns.name` reachable from the root namespace over a veth pair:
root side 10.200.<octet>.1, namespace side `ns.address` (10.200.<octet>.2). A blackhole route for the
whole 10.200.0.0/16 is installed first so a wrong address in that range is dropped locally, never sent
anywhere. Teardown always runs: namespace, root-side veth, blackhole route (if we added it).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

NET = "10.200.0.0/16"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def netns_unavailable() -> str | None:
    """None when namespaces can be created here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) not installed"
    probe = f"garelprobe{os.getpid()}"
    res = _ip("netns", "add", probe, check=False)
    if res.returncode != 0:
        return f"ip netns not permitted: {res.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


class Netns:
    """One namespace on a veth pair; use as a context manager."""

    def __init__(self, octet: int) -> None:
        assert 1 <= octet <= 254
        self.octet = octet
        self.name = f"garel{os.getpid() % 100000}_{octet}"
        self.veth = f"gar{os.getpid() % 10000}v{octet}"[:15]
        self.gateway = f"10.200.{octet}.1"
        self.address = f"10.200.{octet}.2"
        self.unused = f"10.200.{octet}.3"
        """On the link but owned by nobody: connects to it get no answer at all."""
        self._added_blackhole = False

    def __enter__(self) -> Netns:
        reason = netns_unavailable()
        if reason:
            pytest.skip(reason)
        try:
            if _ip("route", "add", "blackhole", NET, check=False).returncode == 0:
                self._added_blackhole = True
            _ip("netns", "add", self.name)
            _ip(
                "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.name
            )
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.veth)
            _ip("link", "set", self.veth, "up")
            _ip("-n", self.name, "addr", "add", f"{self.address}/24", "dev", "eth0")
            _ip("-n", self.name, "link", "set", "eth0", "up")
            _ip("-n", self.name, "link", "set", "lo", "up")
        except subprocess.CalledProcessError as exc:
            self.__exit__(None, None, None)
            pytest.skip(f"cannot build namespace: {exc.stderr.strip()}")
        return self

    def __exit__(self, *exc: object) -> None:
        _ip("netns", "del", self.name, check=False)
        _ip("link", "del", self.veth, check=False)
        if self._added_blackhole:
            _ip("route", "del", "blackhole", NET, check=False)
