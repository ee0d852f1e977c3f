"""The pricer interface: per-op latencies of one forward phase of a deployment.

Two implementations exist: ``native`` (Numba kernels over the silicon tables) and ``reference``
(aiconfigurator-core's compiled engine). Both return the same records in the same op order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


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

    context_names: tuple[str, ...]  # context op names, op order
    generation_names: tuple[str, ...]
    context_sources: tuple[str, ...]  # per context op source tag
    generation_sources: tuple[str, ...]

    def context_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """Context latencies (ms) at many shapes: rows (batch, s, prefix) -> float64[n_shapes, n_ops]."""
        ...

    def generation_many(self, shapes: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """Generation latencies (ms) at many shapes: rows (batch, s) -> float64[n_shapes, n_ops]."""
        ...

    def restricted(self, context_names: frozenset[str], generation_names: frozenset[str]) -> Pricer:
        """A view pricing only the named ops, in op order, each at the same price as in the full
        lists (an op's price does not depend on the others)."""
        ...
