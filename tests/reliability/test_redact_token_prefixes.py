"""Keys known by their published prefix are redacted however little else is on their line (issue 30 finding).

The planted tokens of test_redact_shapes all hold a trigger word in their random part (`ghp_PlantedGithubToken...`
holds `tok`, `sk-proj-PlantedOpenAIKey...` holds `key`), so a real GitHub token (`ghp_` + 36 random characters),
fine-grained token (`github_pat_`), OpenAI key (`sk-`, `sk-proj-`) or Stripe secret key (`sk_live_`) alone on its
line went through unredacted: no trigger fragment on the line, the line was never scanned. These have none.
"""

from __future__ import annotations

import pytest
from gpuaudit.probes.core.redact import _TRIGGERS, REDACTED, redact_text

pytestmark = pytest.mark.fast

RANDOM = "R8mZq2vN7bXc4LdW9fJh3TgY6uE1iO5nA0sC"  # 36 characters, no trigger fragment in any case
TOKENS = {
    "github classic": "ghp_" + RANDOM,
    "github oauth": "gho_" + RANDOM,
    "github user-to-server": "ghu_" + RANDOM,
    "github server-to-server": "ghs_" + RANDOM,
    "github refresh": "ghr_" + RANDOM,
    "github fine-grained": "github_pat_11AB2CDE3F0" + RANDOM[:22] + "_" + RANDOM + RANDOM[:23],
    "openai": "sk-" + RANDOM + RANDOM[:12],
    "openai project": "sk-proj-" + RANDOM + RANDOM,
    "stripe secret": "sk_live_" + RANDOM[:24],
    # every other family of redact._KNOWN, so that a prefix dropped from _KNOWN_PREFIXES shows here too
    "stripe restricted": "rk_live_" + RANDOM[:24],
    "hugging face": "hf_" + RANDOM[:30],
    "aws access key": "AKIA" + RANDOM[:16].upper(),
    "gitlab": "glpat-" + RANDOM[:24],
    "slack": "xoxb-" + RANDOM[:24],
    "slack app": "xapp-1-" + RANDOM[:24],
    "google api key": "AIza" + RANDOM[:35],
    "google oauth": "ya29." + RANDOM,
    "npm": "npm_" + RANDOM,
    "pypi": "pypi-AgE" + RANDOM,
    "sendgrid": "SG." + RANDOM[:22] + "." + RANDOM,
    "vault": "hvs." + RANDOM[:24],
    "digitalocean": "dop_v1_" + "0123456789abcdef" * 4,
}
CONTEXTS = [
    "{}",
    "found {} in a log",
    "  {}\n",
    '{{"github": "{}", "n": 1}}',
    "ENV_VALUE_ONE={}",
    "cmd --model m --opt {}",
]
LOOKALIKES = [
    "/dev/disk/by-id/nvme-SAMSUNG_MZQL27T6HBLA-00A07_S6CKNE0W700811 -> ../../nvme0n1",
    "task-12 ghost_writer high_mem sk-1 ghp_short",
    "nvme-disk-sk-00001 kiosk-mode",
]


@pytest.mark.parametrize("name", sorted(TOKENS))
@pytest.mark.parametrize("context", CONTEXTS)
def test_prefixed_key_alone_on_its_line_is_redacted(name: str, context: str) -> None:
    token = TOKENS[name]
    text = context.format(token)
    assert [t for t in _TRIGGERS if t in text.lower().replace(token.lower()[:11], "")] == []
    out = redact_text(text)
    assert REDACTED in out and RANDOM[:20] not in out, out


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_of_the_prefixes_survive(text: str) -> None:
    assert redact_text(text) == text
