"""The estimator's in-process caches: each bounded, each registered, one ``clear_caches()``.

``memo(maxsize)`` is ``functools.lru_cache`` bounded at maxsize (least recently used evicted) and
registered, so ``clear_caches()`` empties every memo of the process at once (a test that replaces a
cached function's collaborators clears before and after; the ``fresh_caches`` fixture does). The
on-disk caches (built perf tables, compiled kernels) are keyed by their sources and not touched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

DEFAULT_MAXSIZE = 4096  # entries per memo: far above the distinct deployments and systems of one report build
_CLEARERS: list[Callable[[], None]] = []


def memo(maxsize: int = DEFAULT_MAXSIZE) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A bounded, registered functools.lru_cache decorator."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)
        _CLEARERS.append(cached.cache_clear)
        return cached

    return decorate


def register(clear: Callable[[], None]) -> None:
    """Register another cache's clear function (e.g. the closed-loop replay memo)."""
    _CLEARERS.append(clear)


def clear_caches() -> None:
    """Empty every registered in-process cache."""
    for clear in _CLEARERS:
        clear()
