"""Deterministic request lengths of a benchmark run, uniform on [r*L, L]: the client's own seeded draws, or evenly
spaced quantiles where its seed is not recorded.

A client with a recorded NumPy seed draws its lengths deterministically, and the replay repeats those
draws (``client_draws``): vLLM ``benchmark_serving`` (InferenceX's copy, srt-slurm's sa-bench) and
SGLang ``bench_serving`` call ``np.random.seed(seed)`` at start and draw every input length, then every
output length, with one ``np.random.randint(low, L + 1, size=N)`` each (NumPy's legacy stream, fixed by
NEP 19), low being int(r*L) for vLLM's family and max(int(r*L), 1) for SGLang's, the same wherever
r*L >= 1 (an import refuses a vLLM-family seed below that). Without a recorded seed, the rest of this
docstring holds.

A serving benchmark client draws each prompt's input and output length independently and
uniformly from the integers [int(r*L), L] (vLLM ``benchmark_serving`` random dataset with
``--random-range-ratio r``). The replay takes the N evenly spaced quantiles (j + 0.5)/N of that
distribution instead of random draws, and deals them to the requests in a well-mixed order with
no RNG: request i gets quantile index (i*a_in + N//2) mod N for its input length and
(i*a_out + N//2) mod N for its output length (request 0 the median ones), a shifted rank-1
lattice with generator (1, a_in, a_out). The multipliers lie near N/rho and N/rho**2 (rho the
plastic number: Roberts' R2 sequence, the additive recurrence that spreads points most evenly in
two dimensions), chosen among the integers coprime to N nearest them for the least correlated
dispatch order, input lengths and output lengths (``lattice_generators``; largest |Pearson| 0.25
from N = 16 on). Input and output lengths are thereby decorrelated from each other and from the
dispatch order, as independent draws would be. (The earlier multipliers, a near N*(sqrt(5)-1)/2
and a**2, dealt the output lengths in dispatch order wherever a**2 = 1 mod N, as at N = 80: a
first wave of the shortest outputs, whose requests then finished together.)
"""

from __future__ import annotations

import math

import numpy as np

from estimator.caching import memo
from estimator.errors import InvalidInputError

PLASTIC = 1.324717957244746  # the plastic number, the real root of x**3 = x + 1
GENERATOR_TARGETS = (1.0 / PLASTIC, 1.0 / PLASTIC**2)  # a_in / N and a_out / N aimed at (Roberts' R2 generators)
GENERATOR_CANDIDATES = 4  # integers coprime to N tried nearest each target
_EXACT_CHUNK = 1 << 16  # elements summed in int64 at once (each product < 2**44, so a chunk's sum < 2**60)


def _check_lengths(longest: int, ratio: float, count: int) -> None:
    """InvalidInputError unless longest >= 1, count >= 1 and the range ratio is within (0, 1]."""
    if longest < 1 or count < 1:
        raise InvalidInputError(f"lengths need longest >= 1 and count >= 1, got {longest} and {count}")
    if not 0.0 < ratio <= 1.0:
        raise InvalidInputError(f"range ratio must be within (0, 1], got {ratio}")


def uniform_quantile_lengths(longest: int, ratio: float, count: int) -> np.ndarray:
    """The count evenly spaced quantiles of the integers uniform on [int(ratio*longest), longest], ascending."""
    _check_lengths(longest, ratio, count)
    low = max(1, int(ratio * longest))
    span = longest - low + 1
    quantiles = (np.arange(count) + 0.5) / count
    return low + np.minimum(np.floor(quantiles * span).astype(np.int64), span - 1)


def _nearest_coprimes(count: int, target: float) -> list[int]:
    """The GENERATOR_CANDIDATES integers in [1, count) coprime to count nearest count*target, nearest first (lower first on ties)."""
    base = min(max(1, round(count * target)), count - 1)
    found: list[int] = []
    for step in range(count):
        for a in (base,) if step == 0 else (base - step, base + step):
            if 1 <= a < count and math.gcd(a, count) == 1:
                found.append(a)
                if len(found) == GENERATOR_CANDIDATES:
                    return found
    return found


def _dealt_indices(i: np.ndarray, count: int, generator: int) -> np.ndarray:
    """The quantile indices requests i are dealt with a generator: (i*generator + count//2) mod count."""
    return (i * generator + count // 2) % count


def _covariance(count: int, a: int | None, b: int) -> int:
    """count**2 * 12 times the covariance over i < count of the index sequences dealt by generators a (None: the
    dispatch order i itself) and b, in exact integers: both are permutations of 0..count-1 (generators coprime to
    count), so it is 12*sum(products) - 3*count*(count-1)**2."""
    total = 0
    for start in range(0, count, _EXACT_CHUNK):
        i = np.arange(start, min(start + _EXACT_CHUNK, count), dtype=np.int64)
        total += int(np.dot(i if a is None else _dealt_indices(i, count, a), _dealt_indices(i, count, b)))
    return 12 * total - 3 * count * (count - 1) ** 2


@memo()
def lattice_generators(count: int) -> tuple[int, int]:
    """(a_in, a_out) dealing count lengths (module docstring): among the GENERATOR_CANDIDATES integers coprime to count
    nearest count*GENERATOR_TARGETS, the pair (a_in != a_out) whose dispatch order, input indices and output indices
    have the smallest largest pairwise correlation, the nearer candidates first on ties; (1, 1) for count <= 2."""
    if count <= 2:
        return 1, 1
    ins, outs = (_nearest_coprimes(count, target) for target in GENERATOR_TARGETS)
    with_order = {a: abs(_covariance(count, None, a)) for a in {*ins, *outs}}  # each against the dispatch order
    pairs = [(a, b) for a in ins for b in outs if a != b]
    return min(pairs, key=lambda p: max(with_order[p[0]], with_order[p[1]], abs(_covariance(count, *p))))


def dealt_lengths(longest: int, ratio: float, count: int, generator: int) -> np.ndarray:
    """Lengths in dispatch order: request i gets quantile index (i*generator + count//2) mod count."""
    return uniform_quantile_lengths(longest, ratio, count)[_dealt_indices(np.arange(count, dtype=np.int64), count, generator)]


SEED_LIMIT = 2**32  # NumPy's legacy generator takes seeds in [0, SEED_LIMIT)


def check_client_seed(seed: int, name: str = "a client seed") -> None:
    """InvalidInputError naming the seed as `name` unless it is an integer NumPy's legacy generator takes: within
    [0, SEED_LIMIT)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < SEED_LIMIT:
        raise InvalidInputError(f"{name} must be an integer within [0, 2**32), got {seed!r}")


def client_draws(isl: int, osl: int, ratio: float, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(input lengths, output lengths) in dispatch order as a client seeded with `seed` draws them (module docstring):
    request i gets the i-th draw of each. A client that applies a chat template draws its inputs over a range a few
    tokens shorter (InferenceX's --use-chat-template); the template's length is not recorded, so the replay draws
    over [r*L, L] and deals such a run another sample of the same distribution."""
    check_client_seed(seed)
    for longest in (isl, osl):
        _check_lengths(longest, ratio, count)
    draws = np.random.RandomState(seed)
    ins, outs = (draws.randint(max(int(ratio * longest), 1), longest + 1, size=count).astype(np.int64) for longest in (isl, osl))
    return ins, outs


def benchmark_lengths(isl: int, osl: int, ratio: float, count: int, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(input lengths, output lengths) of count requests in dispatch order: the client's draws with its seed, or
    the lattice's quantiles when none is recorded (seed None)."""
    if seed is not None:
        return client_draws(isl, osl, ratio, count, seed)
    a_in, a_out = lattice_generators(count)
    return dealt_lengths(isl, ratio, count, a_in), dealt_lengths(osl, ratio, count, a_out)
