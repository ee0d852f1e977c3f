"""Deterministic request lengths of a benchmark run: uniform on [r*L, L] at evenly spaced quantiles.

A serving benchmark client draws each prompt's input and output length independently and
uniformly from the integers [int(r*L), L] (vLLM ``benchmark_serving`` random dataset with
``--random-range-ratio r``). The replay takes the N evenly spaced quantiles (j + 0.5)/N of that
distribution instead of random draws, and deals them to the requests in a well-mixed order with
no RNG: request i gets quantile index (i*a) mod N for input lengths and (i*a*a) mod N for output
lengths, a rank-1 (Korobov) lattice whose generator a is the integer nearest N*(sqrt(5)-1)/2 that
is coprime to N. Input and output lengths are thereby decorrelated from each other and from the
dispatch order, as independent draws would be.
"""

from __future__ import annotations

import math

import numpy as np

from estimator.errors import InvalidInputError

GOLDEN_FRACTION = (math.sqrt(5.0) - 1.0) / 2.0


def uniform_quantile_lengths(longest: int, ratio: float, count: int) -> np.ndarray:
    """The count evenly spaced quantiles of the integers uniform on [int(ratio*longest), longest], ascending."""
    if longest < 1 or count < 1:
        raise InvalidInputError(f"lengths need longest >= 1 and count >= 1, got {longest} and {count}")
    if not 0.0 < ratio <= 1.0:
        raise InvalidInputError(f"range ratio must be within (0, 1], got {ratio}")
    low = max(1, int(ratio * longest))
    span = longest - low + 1
    quantiles = (np.arange(count) + 0.5) / count
    return low + np.minimum(np.floor(quantiles * span).astype(np.int64), span - 1)


def lattice_generator(count: int) -> int:
    """The integer nearest count*(sqrt(5)-1)/2 that is coprime to count (1 for count <= 2)."""
    if count <= 2:
        return 1
    base = max(1, round(count * GOLDEN_FRACTION))
    for step in range(count):
        for a in (base - step, base + step):
            if 1 <= a < count and math.gcd(a, count) == 1:
                return a
    return 1


def dealt_lengths(longest: int, ratio: float, count: int, power: int) -> np.ndarray:
    """Lengths in dispatch order: request i gets quantile index (i * a**power) mod count."""
    ordered = uniform_quantile_lengths(longest, ratio, count)
    step = pow(lattice_generator(count), power, count) if count > 1 else 0
    return ordered[(np.arange(count, dtype=np.int64) * step) % max(count, 1)]


def benchmark_lengths(isl: int, osl: int, ratio: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(input lengths, output lengths) of count requests in dispatch order."""
    return dealt_lengths(isl, ratio, count, 1), dealt_lengths(osl, ratio, count, 2)
