"""Secret redaction applied to every output before it is kept, shown or saved.

Names are judged by their `_`/`-` separated words, so `HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`
and `--api-key` are redacted while `KEY_SIZE`, `TOKENIZERS_PARALLELISM`, `--max-num-batched-tokens`
and `NCCL_IB_GID_INDEX` survive. Every quantifier is bounded: outputs are hostile (a 10 MB line must
not make a regex quadratic and freeze the event loop).
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"

_WORD_SECRET = {"token", "secret", "secrets", "password", "passwd", "passphrase", "credential", "credentials",
                "apikey", "api_key", "accesskey", "secretkey", "privatekey", "pass", "pat", "bearer", "auth"}
_LAST_KEY = {"key", "keys"}  # *_KEY, API_KEY, SECRET_KEY...; KEY_SIZE (KEY not last) survives
_NOT_SECRET = {"key_size", "keysize", "pass_through", "passthrough", "auth_type", "auth_method", "keymap",
               "token_limit", "pass_count"}


def is_secret_name(name: str) -> bool:
    """Does an env var / config key / flag name look like it holds a secret?"""
    low = name.lower().strip("-_ \"'")
    if not low or low in _NOT_SECRET:
        return False
    words = [w for w in re.split(r"[_.\-]+", low) if w]
    if not words:
        return False
    if any(w in _WORD_SECRET for w in words):
        return True
    if words[-1] in _LAST_KEY or (len(words) >= 2 and words[-2] in _LAST_KEY and words[-1] == "id"):
        return True
    # glued forms: PGPASSWORD, HFTOKEN, MYSECRET, SECRETKEY, APIKEY
    return any(w.endswith(("password", "passwd", "token", "apikey", "secretkey", "accesskey")) or "secret" in w
               for w in words)


# NAME=value, NAME: value, "name": "value" (env dumps, /proc/PID/environ, config files, --flag=value)
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P<sep>[\"']?[ \t]{0,8}[=:][ \t]{0,8})"
    r"(?P<val>\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s\x00'\",;]{1,4096})")
# --flag value (command lines: `--hf-token hf_xxx`; argv dumped one per line: `--api-key\nVALUE`)
_FLAG_SPACE = re.compile(r"(?<![A-Za-z0-9_-])(?P<name>--?[A-Za-z][A-Za-z0-9_-]{0,60})(?P<sep>[ \t]{1,4}|\r?\n)(?P<val>[^\s\x00-]\S{0,4095})")
_URL_CRED = re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30}://)(?P<cred>[^/\s:@]{1,256}:[^/\s@]{1,512})@")
_AUTH_HEADER = re.compile(r"(?P<name>\b(?:Bearer|Basic|token)[ \t]{1,4})(?P<val>[A-Za-z0-9._~+/=-]{8,4096})")
_KNOWN_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{20,200}|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,200}|github_pat_[A-Za-z0-9_]{20,300}"
    r"|glpat-[A-Za-z0-9_-]{20,100}|sk-[A-Za-z0-9_-]{20,300}|xox[abpr]-[A-Za-z0-9-]{10,200}"
    r"|eyJ[A-Za-z0-9_-]{10,2000}\.eyJ[A-Za-z0-9_-]{10,4000}\.[A-Za-z0-9_-]{10,2000})(?![A-Za-z0-9])")
_QUERY = re.compile(r"(?P<name>[?&](?:token|access_token|api_key|apikey|key|sig|signature|password|secret)=)(?P<val>[^&\s]{1,4096})",
                    re.IGNORECASE)


def _assign(m: re.Match[str]) -> str:
    if not is_secret_name(m["name"]) or m["val"].strip("\"'") in ("", REDACTED):
        return m[0]
    val = m["val"]
    quote = val[0] if val[0] in "\"'" and len(val) > 1 and val[-1] == val[0] else ""
    return f"{m['name']}{m['sep']}{quote}{REDACTED}{quote}"


def _flag(m: re.Match[str]) -> str:
    if not m["name"].startswith("--") or not is_secret_name(m["name"]) or m["val"] == REDACTED:
        return m[0]
    return f"{m['name']}{m['sep']}{REDACTED}"


def redact_text(text: str) -> str:
    """Replace secret-looking values (token/key/secret/password names, bearer tokens, URL credentials, known token shapes)."""
    if not text:
        return text
    text = _ASSIGN.sub(_assign, text)
    text = _FLAG_SPACE.sub(_flag, text)
    text = _URL_CRED.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{REDACTED}", text)
    text = _QUERY.sub(lambda m: f"{m['name']}{REDACTED}", text)
    return _KNOWN_TOKENS.sub(REDACTED, text)
