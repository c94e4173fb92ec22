"""--share and --html for the headless outputs (issue 28): the shared snapshot, its mapping file, the report file.

No Textual, no rich. The mapping (original -> placeholder) goes to the file the user named with `--share FILE`,
else to the user data dir's share-maps/ (0600), and its path is said on stderr: it never goes into the output.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from gpuaudit.probes.core.run.request import AuditRequest
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.snapshots.share import (
    Sharer,
    default_mapping_path,
    share_snapshot_dict,
    write_mapping,
)

# the diff is computed by `gpuaudit-tui diff --html`: a headless audit never loads it
if TYPE_CHECKING:
    from gpuaudit.snapshots.diff import SnapshotDiff


def share_snapshot(snapshot: Snapshot, request: AuditRequest) -> tuple[Snapshot, Sharer]:
    """The snapshot with every identifier mapped (the roofline and the facts too), and the mapping written."""
    shared, sharer = share_snapshot_dict(snapshot.model_dump(mode="json"))
    path = write_mapping(sharer, Path(request.share) if request.share else default_mapping_path())
    found = sum(len(m) for m in sharer.maps.values())
    print(
        f"gpuaudit-tui: --share: {found} identifier(s) replaced; the mapping (keep it, do not share it): {path}",
        file=sys.stderr,
    )
    return Snapshot.model_validate(shared), sharer


def shared_text(sharer: Sharer | None, text: str) -> str:
    """A text output (the plan) through the same mapping as the snapshot."""
    return text if sharer is None else sharer.text(text)


def write_html(
    snapshot: Snapshot,
    path: Path,
    old: Snapshot | None = None,
    diff: SnapshotDiff | None = None,
) -> Path:
    """--html FILE: the self-contained report, written atomically (0644: it is meant to be passed on).

    With `old` (`gpuaudit-tui diff --html`), `diff` is `diff_snapshots(old, snapshot)`, computed by the caller."""
    # the report draws with the Rich-based views: loaded only for --html, so an audit never pays for Rich
    from gpuaudit.tui.views.html import html_report

    data = html_report(snapshot, old=old, diff=diff).encode("utf-8")
    path = Path(path).expanduser()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
