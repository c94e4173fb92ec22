"""A throwaway real OpenSSH sshd on 127.0.0.1 for tests and benchmarks (needs root; never logs in as root)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
TEST_USER = "gpuaudit-test"


def sshd_available() -> str | None:
    """None when a test sshd can be started here, else the reason it cannot."""
    if not os.path.exists(SSHD):
        return f"{SSHD} not installed (apt-get install openssh-server)"
    if os.geteuid() != 0:
        return "needs root to start sshd and create the test user"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_user(name: str = TEST_USER, shell: str = "/bin/sh") -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", shell, name], check=True, capture_output=True)
    # useradd leaves the account locked ('!'); sshd refuses locked accounts even for keys
    subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)


def keygen(path: Path, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True
    )


@dataclass
class SshdServer:
    """A running sshd; `options()` gives SshOptions that trust only its key."""

    directory: Path
    port: int
    user: str = TEST_USER
    process: subprocess.Popen | None = None
    host: str = "127.0.0.1"
    extra: dict = field(default_factory=dict)

    @property
    def client_key(self) -> str:
        return str(self.directory / "client_key")

    @property
    def known_hosts(self) -> str:
        return str(self.directory / "known_hosts")

    @property
    def spec(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def log(self) -> str:
        try:
            return (self.directory / "sshd.log").read_text(errors="replace")
        except OSError:
            return ""

    def options(self, **overrides):
        from gpuaudit.probes.core.collect.ssh_transport import SshOptions

        kw = dict(
            known_hosts=self.known_hosts,
            identity=self.client_key,
            use_ssh_config=False,
            use_agent=False,
            connect_timeout_s=5.0,
        )
        kw.update(overrides)
        return SshOptions(**kw)

    def cli_args(self) -> list[str]:
        """The CLI flags that make gpuaudit-tui trust and log in to this server."""
        return ["--known-hosts", self.known_hosts, "--identity", self.client_key]

    def stop(self) -> list[str]:
        """Stop sshd; return (and kill) processes the test user left behind: a leaked remote command is a bug."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return leftover_processes(self.user, kill=True)


def leftover_processes(user: str = TEST_USER, kill: bool = False) -> list[str]:
    """Processes still running as the test user (commands the tool failed to kill).

    Zombies (`[sh] <defunct>`) are dead, not running: an orphan's exit status waits for PID 1 to reap it, and
    on some test machines (a firecracker VM's process_api) PID 1 never does."""
    res = subprocess.run(["pgrep", "-a", "-u", user], capture_output=True, text=True)
    lines = [
        ln
        for ln in res.stdout.splitlines()
        if ln.strip() and "sshd" not in ln and not ln.rstrip().endswith("<defunct>")
    ]
    if kill:
        subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
    return lines


def start_sshd(
    directory: Path,
    *,
    max_sessions: int = 10,
    extra_config: str = "",
    port: int | None = None,
    user: str = TEST_USER,
    listen: str = "127.0.0.1",
    netns: str | None = None,
) -> SshdServer:
    """Write keys and config into `directory`, start sshd -D -e, wait for its banner."""
    ensure_user(user)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o755)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    for name in ("host_key", "client_key"):
        if not (directory / name).exists():
            keygen(directory / name, name)
    (directory / "authorized_keys").write_text((directory / "client_key.pub").read_text())
    port = port or free_port()
    cfg = directory / "sshd_config"
    # extra_config first: sshd keeps the first value it reads for a keyword, so the test's settings win
    cfg.write_text(f"""{extra_config}
Port {port}
ListenAddress {listen}
HostKey {directory}/host_key
PidFile none
AuthorizedKeysFile none
AuthorizedKeysCommand /bin/cat {directory}/authorized_keys
AuthorizedKeysCommandUser root
AllowUsers {user}
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
StrictModes no
MaxSessions {max_sessions}
MaxStartups 200:30:400
LogLevel VERBOSE
""")
    (directory / "known_hosts").write_text(
        f"[{listen}]:{port} {' '.join((directory / 'host_key.pub').read_text().split()[:2])}\n"
    )
    argv = [SSHD, "-D", "-e", "-f", str(cfg)]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    log = open(directory / "sshd.log", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = SshdServer(directory=directory, port=port, user=user, process=proc, host=listen)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {server.log[-2000:]}")
        if netns is None and _banner(listen, port):
            return server
        if netns is not None:
            time.sleep(0.3)
            return server
        time.sleep(0.03)
    proc.kill()
    raise RuntimeError(f"sshd on {listen}:{port} not answering: {server.log[-2000:]}")


def _banner(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            return s.recv(7) == b"SSH-2.0"
    except OSError:
        return False
