"""The runner's performance changes keep results identical: chunked redaction, longest-first launch order."""

from __future__ import annotations

from datetime import UTC, datetime

from gpuaudit.probes.core.collect.transport import RawResult, TransportBase
from gpuaudit.probes.core.models import Target
from gpuaudit.probes.core.redact import redact_text
from gpuaudit.probes.core.run.records import REDACT_CHUNK, decode_output, decode_redacted
from gpuaudit.probes.core.run.runner import Audit, TargetBinding, launch_rank
from gpuaudit.probes.core.spec import Command, Probe
from pydantic import BaseModel


def test_chunked_redaction_equals_whole_text_redaction():
    # synthetic: secrets and undecodable bytes around the 1 MiB chunk boundaries
    filler = b"17 00 0 \xff PCI bridge\n" * 3000
    line = b"HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz12 --api-key sk-123 Product Name : A100\n"
    data = (filler + line) * (2 * REDACT_CHUNK // (len(filler) + len(line)) + 3)
    assert len(data) > 2 * REDACT_CHUNK
    chunked = decode_redacted(data)
    assert chunked == redact_text(decode_output(data))
    assert "hf_abcdefghijklmnopqrstuvwxyz12" not in chunked and "\\xff" in chunked
    one_line = b"x" * (2 * REDACT_CHUNK) + b" PASSWORD=hunter2"  # no newline to split at: one chunk
    assert decode_redacted(one_line) == redact_text(decode_output(one_line))


def test_launch_rank_orders_slow_commands_first():
    assert (
        launch_rank("nvidia-smi -q -x")
        < launch_rank("nvidia-smi topo -m")
        < launch_rank("cat /proc/cmdline")
    )
    assert launch_rank("lspci -tv") == launch_rank("dmidecode -t 0") == 1
    # a scan of every process forks per process (~1 s on a busy box): started with the nvidia-smi -q dump
    assert launch_rank("for d in /proc/[0-9]*; do cat $d/status; done") == 0


class _Recording(TransportBase):
    """A transport that records the order in which lines ask to run."""

    label = "fake"

    def __init__(self) -> None:
        self.order: list[str] = []

    async def connect(self) -> None:
        return None

    async def run(
        self, line: str, *, command_id: str, timeout_s: float, max_bytes: int
    ) -> RawResult:
        self.order.append(command_id)
        if command_id == "preflight":
            return RawResult(exit_status=0, stdout=b"1000\ntimeout=yes\nbox\n")
        return RawResult(exit_status=0, stdout=b"x\n", started_at=datetime.now(UTC))

    async def aclose(self) -> None:
        return None


class _Facts(BaseModel):
    n: int


def _probe(pid: str, commands: tuple[Command, ...]) -> Probe:
    return Probe(
        id=pid,
        title=pid,
        commands=commands,
        extract=lambda outputs, role: _Facts(n=len(outputs)),
    )


async def test_slow_commands_ask_for_a_channel_before_quick_reads():
    transport = _Recording()
    probes = [
        _probe("a", (Command("a_cat", "cat /proc/cmdline"), Command("a_smi_q", "nvidia-smi -q"))),
        _probe(
            "b", (Command("b_cat", "cat /proc/version"), Command("b_topo", "nvidia-smi topo -m"))
        ),
    ]
    audit = Audit(
        [
            TargetBinding(
                target=Target(role="host", spec="fake", kind="local", label="host"),
                transport=transport,
            )
        ],
        probes,
    )
    async for _ in audit.events():
        pass
    assert transport.order == ["preflight", "a_smi_q", "b_topo", "a_cat", "b_cat"]
