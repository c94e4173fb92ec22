"""The app's snapshot actions: `s` saves the current run, `d` diffs it against a saved snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuaudit.probes.core.errors import SnapshotError
from gpuaudit.snapshots import store
from gpuaudit.snapshots.naming import default_name
from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.messages import SnapshotSaved
from gpuaudit.tui.screens.confirm import ConfirmScreen
from gpuaudit.tui.screens.diff import SnapshotDiffScreen
from gpuaudit.tui.screens.save_prompt import SavePromptScreen
from gpuaudit.tui.screens.snapshot_picker import SnapshotPickerScreen

if TYPE_CHECKING:
    from gpuaudit.tui.app import GpuAuditApp


def save(app: GpuAuditApp) -> None:
    """Ask for a name (default: host, kernel, driver, time), store the snapshot, tell an open diff its B name."""
    snapshot = Snapshot.from_run(app.audit_run, created_at=app.clock())

    def saved(name: str | None) -> None:
        if name is None:
            return
        try:
            path = store.save(snapshot.model_copy(update={"name": name}), name, app.snapshot_dir)
        except SnapshotError as exc:
            app.notify(str(exc), severity="error", timeout=10)
            return
        app.notify(f"saved snapshot: {path}")
        app.saved_name = name
        for screen in app.screen_stack:
            if isinstance(screen, SnapshotDiffScreen):
                screen.rename_new(name)
        app.post_message(SnapshotSaved(path))

    app.push_screen(SavePromptScreen(default_name(snapshot)), saved)


def diff(app: GpuAuditApp) -> None:
    """Pick a saved snapshot (A) and show what changed in the current run (B)."""

    def picked(path: Path | None) -> None:
        if path is None:
            return
        try:
            old = store.load(path)
        except Exception as exc:  # a bad file is a notification, not a crash
            app.notify(str(exc), severity="error", timeout=10)
            return
        new = Snapshot.from_run(app.audit_run, created_at=app.clock()).model_copy(
            update={"name": app.saved_name}
        )

        def show(go: bool | None = True) -> None:
            if go:
                screen = SnapshotDiffScreen(old, new, app.palette)  # computes the diff, once
                mark_changed_probes(app, screen.changed_probes)
                app.push_screen(screen)

        if (why := different_machines(old, new)) is not None:
            app.push_screen(
                ConfirmScreen(f"{why}: every fact will differ. Diff anyway? (y/n)"), show
            )
            return
        show()

    app.push_screen(SnapshotPickerScreen(app.snapshot_dir or store.default_dir()), picked)


def mark_changed_probes(app: GpuAuditApp, changed: list[str]) -> None:
    """Highlight, on the dashboard, the probes that differ from the snapshot just compared against."""
    ids = set(changed)
    for pane in app.dashboard().panes():
        pane.changed = pane.probe_id in ids


def machine(snapshot: Snapshot, role: str = "host") -> str | None:
    """Who a snapshot's host is: the hostname it reported, else the target the user named."""
    st = snapshot.target_states.get(role)
    if st is not None and st.hostname:
        return st.hostname
    spec: str | None = next((t.spec for t in snapshot.targets if t.role == role), None)
    return None if spec is None or spec == "local" else spec


def different_machines(old: Snapshot, new: Snapshot) -> str | None:
    """A sentence when A and B are two machines (the demo against this VM), else None (unknown: no warning)."""
    a, b = machine(old), machine(new)
    if a is None or b is None or a == b:
        return None
    return f"{old.name or 'A'} was recorded on {a}, this audit is of {b}"
