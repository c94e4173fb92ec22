"""Secret redaction applied to every output before it is kept, shown or saved.

Names are judged by their `_`/`-`/`.` separated words, so `HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`,
`TORCH_PW`, `MYSQL_PWD`, `VLLM_S3_CREDS` and `--api-key` are redacted while `KEY_SIZE`, `TOKENIZERS_PARALLELISM`,
`--max-num-batched-tokens`, `NCCL_IB_GID_INDEX` and a bare `PWD` survive.

Values are looked into: an outer name that is not secret (`Environment=`, `env:`, `lxc.environment:`) may
hold an inner `NAME=value` that is (`Environment=HF_TOKEN=x`), and URL-encoded text is decoded before it is
judged (Proxmox stores guest notes percent-encoded). An environment-style line (`NAME=value` alone on its
line, e.g. /proc/PID/environ, an env file, `lxc.environment: NAME=value`) hides the value up to the end of
the line, spaces included. Free-text fields of Proxmox guest configs (the `#` notes and `description:`)
are hidden whole: people write logins in them.

Every quantifier is bounded and no pattern spans a newline except `--flag\\nvalue` (argv one per line):
outputs are hostile (a 10 MB line must not make a regex quadratic and freeze the event loop).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import unquote

REDACTED = "<redacted>"
MAX_DEPTH = 3
"""How deep values are looked into (`a=b=c=...`): bounded so a hostile line cannot recurse without end."""

_WORD_SECRET = {
    "token",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "apikey",
    "api_key",
    "accesskey",
    "secretkey",
    "privatekey",
    "pass",
    "pat",
    "bearer",
    "auth",
    "pw",
    "pwd",
    "cred",
    "creds",
}
_LAST_KEY = {"key", "keys"}  # *_KEY, API_KEY, SECRET_KEY...; KEY_SIZE (KEY not last) survives
_NOT_SECRET = {
    "key_size",
    "keysize",
    "pass_through",
    "passthrough",
    "auth_type",
    "auth_method",
    "keymap",
    "token_limit",
    "pass_count",
    "pwd",
    "oldpwd",
}
_PASS_LOOKALIKES = (
    "passthrough",
    "passthru",
    "bypass",
    "compass",
    "passive",
    "passenger",
    "passage",
)


def _word_is_secret(w: str) -> bool:
    if w in _WORD_SECRET:
        return True
    if w.startswith("cred") and not w.startswith(
        "credit"
    ):  # *CRED*: CREDS, CREDENTIAL(S), S3CREDS below
        return True
    if "pass" in w and not any(
        x in w for x in _PASS_LOOKALIKES
    ):  # *PASS*: PGPASSWORD, MYPASS, PASSWD
        return True
    # glued forms: HFTOKEN, MYSECRET, SECRETKEY, APIKEY, S3CREDS, DBPWD
    return (
        w.endswith(("token", "apikey", "secretkey", "accesskey", "creds", "pwd")) or "secret" in w
    )


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Does an env var / config key / flag name look like it holds a secret?"""
    low = name.lower().strip("-_ \"'")
    if not low or low in _NOT_SECRET:
        return False
    words = [w for w in re.split(r"[_.\-]+", low) if w]
    if not words:
        return False
    if len(words) >= 2 and words[-2] in ("token", "tokens") and words[-1] in ("id", "ids", "index"):
        return False  # a vocabulary index (eos_token_id, pad_token_id, image_token_index in config.json)
    if any(_word_is_secret(w) for w in words):
        return True
    return words[-1] in _LAST_KEY or (
        len(words) >= 2 and words[-2] in _LAST_KEY and words[-1] == "id"
    )


# NAME=value, NAME: value, "name": "value" (env dumps, /proc/PID/environ, config files, --flag=value)
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P<sep>[\"']?[ \t]{0,8}[=:][ \t]{0,8})"
    r"(?P<val>\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s\x00'\",;]{1,4096})"
)
_HINT = re.compile(
    r"(?i)tok|key|secret|pass|pw|cred|auth|bearer|://|sig|hf_|akia|asia|gh|xox|eyj|glpat|sk-|pat"
)
"""Cheap filter before looking inside a value: only values with a secret-ish fragment are re-scanned."""
_INNER_NAME = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P<sep>[ \t]{0,8}[=:])")
# what may stand before an environment-style line's NAME: indentation, `export `, a `grep -H` file prefix
_LINE_PREFIX = re.compile(r"[ \t]{0,64}(?:export[ \t]{1,8})?|[^\s:]{1,4096}:[ \t]{0,8}")
# --flag value (command lines: `--hf-token hf_xxx`, `--api-key "two words"`; in a space-joined command line
# an argument with a space is indistinguishable from the next words, so they go up to the next -flag); argv one per line:
# `--api-key\nVALUE` where VALUE is the whole next line
_FLAG_SPACE = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<name>--?[A-Za-z][A-Za-z0-9_-]{0,60})"
    r"(?:(?P<sep>[ \t]{1,4})(?P<val>\"[^\"\n]{1,4096}\"|'[^'\n]{1,4096}'|[^\s\x00-]\S{0,4095}(?:[ \t]{1,4}[^\s\x00-]\S{0,4095}){0,16})"
    r"|(?P<nl>\r?\n)(?P<line>[^\n\x00-][^\n]{0,4095}))"
)
_URL_CRED = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30}://)(?P<cred>[^/\s:@]{1,256}:[^/\s@]{1,512})@"
)
_AUTH_HEADER = re.compile(
    r"(?P<name>\b(?:Bearer|Basic|token)[ \t]{1,4})(?P<val>[A-Za-z0-9._~+/=-]{8,4096})"
)
_KNOWN_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{20,200}|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,200}|github_pat_[A-Za-z0-9_]{20,300}"
    r"|glpat-[A-Za-z0-9_-]{20,100}|sk-[A-Za-z0-9_-]{20,300}|xox[abpr]-[A-Za-z0-9-]{10,200}"
    r"|eyJ[A-Za-z0-9_-]{10,2000}\.eyJ[A-Za-z0-9_-]{10,4000}\.[A-Za-z0-9_-]{10,2000})(?![A-Za-z0-9])"
)
_QUERY = re.compile(
    r"(?P<name>[?&](?:token|access_token|api_key|apikey|key|sig|signature|password|secret)=)(?P<val>[^&\s]{1,4096})",
    re.IGNORECASE,
)
# Proxmox guest config free text: `#` note lines and `description:` behind `grep -H`'s
# `/etc/pve/.../101.conf:` prefix are hidden whole. Without the prefix (nvidia-smi dmon's `#` headers,
# modinfo's `description:`) only when it reads like a note about logins (and `#` only percent-encoded).
_PVE_FREE_TEXT = re.compile(
    r"(?m)^(?P<pre>/etc/pve/[^\s:]{0,256}\.conf:)?(?P<key>description:[ \t]?|#)(?P<val>[^\n]{1,65536})$"
)
_FREE_TEXT_HINT = re.compile(
    r"(?i)pass|pw|login|user|root|admin|secret|token|key|cred|auth|account"
)
_ENCODED = re.compile(r"(?<!\S)(?P<tok>[^\s%]{0,4096}%[0-9A-Fa-f]{2}\S{0,4096})")


def _line_start(text: str, i: int) -> bool:
    """Is position i the start of an environment-style line (only indentation/export/file prefix before it)?"""
    lo = max(0, i - 4200)  # bounded look-back: a 10 MB line of assignments must stay linear
    nl = text.rfind("\n", lo, i)
    if nl < 0 and lo > 0:
        return False
    return _LINE_PREFIX.fullmatch(text, nl + 1, i) is not None


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _assignments(text: str, depth: int) -> str:
    """Redact secret NAME=value pairs, looking inside the values of names that are not secret."""
    out: list[str] = []
    pos = 0
    while (m := _ASSIGN.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        name, sep, val = m["name"], m["sep"], m["val"]
        quote = val[0] if val[0] in "\"'" and len(val) > 1 and val[-1] == val[0] else ""
        inner = val[1:-1] if quote else val
        end = m.end()
        if is_secret_name(name):
            if inner.strip() in ("", REDACTED):
                repl = val
            elif quote:
                repl = f"{quote}{REDACTED}{quote}"
            else:
                repl = REDACTED
                if _line_start(
                    text, m.start()
                ):  # NAME=two words, password: two words: the line is the value
                    end = _line_end(text, end)
        elif (im := _INNER_NAME.match(inner)) is not None and is_secret_name(im["name"]):
            # Environment=HF_TOKEN=x, env: OPENAI_API_KEY=x, lxc.environment: TORCH_PW=two words
            repl = f"{quote}{im[0]}{REDACTED}{quote}"
            if not quote and _line_start(text, m.start()):
                end = _line_end(text, end)
        elif depth < MAX_DEPTH and ("=" in inner or ":" in inner) and _HINT.search(inner):
            repl = f"{quote}{_inside(inner, depth + 1)}{quote}"
        else:
            repl = val
        out.append(f"{name}{sep}{repl}")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _flag(m: re.Match[str]) -> str:
    if not m["name"].startswith("--") or not is_secret_name(m["name"]):
        return m[0]
    if m["nl"] is not None:
        return m[0] if m["line"] == REDACTED else f"{m['name']}{m['nl']}{REDACTED}"
    val = m["val"]
    if val.strip("\"'") == REDACTED:
        return m[0]
    quote = val[0] if val[0] in "\"'" and len(val) > 1 and val[-1] == val[0] else ""
    return f"{m['name']}{m['sep']}{quote}{REDACTED}{quote}"


def _free_text(m: re.Match[str]) -> str:
    key = m["key"]
    if not m[
        "pre"
    ]:  # not known to be a Proxmox config (modinfo prints `description:` too): only when it looks like one
        if (key == "#" and "%" not in m["val"]) or not _FREE_TEXT_HINT.search(
            unquote(m["val"], errors="replace")
        ):
            return m[0]
    if m["val"].strip() in ("", REDACTED):
        return m[0]
    return f"{m['pre'] or ''}{key}{REDACTED}"


def _encoded(depth: int, m: re.Match[str]) -> str:
    tok = m["tok"]
    decoded = unquote(tok, errors="replace")
    if decoded == tok or depth >= MAX_DEPTH:
        return tok
    # `root password: hunter2` has no NAME=value shape until decoded; a secret word in it hides the token
    if not _HINT.search(decoded):
        return tok
    if _inside(decoded, depth + 1) != decoded or any(
        is_secret_name(w) for w in re.findall(r"[A-Za-z_]{2,64}", decoded)
    ):
        return ("#" if tok.startswith("#") else "") + REDACTED
    return tok


def _inside(value: str, depth: int) -> str:
    """A value looked into: its assignments and encoded text (the other patterns scan the whole text anyway)."""
    value = _assignments(value, depth)
    if "%" in value:
        value = _ENCODED.sub(lambda m: _encoded(depth, m), value)
    return value


def redact_value(text: str, depth: int = 0) -> str:
    """redact_text at a nesting depth (values inside values)."""
    if not text:
        return text
    text = _PVE_FREE_TEXT.sub(_free_text, text)
    text = _assignments(text, depth)
    text = _FLAG_SPACE.sub(_flag, text)
    text = _URL_CRED.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{REDACTED}", text)
    text = _QUERY.sub(lambda m: f"{m['name']}{REDACTED}", text)
    if "%" in text:
        text = _ENCODED.sub(lambda m: _encoded(depth, m), text)
    return _KNOWN_TOKENS.sub(REDACTED, text)


def redact_text(text: str) -> str:
    """Replace secret-looking values (token/key/secret/password names, bearer tokens, URL credentials, known token shapes)."""
    return redact_value(text, 0)
