"""What `gpuaudit-tui snapshots` and the snapshot picker show: one line of key facts per file."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.probes.core.models import SEVERITY_ORDER, Severity
from gpuaudit.snapshots import store
from gpuaudit.snapshots.naming import driver_of, kernel_of
from gpuaudit.snapshots.schema import Snapshot

SHORT = {
    Severity.CRITICAL: "C",
    Severity.WARNING: "W",
    Severity.UNKNOWN: "U",
    Severity.INFO: "I",
    Severity.OK: "OK",
    Severity.NA: "NA",
}
"""One- or two-letter severity marks of the compact count line (`gpuaudit-tui snapshots`)."""


@dataclass(frozen=True)
class SnapshotInfo:
    """One stored snapshot, summarised; `error` set (and the rest empty) when the file is unreadable."""

    path: Path
    name: str
    created_at: datetime | None = None
    mode: str = ""
    targets: list[str] = field(default_factory=list)
    kernel: str | None = None
    driver: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    example: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "name": self.name,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "mode": self.mode,
            "targets": self.targets,
            "kernel": self.kernel,
            "driver": self.driver,
            "counts": self.counts,
            "note": self.note,
            "example": self.example,
            "error": self.error,
        }


def severity_counts(snapshot: Snapshot) -> dict[str, int]:
    """Findings per severity, worst first, every severity present (zeros included)."""
    counts = {s.value: 0 for s in SEVERITY_ORDER}
    for f in snapshot.findings:
        counts[Severity(f.severity).value] += 1
    return counts


def counts_text(counts: dict[str, int], *, short: bool = False) -> str:
    """Non-zero counts worst first: "2 critical 1 unknown" (short: "2C 1U"), or "none"."""
    parts = [
        f"{counts[s.value]}{SHORT[s]}" if short else f"{counts[s.value]} {s.value}"
        for s in SEVERITY_ORDER
        if counts.get(s.value)
    ]
    return " ".join(parts) or "none"


def summarize(path: Path, snapshot: Snapshot, *, example: bool = False) -> SnapshotInfo:
    return SnapshotInfo(
        path=path,
        name=snapshot.name or path.stem,
        created_at=snapshot.created_at,
        mode=snapshot.mode,
        targets=[f"{t.role}={t.spec}" for t in snapshot.targets],
        kernel=kernel_of(snapshot),
        driver=driver_of(snapshot),
        counts=severity_counts(snapshot),
        note=snapshot.note,
        example=example,
    )


def read_info(path: Path, *, example: bool = False) -> SnapshotInfo:
    """Summarise one file; an unreadable file becomes an entry carrying the one-line reason."""
    try:
        return summarize(path, store.load(path), example=example)
    except SnapshotError as exc:
        return SnapshotInfo(path=path, name=path.stem, example=example, error=str(exc))
    except (
        RecursionError,
        ValueError,
        OSError,
    ) as exc:  # one hostile file must never hide the others
        return SnapshotInfo(
            path=path,
            name=path.stem,
            example=example,
            error=f"{path}: unreadable ({exc.__class__.__name__})",
        )


def list_snapshots(directory: Path | None = None, *, examples: bool = False) -> list[SnapshotInfo]:
    """Saved snapshots, newest first; unreadable ones last, marked by `error` (the picker and `snapshots` show
    them as such); the bundled examples after them if asked."""
    directory = directory or store.default_dir()
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    infos = [read_info(p) for p in files if not p.name.startswith(".")]
    infos.sort(
        key=lambda i: (
            i.error is not None,
            -(i.created_at.timestamp() if i.created_at else 0),
            i.name,
        )
    )
    if examples:
        infos += [read_info(p, example=True) for p in example_paths()]
    return infos


def example_paths() -> list[Path]:
    """The bundled case-study snapshots that exist (before, after)."""
    names = ("case-study-before.json", "case-study-after.json")
    return [store.EXAMPLES_DIR / n for n in names if (store.EXAMPLES_DIR / n).is_file()]
