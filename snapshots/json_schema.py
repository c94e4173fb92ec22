"""The published JSON contract: JSON Schemas (draft 2020-12) of every `--json` document, generated from the models.

`gpuaudit-tui --json-schema [NAME]` prints one; `docs/schema/<name>.schema.json` holds them all, committed, and
`docs/JSON.md` is the field reference generated from them (tests/snapshots/test_json_schema.py keeps both equal to
what this module generates and validates real outputs against them). Regenerate after a model change with
`python3 -m gpuaudit.snapshots.json_schema docs`.

Documents: `snapshot` (`--json`, `--replay FILE --json`, a saved snapshot), `diff` (`diff A B --json`),
`fleet` (`fleet DIR --json`), `fleet-hosts` (`--hosts FILE --json`), `checks` (`--list-checks --json`).

Compatibility: fields are added in minor releases (objects stay open: no `additionalProperties: false`); a
removed, renamed or retyped field raises the snapshot's `schema_version` (snapshots/migrate.py reads old ones).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import textwrap
import typing
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuaudit.probes.core.models import CommandRecord, Finding, ProbeResult, empty_list
from gpuaudit.probes.core.record import Record
from gpuaudit.probes.core.roofline.report import Roofline
from gpuaudit.snapshots.diff import SnapshotDiff
from gpuaudit.snapshots.schema import SCHEMA_VERSION, Snapshot
from pydantic import BaseModel, ConfigDict, Field, create_model

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ID_PREFIX = "urn:gpuaudit-tui:schema:"
"""A URN, not a URL: the schemas ship in docs/schema/ and are never fetched."""


# The stored shape's models (snapshots/compact.py packs the document; these describe it, for its JSON
# Schema: built here, not on an audit's path, issue 30)


def _is_model(t: Any) -> bool:
    """A pydantic model or one of the engine's records (probes/core/record.py): both describe a JSON object."""
    return (
        isinstance(t, type) and issubclass(t, BaseModel | Record) and t not in (BaseModel, Record)
    )


def _field_types(model: Any) -> dict[str, Any]:
    """Field name -> its resolved annotation, for either kind of model."""
    if issubclass(model, Record):
        hints = typing.get_type_hints(model)
        return {f.name: hints[f.name] for f in dataclasses.fields(model)}
    return {n: f.annotation for n, f in model.model_fields.items()}


def _fields(model: Any, drop: set[str]) -> dict[str, Any]:
    """`model`'s fields as create_model takes them: (annotation, FieldInfo)."""
    if not issubclass(model, Record):
        return {n: (f.annotation, f) for n, f in model.model_fields.items() if n not in drop}
    types = _field_types(model)
    return {
        f.name: (types[f.name], _field_info(f))
        for f in dataclasses.fields(model)
        if f.name not in drop
    }


def _field_info(f: dataclasses.Field[Any]) -> Any:
    """A record field's default as pydantic's FieldInfo."""
    if f.default_factory is not dataclasses.MISSING:
        return Field(default_factory=f.default_factory)
    if f.default is not dataclasses.MISSING:
        return Field(default=f.default)
    return Field()


REF_FIELDS: dict[str, Any] = {
    "record_refs": (
        list[int],
        Field(
            default_factory=empty_list,
            description="Positions in `records` of this probe's records.",
        ),
    ),
    "finding_refs": (
        list[int] | None,
        Field(
            default=None,
            description="Positions in `findings` of this probe's findings"
            " (null when the probe keeps them inline in `findings`).",
        ),
    ),
    "findings": (
        list[Finding] | None,
        Field(default=None, description="Inline findings (only when finding_refs is null)."),
    ),
}

StoredRecord: Any = create_model(
    "StoredRecord",
    __doc__="One command run on one target, stored once however many probes read it (a CommandRecord"
    " without probe_id: the probes name it in their record_refs).",
    **_fields(CommandRecord, {"probe_id"}),
)
StoredProbe: Any = create_model(
    "StoredProbe",
    __doc__="One probe's result as stored: its records and findings by position in the document's lists.",
    **_fields(ProbeResult, {"records", "findings"}),
    **REF_FIELDS,
)


DOCS_FROM: dict[str, tuple[type, ...]] = {
    "StoredRecord": (CommandRecord,),
    "StoredProbe": (ProbeResult,),
}
"""Where the generated models' field docs live (the JSON Schema reads attribute docstrings from the source)."""


def stored_document(snapshot: type, name: str, doc: str, **override: Any) -> Any:
    """A model of the stored document (for its JSON Schema): `snapshot`'s fields, probes as StoredProbe, and
    the top-level `records`. Built from the models, so a field added there appears here."""
    fields = _fields(snapshot, {"probes", *override})
    probes: tuple[Any, Any] = (list[StoredProbe], Field(default_factory=empty_list))
    records: tuple[Any, Any] = (
        list[StoredRecord],
        Field(default_factory=empty_list, description="Every distinct command record, once."),
    )
    DOCS_FROM[name] = (snapshot,)
    return create_model(name, __doc__=doc, **fields, probes=probes, records=records, **override)


if TYPE_CHECKING:
    SnapshotDocument = Snapshot
else:  # the stored shape (schema 3, snapshots/compact.py), generated from Snapshot's fields
    SnapshotDocument = stored_document(
        Snapshot,
        "SnapshotDocument",
        "What `--json` prints and `--save` stores: one audit with its raw records (each once per target),"
        " facts and findings (each once; probes name theirs by position).",
        roofline=(
            Roofline | None,
            Field(
                default=None,
                description="The decode roofline (derived from the records, recomputed on replay);"
                " null when it could not be computed.",
            ),
        ),
    )


class CheckRow(BaseModel):
    """One check of the catalogue (`--list-checks --json`)."""

    id: str
    """Stable finding id, `<probe>.<slug>` (PROBES.md); never changes once released."""
    probe: str
    owner: str
    """Who can fix it: bios, host, container, engine or hardware."""
    title: str
    why: str
    fix: str
    expected: str
    sources: list[str]
    """Command ids (`gpuaudit-tui --list-checks`) the check needs; any unusable one makes the finding unknown."""
    any_of: list[str]
    """Alternative command ids: one usable is enough."""
    roles: list[str]
    """Targets the check runs on: host, container."""
    cross_target: bool
    """One finding over host and container together instead of one per target."""
    needs_gpu: bool
    aliases: list[str]
    """PROBES.md cross-reference ids this check also answers for."""


class CheckCatalogue(BaseModel):
    """`--list-checks --json`: every check the tool can make."""

    checks: list[CheckRow]


class FleetOutlier(BaseModel):
    node: str
    fact: str
    """The compared fact: driver, cuda, kernel, bios, vbios, governor, maxreadreq, ..."""
    value: str | None
    """The node's value (null: not known on that node)."""
    majority: str
    agree: int
    """Nodes of the class that hold the majority value."""
    of: int
    """Nodes of the class that know this fact."""


class FleetSplitSide(BaseModel):
    value: str | None
    nodes: list[str]


class FleetSplit(BaseModel):
    """A fact without a majority in its class: every value with its nodes."""

    fact: str
    sides: list[FleetSplitSide]


class FleetClass(BaseModel):
    """Nodes of one class (GPU model x count x board) compared with each other."""

    model_config = ConfigDict(populate_by_name=True)

    klass: str = Field(alias="class")
    nodes: list[str]
    compared: list[str]
    """Facts compared within the class."""
    outliers: list[FleetOutlier]
    no_majority: list[FleetSplit]


class NotComparable(BaseModel):
    node: str
    why: str


class FleetReportDocument(BaseModel):
    """`gpuaudit-tui fleet DIR --json`: which node differs from its peers."""

    classes: list[FleetClass]
    not_comparable: list[NotComparable]
    alone: list[str]
    """Nodes alone in their class: nothing to compare them with."""
    agrees: bool
    """True only when every node was compared with a peer and nothing differs (exit 0)."""
    verdict: str
    skipped: list[str]
    """Files that could not be read, with the reason."""


class FleetHostEntry(BaseModel):
    target: str
    """The inventory line: [user@]host[:port]."""
    name: str
    groups: list[str]
    exit_status: int
    """This host's exit status (0, 1, 2 or 3, as a single audit's)."""
    duration_s: float
    error: str | None
    snapshot: SnapshotDocument | None
    """The host's snapshot; null when no audit result exists."""


class FleetHostsSummary(BaseModel):
    targets: int
    reachable: int
    failed: int
    exit_status: int
    """The worst host's exit status (the process's)."""
    duration_s: float
    max_connections: int
    findings: dict[str, int]
    """Severity -> findings over all hosts."""


class FleetHostsDocument(BaseModel):
    """`gpuaudit-tui --hosts FILE --json`: one entry per inventory host."""

    fleet: list[FleetHostEntry]
    summary: FleetHostsSummary


EXTRA_FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "diff": {
        "identical": {
            "type": "boolean",
            "title": "Identical",
            "description": "Nothing counted as a change (exit 0); volatile facts, timings and raw text "
            "alone do not count unless --all-facts/--raw.",
        }
    }
}
"""Fields a document carries beyond its model (tui/cli/snapshot_commands.py adds `identical`)."""
DOCUMENTS: dict[str, tuple[Any, str]] = {
    "snapshot": (
        SnapshotDocument,
        "gpuaudit-tui --json (also --replay FILE --json, saved snapshots)",
    ),
    "diff": (SnapshotDiff, "gpuaudit-tui diff A B --json"),
    "fleet": (FleetReportDocument, "gpuaudit-tui fleet DIR --json"),
    "fleet-hosts": (FleetHostsDocument, "gpuaudit-tui --hosts FILE --json"),
    "checks": (CheckCatalogue, "gpuaudit-tui --list-checks --json"),
}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one document, with every model's field docstrings as descriptions."""
    model, command = DOCUMENTS[name]
    generated = model.model_json_schema(mode="serialization", by_alias=True)
    _describe(generated, model)
    for key, prop in EXTRA_FIELDS.get(
        name, {}
    ).items():  # written by the CLI next to the model's fields
        generated["properties"][key] = prop
        generated["required"].append(key)
    for sub in generated.get("$defs", {}).values():
        if (cls := _models().get(sub.get("title", ""))) is not None:
            _describe(sub, cls)
    return {
        "$schema": DRAFT,
        "$id": f"{ID_PREFIX}{name}",
        "x-command": command,
        "x-schema-version": SCHEMA_VERSION,
        **generated,
    }


NOTES: dict[str, str] = {
    "SnapshotDocument.schema_version": "Version of this document's shape; older snapshots are migrated on load.",
    "SnapshotDocument.tool_version": "gpuaudit-tui version that wrote it.",
    "SnapshotDocument.created_at": "When the audit finished (UTC).",
    "SnapshotDocument.name": "The saved snapshot's name (--save NAME), else null.",
    "SnapshotDocument.mode": "live audit, replay of a snapshot, the bundled demo, or a resumed audit.",
    "SnapshotDocument.targets": "The machines audited: the host, and the container when one was given.",
    "SnapshotDocument.target_states": "Role (host, container) -> how connecting to it went.",
    "SnapshotDocument.probes": "One result per probe, in display order: raw records, facts, findings.",
    "CommandRecord.target": "Role of the target the command ran on.",
    "CommandRecord.command_id": "Stable id of the declared command (the key of replays and diffs).",
    "CommandRecord.stdout": "Byte-exact output decoded as UTF-8 (invalid bytes replaced); capped by --max-output.",
    "CommandRecord.duration_s": "Wall-clock seconds.",
    "CommandRecord.timed_out": "Killed by --timeout: the output is what it printed before.",
    "CommandRecord.truncated": "Cut at --max-output / --output-budget.",
    "CommandRecord.needs_root": "Declared as needing root (runs under `sudo -n` with --sudo).",
    "Finding.severity": "ok is proven fine; unknown: could not be read (the reason is `observed`), never"
    " 'fine'; n/a (schema 2): proven not to apply.",
    "Finding.probe": "The probe that made it.",
    "Finding.targets": "Roles the finding concerns.",
    "Finding.observed": "What was seen (kube-bench's actual), or why it is unknown.",
    "Finding.expected": "What a well-configured machine shows.",
    "Finding.why": "Why it matters for inference speed or correctness.",
    "Finding.fix": "How to fix it (a command where one exists).",
    "Finding.evidence": "The command records behind the finding.",
    "ProbeResult.status": "done, failed (the probe itself failed: `error`), cancelled, skipped, ...",
    "ProbeResult.records": "Every command the probe ran, on every target.",
    "ProbeResult.error": "Why the probe failed, when it did.",
    "TargetState.state": "failed: the target could not be audited (`reason`); the exit status is then 3.",
    "TargetState.hostname": "The target's hostname as it reported it.",
    "TargetState.is_root": "Whether the audit ran as root there.",
    "Target.kind": "How it was reached: this machine, SSH, through the host (pct/lxc/docker), or a replay.",
}
"""Descriptions for fields whose model has no docstring for them ("Model.field" -> text)."""


def _describe(node: dict[str, Any], model: Any) -> None:
    """Descriptions from docstrings, and every property required: the serializer always writes every field."""
    if model.__doc__ and "description" not in node:
        node["description"] = inspect.cleandoc(model.__doc__)
    docs = _attribute_docs(model)
    for key, prop in node.get("properties", {}).items():
        aliases = (
            {}
            if issubclass(model, Record)
            else {(f.alias or n): n for n, f in model.model_fields.items()}
        )
        field = aliases.get(key, key)
        sources = [model.__name__, *(m.__name__ for m in DOCS_FROM.get(model.__name__, ()))]
        text = docs.get(field) or next(
            (NOTES[f"{m}.{field}"] for m in sources if f"{m}.{field}" in NOTES), None
        )
        if text and "description" not in prop:
            prop["description"] = text
    if node.get("properties"):
        node["required"] = list(node["properties"])


def _attribute_docs(model: type) -> dict[str, str]:
    """`field: T` followed by a string literal, over the class and its bases (the codebase's field-doc habit)."""
    out: dict[str, str] = {}
    for cls in [*DOCS_FROM.get(model.__name__, ()), *reversed(model.__mro__)]:
        if not _is_model(cls):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                out[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return out


@cache
def _models() -> dict[str, Any]:
    """Every model reachable from the documents, by the title pydantic gives its $defs entry."""
    seen: dict[str, Any] = {}

    def walk(model: Any) -> None:
        if model.__name__ in seen:
            return
        seen[model.__name__] = model
        for annotation in _field_types(model).values():
            for t in _types(annotation):
                walk(t)

    for model, _ in DOCUMENTS.values():
        walk(model)
    return seen


def _types(annotation: Any) -> list[Any]:
    if _is_model(annotation):
        return [annotation]
    return [t for arg in getattr(annotation, "__args__", ()) for t in _types(arg)]


def render(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


# --- the field reference (docs/JSON.md) ----------------------------------------------------------------


def reference() -> str:
    """docs/JSON.md: every document's objects and fields, from the schemas."""
    out = [
        "# JSON output: the field reference",
        "",
        "Generated from the models by `python3 -m gpuaudit.snapshots.json_schema docs` (a test keeps it",
        "current). The JSON Schemas (draft 2020-12) are in [`schema/`](schema/); `gpuaudit-tui --json-schema",
        "[NAME]` prints one. Objects are open: new fields may appear in a minor release; a removed, renamed",
        f"or retyped field raises the snapshot's `schema_version` (now {SCHEMA_VERSION}).",
        "",
        "| document | command | schema |",
        "|---|---|---|",
    ]
    for name, (_, command) in DOCUMENTS.items():
        out.append(f"| {name} | `{command}` | [{name}.schema.json](schema/{name}.schema.json) |")
    done: set[str] = set()
    for name in DOCUMENTS:
        s = schema(name)
        out += ["", f"## {name}", ""]
        objects = [(s.get("title", name), s), *s.get("$defs", {}).items()]
        for title, node in objects:
            if title in done or "properties" not in node:
                continue
            done.add(title)
            out += _object_section(title, node)
    return "\n".join(out).rstrip() + "\n"


def _object_section(title: str, node: dict[str, Any]) -> list[str]:
    lines = [f"### {title}", ""]
    if node.get("description"):
        lines += [_one_line(node["description"]), ""]
    lines += ["| field | type | meaning |", "|---|---|---|"]
    required = set(node.get("required", ()))
    for key, prop in node["properties"].items():
        kind = _type_text(prop) + ("" if key in required else " (may be absent)")
        lines.append(f"| `{key}` | {kind} | {_one_line(prop.get('description', ''))} |")
    return [*lines, ""]


def _type_text(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        ref: str = prop["$ref"]
        return ref.rsplit("/", 1)[-1]
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    if "anyOf" in prop:
        return " or ".join(_type_text(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(prop.get('items', {}))}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map to {_type_text(prop['additionalProperties'])}"
    if prop.get("format") == "date-time":
        return "date-time string"
    return str(kind)


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


# --- files ---------------------------------------------------------------------------------------------


def expected_files() -> dict[str, Callable[[], str]]:
    """Path under docs/ -> its generated text."""
    files: dict[str, Callable[[], str]] = {
        f"schema/{n}.schema.json": partial(render, n) for n in DOCUMENTS
    }
    files["JSON.md"] = reference
    return files


def write_docs(docs: Path) -> list[Path]:
    written = []
    for rel, make in expected_files().items():
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # python3 -m gpuaudit.snapshots.json_schema docs
    for p in write_docs(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(p)
