"""Per-GPU memory estimate and the OOM / KV-OOM verdicts.

Mirrors aiconfigurator-core 0.12.0 ``BaseBackend._get_memory_usage`` and
``InferenceSummary.set_memory_and_check_oom`` (legacy-semantics.md 1.7); the per-family parts (KV
bytes per sequence, MoE dispatch workspace) come from the deployment's facts.
"""
from __future__ import annotations

from dataclasses import dataclass

from estimator.scheduler.facts import DeploymentFacts
from estimator.scheduler.policies import BackendPolicy

GIB = 1 << 30


@dataclass(frozen=True)
class MemoryUse:
    """Per-GPU memory footprint, GiB."""

    total: float  # weights + activations + kvcache + nccl + others
    weights: float
    activations: float
    kvcache: float
    nccl: float
    others: float


@dataclass(frozen=True)
class MemoryVerdict:
    """A footprint and whether it fits."""

    use: MemoryUse
    oom: bool  # total >= GPU capacity
    kv_oom: bool  # KV cache exceeds the backend's KV budget (only checked when not oom)


def memory_use(
    facts: DeploymentFacts,
    policy: BackendPolicy,
    batch: int,
    seq_tokens: int,
    num_tokens: int,
    mtp_scaled_tokens: int | None,
) -> MemoryUse:
    """Footprint of `batch` KV slots of seq_tokens each and a step of num_tokens tokens, of which
    mtp_scaled_tokens verify nextn+1 tokens (None: all of them)."""
    activations = 2 * num_tokens * facts.attention_width * policy.activation_coeff(facts.family, facts.tp)
    activations += facts.moe_workspace_bytes(num_tokens)
    activations = max(activations, policy.min_activation_bytes)
    if facts.nextn > 0:
        if mtp_scaled_tokens is not None and num_tokens > 0:
            share = min(max(mtp_scaled_tokens, 0), num_tokens)
            activations = activations * (num_tokens - share + share * (facts.nextn + 1)) / num_tokens
        else:
            activations = activations * (facts.nextn + 1)
    if policy.activation_overhead > 0:
        activations *= 1.0 + policy.activation_overhead
    kvcache = batch * facts.kv_bytes_per_sequence(seq_tokens)
    others = facts.other_bytes * (1.0 + policy.others_overhead) if policy.others_overhead > 0 else facts.other_bytes
    weights, nccl = facts.weights_bytes, facts.nccl_bytes
    return MemoryUse(
        total=(weights + activations + kvcache + nccl + others) / GIB,
        weights=weights / GIB,
        activations=activations / GIB,
        kvcache=kvcache / GIB,
        nccl=nccl / GIB,
        others=others / GIB,
    )


def verdict(use: MemoryUse, facts: DeploymentFacts, policy: BackendPolicy, kv_fraction: float) -> MemoryVerdict:
    """OOM when the total reaches capacity; else KV-OOM when the KV cache exceeds the KV budget."""
    capacity_gib = facts.capacity_bytes / GIB
    oom = use.total >= capacity_gib
    kv_oom = not oom and use.kvcache > policy.kv_budget(kv_fraction).budget_gib(capacity_gib, use.total - use.kvcache)
    return MemoryVerdict(use, oom, kv_oom)
