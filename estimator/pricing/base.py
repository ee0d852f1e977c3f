"""The pricer interface: per-op latencies of one forward phase of a deployment.

Two implementations exist: ``native`` (Numba kernels over the silicon tables) and ``reference``
(aiconfigurator-core's compiled engine). Both return the same records in the same op order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class OpPrice:
    name: str  # op name as in the op list, e.g. "context_qkv_gemm"
    latency_ms: float  # per-call latency x scale_factor, ms; finite and >= 0
    source: str  # "silicon" | "empirical" | "sol" | "mixed" (folded entries disagree)


class Pricer(Protocol):
    """Prices the context and generation op lists of one bound deployment."""

    kind: str  # "native" | "reference"

    def context_ops(self, batch_size: int, s: int, prefix: int = 0, scale: float = 1.0) -> list[OpPrice]:
        """Context phase: batch_size requests of s new tokens over prefix cached ones (s >= 1, prefix >= 0).

        scale is the seq imbalance correction on context attention. Op order is the model's."""
        ...

    def generation_ops(self, batch_size: int, s: int, scale: float = 1.0) -> list[OpPrice]:
        """One decode step: batch_size sequences (already multiplied by nextn+1) at KV position s >= 1.

        scale is the generation imbalance correction on generation attention."""
        ...
