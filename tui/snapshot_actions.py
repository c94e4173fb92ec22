"""The app's snapshot actions: `s` saves the current run, `d` diffs it against a saved snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.messages import SnapshotSaved

if TYPE_CHECKING:
    from snapshots.schema import Snapshot


class SnapshotActions:
    """Mixed into GpuAuditApp; uses its audit_run, clock, snapshot_dir, notify and push_screen."""

    audit_run: Any
    clock: Any
    snapshot_dir: Path | None

    def action_save(self) -> None:
        from snapshots.naming import default_name
        from snapshots.schema import Snapshot
        from tui.screens.save_prompt import SavePromptScreen

        snapshot = Snapshot.from_run(self.audit_run, created_at=self.clock())

        def save(name: str | None) -> None:
            if name is None:
                return
            from probes.core.errors import SnapshotError
            from snapshots import store

            try:
                path = store.save(snapshot.model_copy(update={"name": name}), name, self.snapshot_dir)
            except SnapshotError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            self.notify(f"saved snapshot: {path}")
            self.post_message(SnapshotSaved(path))

        self.push_screen(SavePromptScreen(default_name(snapshot)), save)

    def action_diff(self) -> None:
        try:
            from tui.screens.diff import SnapshotDiffScreen
            from tui.screens.snapshot_picker import SnapshotPickerScreen
        except ImportError as exc:
            self.notify(f"snapshot diff is not available in this build ({exc})", severity="warning")
            return
        from snapshots import store
        from snapshots.schema import Snapshot

        def picked(path: Path | None) -> None:
            if path is None:
                return
            try:
                old = store.load(path)
            except Exception as exc:  # a bad file is a notification, not a crash
                self.notify(str(exc), severity="error", timeout=10)
                return
            new = Snapshot.from_run(self.audit_run, created_at=self.clock())
            self.mark_changed_probes(old, new)
            self.push_screen(SnapshotDiffScreen(old, new))

        self.push_screen(SnapshotPickerScreen(self.snapshot_dir or store.default_dir()), picked)

    def mark_changed_probes(self, old: Snapshot, new: Snapshot) -> None:
        """Highlight, on the dashboard, the probes that differ from the snapshot just compared against."""
        from snapshots.diff import diff_snapshots
        from tui.widgets.probe_pane import ProbePane

        changed = {p.probe_id for p in diff_snapshots(old, new).probes if p.changed}
        for screen in self.screen_stack:  # the dashboard may sit under the picker while this runs
            for pane in screen.query(ProbePane):
                pane.changed = pane.probe_id in changed

