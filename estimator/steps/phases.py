"""Static phases and the decode (gen-only) step over any Pricer, one batched call per phase.

Mirrors the reference engine (aiconfigurator-core 0.12.0 ``Engine::run_static`` and
``Engine::decode_step_latency``; legacy-semantics.md sections 2.3 and 2.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimator.errors import InvalidInputError
from estimator.pricing.base import Pricer
from estimator.steps.fold import ZERO_STEP, StepCost, op_fold, sequential_sum, step_cost

DEFAULT_STRIDE = 32  # static generation prices every 32nd KV position


@dataclass(frozen=True)
class StepModel:
    """A pricer plus what every step composition needs besides the step's shape."""

    pricer: Pricer  # prices the deployment's context and generation op lists
    nextn: int = 0  # MTP draft depth (>= 0): decode batches are multiplied by nextn + 1
    seq_scale: float = 1.0  # seq imbalance correction on context attention
    gen_scale: float = 1.0  # gen seq imbalance correction on generation attention

    @property
    def query_multiplier(self) -> int:
        """Query tokens per decode request per step (nextn + 1)."""
        return self.nextn + 1

    def context_fold(self, only: str | None = None, exclude: str | None = None):
        return op_fold(self.pricer.context_names, self.pricer.context_sources, only, exclude)

    def generation_fold(self, only: str | None = None):
        return op_fold(self.pricer.generation_names, self.pricer.generation_sources, only)


def decode_kv_position(isl: int, osl: int) -> int:
    """KV position (tokens) of the decode phase's midpoint, where one step stands for every step."""
    return max(isl, 1) + max(osl, 1) // 2 + 1


def require_prefix_below_isl(prefix: int, isl: int) -> None:
    if prefix >= isl:
        raise InvalidInputError(f"prefix ({prefix}) must be smaller than isl ({isl})")


def static_context(model: StepModel, batch: int, isl: int, prefix: int = 0) -> StepCost:
    """Prefill of `batch` requests of isl tokens, `prefix` of them cached (ms per op)."""
    return static_context_many(model, (batch,), isl, prefix)[0]


def static_context_many(model: StepModel, batches: Sequence[int], isl: int, prefix: int = 0) -> list[StepCost]:
    """static_context at every batch size, from one context_many call."""
    require_prefix_below_isl(prefix, isl)
    fold = model.context_fold()
    shapes = np.array([[b, isl - prefix, prefix] for b in batches], dtype=np.float64).reshape(-1, 3)
    lat = fold.apply(model.pricer.context_many(shapes, model.seq_scale))
    totals = sequential_sum(lat)
    return [step_cost(fold, lat[i], totals[i]) for i in range(len(batches))]


def generation_steps(osl: int, stride: int = DEFAULT_STRIDE) -> tuple[np.ndarray, np.ndarray]:
    """Decode positions sampled by static generation: offsets i = 0, stride, ... < osl-1 and their
    weights min(stride, osl-1-i) (steps each sample stands for)."""
    if stride < 1:
        raise InvalidInputError(f"stride must be a positive integer, got {stride}")
    offsets = np.arange(0, max(osl - 1, 0), stride)
    return offsets, np.minimum(stride, osl - 1 - offsets).astype(np.float64)


def static_generation(model: StepModel, batch: int, isl: int, osl: int, stride: int = DEFAULT_STRIDE) -> StepCost:
    """All osl-1 decode steps of a static batch (ms per op): each sampled step at KV position
    isl+i+1 is folded by name, then weighted by the steps it stands for."""
    return static_generation_many(model, (batch,), isl, osl, stride)[0]


def static_generation_many(model: StepModel, batches: Sequence[int], isl: int, osl: int, stride: int = DEFAULT_STRIDE) -> list[StepCost]:
    """static_generation at every batch size, from one generation_many call."""
    offsets, weights = generation_steps(osl, stride)
    if offsets.size == 0 or len(batches) == 0:
        return [ZERO_STEP] * len(batches)
    fold = model.generation_fold()
    queries = np.repeat(np.array(batches, dtype=np.float64) * model.query_multiplier, offsets.size)
    shapes = np.column_stack((queries, np.tile(isl + offsets + 1, len(batches))))
    folded = fold.apply(model.pricer.generation_many(shapes, model.gen_scale)).reshape(len(batches), offsets.size, -1)
    steps = []
    for per_sample in folded:
        per_op = np.cumsum(per_sample * weights[:, None], axis=0)[-1:]
        steps.append(step_cost(fold, per_op[0], sequential_sum(per_op)[0]))
    return steps


def decode_step(model: StepModel, requests: int, isl: int, osl: int) -> StepCost:
    """One gen-only step of `requests` decoding requests at the midpoint KV position (ms per op)."""
    if requests <= 0:
        return ZERO_STEP
    fold = model.generation_fold()
    shape = np.array([[requests * model.query_multiplier, decode_kv_position(isl, osl)]])
    lat = fold.apply(model.pricer.generation_many(shape, model.gen_scale))
    return step_cost(fold, lat[0], sequential_sum(lat)[0])


def decode_step_totals(model: StepModel, requests: np.ndarray, isl: int, osl: int) -> np.ndarray:
    """decode_step(model, n, isl, osl).latency_ms for every n in `requests`, bit-identical, from one
    generation_many call (0.0 where n <= 0)."""
    requests = np.asarray(requests, dtype=np.int64)
    totals = np.zeros(requests.size)
    decoding = requests > 0
    if decoding.any():
        shapes = np.column_stack((requests[decoding] * model.query_multiplier, np.full(int(decoding.sum()), decode_kv_position(isl, osl))))
        totals[decoding] = sequential_sum(model.generation_fold().apply(model.pricer.generation_many(shapes, model.gen_scale)))
    return totals
