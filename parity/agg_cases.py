"""The reference side of agg parity: aiconfigurator 0.12.0's own run_agg row for a deployment and point.

The model and database are built exactly as `aiconfigurator cli estimate` builds them; a fresh backend
object serves every call (the reference's result cache ignores the prefix).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass

from estimator.deployment import Deployment
from estimator.pricing.reference import _quiet_reference_logs, reference_database
from estimator.scheduler import AggPoint
from parity.stacks import BACKENDS, SYSTEMS

MODELS = ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B", "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B")
TPS = (1, 2, 4, 8)
BATCHES = (1, 16, 256, 7, 64, 2)
WORKLOADS = ((32768, 512), (4096, 64), (2048, 256), (8192, 1024), (1000, 2))  # (isl, osl)
BUDGETS = ("default", "chunked", "over-batch", "multi")  # ctx_tokens: isl, < isl, > b*isl, 2*isl
NEXTNS = (0, 1, 0, 3, 0, 2)


@dataclass(frozen=True)
class AggCase:
    """One parity point: a deployment and an agg operating point."""

    deployment: Deployment
    point: AggPoint
    budget: str  # which BUDGETS entry set ctx_tokens

    @property
    def id(self) -> str:
        d, p = self.deployment, self.point
        return f"{d.model.split('/')[1]}-{d.system}-{d.backend.value}-tp{d.tp}-n{d.nextn}-b{p.batch_size}-{p.isl}x{p.osl}-p{p.prefix}-{self.budget}"


def _ctx_tokens(budget: str, isl: int, batch: int) -> int | None:
    return {"default": None, "chunked": max(isl // 2, 1), "over-batch": (batch + 1) * isl, "multi": 2 * isl}[budget]


def _case(model: str, system: str, backend: str, i: int) -> AggCase:
    """The i-th point of a stack: parameters cycle at co-prime periods so pairs vary together."""
    isl, osl = WORKLOADS[i % len(WORKLOADS)]
    batch, budget, nextn = BATCHES[i % len(BATCHES)], BUDGETS[i % len(BUDGETS)], NEXTNS[(i + 1) % len(NEXTNS)]
    prefix = (0, isl // 4, isl // 2, 0, isl - 1)[(i + 2) % 5]
    tp = TPS[(i + MODELS.index(model)) % len(TPS)]
    deployment = Deployment(model, system, backend, tp=tp, nextn=nextn)
    point = AggPoint(isl, osl, batch, _ctx_tokens(budget, isl, batch), prefix, nextn_accepted=0.7 * nextn)
    return AggCase(deployment, point, budget)


def full_cases(points_per_stack: int = 8) -> list[AggCase]:
    """Every model x system x backend, points_per_stack points each."""
    stacks = itertools.product(MODELS, SYSTEMS, BACKENDS)
    return [_case(m, s, b, i) for k, (m, s, b) in enumerate(stacks) for i in range(k, k + points_per_stack)]


def ci_cases() -> list[AggCase]:
    """A fast subset: the verified Qwen3-32B-FP8 stacks and one stack per other system and model."""
    stacks = [
        ("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang"),
        ("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm"),
        ("Qwen/Qwen3-32B-FP8", "h200_sxm", "trtllm"),
        ("meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm"),
        ("meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm"),
        ("Qwen/Qwen3-32B", "h100_sxm", "sglang"),
    ]
    return [_case(m, s, b, i) for k, (m, s, b) in enumerate(stacks) for i in range(3 * k, 3 * k + 6)]


# MoE / MLA / hybrid-attention deployments (reference-priced): (model, system, backend, tp, attention_dp, moe_tp, moe_ep, nextn)
MOE_DEPLOYMENTS = (
    ("deepseek-ai/DeepSeek-V3", "h200_sxm", "sglang", 8, 1, 1, 8, 0),
    ("deepseek-ai/DeepSeek-V3", "b200_sxm", "trtllm", 1, 8, 1, 8, 1),
    ("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "trtllm", 4, 1, 1, 4, 0),
    ("MiniMaxAI/MiniMax-M2.5", "b200_sxm", "vllm", 4, 1, 1, 4, 0),
    ("Qwen/Qwen3.5-397B-A17B", "b200_sxm", "sglang", 8, 1, 1, 8, 0),
    ("zai-org/GLM-5-FP8", "b200_sxm", "sglang", 8, 1, 1, 8, 0),
    ("openai/gpt-oss-120b", "h200_sxm", "vllm", 1, 1, 1, 1, 0),
)
MOE_POINTS = (AggPoint(4096, 512, 32), AggPoint(1024, 1024, 256, ctx_tokens=8192), AggPoint(8192, 128, 4, prefix=2048))


def moe_cases() -> list[AggCase]:
    """Each MoE deployment at each MOE_POINTS point (MTP rows accept 0.7 of the drafts)."""
    cases = []
    for model, system, backend, tp, dp, moe_tp, moe_ep, nextn in MOE_DEPLOYMENTS:
        deployment = Deployment(model, system, backend, tp=tp, attention_dp=dp, moe_tp=moe_tp, moe_ep=moe_ep, nextn=nextn)
        for point in MOE_POINTS:
            point = dataclasses.replace(point, nextn_accepted=0.7 * nextn)
            cases.append(AggCase(deployment, point, "default" if point.ctx_tokens is None else "multi"))
    return cases


@functools.lru_cache(maxsize=64)
def reference_model(deployment: Deployment, literal_version: str):
    """The reference CLI's model object for a deployment (aiconfigurator.cli.api._run_agg_estimate)."""
    _quiet_reference_logs()
    from aiconfigurator.cli.api import _apply_nextn, _build_model_config, _resolve_moe_parallelism
    from aiconfigurator.sdk.models import get_model, resolve_context_fmha_by_data, resolve_nvfp4_for_system

    q = deployment.quant
    moe_tp, moe_ep = _resolve_moe_parallelism(deployment.tp, deployment.attention_dp, deployment.moe_tp, deployment.moe_ep, model_path=deployment.model)
    config = _build_model_config(
        deployment.tp, deployment.pp, deployment.attention_dp, moe_tp, moe_ep,
        q.gemm, q.kvcache, q.fmha, q.moe, q.comm, forward_model=None, enable_encoder_dp=True, attention_backend=None,
    )  # fmt: skip
    _apply_nextn(config, deployment.nextn)
    database = reference_database(deployment.system, deployment.backend.value, literal_version)
    resolve_context_fmha_by_data(config, deployment.model, database, deployment.backend.value, is_context_role=True)
    resolve_nvfp4_for_system(config, deployment.system, deployment.model, backend_name=deployment.backend.value)
    return get_model(deployment.model, config, deployment.backend.value)


def reference_agg_row(deployment: Deployment, point: AggPoint, literal_version: str) -> dict:
    """aiconfigurator's unrounded run_agg row plus the scheduling record, as the CLI calls it (legacy)."""
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.config import RuntimeConfig

    database = reference_database(deployment.system, deployment.backend.value, literal_version)
    runtime = RuntimeConfig(
        batch_size=point.batch_size,
        isl=point.isl,
        osl=point.osl,
        prefix=point.prefix,
        seq_imbalance_correction_scale=point.seq_imbalance_scale,
        gen_seq_imbalance_correction_scale=point.gen_seq_imbalance_scale,
    )
    summary = get_backend(deployment.backend.value).run_agg(
        reference_model(deployment, literal_version),
        database,
        runtime,
        ctx_tokens=point.ctx_tokens if point.ctx_tokens is not None else point.isl,
        decode_tokens_per_iteration=1.0 + (point.nextn_accepted if deployment.nextn > 0 else 0.0),
        free_gpu_memory_fraction=point.free_gpu_memory_fraction,
        max_seq_len=point.max_seq_len,
    )
    row = dict(summary.get_result_dict())
    sched = summary.get_step_estimates()["scheduling"]
    row.update(
        mix_step_ms=sched["mix_step_latency_ms"],
        genonly_step_ms=sched["genonly_step_latency_ms"],
        prefill_step_ms=sched["mix_step_latency_ms"] / sched["mix_efficiency"],
        num_mix_steps=sched["num_mix_steps"],
        num_genonly_steps=sched["num_genonly_steps"],
        decode_tokens_per_iteration=sched["decode_tokens_per_iteration"],
        oom=summary.check_oom(),
        kv_oom=summary.check_kv_cache_oom(),
    )
    return row
