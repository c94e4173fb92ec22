"""Pilot tests of the snapshot picker and the diff screen, each pushed in a tiny App."""

from __future__ import annotations

from pathlib import Path

from gpuaudit.snapshots import store
from gpuaudit.tui.screens.diff import SnapshotDiffScreen
from gpuaudit.tui.screens.snapshot_picker import SnapshotPickerScreen
from snapfactory import kernel_probe, probe, rec, snap
from textual.app import App
from textual.widgets import DataTable, OptionList, Static


class Host(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.picked: list[Path | None] = []


async def test_picker_lists_saved_and_examples_and_dismisses_with_a_path(tmp_path: Path) -> None:
    store.save(snap(kernel_probe(), name="mine"), "mine", tmp_path)
    app = Host()
    async with app.run_test(size=(140, 40)) as pilot:
        app.push_screen(SnapshotPickerScreen(tmp_path), app.picked.append)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SnapshotPickerScreen)
        table = screen.query_one(DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert names[0] == "mine" and "case-study-before (example)" in names
        assert str(table.get_row_at(0)[2]) == "6.8.12-9-pve" and "1 warning" in str(
            table.get_row_at(0)[4]
        )
        await pilot.press("enter")
        await pilot.pause()
    assert app.picked == [tmp_path / "mine.json"]


HOSTILE_KERNEL = (
    "6.8[/]\x1b]0;pwned\x07[red]x\u202e"  # SYNTHETIC: a target's `uname -r` is untrusted
)


async def test_picker_shows_a_hostile_kernel_string_as_inert_text(tmp_path: Path) -> None:
    store.save(snap(kernel_probe(HOSTILE_KERNEL), name="evil[/]"), "evil", tmp_path)
    app = Host()
    async with app.run_test(size=(140, 40)) as pilot:  # as markup, `[/]` raised MarkupError here
        app.push_screen(SnapshotPickerScreen(tmp_path), app.picked.append)
        await pilot.pause()
        row = app.screen.query_one(DataTable).get_row_at(0)
        assert str(row[0]) == "evil[/]"
        assert str(row[2]) == "6.8[/]\\x1b]0;pwned\\x07[red]x\\u202e"
        assert "\x1b" not in app.export_screenshot()


async def test_picker_escape_dismisses_with_none(tmp_path: Path) -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        app.push_screen(SnapshotPickerScreen(tmp_path / "empty"), app.picked.append)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SnapshotPickerScreen)
    assert app.picked == [None]


async def test_diff_screen_lists_changed_probes_and_shows_the_cli_report() -> None:
    # raw text alone is noise by default (issue 14): the power change shows through its fact
    before = snap(
        kernel_probe("6.8.12-9-pve", "1", "warning"),
        probe(
            "power",
            records=[rec("drv", "acpi-cpufreq\n", probe="power")],
            facts={"host": {"driver": "acpi-cpufreq"}},
        ),
        probe("numa"),
    )
    after = snap(
        kernel_probe("6.14.11-1-pve", "0", "ok"),
        probe(
            "power",
            records=[rec("drv", "amd-pstate-epp\n", probe="power")],
            facts={"host": {"driver": "amd-pstate-epp"}},
        ),
        probe("numa"),
        container="root@127.0.0.1:2",
    )
    app = Host()
    async with app.run_test(size=(140, 40)) as pilot:
        screen = SnapshotDiffScreen(before, after)
        app.push_screen(screen)
        await pilot.pause()
        assert screen.changed_probes == ["kernel", "power"]
        options = screen.query_one("#diff-probes", OptionList)
        assert options.option_count == 2
        assert "resolved" in str(options.get_option_at_index(0).prompt)
        body = str(screen.query_one("#diff-kernel", Static).render())
        assert "kernel.release" in body and "6.14.11-1-pve" in body
        header = str(screen.query_one("#diff-header", Static).render())
        assert "matched by role" in header
        await pilot.press("v")  # unified diffs of the raw outputs (r re-runs everywhere else)
        await pilot.pause()
        assert "+amd-pstate-epp" in str(screen.query_one("#diff-power", Static).render())
        await pilot.press("down")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SnapshotDiffScreen)


async def test_diff_screen_identical() -> None:
    s = snap(kernel_probe())
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = SnapshotDiffScreen(s, s)
        app.push_screen(screen)
        await pilot.pause()
        assert screen.changed_probes == []
        assert "identical" in str(screen.query_one("#diff-header", Static).render())
