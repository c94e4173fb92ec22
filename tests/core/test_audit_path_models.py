"""An audit's import path builds no pydantic model and imports no pydantic (issue 30).

The engine's data model is probes/core/record.py's records (keyword-only dataclasses): importing pydantic and
building a model class (its core schema, validator and serializer: 0.5-5 ms each) cost every audit ~70-90 ms of
CPU. pydantic loads where untrusted documents are read (a snapshot, a diff, a fleet folder) and for the JSON
Schemas (snapshots/json_schema.py), never on an audit's path. The pydantic models left (the diff's and fleet's
documents, the schemas' stored shape) default no field through `list`/`tuple` (a builtin whose signature pydantic
parses from its text).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# what every headless audit (--json, --save, --plan, ...) imports from the engine and the snapshot layer
AUDIT_PATH = (
    "gpuaudit.probes.catalogue",
    "gpuaudit.probes.core.run.session",
    "gpuaudit.snapshots.compact",
    "gpuaudit.snapshots.schema",
    "gpuaudit.snapshots.migrate",
    "gpuaudit.snapshots.store",
    "gpuaudit.snapshots.baseline",
)
CHILD = """
import importlib, json, sys

for name in sys.argv[1:]:
    importlib.import_module(name)
from gpuaudit.probes.core.record import Record
built = []
def walk(cls):
    for sub in cls.__subclasses__():
        built.append(f"{sub.__module__}.{sub.__qualname__}")
        walk(sub)
walk(Record)
print(json.dumps({"records": built, "modules": sorted(sys.modules)}))
"""


def child(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_compact_imports_no_pydantic():
    loaded = json.loads(
        child(
            "import json, sys; import gpuaudit.snapshots.compact; print(json.dumps(sorted(sys.modules)))"
        )
    )
    assert "pydantic" not in loaded, (
        "snapshots/compact.py (every audit's output path) imports pydantic"
    )


def test_the_audit_path_imports_no_pydantic_and_builds_its_records():
    seen = json.loads(child(CHILD, *AUDIT_PATH))
    assert len(seen["records"]) > 15, "the child measured nothing: no record class built"
    loaded = [
        m
        for m in seen["modules"]
        if m.split(".")[0] in ("pydantic", "pydantic_core", "annotated_types")
    ]
    assert not loaded, f"an audit's import path loads pydantic: {loaded[:5]}"


def modules_with(marker: str, skip: tuple[str, ...] = ()) -> list[str]:
    """The modules of probes/ and snapshots/ whose source holds `marker` (imported by name: walking the packages
    would also run the target-side readers, scripts that run when imported)."""
    names = []
    for package in ("probes", "snapshots"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            if "examples" in rel.parts or marker not in path.read_text():
                continue
            name = "gpuaudit." + ".".join(p for p in rel.parts if p != "__init__")
            if not name.startswith(skip):
                names.append(name)
    return names


def defined_in(names: list[str], base: type | None = None) -> list[type]:
    """The classes those modules define (with `base`: its subclasses), each module imported."""
    import importlib

    found: list[type] = []
    for name in names:
        module = importlib.import_module(name)
        found += [
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and v.__module__ == name
            and (base is None or (issubclass(v, base) and v is not base))
        ]
    return found


def all_models() -> list[type]:
    """Every pydantic model of gpuaudit.probes and gpuaudit.snapshots."""
    from pydantic import BaseModel

    return defined_in(modules_with("BaseModel") + modules_with("create_model"), BaseModel)


def test_no_model_field_defaults_through_a_builtin_with_a_text_signature():
    """pydantic reads each default factory's signature when it builds the model; a builtin's (`list`, `tuple`) is
    parsed from its `__text_signature__` (on Python 3.11: tokenize's patterns compiled on the first, ~3 ms, then
    ~0.3 ms a field). probes/core/models.py's `empty_list` is a Python function: its signature is read directly."""
    models = all_models()
    assert len(models) > 20, len(models)
    slow = [
        f"{m.__module__}.{m.__qualname__}.{name}: {f.default_factory!r}"
        for m in models
        for name, f in m.model_fields.items()
        if getattr(f.default_factory, "__text_signature__", None)
    ]
    assert not slow, f"default_factory=list/tuple (use empty_list): {slow}"


def test_dataclasses_have_a_docstring():
    """CPython's `@dataclass` gives a class without a docstring one made of `inspect.signature(cls)`, each
    time the module is imported (~0.07 ms a class; 57 on a headless audit's path, issue 30). probes/core/collect/
    and probes/core/fleet/ have their own owners (their few docless classes are left to them)."""
    import dataclasses

    skip = ("gpuaudit.probes.core.collect.", "gpuaudit.probes.core.fleet.")
    classes = [
        c for c in defined_in(modules_with("@dataclass", skip)) if dataclasses.is_dataclass(c)
    ]
    assert len(classes) > 80, len(classes)
    docless = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if (c.__doc__ or "").startswith(c.__name__ + "(")
    ]
    assert not docless, f"dataclasses without a docstring: {docless}"
