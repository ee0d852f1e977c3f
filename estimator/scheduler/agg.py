"""The agg (continuous batching) scheduler: one (batch, prefill budget) operating point, closed form.

Legacy reproduces aiconfigurator 0.12.0 ``BaseBackend.run_agg`` (legacy-semantics.md section 1);
uncached (the default) counts only uncached prompt tokens against the budget
(uncached-budget.md section 3). Both price their steps through estimator.steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from estimator.deployment import MAX_SIZE, Deployment, require_batch_tokens, require_fraction, require_positive, require_slot
from estimator.errors import InvalidInputError
from estimator.pricing import AUTO
from estimator.scheduler.facts import DeploymentFacts, deployment_facts, step_pricer
from estimator.scheduler.memory import MEMORY_FIELDS, MemoryUse, MemoryVerdict, memory_at, memory_uses, verdicts
from estimator.scheduler.plan import AggPlan, AggPlans, point_plans
from estimator.scheduler.policies import POLICIES, BackendPolicy
from estimator.steps import (
    MixedStepCost,
    Semantics,
    StepCost,
    StepModel,
    decode_step,
    mixed_steps,
)

if TYPE_CHECKING:  # a sweep's workload sizes KV slots as a point does (no runtime import: sweep imports scheduler)
    from estimator.sweep.sla import Workload

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
            if value is not None and (type(value) is not int or not 1 <= value <= MAX_SIZE):  # the grid's hot path: plain ints
                require_positive(name, value)
        require_batch_tokens(self.batch_size, self.isl + self.osl)
        require_slot("max_seq_len", self.max_seq_len, self.isl + self.osl)
        require_fraction("free_gpu_memory_fraction", self.free_gpu_memory_fraction)
        if type(self.prefix) is not int:
            object.__setattr__(self, "prefix", int(self.prefix or 0))
        if self.prefix < 0:
            raise InvalidInputError(f"prefix must be >= 0, got {self.prefix}")


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


def price_plan(model: StepModel, plan: AggPlan, point: AggPoint, semantics: Semantics) -> tuple[list[MixedStepCost], StepCost]:
    """The plan's mixed steps (one batched pass) and its decode-only step."""
    mix = mixed_steps(model, [g.shape for g in plan.mix], semantics)
    return mix, decode_step(model, plan.genonly_requests, point.isl, point.osl)


def run_agg(
    deployment: Deployment,
    point: AggPoint,
    semantics: Semantics | str = Semantics.UNCACHED,
    pricer: str = AUTO,
) -> AggResult:
    """Estimate one agg operating point (BaseBackend.run_agg with the CLI's explicit MTP progress)."""
    semantics = Semantics.parse(semantics)
    if point.prefix >= point.isl:
        raise InvalidInputError(f"prefix ({point.prefix}) must be smaller than the effective isl ({point.isl}) for an agg run")
    policy = POLICIES[deployment.backend]
    dtpi = decode_tokens_per_iteration(deployment.nextn, point.nextn_accepted)
    plans = point_plans(policy, point, semantics, dtpi)
    plan = plans.plan(0)
    model = StepModel(step_pricer(pricer, deployment), deployment.nextn, point.seq_imbalance_scale, point.gen_seq_imbalance_scale)
    mix, genonly = price_plan(model, plan, point, semantics)
    facts = deployment_facts(deployment)
    use, oom, kv_oom = agg_memories(facts, deployment, policy, plans, kv_slot(point), point.free_gpu_memory_fraction)
    memory = MemoryVerdict(memory_at(use, 0), bool(oom[0]), bool(kv_oom[0]))
    columns = agg_columns(facts, deployment, policy, plans, plans.group_prices([c.latency_ms for c in mix]), np.array([genonly.latency_ms]), use.total)
    row = {name: values[0].item() if isinstance(values, np.ndarray) else values[0] for name, values in columns.items()}
    return AggResult(row, plan, tuple(mix), genonly, memory)


def kv_slot(point: AggPoint | Workload) -> int:
    """KV tokens each request holds: max_seq_len, else isl + osl (of a point or a sweep's workload)."""
    return point.max_seq_len if point.max_seq_len is not None else point.isl + point.osl


def agg_memories(facts: DeploymentFacts, deployment: Deployment, policy: BackendPolicy, plans: AggPlans, slot: int,
                 fraction: float | None) -> tuple[MemoryUse, np.ndarray, np.ndarray]:  # fmt: skip
    """Peak footprints (a MemoryUse of arrays) of many schedules of one workload, each request
    holding `slot` KV tokens, with their OOM and KV-OOM verdicts at the KV budget `fraction`
    (None: the backend's default). b == 1: the larger of the prefill and decode footprints (the
    prefill one on a tie)."""
    b, gen = plans.batch, plans.num_gen_requests
    if policy.agg_activation_tokens is not None:
        use = memory_uses(facts, policy, b, slot, np.full(b.shape, policy.agg_activation_tokens, dtype=np.int64), None)
    else:
        budget = plans.ctx_budget
        step = memory_uses(facts, policy, b, slot, np.where(b > 1, gen + budget, budget), np.where(b > 1, gen, 0))
        decode = memory_uses(facts, policy, b, slot, gen, None)
        larger = (b == 1) & (plans.osl > 1) & (decode.total > step.total)
        use = MemoryUse(*(np.where(larger, getattr(decode, f), getattr(step, f)) for f in MEMORY_FIELDS))
    if fraction is None:
        fraction = policy.default_kv_fraction(facts.version, facts.capacity_bytes, deployment.tp, deployment.pp, deployment.attention_dp, static=False)
    oom, kv_oom = verdicts(use, facts, policy, fraction)
    return use, oom, kv_oom


AggColumns = dict  # AGG_COLUMNS -> one value per point: numbers as numpy arrays, text (and None) as lists


def agg_columns(facts: DeploymentFacts, deployment: Deployment, policy: BackendPolicy, plans: AggPlans, mix_ms: np.ndarray,
                genonly_ms: np.ndarray, memory_gib: np.ndarray) -> AggColumns:  # fmt: skip
    """The result rows (BaseBackend.run_agg's result_dict plus the step-timing columns) of many
    schedules of one deployment, as columns. mix_ms[i, g] prices schedule i's mixed group g (ms per
    step; 0 for an absent group), genonly_ms[i] its decode-only step, memory_gib[i] its footprint.
    run_agg's formulas, elementwise and summed in its order, so each row equals the one-point row
    bit for bit."""
    n, b, osl, dtpi = len(plans), plans.batch, plans.osl, plans.decode_tokens_per_iteration
    t = _timing(policy, plans, np.asarray(mix_ms, dtype=np.float64), np.asarray(genonly_ms, dtype=np.float64), facts.num_layers)
    tp, pp, dp, cp = deployment.tp, deployment.pp, deployment.attention_dp, 1
    with np.errstate(divide="ignore", invalid="ignore"):
        step_tps = np.where((osl > 1) & (t.total_ms > 0), 1000 / t.total_ms * b * (osl - 1), 0.0)
        tokens_s = policy.throughput_cap(step_tps, t.ttft, t.tpot, b, osl) * (pp * dp)
        seq_s = tokens_s / (osl - 1) if osl > 1 else np.zeros(n)
        tokens_per_user = np.where((osl > 1) & (t.tpot > 0.0), 1000.0 / t.tpot, 0.0)
    q, zeros = facts.quant, np.zeros(n)

    def same(value) -> np.ndarray | list:
        return [value] * n if value is None or isinstance(value, str) else np.full(n, value)

    return {
        "model": same(deployment.model),
        "isl": same(plans.isl),
        "osl": same(osl),
        "prefix": same(plans.prefix),
        "concurrency": b * pp * dp,
        "request_rate": seq_s,
        "bs": b,
        "global_bs": b * dp,
        "ttft": t.ttft,
        "tpot": t.tpot,
        "request_latency": t.ttft + t.tpot * max(osl - 1, 0),
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
        "balance_score": plans.balance_score,
        "num_ctx_reqs": plans.num_ctx_requests,
        "num_gen_reqs": plans.num_gen_requests,
        "num_tokens": plans.ctx_budget + np.where(b > 1, plans.num_gen_requests, 0),
        "ctx_tokens": plans.ctx_knob,
        "gen_tokens": plans.num_gen_requests,
        "backend": same(deployment.backend.value),
        "version": same(facts.version),
        "system": same(deployment.system),
        "power_w": zeros,
        "mix_step_ms": t.mix_step_ms,
        "genonly_step_ms": np.asarray(genonly_ms, dtype=np.float64),
        "prefill_step_ms": t.prefill_step_ms,
        "num_mix_steps": plans.num_mix_steps,
        "num_genonly_steps": plans.genonly_steps,
        "decode_tokens_per_iteration": same(float(dtpi)),
    }


@dataclass(frozen=True)
class _Timing:
    ttft: np.ndarray  # ms
    tpot: np.ndarray  # ms per output token
    total_ms: np.ndarray  # one batch's schedule, ms
    mix_step_ms: np.ndarray  # mean mixed step, ms
    prefill_step_ms: np.ndarray  # price of one TTFT chunk, ms


def _timing(policy: BackendPolicy, plans: AggPlans, mix_ms: np.ndarray, genonly_ms: np.ndarray, num_layers: int) -> _Timing:
    """TTFT, TPOT and the schedule's total time (BaseBackend.run_agg's formulas, summed in its order), elementwise."""
    (l1, l2), (c1, c2), (t1, t2) = mix_ms.T, plans.mix_count.T, plans.mix_tpot_count.T
    qf = policy.ttft_queue_factor(plans.batch, plans.steps_to_finish_ctx)
    ttft = (l1 * plans.chunks + policy.dispatch_overhead_ms(num_layers)) * qf
    tpot_num = l1 * t1 + l2 * t2 + genonly_ms * plans.genonly_steps
    tpot_den = t1 + t2 + plans.genonly_steps
    total = c1 * l1 + c2 * l2 + plans.genonly_steps * genonly_ms
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(tpot_den > 0, tpot_num / tpot_den / plans.decode_tokens_per_iteration, 0.0)
        mix_ms = np.where(plans.groups == 1, l1, (l1 * c1 + l2 * c2) / plans.num_mix_steps)
    return _Timing(ttft, tpot, total, mix_ms, l1)


class AggEstimator:
    """Agg estimates of one deployment under one semantics and pricer, memoised per operating point.

    The cache key is (deployment, semantics, pricer, point): every input of the result, the prefix
    and both imbalance scales included, so a reused estimator never returns another point's result."""

    def __init__(self, deployment: Deployment, semantics: Semantics | str = Semantics.UNCACHED, pricer: str = AUTO):
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
