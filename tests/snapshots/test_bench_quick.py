"""The diff benchmark's harness works (quick mode: 1 MB, no timing assertion on a shared CI machine)."""

from __future__ import annotations

import importlib.util

from snapfactory import REPO


def test_bench_diff_quick_mode(capsys) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_diff", REPO / "tests" / "bench" / "bench_diff.py"
    )
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(["--quick"])
    assert result["changed_probes"] > 0 and result["raw_changes"] > 0
    assert "total_s=" in capsys.readouterr().out
