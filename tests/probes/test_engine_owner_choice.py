"""Which process is "the engine" is owner-aware (issue 29): one rule (parsers/engine_choice.py) for the python
probe's listing (`serving_engine`), its environment reader (pyenv) and the metrics reader.

A local user can start a process that looks like an engine API server before the real, root-owned one: under a
root audit the root engine is judged (its argv, its environment, its interpreter's packages), never the
look-alike; API servers of several non-root owners are ambiguous and the engine checks say unknown naming
them. The live tests run the declared command lines over real processes (root starts them as other users).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from gpuaudit.probes import nccl, python
from gpuaudit.probes.core.errors import ParseError
from gpuaudit.probes.core.judge.combiners import serving_engine_of
from gpuaudit.probes.core.judge.probe import judge_probe
from gpuaudit.probes.core.models import AuditRun, CommandRecord, ProbeResult
from gpuaudit.probes.core.parsers.engine import (
    ENGINE_LOGS_SHELL,
    ENGINE_PROCS_SHELL,
    ENGINE_STATUS_SHELL,
    EngineProc,
    choose_main,
    engine_kind,
    listing_audit,
    parse_engine_logs,
    parse_engine_procs,
    parse_engine_status,
    serving_engine,
    summarize_engine,
)
from gpuaudit.probes.core.parsers.engine_choice import choose_engine
from gpuaudit.probes.core.parsers.model_files import MODEL_FILES_SHELL, parse_model_files
from gpuaudit.probes.core.parsers.pyenv import PYENV_SHELL, parse_pyenv_json
from gpuaudit.probes.core.readonly import write_risks
from gpuaudit.probes.core.roofline.report import roofline_for_run

NOBODY, OTHER = 65534, 65533
DECODE = "[2026-01-10 08:51:02 TP0] Decode batch. #running-req:"


# ------------------------------------------------------------------ the rule itself (pure)


@pytest.mark.parametrize(
    "found,audit,cut,engine,ambiguous",
    [
        # a root audit: the root engine beats the look-alike that precedes it
        ([(7, NOBODY, ""), (9, 0, "")], 0, False, [9], []),
        # the root engine and its forked copies are one engine; the first speaks
        ([(7, NOBODY, ""), (9, 0, ""), (11, 0, "")], 0, False, [9, 11], []),
        # two non-root owners, no root engine: ambiguous, both named
        ([(7, NOBODY, ""), (9, OTHER, "")], 0, False, [], [7, 9]),
        # one engine of any owner: used as before
        ([(7, NOBODY, ""), (8, NOBODY, "")], 0, False, [7, 8], []),
        # not a root audit: root gets no preference, two owners are ambiguous
        ([(7, NOBODY, ""), (9, 0, "")], 1000, False, [], [7, 9]),
        # owners not read (an older listing): the first, as before
        ([(7, None, ""), (9, None, "")], None, False, [7, 9], []),
        # an owner not read never counts as root
        ([(7, None, ""), (9, 0, "")], 0, False, [9], []),
        ([(7, None, ""), (9, NOBODY, "")], 0, False, [], [7, 9]),
        # one owner on two ports, keyed by port (the metrics reader): ambiguous
        ([(7, 0, ":1"), (9, 0, ":2")], 0, False, [], [7, 9]),
        # a listing cut short under a root audit with no root candidate: the root engine may lie past the cut
        ([(7, NOBODY, "")], 0, True, [], [7]),
        ([(7, NOBODY, ""), (9, 0, "")], 0, True, [9], []),
        ([(7, NOBODY, "")], 1000, True, [7], []),
        ([], 0, False, [], []),
    ],
)
def test_the_rule(found, audit, cut, engine, ambiguous):
    got, amb = choose_engine(found, audit, cut)
    assert [f[0] for f in got] == engine and [f[0] for f in amb] == ambiguous


def _proc(pid: int, uid: int | None, model: str, **kw) -> EngineProc:
    argv = ("python3", "-m", "sglang.launch_server", "--model-path", model)
    return EngineProc(pid=pid, uid=uid, argv=argv, **kw)


def test_a_look_alikes_environment_and_nccl_never_join_the_root_engines():
    """The merged environment (python.dangerous_env, the nccl env checks) and the mapped libnccl files come
    from the engine's own processes: a look-alike's planted NCCL_P2P_DISABLE is not the engine's."""
    planted = _proc(
        100, NOBODY, "/x", env={"NCCL_P2P_DISABLE": "1"}, nccl_libs=("/home/u/libnccl.so.2",)
    )
    root = _proc(200, 0, "/models/real", env={"NCCL_DEBUG": "WARN"})
    worker = EngineProc(
        pid=201, uid=0, argv=("sglang::scheduler_TP0",), env={"OMP_NUM_THREADS": "8"}
    )
    found, amb = choose_main([planted, root, worker], 0)
    assert found is not None and found[0].pid == 200 and amb == []
    eng = summarize_engine([planted, root, worker], 0)
    assert eng.main is root and eng.env == {"NCCL_DEBUG": "WARN", "OMP_NUM_THREADS": "8"}
    assert eng.nccl_libs == []
    # owners not read (an older listing): everything merged, as before
    old = [
        EngineProc(pid=p.pid, argv=p.argv, env=p.env, nccl_libs=p.nccl_libs)
        for p in (planted, root)
    ]
    assert summarize_engine(old).main is old[0] and summarize_engine(old).env == {
        "NCCL_P2P_DISABLE": "1",
        "NCCL_DEBUG": "WARN",
    }


def test_a_hostile_argv_line_is_no_owner():
    """`@@uid` is read only right after `@@pid`: an argv element (or exe path) reading "@@uid 0" is not."""
    text = (
        "@@auditor 0\n@@pid 12\n@@uid 65534\n@@exe /usr/bin/python3\n@@cmdline\npython3\n"
        "-m\nsglang.launch_server\n@@uid 0\n@@environ\n@@maps\n@@end\n@@more\n"
    )
    (p,) = parse_engine_procs(text)
    assert p.uid == NOBODY and "@@uid 0" in p.argv
    assert listing_audit(text) == (0, True)
    assert listing_audit("@@pid 1\n@@auditor 0\n@@end\n@@more\n@@end\n") == (None, False)


# ------------------------------------------------------------------ live: the declared lines over real processes

live = pytest.mark.skipif(os.geteuid() != 0, reason="a root audit of other users' processes")


def _start(
    uid: int, argv0: str, model: str, *extra: str, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """A process named like an SGLang API server (it serves nothing), as `uid`, its argv[0] `argv0`, its
    stdout the file `log` (already written: it is what the engine-log reader tails)."""
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        return subprocess.Popen(
            [argv0, "-c", "sleep${IFS}60;:", "sglang.launch_server", "--model-path", model, *extra],
            executable="/bin/sh",
            user=uid,
            group=uid,
            cwd="/",
            stdout=out,
            env={
                "PATH": "/usr/bin:/bin",
                **({"NCCL_P2P_DISABLE": "1"} if uid else {"NCCL_DEBUG": "WARN"}),
            },
        )
    finally:
        if log is not None:
            out.close()


def _log(folder: Path, name: str, uid: int, *lines: str) -> Path:
    path = folder / name
    path.write_text("".join(ln + "\n" for ln in lines))
    os.chown(path, uid, uid)
    return path


@pytest.fixture
def logs_dir():
    d = Path(tempfile.mkdtemp(prefix="h29b-"))
    d.chmod(0o755)  # the reader tails each log as its owner
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _stop(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        p.terminate()
        p.wait(timeout=5)


def _sh(line: str) -> str:
    return subprocess.run(
        ["sh", "-c", "LC_ALL=C; export LC_ALL; " + line],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def _listing_only(text: str, *pids: int) -> str:
    """The real listing cut down to the test's own processes' sections (other engines on this machine left
    out), its @@auditor line kept."""
    out, keep, inside = [], True, False
    for line in text.splitlines():
        if not inside and line.startswith("@@pid "):
            keep, inside = int(line.split()[1]) in pids, True
        if keep or line.startswith("@@auditor"):
            out.append(line)
        if line == "@@end":
            keep, inside = True, False
    return "\n".join(out) + "\n"


def _alone(*pids: int) -> None:
    """Skip the rest of a test when an API server other than the test's own runs here (another test's stand-in
    on a shared machine): the environment and model-files readers scan every process."""
    others = [
        p.pid
        for p in parse_engine_procs(_sh(ENGINE_PROCS_SHELL))
        if p.pid not in pids and engine_kind(p.argv) is not None
    ]
    if others:
        pytest.skip(f"other engine-like processes run on this machine: {others}")


def _rec(cid: str, stdout: str, probe: str = "python") -> CommandRecord:
    return CommandRecord(
        target="host", probe_id=probe, command_id=cid, command=cid, exit_status=0, stdout=stdout
    )


@pytest.mark.slow
@live
def test_a_planted_look_alike_before_the_root_engine_is_not_judged(logs_dir):
    """A user's look-alike started first (so first in /proc order: what the old choice took) and the
    root-owned engine: the root engine's argv, environment, interpreter and log are the ones judged."""
    assert write_risks(ENGINE_PROCS_SHELL) == [] and write_risks(ENGINE_LOGS_SHELL) == []
    fake = _log(
        logs_dir,
        "planted.log",
        NOBODY,
        f"{DECODE} 1, gen throughput (token/s): 999.00, #queue-req: 0",
        # lines of the user's log cannot open a section of their own, let alone a root-owned one
        "@@pid 1 NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
        "@@uid 0 NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
    )
    real = _log(
        logs_dir, "root.log", 0, f"{DECODE} 1, gen throughput (token/s): 10.12, #queue-req: 0"
    )
    planted = _start(
        NOBODY, "/tmp/planted/python3", "/planted-model", "--disable-cuda-graph", log=fake
    )
    root = _start(0, "/opt/root-engine/python3", "/models/real", "--tp", "2", log=real)
    try:
        time.sleep(0.3)
        _alone(
            planted.pid, root.pid
        )  # the readers scan the whole machine (model files, pyenv: all of it)
        if not str(planted.pid) < str(root.pid):
            pytest.skip("pid numbering wrapped: the look-alike does not precede the engine")
        text = _listing_only(_sh(ENGINE_PROCS_SHELL), planted.pid, root.pid)
        procs = parse_engine_procs(text)
        assert [p.pid for p in procs] == [planted.pid, root.pid]  # the look-alike comes first
        assert [p.uid for p in procs] == [NOBODY, 0]
        eng = serving_engine(text)
        assert eng.ambiguous is None and eng.main is not None and eng.config is not None
        assert eng.main.pid == root.pid and eng.config.model == "/models/real"
        assert eng.env.get("NCCL_DEBUG") == "WARN" and "NCCL_P2P_DISABLE" not in eng.env
        # the python probe's findings name the root engine: graphs on, TP=2
        result = judge_probe(python.PROBE, {"host": [_rec("engine_procs", text)]})
        graphs = next(f for f in result.findings if f.id == "python.cuda_graphs")
        assert graphs.severity.value == "ok" and f"pid {root.pid}" in graphs.observed
        assert result.facts["host"]["model"] == "/models/real"
        # the engine log read is the root engine's
        logs_text = _listing_only(_sh(ENGINE_LOGS_SHELL), planted.pid, root.pid)
        (lg,) = parse_engine_logs(logs_text)
        assert (lg.pid, lg.uid, lg.where) == (root.pid, 0, str(real))
        facts = judge_probe(
            python.PROBE, {"host": [_rec("engine_procs", text), _rec("engine_logs", logs_text)]}
        ).facts["host"]
        assert facts["decode_single_stream_tok_s"] == 10.12
        # the per-process status (threads, affinity, NUMA placement: python, numa, kernel) is the engine's
        status = parse_engine_status(_listing_only(_sh(ENGINE_STATUS_SHELL), planted.pid, root.pid))
        assert [(p.pid, p.uid) for p in status.procs] == [(root.pid, 0)]
        # the model-files reader takes the first API server (the look-alike): the roofline does not use it
        model_text = _sh(MODEL_FILES_SHELL)
        files = parse_model_files(model_text)
        assert files is not None and (files.pid, files.uid) == (planted.pid, NOBODY)
        run = AuditRun(
            probes=[
                ProbeResult(
                    probe_id="python",
                    title="python",
                    records=[_rec("engine_procs", text), _rec("engine_model_files", model_text)],
                )
            ]
        )
        rf = roofline_for_run(run)
        assert (
            f"model files: not used: read from pid {planted.pid} (uid {NOBODY}), the engine the "
            f"python probe judged is pid {root.pid} (uid 0)"
        ) in rf.missing, rf.missing
        assert "/planted-model" not in str(rf.inputs)
        # the environment reader reads the root engine's interpreter, not the look-alike's
        pyenv = _sh(PYENV_SHELL.replace("{python}", "python3"))
        assert "@@python /opt/root-engine/python3" in pyenv, pyenv[:300]
    finally:
        _stop(planted, root)


@pytest.mark.slow
@live
def test_engines_of_two_non_root_owners_are_unknown_naming_both(logs_dir):
    a = _log(
        logs_dir, "a.log", NOBODY, f"{DECODE} 1, gen throughput (token/s): 5.00, #queue-req: 0"
    )
    one = _start(NOBODY, "/tmp/a/python3", "/model-a", log=a)
    two = _start(OTHER, "/tmp/b/python3", "/model-b")
    try:
        time.sleep(0.3)
        _alone(one.pid, two.pid)  # the readers scan the whole machine (pyenv: all of it)
        text = _listing_only(_sh(ENGINE_PROCS_SHELL), one.pid, two.pid)
        eng = serving_engine(text)
        assert eng.main is None and eng.ambiguous is not None
        named = (f"pid {one.pid} uid {NOBODY} (sglang /model-a)", f"pid {two.pid} uid {OTHER}")
        assert all(n in eng.ambiguous for n in named), eng.ambiguous
        assert serving_engine_of({"engine_procs": _rec("engine_procs", text)}) == (
            None,
            f"engine_procs: {eng.ambiguous}",
        )
        # every engine check of the python and nccl probes: unknown, naming both
        for probe in (python.PROBE, nccl.PROBE):
            result = judge_probe(probe, {"host": [_rec("engine_procs", text, probe.id)]})
            for fid in ("python.cuda_graphs", "python.dangerous_env", "python.attention_backend"):
                if probe is not python.PROBE:
                    break
                f = next(f for f in result.findings if f.id == fid)
                assert f.severity.value == "unknown" and all(n in f.observed for n in named), (
                    fid,
                    f.observed,
                )
            assert result.facts["host"].get("engine_kind") is None
        # nor the engine-log reader
        logs_text = _listing_only(_sh(ENGINE_LOGS_SHELL), one.pid, two.pid)
        with pytest.raises(
            ParseError, match=f"pid {one.pid} uid {NOBODY}; pid {two.pid} uid {OTHER}"
        ):
            parse_engine_logs(logs_text)
        status_text = _listing_only(_sh(ENGINE_STATUS_SHELL), one.pid, two.pid)
        with pytest.raises(
            ParseError, match=f"pid {one.pid} uid {NOBODY}; pid {two.pid} uid {OTHER}"
        ):
            parse_engine_status(status_text)
        # the environment reader reads neither
        pyenv = _sh(PYENV_SHELL.replace("{python}", "python3"))
        with pytest.raises(
            ParseError, match=f"pid {one.pid} uid {NOBODY}.*pid {two.pid} uid {OTHER}"
        ):
            parse_pyenv_json(pyenv)
        assert "/tmp/a/python3" not in pyenv and "/tmp/b/python3" not in pyenv
    finally:
        _stop(one, two)


@pytest.mark.slow
@live
def test_look_alikes_that_fill_the_listing_do_not_hide_the_root_engine():
    """The listing stops at 32 matches: a user who plants 33 look-alikes before the root engine pushes it
    past the cut. Under a root audit a cut listing without a root-owned API server is ambiguous, never
    one of the look-alikes judged as "the engine" (the old choice took the first)."""
    planted = [_start(NOBODY, "/tmp/p/python3", f"/planted-{i}") for i in range(33)]
    root = _start(0, "/opt/root-engine/python3", "/models/real")
    try:
        time.sleep(0.5)
        _alone(root.pid, *(p.pid for p in planted))
        if not all(str(p.pid) < str(root.pid) for p in planted):
            pytest.skip("pid numbering wrapped: the look-alikes do not all precede the engine")
        text = _sh(ENGINE_PROCS_SHELL)
        assert text.rstrip().endswith("@@more") and root.pid not in {
            p.pid for p in parse_engine_procs(text)
        }
        eng = serving_engine(text)
        assert eng.main is None and eng.ambiguous is not None
        assert "cut before a root-owned API server was seen" in eng.ambiguous
        assert f"pid {planted[0].pid} uid {NOBODY}" in eng.ambiguous
        f = next(
            f
            for f in judge_probe(python.PROBE, {"host": [_rec("engine_procs", text)]}).findings
            if f.id == "python.cuda_graphs"
        )
        assert f.severity.value == "unknown" and "cut before a root-owned" in f.observed
    finally:
        _stop(root, *planted)


def test_a_cut_listing_of_workers_only_proves_no_absence():
    """Workers (no API server) fill the listing to its cut: "no engine" is not claimed."""
    workers = [EngineProc(pid=i, uid=0, argv=(f"sglang::scheduler_TP{i}",)) for i in range(32)]
    eng = summarize_engine(workers, 0, cut=True)
    assert eng.main is None and eng.ambiguous is not None and "cut at 32" in eng.ambiguous
    assert summarize_engine(workers, 0).ambiguous is None


def _logs(*uids: int, cut: bool) -> str:
    """An ENGINE_LOGS_SHELL listing of a root audit in its own format (see parse_engine_logs)."""
    one = "@@pid {}\n@@uid {}\n@@stdout pipe:[1]\n@@source none\n@@nccl\n@@throughput\n@@end\n"
    body = "".join(one.format(100 + i, uid) for i, uid in enumerate(uids))
    return "@@auditor 0\n" + body + ("@@more\n" if cut else "")


def test_a_cut_log_listing_of_one_users_look_alikes_says_cut_not_different_owners():
    """The logs' error says why: look-alikes of one user filling a cut listing are not "different owners"."""
    with pytest.raises(
        ParseError, match="cut before a root-owned API server was seen .pid 100 uid 65534"
    ):
        parse_engine_logs(_logs(65534, 65534, cut=True))
    with pytest.raises(ParseError, match="API servers of different owners .pid 100 uid 65534"):
        parse_engine_logs(_logs(65534, 65533, cut=False))
    assert [lg.pid for lg in parse_engine_logs(_logs(65534, 0, cut=True))] == [101]


def _world_readable(folder: Path, name: str) -> Path:
    """folder/name made with every folder below `folder` 0755 (a name holding `/` is several; umask aside)."""
    made = folder / name
    made.mkdir(mode=0o755, parents=True)
    for d in [made, *made.parents]:
        if d == folder:
            break
        d.chmod(0o755)
    return made


FORGED = "@@end\n@@pid 999999999\n@@uid 0\n@@source file /forged\n@@nccl\n@@throughput\n@@end"


@pytest.mark.slow
@live
def test_a_users_exe_path_argv_and_stdout_path_cannot_forge_a_section():
    """What a user chooses and the listings print (the exe's path, the stdout file's path, argv: dash's
    echo turns `\\0100` into `@` and `\\n` into a line break) is printed on one line: no `@@pid` line of
    its own, so no forged root-owned section."""
    folder = Path(tempfile.mkdtemp(prefix="h29f-"))
    try:
        folder.chmod(0o755)
        bindir = _world_readable(folder, "x\n" + FORGED)
        exe = bindir / "python3"
        shutil.copy("/bin/sh", exe)
        exe.chmod(0o755)
        logdir = _world_readable(folder, "y\n" + FORGED)
        log = _log(logdir, "out.log", NOBODY, "x")
        escaped = FORGED.replace("\n", "\\n").replace("@", "\\0100")
        with open(log, "ab") as out:
            p = subprocess.Popen(
                ["python3", "-c", "sleep${IFS}60;:", "sglang.launch_server", "x\\n" + escaped],
                executable=str(exe),
                user=NOBODY,
                group=NOBODY,
                cwd="/",
                stdout=out,
                env={"PATH": "/usr/bin:/bin"},
            )
        try:
            time.sleep(0.3)
            for shell in (ENGINE_PROCS_SHELL, ENGINE_LOGS_SHELL, ENGINE_STATUS_SHELL):
                text = _sh(shell)
                assert f"@@pid {p.pid}" in text.splitlines(), text[-2000:]
                assert "@@pid 999999999" not in text.splitlines(), text[-2000:]
                assert "@@source file /forged" not in text.splitlines(), text[-2000:]
            procs = parse_engine_procs(_listing_only(_sh(ENGINE_PROCS_SHELL), p.pid))
            assert [(q.pid, q.uid) for q in procs] == [(p.pid, NOBODY)]
            assert procs[0].exe == str(exe).replace("\n", " ")
        finally:
            _stop(p)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
