"""The NCCL probe's rows of the catalogue (PROBES.md §7, nccl.env_vs_topology of §11, the ACTIVE all-reduce runs of §12).

nccl.shm_capacity is PROBES.md's cross-reference to container.shm: the container probe judges /dev/shm.
"""

from __future__ import annotations

from gpuaudit.probes.core.judge.checks import BOTH, HOST, Check, Message
from gpuaudit.probes.nccl import checks_active as act
from gpuaudit.probes.nccl import checks_engine as eng
from gpuaudit.probes.nccl import checks_topology as topo
from gpuaudit.probes.nccl.targets import ENGINE_FIRST, HOST_FIRST, no_engine

CHECKS: tuple[Check, ...] = (
    Check(
        "nccl.p2p_matrix",
        "Driver-reported GPU P2P capability",
        "host",
        why="NCCL uses its P2P transport only when CUDA reports peer access; without it every all-reduce hop is staged "
        "through host memory (~14 µs instead of sub-µs P2P writes, community RTX PRO 6000 figure). OK here does not "
        "prove P2P works: ACS/IOMMU can still redirect or hang it (see nccl.iommu_acs_gate).",
        fix="Stock drivers disable P2P on GeForce; on datacenter/workstation cards check BIOS ACS/IOMMU settings and the "
        "PCIe topology (CNS = chipset, TNS = topology).",
        expected="OK for every GPU pair",
        verdict=topo.p2p_matrix,
        sources=("smi_topo_p2p_r",),
        roles=BOTH,
        first_of=HOST_FIRST,
        applies=topo.fewer_than_two_gpus,
        needs_gpu=True,
        optional=("smi_topo_p2p_w", "smi_topo_m"),
        variants={
            "p2p_not_supported_on_consumer": Message(
                title="P2P not supported on consumer GPUs (driver design)"
            ),
            "some_gpu_pairs_lack_p2p": Message(title="Some GPU pairs lack P2P"),
            "p2p_not_applicable_single_gpu": Message(title="P2P not applicable (single GPU)"),
            "driver_reports_p2p_read_write": Message(
                title="Driver reports P2P read/write OK between all GPUs"
            ),
        },
    ),
    Check(
        "nccl.topology_class",
        "GPU path types and NCCL's default P2P cutoff",
        "host",
        why="NCCL's built-in P2P cutoff is SYS (everywhere) except on Intel/ARM where it is PXB.",
        fix="Usually nothing; on Intel hosts NCCL_P2P_LEVEL=SYS enables P2P across the CPU when it is measured fast.",
        expected="NCCL's default P2P cutoff covers these paths on AMD hosts",
        verdict=topo.topology_class,
        sources=("smi_topo_m",),
        roles=BOTH,
        first_of=HOST_FIRST,
        applies=topo.fewer_than_two_gpus,
        needs_gpu=True,
        optional=(("host", "cpuinfo_id"), "engine_procs"),
        variants={
            "gpu_path_types_p2p_expected": Message(
                title="GPU path types: P2P expected on every path"
            ),
            "all_gpu_pairs_connected_nvlink": Message(title="All GPU pairs connected by NVLink"),
            "nccl_will_not_use_p2p": Message(
                title="NCCL will not use P2P across the Intel CPU (by design)",
                why=(
                    "NCCL lowers its P2P cutoff to PXB on Intel x86 (Intel root complexes split "
                    "P2P traffic into 64-byte TLPs), so GPUs that meet only at the CPU talk "
                    "through SHM."
                ),
                fix=(
                    "Usually nothing; if measured P2P over the CPU is fast, NCCL_P2P_LEVEL=SYS "
                    "enables it."
                ),
            ),
            "gpu_path_types_read_cpu": Message(title="GPU path types read (CPU vendor unknown)"),
        },
    ),
    Check(
        "nccl.env_overrides",
        "NCCL knobs that change transport or algorithm",
        "engine",
        why="NCCL_P2P_DISABLE turns off direct GPU access over PCIe/NVLink (P2P write latency ≈0.4 µs vs ≈14 µs without, "
        "community RTX PRO 6000 figure); NCCL_SHM_DISABLE pushes fallbacks to sockets. Some high-concurrency setups "
        "measured more throughput with P2P off: explain why it is set.",
        fix="Remove stale NCCL_* workarounds from the engine's environment (container config, systemd unit, launch script) "
        "once the P2P path is verified.",
        expected="no P2P/SHM disables unless a documented workaround; debug logging off in production",
        verdict=eng.env_overrides,
        sources=("engine_procs",),
        roles=BOTH,
        first_of=ENGINE_FIRST,
        applies=no_engine,
        optional=(
            "smi_topo_m",
            ("host", "iommu_state"),
            ("host", "smi_topo_p2p_r"),
        ),
        variants={
            "nccl_knobs_override_transport_algorithm": Message(
                title="NCCL knobs override transport or algorithm"
            ),
            "nccl_tuning_debug_variables_set": Message(title="NCCL tuning/debug variables set"),
            "engine_environment_not_readable": Message(
                title="Engine environment not readable",
                fix="Run the audit as root (or --sudo) to read the serving process's environment.",
            ),
            "no_nccl_overrides_engine_environment": Message(
                title="No NCCL overrides in the engine's environment"
            ),
        },
    ),
    Check(
        "nccl.library_in_use",
        "The libnccl the engine loaded",
        "container",
        why="Preloaded or pinned NCCL copies next to torch's explain 'works in one container, hangs in another'.",
        fix="Keep one NCCL (torch's nvidia-nccl wheel or an explicit VLLM_NCCL_SO_PATH/LD_PRELOAD), not both.",
        verdict=eng.library_in_use,
        sources=("engine_procs",),
        roles=BOTH,
        first_of=ENGINE_FIRST,
        applies=no_engine,
        optional=("pyenv", "ldconfig_nccl", ("host", "ldconfig_nccl")),
        variants={
            "engine_loads_nccl_older_torch": Message(
                title="Engine loads an NCCL older than torch was built with"
            ),
            "engine_loads_one_libnccl": Message(title="Engine loads one libnccl"),
            "libnccl_mapped_engine_not_seen": Message(
                title="libnccl mapped by the engine not seen"
            ),
            "two_different_libnccl_copies_mapped": Message(
                title="Two different libnccl copies mapped by the engine"
            ),
        },
    ),
    Check(
        "nccl.custom_allreduce",
        "The engine's own all-reduce state",
        "engine",
        why="Small-message all-reduces dominate TP decode; the engine's one-shot kernel beat NCCL 3× for ≤ 8 KB on "
        "PCIe-switch boxes but was slower on dual-CPU boxes without switches (community).",
        fix="Drop --disable-custom-all-reduce on NVLink systems; on PCIe measure both (nccl.allreduce_lat with --active).",
        verdict=eng.custom_allreduce,
        sources=("engine_procs",),
        roles=BOTH,
        first_of=ENGINE_FIRST,
        applies=eng.tp_one,
        optional=("smi_topo_m", ("host", "smi_topo_m")),
        variants={
            "disabled": Message(title="Engine's custom all-reduce disabled"),
            "not_disabled": Message(title="Engine's custom all-reduce not disabled"),
            "disabled_interconnect_unknown": Message(
                title="Engine's custom all-reduce disabled (interconnect unknown)"
            ),
        },
    ),
    Check(
        "nccl.amd_dual_socket_model",
        "NCCL's inter-socket bandwidth assumption on AMD",
        "engine",
        why="NCCL models AMD's inter-socket link with a fixed AMD_BW of 16 GB/s and may pick few channels; 8× RTX PRO 6000 "
        "on dual Turin rose from ~22 to ~37.6 GB/s busbw with NCCL_MIN_NCHANNELS=8 (community).",
        fix="Measure with nccl-tests (--active); if low, set NCCL_MIN_NCHANNELS=8 in the engine's environment.",
        expected="an override (e.g. NCCL_MIN_NCHANNELS=8) or a measured busbw near the PCIe figure",
        verdict=topo.amd_dual_socket_model,
        sources=("cpuinfo_id", "smi_topo_m"),
        roles=HOST,
        applies=topo.not_amd_cross_socket,
        needs_gpu=True,
        optional=("engine_procs",),
        variants={
            "nccl_assumes_16_gb_between": Message(title="NCCL assumes 16 GB/s between AMD sockets"),
            "cross_socket_tp_on_amd": Message(title="Cross-socket TP on AMD with an NCCL override"),
        },
    ),
    Check(
        "nccl.iommu_acs_gate",
        "IOMMU/ACS hang risk for GPU peer traffic",
        "host",
        why="With translation and ACS redirect, peer writes detour through the root complex/IOMMU: reports range from a "
        "few GB/s to all-reduces that never finish and GPUs wedged at 100% until reset.",
        fix="Kernel cmdline iommu=pt (AMD keeps the IOMMU on for x2APIC); disable ACS redirect in BIOS for GPU ports, or "
        "NCCL_P2P_DISABLE=1 as a stop-gap.",
        expected="iommu=pt (or IOMMU off) and no ACS redirect on GPU paths when TP uses P2P",
        verdict=topo.iommu_acs_gate,
        any_of=("iommu_state", "proc_cmdline"),
        roles=HOST,
        needs_gpu=True,
        optional=("engine_procs",),
        variants={
            "ok": Message(title="GPU peer traffic not translated by the IOMMU"),
            "unknown": Message(title="IOMMU/ACS gate could not be judged"),
            "warning": Message(title="IOMMU translates GPU DMA (P2P may be slowed)"),
            "critical": Message(
                title="P2P will be routed via the IOMMU: expect very low bandwidth or hangs"
            ),
        },
    ),
    Check(
        "nccl.env_vs_topology",
        "Container NCCL environment vs host P2P capability",
        "container",
        why="A stale NCCL_P2P_DISABLE=1 costs every hop a trip through host memory; forcing P2P through an "
        "IOMMU-translated, ACS-redirected path is the reported recipe for hung collectives.",
        fix="Remove NCCL_P2P_DISABLE=1 from the container's environment when the host supports P2P (confirm with "
        "nccl-tests, --active); fix the host (iommu=pt, ACS redirect off) before forcing NCCL_P2P_LEVEL=SYS.",
        verdict=topo.env_vs_topology,
        sources=("engine_procs",),
        roles=BOTH,
        cross=True,
        applies=topo.no_container_engine,
        optional=(("host", "smi_topo_p2p_r"), ("host", "smi_topo_m"), ("host", "iommu_state")),
        variants={
            "container_nccl_env_consistent_host": Message(
                title="Container NCCL env consistent with host P2P capability"
            ),
            "container_nccl_env_vs_host": Message(
                title="Container NCCL env vs host: no engine environment"
            ),
            "p2p_forced_on_iommu_acs": Message(
                title="P2P forced on while the IOMMU/ACS gate says it will hang",
                why=(
                    "Forcing P2P through an IOMMU-translated, ACS-redirected path is the "
                    "reported recipe for hung collectives."
                ),
                fix="Fix the host (iommu=pt, ACS redirect off) before forcing NCCL_P2P_LEVEL=SYS.",
            ),
            "container_disables_p2p_host_supports": Message(
                title="Container disables P2P that the host supports"
            ),
        },
    ),
    Check(
        "nccl.transport_observed",
        "The transport NCCL chose (from its log)",
        "engine",
        why="Only NCCL's own log says which transport it picked; the driver's P2P matrix only says what is possible. NCCL "
        "uses P2P only when both its topology cutoff (NCCL_P2P_LEVEL) and NVML's P2P status allow it.",
        fix="Look for NCCL_P2P_DISABLE / NCCL_P2P_LEVEL in the engine's environment and for IOMMU/ACS blockers "
        "(nccl.iommu_acs_gate); confirm with nccl-tests (--active).",
        verdict=topo.transport_observed,
        sources=("engine_logs",),
        roles=BOTH,
        first_of=ENGINE_FIRST,
        applies=topo.no_api_server_log,
        optional=(
            "engine_procs",
            ("host", "engine_logs"),
        ),
        variants={
            "nccl_connects_gpus_via_p2p": Message(title="NCCL connects the GPUs via P2P"),
            "nccl_transport_engine_log_not": Message(title="NCCL transport: engine log not read"),
            "nccl_transport_not_visible_engine": Message(
                title="NCCL transport not visible in the engine log",
                fix=(
                    "Set NCCL_DEBUG=INFO in the engine's environment and restart it to see the "
                    "transport, or run nccl-tests (--active)."
                ),
            ),
            "nccl_uses_shm_net_between": Message(
                title="NCCL uses SHM/NET between GPUs the driver reports P2P-capable"
            ),
            "nccl_uses_non_p2p_transports": Message(
                title="NCCL uses non-P2P transports (P2P capability not confirmed)"
            ),
        },
    ),
    Check(
        "nccl.allreduce_bw",
        "(active, load-generating) all-reduce bus bandwidth",
        "host",
        why="busbw = algbw × 2(n−1)/n normalises all-reduce to link bandwidth; far below the topology's figure means P2P is "
        "off, routed via the IOMMU, or NCCL picked too few channels.",
        fix="Check nccl.iommu_acs_gate, nccl.env_overrides and NCCL_MIN_NCHANNELS.",
        verdict=act.allreduce_bw,
        sources=("nccl_all_reduce_perf",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "ok": Message(title="(active, load-generating) all-reduce bus bandwidth as expected"),
            "warning": Message(
                title="(active, load-generating) all-reduce bus bandwidth below expectation"
            ),
            "unknown": Message(
                title=(
                    "(active, load-generating) all-reduce bus bandwidth: expectation depends on "
                    "the unread topology"
                )
            ),
            "active_load_generating_nccl_tests": Message(
                title="(active, load-generating) nccl-tests all_reduce_perf gave no result"
            ),
        },
    ),
    Check(
        "nccl.allreduce_lat",
        "(active, load-generating) small-message all-reduce latency",
        "host",
        why="TP decode issues two small all-reduces per layer: their latency, not peak bandwidth, bounds tok/s.",
        fix="Look at protocol/channel selection (NCCL_PROTO, NCCL_MIN_NCHANNELS) and whether P2P is used.",
        verdict=act.allreduce_lat,
        sources=("nccl_all_reduce_perf",),
        roles=HOST,
        needs_gpu=True,
        variants={
            "ok": Message(title="(active, load-generating) small-message all-reduce latency"),
            "warning": Message(
                title="(active, load-generating) small-message all-reduce latency high"
            ),
            "unknown": Message(
                title=(
                    "(active, load-generating) small-message all-reduce latency: limit depends "
                    "on the unread topology"
                )
            ),
            "active_load_generating_small_message": Message(
                title="(active, load-generating) small-message all-reduce latency not measured"
            ),
        },
    ),
)
