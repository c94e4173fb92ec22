"""Target specs and command-line building: validation and quoting."""

from __future__ import annotations

import shlex

import pytest
from gpuaudit.probes.core.collect.targets import (
    build_command_line,
    parse_container_spec,
    parse_host_spec,
)
from gpuaudit.probes.core.errors import UsageError

HOST = parse_host_spec("root@127.0.0.1:2222")


@pytest.mark.parametrize(
    "text,kind,name",
    [
        ("pct:101", "pct", "101"),
        ("lxc:sglang-1", "lxc", "sglang-1"),
        ("docker:sglang", "docker", "sglang"),
    ],
)
def test_container_specs(text, kind, name):
    spec = parse_container_spec(text, host=HOST)
    assert (spec.kind, spec.name) == (kind, name)


@pytest.mark.parametrize(
    "text", ["pct:101;reboot", "docker:$(id)", "lxc:a b", "pct:abc", "docker:", "docker:-rm"]
)
def test_hostile_container_names_are_rejected(text):
    with pytest.raises(UsageError):
        parse_container_spec(text, host=HOST)


@pytest.mark.parametrize(
    "text", ["root@", "@host", "host:99999", "ho st", "a;b", "$(id)", "root@host:port"]
)
def test_malformed_ssh_specs_are_rejected(text):
    with pytest.raises(UsageError):
        parse_host_spec(text)


def test_ssh_spec_parts():
    spec = parse_host_spec("root@[::1]:2200")
    assert (spec.ssh.user, spec.ssh.host, spec.ssh.port) == ("root", "::1", 2200)
    assert parse_host_spec("pve1").ssh.host == "pve1"


def test_wrapped_line_quotes_and_times_out():
    spec = parse_container_spec("pct:101", host=HOST)
    line = build_command_line(
        "cat '/x y'; echo $HOME", wrap_prefix=spec.wrap_prefix, remote_timeout_s=19.2
    )
    argv = shlex.split(line)
    assert argv[:5] == ["exec", "timeout", "-s", "KILL", "20"]
    assert argv[5:10] == ["pct", "exec", "101", "--", "sh"]
    assert argv[-1] == "LC_ALL=C; export LC_ALL; cat '/x y'; echo $HOME"


# --- issue 14 item 5: container specs are never host names; prefixes are case-insensitive ---


@pytest.mark.parametrize(
    "text, kind, name",
    [
        ("PCT:101", "pct", "101"),
        ("Lxc:web", "lxc", "web"),
        ("DOCKER:vllm", "docker", "vllm"),
        (" pct:7 ", "pct", "7"),
    ],
)
def test_container_prefixes_are_case_insensitive(text, kind, name):
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec

    spec = parse_container_spec(text, host=parse_host_spec(None))
    assert (spec.kind, spec.name, spec.ssh) == (kind, name, None)
    assert spec.raw == f"{kind}:{name}"


@pytest.mark.parametrize("text", ["PCT:101", "Docker:x", "LXC:web", "pct:101"])
def test_container_specs_are_refused_as_host(text):
    from gpuaudit.probes.core.collect.targets import parse_host_spec
    from gpuaudit.probes.core.errors import UsageError

    with pytest.raises(UsageError, match="specs are for --container"):
        parse_host_spec(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("podman:web", "not supported"),
        ("LXD:c1", "not supported"),
        ("PCT:abc", "numeric VMID"),
    ],
)
def test_bad_container_specs(text, message):
    from gpuaudit.probes.core.collect.targets import parse_container_spec, parse_host_spec
    from gpuaudit.probes.core.errors import UsageError

    with pytest.raises(UsageError, match=message):
        parse_container_spec(text, host=parse_host_spec(None))
