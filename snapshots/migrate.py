"""Schema evolution: upgrade an old snapshot's JSON step by step, one function per version.

`STEPS[n]` turns a version-n document into a version-(n+1) document (pure dict -> dict). When the
schema changes, bump `schema.SCHEMA_VERSION`, add the step here and keep a sample of the new
version in tests/fixtures/snapshots/v<N>/.

1 -> 2: "not applicable" becomes its own severity `n/a`. Schema 1 wrote it as `ok` (one check: `info`)
with the observed text "not applicable: <why>"; those findings become `n/a` with observed "<why>".

2 -> 3: the stored shape is packed (snapshots/compact.py): each record once per target at the top level
(`records`), probes name theirs by position (`record_refs`), findings once (`finding_refs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpuaudit.snapshots.compact import pack
from gpuaudit.snapshots.schema import SCHEMA_VERSION

Document = dict[str, Any]
Step = Callable[[Document], Document]

OLDEST_READABLE = 1

NA_PREFIX = "not applicable: "
"""Schema 1's spelling of "not applicable" (the start of an ok finding's observed text)."""
_NA_SUFFIX = ": the GPU checks are not applicable"
"""Schema 1's driver.version_flavor on a host without NVIDIA GPU (an info finding)."""


def _na_finding(finding: object) -> object:
    """A schema-1 finding dict -> schema 2: ok/info "not applicable: <why>" -> n/a "<why>"."""
    if not isinstance(finding, dict) or finding.get("severity") not in ("ok", "info"):
        return finding
    observed = finding.get("observed")
    if not isinstance(observed, str):
        return finding
    if observed.startswith(NA_PREFIX):
        return {**finding, "severity": "n/a", "observed": observed.removeprefix(NA_PREFIX)}
    if observed.endswith(_NA_SUFFIX):
        why = observed.removesuffix(_NA_SUFFIX) + ": the GPU checks do not apply"
        return {**finding, "severity": "n/a", "observed": why}
    return finding


def v1_to_v2(doc: Document) -> Document:
    """Not applicable as its own severity, in the flat findings and in every probe's findings."""
    if isinstance(doc.get("findings"), list):
        doc["findings"] = [_na_finding(f) for f in doc["findings"]]
    if isinstance(doc.get("probes"), list):
        doc["probes"] = [
            {**p, "findings": [_na_finding(f) for f in p["findings"]]}
            if isinstance(p, dict) and isinstance(p.get("findings"), list)
            else p
            for p in doc["probes"]
        ]
    return doc


def v2_to_v3(doc: Document) -> Document:
    """Each record once per target, each finding once: the stored (packed) shape."""
    return pack(doc)


STEPS: Mapping[int, Step] = {1: v1_to_v2, 2: v2_to_v3}


class MigrationError(ValueError):
    """The document's version cannot be brought to the current schema (message without the path)."""


def schema_version_of(data: object) -> int:
    """The document's integer schema_version; MigrationError when absent or not an integer."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise MigrationError("JSON but not a gpuaudit-tui snapshot (no schema_version)")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise MigrationError(f"schema_version is not an integer ({version!r:.40})")
    return version


def migrate(
    data: object,
    *,
    steps: Mapping[int, Step] | None = None,
    current: int = SCHEMA_VERSION,
    oldest: int | None = None,
) -> Document:
    """Upgrade `data` to schema `current`, applying steps[v] for v = its version .. current-1."""
    steps = STEPS if steps is None else steps
    oldest = OLDEST_READABLE if oldest is None else oldest
    version = schema_version_of(data)
    assert isinstance(data, dict)
    if version > current:
        raise MigrationError(
            f"written by a newer gpuaudit-tui (schema {version}, this one reads up to {current})"
        )
    if version < oldest:
        raise MigrationError(
            f"schema {version} is older than any this gpuaudit-tui reads (oldest {oldest})"
        )
    doc: Document = data
    while version < current:
        step = steps.get(version)
        if step is None:
            raise MigrationError(f"no migration from schema {version} to {version + 1}")
        doc = step(dict(doc))
        version += 1
        doc["schema_version"] = version
    return doc
