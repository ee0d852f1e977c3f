"""The deployment constants the scheduler and the memory model read.

Natively modelled (dense) deployments derive them from the bundled config; every other architecture
(MoE, MLA, hybrid attention) reads them off the reference's own model object, so that the memory
model follows the reference's per-family accounting (``BaseBackend._get_memory_usage``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from estimator.caching import memo
from estimator.deployment import Deployment
from estimator.models import QuantModes, resolve_model_config, weight_bytes
from estimator.models.config import is_natively_modelled, require_pipeline_fits
from estimator.perf.system_spec import SystemSpec, load_system_spec, quant_profile
from estimator.perf.versions import resolve_version
from estimator.pricing import Pricer, make_pricer, native_model, resolve_pricer
from estimator.scheduler.policies import POLICIES

# Families whose MoE block-scale dispatch workspace is added to the activations (MOE_WORKSPACE_FAMILIES).
MOE_WORKSPACE_FAMILIES = frozenset({"GEMMA4MIX", "STEP3P7", "DEEPSEEK", "DEEPSEEKV32", "DEEPSEEKV4", "KIMIK25"})
MOE_WORKSPACE_BLOCK = 128  # block-scale granularity, elements
MOE_WORKSPACE_SCALE_BYTES = 4  # one float scale per block


@dataclass(frozen=True)
class LinearKv:
    """KV bytes of one sequence that grow linearly with its length (the base model's accounting)."""

    bytes_per_element: float  # KV-cache dtype width, bytes
    elements_per_token: int  # ceil(n_kv/tp) * head_size * layers * 2, per GPU

    def __call__(self, seq_tokens: int) -> float:
        return max(0, seq_tokens) * self.bytes_per_element * self.elements_per_token


@dataclass(frozen=True)
class DeploymentFacts:
    """What a deployment contributes to a result row besides its step prices."""

    version: str  # literal backend version
    quant: QuantModes  # resolved quant modes (the CLI's estimate path)
    num_layers: int  # decoder layers (vLLM's dispatch overhead is per layer)
    weights_bytes: float  # weights held per GPU (all layers / pp), bytes
    attention_width: int  # num_heads * head_size (the reference's activation width h)
    kv_bytes_per_sequence: Callable[[int], float]  # KV bytes one sequence of n tokens holds per GPU
    moe_workspace_elements: int  # width * attention_dp * experts * topk of the MoE dispatch workspace (0: none)
    moe_ep: int  # MoE expert parallel size (divides the workspace)
    num_experts: int  # routed experts per MoE layer (0: a dense model)
    family: str  # reference model family, e.g. "LLAMA"
    tp: int  # tensor parallel size
    nextn: int  # MTP draft depth
    nccl_bytes: int  # NCCL buffers at min(tp, 8) GPUs, bytes
    other_bytes: int  # runtime overheads (CUDA context, cuBLAS), bytes
    capacity_bytes: int  # GPU memory, bytes

    def moe_workspace_bytes(self, num_tokens: int) -> float:
        """MoE block-scale dispatch workspace of a step of num_tokens tokens, bytes."""
        if not self.moe_workspace_elements:
            return 0.0
        return num_tokens * self.moe_workspace_elements / self.moe_ep / MOE_WORKSPACE_BLOCK * MOE_WORKSPACE_SCALE_BYTES


@memo()
def deployment_facts(deployment: Deployment) -> DeploymentFacts:
    """DeploymentFacts of a deployment (cached): native for the dense families, else the reference's model.
    InvalidInputError for more pipeline stages than the model has decoder layers (a stage holds at least one)."""
    facts = native_facts(deployment) if is_natively_modelled(deployment.model) else reference_facts(deployment)
    require_pipeline_fits(deployment.model, deployment.pp, facts.num_layers)
    return facts


def native_facts(deployment: Deployment) -> DeploymentFacts:
    """DeploymentFacts of a natively modelled deployment."""
    model = native_model(deployment)
    cfg, tp = resolve_model_config(deployment.model), deployment.tp
    kv_elements = (cfg.num_kv_heads + tp - 1) // tp * cfg.head_size * cfg.num_layers * 2
    return DeploymentFacts(
        version=model.version,
        quant=model.quant,
        num_layers=cfg.num_layers,
        weights_bytes=weight_bytes(cfg, deployment, model.quant) / deployment.pp,
        attention_width=cfg.num_heads * cfg.head_size,
        kv_bytes_per_sequence=LinearKv(quant_profile("kv", model.quant.kvcache).bytes_per_element, kv_elements),
        moe_workspace_elements=0,
        moe_ep=1,
        num_experts=0,
        family=cfg.family,
        tp=tp,
        nextn=deployment.nextn,
        **_system_facts(model.tables.spec, tp),
    )


def reference_facts(deployment: Deployment) -> DeploymentFacts:
    """DeploymentFacts read off the reference's model object (any architecture the reference models)."""
    from estimator.pricing.reference import reference_model

    version = resolve_version(deployment.system, deployment.backend.value, deployment.version)
    model = reference_model(deployment, version)
    c, family = model.config, model.model_family
    attention_width = model._num_heads * model._head_size
    workspace = 0
    if family in MOE_WORKSPACE_FAMILIES and model._num_experts:
        width = POLICIES[deployment.backend].moe_workspace_width(family, attention_width, getattr(model, "_hidden_size", attention_width))
        workspace = width * c.attention_dp_size * model._num_experts * model._topk
    return DeploymentFacts(
        version=version,
        quant=QuantModes(
            gemm=c.gemm_quant_mode.name,
            moe=c.moe_quant_mode.name,
            kvcache=c.kvcache_quant_mode.name,
            fmha=c.fmha_quant_mode.name,
            comm=c.comm_quant_mode.name,
        ),  # fmt: skip
        num_layers=model._num_layers,
        weights_bytes=sum(op.get_weights() for op in model.context_ops) / c.pp_size,
        attention_width=attention_width,
        kv_bytes_per_sequence=model.get_kvcache_bytes_per_sequence,
        moe_workspace_elements=workspace,
        moe_ep=c.moe_ep_size or 1,
        num_experts=int(getattr(model, "_num_experts", 0) or 0),
        family=family,
        tp=deployment.tp,
        nextn=deployment.nextn,
        **_system_facts(load_system_spec(deployment.system), deployment.tp),
    )


def _system_facts(spec: SystemSpec, tp: int) -> dict:
    return {"nccl_bytes": dict(spec.nccl_mem)[min(tp, 8)], "other_bytes": spec.other_mem, "capacity_bytes": spec.mem_capacity}


def step_pricer(kind: str, deployment: Deployment) -> Pricer:
    """The pricer a scheduler prices steps with: native, reference, hybrid, auto (resolve_pricer), or
    the SOL roofline."""
    if kind == "sol":
        from estimator.pricing.sol import sol_pricer

        return sol_pricer(deployment)
    return make_pricer(resolve_pricer(kind, deployment.model), deployment)
