"""The nvidia-smi error-banner scan skips patterns whose literals are absent: same answer as running every regex.

Proven on every real recorded output in tests/fixtures (banners from lost GPUs, driver mismatches, missing
drivers, NVML permission errors among them); the prefilter exists because the full regex scan of a 50 MB
output took 4.5 s per call and several probes ask (tests/bench/bench_audit.py, big output).
"""

from __future__ import annotations

from pathlib import Path

from gpuaudit.probes.core.parsers import nvidia_smi
from gpuaudit.probes.core.parsers.nvidia_smi import detect_smi_error, smi_error_kind

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _regex_only(text: str) -> str | None:
    for kind, _needles, pat in nvidia_smi._ERROR_PATTERNS:
        if pat.search(text):
            return kind
    return None


def _texts() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.stat().st_size < 2 * 2**20:
            text = path.read_bytes().decode("utf-8", "replace")
            out.append((str(path.relative_to(FIXTURES)), text))
    return out


def test_every_real_output_gets_the_answer_of_the_full_regex_scan() -> None:
    texts = _texts()
    with_banner = 0
    for name, text in texts:
        want = _regex_only(text)
        assert smi_error_kind(text) == want, name
        with_banner += want is not None
    assert with_banner >= 10, "the fixtures should hold real nvidia-smi error banners"


def test_each_literal_is_in_what_its_pattern_matches() -> None:
    samples = {
        "driver_library_mismatch": "Failed to initialize NVML: Driver/library version mismatch",
        "no_driver": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure",
        "no_devices": "No devices were found",
        "gpu_lost": "Unable to determine the device handle for GPU0000:02:00.0: GPU is lost.  Reboot the system",
        "device_handle": "Unable to determine the device handle for GPU 0000:07:00.0: Unknown Error",
        "no_permission": "Failed to initialize NVML: Insufficient Permissions",
        "nvml_init": "Failed to initialize NVML: Unknown Error",
        "not_found": "bash: line 1: nvidia-smi: command not found",
    }
    kinds = {kind for kind, _n, _p in nvidia_smi._ERROR_PATTERNS}
    assert kinds == set(samples), "every pattern needs a sample here"
    for kind, needles, pat in nvidia_smi._ERROR_PATTERNS:
        sample = samples[kind]
        m = pat.search(sample)
        assert m is not None, kind
        assert any(n in m.group(0).lower() for n in needles), kind
        assert detect_smi_error("filler line\n" * 1000 + sample + "\nmore\n") is not None


def test_a_banner_after_a_huge_output_is_still_found() -> None:
    text = (
        "benchmark filler, not a banner\n" * 200_000
        + "GPU 00000000:3B:00.0: has fallen off the bus.\n"
    )
    assert smi_error_kind(text) == nvidia_smi.SMI_ERR_GPU_LOST
    assert detect_smi_error(text) == "GPU 00000000:3B:00.0: has fallen off the bus."
