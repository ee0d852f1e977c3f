"""Row orderings that reproduce the reference's pandas rankings exactly, ties included."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T", bound=Hashable)


def quicksort_desc(values: Sequence[float], dtype: type = np.float64) -> np.ndarray:
    """The row order of pandas ``sort_values(ascending=False)`` (quicksort, so equal values are not
    kept in input order) over NaN-free values held as `dtype`: float64 and object columns order
    ties differently."""
    values = np.asarray(values, dtype=dtype)
    reversed_rows = np.arange(len(values))[::-1]
    return reversed_rows[values[::-1].argsort(kind="quicksort")][::-1]


def merge_ranked(selections: Iterable[Sequence[T]], key: Callable[[T], float], dtype: type = np.float64) -> list[T]:
    """Concatenated selections without repeats (first kept), ordered by key descending as
    ``concat(...).drop_duplicates().sort_values(key, ascending=False)`` orders them (the
    concatenated column held as `dtype`)."""
    merged = list(dict.fromkeys(item for selection in selections for item in selection))
    return [merged[i] for i in quicksort_desc([key(item) for item in merged], dtype)]
