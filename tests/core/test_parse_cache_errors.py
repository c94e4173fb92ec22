"""The parse cache raises a cached parser error again to every consumer without growing it: each raise of the
same exception object prepends the raiser's frames to its traceback, so a shared exception would keep every
consumer's frames (and the texts in their locals) alive in the process-wide cache, more at every hit."""

from __future__ import annotations

import pytest
from gpuaudit.probes.core.parsing import parse_scope


def _depth(exc: BaseException) -> int:
    n, tb = 0, exc.__traceback__
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n


def _bad(text: str) -> None:
    raise ValueError(f"unparsable: {text}")


def test_a_cached_error_is_raised_again_with_the_same_traceback_depth() -> None:
    with parse_scope() as cache:
        depths = []
        for _ in range(5):
            with pytest.raises(ValueError, match="unparsable: zz") as got:
                cache.call(_bad, "zz", (), {})
            depths.append(_depth(got.value))
        assert cache.runs == 1 and cache.hits == 4
    assert len(set(depths)) == 1, depths
