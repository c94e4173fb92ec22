"""run_app's --theme handling, the theme store, and the command palette entries."""

from __future__ import annotations

import os
from pathlib import Path

from gpuaudit.tui.app import make_app, run_app
from gpuaudit.tui.cli.commands import audit_request
from gpuaudit.tui.cli.entry import build_parser
from gpuaudit.tui.screens.drilldown import DrilldownScreen
from gpuaudit.tui.theme_store import ThemeStore
from tui_support import FixedClock, synthetic_run


def test_unknown_theme_is_a_usage_error(capsys) -> None:
    args = audit_request(build_parser().parse_args(["--theme", "nope"]))
    assert run_app(args) == 2
    assert "--theme 'nope': unknown" in capsys.readouterr().err


def test_theme_store_round_trip_and_corrupt_file(tmp_path: Path) -> None:
    store = ThemeStore(tmp_path / "cfg" / "settings.json")
    assert store.load() is None
    assert store.save("gpuaudit-light") and store.load() == "gpuaudit-light"
    store.path.write_text("{not json")
    assert store.load() is None and store.save("gpuaudit-dark") and store.load() == "gpuaudit-dark"


def test_default_theme_store_lives_in_the_user_config_dir(tmp_path: Path) -> None:
    config_home = Path(os.environ["XDG_CONFIG_HOME"])  # isolated per test (tests/conftest.py)
    assert ThemeStore().path.is_relative_to(config_home), ThemeStore().path


async def test_every_action_is_in_the_command_palette() -> None:
    app = make_app(synthetic_run(), clock=FixedClock())
    async with app.run_test(size=(120, 40)):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for key in ("?", "a", "s", "d", "R", "f", "t", "r", "u"):
            assert any(t.endswith(f"({key})") for t in titles), key
        assert sum(t.lower().startswith("quit") for t in titles) == 1, (
            titles
        )  # Textual's own entry, once
        assert not any("question_mark" in t or "gpuaudit-tui:" in t for t in titles)
        assert "Open probe: PCIe" in titles
        assert any(t.startswith("Finding: ✖ CRIT") for t in titles)


async def test_palette_finding_entry_opens_its_drilldown_on_that_finding() -> None:
    app = make_app(synthetic_run(), clock=FixedClock())
    async with app.run_test(size=(120, 40)) as pilot:
        entry = next(
            c for c in app.get_system_commands(app.screen) if c.title.startswith("Finding: ✖ CRIT")
        )
        entry.callback()
        await pilot.pause()
        assert isinstance(app.screen, DrilldownScreen) and app.screen.probe_id == "python"
        assert app.screen.query_one("#findings").current.severity.value == "critical"


async def test_ctrl_c_quits() -> None:
    app = make_app(synthetic_run(), clock=FixedClock())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


def test_help_lists_examples_one_per_line_themes_probes_and_ssh_config(capsys) -> None:
    from gpuaudit.probes.catalogue import PROBE_IDS  # (probes/ids.py's, test_import_budget.py)
    from gpuaudit.themes import THEMES
    from gpuaudit.tui.cli.entry import THEME_NAMES, main

    assert THEME_NAMES == tuple(THEMES)
    try:
        main(["--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    examples = out[out.index("examples:") : out.index("ssh: --host")]
    assert " | " not in examples and examples.count("\n  gpuaudit-tui") >= 5
    assert "~/.ssh/config" in out and "Exit status: 0" in out
    assert all(name in out for name in (*THEME_NAMES, *PROBE_IDS))
    assert max(len(line) for line in out.splitlines()) <= 80
