"""diff ignores what changes on an unchanged machine: declared volatile facts, timings, raw text (issue 14 item 8)."""

from __future__ import annotations

from gpuaudit.probes.catalogue import REGISTRY
from gpuaudit.snapshots.diff import diff_snapshots, is_noise, registry_volatile_facts
from gpuaudit.tui.cli.snapshot_commands import main as snapshots_main
from gpuaudit.tui.views.diff_report import render
from snapfactory import T0, probe, rec, snap


def _engine(pid: int, threads: int, tp: int, temp: int, took: float) -> object:
    facts = {
        "host": {
            "engine_pid": pid,
            "gpus": [{"index": 0, "temp_c": temp, "duration_s": took}],
            "tp": tp,
            "counters": {"xid": pid % 7},
        }
    }
    record = rec("eng", f"pid {pid} threads {threads}\n", probe="synthetic", duration_s=took)
    return probe(
        "synthetic",
        records=[record.model_copy(update={"started_at": T0.replace(second=pid % 60)})],
        facts=facts,
    )


VOLATILE = {"synthetic": {"engine_pid", "gpus", "counters"}}


def test_back_to_back_audits_of_an_unchanged_machine_diff_equal():
    a, b = snap(_engine(4101, 12, 2, 41, 0.8)), snap(_engine(5202, 13, 2, 44, 1.3))
    d = diff_snapshots(a, b, volatile=VOLATILE)
    assert d.identical, d
    assert (
        d.hidden == 5
    )  # engine_pid, gpus[0].temp_c and .duration_s, counters.xid, the raw text of `eng`
    assert "hidden (--all-facts shows them" in render(d).plain


def test_a_real_change_still_shows_and_all_facts_shows_the_noise():
    a, b = snap(_engine(4101, 12, 2, 41, 0.8)), snap(_engine(5202, 13, 4, 44, 1.3))
    (pd,) = diff_snapshots(a, b, volatile=VOLATILE).probes
    assert [f.path for f in pd.facts] == ["synthetic.tp"]
    everything = diff_snapshots(a, b, volatile=VOLATILE, all_facts=True)
    paths = {f.path for p in everything.probes for f in p.facts}
    assert {
        "synthetic.engine_pid",
        "synthetic.gpus[0].temp_c",
        "synthetic.tp",
        "synthetic.counters.xid",
    } <= paths
    assert everything.probes[0].raw and everything.hidden == 0


def test_without_declaration_the_volatile_fact_is_a_change():
    a, b = snap(_engine(4101, 12, 2, 41, 0.8)), snap(_engine(5202, 12, 2, 41, 0.8))
    assert not diff_snapshots(a, b, volatile={}).identical


def test_noise_rule():
    vol = frozenset({"engine_pid", "gpus"})
    assert (
        is_noise("p.engine_pid", vol)
        and is_noise("p.gpus[3].temp_c", vol)
        and is_noise("p.x.duration_s", frozenset())
    )
    assert not is_noise("p.engine_pids", vol) and not is_noise("p.tp", vol)


def test_the_registry_declarations_are_used_by_default(monkeypatch):
    """A synthetic registry entry declares its volatile facts; diff's default reads them from Probe.volatile_facts."""
    import gpuaudit.probes.catalogue as probes_pkg

    fake = REGISTRY[0].replace(
        id="synthetic", volatile_facts=frozenset({"engine_pid", "gpus", "counters"})
    )
    monkeypatch.setattr(probes_pkg, "REGISTRY", [*REGISTRY, fake])
    assert registry_volatile_facts()["synthetic"] == fake.volatile_facts
    a, b = snap(_engine(4101, 12, 2, 41, 0.8)), snap(_engine(5202, 13, 2, 44, 1.3))
    assert diff_snapshots(a, b).identical


def test_cli_exit_0_by_default_and_1_with_all_facts(tmp_path, monkeypatch, capsys):
    import gpuaudit.probes.catalogue as probes_pkg
    from gpuaudit.snapshots import store

    fake = REGISTRY[0].replace(
        id="synthetic", volatile_facts=frozenset({"engine_pid", "gpus", "counters"})
    )
    monkeypatch.setattr(probes_pkg, "REGISTRY", [*REGISTRY, fake])
    d = tmp_path / "s"
    store.save(snap(_engine(4101, 12, 2, 41, 0.8)), "one", d)
    store.save(snap(_engine(5202, 13, 2, 44, 1.3)), "two", d)
    assert snapshots_main("diff", ["one", "two", "--snapshot-dir", str(d)]) == 0
    assert snapshots_main("diff", ["one", "two", "--snapshot-dir", str(d), "--all-facts"]) == 1
    assert snapshots_main("diff", ["one", "two", "--snapshot-dir", str(d), "--raw"]) == 1
    capsys.readouterr()
