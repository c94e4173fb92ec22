"""Every bad input of issue 14 at once: one stderr line, exit 2, no traceback, nothing run, nothing written.

Prints the figures of the closing note: bad inputs tried, tracebacks, exit statuses.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import SCHEMA_VERSION, Snapshot
from gpuaudit.tui.cli.entry import main
from reliability.test_bad_input import BAD_ARGS, MARKER

DEEP = 100_000


def _files(d: Path) -> dict[str, Path]:
    """Hostile files on disk, by name."""
    d.mkdir()
    ok = Snapshot().model_dump_json()
    newer = json.loads(ok)
    newer["schema_version"] = SCHEMA_VERSION + 1
    blobs = {
        "empty.json": b"",
        "truncated.json": ok.encode()[: len(ok) // 2],
        "png.json": b"\x89PNG\r\n\x1a\n",
        "list.json": b"[1, 2]",
        "shape.json": json.dumps({"schema_version": 1, "probes": "x"}).encode(),
        "noversion.json": b'{"a": 1}',
        "strversion.json": b'{"schema_version": "1", "probes": []}',
        "newer.json": json.dumps(newer).encode(),
        "deep-list.json": b'{"schema_version": 1, "probes": ' + b"[" * DEEP + b"]" * DEEP + b"}",
        "deep-dict.json": b'{"schema_version": 1, "probes": [], "note": '
        + b'{"a": ' * DEEP
        + b"1"
        + b"}" * DEEP
        + b"}",
        "deep-bare.json": b"[" * DEEP,
        "latin1.json": b'{"schema_version": 1, "probes": [], "note": "caf\xe9"}',
        "kh-ff": b"# ok\n[127.0.0.1]:22 ssh-ed25519 AAAA\xffBBBB\n",
        "inv-empty": b"# nothing\n",
        "inv-range": b"node[01:10]\n",
        "inv-var": b"10.0.0.1 ansible_user\n",
        "inv-port": b"10.0.0.1 ansible_port=99999\n",
        "inv-host": b"bad!host\n",
        "inv-quote": b"n1 ansible_host='10.0.0.1\n",
        "inv-big": b"10.0.0.1\n" * (600 * 1024),
        "inv-vars-bad": b"[g:vars]\nno-equals-here\n[g]\n10.0.0.1\n",
        "passwd": b"root:x:0:0\n",
    }
    out = {}
    for name, data in blobs.items():
        (d / name).write_bytes(data)
        out[name] = d / name
    huge = d / "huge.json"
    with open(huge, "wb") as fh:
        fh.truncate(store.MAX_SNAPSHOT_BYTES + 1)
    out["huge.json"] = huge
    os.mkfifo(d / "fifo")
    out["fifo"] = d / "fifo"
    (d / "link").symlink_to("/etc")
    out["link"] = d / "link"
    (d / "open").mkdir()
    os.chmod(d / "open", 0o777)
    out["open"] = d / "open"
    demo = store.EXAMPLES_DIR / "case-study-before.json"
    out["demo"] = demo
    rec = Snapshot.model_validate_json(demo.read_bytes()).model_copy(
        update={"mode": "live", "note": None}
    )
    rec = rec.model_copy(
        update={
            "probes": [
                p.model_copy(
                    update={"records": [r.model_copy(update={"error": "x"}) for r in p.records]}
                )
                for p in rec.probes
            ]
        }
    )
    foreign = d / "foreign.json"
    foreign.write_text(rec.model_dump_json())
    out["foreign.json"] = foreign
    return out


def cases(f: dict[str, Path], tmp: Path) -> dict[str, list[str]]:
    c: dict[str, list[str]] = {f"arg:{k}": ["--json", *v] for k, v in BAD_ARGS.items()}
    more = {
        "host-empty": ["--host", ""],
        "container-empty": ["--container", ""],
        "container-blank": ["--container", "  "],
        "host-PCT": ["--host", "PCT:101"],
        "host-Docker": ["--host", "Docker:x"],
        "host-lxc-upper": ["--host", "LXC:web"],
        "container-podman": ["--container", "podman:web"],
        "container-LXD": ["--container", "LXD:c1"],
        "container-PCT-name": ["--container", "PCT:abc"],
        "container-lxc-empty": ["--container", "lxc:"],
        "container-docker-semicolon": ["--container", "docker:a;b"],
        "host-v6-open": ["--host", "root@[::1"],
        "host-v6-bad": ["--host", "[zz::1]:22"],
        "host-two-at": ["--host", "a@b@c"],
        "host-only-port": ["--host", ":22"],
        "host-port-0": ["--host", "root@10.0.0.1:0"],
        "max-connections-0": ["--max-connections", "0"],
        "max-channels-neg": ["--max-channels", "-1"],
        "connections-text": ["--connections", "x"],
        "max-output-neg": ["--max-output", "-5"],
        "fail-on-maybe": ["--fail-on", "maybe"],
        "probes-injection": ["--probes", "kernel;rm"],
        "python-empty": ["--python", ""],
        "python-relative": ["--python", "bin/python"],
        "json-and-plan": ["--plan"],
        "replay-and-demo": ["--replay", "x", "--demo"],
        "replay-and-host": ["--replay", "x", "--host", "10.0.0.1"],
        "unknown-flag": ["--nope"],
        "timeout-huge": ["--timeout", "1e999"],
        "timeout-empty": ["--timeout", ""],
    }
    c.update({f"arg:{k}": ["--json", *v] for k, v in more.items()})
    host = ["--json", "--host", "root@127.0.0.1:1"]
    c.update(
        {
            "kh:missing": [*host, "--known-hosts", str(tmp / "nope")],
            "kh:0xff": [*host, "--known-hosts", str(f["kh-ff"])],
            "kh:dev-zero": [*host, "--known-hosts", "/dev/zero"],
            "kh:dir": [*host, "--known-hosts", str(tmp)],
            "kh:fifo": [*host, "--known-hosts", str(f["fifo"])],
        }
    )
    for name in (
        "inv-empty",
        "inv-range",
        "inv-var",
        "inv-port",
        "inv-host",
        "inv-quote",
        "inv-big",
        "inv-vars-bad",
        "fifo",
    ):
        c[f"hosts:{name}"] = ["--json", "--hosts", str(f[name])]
    c.update(
        {
            "hosts:dev-zero": ["--json", "--hosts", "/dev/zero"],
            "hosts:dir": ["--json", "--hosts", str(tmp)],
            "hosts:missing": ["--json", "--hosts", str(tmp / "nope")],
            "hosts:with-host": ["--hosts", str(f["inv-range"]), "--host", "x"],
        }
    )
    snaps = [n for n in f if n.endswith(".json") and n not in ("foreign.json",)]
    for name in snaps:
        if name != "demo":
            c[f"replay:{name}"] = ["--json", "--replay", str(f[name])]
    c.update(
        {
            "replay:dir": ["--json", "--replay", str(tmp)],
            "replay:missing": ["--json", "--replay", str(tmp / "x.json")],
            "replay:fifo": ["--json", "--replay", str(f["fifo"])],
            "replay:dev-zero": ["--json", "--replay", "/dev/zero"],
            "diff:dev-zero": ["diff", "/dev/zero", str(f["demo"])],
        }
    )
    for name in ("deep-list.json", "truncated.json", "newer.json"):
        c[f"diff:{name}"] = ["diff", str(f["demo"]), str(f[name])]
    c.update(
        {
            "diff:missing-arg": ["diff", str(f["demo"])],
            "diff:bogus-flag": ["diff", "a", "b", "--bogus"],
            "diff:missing": ["diff", str(tmp / "a.json"), str(f["demo"])],
        }
    )
    c.update(
        {
            "store:symlink": ["--demo", "--json", "--save", "x", "--snapshot-dir", str(f["link"])],
            "store:file": ["--demo", "--json", "--save", "x", "--snapshot-dir", str(f["passwd"])],
            "store:world-writable": [
                "--demo",
                "--json",
                "--save",
                "x",
                "--snapshot-dir",
                str(f["open"]),
            ],
        }
    )
    c.update(
        {
            "resume:demo": ["--json", "--resume", str(f["demo"])],
            "resume:foreign-no-consent": [
                "--json",
                "--resume",
                str(f["foreign.json"]),
                "--probes",
                "kernel",
            ],
            "resume:missing": ["--json", "--resume", str(tmp / "gone.json")],
            "resume:deep": ["--json", "--resume", str(f["deep-dict.json"])],
        }
    )
    return c


def test_bad_input_sweep(tmp_path, capsys, monkeypatch):
    files = _files(tmp_path / "in")
    snaps = tmp_path / "snaps"
    monkeypatch.setenv("GPUAUDIT_SNAPSHOT_DIR", str(snaps))
    before = {p: p.stat().st_size for p in files.values() if p.is_file() and not p.is_symlink()}
    table = cases(files, tmp_path)
    codes: Counter[int] = Counter()
    problems = []
    tracebacks = 0
    for name, args in table.items():
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's --help/--version only; never expected here
            code = exc.code if isinstance(exc.code, int) else 99
        except BaseException as exc:  # noqa: BLE001 - counted as a traceback
            code, tracebacks = 98, tracebacks + 1
            problems.append(f"{name}: raised {exc.__class__.__name__}: {str(exc)[:200]}")
        out, err = capsys.readouterr()
        codes[code] += 1
        lines = err.strip().splitlines()
        if "Traceback" in err:
            tracebacks += 1
        if (
            code != 2
            or out
            or len(lines) != 1
            or not lines[0].startswith("gpuaudit-tui: error: ")
            or len(lines[0]) > 600
        ):
            problems.append(f"{name}: exit {code}, stdout {len(out)} chars, stderr {err[-300:]!r}")
    assert not MARKER.exists() and not snaps.exists()
    assert not list(Path("/etc").glob("x*.json"))
    assert {p: p.stat().st_size for p in before} == before  # inputs untouched
    print(
        f"\nbad inputs tried: {len(table)}; tracebacks: {tracebacks}; exit statuses: {dict(codes)}"
    )
    assert problems == [], "\n".join(problems)
    assert len(table) >= 80
