"""The shipped Slurm HealthCheckProgram, run the way slurmd runs it.

* Under `env -i PWD=... SLURMD_NODENAME=...` (the whole environment slurmd gives it) with a stand-in `scontrol`
  that keeps the node's state and logs every call: drain on a critical, resume only its own drains, an
  auditor failure never drains (unless configured), a hung audit leaves no process behind.
* Under a real munged + slurmctld + slurmd (Debian's slurm-wlm) on 127.0.0.1, configured in a temp dir:
  healthy -> idle, critical -> drained with the reason, healthy -> resumed, an admin's drain untouched,
  auditor failure -> not drained. Seconds per health check are printed (pytest -s) for the issue's figures.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "deploy" / "slurm" / "gpuaudit-healthcheck.sh"
BEFORE = ROOT / "snapshots" / "examples" / "case-study-before.json"
REQUIRE = os.environ.get("GPUAUDIT_REQUIRE_SSHD") == "1"  # CI installs slurm-wlm and munge too
PY = sys.executable
HANG_MARK = "3017"  # the fake nvidia-smi sleeps this many seconds: findable, never an accident


def stand_ins(tmp: Path) -> Path:
    """bin/ with a gpuaudit-tui whose behaviour follows tmp/mode, and a nvidia-smi that hangs."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    (bindir / "gpuaudit-tui").write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH='{pythonpath}'; export PYTHONPATH\n"
        f'case "$(cat {tmp}/mode)" in\n'
        f'  healthy) exec {PY} -m gpuaudit.tui "$@" --replay {BEFORE} --probes nvlink ;;\n'
        f'  critical) exec {PY} -m gpuaudit.tui "$@" --replay {BEFORE} --probes python ;;\n'
        # a bad upgrade: the auditor's own traceback, exit 1 like a finding, no health line
        f"  broken) exec {PY} -c 'import gpuaudit.no_such_module' ;;\n"
        f'  live) exec {PY} -m gpuaudit.tui "$@" ;;\n'
        "esac\n"
    )
    (bindir / "nvidia-smi").write_text(f"#!/bin/sh\nexec sleep {HANG_MARK}\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    return bindir


def fake_scontrol(tmp: Path, bindir: Path) -> Path:
    """scontrol that keeps one node's State/Reason in files and logs every call."""
    log = tmp / "scontrol.log"
    (tmp / "state").write_text("IDLE")
    (tmp / "reason").write_text("")
    (bindir / "scontrol").write_text(
        "#!/bin/sh\n"
        f'printf "%s|" "$@" >> {log}; echo >> {log}\n'
        'if [ "$1" = show ]; then\n'
        f'  echo "NodeName=$3 Arch=x86_64"; echo "   State=$(cat {tmp}/state) ThreadsPerCore=1"\n'
        f'  r=$(cat {tmp}/reason); [ -n "$r" ] && echo "   Reason=$r [root@2026-01-01T00:00:00]"\n'
        "  exit 0\nfi\n"
        'for a in "$@"; do case "$a" in\n'
        f"  state=drain) echo IDLE+DRAIN > {tmp}/state ;;\n"
        f"  state=resume) echo IDLE > {tmp}/state; : > {tmp}/reason ;;\n"
        f'  reason=*) printf "%s" "${{a#reason=}}" > {tmp}/reason ;;\n'
        "esac; done\n"
    )
    (bindir / "scontrol").chmod(0o755)
    return log


def write_conf(tmp: Path, bindir: Path, **extra: str) -> Path:
    conf = tmp / "gpuaudit-healthcheck.conf"
    lines = [f"PATH={bindir}:$PATH", f"GPUAUDIT_LOG={tmp}/hc.log"]
    lines += [f"{k}={v}" for k, v in extra.items()]
    conf.write_text("\n".join(lines) + "\n")
    return conf


def run_empty_env(tmp: Path, conf: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    # exactly what slurmd passes (PWD, SLURMD_NODENAME) + where the site settings are; no PATH at all
    env = {"PWD": str(tmp), "SLURMD_NODENAME": "gpu01", "GPUAUDIT_HC_CONF": str(conf)}
    return subprocess.run(
        ["/bin/sh", str(SCRIPT)],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def leftovers() -> list[str]:
    """Live (not zombie) processes running the hanging stand-in, read from /proc (no procps needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", HANG_MARK.encode()] and state != "Z":
            found.append(f"{entry.name} {state} sleep {HANG_MARK}")
    return found


def test_reason_is_cut_at_a_word_boundary():
    text = SCRIPT.read_text()
    func = text[
        text.index("cut_reason() {") : text.index("\n}\n", text.index("cut_reason() {")) + 3
    ]

    def cut(reason: str, n: int) -> str:
        proc = subprocess.run(
            ["/bin/sh", "-c", f'{func}MAX_REASON={n}; cut_reason "$1"', "sh", reason],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        return proc.stdout.rstrip("\n")

    assert cut("gpuaudit: alpha beta gamma delta", 20) == "gpuaudit: alpha..."
    assert cut("gpuaudit: alpha beta", 20) == "gpuaudit: alpha beta"
    assert cut("gpuaudit: alphabet soup", 16) == "gpuaudit:..."


def test_empty_environment_drain_resume_and_auditor_failure(tmp_path):
    bindir = stand_ins(tmp_path)
    log = fake_scontrol(tmp_path, bindir)
    conf = write_conf(tmp_path, bindir)
    mode = tmp_path / "mode"

    mode.write_text("healthy")
    proc = run_empty_env(tmp_path, conf)
    assert proc.returncode == 0 and proc.stdout.startswith("gpuaudit: OK"), (
        proc.stdout + proc.stderr
    )
    assert "update" not in (log.read_text() if log.exists() else "")

    mode.write_text("critical")
    proc = run_empty_env(tmp_path, conf)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("gpuaudit: CRITICAL [container] python.cuda_graphs")
    reason = (tmp_path / "reason").read_text()
    assert (tmp_path / "state").read_text().strip() == "IDLE+DRAIN"
    assert reason.startswith("gpuaudit: CRITICAL [container] python.cuda_graphs")
    assert len(reason.encode()) <= 200 and reason.endswith("...")
    full = proc.stdout.strip()
    assert full.startswith(reason[:-3]) and full[len(reason) - 3] == " ", "cut at a word boundary"
    assert "nodename=gpu01" in log.read_text()

    mode.write_text("healthy")  # healthy again: its own drain is resumed
    proc = run_empty_env(tmp_path, conf)
    assert proc.returncode == 0 and (tmp_path / "state").read_text().strip() == "IDLE"

    # an admin's drain is never resumed, and a critical does not overwrite the admin's reason
    (tmp_path / "state").write_text("IDLE+DRAIN")
    (tmp_path / "reason").write_text("admin: fan replaced, burn-in pending")
    for m in ("healthy", "critical"):
        mode.write_text(m)
        run_empty_env(tmp_path, conf)
        assert (tmp_path / "state").read_text().strip() == "IDLE+DRAIN"
        assert (tmp_path / "reason").read_text() == "admin: fan replaced, burn-in pending"
    (tmp_path / "state").write_text("IDLE")
    (tmp_path / "reason").write_text("")

    mode.write_text("broken")  # the auditor fails: logged, not drained
    proc = run_empty_env(tmp_path, conf)
    assert proc.returncode == 0 and proc.stdout.startswith("gpuaudit failed: exit 1"), proc.stdout
    assert (tmp_path / "state").read_text().strip() == "IDLE"
    assert "auditor failed: exit 1" in (tmp_path / "hc.log").read_text()

    conf = write_conf(tmp_path, bindir, GPUAUDIT_DRAIN_ON_FAILURE="yes")  # configured to drain
    proc = run_empty_env(tmp_path, conf)
    assert (tmp_path / "state").read_text().strip() == "IDLE+DRAIN"
    assert (tmp_path / "reason").read_text().startswith("gpuaudit failed: exit 1")
    mode.write_text("healthy")  # that drain is its own too: resumed once the audit works again
    run_empty_env(tmp_path, conf)
    assert (tmp_path / "state").read_text().strip() == "IDLE"


def test_not_installed_is_an_auditor_failure(tmp_path):
    bindir = stand_ins(tmp_path)
    fake_scontrol(tmp_path, bindir)
    (bindir / "gpuaudit-tui").unlink()
    conf = write_conf(tmp_path, bindir, PATH=f"{bindir}:/usr/bin:/bin")
    proc = run_empty_env(tmp_path, conf)
    assert proc.stdout.startswith("gpuaudit failed: gpuaudit-tui could not be run (exit 127"), (
        proc.stdout
    )
    assert (tmp_path / "state").read_text().strip() == "IDLE"


def test_a_hung_audit_leaves_no_process(tmp_path):
    """A real live audit whose nvidia-smi hangs; the script's deadline (3 s here) stops the audit, and the
    audit stops the commands it started in their own process groups."""
    bindir = stand_ins(tmp_path)
    fake_scontrol(tmp_path, bindir)
    (tmp_path / "mode").write_text("live")
    conf = write_conf(tmp_path, bindir, GPUAUDIT_DEADLINE="3", GPUAUDIT_PROBES="driver")
    assert not leftovers(), "a previous run left a hung stand-in"
    t0 = time.monotonic()
    proc = run_empty_env(tmp_path, conf, timeout=30)
    took = time.monotonic() - t0
    assert proc.stdout.startswith("gpuaudit failed: the audit did not finish in 3 s"), (
        proc.stdout + proc.stderr
    )
    assert took < 3 + 5 + 2
    time.sleep(0.3)
    assert leftovers() == [], "the audit's commands outlived the health check"
    assert (tmp_path / "state").read_text().strip() == "IDLE"


# --------------------------------------------------------------------------------------------------
# A real Slurm: munged + slurmctld + slurmd on 127.0.0.1, everything in a temp dir.


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _need(name: str) -> str:
    path = shutil.which(name) or next(
        (p for d in ("/usr/sbin", "/usr/bin") if os.path.exists(p := f"{d}/{name}")), None
    )
    if path is None:
        if REQUIRE:
            pytest.fail(f"{name} not installed (Debian: slurm-wlm munge)")
        pytest.skip(f"{name} not installed (Debian: slurm-wlm munge)")
    return path


def _kill_pidfile(path: Path) -> None:
    try:
        os.kill(int(path.read_text().split()[0]), signal.SIGTERM)
    except (OSError, ValueError, IndexError):
        pass


def test_real_slurmd_runs_the_health_check(tmp_path_factory):
    munged, mungekey = _need("munged"), _need("mungekey")
    slurmctld, slurmd, scontrol = _need("slurmctld"), _need("slurmd"), _need("scontrol")
    if os.geteuid() != 0:
        pytest.skip("slurmd runs as root")
    d = tmp_path_factory.mktemp("slurm")
    d.chmod(0o755)  # munged refuses a socket in a directory it cannot prove private/sticky
    (d / "munge").mkdir(mode=0o700)
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    bindir = stand_ins(d)
    (d / "mode").write_text("healthy")
    ctld_port, slurmd_port = _free_ports(2)
    conf = d / "slurm.conf"
    runs = d / "runs.log"
    hc_conf = write_conf(d, bindir, SLURM_CONF=str(conf))
    (d / "hc-wrapper.sh").write_text(
        # slurmd's HealthCheckProgram takes no arguments: this wrapper only names the site settings and
        # times the run; the environment stays the one slurmd gave (no PATH)
        "#!/bin/sh\n"
        f"GPUAUDIT_HC_CONF={hc_conf}; export GPUAUDIT_HC_CONF\n"
        "t0=$(/bin/date +%s.%N)\n"
        f"out=$(/bin/sh {SCRIPT})\nrc=$?\n"
        f'echo "$t0 $(/bin/date +%s.%N) $rc $(/bin/cat {d}/mode) $out" >> {runs}\n'
    )
    (d / "hc-wrapper.sh").chmod(0o755)
    conf.write_text(
        "\n".join(
            [
                "ClusterName=gpuaudittest",
                "SlurmctldHost=localhost(127.0.0.1)",
                f"SlurmctldPort={ctld_port}",
                f"SlurmdPort={slurmd_port}",
                "AuthType=auth/munge",
                f"AuthInfo=socket={d}/munge/munge.sock",
                "CredType=cred/munge",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={d}/state",
                f"SlurmdSpoolDir={d}/spool",
                f"SlurmctldPidFile={d}/slurmctld.pid",
                f"SlurmdPidFile={d}/slurmd.pid",
                f"SlurmctldLogFile={d}/slurmctld.log",
                f"SlurmdLogFile={d}/slurmd.log",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SchedulerType=sched/builtin",
                "SelectType=select/linear",
                "ReturnToService=2",
                f"HealthCheckProgram={d}/hc-wrapper.sh",
                "HealthCheckInterval=4",
                "HealthCheckNodeState=ANY",
                "JobCompType=jobcomp/none",
                "AccountingStorageType=accounting_storage/none",
                "MpiDefault=none",
                "NodeName=gpu01 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 "
                "State=UNKNOWN",
                "PartitionName=debug Nodes=gpu01 Default=YES State=UP",
                "",
            ]
        )
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    subprocess.run([mungekey, "-c", "-k", f"{d}/munge/munge.key"], check=True, timeout=20)
    pidfiles = [d / "slurmd.pid", d / "slurmctld.pid", d / "munge" / "munged.pid"]
    try:
        subprocess.run(
            [
                munged,
                "-f",
                f"--socket={d}/munge/munge.sock",
                f"--key-file={d}/munge/munge.key",
                f"--pid-file={d}/munge/munged.pid",
                f"--log-file={d}/munge/munged.log",
                f"--seed-file={d}/munge/seed",
            ],
            check=True,
            timeout=20,
        )
        subprocess.run([slurmctld, "-f", str(conf), "-i"], check=True, timeout=20, env=env)
        subprocess.run([slurmd, "-f", str(conf), "-N", "gpu01"], check=True, timeout=20, env=env)

        def node() -> tuple[str, str]:
            out = subprocess.run(
                [scontrol, "show", "node", "gpu01"],
                capture_output=True,
                text=True,
                timeout=10,
                env=env,
            ).stdout
            state = re.search(r"\bState=(\S+)", out)
            reason = re.search(r"^\s*Reason=(.*?)(?: \[[^]]*\])?$", out, re.M)
            return (state[1] if state else "?", reason[1] if reason else "")

        def runs_in(m: str) -> list[list[str]]:
            text = runs.read_text() if runs.exists() else ""
            return [ln.split(" ", 4) for ln in text.splitlines() if ln.split(" ", 4)[3] == m]

        def wait(what, cond, limit: float = 40.0):
            t_end = time.monotonic() + limit
            while time.monotonic() < t_end:
                if cond():
                    return
                time.sleep(0.5)
            pytest.fail(
                f"{what}: node {node()}\nruns:\n{runs.read_text() if runs.exists() else ''}\n"
                f"slurmd.log:\n{(d / 'slurmd.log').read_text()[-2000:]}"
            )

        timeline = []
        wait("healthy node registers idle", lambda: len(runs_in("healthy")) >= 1)
        wait("idle", lambda: node()[0].startswith("IDLE"))
        timeline.append(("healthy", node()))
        assert "DRAIN" not in node()[0]

        (d / "mode").write_text("critical")
        wait("critical drains", lambda: "DRAIN" in node()[0])
        timeline.append(("critical", node()))
        assert node()[1].startswith("gpuaudit: CRITICAL [container] python.cuda_graphs")

        (d / "mode").write_text("healthy")
        wait("healthy again resumes", lambda: "DRAIN" not in node()[0])
        timeline.append(("healthy again", node()))

        subprocess.run(
            [scontrol, "update", "nodename=gpu01", "state=drain", "reason=admin: burn-in"],
            check=True,
            env=env,
            timeout=10,
        )
        n_before = len(runs_in("healthy"))
        wait("two checks on an admin's drain", lambda: len(runs_in("healthy")) >= n_before + 2)
        timeline.append(("admin drain + healthy", node()))
        assert "DRAIN" in node()[0] and node()[1] == "admin: burn-in"
        subprocess.run(
            [scontrol, "update", "nodename=gpu01", "state=resume"], check=True, env=env, timeout=10
        )

        (d / "mode").write_text("broken")
        wait("two checks with a broken auditor", lambda: len(runs_in("broken")) >= 2)
        timeline.append(("auditor broken", node()))
        assert "DRAIN" not in node()[0]
        assert all(r[4].startswith("gpuaudit failed: exit 1") for r in runs_in("broken"))

        write_conf(d, bindir, SLURM_CONF=str(conf), GPUAUDIT_DEADLINE="3", GPUAUDIT_PROBES="driver")
        (d / "mode").write_text("live")  # a real local audit whose nvidia-smi hangs
        wait("a hung audit is stopped", lambda: len(runs_in("live")) >= 1)
        timeline.append(("audit hung", node()))
        assert runs_in("live")[0][4].startswith("gpuaudit failed: the audit did not finish in 3 s")
        assert "DRAIN" not in node()[0]
        (d / "mode").write_text("healthy")  # no process is left once the checks that hung are over
        wait(
            "a healthy check after the hung ones",
            lambda: any(
                float(h[0]) > max(float(x[1]) for x in runs_in("live")) for h in runs_in("healthy")
            ),
        )
        time.sleep(0.3)
        assert leftovers() == [], "the audit's commands outlived the health check"

        env_seen = [
            r for r in runs_in("healthy") + runs_in("critical") if "OK" in r[4] or "CRIT" in r[4]
        ]
        assert env_seen, "the audit ran under slurmd's empty environment"
        seconds = [
            float(r[1]) - float(r[0])
            for m in ("healthy", "critical", "broken", "live")
            for r in runs_in(m)
        ]
        assert max(seconds) < 60
        print("\nSlurm run (real slurmctld + slurmd + munged):")
        for what, (state, reason) in timeline:
            print(f"  {what:<24} State={state} Reason={reason[:90]}")
        print(
            f"  health check: {len(seconds)} runs, {min(seconds):.2f}-{max(seconds):.2f} s each "
            f"(median {sorted(seconds)[len(seconds) // 2]:.2f} s)"
        )
    finally:
        for p in pidfiles:
            _kill_pidfile(p)


def test_a_hung_scontrol_is_bounded(tmp_path):
    """slurmctld unreachable: every scontrol call is cut at 5 s and a run makes at most two, so the audit's
    45 s (TERM at 40, KILL 5 s later) + 10 s stays under Slurm's 60 s."""
    bindir = stand_ins(tmp_path)
    (bindir / "scontrol").write_text(f"#!/bin/sh\nexec sleep {HANG_MARK}\n")
    (bindir / "scontrol").chmod(0o755)
    (tmp_path / "mode").write_text("critical")
    conf = write_conf(tmp_path, bindir)
    t0 = time.monotonic()
    proc = run_empty_env(tmp_path, conf, timeout=60)
    took = time.monotonic() - t0
    assert proc.stdout.startswith("gpuaudit: CRITICAL"), proc.stdout + proc.stderr
    assert 10 <= took < 10 + 15, f"{took:.1f} s"  # two 5 s scontrol calls + the audit itself
    time.sleep(0.3)
    assert leftovers() == []
