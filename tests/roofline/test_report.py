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
STRIP = "decode 10.1 tok/s · 10% of comm-aware bound 98–100 tok/s"


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
    for listing in (copy / "before").glob(
        "*/NOT-RECORDED.txt"
    ):  # a command the change recorded is recorded
        listing.write_text(
            "".join(
                ln
                for ln in listing.read_text().splitlines(keepends=True)
                if not any(listing.parent.glob(f"{ln.split('#')[0].strip() or '#'}.*"))
            )
        )
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
    assert rf.strip == STRIP
    assert rf.bounds["published_eta"] == pytest.approx(
        100.4, abs=0.2
    )  # DCGM's 1.48 TB/s floor, η 0.83
    assert (
        rf.published_eta == pytest.approx(1480 / 1792, abs=1e-3)
        and "DCGM" in rf.published_eta_source
    )
    assert rf.unexplained_ms_per_token == pytest.approx(1000 / 10.05 - 1000 / 98.5, abs=0.05)
    assert rf.explanations[0]["id"] == "python.cuda_graphs"
    # every GPU pair of the case study crosses the root complex (NODE/SYS): ACS redirect changes no path
    assert "pcie.acs" in {f.id for f in before_run.findings if f.severity.value == "warning"}
    assert "pcie.acs" not in [e["id"] for e in rf.explanations]
    # eager engine: the CPU-side findings apply (the CPU launches every kernel)
    assert [e["id"] for e in rf.explanations] == [
        "python.cuda_graphs",
        "power.cpu_scaling_driver",
        "power.cpu_cstates",
    ]
    assert "eager" in rf.explanations[1]["why"] and "90%" in rf.explanations[0]["cost"]
    assert rf.reference and rf.reference["tok_s"] == 51.6
    assert {r["tok_s"] for r in rf.references} == {51.6, 50.4, 56.6}
    assert any("GlmMoeDsa" in v or "glm_moe_dsa" in v for v in rf.inputs.values())


def test_the_plan_starts_with_the_strip(before_run):
    text = plan_markdown(build_plan(before_run), before_run)
    lines = text.splitlines()
    assert lines[2] == f"**{STRIP}**"
    assert (
        "- bound TP-aware, η = 1: 195 tok/s (measured is 5%)" in lines
    )  # η = 1 stays, as a detail line
    assert any(ln.startswith("- published η: NVIDIA DCGM diag SKU table") for ln in lines)


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


def _fast(d: Path, tok_s: str = "85.00", extra: str = "") -> None:
    """Single-stream log lines at `tok_s` (accept len `extra` appended) on the case study's engine."""
    f = d / "container" / "engine_logs.out"
    text = f.read_text()
    for old in ("9.71", "10.12", "10.05"):
        text = text.replace(
            f"gen throughput (token/s): {old}", f"{extra}gen throughput (token/s): {tok_s}"
        )
    f.write_text(text)


def _argv(d: Path, old: str, new: str) -> None:
    for role in ("host", "container"):
        f = d / role / "engine_procs.out"
        if f.exists():
            f.write_text(f.read_text().replace(old, new))


def test_near_the_bound_the_plan_says_so_instead_of_explaining(tmp_path):
    run = run_with(tmp_path, _fast)  # 85 tok/s: 86% of the comm-aware bound
    rf = roofline_for_run(run)
    assert rf.ratios["comm_aware"] == pytest.approx(85 / 98.5, abs=0.01)
    assert rf.near_bound and rf.explanations == []
    assert rf.strip.endswith("· near its bound")
    text = plan_markdown(build_plan(run), run)
    assert "the box is near its bound" in text and "plausibly explain" not in text


def test_acs_explains_only_when_a_gpu_pair_sits_behind_a_switch(tmp_path):
    def switched(d: Path) -> None:
        for role in ("host", "container"):
            f = d / role / "smi_topo_m.out"
            if f.exists():
                f.write_text(f.read_text().replace("NODE", "PIX"))

    rf = roofline_for_run(run_with(tmp_path, switched))
    ids = [e["id"] for e in rf.explanations]
    assert "pcie.acs" in ids and ids[0] == "python.cuda_graphs"


def test_mtp_multiplies_the_bound_with_the_measured_acceptance(tmp_path):
    def mtp(d: Path) -> None:
        _argv(
            d,
            "--trust-remote-code\n",
            "--trust-remote-code\n--speculative-algorithm\nNEXTN\n"
            "--speculative-num-steps\n3\n--speculative-eagle-topk\n1\n--speculative-num-draft-tokens\n4\n",
        )
        _fast(d, "95.10", "accept len: 2.50, ")

    rf = roofline_for_run(run_with(tmp_path, mtp))
    assert rf.speculative_accept_len == pytest.approx(2.5)
    assert rf.bounds["comm_aware"] == pytest.approx(98.45 * 2.5, abs=0.5)
    assert any(s.label == "speculative decoding" for s in rf.steps)
    assert rf.ratios["comm_aware"] < 0.5  # 95 tok/s with MTP is not "97% of physics"
    assert "(×2.50 spec)" in rf.strip
    assert [r["tok_s"] for r in rf.references] == [95.1]


def test_configured_mtp_without_a_measured_acceptance_uses_the_draft_maximum(tmp_path):
    def mtp(d: Path) -> None:
        _argv(
            d,
            "--trust-remote-code\n",
            "--trust-remote-code\n--speculative-algorithm\nNEXTN\n"
            "--speculative-num-steps\n3\n--speculative-eagle-topk\n1\n--speculative-num-draft-tokens\n4\n",
        )

    rf = roofline_for_run(run_with(tmp_path, mtp))
    assert rf.speculative_accept_len == 4.0
    assert rf.bounds["comm_aware"] == pytest.approx(98.45 * 4, abs=1)


def test_the_engine_custom_pcie_allreduce_sets_the_latency(tmp_path):
    rf = roofline_for_run(
        run_with(
            tmp_path,
            lambda d: _argv(
                d, "--trust-remote-code\n", "--trust-remote-code\n--enable-pcie-oneshot-allreduce\n"
            ),
        )
    )
    assert "7.5 µs" in rf.inputs["all-reduce"]
    t_mem = 9.1943e9 / (0.8 * 1792e9)
    assert rf.bounds["comm_aware"] == pytest.approx(1 / (t_mem + 156 * 7.5e-6), rel=2e-3)


METRICS_PAGES = ROOT / "tests" / "fixtures" / "engine_metrics"


def _metrics_page(name: str):
    def write(d: Path) -> None:
        page = (METRICS_PAGES / name).read_text()
        (d / "container" / "engine_metrics.out").write_text(
            f"@@pid 2417 http://127.0.0.1:30000/metrics\n{page}\n@@end\n"
        )

    return write


def _only_single_stream_lines(d: Path) -> None:
    f = d / "container" / "engine_logs.out"
    f.write_text(
        "\n".join(
            ln
            for ln in f.read_text().splitlines()
            if "#running-req" not in ln or "#running-req: 1," in ln
        )
        + "\n"
    )


def test_the_engine_metrics_histogram_is_the_measured_speed_when_one_request_ran_at_a_time(
    tmp_path,
):
    def change(d: Path) -> None:
        _metrics_page("sglang-llama31-8b-one-request.prom")(d)
        _only_single_stream_lines(d)

    rf = roofline_for_run(run_with(tmp_path, change))
    assert rf.measured_tok_s == pytest.approx(1 / 0.0381757915019989)  # 26.19 tok/s
    assert rf.measured_source.startswith("engine metrics: http://127.0.0.1:30000/metrics")
    assert "finished one request since it started" in rf.measured_source
    # the case study's log also shows bursts of up to 1024 requests: then the histogram is not single stream
    rf = roofline_for_run(
        run_with(tmp_path / "b", _metrics_page("sglang-llama31-8b-one-request.prom"))
    )
    assert rf.measured_tok_s == pytest.approx(10.05)
    assert "log shows up to 1024 running requests" in rf.inputs["engine metrics"]


def test_a_metrics_page_of_another_process_than_the_judged_engine_is_not_used(tmp_path):
    """The page must come from the engine the python probe judged (engine_procs' API server, pid 2417 in the
    case study): a page read from another process is not the engine's figure."""

    def change(d: Path) -> None:
        page = (METRICS_PAGES / "sglang-llama31-8b-one-request.prom").read_text()
        (d / "container" / "engine_metrics.out").write_text(
            f"@@pid 31337 http://127.0.0.1:31337/metrics\n@@pids 31337\n{page}\n@@end\n"
        )
        _only_single_stream_lines(d)

    rf = roofline_for_run(run_with(tmp_path, change))
    assert "engine_logs" in (rf.measured_source or "")
    assert rf.inputs["engine metrics"] == (
        "not used: the page was read from pid 31337, the engine the python probe judged is pid 2417"
    )


def test_a_busy_metrics_page_falls_back_to_the_log_and_says_why(tmp_path):
    rf = roofline_for_run(run_with(tmp_path, _metrics_page("sglang-llama31-8b-busy.prom")))
    assert rf.measured_tok_s == pytest.approx(10.05)
    assert "engine_logs" in rf.measured_source
    assert "162 running" in rf.inputs["engine metrics"]


def _with_probe_record(
    run, stdout: str, command_id: str = "engine_decode_probe", target: str = "container"
):
    """The case study's run plus a record only --active adds (the decode probe, nccl-tests)."""
    from gpuaudit.probes.core.models import CommandRecord

    rec = CommandRecord(
        target=target,
        probe_id="python",
        command_id=command_id,
        command="(active)",
        exit_status=0,
        stdout=stdout,
    )
    probes = [
        p.model_copy(update={"records": [*p.records, rec]}) if p.probe_id == "python" else p
        for p in run.probes
    ]
    return run.model_copy(update={"probes": probes})


def test_an_active_decode_probe_is_the_measured_speed_and_a_refusal_is_named(before_run):
    run = _with_probe_record(
        before_run,
        "@@pid 2417 http://127.0.0.1:30000\n"
        '@@decode model="glm-5" tokens=256 chunks=256 ttft_s=0.412000 span_s=25.500000\n@@end\n',
    )
    rf = roofline_for_run(run)
    assert rf.measured_tok_s == pytest.approx(255 / 25.5)  # 10 tok/s
    assert rf.measured_source.startswith("--active decode probe: one streamed request of 256")

    run = _with_probe_record(
        before_run,
        "@@pid 2417 http://127.0.0.1:30000\n"
        "@@refused engine busy: 3 running request(s): nothing sent\n@@end\n",
    )
    rf = roofline_for_run(run)
    assert rf.measured_tok_s == pytest.approx(10.05) and "engine_logs" in rf.measured_source
    assert rf.inputs["decode probe (--active)"].startswith("not measured: engine busy: 3 running")


def test_an_active_probe_of_another_process_than_the_judged_engine_is_not_used(before_run):
    run = _with_probe_record(
        before_run,
        "@@pid 31337 http://127.0.0.1:31337\n@@pids 31337,31338\n"
        '@@decode model="glm-5" tokens=256 chunks=256 ttft_s=0.412000 span_s=25.500000\n@@end\n',
    )
    rf = roofline_for_run(run)
    assert rf.measured_tok_s == pytest.approx(10.05) and "engine_logs" in rf.measured_source
    assert rf.inputs["decode probe (--active)"] == (
        "not used: the request went to pid 31337,31338, the engine the python probe judged is pid 2417"
    )


NCCL_TESTS = ROOT / "tests" / "fixtures" / "nvidia" / "nccl-tests-all-reduce-perf"


def test_a_measured_nccl_tests_latency_replaces_the_default(before_run):
    text = (NCCL_TESTS / "a100-sxm4-80gb-8gpu-single-node-mpirun-ofi-noise-lines.txt").read_text()
    rf = roofline_for_run(
        _with_probe_record(before_run, text, command_id="nccl_all_reduce_perf", target="host")
    )
    # GLM-5 hidden 6144: a decode all-reduce carries 12,288 B; the first measured size >= that is 16 KiB
    assert "26.15 µs at 16384 B on 8 GPUs" in rf.inputs["all-reduce"]
    t_mem = 9.1943e9 / (0.8 * 1792e9)
    assert rf.bounds["comm_aware"] == pytest.approx(1 / (t_mem + 156 * 26.15e-6), rel=2e-3)


def test_every_bound_has_plain_words_in_the_plan_and_the_roofline_tab(before_run):
    """A bound key (`published_eta`) once reached the Roofline tab raw: one label table serves both."""
    from gpuaudit.probes.core.roofline.bounds import BOUND_LABELS
    from gpuaudit.tui.views.roofline_view import roofline_summary

    rf = roofline_for_run(before_run)
    assert "published_eta" in rf.bounds  # the case study has a DCGM-published floor for its GPU
    assert set(rf.bounds) <= set(BOUND_LABELS)
    shown = roofline_summary(rf).plain + plan_markdown(build_plan(before_run), before_run)
    for key in rf.bounds:
        assert BOUND_LABELS[key] in shown, key
        assert "_" not in key or key not in shown, key
    assert all(len(label) <= 28 for label in BOUND_LABELS.values())  # the tab's label column
