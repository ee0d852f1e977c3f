"""Sweep workloads and latency targets."""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.deployment import LATENCY_RESOLUTION_MS, require_fraction, require_positive, require_slot
from estimator.errors import InvalidInputError

TTFT_BASE_TARGETS = (300, 400, 500, 600, 800, 1000, 1200, 1400, 1600, 2000, 3000, 5000, 8000)  # ms
TTFT_LATENCY_SHARES = (0.1, 0.2, 0.3, 0.5, 0.7)  # of the request-latency target


@dataclass(frozen=True)
class Workload:
    """What every swept deployment serves."""

    isl: int  # effective input length per request, tokens (>= 1)
    osl: int  # output length per request, tokens (>= 1)
    prefix: int = 0  # cached prefix tokens per request, part of isl (0 <= prefix < isl)
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= A <= nextn)
    free_gpu_memory_fraction: float | None = None  # KV budget fraction; None: the backend's default
    max_seq_len: int | None = None  # TRT-LLM agg KV slot length; None: isl + osl

    def __post_init__(self) -> None:
        require_positive("isl", self.isl)
        require_positive("osl", self.osl)
        if self.prefix < 0:
            raise InvalidInputError(f"prefix must be >= 0, got {self.prefix}")
        if self.max_seq_len is not None:
            require_positive("max_seq_len", self.max_seq_len)
        require_slot("max_seq_len", self.max_seq_len, self.isl + self.osl)
        require_fraction("free_gpu_memory_fraction", self.free_gpu_memory_fraction)

    def require_prefix_below_isl(self, what: str) -> None:
        """The up-front check every sweep makes before building its grid."""
        if self.prefix >= self.isl:
            raise InvalidInputError(f"prefix ({self.prefix}) must be smaller than the effective isl ({self.isl}) for an {what}")


@dataclass(frozen=True)
class Sla:
    """Latency targets: a TTFT target with one or more TPOT targets, or a request-latency target."""

    ttft: float  # ms (finite, >= LATENCY_RESOLUTION_MS)
    tpots: tuple[float, ...] = (50.0,)  # ms per output token (each finite, >= LATENCY_RESOLUTION_MS); one ranking per target
    request_latency: float | None = None  # ms (finite, >= LATENCY_RESOLUTION_MS); replaces tpots with derived (ttft, tpot) pairs

    def __post_init__(self) -> None:
        for name, value in (("ttft", self.ttft), *(("tpot", t) for t in self.tpots)):
            _require_latency(f"{name} target", value)
        if self.request_latency is None and not self.tpots:
            raise InvalidInputError("a TPOT or request latency target is required")
        if self.request_latency is not None:
            _require_latency("request latency target", self.request_latency)

    def pairs(self, osl: int) -> list[tuple[float, float]]:
        """(ttft, tpot) target pairs (utils.enumerate_ttft_tpot_constraints for a request-latency target)."""
        if self.request_latency is None:
            return [(self.ttft, t) for t in self.tpots]
        if osl <= 1:
            raise InvalidInputError(f"a request latency target needs osl > 1, got {osl}")
        latency = self.request_latency
        extra = [v for v in (latency * s for s in TTFT_LATENCY_SHARES) if v < TTFT_BASE_TARGETS[0] or v > TTFT_BASE_TARGETS[-1]]
        ttfts = sorted(t for t in {*TTFT_BASE_TARGETS, *extra, self.ttft} if t < latency)
        return [(t, (latency - t) / (osl - 1)) for t in ttfts]


def _require_latency(name: str, ms: float) -> None:
    """InvalidInputError naming the target unless it is a finite number of ms from LATENCY_RESOLUTION_MS up
    (below it a latency's ratio to the target, its miss factor, overflows to inf)."""
    if not (math.isfinite(ms) and ms >= LATENCY_RESOLUTION_MS):
        raise InvalidInputError(f"{name} must be a positive number of ms, got {ms!r} (the least is {LATENCY_RESOLUTION_MS:g} ms, a clock's nanosecond)")
