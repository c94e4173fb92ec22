"""The headless modes' exit statuses and the rule that picks one (tui/cli/entry.py EXIT_RULE, --help's epilog)."""

from __future__ import annotations

from gpuaudit.probes.core.models import AuditRun, Severity

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_TARGET_FAILED = 0, 1, 2, 3
EXIT_OUTPUT_FAILED = 4
"""--save, --prom (or --resume's store) could not be written; stdout's --json/--plan/--health is complete."""
EXIT_TERMINATED = 143
"""SIGTERM: 128 + 15, what a shell and systemd expect of a terminated program."""


def exit_code(run: AuditRun, fail_on: str) -> int:
    """EXIT_RULE: 3 when any requested target could not be audited, 1 when a finding reaches --fail-on, else 0."""
    if any(s.state == "failed" for s in run.target_states.values()):
        return EXIT_TARGET_FAILED
    if fail_on != "never":
        threshold = Severity(fail_on).rank
        if any(f.severity.rank >= threshold for f in run.findings):  # unknown ranks below warning
            return EXIT_FINDINGS
    return EXIT_OK
