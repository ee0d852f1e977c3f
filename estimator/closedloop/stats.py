"""What a replay reports: latency statistics over the requests its protocol counts.

Counting (closed-loop.md section 1, with the ITL pool by emission): TTFTs and inter-token gaps are
counted when they are emitted in a pass (or launched in a batch) that starts once ``done >= warm``;
TPOTs, latencies and throughput count the requests that complete after the warm-th completion. The
window runs from the warm-th completion (0 without warm-up) to the last completion.

Definitions: TTFT = wait (dispatch to the start of the pass that schedules the request's first
prefill chunk, or of its prefill batch) + the durations of the passes from there to its first
token, added in order (so C = 1 TTFT is exactly the solo prefill); TPOT of a request =
(t_last - t_first)/(osl - 1), 0.0 when osl == 1 (no decode, the backend convention); ITL = the gap
between two consecutive emissions of a request (a speculative emission may carry several tokens);
latency = completion - dispatch. Means add left to right in recording order, except the ITL mean,
which adds value x length over the runs of equal consecutive gaps (one run per pass in a decode
stretch; the Numba replay never holds one entry per gap); quantiles follow
estimator.closedloop.quantile. ITL statistics are NaN when no gap was counted (osl == 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from estimator.closedloop.quantile import nearest_rank


@dataclass(frozen=True)
class LatencyStats:
    """Statistics of one replay (ms unless stated)."""

    ttft_mean: float  # mean TTFT of the counted first tokens; NaN if none
    ttft_p50: float  # nearest-rank median TTFT
    ttft_p99: float  # nearest-rank 99th percentile TTFT
    ttft_max: float  # largest TTFT of any request, warm-up included (the transient maximum)
    tpot_mean: float  # mean of the counted requests' TPOTs (ms/token); 0.0 when none decodes
    tpot_p50: float  # nearest-rank median TPOT (ms/token)
    tpot_p99: float  # nearest-rank 99th percentile TPOT (ms/token)
    itl_mean: float  # mean counted inter-token gap; NaN if none
    itl_p50: float  # nearest-rank median gap
    itl_p99: float  # nearest-rank 99th percentile gap
    latency_mean: float  # mean dispatch-to-completion time of the counted requests
    throughput_rps: float  # counted completions per second of the window (requests/s, one replay); 0.0 if the window is empty
    requests: int  # counted completions (>= 0)
    window_ms: float  # window length, ms (>= 0)

    def same_as(self, other: LatencyStats) -> bool:
        """Bit-for-bit equality (NaN equals NaN)."""
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))


STAT_FIELDS = tuple(f.name for f in fields(LatencyStats))


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def mean(values) -> float:
    """Left-to-right sum over len; NaN when empty."""
    total = 0.0
    for v in values:
        total += v
    return total / len(values) if values else math.nan


def run_length_sum(values) -> float:
    """Sum over the runs of equal consecutive values of value x run length, left to right."""
    total = 0.0
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        total += values[i] * (j - i)
        i = j
    return total


def summarize(ttfts, worst, tpots, gaps, latencies, window_ms) -> LatencyStats:
    """The statistics of the counted records (the literal replay's path)."""
    decodes = bool(tpots)
    return LatencyStats(
        ttft_mean=mean(ttfts),
        ttft_p50=nearest_rank(ttfts, 0.5),
        ttft_p99=nearest_rank(ttfts, 0.99),
        ttft_max=worst,
        tpot_mean=mean(tpots) if decodes else 0.0,
        tpot_p50=nearest_rank(tpots, 0.5) if decodes else 0.0,
        tpot_p99=nearest_rank(tpots, 0.99) if decodes else 0.0,
        itl_mean=run_length_sum(gaps) / len(gaps) if gaps else math.nan,
        itl_p50=nearest_rank(gaps, 0.5),
        itl_p99=nearest_rank(gaps, 0.99),
        latency_mean=mean(latencies),
        throughput_rps=len(latencies) / (window_ms / 1000) if window_ms > 0 else 0.0,
        requests=len(latencies),
        window_ms=window_ms,
    )


def stats_from_array(values: np.ndarray) -> LatencyStats:
    """LatencyStats from the kernels' float64[len(STAT_FIELDS)] record."""
    record = {name: float(v) for name, v in zip(STAT_FIELDS, values.tolist())}
    record["requests"] = int(record["requests"])
    return LatencyStats(**record)


@dataclass(frozen=True, eq=False)
class Completions:
    """Every completion of a replay, in completion order."""

    born_ms: np.ndarray  # float64: dispatch time of each completed request
    done_ms: np.ndarray  # float64: completion time (last token)

    def same_as(self, other: Completions) -> bool:
        return np.array_equal(self.born_ms, other.born_ms) and np.array_equal(self.done_ms, other.done_ms)


@dataclass(frozen=True)
class ReplayResult:
    """A replay's statistics and its completion trace."""

    stats: LatencyStats
    completions: Completions

    def same_as(self, other: ReplayResult) -> bool:
        return self.stats.same_as(other.stats) and self.completions.same_as(other.completions)
