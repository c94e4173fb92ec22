"""Schema evolution: upgrade an old snapshot's JSON step by step, one function per version.

`STEPS[n]` turns a version-n document into a version-(n+1) document (pure dict -> dict). When the
schema changes, bump `schema.SCHEMA_VERSION`, add the step here and keep a sample of the new
version in tests/fixtures/snapshots/v<N>/. Version 1 is the first released schema, so there are no
steps yet; tests exercise the mechanism with their own step tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpuaudit.snapshots.schema import SCHEMA_VERSION

Document = dict[str, Any]
Step = Callable[[Document], Document]

OLDEST_READABLE = 1
STEPS: Mapping[int, Step] = {}


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
