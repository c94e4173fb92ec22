"""The roofline of a whole audit: inputs read from the records, the strip, and no figure from a missing input."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from gpuaudit.probes.core.judge.plan import build_plan, plan_markdown
from gpuaudit.probes.core.roofline.report import roofline_for_run

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "snapshots" / "examples" / "case-study"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_case_study", ROOT / "scripts" / "build_case_study.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.fixture(scope="module")
def before_run():
    return _builder().build("before").to_run()


def run_with(tmp_path: Path, change) -> object:
    """The case study's 'before' audit, rebuilt from a copy of its recordings after `change(copy)`."""
    copy = tmp_path / "case-study"
    shutil.copytree(RECORDINGS, copy)
    change(copy / "before")
    return _builder().build("before", recordings=copy).to_run()


def test_the_case_study_roofline(before_run):
    rf = roofline_for_run(before_run)
    assert rf.status == "ok" and rf.missing == []
    # GLM-5 NVFP4 on 8x RTX PRO 6000, TP 8 (tests/roofline/test_bounds.py computes these by hand)
    assert rf.bounds["tp_aware"] == pytest.approx(194.9, abs=0.2)
    assert rf.bounds["comm_aware"] == pytest.approx(98.5, abs=0.2)
    assert rf.bounds["naive"] == pytest.approx(325.4, abs=0.2)
    assert rf.measured_tok_s == pytest.approx(
        10.05
    )  # median of the three single-stream log lines (9.71, 10.05, 10.12)
    assert rf.strip == "decode 10.1 tok/s · bound 98–195 tok/s · 5–10% of physics"
    assert rf.unexplained_ms_per_token == pytest.approx(1000 / 10.05 - 1000 / 98.5, abs=0.05)
    assert rf.explanations[0]["id"] == "python.cuda_graphs"
    assert rf.reference and rf.reference["tok_s"] == 51.6
    assert any("GlmMoeDsa" in v or "glm_moe_dsa" in v for v in rf.inputs.values())


def test_the_plan_starts_with_the_strip(before_run):
    text = plan_markdown(build_plan(before_run), before_run)
    assert text.splitlines()[2] == "**decode 10.1 tok/s · bound 98–195 tok/s · 5–10% of physics**"


def test_no_engine_means_no_figure(tmp_path):
    def no_engine(d: Path) -> None:
        for role in ("host", "container"):  # the host of an LXC container sees its processes too
            (d / role / "engine_procs.out").write_text("@@none\n")

    run = run_with(tmp_path, no_engine)
    rf = roofline_for_run(run)
    assert rf.status == "unknown" and rf.bounds == {} and rf.measured_tok_s is None
    assert "no serving engine" in rf.missing[0] and rf.strip.startswith("roofline unknown")


def test_an_unreadable_config_means_no_figure(tmp_path):
    def garble(d: Path) -> None:
        f = d / "container" / "engine_model_files.out"
        f.write_text(f.read_text().replace('"hidden_size": 6144', '"hidden_size": ', 1))

    rf = roofline_for_run(run_with(tmp_path, garble))
    assert rf.status == "unknown" and rf.bounds == {} and "config.json: not JSON" in rf.missing[0]


def test_model_files_not_collected_means_no_figure(tmp_path):
    rf = roofline_for_run(
        run_with(tmp_path, lambda d: (d / "container" / "engine_model_files.out").unlink())
    )
    assert rf.status == "unknown" and rf.bounds == {} and "engine_model_files" in rf.missing[0]


def test_an_unknown_gpu_means_no_bandwidth_figure(tmp_path):
    def rename(d: Path) -> None:
        for role in ("host", "container"):
            f = d / role / "smi_gpu_ids.out"
            if f.exists():
                f.write_text(
                    f.read_text().replace(
                        "NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA Mystery GPU"
                    )
                )

    rf = roofline_for_run(run_with(tmp_path, rename))
    assert rf.bounds == {} and rf.status == "unknown"
    assert any("NVIDIA Mystery GPU" in m for m in rf.missing)


def test_no_single_stream_log_line_keeps_the_bounds_but_no_measured_speed(tmp_path):
    def busy(d: Path) -> None:
        f = d / "container" / "engine_logs.out"
        f.write_text(f.read_text().replace("#running-req: 1,", "#running-req: 7,"))

    rf = roofline_for_run(run_with(tmp_path, busy))
    assert rf.status == "partial" and rf.measured_tok_s is None and rf.ratios == {}
    assert rf.bounds["tp_aware"] == pytest.approx(194.9, abs=0.2)
    assert rf.strip.startswith("decode ? tok/s (not measured)")
