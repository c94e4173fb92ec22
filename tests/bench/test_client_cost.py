"""What keeps the client's own cost down (issue 30), checked by behaviour, never by timing.

* asyncssh is imported without spawning anything (its liboqs/libnettle search ran ldconfig, gcc and ld) and
  without its optional X.509 module;
* the SSH connection asks for AES-GCM first unless the user's ssh config names its Ciphers;
* the command line ends right after its outputs are flushed (`exit_now`), with the same exit status and output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpuaudit.probes.core.collect import ssh_transport
from gpuaudit.probes.core.collect.ssh_transport import (
    PREFERRED_CIPHER,
    SshOptions,
    SshTransport,
    _library_path,
)
from gpuaudit.probes.core.collect.targets import parse_host_spec

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "snapshots" / "examples" / "case-study-after.json"

CHILDREN_CPU = (
    "import resource, sys\n{setup}\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(r.ru_utime + r.ru_stime, 'asyncssh' in sys.modules)\n"
)


def children_cpu(setup: str) -> tuple[float, bool]:
    out = subprocess.run(
        [sys.executable, "-c", CHILDREN_CPU.format(setup=setup)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def test_asyncssh_import_spawns_no_process():
    cpu, loaded = children_cpu(
        "from gpuaudit.probes.core.collect.ssh_transport import _import_asyncssh\n_import_asyncssh()"
    )
    assert loaded
    assert cpu == 0.0, f"importing asyncssh ran child processes ({cpu:.3f} s of CPU)"


def test_asyncssh_loads_without_x509_and_still_reads_openssh_keys():
    # asyncssh's optional X.509 module (RFC 6187 keys; OpenSSH has none) is left out: it imported
    # cryptography.x509 and compiled its name patterns at every start (~16 ms); OpenSSH keys and
    # certificates still load (the product's known_hosts and identities are OpenSSH's)
    code = (
        "import sys\n"
        "from gpuaudit.probes.core.collect.ssh_transport import _import_asyncssh\n"
        "asyncssh = _import_asyncssh()\n"
        "key = asyncssh.generate_private_key('ssh-ed25519')\n"
        "pub = asyncssh.import_public_key(key.export_public_key())\n"
        "ca = asyncssh.generate_private_key('ssh-ed25519')\n"
        "cert = ca.generate_user_certificate(key, 'u', principals=['u'])\n"
        "asyncssh.import_certificate(cert.export_certificate())\n"
        "print('cryptography.x509' in sys.modules, pub.get_algorithm())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["False", "ssh-ed25519"], out


def test_native_library_search_finds_what_the_loader_would(tmp_path):
    # libc is everywhere: the folder scan finds it where ctypes would load it from
    found = _library_path("libc")
    assert found is not None and "/libc.so" in found
    assert _library_path("libgpuaudit-surely-absent") is None


def test_native_library_search_lists_each_folder_once(monkeypatch):
    # asyncssh asks for three libraries: each loader folder (a thousand entries) is read once per process,
    # not once per name (a glob per folder and name cost 5-10 ms of an audit's CPU)
    listed: list[str] = []
    real = os.listdir

    def counting(path="."):
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(ssh_transport, "_listings", None)
    monkeypatch.setattr(ssh_transport.os, "listdir", counting)
    for name in ("liboqs", "libgpuaudit-surely-absent", "libnettle", "libc"):
        _library_path(name)
    assert listed and len(listed) == len(set(listed)), listed


def _kwargs(home: Path, monkeypatch, use_ssh_config: bool = True) -> dict:
    monkeypatch.setenv("HOME", str(home))
    t = SshTransport(
        parse_host_spec("u@127.0.0.1:2222").ssh,  # type: ignore[arg-type]
        SshOptions(use_ssh_config=use_ssh_config, use_agent=False),
    )
    monkeypatch.setattr(ssh_transport, "config_override", lambda: (None, None))
    return t._connect_kwargs()


def test_aes_gcm_is_asked_first_unless_the_ssh_config_says(tmp_path, monkeypatch):
    assert _kwargs(tmp_path, monkeypatch)["encryption_algs"] == "^" + PREFERRED_CIPHER
    assert _kwargs(tmp_path, monkeypatch, use_ssh_config=False)["encryption_algs"] == (
        "^" + PREFERRED_CIPHER
    )
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host *\n  Ciphers chacha20-poly1305@openssh.com\n")
    assert "encryption_algs" not in _kwargs(tmp_path, monkeypatch)


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gpuaudit.tui", *args], capture_output=True, timeout=120, cwd=ROOT
    )


def test_quick_exit_keeps_output_and_status():
    proc = cli("--json", "--fail-on", "never", "--replay", str(DEMO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.rstrip().endswith(b"}") and b'"schema_version"' in proc.stdout
    assert cli("--json", "--fail-on", "warning", "--replay", str(DEMO)).returncode == 1
    assert cli("--no-such-flag").returncode == 2


def test_quick_exit_leaves_every_file_written_and_no_temp_file(tmp_path):
    # os._exit skips the interpreter's finalisation: the outputs written on the way (--save's store, --prom,
    # --html, --share's mapping) must be whole on disk when the process is gone, with no .tmp left beside them
    store, prom, html, mapping = (tmp_path / n for n in ("store", "m.prom", "r.html", "map.json"))
    proc = cli(
        "--json", "--fail-on", "never", "--replay", str(DEMO), "--save", "x",
        "--snapshot-dir", str(store), "--prom", str(prom), "--html", str(html), "--share", str(mapping),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert html.read_text().rstrip().endswith("</html>")
    assert prom.read_text().endswith("\n") and "gpuaudit_" in prom.read_text()
    assert json.loads((store / "x.json").read_text())["schema_version"]
    assert json.loads(mapping.read_text())
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "m.prom", "map.json", "r.html", "x.json",
    ]  # fmt: skip


def test_quick_exit_usage_error_is_one_line():
    proc = cli("--json", "--replay", "/nonexistent/snapshot.json")
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1 and b"Traceback" not in proc.stderr, proc.stderr


def test_main_in_process_freezes_nothing_after_the_first_call(capsys):
    # the CLI freezes what loading it made (entry._main); a second call in the same process must not freeze what
    # its caller holds then: cyclic garbage frozen is never collected
    import gc

    from gpuaudit.tui.cli import entry

    assert entry.main(["--docs"]) == 0
    frozen = gc.get_freeze_count()
    for _ in range(100):
        cycle: list = []
        cycle.append(cycle)
    del cycle
    assert entry.main(["--docs"]) == 0
    assert gc.get_freeze_count() == frozen
    gc.unfreeze()  # what the first call froze goes back to the test process's collections
