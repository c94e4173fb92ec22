"""The python probe's rows of the catalogue (PROBES.md §9 and python.cuda_runtime_vs_driver of §11).

All are judged once, on the container when it was audited (else the host): the engine's Python lives there.
"""

from __future__ import annotations

from typing import Any

from gpuaudit.probes.core.judge.checks import BOTH, Check, Message
from gpuaudit.probes.python import checks_engine as eng
from gpuaudit.probes.python import checks_runtime as rt
from gpuaudit.probes.python.targets import FIRST_OF, no_engine

_ON: dict[str, Any] = dict(roles=BOTH, first_of=FIRST_OF)  # the same roles on every row

CHECKS: tuple[Check, ...] = (
    Check(
        "python.torch_arch_support",
        "torch built for the GPU's architecture",
        "container",
        why="is_available() still returns True on an unsupported arch; the failure arrives at the first kernel "
        "('no kernel image is available'), or PTX is JIT-compiled without the tuned kernels.",
        fix="Install a torch built from a CUDA 12.8+ index (cu128/cu13x) matching the engine.",
        expected="sm_<cc> of every GPU in torch's compiled arch list (sm_120 for Blackwell RTX)",
        verdict=rt.torch_arch_support,
        sources=("pyenv",),
        needs_gpu=True,
        **_ON,
        optional=("smi_query_driver",),
        variants={
            "ok": Message(title="torch carries kernels for every GPU architecture"),
            "warning": Message(title="torch only has PTX for the GPU (JIT at first use)"),
            "critical": Message(title="torch has no kernels for the GPU's architecture"),
            "unknown": Message(
                title="torch covers the readable GPUs; some compute capabilities unreadable"
            ),
            "gpu_compute_capability_unknown": Message(title="GPU compute capability unknown"),
            "torch_not_installed_inspected_python": Message(
                title="torch not installed in the inspected Python",
                why=(
                    "Without a serving engine's interpreter the probe inspects python3; pass "
                    "--python to aim it."
                ),
                fix="Point --python at the engine's interpreter (e.g. /opt/venv/bin/python).",
            ),
            "torch_cpu_only_build": Message(
                title="torch is a CPU-only build",
                fix="Install a CUDA build of torch matching the engine.",
            ),
            "torch_arch_list_unreadable": Message(title="torch arch list unreadable"),
            "gpu_compute_capability_unreadable": Message(title="GPU compute capability unreadable"),
        },
    ),
    Check(
        "python.cuda_stack_versions",
        "CUDA runtime/library wheels coherent",
        "container",
        why="Two CUDA runtimes in one process load whichever comes first; old Triton cannot generate sm_120 code.",
        fix="Reinstall the engine's wheels from one CUDA index (e.g. all cu130).",
        expected="one CUDA major across torch and nvidia-* wheels; Triton ≥ 3.3 on sm_120",
        verdict=rt.cuda_stack_versions,
        sources=("pyenv",),
        **_ON,
        optional=("smi_query_driver",),
        variants={
            "cuda_python_wheels_inconsistent": Message(title="CUDA Python wheels inconsistent"),
            "no_cuda_python_packages_installed": Message(title="No CUDA Python packages installed"),
            "cuda_python_wheels_coherent": Message(title="CUDA Python wheels coherent"),
        },
    ),
    Check(
        "python.flashinfer_sm120",
        "FlashInfer kernels exist for sm_120",
        "container",
        why="flashinfer-cubin 0.6.11 had no sm_120/121 cubins and fell through to wrong-arch ones, producing "
        "degenerate NVFP4-MoE output on RTX PRO 6000.",
        fix="Upgrade flashinfer-python/-cubin/-jit-cache together to a release with sm_120 targets; clear ~/.cache/flashinfer.",
        expected="FlashInfer cubins/JIT targets include sm_120 (12.0f)",
        verdict=rt.flashinfer_sm120,
        sources=("pyenv",),
        needs_gpu=True,
        **_ON,
        optional=(
            "engine_procs",
            "smi_query_driver",
        ),
        variants={
            "flashinfer_installed_sm_120_no": Message(
                title="FlashInfer installed for sm_120 (no known-bad build)"
            ),
            "flashinfer_sm_120_check_not": Message(title="FlashInfer sm_120 check not applicable"),
            "flashinfer_gpu_arch_unknown": Message(title="FlashInfer: GPU arch unknown"),
            "flashinfer_cubin_0_6_11": Message(
                title="flashinfer-cubin 0.6.11 ships no sm_120 cubins"
            ),
            "flashinfer_cuda_arch_list_excludes": Message(
                title="FLASHINFER_CUDA_ARCH_LIST excludes sm_120"
            ),
        },
    ),
    Check(
        "python.cuda_graphs",
        "CUDA graphs disabled in the serving engine",
        "engine",
        why="In eager mode every decode step re-launches all kernels from the host: 8× RTX PRO 6000 with "
        "--enforce-eager decoded at ~2–4 tok/s; enabling graphs gave 4–5× elsewhere. Some sm_120 "
        "setups run eager on purpose because capture fails: confirm why it is off.",
        fix="Remove --disable-cuda-graph / --enforce-eager from the engine's launch command (lower --cuda-graph-max-bs "
        "if capture runs out of memory).",
        expected="CUDA graphs on for decode (the engine default)",
        verdict=eng.cuda_graphs,
        sources=("engine_procs",),
        applies=no_engine,
        **_ON,
        variants={
            "cuda_graphs_not_disabled": Message(title="CUDA graphs not disabled"),
            "cuda_graphs_disabled_serving_engine": Message(
                title="CUDA graphs disabled in the serving engine (confirm intent)",
                fix=(
                    "Remove {graph_flag} from the engine's launch command (lower "
                    "--cuda-graph-max-bs if capture runs out of memory)."
                ),
            ),
        },
    ),
    Check(
        "python.dangerous_env",
        "Environment variables that wreck performance",
        "engine",
        why="CUDA_LAUNCH_BLOCKING serialises every kernel launch with the host; DSA and disabled caching "
        "allocators add checks and cudaMalloc calls to each step.",
        fix="Remove the debug variables from the engine's environment (container config, unit file, launch script).",
        verdict=eng.dangerous_env,
        sources=("engine_procs",),
        applies=no_engine,
        **_ON,
        optional=("smi_query_driver",),
        variants={
            "debug_limiting_variables_set_engine": Message(
                title="Debug or limiting variables set in the engine's environment"
            ),
            "engine_environment_not_readable": Message(
                title="Engine environment not readable", fix="Run the audit as root (or --sudo)."
            ),
            "no_performance_wrecking_variables_engine": Message(
                title="No performance-wrecking variables in the engine's environment"
            ),
        },
    ),
    Check(
        "python.attention_backend",
        "Attention/GEMM path selected by the engine",
        "engine",
        why="sm_120 support landed piecemeal: FA3/FlashMLA/TRT-LLM MLA kernels and DeepGEMM do not run on "
        "Blackwell RTX, so engines fall back to slower paths or fail.",
        fix="Pick a supported backend explicitly (e.g. --attention-backend flashinfer or triton) and check the startup log.",
        expected="a backend with native kernels for the GPU (FlashInfer/Triton on sm_120)",
        verdict=eng.attention_backend,
        sources=("engine_procs",),
        applies=no_engine,
        **_ON,
        optional=("smi_query_driver",),
        variants={
            "no_sm120_kernels": Message(title="Attention backend {backend} has no sm_120 kernels"),
            "deepgemm_on_sm120": Message(title="DeepGEMM enabled on sm_120 (unsupported)"),
            "slow_fallback": Message(title="Attention backend {backend} is a slow fallback path"),
            "backend_set": Message(title="Attention backend {backend}"),
            "engine_default": Message(
                title="Attention backend: engine default (see its startup log)"
            ),
        },
    ),
    Check(
        "python.cuda_runtime_vs_driver",
        "CUDA runtime supported by the host driver",
        "host",
        why="A runtime of a newer CUDA major needs a newer driver; without cuda-compat libs kernels fail to "
        "load (see driver.cuda_compat_libs).",
        fix="Upgrade the host driver, or install a torch/engine build for the driver's CUDA major.",
        verdict=rt.cuda_runtime_vs_driver,
        sources=("pyenv",),
        needs_gpu=True,
        **_ON,
        optional=(("host", "smi_query_driver"),),
        variants={
            "cuda_runtime_supported_driver": Message(title="CUDA runtime supported by the driver"),
            "cuda_runtime_vs_driver_no": Message(
                title="CUDA runtime vs driver: no CUDA runtime to compare"
            ),
            "driver_cuda_support_unknown": Message(title="Driver's CUDA support unknown"),
            "cuda_runtime_newer_host_driver": Message(
                title="CUDA runtime newer than the host driver supports"
            ),
            "cuda_runtime_newer_minor_driver": Message(
                title="CUDA runtime newer minor than the driver (compatible)",
                why=(
                    "Same major: minor-version compatibility runs it, but features needing newer "
                    "PTX/JIT may fail."
                ),
            ),
        },
    ),
    Check(
        "python.engine_threads",
        "Engine CPU threads vs its cpuset",
        "engine",
        why="OpenMP/torch pools sized to the whole machine inside a small cpuset oversubscribe the allowed CPUs: the "
        "threads that launch GPU work wait for a CPU between steps.",
        fix="Set OMP_NUM_THREADS (e.g. allowed CPUs / ranks) in the engine's environment.",
        verdict=eng.engine_threads,
        sources=("engine_procs", "engine_proc_status"),
        applies=no_engine,
        **_ON,
        variants={
            "engine_thread_pools_fit_cpus": Message(title="Engine thread pools fit its CPUs"),
            "engine_thread_counts_not_read": Message(title="Engine thread counts not read"),
            "engine_cpu_affinity_not_read": Message(title="Engine CPU affinity not read"),
            "omp_threads_ranks_exceed_engine": Message(
                title="OMP threads × ranks exceed the engine's CPUs"
            ),
            "engine_threads_sized_host_cpuset": Message(
                title="Engine threads sized to the host while its cpuset is small"
            ),
            "engine_may_use_every_cpu": Message(
                title="Engine may use every CPU (no small cpuset to oversubscribe)"
            ),
        },
    ),
    Check(
        "python.jit_caches",
        "Persistent JIT/compile caches",
        "container",
        why="A cache on tmpfs or read-only is rebuilt on every start (slow restarts, not slow decode); caches kept across "
        "an image upgrade can serve kernels built by the old version (community: wipe the JIT cache after upgrading).",
        fix="Put the caches on a persisted volume (or set the engine's *_CACHE_DIR there); after an upgrade delete the "
        "old version's folder.",
        verdict=rt.jit_caches,
        sources=("jit_cache_dirs",),
        **_ON,
        optional=(
            "engine_procs",
            "pyenv",
        ),
        variants={
            "jit_caches_persistent": Message(title="JIT caches persistent"),
            "no_jit_cache_folders_found": Message(title="No JIT cache folders found"),
            "jit_cache_carries_kernels_another": Message(
                title="JIT cache carries kernels of another FlashInfer build",
                fix=(
                    "Stop the engine, delete the old version's cache folder, restart (first "
                    "requests recompile)."
                ),
            ),
            "jit_caches_not_persistent": Message(title="JIT caches not persistent"),
            "jit_cache_folders_read_only": Message(title="JIT cache folders read-only"),
        },
    ),
    Check(
        "python.measured_throughput",
        "Decode throughput the engine reports",
        "engine",
        why="The engine's decode-batch figures exclude prefill and queueing; wall-clock tok/s per request includes "
        "them (a '~9 tok/s' report was 30-35 tok/s decode).",
        fix="Compare single-stream decode with the roofline (docs/ROOFLINE-METHOD.md §5); keep the engine's log readable.",
        expected="compare single-stream decode with the roofline (docs/ROOFLINE-METHOD.md); aggregate tok/s grows with concurrency",
        verdict=eng.measured_throughput,
        sources=("engine_procs", "engine_logs"),
        applies=no_engine,
        **_ON,
        variants={
            "decode_throughput_engine_reports": Message(
                title="Decode throughput the engine reports"
            ),
            "engine_log_not_read": Message(title="Engine log not read"),
            "no_throughput_figures_engine_log": Message(
                title="No throughput figures in the engine log",
                fix=(
                    "Keep the engine's log (a file or a systemd unit), or start SGLang with "
                    "--enable-metrics / scrape vLLM's /metrics."
                ),
            ),
        },
    ),
)
