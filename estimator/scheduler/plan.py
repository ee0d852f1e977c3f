"""The agg schedule in closed form: step counts and step shapes of operating points, before pricing.

BaseBackend.run_agg's step counts in either semantics (legacy-semantics.md section 1,
uncached-budget.md section 3), computed elementwise over many points of one workload
(``agg_plans``: the sweep's grid in one pass); ``point_plans`` / ``plan_agg`` are its one-point case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimator.scheduler.policies import BackendPolicy
from estimator.steps import MixedShape, Semantics

MAX_GROUPS = 2  # mixed-step groups of one schedule: the steady group, or a whole-batch first step and its remainder


@dataclass(frozen=True)
class MixGroup:
    """Mixed steps that carry the same shape."""

    shape: MixedShape  # prefill tokens and decode requests of each of these steps
    count: float  # number of such steps
    tpot_count: float  # how many of them enter the TPOT average


@dataclass(frozen=True)
class AggPlan:
    """The closed-form schedule of an operating point, before pricing."""

    ctx_knob: int  # the budget knob as passed (or its default): echoed as ctx_tokens
    budget_isl: int  # tokens per request the budget counts: isl (legacy) or isl - prefix (uncached)
    ctx_budget: int  # prefill tokens per step the schedule uses
    steps_to_finish_ctx: float  # S = ceil(budget_isl * b / ctx_budget)
    decode_iterations: float  # D = 1 + (osl - 1) / decode_tokens_per_iteration
    chunks: int  # TTFT chunks of one request: ceil(budget_isl / ctx_budget)
    mix: tuple[MixGroup, ...]  # mixed steps in order; the first one prices a TTFT chunk
    genonly_steps: float  # decode-only steps (fractional under MTP)
    genonly_requests: int  # requests in each decode-only step (0: none priced)
    num_ctx_requests: int  # prefilling requests per mixed step (reported; sizes memory)
    num_gen_requests: int  # the rest of the batch (reported; sizes memory)
    balance_score: float  # budget_isl * b / ctx_budget / D (reported only)

    @property
    def num_mix_steps(self) -> float:
        return sum(g.count for g in self.mix)


@dataclass(frozen=True, eq=False)
class AggPlans:
    """Closed-form schedules of many operating points of one workload, as columns (entry i: point i).

    Each schedule has one or two mixed-step groups (`groups`); an absent second group has zero
    tokens, requests and counts, which leaves every sum over groups unchanged."""

    isl: int  # effective input length per request, tokens
    osl: int  # output length per request, tokens
    prefix: int  # cached prefix tokens per request (part of isl)
    decode_tokens_per_iteration: float  # output tokens one decode iteration commits (>= 1)
    budget_isl: int  # tokens per request the budget counts: isl (legacy) or isl - prefix (uncached)
    decode_iterations: float  # D = 1 + (osl - 1) / decode_tokens_per_iteration
    batch: np.ndarray  # requests per point, int64 (>= 1)
    ctx_knob: np.ndarray  # the budget knob as passed (or its default): echoed as ctx_tokens, int64
    ctx_budget: np.ndarray  # prefill tokens per step the schedule uses, int64
    steps_to_finish_ctx: np.ndarray  # S = ceil(budget_isl * b / ctx_budget), float64
    chunks: np.ndarray  # TTFT chunks of one request: ceil(budget_isl / ctx_budget), int64
    groups: np.ndarray  # mixed-step groups (1 or 2), int64
    mix_ctx: np.ndarray  # [n, 2] prefill tokens of each group's steps, int64
    mix_decode: np.ndarray  # [n, 2] decode requests of each group's steps, int64
    mix_count: np.ndarray  # [n, 2] steps in each group, float64
    mix_tpot_count: np.ndarray  # [n, 2] of them entering the TPOT average, float64
    genonly_steps: np.ndarray  # decode-only steps (fractional under MTP), float64
    genonly_requests: np.ndarray  # requests in each decode-only step (0: none priced), int64
    num_ctx_requests: np.ndarray  # prefilling requests per mixed step, int64
    num_gen_requests: np.ndarray  # the rest of the batch, int64
    balance_score: np.ndarray  # budget_isl * b / ctx_budget / D, float64

    def __len__(self) -> int:
        return len(self.batch)

    @property
    def num_mix_steps(self) -> np.ndarray:
        return self.mix_count[:, 0] + self.mix_count[:, 1]

    def take(self, at: np.ndarray) -> AggPlans:
        """The schedules at indices `at`, in that order."""
        per_point = {f: getattr(self, f)[at] for f in PER_POINT_FIELDS}
        return AggPlans(self.isl, self.osl, self.prefix, self.decode_tokens_per_iteration, self.budget_isl, self.decode_iterations, **per_point)

    def group_prices(self, flat_ms) -> np.ndarray:
        """[n, MAX_GROUPS] per-step prices from the prices of every schedule's groups in order
        (schedule 0's groups, then schedule 1's, ...); 0 for an absent group."""
        prices = np.zeros((len(self), MAX_GROUPS))
        prices[np.arange(MAX_GROUPS) < self.groups[:, None]] = flat_ms
        return prices

    def shapes(self, i: int) -> list[MixedShape]:
        """The mixed-step shapes of schedule i, in order."""
        return [MixedShape(int(self.mix_ctx[i, g]), int(self.mix_decode[i, g]), self.isl, self.osl, self.prefix) for g in range(int(self.groups[i]))]

    def plan(self, i: int) -> AggPlan:
        """Schedule i as an AggPlan of Python numbers."""
        groups = tuple(MixGroup(shape, float(self.mix_count[i, g]), float(self.mix_tpot_count[i, g])) for g, shape in enumerate(self.shapes(i)))
        return AggPlan(
            ctx_knob=int(self.ctx_knob[i]),
            budget_isl=self.budget_isl,
            ctx_budget=int(self.ctx_budget[i]),
            steps_to_finish_ctx=float(self.steps_to_finish_ctx[i]),
            decode_iterations=self.decode_iterations,
            chunks=int(self.chunks[i]),
            mix=groups,
            genonly_steps=float(self.genonly_steps[i]),
            genonly_requests=int(self.genonly_requests[i]),
            num_ctx_requests=int(self.num_ctx_requests[i]),
            num_gen_requests=int(self.num_gen_requests[i]),
            balance_score=float(self.balance_score[i]),
        )


PER_POINT_FIELDS = tuple(
    f for f in AggPlans.__dataclass_fields__ if f not in ("isl", "osl", "prefix", "decode_tokens_per_iteration", "budget_isl", "decode_iterations")
)


def default_ctx_tokens(isl: int, prefix: int, semantics: Semantics) -> int:
    """The budget knob when none is given: isl (legacy CLI) or max(isl - prefix, 1) (uncached)."""
    if semantics is Semantics.LEGACY:
        return isl
    return max(isl - prefix, 1)


def point_plans(policy: BackendPolicy, point, semantics: Semantics, dtpi: float) -> AggPlans:
    """agg_plans of one operating point (an AggPoint; its budget knob defaulted by semantics)."""
    knob = point.ctx_tokens if point.ctx_tokens is not None else default_ctx_tokens(point.isl, point.prefix, semantics)
    return agg_plans(policy, point.isl, point.osl, point.prefix, [point.batch_size], [knob], semantics, dtpi)


def plan_agg(policy: BackendPolicy, point, semantics: Semantics, dtpi: float) -> AggPlan:
    """The schedule of one operating point (an AggPoint), as an AggPlan."""
    return point_plans(policy, point, semantics, dtpi).plan(0)


def agg_plans(policy: BackendPolicy, isl: int, osl: int, prefix: int, batch: Sequence[int], knob: Sequence[int],
              semantics: Semantics, dtpi: float) -> AggPlans:  # fmt: skip
    """The schedules of points (batch[i], prefill budget knob[i]) of one workload, elementwise
    (BaseBackend.run_agg's step counts, either semantics):

    * b == 1: one decode-free mixed step (even when the prompt needs several chunks), then D-1
      decode steps; TPOT averages the decode steps only;
    * uncached, b > 1, the budget covers every request (S is 1 or 2): a decode-free first step,
      then (S == 2) a final partial step prefilling the rest while the completed requests decode;
      the decode-free step never enters TPOT;
    * otherwise S mixed steps of `budget` prefill tokens alongside the policy's decode requests,
      then D - S decode steps of the whole batch (none when prefill outlasts decode)."""
    b = np.array(batch, dtype=np.int64).reshape(-1)
    knob = np.array(knob, dtype=np.int64).reshape(-1)
    uncached = semantics is Semantics.UNCACHED
    budget_isl = isl - prefix if uncached else isl
    budget = np.minimum(knob, b * budget_isl) if uncached else knob
    d = 1.0 + max(osl - 1, 0) / dtpi
    s = np.ceil(budget_isl * b / budget)
    single = b == 1
    whole = ~single & (np.ceil(budget / budget_isl) >= b) if uncached else np.zeros_like(single)
    steady = ~single & ~whole
    decoding = s < d  # prefill ends before decode: decode-only steps follow
    n = len(b)
    mix_ctx, mix_decode = np.zeros((n, MAX_GROUPS), dtype=np.int64), np.zeros((n, MAX_GROUPS), dtype=np.int64)
    mix_count, mix_tpot = np.zeros((n, MAX_GROUPS)), np.zeros((n, MAX_GROUPS))
    mix_ctx[:, 0] = budget
    mix_count[:, 0] = np.where(steady, s, 1.0)
    mix_decode[:, 0] = np.where(steady, policy.mix_decode_requests(b, budget, budget_isl, d), 0)
    mix_tpot[:, 0] = np.where(steady, np.where(decoding, policy.tpot_mix_steps(s), s), 0.0)
    rest = whole & (s == 2.0)  # the whole batch's final partial step
    mix_ctx[:, 1] = np.where(rest, b * budget_isl - budget, 0)
    mix_decode[:, 1] = np.where(rest, budget // budget_isl, 0)
    mix_count[:, 1] = np.where(rest, 1.0, 0.0)
    mix_tpot[:, 1] = np.where(rest, np.where(decoding, policy.tpot_mix_steps(s - 1.0), s - 1.0), 0.0)
    genonly = np.where(single, max(d - 1.0, 0.0), np.where(decoding, d - s, 0.0))
    genonly_requests = np.where(single, 1, np.where(decoding, b, 0))
    ctx_requests = np.ceil(budget / budget_isl).astype(np.int64)
    ctx_requests = np.where(single, 1, np.minimum(ctx_requests, b) if uncached else ctx_requests)
    return AggPlans(
        isl=isl,
        osl=osl,
        prefix=prefix,
        decode_tokens_per_iteration=dtpi,
        budget_isl=budget_isl,
        decode_iterations=d,
        batch=b,
        ctx_knob=knob,
        ctx_budget=budget,
        steps_to_finish_ctx=s,
        chunks=np.ceil(budget_isl / budget).astype(np.int64),
        groups=np.where(rest, 2, 1),
        mix_ctx=mix_ctx,
        mix_decode=mix_decode,
        mix_count=mix_count,
        mix_tpot_count=mix_tpot,
        genonly_steps=genonly,
        genonly_requests=genonly_requests,
        num_ctx_requests=ctx_requests,
        num_gen_requests=np.where(single, 1, b - ctx_requests),
        balance_score=budget_isl * b / budget / d,
    )
