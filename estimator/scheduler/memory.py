"""Per-GPU memory estimate and the OOM / KV-OOM verdicts.

Mirrors aiconfigurator-core 0.12.0 ``BaseBackend._get_memory_usage`` and
``InferenceSummary.set_memory_and_check_oom`` (legacy-semantics.md 1.7); the per-family parts (KV
bytes per sequence, MoE dispatch workspace) come from the deployment's facts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.scheduler.facts import DeploymentFacts
from estimator.scheduler.policies import BackendPolicy

GIB = 1 << 30


@dataclass(frozen=True)
class MemoryUse:
    """Per-GPU memory footprint, GiB: floats (memory_at), or arrays elementwise (memory_uses)."""

    total: float  # weights + activations + kvcache + nccl + others
    weights: float
    activations: float
    kvcache: float
    nccl: float
    others: float


MEMORY_FIELDS = tuple(MemoryUse.__dataclass_fields__)


def memory_at(uses: MemoryUse, i: int) -> MemoryUse:
    """Point i of a MemoryUse of arrays, as floats."""
    return MemoryUse(*(float(getattr(uses, f)[i]) for f in MEMORY_FIELDS))


@dataclass(frozen=True)
class MemoryVerdict:
    """A footprint and whether it fits."""

    use: MemoryUse
    oom: bool  # total >= GPU capacity
    kv_oom: bool  # KV cache exceeds the backend's KV budget (only checked when not oom)


def memory_uses(
    facts: DeploymentFacts,
    policy: BackendPolicy,
    batch: np.ndarray,
    seq_tokens: int,
    num_tokens: np.ndarray,
    mtp_scaled_tokens: np.ndarray | None,
) -> MemoryUse:
    """Footprints of `batch` KV slots of seq_tokens each and a step of num_tokens tokens, of which
    mtp_scaled_tokens verify nextn+1 tokens (None: all of them), elementwise over int64 arrays of
    batch, num_tokens and mtp_scaled_tokens: a MemoryUse of arrays, GiB."""
    activations = 2 * num_tokens * facts.attention_width * policy.activation_coeff(facts.family, facts.tp)
    activations = np.maximum(activations + facts.moe_workspace_bytes(num_tokens), policy.min_activation_bytes)
    if facts.nextn > 0:
        verify = facts.nextn + 1
        if mtp_scaled_tokens is None:
            activations = activations * verify
        else:
            share = np.minimum(np.maximum(mtp_scaled_tokens, 0), num_tokens)
            with np.errstate(divide="ignore", invalid="ignore"):
                scaled = activations * (num_tokens - share + share * verify) / num_tokens
            activations = np.where(num_tokens > 0, scaled, activations * verify)
    if policy.activation_overhead > 0:
        activations = activations * (1.0 + policy.activation_overhead)
    kvcache = batch * float(facts.kv_bytes_per_sequence(seq_tokens))  # a float: a config's KV bytes per sequence may pass int64
    others = facts.other_bytes * (1.0 + policy.others_overhead) if policy.others_overhead > 0 else facts.other_bytes
    weights, nccl = facts.weights_bytes, facts.nccl_bytes
    return MemoryUse(
        total=(weights + activations + kvcache + nccl + others) / GIB,
        weights=np.full(batch.shape, weights / GIB),
        activations=activations / GIB,
        kvcache=kvcache / GIB,
        nccl=np.full(batch.shape, nccl / GIB),
        others=np.full(batch.shape, others / GIB),
    )


def verdicts(use: MemoryUse, facts: DeploymentFacts, policy: BackendPolicy, kv_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(oom, kv_oom), elementwise over a MemoryUse of arrays (or of floats)."""
    capacity_gib = facts.capacity_bytes / GIB
    oom = np.asarray(use.total) >= capacity_gib
    kv_oom = ~oom & (np.asarray(use.kvcache) > policy.kv_budget(kv_fraction).budget_gib(capacity_gib, np.asarray(use.total) - use.kvcache))
    return oom, kv_oom


def kv_pool_bytes(facts: DeploymentFacts, policy: BackendPolicy, step_tokens: int, free_fraction: float) -> float:
    """The KV-cache pool TensorRT-LLM allocates per GPU, bytes (<= 0: the memory model leaves none):
    free_fraction (``KvCacheConfig.free_gpu_memory_fraction``) of the memory left besides what the
    memory model reserves (weights, the activations of a step of step_tokens tokens, NCCL buffers,
    runtime overheads)."""
    reserve = memory_uses(facts, policy, np.zeros(1, np.int64), 0, np.array([step_tokens], np.int64), None).total[0] * GIB
    return free_fraction * (facts.capacity_bytes - reserve)


def vllm_kv_pool_bytes(facts: DeploymentFacts, utilization: float) -> float:
    """An upper bound on the KV-cache pool vLLM allocates per GPU, bytes (<= 0: none): utilization
    (``--gpu-memory-utilization``) of the GPU's memory less the weights. vLLM's worker
    (``determine_available_memory``) also reserves the profile run's peak activations and the memory
    outside torch; the memory model's estimates of those are not checked against vLLM's profile, and
    where the pool is their small difference they decide it (Kimi-K2.5 NVFP4 on B200 TP 4: 9 GiB left
    after 153 GiB estimated, against runs at C 64 that queue nothing), so the bound leaves them out."""
    return utilization * facts.capacity_bytes - facts.weights_bytes
