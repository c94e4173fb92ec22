"""Fleet documents: saved snapshot files read as plain dicts (no models), and the host records peers compare."""

from __future__ import annotations

import json
import os
import re
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.fleet.peers import IDENTITY, Node, node_from_document, node_from_records
from gpuaudit.snapshots.plain import default_dir, records_of

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024


def snapshot_files(paths: list[str], store: Path | None) -> list[Path]:
    if not paths:
        paths = [str(store or default_dir())]
    files: list[Path] = []
    for text in paths:
        path = Path(text).expanduser()
        if path.is_dir():
            files += sorted(p for p in path.glob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"{path}: no such file or directory")
    return files


def host_records(doc: Mapping[str, Any]) -> dict[str, str]:
    """command id -> stdout of every usable host record of a snapshot document."""
    out: dict[str, str] = {}
    for r in records_of(doc):  # the stored shape (each record once) or an expanded one
        if (
            isinstance(r, dict)
            and r.get("target") == "host"
            and r.get("exit_status") == 0
            and not r.get("error")
            and not r.get("timed_out")
            and not r.get("truncated")
            and isinstance(r.get("stdout"), str)
        ):
            out.setdefault(str(r.get("command_id")), r["stdout"])
    return out


def load_document(path: Path) -> dict[str, Any]:
    """A snapshot file as a dict; ValueError (one line) for what is not one.

    What fleets read of it (light_document): every top-level field, and of the records only those of the
    command ids the peer comparison reads — a 1,000-snapshot fleet is ~750 MB of JSON, mostly command output
    nobody compares. Files this tool did not write pretty-printed are parsed whole (the same result)."""
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ValueError("larger than 256 MiB")
    with open(
        path, "rb"
    ) as fh:  # read whole: cheaper than mmap's page faults (one file held at a time)
        data = fh.read()
    if data and (light := light_document(data)) is not None:
        return light
    try:
        doc = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to be a snapshot") from None
    if not isinstance(doc, dict) or "probes" not in doc:
        raise ValueError("not a gpuaudit snapshot")
    return doc


# --------------------------------------------------------------------------------------------------
# Light documents: the comparison's records only, found by byte search in our own pretty-printed JSON.

_RECORD_LISTS = ("probes", "records")
_LAZY = ("findings", "roofline")
"""Parsed only when read (the fleet screen reads findings; the comparison never does)."""
_DECODER = json.JSONDecoder()


class _Recorder(dict[str, str]):
    """A records mapping that notes every command id a reader asks for (and answers "")."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(str(key))
        return default if default is not None else ""

    def __getitem__(self, key: str) -> str:
        self.asked.add(str(key))
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return False


_WANTED: frozenset[str] | None = None


def comparison_command_ids() -> frozenset[str]:
    """Every command id the peer comparison reads (host and container), asked of its own readers."""
    global _WANTED
    if _WANTED is None:
        host, container = _Recorder(), _Recorder()
        try:
            node_from_records("", "", host, container)
        except TypeError:  # a release whose comparison reads only the host
            node_from_records("", "", host)
        ids = host.asked | container.asked | set(IDENTITY)
        _WANTED = frozenset(ids | {"smi_gpu_ids", "dmidecode_bios"})
    return _WANTED


class LightDocument(dict[str, Any]):
    """A snapshot document whose `findings` and `roofline` are parsed on first read."""

    def __init__(self, lazy: dict[str, bytes], **fields: Any) -> None:
        super().__init__(fields)
        self._lazy = lazy

    def _load(self, key: str) -> None:
        dict.__setitem__(self, key, json.loads(self._lazy.pop(key)))

    def _load_all(self) -> None:
        for key in list(self._lazy):
            self._load(key)

    def __getitem__(self, key: str) -> Any:
        if key in self._lazy:
            self._load(key)
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._lazy:
            self._load(key)
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._lazy or dict.__contains__(self, key)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._lazy)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        self._load_all()
        return dict.keys(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        self._load_all()
        return dict.items(self)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        self._load_all()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        self._load_all()
        return dict(dict.items(self))

    def __repr__(self) -> str:
        self._load_all()
        return dict.__repr__(self)


def _wanted_records(data: bytes, start: int, end: int, wanted: frozenset[str]) -> list[Any] | None:
    """The command records of `wanted` command ids between start and end (file order); None if unsure.

    Every record has a `"command_id": "` marker (so do findings' evidence references, which are skipped: they
    have no exit_status). Once a record is found, the search anchors on its line's indent: '\n' never occurs
    inside a JSON string, so the search skips over command output at memchr speed."""
    # the needle ends in "d", not in a quote or a space: CPython's search skips by the needle's last byte
    plain, tail = b'"command_id', b'": "'
    needle, anchored = plain, False
    out: list[Any] = []
    prev = start
    at = data.find(needle, start, end)
    while at != -1:
        mark = at + len(needle) - len(plain)
        id_start = mark + len(plain) + len(tail)
        if data[id_start - len(tail) : id_start] != tail:  # "command_id" in another position
            at = data.find(needle, id_start, end)
            continue
        id_end = data.find(b'"', id_start, end)
        if id_end == -1:
            return None
        cid = data[id_start:id_end].decode("utf-8", "replace")
        nxt = data.find(needle, id_end, end)
        if cid in wanted:
            obj_start = data.rfind(b"{", prev, mark)
            if obj_start == -1:
                return None
            try:
                text = data[obj_start : nxt if nxt != -1 else end].decode("utf-8")
                record, _ = _DECODER.raw_decode(text)
            except (ValueError, UnicodeDecodeError):
                return None
            if not isinstance(record, dict) or record.get("command_id") != cid:
                return None
            if "exit_status" in record:  # a command record, not an evidence reference
                out.append(record)
                line_start = data.rfind(b"\n", prev, mark)
                indent = data[line_start:mark] if line_start != -1 else b""
                if not anchored and indent.strip() == b"" and indent.startswith(b"\n"):
                    needle, anchored = indent + plain, True
                    nxt = data.find(needle, id_end, end)
        prev = mark
        at = nxt
    return out


_ORDER = (
    "schema_version",
    "tool_version",
    "created_at",
    "name",
    "mode",
    "note",
    "targets",
    "target_states",
    "probes",
    "findings",
    "roofline",
    "records",
)
"""Top-level keys in the order snapshots/schema.py writes them (schema 3 appends the packed `records`)."""


def light_document(body: bytes) -> LightDocument | None:
    """A snapshot's top-level fields + the comparison's records, or None (then parse it whole).

    Only for what this tool writes (pretty-printed, keys in _ORDER): each top-level key is found by a forward
    search from the previous one, so the big record list is scanned once, for its command-id markers."""
    stop = len(body)
    while stop and body[stop - 1 : stop] in (b"\n", b" ", b"\r", b"\t"):
        stop -= 1
    first = re.match(rb'\{\n( +)"', body[:64])  # the writer's indent (pydantic: 1 or 2 spaces)
    if first is None or body[stop - 2 : stop] != b"\n}":
        return None
    indent = first.group(1)
    top = b"\n" + indent + b'"'
    keys: list[tuple[str, int, int]] = []
    at = 1
    for key in _ORDER:
        needle = b"\n" + indent + b'"' + key.encode() + b'": '
        found = body.find(needle, at)
        if found != -1:
            keys.append((key, found, found + len(needle)))
            at = found + len(needle)
    if not keys or keys[0][1] != 1 or "probes" not in {k for k, _, _ in keys}:
        return None
    wanted = comparison_command_ids()
    packed = keys[-1][0] == "records"
    fields: dict[str, Any] = {}
    lazy: dict[str, bytes] = {}
    for i, (key, _, value_start) in enumerate(keys):
        end = keys[i + 1][1] if i + 1 < len(keys) else stop - 2
        while end > value_start and body[end - 1 : end] in (b",", b" ", b"\n"):
            end -= 1
        if key in _RECORD_LISTS:
            if i + 1 == len(keys) and body[end - 1 : end] != b"]":
                return None  # something unknown after the last key we know
            if key == "probes" and packed:
                fields[key] = []  # the stored shape: probes refer to the top-level records
                continue
            records = _wanted_records(body, value_start, end, wanted)
            if records is None:
                return None
            fields[key] = records
        elif key in _LAZY:
            if body.find(top, value_start, end) != -1:
                return None  # an unknown top-level key inside: not our layout
            lazy[key] = body[value_start:end]
        else:
            try:  # a key we do not know, swallowed here, makes this fail
                fields[key] = json.loads(body[value_start:end])
            except (ValueError, RecursionError):
                return None
    if "records" in fields:  # the stored shape: records at the top level, probes refer to them
        fields["probes"] = []
    else:  # the expanded shape: the wanted records, as one probe's, in file order
        fields["probes"] = [{"records": fields["probes"]}]
    return LightDocument(lazy, **fields)


def node_name(doc: Mapping[str, Any], path: str) -> str:
    """The host's recorded hostname, else the snapshot's name, else the file's stem."""
    state = (doc.get("target_states") or {}).get("host") or {}
    return str(state.get("hostname") or doc.get("name") or Path(path).stem)


def load_node(path: Path) -> Node:
    doc = load_document(path)
    return node_from_records(node_name(doc, str(path)), str(path), host_records(doc))


# --------------------------------------------------------------------------------------------------
# Many snapshots at once: the per-file work (load + the comparison's readers) spread over the CPUs.


def _node_or_error(path_text: str) -> tuple[str, Node | None, str | None]:
    path = Path(path_text)
    try:
        doc = load_document(path)
    except (OSError, ValueError) as exc:
        return path_text, None, str(exc)
    return path_text, node_from_document(node_name(doc, path_text), path_text, doc), None


def load_nodes(
    paths: list[Path], workers: int | None = None
) -> list[tuple[Path, Node | None, str | None]]:
    """(path, node, None) or (path, None, why it was skipped) for every file, in order — what `fleet DIR`
    does per file, on `workers` processes (default: the CPUs this process may use; 1 = in this process)."""
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    texts = [str(p) for p in paths]
    if workers <= 1 or len(texts) < 64:
        results = [_node_or_error(t) for t in texts]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            results = list(
                pool.map(_node_or_error, texts, chunksize=max(1, len(texts) // (workers * 8)))
            )
    return [(Path(t), node, why) for t, node, why in results]
