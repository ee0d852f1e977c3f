"""The deployment constants the scheduler and the memory model read (natively modelled deployments)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from estimator.deployment import Deployment
from estimator.models import QuantModes, resolve_model_config, weight_bytes
from estimator.perf.system_spec import quant_profile
from estimator.pricing import Pricer, make_pricer, native_model


@dataclass(frozen=True)
class DeploymentFacts:
    """What a deployment contributes to a result row besides its step prices."""

    version: str  # literal backend version
    quant: QuantModes  # resolved quant modes (the CLI's estimate path)
    num_layers: int  # decoder layers (vLLM's dispatch overhead is per layer)
    weights_bytes: float  # weights held per GPU (all layers / pp), bytes
    attention_width: int  # num_heads * head_size (the reference's activation width h)
    kv_elements_per_token: int  # ceil(n_kv/tp) * head_size * layers * 2, per GPU
    kv_bytes_per_element: float  # KV-cache dtype width, bytes
    family: str  # reference model family, e.g. "LLAMA"
    tp: int  # tensor parallel size
    nextn: int  # MTP draft depth
    nccl_bytes: int  # NCCL buffers at min(tp, 8) GPUs, bytes
    other_bytes: int  # runtime overheads (CUDA context, cuBLAS), bytes
    capacity_bytes: int  # GPU memory, bytes


@functools.cache
def deployment_facts(deployment: Deployment) -> DeploymentFacts:
    """DeploymentFacts of a natively modelled deployment (cached)."""
    model = native_model(deployment)
    cfg, spec, tp = resolve_model_config(deployment.model), model.tables.spec, deployment.tp
    return DeploymentFacts(
        version=model.version,
        quant=model.quant,
        num_layers=cfg.num_layers,
        weights_bytes=weight_bytes(cfg, deployment, model.quant) / deployment.pp,
        attention_width=cfg.num_heads * cfg.head_size,
        kv_elements_per_token=(cfg.num_kv_heads + tp - 1) // tp * cfg.head_size * cfg.num_layers * 2,
        kv_bytes_per_element=quant_profile("kv", model.quant.kvcache).bytes_per_element,
        family=cfg.family,
        tp=tp,
        nextn=deployment.nextn,
        nccl_bytes=dict(spec.nccl_mem)[min(tp, 8)],
        other_bytes=spec.other_mem,
        capacity_bytes=spec.mem_capacity,
    )


def step_pricer(kind: str, deployment: Deployment) -> Pricer:
    """The pricer a scheduler prices steps with: native, reference, or the SOL roofline."""
    if kind == "sol":
        from estimator.pricing.sol import sol_pricer

        return sol_pricer(deployment)
    return make_pricer(kind, deployment)
