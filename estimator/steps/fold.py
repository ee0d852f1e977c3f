"""Per-op results of one step: name folding (vectorised) and the step records it produces.

Folding mirrors the reference's phase dicts: entries with the same op name add up in op order
(`+=` from 0.0) and the source becomes "mixed" when the folded entries disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.caching import memo

MIXED_SOURCE = "mixed"


@dataclass(frozen=True)
class OpCost:
    name: str  # op name, unique within a step (folded)
    latency_ms: float  # latency of this op in one step, ms (>= 0)
    source: str  # "silicon" | "empirical" | "sol" | "estimated" | "mixed"


@dataclass(frozen=True)
class StepCost:
    """One priced step: its total and its per-op breakdown folded by name (op order)."""

    latency_ms: float  # sequential sum of ops' latencies (reference summation order), ms
    ops: tuple[OpCost, ...]  # folded per-op breakdown; empty when the step prices nothing


ZERO_STEP = StepCost(0.0, ())


@dataclass(frozen=True)
class OpFold:
    """How an op list folds into unique names, optionally restricted to some ops."""

    names: tuple[str, ...]  # unique kept names, first-occurrence order
    sources: tuple[str, ...]  # per unique name: the shared source, or "mixed"
    columns: np.ndarray  # int64[n_kept]: op columns kept, op order
    slots: np.ndarray  # int64[n_kept]: unique-name slot of each kept column
    unique: bool  # every kept name occurs once (folding is a column selection)

    def apply(self, lat: np.ndarray) -> np.ndarray:
        """float64[n, n_ops] -> float64[n, n_names], adding same-name columns in op order."""
        if self.unique:
            return lat[:, self.columns]
        out = np.zeros((lat.shape[0], len(self.names)))
        np.add.at(out, (slice(None), self.slots), lat[:, self.columns])
        return out

    def costs(self, folded_row: np.ndarray) -> tuple[OpCost, ...]:
        """OpCost records of one folded row."""
        return tuple(OpCost(n, v, s) for n, v, s in zip(self.names, folded_row.tolist(), self.sources))


@memo(256)
def op_fold(names: tuple[str, ...], sources: tuple[str, ...], only: str | tuple[str, ...] | None = None,
            exclude: str | tuple[str, ...] | None = None) -> OpFold:  # fmt: skip
    """The fold of an op list keeping the ops named `only` (a name or names; all when None) and
    dropping the ops named `exclude`."""
    keep, drop = _name_set(only), _name_set(exclude) or frozenset()
    kept = [i for i, n in enumerate(names) if (keep is None or n in keep) and n not in drop]
    unique_names: list[str] = []
    unique_sources: list[str] = []
    slots = []
    for i in kept:
        if names[i] not in unique_names:
            unique_names.append(names[i])
            unique_sources.append(sources[i])
        slot = unique_names.index(names[i])
        if unique_sources[slot] != sources[i]:
            unique_sources[slot] = MIXED_SOURCE
        slots.append(slot)
    return OpFold(
        names=tuple(unique_names),
        sources=tuple(unique_sources),
        columns=np.array(kept, dtype=np.int64),
        slots=np.array(slots, dtype=np.int64),
        unique=len(unique_names) == len(kept),
    )


def _name_set(names: str | tuple[str, ...] | None) -> frozenset[str] | None:
    return None if names is None else frozenset((names,) if isinstance(names, str) else names)


def sequential_sum(values: np.ndarray) -> np.ndarray:
    """Row sums of float64[n, m] added left to right from 0.0 (Python's `sum` over a dict's values)."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0])
    return np.cumsum(values, axis=1)[:, -1]


def step_cost(fold: OpFold, folded_row: np.ndarray, total: float) -> StepCost:
    """A StepCost from one folded row and its sequential total."""
    return StepCost(float(total), fold.costs(folded_row))
