"""Static batching: one batch prefilled together, then decoded together (no in-flight batching).

Mirrors aiconfigurator-core 0.12.0 ``BaseBackend.run_static`` (row ``common.ColumnsStatic``) and
the estimate CLI's speculative projection for roles prefill / decode / static
(legacy-semantics.md 3.1 and 1.9), without its final rounding to 3 decimals.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from estimator.deployment import (
    Deployment,
    require_batch_tokens,
    require_fraction,
    require_positive,
    require_slot,
)
from estimator.errors import InvalidInputError
from estimator.pricing import AUTO
from estimator.scheduler.agg import decode_tokens_per_iteration
from estimator.scheduler.facts import DeploymentFacts, deployment_facts, step_pricer
from estimator.scheduler.memory import MemoryVerdict, memory_at, memory_uses, verdicts
from estimator.scheduler.policies import POLICIES
from estimator.steps import DEFAULT_STRIDE, ZERO_STEP, StepCost, StepModel
from estimator.steps.phases import static_context_many, static_generation_many

MAX_DECODE_SAMPLES = 2**18  # decode positions one static batch prices (osl 8M tokens at the default stride)

STATIC_COLUMNS = (
    "model", "isl", "osl", "prefix", "concurrency", "request_rate", "bs", "global_bs", "ttft", "tpot", "seq/s",
    "seq/s/gpu", "tokens/s", "tokens/s/gpu", "tokens/s/user", "request_latency", "encoder_latency",
    "encoder_memory", "context_latency", "generation_latency", "num_total_gpus", "tp", "pp", "dp", "moe_tp",
    "moe_ep", "cp", "parallel", "gemm", "kvcache", "fmha", "moe", "comm", "memory", "backend", "version",
    "system", "power_w",
)  # fmt: skip


class StaticMode(str, enum.Enum):
    """Which phases a static run prices."""

    STATIC = "static"  # prefill then decode
    CONTEXT = "static_ctx"  # prefill only (a disagg prefill worker)
    GENERATION = "static_gen"  # decode only (a disagg decode worker)


@dataclass(frozen=True)
class StaticPoint:
    """One static batch."""

    isl: int  # input length per request, tokens (>= 1)
    osl: int  # output length per request, tokens (>= 1)
    batch_size: int  # requests in the batch (>= 1)
    prefix: int = 0  # cached prefix tokens per request, part of isl
    nextn_accepted: float = 0.0  # accepted draft tokens per decode step (0 <= A <= nextn)
    stride: int = DEFAULT_STRIDE  # static generation prices every stride-th KV position
    free_gpu_memory_fraction: float | None = None  # KV budget fraction; None: the backend's default
    max_seq_len: int | None = None  # KV slot per request, tokens; None: isl + 1 (static_ctx) or isl + osl

    def __post_init__(self) -> None:
        for name in ("isl", "osl", "batch_size", "stride"):
            require_positive(name, getattr(self, name))
        if self.max_seq_len is not None:
            require_positive("max_seq_len", self.max_seq_len)
        require_batch_tokens(self.batch_size, self.isl + self.osl)
        if (self.osl - 1) // self.stride > MAX_DECODE_SAMPLES:
            raise InvalidInputError(f"osl ({self.osl}) over stride ({self.stride}) samples more than the {MAX_DECODE_SAMPLES} decode "
                                    "positions a static batch prices; raise --stride")  # fmt: skip
        require_fraction("free_gpu_memory_fraction", self.free_gpu_memory_fraction)
        if not 0 <= self.prefix < self.isl:
            raise InvalidInputError(f"prefix ({self.prefix}) must be within [0, isl ({self.isl}))")


@dataclass(frozen=True)
class StaticResult:
    """A static estimate: the row plus its two phases (each summed over the whole phase)."""

    row: Mapping[str, object]  # STATIC_COLUMNS -> unrounded value
    context: StepCost  # the batch's prefill, ms per op (ZERO_STEP for static_gen)
    generation: StepCost  # all osl-1 decode steps, ms per op (ZERO_STEP for static_ctx)
    memory: MemoryVerdict


def run_static(deployment: Deployment, point: StaticPoint, mode: StaticMode | str = StaticMode.STATIC, pricer: str = AUTO) -> StaticResult:
    """Estimate one static batch (BaseBackend.run_static, then the speculative projection)."""
    return run_static_batches(deployment, point, (point.batch_size,), mode, pricer)[0]


def run_static_batches(deployment: Deployment, point: StaticPoint, batches: Sequence[int], mode: StaticMode | str = StaticMode.STATIC,
                       pricer: str = AUTO) -> list[StaticResult]:  # fmt: skip
    """run_static of `point` at every batch size, each phase priced for all of them in one call
    (a perf-data miss at any batch raises PerfDataMissingError)."""
    mode = StaticMode(mode)
    prefill_only = mode is StaticMode.CONTEXT
    require_slot("max_seq_len", point.max_seq_len, point.isl + (1 if prefill_only else point.osl), "isl + 1" if prefill_only else "isl + osl")
    progress = decode_tokens_per_iteration(deployment.nextn, point.nextn_accepted)
    model = StepModel(step_pricer(pricer, deployment), deployment.nextn)
    n = len(batches)
    contexts = [ZERO_STEP] * n if mode is StaticMode.GENERATION else static_context_many(model, batches, point.isl, point.prefix)
    generations = [ZERO_STEP] * n if mode is StaticMode.CONTEXT else static_generation_many(model, batches, point.isl, point.osl, point.stride)
    facts = deployment_facts(deployment)
    results = []
    for b, context, generation, memory in zip(batches, contexts, generations, static_memories(facts, deployment, point, batches, mode)):
        at_batch = dataclasses.replace(point, batch_size=b)
        row = static_row(facts, deployment, at_batch, mode, context.latency_ms, generation.latency_ms, memory)
        if mode is not StaticMode.CONTEXT and progress > 1.0:
            row = project_speculative(row, progress, mode)
        results.append(StaticResult(row, context, generation, memory))
    return results


def static_memories(facts: DeploymentFacts, deployment: Deployment, point: StaticPoint, batches: Sequence[int],
                    mode: StaticMode) -> list[MemoryVerdict]:  # fmt: skip
    """Footprint per mode at every batch size, in one elementwise pass: prefill tokens (no MTP
    share) for static / static_ctx, one token per request (full MTP multiplier) for static_gen;
    each request holds max_seq_len KV tokens (default isl+1 for static_ctx, isl+osl otherwise)."""
    policy, b = POLICIES[deployment.backend], np.array(batches, dtype=np.int64).reshape(len(batches))
    default_slot = point.isl + 1 if mode is StaticMode.CONTEXT else point.isl + point.osl
    slot = point.max_seq_len if point.max_seq_len is not None else default_slot
    if mode is StaticMode.GENERATION:
        uses = memory_uses(facts, policy, b, slot, b, None)
    else:
        uses = memory_uses(facts, policy, b, slot, (point.isl - point.prefix) * b, np.zeros_like(b))
    fraction = point.free_gpu_memory_fraction
    if fraction is None:
        fraction = policy.default_kv_fraction(facts.version, facts.capacity_bytes, deployment.tp, deployment.pp, deployment.attention_dp, static=True)
    oom, kv_oom = verdicts(uses, facts, policy, fraction)
    return [MemoryVerdict(memory_at(uses, i), bool(oom[i]), bool(kv_oom[i])) for i in range(len(batches))]


def static_row(
    facts: DeploymentFacts, deployment: Deployment, point: StaticPoint, mode: StaticMode, context_ms: float, generation_ms: float, memory: MemoryVerdict
) -> dict:
    """BaseBackend.run_static's row."""
    b, osl = point.batch_size, point.osl
    tp, pp, dp = deployment.tp, deployment.pp, deployment.attention_dp
    tpot = 0.0 if osl <= 1 else generation_ms / (osl - 1)
    request_latency = context_ms + tpot * max(osl - 1, 0)
    if request_latency == 0.0:
        request_latency = context_ms + generation_ms
    seq_s = 0.0 if request_latency == 0.0 else b * dp / request_latency * 1000 * pp
    tokens_per_request = {StaticMode.STATIC: osl, StaticMode.GENERATION: osl - 1, StaticMode.CONTEXT: 1}[mode]
    tokens_s = seq_s * tokens_per_request
    q = facts.quant
    return {
        "model": deployment.model, "isl": point.isl, "osl": osl, "prefix": point.prefix, "concurrency": b * dp,
        "request_rate": 0.0, "bs": b, "global_bs": b * dp, "ttft": context_ms, "tpot": tpot, "seq/s": seq_s,
        "seq/s/gpu": seq_s / tp / pp / dp, "tokens/s": tokens_s, "tokens/s/gpu": tokens_s / tp / pp / dp,
        "tokens/s/user": 0.0 if tpot == 0.0 else 1000.0 / tpot, "request_latency": request_latency,
        "encoder_latency": 0.0, "encoder_memory": 0.0, "context_latency": context_ms,
        "generation_latency": generation_ms, "num_total_gpus": tp * pp * dp, "tp": tp, "pp": pp, "dp": dp,
        "moe_tp": deployment.moe_tp, "moe_ep": deployment.moe_ep, "cp": 1,
        "parallel": f"tp{tp}pp{pp}dp{dp}etp{deployment.moe_tp}ep{deployment.moe_ep}", "gemm": q.gemm,
        "kvcache": q.kvcache, "fmha": q.fmha, "moe": q.moe, "comm": q.comm, "memory": memory.use.total,
        "backend": deployment.backend.value, "version": facts.version, "system": deployment.system, "power_w": 0.0,
    }  # fmt: skip


def project_speculative(row: dict, progress: float, mode: StaticMode) -> dict:
    """SpeculativeDecodingProfile.project_summary for roles decode / static: decode time per token
    divided by the progress, throughput scaled by it (static: by the request-latency ratio)."""
    out = dict(row)
    out["tpot"] = row["tpot"] / progress
    out["generation_latency"] = row["generation_latency"] / progress
    out["request_latency"] = out["ttft"] + out["tpot"] * max(row["osl"] - 1, 0)
    ratio = progress
    if mode is StaticMode.STATIC:
        ratio = row["request_latency"] / out["request_latency"] if out["request_latency"] else 1.0
    for column in ("request_rate", "seq/s", "seq/s/gpu", "tokens/s", "tokens/s/gpu"):
        out[column] = row[column] * ratio
    out["tokens/s/user"] = row["tokens/s/user"] * progress
    return out
