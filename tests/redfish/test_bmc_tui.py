"""The TUI shows the BMC records and the BIOS findings of a --bmc audit, and never the credentials: a real audit
against sushy-static with planted credentials, opened in the app (firmware drill-down: findings, facts, the
commands table and the raw record), every screen's text checked."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import subprocess
import sys

from gpuaudit.snapshots.schema import Snapshot
from gpuaudit.tui.app import make_app

USER, PASSWORD = "tui-auditor", "Tui-Pl4nted-S3cret"
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


async def test_the_tui_shows_the_bios_and_no_secret(mockup):
    m = mockup("dell-r750")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from gpuaudit.tui.cli.entry import main; sys.exit(main())",
            "--probes",
            "firmware",
            "--json",
            "--bmc",
            m.address,
            "--bmc-ca",
            str(m.cert.cert),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "GPUAUDIT_BMC_USER": USER, "GPUAUDIT_BMC_PASSWORD": PASSWORD},
    )
    run = Snapshot.model_validate(json.loads(out.stdout)).to_run()
    app = make_app(run)
    app.animation_level = "none"
    screens = []
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screens.append(app.export_screenshot())
        app.open_drilldown("firmware", finding_id="firmware.bios_settings")
        await pilot.pause()
        screens.append(app.export_screenshot())
        for tab in ("tab-facts", "tab-finding"):
            app.screen.query_one("#dd-tabs").active = tab
            await pilot.pause()
            screens.append(app.export_screenshot())
        commands = app.screen.query_one("#commands")
        for row in range(commands.row_count):  # every record's raw output, the BMC's included
            app.screen.show_record(row)
            await pilot.pause()
            screens.append(app.export_screenshot())
    text = html.unescape(re.sub(r"<[^>]+>", "", "\n".join(screens))).replace("\xa0", " ")
    assert "redfish_bios" in text and "BIOS settings read from the BMC" in text
    assert (
        '"AttributeRegistry": "BiosAttributeRegistry.v1_0_3"' in text
    )  # the raw Bios record on screen
    for secret in (PASSWORD, TOKEN):
        assert secret not in text
