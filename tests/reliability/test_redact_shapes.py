"""Redaction of every common secret shape, and precision over every real fixture (issue 29).

Planted values are synthetic, shaped like the real thing (connection strings as Azure prints them, a Sentry
DSN, a Proxmox CIFS line, a Slack webhook, PEM blocks as files and as JSON strings, JWTs, keys by their
published prefixes, a dmidecode OEM string). The precision test runs every real recorded fixture through the
redactor: nothing changes except the few fixtures that carry a genuine secret (listed with their count).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from gpuaudit.probes.core.redact import REDACTED, redact_text, without_userinfo

REPO = Path(__file__).resolve().parents[2]

PEM_BODY = (
    "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0PlantedPemA\n"
    "nAuxdMBCBF2vXhWGbMiVEHVUr1kJ5g1HvSyqdWx8qzZi3MmvF0ZbPlantedPemBzgjMjQ4w1LvMRDq3sM\n"
    "3VzWmdbNLsfJ/0PbqNzL9iYJJUu3Qa8xlJd3Fg7sRPlantedPemCdGmzlgPwzzYtxXpTnuvd1T8hmw==\n"
)
PEM_LEAKS = ["PlantedPemA", "PlantedPemB", "PlantedPemC"]

# shape -> (text, the secret fragments that must not survive)
SHAPES: dict[str, tuple[str, list[str]]] = {
    "azure storage AccountKey": (
        "DefaultEndpointsProtocol=https;AccountName=gpuauditlogs;AccountKey=QXp1cmVQbGFudGVkS2V5MDEyMzQ1"
        "Njc4OWFiY2RlZg==;EndpointSuffix=core.windows.net",
        ["QXp1cmVQbGFudGVkS2V5MDEyMzQ1"],
    ),
    "service bus SharedAccessKey": (
        "Endpoint=sb://gpu-ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=U2JQbGFudGVkU2hhcmVkS2V5MDE=",
        ["U2JQbGFudGVkU2hhcmVkS2V5MDE="],
    ),
    "sql Password=": (
        "Server=tcp:10.200.0.4,1433;Database=gpu;User ID=audit;Password=SqlPlanted!Pw42;Encrypt=True",
        ["SqlPlanted!Pw42"],
    ),
    "url userinfo with password": (
        "proxy = http://svc:UrlPlantedPw77@10.200.0.9:3128",
        ["UrlPlantedPw77"],
    ),
    "url userinfo without password (sentry dsn)": (
        "SENTRY_DSN=https://0f1e2d3c4b5aPlantedDsn96877@o4501.ingest.sentry.io/4505",
        ["0f1e2d3c4b5aPlantedDsn96877"],
    ),
    "scheme-less //user:pass@ (cifs)": (
        "/etc/pve/storage.cfg:\tpath //backup:CifsPlanted55@10.200.0.7/share",
        ["CifsPlanted55"],
    ),
    "slack webhook path": (
        "notify https://hooks.slack.com/services/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",
        ["SlackPlantedPathToken24x", "T0PLANTED/B0PLANTED"],
    ),
    "discord webhook path": (
        "url: https://discord.com/api/webhooks/112233445566/DiscordPlantedToken_abcdefghij",
        ["DiscordPlantedToken_abcdefghij"],
    ),
    "pem multi-line": (
        "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA PRIVATE KEY-----\n",
        PEM_LEAKS,
    ),
    "pem one line (json string)": (
        '{"material": "-----BEGIN PRIVATE KEY-----\\n'
        + PEM_BODY.replace("\n", "\\n")
        + '-----END PRIVATE KEY-----\\n"}',
        PEM_LEAKS,
    ),
    "pem one line (spaces)": (
        "key_material -----BEGIN OPENSSH PRIVATE KEY----- "
        + PEM_BODY.replace("\n", " ")
        + "-----END OPENSSH PRIVATE KEY-----",
        PEM_LEAKS,
    ),
    "pem tail cut by a chunk boundary": (PEM_BODY + "-----END EC PRIVATE KEY-----\n", PEM_LEAKS),
    "jwt": (
        "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJQbGFudGVkSnd0In0.Sm9sbHlQbGFudGVkU2ln",
        ["eyJzdWIiOiJQbGFudGVkSnd0In0", "Sm9sbHlQbGFudGVkU2ln"],
    ),
    "aws access key id": ("found AKIAPLANTED0EXAMPLE0 in a log", ["AKIAPLANTED0EXAMPLE0"]),
    "github token": ("ghp_PlantedGithubToken0123456789abcdefgh", ["PlantedGithubToken"]),
    "slack bot token": ("xoxb-1234567890-PlantedSlackBot-abcdef", ["PlantedSlackBot"]),
    "openai key": ("sk-proj-PlantedOpenAIKey0123456789abcd", ["PlantedOpenAIKey"]),
    "google api key": ("AIzaSyPlantedGoogleKey0123456789abcdefg", ["PlantedGoogleKey"]),
    "gitlab token": ("glpat-PlantedGitlab0123456789", ["PlantedGitlab"]),
    "free text password (dmidecode oem string)": (
        "OEM Strings\n\tString 3: bmc admin password Hunter2Planted!\n\tString 4: root pw sunnyplanted day\n",
        ["Hunter2Planted!", "sunnyplanted"],
    ),
    "free text password (note)": (
        "# the bmc password is Bmc-Planted-9 (ask ops)",
        ["Bmc-Planted-9"],
    ),
}

# not secrets: must come back byte for byte
LOOKALIKES = [
    '  "experts_per_token": 4,',
    '  "num_experts_per_tok": 4,',
    "SharedAccessKeyName=RootManageSharedAccessKey",
    "PasswordAuthentication no",
    "\tAdministrator Password Status: Disabled",
    "sshd: password authentication failed for user gpu",
    "git@github.com:org/repo.git",
    "https://10.200.0.9:8443/v1/models",
    "-----BEGIN CERTIFICATE-----",
    '"PowerOnPassword": "Disabled",',
    "\tChange Token: 0x0000002F",
    "[x] Decode batch, #running-req: 1, #token: 1021, token usage: 0.00",
    "x86/PAT: Configuration [0-7]: WB  WC  UC- UC  WB  WP  UC- WT",
]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_secret_shape_is_redacted(shape):
    text, secrets = SHAPES[shape]
    out = redact_text(text)
    assert REDACTED in out, out
    assert [s for s in secrets if s in out] == [], out


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_survives(text):
    assert redact_text(text) == text


def test_error_messages_never_echo_userinfo():
    assert "s3cretPlanted" not in without_userinfo("admin:s3cretPlanted@10.200.0.5")
    from gpuaudit.probes.core.collect.targets import parse_host_spec
    from gpuaudit.probes.core.errors import UsageError

    with pytest.raises(UsageError) as exc:
        parse_host_spec("admin:s3cretPlanted@10.200.0.5")
    assert "s3cretPlanted" not in str(exc.value)


def _fixture_files() -> list[Path]:
    roots = [REPO / "tests/fixtures", REPO / "snapshots/examples/case-study"]
    return sorted(
        f
        for r in roots
        for f in r.rglob("*")
        if f.is_file() and f.suffix not in (".svg", ".png", ".gz", ".pyc")
    )


# real fixtures that do hold a secret (or a password hash): file -> number of values hidden
GENUINE = {
    "tests/fixtures/inventory/jenkins-group-vars-old-ssh-names.ini": 1,  # ansible_ssh_pass=...
    "tests/fixtures/inventory/okd-aio-osev3-children.ini": 1,  # htpasswd hashes
    "tests/fixtures/redfish/dell-r750/Systems/System.Embedded.1/Bios/index.json": 2,  # setup pw hash+salt
}


def test_no_redaction_in_real_fixtures_without_secrets():
    changed: dict[str, int] = {}
    total = 0
    t0 = time.perf_counter()
    for f in _fixture_files():
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        total += 1
        out = redact_text(text)
        if out != text:
            changed[str(f.relative_to(REPO))] = out.count(REDACTED) - text.count(REDACTED)
    assert total > 400
    assert changed == GENUINE
    assert time.perf_counter() - t0 < 30


def test_model_configs_keep_every_key_and_value():
    import json

    for cfg in sorted((REPO / "tests/fixtures/models").rglob("*.json")):
        text = cfg.read_text()
        assert redact_text(text) == text, cfg
        json.loads(text)


def test_big_clean_output_is_fast():
    line = "GPU 00000000:18:00.0  Clocks Event Reasons : Not Active  Power Draw : 71.83 W\n"
    text = line * 200_000  # ~16 MB, no trigger fragment
    t0 = time.perf_counter()
    assert redact_text(text) == text
    assert time.perf_counter() - t0 < 3


def test_pem_one_line_keeps_surroundings():
    text, _ = SHAPES["pem one line (json string)"]
    out = redact_text(text)
    assert out.startswith('{"material": "-----BEGIN PRIVATE KEY-----') and out.endswith('"}')
    assert re.search(r"-----END PRIVATE KEY-----", out)


async def test_planted_shapes_leak_into_no_output(tmp_path):
    """Every shape above printed by a real command on a local audit (stdout and stderr): 0 of the planted
    secrets in the records, the facts, --json, a saved snapshot file, and its replay; the look-alikes intact."""
    from gpuaudit.probes.core.run.runner import AuditOptions
    from gpuaudit.probes.core.spec import Command
    from gpuaudit.snapshots import store
    from gpuaudit.snapshots.schema import Snapshot
    from reliability.faultkit import fake_probe, run_audit

    planted = tmp_path / "planted.txt"
    planted.write_text("\n".join([*(t for t, _ in SHAPES.values()), *LOOKALIKES]) + "\n")
    secrets = [s for _, ss in SHAPES.values() for s in ss]
    cmd = Command("h29_print", f"cat {planted}; cat {planted} 1>&2", on=frozenset({"host"}))
    run = await run_audit("local", None, None, [fake_probe("h29", cmd)], AuditOptions(timeout_s=10))
    snap = Snapshot.from_run(run)
    text = snap.model_dump_json()
    saved = store.save(snap, "h29-planted", tmp_path / "store")
    replayed = store.load(saved).to_run().model_dump_json()
    outputs = {
        "records": "".join(r.stdout + r.stderr for p in run.probes for r in p.records),
        "facts": json.dumps([p.facts for p in run.probes], default=str),
        "json": text,
        "saved file": saved.read_bytes().decode("utf-8", "replace"),
        "replay": replayed,
    }
    leaked = {name: [s for s in secrets if s in out] for name, out in outputs.items()}
    print(
        f"planted {len(secrets)} secrets in {len(SHAPES)} shapes; leaked: "
        + ", ".join(f"{k} {len(v)}" for k, v in leaked.items())
    )
    assert all(v == [] for v in leaked.values()), leaked
    assert all("PasswordAuthentication no" in out for out in outputs.values())  # the text is there
    rec = next(r for p in run.probes for r in p.records if r.command_id == "h29_print")
    assert all(line in rec.stdout for line in LOOKALIKES)
