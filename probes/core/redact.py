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

Shapes without a name (issue 29): URL userinfo with or without a password (`https://KEY@sentry`), scheme-less
`//user:pass@host/share`, webhook path tokens (Slack, Discord, Teams), PEM private-key blocks (multi-line, one
line, or the tail of one cut by a chunk boundary), JWTs and keys by their published prefixes (AKIA, ghp_, xox*,
sk-, AIza, glpat-, ...), and free text `password ...` (a dmidecode OEM string, a note).

Precision matters as much as recall: a name whose only secret word is weak (token, key, auth, pat) keeps a
value that is a number, a version, a JSON literal or a status word (`experts_per_token: 4`, `#token: 1021`,
`Change Token: 0x2F`, `"PowerOnPassword": "Disabled"` keeps its status too); counts (`*_per_token`) are no
secret names. tests/reliability/test_redact_precision.py runs every real fixture through it.

One compiled alternation scans each output once (`_scanner`: only the rules whose fixed fragments occur); a rule that finds nothing to hide gives back only
the text it is sure of and the scan continues inside the value. Every quantifier is bounded; only a PEM block
and `--flag\\nvalue` (argv one per line) span lines: outputs are hostile (a 10 MB line must not make a regex
quadratic and freeze the event loop).
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
_ABOUT_WORDS = {
    "status",
    "check",
    "mode",
    "policy",
    "length",
    "expiration",
    "expiry",
    "complexity",
    "type",
    "lockout",
    "prompt",
    "required",
    "enabled",
    "set",
    "hint",
    "rule",
    "rules",
    "attempts",
    "age",
    "history",
    "strength",
    "timeout",
    "implemented",
    "supported",
}
_COUNT_WORDS = {"per", "max", "min", "num", "n", "total", "count", "avg", "mean"}
_GLUED_KEYS = (
    "accountkey",
    "accesskey",
    "masterkey",
    "primarykey",
    "secondarykey",
    "sharedkey",
    "signingkey",
    "encryptionkey",
    "apikey",
    "privatekey",
    "clientkey",
)
_STRONG = re.compile(r"pass|pw|pwd|secret|cred|private|phrase")
"""A secret word that makes even a number a secret (a numeric password); token/key/auth/pat alone do not."""
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
    if len(words) >= 2 and words[-1] in ("token", "tokens") and words[-2] in _COUNT_WORDS:
        return (
            False  # a count or rate (experts_per_token in gpt-oss configs, ms_per_token, max_token)
        )
    camel = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", name)]
    if any(w in _ABOUT_WORDS for w in camel[1:]) and not _word_is_secret(camel[-1]):
        return False  # about a password, not one: PasswordStatus, PasswordCheck_0119, IsUefiPowerOnPasswordSet
    if words == ["pat"]:
        return False  # x86/PAT (page attribute table); a personal access token has a service prefix
    if len(words) == 1 and any(low.endswith(k) for k in _GLUED_KEYS):
        return True  # AccountKey=, SharedAccessKey=, MasterKey= (connection strings)
    if any(_word_is_secret(w) for w in words):
        return True
    return words[-1] in _LAST_KEY or (
        len(words) >= 2 and words[-2] in _LAST_KEY and words[-1] == "id"
    )


_ASSIGN = (
    r"(?<![A-Za-z0-9_.-])(?P<a_name>-{0,2}+[A-Za-z_][A-Za-z0-9_.-]{0,100}+)(?P<a_sep>[\"']?[ \t]{0,8}[=:][ \t]{0,8})"
    r"(?P<a_val>\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s\x00'\",;]{1,4096})"
)
# --flag value (command lines: `--hf-token hf_xxx`, `--api-key "two words"`; in a space-joined command line an
# argument with a space is indistinguishable from the next words, so they go up to the next -flag); argv one per
# line: `--api-key\nVALUE` where VALUE is the whole next line
_FLAG = (
    r"(?<![A-Za-z0-9_-])(?P<f_name>--[A-Za-z][A-Za-z0-9_-]{0,60}+)"
    r"(?:(?P<f_sep>[ \t]{1,4})(?P<f_val>\"[^\"\n]{1,4096}\"|'[^'\n]{1,4096}'|[^\s\x00-]\S{0,4095}(?:[ \t]{1,4}[^\s\x00-]\S{0,4095}){0,16})"
    r"|(?P<f_nl>\r?\n)(?P<f_line>[^\n\x00-][^\n]{0,4095}))"
)
_PEM_KIND = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM = (
    rf"-----BEGIN (?P<pem_kind>{_PEM_KIND})-----"
    r"(?:[^\x00]{0,20000}?-----END [A-Z0-9 ]{0,40}-----|[A-Za-z0-9+/=\s\\:,-]{0,20000})"
)
# the tail of a block whose BEGIN line fell in the previous chunk (big outputs are redacted line-aligned chunks)
_PEM_TAIL = rf"^(?:[A-Za-z0-9+/=]{{16,128}}\r?\n){{1,400}}-----END (?P<pt_kind>{_PEM_KIND})-----"
_URL = (
    r"(?<![A-Za-z0-9+.-])(?P<u_scheme>[A-Za-z][A-Za-z0-9+.-]{0,30}+://)"
    r"(?P<u_cred>[^/\s:@\"'<>]{1,256}+(?::[^/\s@\"'<>]{0,512}+)?)@(?=[A-Za-z0-9\[])"
)
_NO_SCHEME = r"(?<![A-Za-z0-9+.:/-])//(?P<n_cred>[^/\s:@\"'<>]{1,256}+:[^/\s@\"'<>]{1,512}+)@(?=[A-Za-z0-9\[])"
_WEBHOOK = (
    r"(?P<w_pre>hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/[0-9]{1,30}/"
    r"|\.webhook\.office\.com/webhookb2/|hooks\.zapier\.com/hooks/catch/)(?P<w_val>[A-Za-z0-9_/@.-]{8,1024})"
)
_QUERY = (
    r"(?i:(?P<q_name>[?&](?:token|access_token|api_key|apikey|key|sig|signature|password|secret)=))"
    r"(?P<q_val>[^&\s]{1,4096})"
)
_AUTH_HEADER = (
    r"(?P<h_name>\b(?:Bearer|Basic|token)[ \t]{1,4})"
    r"(?P<h_val>(?=[A-Za-z0-9._~+/=-]{0,256}?(?:[0-9]|[a-z][A-Z]))[A-Za-z0-9._~+/=-]{8,4096})"
)
_KNOWN = (
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{20,200}|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,200}|github_pat_[A-Za-z0-9_]{20,300}|glpat-[A-Za-z0-9_-]{20,100}"
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,300}|(?:sk|rk)_live_[A-Za-z0-9]{16,200}|xox[abposr]-[A-Za-z0-9-]{10,200}"
    r"|xapp-[0-9]-[A-Za-z0-9-]{10,200}|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,2000}|npm_[A-Za-z0-9]{36}"
    r"|pypi-AgE[A-Za-z0-9_-]{20,400}|SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}|hvs\.[A-Za-z0-9_-]{20,200}"
    r"|dop_v1_[a-f0-9]{64}|eyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{8,2000})(?![A-Za-z0-9])"
)
# free text: `bmc admin password Hunter2!` (a dmidecode OEM string), `root pw is x`
_FREE_PASSWORD = (
    r"(?i:\b(?P<p_word>password|passwd|passphrase|pw)\b)"
    r"(?P<p_sep>(?:[ \t]{1,4}(?i:is|was))?(?:[ \t]{0,4}[:=])?[ \t]{1,4})(?P<p_val>[^\s\"']{1,256})"
)
# Proxmox guest config free text: `#` note lines and `description:` behind `grep -H`'s
# `/etc/pve/.../101.conf:` prefix are hidden whole. Without the prefix (nvidia-smi dmon's `#` headers,
# modinfo's `description:`) only when it reads like a note about logins (and `#` only percent-encoded).
_PVE = r"^(?P<v_pre>/etc/pve/[^\s:]{0,256}\.conf:)?(?P<v_key>description:[ \t]?|#)(?P<v_val>[^\n]{1,65536})$"
_ENCODED = r"(?<!\S)(?P<e_tok>[^\s%]{0,4096}+%[0-9A-Fa-f]{2}\S{0,4096})"

_RULES: tuple[tuple[str, str], ...] = (
    ("pem", _PEM),
    ("pem_tail", _PEM_TAIL),
    ("pve", _PVE),
    ("url", _URL),
    ("no_scheme", _NO_SCHEME),
    ("webhook", _WEBHOOK),
    ("query", _QUERY),
    ("known", _KNOWN),
    ("flag", _FLAG),
    ("assign", _ASSIGN),
    ("header", _AUTH_HEADER),
    ("free_pw", _FREE_PASSWORD),
    ("encoded", _ENCODED),
)
_KNOWN_PREFIXES = (
    "hf_",
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "ANPA",
    "ANVA",
    "AIPA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "rk_",
    "xox",
    "xapp-",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "SG.",
    "hvs.",
    "dop_v1_",
    "eyJ",
)
_PW_WORD = re.compile(r"(?i)\b(?:password|passwd|passphrase|pw)\b")
"""free_pw's word, as its regex starts: without it the rule cannot match anywhere."""


def _possible(text: str) -> frozenset[str]:
    """The rules whose fixed fragments occur in the text (substring tests, no regex pass but free_pw's word): the
    one scan then tries only those alternatives at each position (a rule that cannot match anywhere changes no
    other rule's matches)."""
    rules: list[str] = []
    if "PRIVATE KEY" in text:
        rules += ("pem", "pem_tail")
    if "#" in text or "description:" in text:
        rules.append("pve")
    if "@" in text and "//" in text:
        rules.append("no_scheme")
        if "://" in text:
            rules.append("url")
    if "hooks." in text or "discord" in text or "webhook" in text:
        rules.append("webhook")
    if "=" in text:
        rules.append("assign")
        if "?" in text or "&" in text:
            rules.append("query")
    elif ":" in text:
        rules.append("assign")
    for prefix in _KNOWN_PREFIXES:
        if prefix in text:
            rules.append("known")
            break
    if "--" in text:
        rules.append("flag")
    if "Bearer" in text or "Basic" in text or "token" in text:
        rules.append("header")
    if "%" in text:
        rules.append("encoded")
    folded = text.casefold()  # every letter (?i) matches to p, a, s, w casefolds to it (ſ -> s)
    if ("pw" in folded or "pass" in folded) and _PW_WORD.search(text) is not None:
        rules.append("free_pw")
    return frozenset(rules)


@lru_cache(maxsize=256)
def _scanner(rules: frozenset[str]) -> re.Pattern[str] | None:
    alts = [f"(?P<{name}>{pattern})" for name, pattern in _RULES if name in rules]
    return re.compile("(?m)" + "|".join(alts)) if alts else None


_HINT = re.compile(
    r"(?i)tok|key|secret|pass|pw|cred|auth|bearer|://|sig|hf_|akia|asia|gh|xox|eyj|glpat|sk-|pat"
)
"""Cheap filter before judging decoded text."""
_INNER_NAME = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P<sep>[ \t]{0,8}[=:])")
# what may stand before an environment-style line's NAME: indentation, `export `, a `grep -H` file prefix
_LINE_PREFIX = re.compile(
    r"[ \t]{0,64}(?:export[ \t]{1,8})?|(?:[^\s:=]{1,4096}[ \t]{0,8}[:=][ \t]{0,8}){1,2}"
)
_FREE_TEXT_HINT = re.compile(
    r"(?i)pass|pw|login|user|root|admin|secret|token|key|cred|auth|account"
)
_NUMERIC = re.compile(
    r"[+-]?(?:0[xX][0-9A-Fa-f]{1,16}|[0-9]{1,20}(?:\.[0-9]{1,20}){0,3}(?:[eE][+-]?[0-9]{1,3})?[A-Za-z0-9.+-]{0,24})"
)
_LITERALS = {
    "",
    "{",
    "[",
    "{}",
    "[]",
    "null",
    "none",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "n/a",
    "disabled",
    "enabled",
    "locked",
    "unlocked",
    "set",
    "notset",
    "not set",
    "unset",
    "required",
    "optional",
    "value",
    "0",
    "1",
    "password",
    "secret",
    "token",
    "<password>",
    "<secret>",
    "<token>",
    "********",
    REDACTED.lower(),
}
"""Values that are no secret whatever the name (JSON literals, states, placeholders)."""
_PUBLIC_KEY_CONTEXT = re.compile(r"(?i)X\.509|cert|signing[ \t]|public[ \t]|host[ \t]|verification")
_OEM_LINE = re.compile(r"^[ \t]{0,16}(?:String [0-9]{1,3}:|description:|#)")
_CRED_CHARS = re.compile(r"[0-9]|[^A-Za-z0-9]|[A-Za-z][a-z]{0,64}[A-Z]")


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


def _line_of(text: str, i: int) -> str:
    lo = text.rfind("\n", max(0, i - 4200), i) + 1
    return text[lo:i]


def _kept_value(name: str, inner: str) -> bool:
    """A secret-named value that is not a secret: a literal/state/placeholder, a plain URL, or (weak names) a number."""
    v = inner.strip()
    if v.lower() in _LITERALS or v.startswith(("www.", "http://", "https://")) and "@" not in v:
        return True
    return _STRONG.search(name.lower()) is None and _NUMERIC.fullmatch(v) is not None


Handled = tuple[str, int]
"""(text to emit, position to scan on from)."""


def _assign(text: str, m: re.Match[str], depth: int) -> Handled:
    name, sep, val = m["a_name"], m["a_sep"], m["a_val"]
    quote = val[0] if val[0] in "\"'" and len(val) > 1 and val[-1] == val[0] else ""
    inner = val[1:-1] if quote else val
    end = m.end()
    if is_secret_name(name) and not (
        name.lower() == "key" and _PUBLIC_KEY_CONTEXT.search(_line_of(text, m.start()))
    ):
        if inner in ("{", "[") and not quote:  # an object: hidden when it goes on on this line
            rest = text[end : _line_end(text, end)]
            if rest.strip(" \t\r{}[],"):
                return f"{name}{sep}{REDACTED}", _line_end(text, end)
        if _kept_value(name, inner):
            return f"{name}{sep}{quote}", m.start("a_val") + len(quote)
        if quote:
            return f"{name}{sep}{quote}{REDACTED}{quote}", end
        if _line_start(
            text, m.start()
        ):  # NAME=two words, password: two words: the line is the value
            end = _line_end(text, end)
        return f"{name}{sep}{REDACTED}", end
    if (im := _INNER_NAME.match(inner)) is not None and is_secret_name(im["name"]) and quote:
        # Environment="OPENAI_API_KEY=x y": the whole quoted value
        return f"{name}{sep}{quote}{im[0]}{REDACTED}{quote}", end
    if (
        "%" in inner
        and depth < MAX_DEPTH
        and _HINT.search(decoded := unquote(inner, errors="replace"))
    ):
        if decoded != inner and redact_value(decoded, depth + 1) != decoded:  # DB_CONN=password%3Dx
            return f"{name}{sep}{quote}{REDACTED}{quote}", end
    # not a secret: keep the name, scan on inside the value (Environment=HF_TOKEN=x, proxy=https://u:p@h)
    return f"{name}{sep}{quote}", m.start("a_val") + len(quote)


def _flag(m: re.Match[str]) -> Handled:
    name = m["f_name"]
    if not is_secret_name(name):
        return name, m.end("f_name")
    if m["f_nl"] is not None:
        if m["f_line"] == REDACTED or _kept_value(name, m["f_line"]):
            return m[0], m.end()
        return f"{name}{m['f_nl']}{REDACTED}", m.end()
    val = m["f_val"]
    if val.strip("\"'") == REDACTED or _kept_value(name, val.strip("\"'")):
        return name, m.end("f_name")
    quote = val[0] if val[0] in "\"'" and len(val) > 1 and val[-1] == val[0] else ""
    return f"{name}{m['f_sep']}{quote}{REDACTED}{quote}", m.end()


def _free_text(m: re.Match[str]) -> Handled:
    key, val = m["v_key"], m["v_val"]
    pre = m["v_pre"] or ""
    hide = bool(pre) or (
        not (key == "#" and "%" not in val)
        and _FREE_TEXT_HINT.search(unquote(val, errors="replace")) is not None
    )
    if not hide or val.strip() in ("", REDACTED):
        return f"{pre}{key}", m.start("v_val")  # scan on inside (`# HF_TOKEN=x` in an env file)
    return f"{pre}{key}{REDACTED}", m.end()


def _free_password(text: str, m: re.Match[str]) -> Handled:
    val = m["p_val"]
    if val == REDACTED or val.lower() in _LITERALS or val.endswith(":"):
        return m[0], m.end()  # `Administrator Password Status: Disabled` is a label
    if _OEM_LINE.match(_line_of(text, m.start())):  # an OEM string / note: the rest of the line
        return f"{m['p_word']}{m['p_sep']}{REDACTED}", _line_end(text, m.end())
    if _CRED_CHARS.search(val) is None:  # `password authentication`, `password for`: prose
        return m["p_word"], m.end("p_word")
    return f"{m['p_word']}{m['p_sep']}{REDACTED}", m.end()


def _encoded(m: re.Match[str], depth: int) -> Handled:
    tok = m["e_tok"]
    decoded = unquote(tok, errors="replace")
    if decoded != tok and depth < MAX_DEPTH and _HINT.search(decoded):
        # `root password: hunter2` has no NAME=value shape until decoded; a secret word in it hides the token
        if redact_value(decoded, depth + 1) != decoded or any(
            is_secret_name(w) for w in re.findall(r"[A-Za-z_]{2,64}", decoded)
        ):
            return ("#" if tok.startswith("#") else "") + REDACTED, m.end()
    return tok[0], m.start() + 1


def _handle(text: str, m: re.Match[str], depth: int) -> Handled:
    rule = m.lastgroup
    if rule == "pem":
        kind = m["pem_kind"]
        return f"-----BEGIN {kind}-----{REDACTED}-----END {kind}-----", m.end()
    if rule == "pem_tail":
        return f"{REDACTED}-----END {m['pt_kind']}-----", m.end()
    if rule == "pve":
        return _free_text(m)
    if rule == "url":
        return f"{m['u_scheme']}{REDACTED}@", m.end()
    if rule == "no_scheme":
        return f"//{REDACTED}@", m.end()
    if rule == "webhook":
        return f"{m['w_pre']}{REDACTED}", m.end()
    if rule == "query":
        return f"{m['q_name']}{REDACTED}", m.end()
    if rule == "known":
        return REDACTED, m.end()
    if rule == "flag":
        return _flag(m)
    if rule == "assign":
        return _assign(text, m, depth)
    if rule == "header":
        return f"{m['h_name']}{REDACTED}", m.end()
    if rule == "free_pw":
        return _free_password(text, m)
    return _encoded(m, depth)


def _scan(text: str, depth: int) -> str:
    scan = _scanner(_possible(text))
    if scan is None:
        return text
    out: list[str] = []
    pos = 0
    n = len(text)
    while pos < n and (m := scan.search(text, pos)) is not None:
        emit, nxt = _handle(text, m, depth)
        out.append(text[pos : m.start()])
        out.append(emit)
        if nxt <= m.start():  # never stand still
            nxt = m.start() + 1
            out[-1] = text[m.start() : nxt]
        pos = nxt
    out.append(text[pos:])
    return "".join(out)


_TRIGGERS = (
    "tok", "key", "secret", "pass", "pw", "cred", "auth", "bearer", "basic", "pat", "sig", "//", "%", "#",
    "description:", "private key", "hooks.", "discord", "webhook",
    *sorted({p.lower() for p in _KNOWN_PREFIXES if len(p) >= 3}),  # sorted: the same regex in every process
)  # fmt: skip
"""Fragments (lowercase) without which no rule can hide anything on a line."""
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]{16,128}\r?")


def _line_finders(triggers: tuple[str, ...]) -> tuple[str | re.Pattern[str], ...]:
    """What finds the lines holding a trigger, in fewer passes than one per trigger (issue 30): a trigger holding
    another is left out (its lines hold the other: `private key` -> `key`, `glpat-` -> `pat`); triggers sharing
    their first character are one regex (re factors the common prefix out and scans for that character, one pass
    instead of several); the others one str.find each. The same lines as one find per trigger."""
    kept = [t for t in triggers if not any(o != t and o in t for o in triggers)]
    by_first: dict[str, list[str]] = {}
    for t in kept:
        by_first.setdefault(t[0], []).append(t)
    return tuple(
        group[0] if len(group) == 1 else re.compile("|".join(map(re.escape, group)))
        for group in by_first.values()
    )


_LINE_FINDERS = _line_finders(_TRIGGERS)


def _segments(text: str) -> list[tuple[int, int]]:
    """Line spans that hold a trigger (plus the next line: `--flag\\nvalue`; a whole PEM block), merged."""
    low = text.lower()
    n = len(text)
    spans: list[tuple[int, int]] = []
    for finder in _LINE_FINDERS:
        if isinstance(finder, str):
            i = low.find(finder)
        else:
            m = finder.search(low)
            i = -1 if m is None else m.start()
        while i >= 0:
            start = low.rfind("\n", 0, i) + 1
            end = low.find("\n", i)
            end = n if end < 0 else end + 1
            nxt = low.find("\n", end)
            spans.append((start, n if nxt < 0 else nxt + 1))
            if end >= n:
                break
            if isinstance(finder, str):
                i = low.find(finder, end)
            else:
                m = finder.search(low, end)
                i = -1 if m is None else m.start()
    i = low.find("private key") if spans else -1  # its lines are `key`'s: none, no PEM block
    while i >= 0:
        start = low.rfind("\n", 0, i) + 1
        end = low.find("\n", i)
        end = n if end < 0 else end + 1
        nxt = low.find("\n", end)
        stop = n if nxt < 0 else nxt + 1
        pem_end = low.find("-----end", i + 1, i + 20000)
        if pem_end >= 0:
            e = low.find("\n", pem_end)
            stop = max(stop, n if e < 0 else e + 1)
        k = 0
        while k < 400 and start > 0:  # a block's tail whose BEGIN line was cut off
            prev = low.rfind("\n", 0, start - 1) + 1
            if not _BASE64_LINE.fullmatch(text, prev, start - 1):
                break
            start, k = prev, k + 1
        spans.append((start, stop))
        i = low.find("private key", end) if end < n else -1
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def redact_value(text: str, depth: int = 0) -> str:
    """redact_text at a nesting depth (percent-decoded text inside a value).

    Only the lines that hold a trigger fragment (`_TRIGGERS`, found by substring search) go through the scan:
    every rule but a PEM block and `--flag\\nvalue` stays within a line, and those two are kept whole."""
    if not text:
        return text
    if depth:
        return _scan(text, depth)
    out: list[str] = []
    pos = 0
    # _scan is pure: a segment seen before in this text (identical GPUs' lines) is scanned once
    scanned: dict[str, str] = {}
    for a, b in _segments(text):
        out.append(text[pos:a])
        segment = text[a:b]
        done = scanned.get(segment)
        if done is None:
            done = scanned[segment] = _scan(segment, depth)
        out.append(done)
        pos = b
    out.append(text[pos:])
    return "".join(out)


def redact_text(text: str) -> str:
    """Replace secret-looking values (secret names, URL credentials, PEM keys, known token shapes, free-text passwords)."""
    return redact_value(text, 0)


_USERINFO = re.compile(r"(?P<user>[^\s/@:]{1,256}):[^\s/@]{1,512}@")


def without_userinfo(text: str) -> str:
    """A target or inventory line for an error message: `user:pass@host` -> `user:<redacted>@host`."""
    return _USERINFO.sub(lambda m: f"{m['user']}:{REDACTED}@", redact_text(text))
