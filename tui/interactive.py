"""Starts the Textual app (the only module path that imports Textual)."""

from __future__ import annotations

from gpuaudit.probes.core.request import AuditRequest


def main(request: AuditRequest) -> int:
    if request.resume:  # resume headless, then show the stored result
        from gpuaudit.tui.resume import run_then_show

        return run_then_show(request)
    from gpuaudit.tui.app import run_app

    return run_app(request)
