"""Secret redaction applied to every output before it is kept, shown or saved."""

from __future__ import annotations

import re

REDACTED = "<redacted>"

_SECRET_NAME = r"[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH)[A-Za-z0-9_]*"
# NAME=value in environ dumps, env output, config lines and command lines (--hf-token=...).
_ASSIGN = re.compile(rf"(?P<name>\b{_SECRET_NAME})(?P<sep>\s*[=:]\s*)(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s\x00'\"]+)", re.IGNORECASE)
_FLAG = re.compile(r"(?P<name>--[A-Za-z0-9-]*(?:token|secret|password|api-key|apikey)[A-Za-z0-9-]*)(?P<sep>[= ])(?P<val>[^\s\x00]+)", re.IGNORECASE)
_URL_CRED = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<cred>[^/\s:@]+:[^/\s@]+)@", re.IGNORECASE)
_BEARER = re.compile(r"(?P<name>\bBearer\s+)(?P<val>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_KNOWN_TOKENS = re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9_-]{20,}|xox[abp]-[A-Za-z0-9-]{10,})\b")
_QUERY = re.compile(r"(?P<name>[?&](?:token|access_token|api_key|key|sig|signature|password)=)(?P<val>[^&\s]+)", re.IGNORECASE)


def redact_text(text: str) -> str:
    """Replace secret-looking values (names like *_TOKEN/*KEY*/*SECRET*/*PASSWORD*, bearer tokens, URL credentials)."""
    if not text:
        return text
    text = _ASSIGN.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", text)
    text = _FLAG.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", text)
    text = _URL_CRED.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m['name']}{REDACTED}", text)
    text = _QUERY.sub(lambda m: f"{m['name']}{REDACTED}", text)
    return _KNOWN_TOKENS.sub(REDACTED, text)
