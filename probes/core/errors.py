"""Domain errors raised by the engine; the CLI maps them to one-line messages and exit 2."""

from __future__ import annotations


class GpuAuditError(Exception):
    """Base class for errors that become a one-line message, never a traceback."""


class UsageError(GpuAuditError):
    """A command-line value or target spec is malformed."""


class ParseError(GpuAuditError):
    """A parser met output it cannot make sense of."""


class TransportError(GpuAuditError):
    """A target could not be reached or lost its connection."""


class SnapshotError(GpuAuditError):
    """A snapshot file is missing, corrupt, foreign or from a newer schema."""
