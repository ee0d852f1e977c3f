"""Pricer factory: a deployment bound to its op lists and perf tables, priced natively or by the reference."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from estimator.caching import memo
from estimator.deployment import Deployment, Role
from estimator.errors import InvalidInputError
from estimator.models import PhaseOps, QuantModes, build_dense_ops, infer_quant, resolve_model_config
from estimator.models.config import is_natively_modelled
from estimator.perf.lanes import resolve_lane_order
from estimator.perf.stack import StackTables, load_stack
from estimator.perf.versions import resolve_version
from estimator.pricing.base import OpPrice, Pricer

PRICERS = ("native", "reference", "hybrid")  # hybrid: the reference engine in its HYBRID database mode
AUTO = "auto"  # native for the natively modelled architectures, the reference engine otherwise: every entry point's default


@memo()
def resolve_pricer(kind: str, model: str) -> str:
    """The pricer `kind` stands for on a model: AUTO is native for the natively modelled
    architectures and reference otherwise (UnknownModelError when the model has no config); any
    other kind is itself."""
    if kind != AUTO:
        return kind
    return "native" if is_natively_modelled(model) else "reference"


@dataclass(frozen=True)
class NativeModel:
    """A deployment's native op lists and the tables they are priced against."""

    deployment: Deployment
    version: str  # literal backend version
    tables: StackTables
    quant: QuantModes
    ops: PhaseOps


@memo()
def _lane_orders(system: str, backend: str, version: str) -> dict[str, tuple[str, ...]]:
    return {
        "context": resolve_lane_order(system, backend, version, "context_attention_perf"),
        "generation": resolve_lane_order(system, backend, version, "generation_attention_perf"),
    }


@memo()
def native_model(deployment: Deployment) -> NativeModel:
    """Resolve version, config, quant (CLI path: data-driven fmha, nvfp4 remap) and build the op lists."""
    backend = deployment.backend.value
    version = resolve_version(deployment.system, backend, deployment.version)
    cfg = resolve_model_config(deployment.model)
    tables = load_stack(deployment.system, backend, version)
    pairs = frozenset((k[1], k[2]) for k in tables.context_attention.slices)
    quant = infer_quant(cfg, backend, deployment.quant, pairs, native_fp4=(tables.spec.sm_version or 0) >= 100)
    ops = build_dense_ops(cfg, deployment, quant, _lane_orders(deployment.system, backend, version))
    return NativeModel(deployment, version, tables, quant, ops)


def make_pricer(kind: str, deployment: Deployment) -> Pricer:
    """A pricer of the given kind (one of PRICERS) bound to a deployment (cached per deployment; a
    worker whose GPUs fit in one node shares its agg twin's pricer: its role changes no price)."""
    from estimator.pricing.reference import within_one_node

    if deployment.role is not Role.AGG and within_one_node(deployment):
        deployment = dataclasses.replace(deployment, role=Role.AGG)
    return _bound_pricer(kind, deployment)


@memo()
def _bound_pricer(kind: str, deployment: Deployment) -> Pricer:
    if kind == "native":
        from estimator.pricing.native import NativePricer

        model = native_model(deployment)
        return NativePricer(model.tables, model.ops.context, model.ops.generation)
    if kind in ("reference", "hybrid"):
        from estimator.pricing.reference import ReferencePricer, wide_ep_stand_in

        version = resolve_version(deployment.system, deployment.backend.value, deployment.version)
        return ReferencePricer(wide_ep_stand_in(deployment, version), version, "HYBRID" if kind == "hybrid" else "SILICON")
    raise InvalidInputError(f"unknown pricer {kind!r} (known: {', '.join(PRICERS)})")


def prices_wide_ep(deployment: Deployment) -> bool:
    """Whether the reference pricer prices the deployment's MoE on a resolved cross-node all-to-all
    (its role's phases; a stand-in width where the tables skip its own)."""
    from estimator.pricing.reference import takes_large_ep, wide_ep_stand_in

    version = resolve_version(deployment.system, deployment.backend.value, deployment.version)
    return takes_large_ep(wide_ep_stand_in(deployment, version), version)


def large_ep_note(deployment: Deployment) -> str:
    """How a disaggregated worker's cross-node MoE all-to-all is priced, for a note ("" when there is none to name)."""
    from estimator.pricing.reference import large_ep_note as note

    return note(deployment, resolve_version(deployment.system, deployment.backend.value, deployment.version))


__all__ = ["AUTO", "PRICERS", "NativeModel", "OpPrice", "Pricer", "large_ep_note", "make_pricer", "native_model", "prices_wide_ep", "resolve_pricer"]
