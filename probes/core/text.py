"""The one neutraliser for untrusted text (target output, recorded snapshots): no Textual, no rich.

Control characters become visible, inert escapes: C0 (except newline and tab), DEL, C1, a lone CR and
the bidi overrides/isolates that can reorder what a terminal shows. `\\r\\n` is folded to `\\n` first.
"""

from __future__ import annotations

import re

# C0 (except \n and \t), DEL, C1, and the bidi overrides that can reorder what a terminal shows.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """Make control characters visible and inert: ESC -> `\\x1b`, BEL -> `\\x07`, lone CR -> `\\x0d`.

    >>> neutralise("\\x1b]0;pwned\\x07ok")
    '\\\\x1b]0;pwned\\\\x07ok'
    """
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))
