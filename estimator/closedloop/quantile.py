"""The nearest-rank quantile rule of the closed-loop statistics, defined once (closed-loop.md section 1).

Sort the n values; the q-quantile is the value at index ``clamp(round_half_even(q * n) - 1, 0, n - 1)``
where ``round_half_even`` is Python's ``round``: n=5, q=0.5 gives the 2nd value (2.5 rounds to 2),
n=7 gives the 4th, n=50, q=0.99 gives index 49. Empty input has no quantile (NaN).

Both the literal Python replay and the Numba kernels call these jitted functions, so the rule
cannot drift between them.
"""

from __future__ import annotations

import math

from estimator.jit import njit


@njit(cache=True)
def round_half_even(x: float) -> int:
    """Round to the nearest integer, ties to even (Python's round on a float)."""
    f = math.floor(x)
    d = x - f
    if d > 0.5 or (d == 0.5 and f % 2 == 1):
        return int(f) + 1
    return int(f)


@njit(cache=True)
def nearest_rank_index(q: float, n: int) -> int:
    """Index of the q-quantile in n sorted values (n >= 1)."""
    return min(max(round_half_even(q * n) - 1, 0), n - 1)


def nearest_rank(values, q: float) -> float:
    """The q-quantile of values by the nearest-rank rule; NaN when values is empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[nearest_rank_index(q, len(ordered))]
