"""The catalogue: ten probes in order, unique ids, every command read-only."""

from __future__ import annotations

import re

import pytest
from gpuaudit.probes.catalogue import PROBE_IDS, REGISTRY
from gpuaudit.probes.core.readonly import write_risks
from gpuaudit.probes.core.run.runner import PREFLIGHT
from gpuaudit.probes.ids import PROBE_IDS as IDS

ORDER = (  # the JSON contract's order, pinned here once; other code and tests use probes/ids.py
    "firmware",
    "container",
    "driver",
    "kernel",
    "pcie",
    "power",
    "nccl",
    "numa",
    "python",
    "nvlink",
)
ALL_COMMANDS = [(p.id, c) for p in REGISTRY for c in p.commands] + [("core", PREFLIGHT)]


def test_ten_probes_in_display_order():
    assert PROBE_IDS == ORDER
    assert IDS == ORDER


def test_command_ids_unique_per_probe_and_snake_case():
    for probe in REGISTRY:
        ids = [c.id for c in probe.commands]
        assert len(ids) == len(set(ids)), probe.id
        assert all(re.fullmatch(r"[a-z][a-z0-9_]*", i) for i in ids), ids


@pytest.mark.parametrize(
    "probe_id,command", ALL_COMMANDS, ids=[f"{p}.{c.id}" for p, c in ALL_COMMANDS]
)
def test_every_declared_command_is_read_only(probe_id, command):
    assert write_risks(command.shell) == [], f"{probe_id}.{command.id}: {command.shell}"


@pytest.mark.parametrize(
    "line",
    [
        "echo 0 > /proc/sys/kernel/numa_balancing",
        "sysctl -w kernel.numa_balancing=0",
        "modprobe nvidia",
        "setpci -s 01:00.0 68.w=5936",
        "nvidia-smi -pm 1",
        "nvidia-smi -pl 300",
        "nvidia-smi -lgc 2000",
        "nvidia-smi -r",
        "nvidia-smi -c 3",
        "rm -f /tmp/x",
        "mv a b",
        "cat x | tee /etc/y",
        "systemctl restart nvidia-persistenced",
        "cpupower frequency-set -g performance",
        "sed -i s/a/b/ f",
        "python3 -c 'import torch'",
        "\"$py\" -c 'import torch'",
        "{python} -I -c 'import torch'",
    ],
)
def test_lint_rejects_writes(line):
    assert write_risks(line), line


@pytest.mark.parametrize(
    "line", ["python3 -B -c 'import torch'", '"$py" -B -c 1', "python3 -IBc 1", "grep -c python x"]
)
def test_lint_accepts_python_without_bytecode_writes(line):
    assert write_risks(line) == [], line


def test_command_ids_are_global_names_for_one_line():
    seen: dict[str, str] = {}
    for probe in REGISTRY:
        for c in probe.commands:
            assert seen.setdefault(c.id, c.shell) == c.shell, (
                f"command id {c.id} names two different lines"
            )
