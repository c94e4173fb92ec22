"""Transport results -> CommandRecords: bytes decoded once, secrets redacted once, big outputs in line-aligned
chunks so a 50 MB output never holds several copies at once."""

from __future__ import annotations

import ctypes

from gpuaudit.probes.core.collect.remote_line import sudo_refusal
from gpuaudit.probes.core.collect.transport import RawResult
from gpuaudit.probes.core.models import CommandRecord
from gpuaudit.probes.core.redact import redact_text


def decode_output(data: bytes | bytearray) -> str:
    """Bytes -> text without ever failing: undecodable bytes become visible `\\xNN` escapes."""
    return data.decode("utf-8", errors="backslashreplace")


REDACT_CHUNK = 1 << 20


def _release_free_heap() -> None:
    """Give the freed read chunks of a big output (64 KiB pieces: heap, not mmap) back to the OS (glibc only)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def decode_redacted(data: bytes | bytearray) -> str:
    """decode_output + redact_text; a big output goes line-aligned chunk by chunk.

    Same result as redacting the whole text (no redaction pattern spans a newline, and a chunk starts
    where a line starts), but the regexes' transient copies stay ~1 MiB instead of several times a
    50 MB output.
    """
    return "".join(redacted_parts(data))


def redacted_parts(data: bytes | bytearray) -> list[str]:
    """decode_redacted's pieces, line-aligned chunks of about REDACT_CHUNK bytes (the caller joins them)."""
    if len(data) <= REDACT_CHUNK:
        return [redact_text(decode_output(data))]
    _release_free_heap()
    parts, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start + REDACT_CHUNK)
        end = len(data) if end < 0 else end + 1
        parts.append(redact_text(decode_output(data[start:end])))
        start = end
    return parts


def text_of(raw: RawResult) -> tuple[str, str]:
    """Both streams as redacted text, dropping each stream's bytes before joining its text (one copy at the peak)."""
    big = len(raw.stdout) + len(raw.stderr) > REDACT_CHUNK
    out_parts = redacted_parts(raw.stdout)
    raw.stdout = b""
    err_parts = redacted_parts(raw.stderr)
    raw.stderr = b""
    stdout, stderr = "".join(out_parts), "".join(err_parts)
    if (
        big
    ):  # the freed chunks sit in the heap (glibc raised its mmap threshold): hand them back now
        del out_parts, err_parts
        _release_free_heap()
    return stdout, stderr


def record_from_text(
    base: dict[str, object],
    raw: RawResult,
    stdout: str,
    stderr: str,
    *,
    sudo: bool = False,
    timeout_s: float | None = None,
) -> CommandRecord:
    """Freeze a transport result whose outputs are already decoded and redacted into a CommandRecord."""
    exit_status, timed_out = raw.exit_status, raw.timed_out
    if (
        timeout_s and exit_status in (124, 137, 143) and raw.duration_s >= timeout_s
    ):  # killed by the remote timeout(1)
        exit_status, timed_out = None, True
    error = raw.error
    refusal = sudo_refusal(stderr) if sudo and not error else None
    if refusal:
        error = f"needs root (sudo -n refused: {refusal[:120]})"
    return CommandRecord(
        **base,  # type: ignore[arg-type]
        exit_status=exit_status,
        stdout=stdout,
        stderr=stderr,
        started_at=raw.started_at,
        duration_s=round(raw.duration_s, 4),
        timed_out=timed_out,
        truncated=raw.truncated,
        error=error,
    )
