"""Secrets planted on the target never reach records, facts, --json or a saved snapshot; look-alikes survive.

Planted values are synthetic (fake tokens made up for this test).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpuaudit.probes import get
from gpuaudit.probes.core.redact import REDACTED, redact_text
from gpuaudit.probes.core.runner import AuditOptions
from gpuaudit.probes.core.spec import Command
from reliability.faultkit import fake_probe, home, run_audit, run_cli  # noqa: F401
from gpuaudit.snapshots import store
from gpuaudit.snapshots.schema import Snapshot
from sshd_server import TEST_USER

SECRETS = {
    "HF_TOKEN": "hf_FAKEplantedTOKENabcdefghij0123456789",
    "VLLM_API_KEY": "vllm-fake-api-key-7731",
    "AWS_ACCESS_KEY_ID": "AKIAFAKEPLANTED12345",
    "AWS_SECRET_ACCESS_KEY": "fakeAwsSecret/K7MDENG+bPxRfiCYPLANTED",
    "NCCL_SECRET_TOKEN": "nccl-fake-secret-5521",
    "DB_PASSWORD": "hunter2-planted",
    "PGPASSWORD": "pg-planted-pw-99",
    "CUDA_AUTH_TOKEN": "cuda-fake-auth-4411",
}
ARGV_SECRETS = {"--api-key": "argv-fake-api-key-6612", "--hf-token": "hf_ArgvPlantedTokenXYZ0123456789"}
URL_SECRET = "urlpass-planted-31"
BEARER_SECRET = "bearerPlantedValue8812"
PLANTED = [*SECRETS.values(), *ARGV_SECRETS.values(), URL_SECRET, BEARER_SECRET]
SURVIVORS = ["KEY_SIZE=3", "NCCL_IB_GID_INDEX=3", "CUDA_VISIBLE_DEVICES=0,1", "TOKENIZERS_PARALLELISM=false",
             "--max-num-batched-tokens 8192", "--tokenizer meta-llama/Llama-3-8B"]

PLANTED_FILE_LINES = [
    *(f"{k}={v}" for k, v in SECRETS.items()),
    f"proxy = https://svc:{URL_SECRET}@10.200.0.9/path",
    f"Authorization: Bearer {BEARER_SECRET}",
    f'api_key: "{SECRETS["VLLM_API_KEY"]}"',
    *SURVIVORS,
]


@pytest.fixture
def planted_file():
    """A config-like file on the target holding secrets (the declared command only names the file)."""
    d = Path(tempfile.mkdtemp(prefix="gpuaudit-rel-"))
    os.chmod(d, 0o755)
    f = d / "service.env"
    f.write_text("\n".join(PLANTED_FILE_LINES) + "\n")
    os.chmod(f, 0o644)
    yield f
    shutil.rmtree(d, ignore_errors=True)


def printer(path: Path) -> Command:
    return Command("rel_print_secrets", f"cat {path}; cat {path} 1>&2", on=frozenset({"host", "container"}))


@pytest.fixture
def fake_engine():
    """A process of the test user that looks like a vLLM server with secrets in its environ and argv."""
    pw = pwd.getpwnam(TEST_USER)
    env = {"PATH": "/usr/bin:/bin", **SECRETS, "NCCL_IB_GID_INDEX": "3", "CUDA_VISIBLE_DEVICES": "0,1"}
    argv = ["/bin/sh", "-c", "sleep 4106.5; :", "vllm", "serve", "--max-num-batched-tokens", "8192",
            *(x for kv in ARGV_SECRETS.items() for x in kv)]
    proc = subprocess.Popen(argv, env=env, user=pw.pw_uid, group=pw.pw_gid, cwd="/", stdin=subprocess.DEVNULL)
    yield proc
    proc.kill()
    proc.wait(5)


def leaks(text: str) -> list[str]:
    return [s for s in PLANTED if s in text]


async def test_planted_secrets_reach_no_record_fact_json_or_snapshot(sshd, fake_engine, planted_file, tmp_path):
    probes = [get("python"), get("nccl"), fake_probe("secrets", printer(planted_file))]
    run = await run_audit(sshd.spec, sshd.spec, sshd.options(), probes, AuditOptions(timeout_s=10))
    engine = next(r for r in run.probe("python").records if r.command_id == "engine_procs" and r.target == "host")
    assert f"@@pid {fake_engine.pid}" in engine.stdout, engine.stdout[:500]  # the planted process was read
    assert f"VLLM_API_KEY={REDACTED}" in engine.stdout and "CUDA_VISIBLE_DEVICES=0,1" in engine.stdout
    printed = next(r for r in run.probe("secrets").records if r.target == "host")
    for s in SURVIVORS:
        assert s in printed.stdout
    text = Snapshot.from_run(run).model_dump_json()
    assert leaks(text) == []
    path = store.save(Snapshot.from_run(run), "secrets", tmp_path / "snaps")
    assert leaks(path.read_text()) == []
    print(f"\nsecrets planted: {len(PLANTED)} values; found in JSON/snapshot: 0")


def test_planted_secrets_absent_from_cli_json(sshd, fake_engine, home):
    res = run_cli(["--json", "--host", sshd.spec, "--container", sshd.spec, "--probes", "python,nccl",
                   *sshd.cli_args()], home)
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    assert any(f"@@pid {fake_engine.pid}" in r["stdout"] for p in doc["probes"] for r in p["records"])
    assert leaks(res.stdout) == [] and leaks(res.stderr) == []


@pytest.mark.parametrize("text", [
    "HF_TOKEN=hf_abc", "export GITHUB_TOKEN='ghp_x'", "MY_SERVICE_KEY=v", "SECRET=s", "client_secret: v",
    "--password=p", "--hf-token p", "postgres://u:p@10.200.0.1/db", "?sig=abc&x=1", "Authorization: Basic dXNlcjpwYXNz",
    '{"api_key": "v"}', "OPENAI_API_KEY=sk-v",
])
def test_secret_shapes_are_redacted(text):
    out = redact_text(text)
    assert REDACTED in out, out


@pytest.mark.parametrize("text", [*SURVIVORS, "PWD=/root", "PATH=/usr/bin", "NCCL_IB_HCA=mlx5", "Kernel driver in use: nvidia",
                                  "MAX_TOKENS=4096", "KEY_SIZE=3"])
def test_look_alikes_survive(text):
    assert redact_text(text) == text
