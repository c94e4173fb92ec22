"""The app's snapshot actions: `s` saves the current run, `d` diffs it against a saved snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuaudit.tui.messages import SnapshotSaved

if TYPE_CHECKING:
    from gpuaudit.tui.screens.dashboard import DashboardScreen


class SnapshotActions:
    """Mixed into GpuAuditApp; uses its audit_run, clock, snapshot_dir, palette, dashboard, notify and push_screen."""

    audit_run: Any
    clock: Any
    palette: Any
    snapshot_dir: Path | None
    dashboard: Callable[[], DashboardScreen]

    def action_save(self) -> None:
        from gpuaudit.snapshots.naming import default_name
        from gpuaudit.snapshots.schema import Snapshot
        from gpuaudit.tui.screens.save_prompt import SavePromptScreen

        snapshot = Snapshot.from_run(self.audit_run, created_at=self.clock())

        def save(name: str | None) -> None:
            if name is None:
                return
            from gpuaudit.probes.core.errors import SnapshotError
            from gpuaudit.snapshots import store

            try:
                path = store.save(snapshot.model_copy(update={"name": name}), name, self.snapshot_dir)
            except SnapshotError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            self.notify(f"saved snapshot: {path}")
            self.post_message(SnapshotSaved(path))

        self.push_screen(SavePromptScreen(default_name(snapshot)), save)

    def action_diff(self) -> None:
        from gpuaudit.snapshots import store
        from gpuaudit.snapshots.schema import Snapshot
        from gpuaudit.tui.screens.diff import SnapshotDiffScreen
        from gpuaudit.tui.screens.snapshot_picker import SnapshotPickerScreen

        def picked(path: Path | None) -> None:
            if path is None:
                return
            try:
                old = store.load(path)
            except Exception as exc:  # a bad file is a notification, not a crash
                self.notify(str(exc), severity="error", timeout=10)
                return
            new = Snapshot.from_run(self.audit_run, created_at=self.clock())
            screen = SnapshotDiffScreen(old, new, self.palette)  # computes the diff, once
            self.mark_changed_probes(screen.changed_probes)
            self.push_screen(screen)

        self.push_screen(SnapshotPickerScreen(self.snapshot_dir or store.default_dir()), picked)

    def mark_changed_probes(self, changed: list[str]) -> None:
        """Highlight, on the dashboard, the probes that differ from the snapshot just compared against."""
        ids = set(changed)
        for pane in self.dashboard().panes():
            pane.changed = pane.probe_id in ids
