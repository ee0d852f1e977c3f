"""The agg (continuous batching) scheduler: one (batch, prefill budget) operating point, closed form.

Legacy reproduces aiconfigurator 0.12.0 ``BaseBackend.run_agg`` (legacy-semantics.md section 1);
uncached (the default) counts only uncached prompt tokens against the budget
(uncached-budget.md section 3). Both price their steps through estimator.steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from estimator.deployment import Deployment, require_positive
from estimator.errors import InvalidInputError
from estimator.scheduler.facts import DeploymentFacts, deployment_facts, step_pricer
from estimator.scheduler.memory import MEMORY_FIELDS, MemoryUse, MemoryVerdict, memory_at, memory_uses, verdicts
from estimator.scheduler.policies import POLICIES, BackendPolicy
from estimator.steps import (
    MixedShape,
    MixedStepCost,
    Semantics,
    StepCost,
    StepModel,
    decode_step,
    mixed_steps,
)

# aiconfigurator's common.ColumnsAgg, in order, then the step-timing columns this project adds.
AGG_COLUMNS = (
    "model", "isl", "osl", "prefix", "concurrency", "request_rate", "bs", "global_bs", "ttft", "tpot",
    "request_latency", "encoder_latency", "encoder_memory", "seq/s", "seq/s/gpu", "tokens/s", "tokens/s/gpu",
    "tokens/s/user", "num_total_gpus", "tp", "pp", "dp", "moe_tp", "moe_ep", "cp", "parallel", "gemm", "kvcache",
    "fmha", "moe", "comm", "memory", "balance_score", "num_ctx_reqs", "num_gen_reqs", "num_tokens", "ctx_tokens",
    "gen_tokens", "backend", "version", "system", "power_w",
    "mix_step_ms", "genonly_step_ms", "prefill_step_ms", "num_mix_steps", "num_genonly_steps",
    "decode_tokens_per_iteration",
)  # fmt: skip


@dataclass(frozen=True)
class AggPoint:
    """One agg operating point of one attention-DP rank. Every field is part of the result's identity."""

    isl: int  # effective input length per request, tokens (>= 1)
    osl: int  # output length per request, tokens (>= 1)
    batch_size: int  # max concurrent requests (>= 1)
    ctx_tokens: int | None = None  # per-step prefill budget knob, tokens; None: the semantics' default
    prefix: int = 0  # cached prefix tokens per request, part of isl (>= 0)
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= A <= nextn; ignored without MTP)
    seq_imbalance_scale: float = 1.0  # correction on context attention
    gen_seq_imbalance_scale: float = 1.0  # correction on generation attention
    free_gpu_memory_fraction: float | None = None  # KV budget fraction; None: the backend's default
    max_seq_len: int | None = None  # TRT-LLM KV slot length, tokens; None: isl + osl

    def __post_init__(self) -> None:
        sizes = (("isl", self.isl), ("osl", self.osl), ("batch_size", self.batch_size), ("ctx_tokens", self.ctx_tokens),
                 ("max_seq_len", self.max_seq_len))  # fmt: skip
        for name, value in sizes:
            if value is not None and (type(value) is not int or value < 1):  # the grid's hot path: plain ints
                require_positive(name, value)
        if type(self.prefix) is not int:
            object.__setattr__(self, "prefix", int(self.prefix or 0))
        if self.prefix < 0:
            raise InvalidInputError(f"prefix must be >= 0, got {self.prefix}")


@dataclass(frozen=True)
class MixGroup:
    """Mixed steps that carry the same shape."""

    shape: MixedShape  # prefill tokens and decode requests of each of these steps
    count: float  # number of such steps
    tpot_count: float  # how many of them enter the TPOT average


Steps = tuple[tuple[MixGroup, ...], float, int]  # (mixed step groups, decode-only steps, requests per decode-only step)


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


@dataclass(frozen=True)
class AggResult:
    """An agg estimate: the result row plus the schedule and steps behind it."""

    row: Mapping[str, object]  # AGG_COLUMNS -> unrounded value
    plan: AggPlan
    mix_steps: tuple[MixedStepCost, ...]  # one priced step per plan.mix group
    genonly_step: StepCost  # one decode-only step (ZERO_STEP when none)
    memory: MemoryVerdict


def decode_tokens_per_iteration(nextn: int, nextn_accepted: float) -> float:
    """Output tokens one decode iteration commits: 1 + accepted drafts (1.0 without MTP)."""
    if nextn <= 0:
        return 1.0
    if not (math.isfinite(nextn_accepted) and 0 <= nextn_accepted <= nextn):
        raise InvalidInputError(f"nextn_accepted ({nextn_accepted}) must be within [0, nextn={nextn}]")
    return 1.0 + nextn_accepted


def default_ctx_tokens(point: AggPoint, semantics: Semantics) -> int:
    """The budget knob when none is given: isl (legacy CLI) or max(isl - prefix, 1) (uncached)."""
    if semantics is Semantics.LEGACY:
        return point.isl
    return max(point.isl - point.prefix, 1)


def plan_agg(policy: BackendPolicy, point: AggPoint, semantics: Semantics, dtpi: float) -> AggPlan:
    """The schedule of an operating point (BaseBackend.run_agg's step counts, either semantics)."""
    isl, b, p = point.isl, point.batch_size, point.prefix
    knob = point.ctx_tokens if point.ctx_tokens is not None else default_ctx_tokens(point, semantics)
    if semantics is Semantics.UNCACHED:
        budget_isl = isl - p
        budget = min(knob, b * budget_isl)
    else:
        budget_isl, budget = isl, knob
    d = 1.0 + max(point.osl - 1, 0) / dtpi
    s = float(math.ceil(budget_isl * b / budget))
    covers_batch = math.ceil(budget / budget_isl) >= b
    if b == 1:
        mix, genonly, gen_reqs = _single_request_steps(point, budget, d)
    elif semantics is Semantics.UNCACHED and covers_batch:
        mix, genonly, gen_reqs = _whole_batch_steps(policy, point, budget, budget_isl, s, d)
    else:
        mix, genonly, gen_reqs = _steady_steps(policy, point, budget, budget_isl, s, d)
    ctx_reqs = math.ceil(budget / budget_isl)
    if b == 1:
        ctx_reqs = 1
    elif semantics is Semantics.UNCACHED:
        ctx_reqs = min(ctx_reqs, b)
    return AggPlan(
        ctx_knob=knob,
        budget_isl=budget_isl,
        ctx_budget=budget,
        steps_to_finish_ctx=s,
        decode_iterations=d,
        chunks=math.ceil(budget_isl / budget),
        mix=mix,
        genonly_steps=genonly,
        genonly_requests=gen_reqs,
        num_ctx_requests=ctx_reqs,
        num_gen_requests=1 if b == 1 else b - ctx_reqs,
        balance_score=budget_isl * b / budget / d,
    )


def _shape(point: AggPoint, ctx_tokens: int, decode_requests: int) -> MixedShape:
    return MixedShape(ctx_tokens, decode_requests, point.isl, point.osl, point.prefix)


def _single_request_steps(point: AggPoint, budget: int, d: float) -> Steps:
    """b == 1: one decode-free mixed step (even when the prompt needs several chunks), then D-1
    decode steps; TPOT averages the decode steps only."""
    return (MixGroup(_shape(point, budget, 0), 1.0, 0.0),), max(d - 1.0, 0.0), 1


def _steady_steps(policy: BackendPolicy, point: AggPoint, budget: int, budget_isl: int, s: float, d: float) -> Steps:
    """b > 1: S mixed steps of `budget` prefill tokens alongside the policy's decode requests, then
    D - S decode steps of the whole batch (none when prefill outlasts decode)."""
    b = point.batch_size
    shape = _shape(point, budget, policy.mix_decode_requests(b, budget, budget_isl, d))
    if s >= d:
        return (MixGroup(shape, s, s),), 0.0, 0
    return (MixGroup(shape, s, policy.tpot_mix_steps(s)),), d - s, b


def _whole_batch_steps(policy: BackendPolicy, point: AggPoint, budget: int, budget_isl: int, s: float, d: float) -> Steps:
    """Uncached, b > 1, the budget covers every request (S is 1 or 2): a decode-free first step,
    then (S == 2) a final partial step prefilling the rest while the completed requests decode.
    The decode-free step never enters TPOT."""
    b = point.batch_size
    first = MixGroup(_shape(point, budget, 0), 1.0, 0.0)
    if s == 1.0:
        return (first,), (0.0 if s >= d else d - s), (0 if s >= d else b)
    rest = _shape(point, b * budget_isl - budget, budget // budget_isl)
    if s >= d:
        return (first, MixGroup(rest, 1.0, s - 1.0)), 0.0, 0
    return (first, MixGroup(rest, 1.0, policy.tpot_mix_steps(s - 1.0))), d - s, b


def price_plan(model: StepModel, plan: AggPlan, point: AggPoint, semantics: Semantics) -> tuple[list[MixedStepCost], StepCost]:
    """The plan's mixed steps (one batched pass) and its decode-only step."""
    mix = mixed_steps(model, [g.shape for g in plan.mix], semantics)
    return mix, decode_step(model, plan.genonly_requests, point.isl, point.osl)


def run_agg(
    deployment: Deployment,
    point: AggPoint,
    semantics: Semantics | str = Semantics.UNCACHED,
    pricer: str = "native",
) -> AggResult:
    """Estimate one agg operating point (BaseBackend.run_agg with the CLI's explicit MTP progress)."""
    semantics = Semantics.parse(semantics)
    if point.prefix >= point.isl:
        raise InvalidInputError(
            f"prefix ({point.prefix}) must be smaller than the effective isl ({point.isl}) for an agg run"
        )
    policy = POLICIES[deployment.backend]
    dtpi = decode_tokens_per_iteration(deployment.nextn, point.nextn_accepted)
    plan = plan_agg(policy, point, semantics, dtpi)
    model = StepModel(step_pricer(pricer, deployment), deployment.nextn, point.seq_imbalance_scale, point.gen_seq_imbalance_scale)
    mix, genonly = price_plan(model, plan, point, semantics)
    facts = deployment_facts(deployment)
    memory = agg_memory(facts, deployment, policy, point, plan)
    row = agg_row(facts, deployment, policy, point, plan, mix, genonly, memory, dtpi)
    return AggResult(row, plan, tuple(mix), genonly, memory)


def agg_memory(facts: DeploymentFacts, deployment: Deployment, policy: BackendPolicy, point: AggPoint, plan: AggPlan) -> MemoryVerdict:
    """Peak footprint of the schedule and its verdict: agg_memories of one point."""
    use, oom, kv_oom = agg_memories(facts, deployment, policy, [point], [plan])
    return MemoryVerdict(memory_at(use, 0), bool(oom[0]), bool(kv_oom[0]))


def agg_memories(facts: DeploymentFacts, deployment: Deployment, policy: BackendPolicy, points: Sequence[AggPoint],
                 plans: Sequence[AggPlan]) -> tuple[MemoryUse, np.ndarray, np.ndarray]:  # fmt: skip
    """Peak footprints (a MemoryUse of arrays) of the schedules of many points of one workload
    (b == 1: the larger of the prefill and decode footprints, the prefill one on a tie), with
    their OOM and KV-OOM verdicts. The points share their KV slot length and memory fraction."""
    slots = {p.max_seq_len if p.max_seq_len is not None else p.isl + p.osl for p in points}
    fractions = {p.free_gpu_memory_fraction for p in points}
    if len(slots) != 1 or len(fractions) != 1:
        raise ValueError("agg_memories: the points must share their KV slot length and memory fraction")
    seq, fraction = slots.pop(), fractions.pop()
    b = np.array([p.batch_size for p in points], dtype=np.int64)
    gen = np.array([p.num_gen_requests for p in plans], dtype=np.int64)
    if policy.agg_activation_tokens is not None:
        use = memory_uses(facts, policy, b, seq, np.full(b.shape, policy.agg_activation_tokens, dtype=np.int64), None)
    else:
        budget = np.array([p.ctx_budget for p in plans], dtype=np.int64)
        step = memory_uses(facts, policy, b, seq, np.where(b > 1, gen + budget, budget), np.where(b > 1, gen, 0))
        decode = memory_uses(facts, policy, b, seq, gen, None)
        osl = np.array([p.osl for p in points], dtype=np.int64)
        larger = (b == 1) & (osl > 1) & (decode.total > step.total)
        use = MemoryUse(*(np.where(larger, getattr(decode, f), getattr(step, f)) for f in MEMORY_FIELDS))
    if fraction is None:
        fraction = policy.default_kv_fraction(facts.version, facts.capacity_bytes, deployment.tp, deployment.pp, deployment.attention_dp, static=False)
    oom, kv_oom = verdicts(use, facts, policy, fraction)
    return use, oom, kv_oom


AggColumns = dict  # AGG_COLUMNS -> one value per point: numbers as numpy arrays, text (and None) as lists


def agg_row(facts: DeploymentFacts, deployment, policy, point, plan, mix, genonly, memory: MemoryVerdict, dtpi: float) -> dict:
    """The result row (BaseBackend.run_agg's result_dict plus the step-timing columns): agg_columns
    of the one point, as Python numbers."""
    columns = agg_columns(facts, deployment, policy, [point], [plan], [[c.latency_ms for c in mix]],
                          np.array([genonly.latency_ms]), np.array([memory.use.total]), dtpi)  # fmt: skip
    return {name: values[0].item() if isinstance(values, np.ndarray) else values[0] for name, values in columns.items()}


def agg_columns(facts: DeploymentFacts, deployment: Deployment, policy: BackendPolicy, points: Sequence[AggPoint],
                plans: Sequence[AggPlan], mix_ms: Sequence[Sequence[float]], genonly_ms: np.ndarray, memory_gib: np.ndarray,
                dtpi: float) -> AggColumns:  # fmt: skip
    """The result rows of many operating points of one deployment, as columns. mix_ms[i] prices
    plans[i].mix (ms per step, in order); genonly_ms its decode-only step, memory_gib its footprint.
    BaseBackend.run_agg's formulas, elementwise and summed in its order, so each row equals the
    one-point row bit for bit."""
    n = len(points)
    b, isl, osl, prefix = (np.array([getattr(p, f) for p in points], dtype=np.int64).reshape(n) for f in ("batch_size", "isl", "osl", "prefix"))
    plan = _PlanColumns(plans, mix_ms)
    t = _timing(policy, plan, genonly_ms, facts.num_layers, b, dtpi)
    tp, pp, dp, cp = deployment.tp, deployment.pp, deployment.attention_dp, 1
    with np.errstate(divide="ignore", invalid="ignore"):
        step_tps = np.where((osl > 1) & (t.total_ms > 0), 1000 / t.total_ms * b * (osl - 1), 0.0)
        tokens_s = policy.throughput_cap(step_tps, t.ttft, t.tpot, b, osl) * (pp * dp)
        seq_s = np.where(osl > 1, tokens_s / (osl - 1), 0.0)
        tokens_per_user = np.where((osl > 1) & (t.tpot > 0.0), 1000.0 / t.tpot, 0.0)
    q, zeros = facts.quant, np.zeros(n)

    def same(value) -> np.ndarray | list:
        return [value] * n if value is None or isinstance(value, str) else np.full(n, value)

    return {
        "model": same(deployment.model),
        "isl": isl,
        "osl": osl,
        "prefix": prefix,
        "concurrency": b * pp * dp,
        "request_rate": seq_s,
        "bs": b,
        "global_bs": b * dp,
        "ttft": t.ttft,
        "tpot": t.tpot,
        "request_latency": t.ttft + t.tpot * np.maximum(osl - 1, 0),
        "encoder_latency": zeros,
        "encoder_memory": zeros,
        "seq/s": seq_s,
        "seq/s/gpu": seq_s / pp / tp / dp / cp,
        "tokens/s": tokens_s,
        "tokens/s/gpu": tokens_s / pp / tp / dp / cp,
        "tokens/s/user": tokens_per_user,
        "num_total_gpus": same(tp * pp * dp * cp),
        "tp": same(tp),
        "pp": same(pp),
        "dp": same(dp),
        "moe_tp": same(deployment.moe_tp),
        "moe_ep": same(deployment.moe_ep),
        "cp": same(cp),
        "parallel": same(f"tp{tp}pp{pp}dp{dp}etp{deployment.moe_tp}ep{deployment.moe_ep}"),
        "gemm": same(q.gemm),
        "kvcache": same(q.kvcache),
        "fmha": same(q.fmha),
        "moe": same(q.moe),
        "comm": same(q.comm),
        "memory": np.asarray(memory_gib, dtype=np.float64),
        "balance_score": plan.balance_score,
        "num_ctx_reqs": plan.num_ctx_requests,
        "num_gen_reqs": plan.num_gen_requests,
        "num_tokens": plan.ctx_budget + np.where(b > 1, plan.num_gen_requests, 0),
        "ctx_tokens": plan.ctx_knob,
        "gen_tokens": plan.num_gen_requests,
        "backend": same(deployment.backend.value),
        "version": same(facts.version),
        "system": same(deployment.system),
        "power_w": zeros,
        "mix_step_ms": t.mix_step_ms,
        "genonly_step_ms": np.asarray(genonly_ms, dtype=np.float64),
        "prefill_step_ms": t.prefill_step_ms,
        "num_mix_steps": plan.num_mix_steps,
        "num_genonly_steps": plan.genonly_steps,
        "decode_tokens_per_iteration": np.full(n, dtpi, dtype=np.float64),
    }


class _PlanColumns:
    """Plans (at most two mixed groups each) and their mixed-step prices as columns; an absent
    second group has zero price and counts, which leaves every sum unchanged."""

    def __init__(self, plans: Sequence[AggPlan], mix_ms: Sequence[Sequence[float]]):
        def column(values, dtype) -> np.ndarray:
            return np.array(values, dtype=dtype).reshape(len(plans))

        self.steps_to_finish_ctx = column([p.steps_to_finish_ctx for p in plans], np.float64)
        self.chunks = column([p.chunks for p in plans], np.int64)
        self.genonly_steps = column([p.genonly_steps for p in plans], np.float64)
        self.num_ctx_requests = column([p.num_ctx_requests for p in plans], np.int64)
        self.num_gen_requests = column([p.num_gen_requests for p in plans], np.int64)
        self.ctx_budget = column([p.ctx_budget for p in plans], np.int64)
        self.ctx_knob = column([p.ctx_knob for p in plans], np.int64)
        self.balance_score = column([p.balance_score for p in plans], np.float64)
        self.groups = column([len(p.mix) for p in plans], np.int64)
        if any(len(p.mix) > 2 for p in plans):
            raise ValueError("an agg plan has at most two mixed-step groups")
        padded = [(list(ms) + [0.0, 0.0])[:2] for ms in mix_ms]
        groups = [list(p.mix) + [None] * (2 - len(p.mix)) for p in plans]
        self.mix_ms = np.array(padded, dtype=np.float64).reshape(len(plans), 2)
        self.count = np.array([[g.count if g else 0.0 for g in gs] for gs in groups], dtype=np.float64).reshape(len(plans), 2)
        self.tpot_count = np.array([[g.tpot_count if g else 0.0 for g in gs] for gs in groups], dtype=np.float64).reshape(len(plans), 2)
        self.num_mix_steps = self.count[:, 0] + self.count[:, 1]


@dataclass(frozen=True)
class _Timing:
    ttft: np.ndarray  # ms
    tpot: np.ndarray  # ms per output token
    total_ms: np.ndarray  # one batch's schedule, ms
    mix_step_ms: np.ndarray  # mean mixed step, ms
    prefill_step_ms: np.ndarray  # price of one TTFT chunk, ms


def _timing(policy: BackendPolicy, plan: _PlanColumns, genonly_ms: np.ndarray, num_layers: int, b: np.ndarray, dtpi: float) -> _Timing:
    """TTFT, TPOT and the schedule's total time (BaseBackend.run_agg's formulas, summed in its order), elementwise."""
    (l1, l2), (c1, c2), (t1, t2) = plan.mix_ms.T, plan.count.T, plan.tpot_count.T
    genonly_ms = np.asarray(genonly_ms, dtype=np.float64)
    qf = policy.ttft_queue_factor(b, plan.steps_to_finish_ctx)
    ttft = (l1 * plan.chunks + policy.dispatch_overhead_ms(num_layers)) * qf
    tpot_num = l1 * t1 + l2 * t2 + genonly_ms * plan.genonly_steps
    tpot_den = t1 + t2 + plan.genonly_steps
    total = c1 * l1 + c2 * l2 + plan.genonly_steps * genonly_ms
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(tpot_den > 0, tpot_num / tpot_den / dtpi, 0.0)
        mix_ms = np.where(plan.groups == 1, l1, (l1 * c1 + l2 * c2) / plan.num_mix_steps)
    return _Timing(ttft, tpot, total, mix_ms, l1)


class AggEstimator:
    """Agg estimates of one deployment under one semantics and pricer, memoised per operating point.

    The cache key is (deployment, semantics, pricer, point): every input of the result, the prefix
    and both imbalance scales included, so a reused estimator never returns another point's result."""

    def __init__(self, deployment: Deployment, semantics: Semantics | str = Semantics.UNCACHED, pricer: str = "native"):
        self.deployment = deployment
        self.semantics = Semantics.parse(semantics)
        self.pricer = pricer
        self._results: dict[tuple, AggResult] = {}

    def estimate(self, point: AggPoint) -> AggResult:
        key = (self.deployment, self.semantics, self.pricer, point)
        result = self._results.get(key)
        if result is None:
            result = self._results[key] = run_agg(self.deployment, point, self.semantics, self.pricer)
        return result
