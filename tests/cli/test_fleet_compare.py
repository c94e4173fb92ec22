"""`gpuaudit-tui fleet`: two planted outliers among five nodes of one class are named, nothing else is flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpuaudit.probes.core.fleet.documents import host_records
from gpuaudit.probes.core.fleet.peers import compare, node_from_records
from gpuaudit.snapshots.compact import unpack

ROOT = Path(__file__).resolve().parents[2]
AFTER = ROOT / "snapshots" / "examples" / "case-study-after.json"


def plant(directory: Path) -> None:
    """Five copies of the case study's 'after' node; gpu03 runs an older kernel, gpu05 an older driver."""
    for i in range(1, 6):
        doc = unpack(json.loads(AFTER.read_text()))
        doc["target_states"]["host"]["hostname"] = f"gpu0{i}"
        for probe in doc["probes"]:
            for r in probe["records"]:
                if r["target"] != "host":
                    continue
                if i == 3 and r["command_id"] == "uname_r":
                    r["stdout"] = "6.8.12-9-pve\n"
                if i == 5 and r["command_id"] == "proc_driver_version":
                    r["stdout"] = r["stdout"].replace("590.48.01", "580.95.05")
        (directory / f"node{i}.json").write_text(json.dumps(doc))


def fleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_two_planted_outliers_are_named_and_nothing_else(tmp_path):
    plant(tmp_path)
    proc = fleet(str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    (cls,) = json.loads(proc.stdout)["classes"]
    assert cls["class"].startswith("8× NVIDIA RTX PRO 6000 Blackwell Server Edition")
    assert sorted(cls["nodes"]) == [f"gpu0{i}" for i in range(1, 6)]
    got = sorted((o["node"], o["fact"], o["value"], o["majority"]) for o in cls["outliers"])
    assert got == [
        ("gpu03", "kernel", "6.8.12-9-pve", "6.14.11-2-pve"),
        ("gpu05", "driver", "580.95.05", "590.48.01"),
    ]
    text = fleet(str(tmp_path))
    assert (
        "gpu03: kernel = 6.8.12-9-pve" in text.stdout
        and "majority 6.14.11-2-pve, 4 of 5" in text.stdout
    )


def test_identical_nodes_agree_and_bad_files_are_skipped_with_one_line(tmp_path):
    plant(tmp_path)
    (tmp_path / "node3.json").unlink()
    (tmp_path / "node5.json").unlink()
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "junk.json").write_bytes(b"\xff\x00not json")
    proc = fleet(str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every class agrees" in proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 2


def test_usage_errors_are_one_line_exit_2(tmp_path):
    proc = fleet(str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such file" in proc.stderr
    proc = fleet("--bogus")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_a_fact_not_read_is_never_an_outlier():
    doc = unpack(json.loads(AFTER.read_text()))
    full = host_records(doc)
    nodes = [node_from_records(f"n{i}", "", full) for i in range(3)]
    nodes.append(node_from_records("blind", "", {k: v for k, v in full.items() if k != "uname_r"}))
    (rep,) = compare(nodes)
    assert rep.outliers == []


# --- outputs never claim more than was compared (issue 24) -------------------------------------------

BEFORE = ROOT / "snapshots" / "examples" / "case-study-before.json"


def named(doc: dict, host: str) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["target_states"]["host"]["hostname"] = host
    return doc


def edit_host(doc: dict, command_id: str, old: str, new: str, target: str = "host") -> None:
    hit = 0
    for probe in doc["probes"]:
        for r in probe["records"]:
            if r["target"] == target and r["command_id"] == command_id and old in r["stdout"]:
                r["stdout"] = r["stdout"].replace(old, new)
                hit += 1
    assert hit, (command_id, old)


def rootless(doc: dict) -> dict:
    """What an audit as a non-root user records: every needs-root command refused, not run."""
    doc["target_states"]["host"]["is_root"] = False
    for probe in doc["probes"]:
        for r in probe["records"]:
            if r["target"] == "host" and r.get("needs_root"):
                r.update(
                    stdout="",
                    stderr="",
                    exit_status=None,
                    error="needs root (run as root or with --sudo)",
                )
    return doc


def write(directory: Path, docs: dict[str, dict]) -> Path:
    directory.mkdir(exist_ok=True)
    for name, doc in docs.items():
        (directory / f"{name}.json").write_text(json.dumps(doc))
    return directory


def both(directory: Path) -> tuple[subprocess.CompletedProcess[str], dict, int]:
    """(text run, JSON report, the fleet screen model's exit status) over one folder."""
    from gpuaudit.probes.core.fleet.documents import load_document
    from gpuaudit.probes.core.fleet.model import FleetModel

    text = fleet(str(directory), "--text")
    js = fleet(str(directory), "--json")
    assert js.returncode == text.returncode
    files = sorted(directory.glob("*.json"))
    model = FleetModel.from_documents((str(p), load_document(p)) for p in files)
    assert model.exit_status() == text.returncode
    verdict = json.loads(js.stdout)["verdict"]
    assert text.stdout.strip().splitlines()[-1] == verdict
    return text, json.loads(js.stdout), model


def test_two_differing_nodes_have_no_majority_listed_with_both_sides(tmp_path):
    """The case study's before and after: one class, two nodes, four facts differ."""
    after, before = unpack(json.loads(AFTER.read_text())), unpack(json.loads(BEFORE.read_text()))
    d = write(tmp_path / "f", {"a": named(after, "gpu01"), "b": named(before, "gpu02")})
    text, doc, model = both(d)
    assert text.returncode == 1
    assert "agrees" not in text.stdout
    splits = {s["fact"]: s["sides"] for s in doc["classes"][0]["no_majority"]}
    assert set(splits) == {"kernel", "scaling_driver", "numa_balancing", "max_read_req"}
    assert splits["kernel"] == [
        {"value": "6.14.11-2-pve", "nodes": ["gpu01"]},
        {"value": "6.8.12-9-pve", "nodes": ["gpu02"]},
    ]
    assert "no majority on max_read_req: 4096 (gpu01) | 512 (gpu02)" in text.stdout
    assert "4 fact(s) with no majority" in text.stdout.splitlines()[-1]
    row = model.rows["gpu01"]
    assert "no majority on kernel" in row.peer_note
    assert "peers agree" not in model.progress_line()
    assert "4 fact(s) with no majority" in model.progress_line()


def test_a_two_against_two_driver_split_is_not_agreement(tmp_path):
    after = unpack(json.loads(AFTER.read_text()))
    docs = {}
    for i in range(1, 5):
        doc = named(after, f"gpu0{i}")
        if i > 2:
            edit_host(doc, "proc_driver_version", "590.48.01", "580.95.05")
        docs[f"n{i}"] = doc
    text, doc, _ = both(write(tmp_path / "f", docs))
    assert text.returncode == 1
    (cls,) = doc["classes"]
    assert cls["outliers"] == []
    assert cls["no_majority"] == [
        {
            "fact": "driver",
            "sides": [
                {"value": "590.48.01", "nodes": ["gpu01", "gpu02"]},
                {"value": "580.95.05", "nodes": ["gpu03", "gpu04"]},
            ],
        }
    ]
    assert "no majority on driver" in text.stdout and "agrees" not in text.stdout


def test_a_node_audited_without_root_is_not_comparable_not_a_class_of_one(tmp_path):
    after = unpack(json.loads(AFTER.read_text()))
    docs = {f"n{i}": named(after, f"gpu0{i}") for i in range(1, 4)}
    docs["n4"] = rootless(named(after, "gpu04"))
    text, doc, model = both(write(tmp_path / "f", docs))
    assert text.returncode == 1
    assert [c["nodes"] for c in doc["classes"]] == [["gpu01", "gpu02", "gpu03"]]
    (nc,) = doc["not_comparable"]
    assert nc["node"] == "gpu04" and "board model not read" in nc["why"]
    assert "needs root" in nc["why"]
    assert "not comparable: gpu04: board model not read" in text.stdout
    assert "every class agrees" not in text.stdout
    assert model.rows["gpu04"].peer_note.startswith("not comparable: board model not read")
    assert "1 node(s) not comparable" in model.progress_line()


def test_a_container_only_difference_is_an_outlier(tmp_path):
    after = unpack(json.loads(AFTER.read_text()))
    docs = {f"n{i}": named(after, f"gpu0{i}") for i in range(1, 4)}
    edit_host(docs["n3"], "pyenv", '"sglang": "0.5.6.post2"', '"sglang": "0.5.5"', "container")
    text, doc, _ = both(write(tmp_path / "f", docs))
    assert text.returncode == 1
    got = [(o["node"], o["fact"], o["value"]) for o in doc["classes"][0]["outliers"]]
    assert got == [("gpu03", "container.engine", "sglang 0.5.5")]
    assert "container.torch" in doc["classes"][0]["compared"]
    assert "container.nccl" in doc["classes"][0]["compared"]


def test_a_node_alone_in_its_class_is_not_agreement(tmp_path):
    after = unpack(json.loads(AFTER.read_text()))
    text, doc, _ = both(write(tmp_path / "f", {"a": named(after, "gpu01")}))
    assert text.returncode == 1 and doc["alone"] == ["gpu01"]
    assert "every class agrees" not in text.stdout


def test_zero_usable_inputs_exit_2_with_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = fleet(str(tmp_path / "empty"))
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "no snapshot" in proc.stderr
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.json").write_text("{}")
    proc = fleet(str(tmp_path / "junk"), "--text")
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "no usable snapshot" in proc.stderr


def test_an_unreachable_node_is_not_comparable_with_the_reason(tmp_path):
    after = unpack(json.loads(AFTER.read_text()))
    docs = {f"n{i}": named(after, f"gpu0{i}") for i in range(1, 4)}
    down = named(after, "gpu04")
    down["target_states"]["host"].update(state="failed", reason="root@10.0.0.4: connection refused")
    for probe in down["probes"]:
        for r in probe["records"]:
            if r["target"] == "host":
                r.update(stdout="", stderr="", exit_status=None, error="target failed: refused")
    docs["n4"] = down
    text, doc, model = both(write(tmp_path / "f", docs))
    assert text.returncode == 1
    assert doc["not_comparable"] == [
        {"node": "gpu04", "why": "host unreachable: root@10.0.0.4: connection refused"}
    ]
    assert model.rows["gpu04"].peer_note.startswith("not comparable: host unreachable")
