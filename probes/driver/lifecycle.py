"""driver.branch_lifecycle: is the host driver on a branch NVIDIA still supports, and does it serve the container's
CUDA major? The branch table is probes/driver/lifecycle_table.py (dated, with sources and its update path)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from gpuaudit.probes.core.judge.checks import (
    Check,
    Ctx,
    Message,
    Verdict,
    critical,
    info,
    ok,
    unknown,
    warning,
)
from gpuaudit.probes.core.models import Role
from gpuaudit.probes.core.parsing import version_tuple
from gpuaudit.probes.driver.facts import DriverFacts
from gpuaudit.probes.driver.knowledge import host_version, is_compat
from gpuaudit.probes.driver.lifecycle_table import (
    AS_OF,
    BRANCHES,
    MIN_DRIVER_FOR_CUDA_MAJOR,
    NFB,
    SOURCES,
)

HOST: frozenset[Role] = frozenset({"host"})
TODAY: Callable[[], date] = date.today
"""The audit's date (tests pin it)."""


def _runtime_major(f: DriverFacts | None) -> tuple[int, str] | None:
    """The CUDA toolkit major the container (else host) carries, from `nvcc --version`."""
    if f is None or not f.nvcc:
        return None
    try:
        return version_tuple(f.nvcc)[0], f.nvcc
    except (ValueError, IndexError):
        return None


def branch_lifecycle(ctx: Ctx) -> Verdict:
    h: DriverFacts | None = ctx.of("host")
    version = host_version(h) if h else None
    if not version:
        return unknown("host driver version not read")
    branch = version_tuple(version)[0]
    row = BRANCHES.get(branch)
    table = f"NVIDIA branch table of {AS_OF.isoformat()}"
    if row is None:
        newest = max(BRANCHES)
        if branch > newest:
            return info(
                f"driver {version}: R{branch} is newer than the {table} (newest R{newest})",
                "a production or long-term support branch",
                variant="driver_branch_newer_bundled_table",
            )
        return warning(
            f"driver {version}: R{branch} is not a supported data center branch in the {table}",
            "a production or long-term support branch",
            variant="driver_branch_not_supported",
        )
    kind, eol, cuda_major = row
    obs = f"driver {version}: R{branch} {kind} branch" + (
        f", end of life {eol.strftime('%B %Y')}" if eol else ", no end-of-life date promised"
    )
    obs += f", serves CUDA {cuda_major}.x"
    ct: DriverFacts | None = ctx.of("container")
    # the side the CUDA toolkit was read on (the container's first) is the side whose libraries decide
    holder, where, runtime = next(
        (
            (f, w, r)
            for f, w in ((ct, "in the container"), (h, "on the host"))
            if (r := _runtime_major(f))
        ),
        (None, "", None),
    )
    if runtime and runtime[0] > cuda_major:
        if holder is None or not holder.libs_read:
            return unknown(
                obs + f"; CUDA {runtime[1]} toolkit, newer than the driver serves: whether a "
                "forward-compatibility libcuda is installed was not read (nvidia_lib_files)"
            )
        compat = [p for p, _ in holder.libcuda if is_compat(p)]
        if not compat:
            need = MIN_DRIVER_FOR_CUDA_MAJOR.get(runtime[0])
            return critical(
                obs + f"; CUDA {runtime[1]} toolkit {where}, no forward-compatibility libcuda",
                f"a driver serving CUDA {runtime[0]}" + (f" (>= {need})" if need else ""),
                variant="cuda_runtime_newer_driver_supports",
                runtime=runtime[0],
            )
    today = TODAY()
    if eol is not None and eol < today:
        return warning(
            obs + f" (past, as of {today.isoformat()})",
            "a branch NVIDIA still supports",
            variant="driver_branch_past_end_life",
        )
    if kind == NFB:
        return info(
            obs,
            "a production or long-term support branch on a production server",
            variant="new_feature_driver_branch",
        )
    return ok(obs)


CHECKS: tuple[Check, ...] = (
    Check(
        "driver.branch_lifecycle",
        "Driver branch lifecycle (NVIDIA support, CUDA major)",
        "host",
        why="End-of-life branches get no fixes; new-feature branches are short-lived; a CUDA runtime of a newer "
        "major than the driver serves fails without the forward-compatibility package.",
        fix="Run a supported production or long-term support branch serving the container's CUDA major.",
        expected="a supported production/LTS branch serving the CUDA major in use",
        verdict=branch_lifecycle,
        sources=("proc_driver_version",),
        roles=HOST,  # the container's CUDA toolkit is read through ctx.of("container") when it was audited
        needs_gpu=True,
        optional=(
            ("container", "nvcc_version"),
            ("container", "nvidia_lib_files"),
            "nvcc_version",
            "nvidia_lib_files",
        ),
        variants={
            "driver_branch_not_supported": Message(title="Driver branch not supported"),
            "driver_branch_past_end_life": Message(
                title="Driver branch past its end of life",
                why="An end-of-life branch gets no more security or bug fixes.",
                fix="Move to a supported production or long-term support branch ("
                + SOURCES[0]
                + ").",
            ),
            "new_feature_driver_branch": Message(
                title="New-feature driver branch",
                why=(
                    "New-feature branches are short-lived: fixes land on the next branch, with "
                    "no end-of-life promise."
                ),
                fix=(
                    "On a production server, prefer the production or long-term support branch "
                    "that follows."
                ),
            ),
            "driver_branch_newer_bundled_table": Message(
                title="Driver branch newer than the bundled table",
                fix="Check its designation on NVIDIA's Data Center Drivers guide: " + SOURCES[0],
            ),
            "cuda_runtime_newer_driver_supports": Message(
                title="CUDA runtime newer than the driver supports",
                why=(
                    "A CUDA major newer than the driver's fails to load kernels "
                    "(cudaErrorInsufficientDriver) unless the forward-compatibility package "
                    "(cuda-compat, datacenter GPUs only) is used."
                ),
                fix=(
                    "Upgrade the host driver to a branch serving CUDA {runtime}, or install the "
                    "matching cuda-compat package in the container."
                ),
            ),
        },
    ),
)
