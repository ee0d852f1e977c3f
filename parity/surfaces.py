"""Golden surfaces: what is pinned for each matrix shape, as flat metric records.

Surfaces: static (static context and generation phases), decode (the gen-only step), mixed.<sem>
(the first mixed step of the agg plan), agg.<sem> (the agg result row) and disagg.<sem> (one
prefill worker at batch 1 with one decode worker at the shape's batch), for both semantics, and
closed_loop.steady (the engine-priced steady replay of the uncached agg point).
Every metric name maps to the component it measures, which the change report uses to attribute
a moved record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from estimator.deployment import Deployment
from estimator.pricing import make_pricer
from estimator.scheduler.agg import AggEstimator, AggPoint, AggResult
from estimator.settings import FIELDS as SETTINGS_FIELDS
from estimator.steps import MixedStepCost, Semantics, StepCost, StepModel, decode_step, static_context, static_generation
from parity.goldens import error_record
from parity.matrix import Shape, full_matrix

SEMANTICS = (Semantics.LEGACY, Semantics.UNCACHED)

# metric -> component it measures (anything else is a derived headline figure)
COMPONENTS = {
    "shared_ms": "pass-1 shared non-attention",
    "context_attention_ms": "context attention",
    "decode_attention_ms": "decode attention",
    "generation_attention_ms": "decode attention",
    "static_context_attention_ms": "context attention",
    "static_context_ms": "static context",
    "static_generation_ms": "static generation",
    "genonly_step_ms": "decode step",
    "num_mix_steps": "schedule counts",
    "num_genonly_steps": "schedule counts",
    "num_ctx_reqs": "schedule counts",
    "num_gen_reqs": "schedule counts",
    "ctx_tokens": "schedule counts",
    "queue_factor": "queue factor",
    "decode_tokens_per_iteration": "decode progress (accepted MTP drafts)",
    "memory": "memory",
    **{name: f"engine setting ({name})" for name in SETTINGS_FIELDS},  # the closed-loop records carry the replayed settings
}


def deployment_of(shape: Shape) -> Deployment:
    return Deployment(shape.model, shape.system, shape.backend, version=shape.version, tp=shape.tp, pp=shape.pp, nextn=shape.workload.nextn)


def step_model(shape: Shape) -> StepModel:
    return StepModel(make_pricer("native", deployment_of(shape)), nextn=shape.workload.nextn)


def point_of(shape: Shape) -> AggPoint:
    w = shape.workload
    return AggPoint(isl=w.isl, osl=w.osl, batch_size=w.batch, ctx_tokens=w.ctx_tokens, prefix=w.prefix, nextn_accepted=w.nextn_accepted)


@functools.cache
def _agg(shape: Shape, semantics: Semantics) -> AggResult:
    return AggEstimator(deployment_of(shape), semantics).estimate(point_of(shape))


def _attention(step: StepCost, name: str) -> float:
    return next((op.latency_ms for op in step.ops if op.name == name), 0.0)


def static_surface(shape: Shape, model: StepModel | None = None) -> dict:
    """Static context and generation phases of the shape's batch (model: defaults to the native pricer)."""
    model, w = model or step_model(shape), shape.workload
    ctx = static_context(model, w.batch, w.isl, w.prefix)
    gen = static_generation(model, w.batch, w.isl, w.osl)
    return {
        "static_context_ms": ctx.latency_ms,
        "static_context_attention_ms": _attention(ctx, "context_attention"),
        "static_generation_ms": gen.latency_ms,
        "generation_attention_ms": _attention(gen, "generation_attention"),
    }


def decode_surface(shape: Shape, model: StepModel | None = None) -> dict:
    """The gen-only step at the decode midpoint (model: defaults to the native pricer)."""
    w = shape.workload
    step = decode_step(model or step_model(shape), w.batch, w.isl, w.osl)
    return {"genonly_step_ms": step.latency_ms, "generation_attention_ms": _attention(step, "generation_attention")}


def _mixed_metrics(step: MixedStepCost) -> dict:
    return {
        "mix_step_ms": step.latency_ms,
        "shared_ms": step.shared_ms,
        "context_attention_ms": step.context_attention_ms,
        "decode_attention_ms": step.decode_attention_ms,
    }


def mixed_surface(semantics: Semantics) -> Callable[[Shape], dict]:
    def surface(shape: Shape) -> dict:
        result = _agg(shape, semantics)
        first = result.plan.mix[0].shape
        return _mixed_metrics(result.mix_steps[0]) | {"ctx_tokens": first.ctx_tokens, "decode_requests": first.decode_requests}

    return surface


def agg_surface(semantics: Semantics) -> Callable[[Shape], dict]:
    def surface(shape: Shape) -> dict:
        result = _agg(shape, semantics)
        metrics = _numeric(result.row)
        metrics |= {f"mix0_{k}": v for k, v in _mixed_metrics(result.mix_steps[0]).items() if k != "mix_step_ms"}
        metrics["shared_ms"] = metrics.pop("mix0_shared_ms")
        metrics["context_attention_ms"] = metrics.pop("mix0_context_attention_ms")
        metrics["decode_attention_ms"] = metrics.pop("mix0_decode_attention_ms")
        metrics["oom"] = float(result.memory.oom)
        metrics["kv_oom"] = float(result.memory.kv_oom)
        return metrics

    return surface


def _numeric(row) -> dict:
    return {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def disagg_surface(semantics: Semantics) -> Callable[[Shape], dict]:
    """Single-point disagg: one prefill worker at batch 1 and one decode worker at the shape's batch."""

    def surface(shape: Shape) -> dict:
        from estimator.disagg import DisaggPoint, run_disagg

        w = shape.workload
        point = DisaggPoint(
            isl=w.isl,
            osl=w.osl,
            prefill_batch_size=1,
            prefill_workers=1,
            decode_batch_size=w.batch,
            decode_workers=1,
            prefix=w.prefix,
            nextn_accepted=w.nextn_accepted,
        )
        deployment = deployment_of(shape)
        return _numeric(run_disagg(deployment, deployment, point, semantics).row)

    return surface


def closed_loop_surface(shape: Shape) -> dict:
    """The steady closed-loop replay (engine-priced passes, the backend's default settings) of the
    shape's agg point: its figures and the numeric settings replayed."""
    from estimator.closedloop import ENGINE, agg_run, record, replay_run

    run = agg_run(deployment_of(shape), point_of(shape))
    replayed = replay_run(run)
    return _numeric(record(replayed, run.osl, ENGINE, replayed.protocol, replayed.settings))


SURFACES: dict[str, Callable[[Shape], dict]] = {
    "static": static_surface,
    "decode": decode_surface,
    **{f"mixed.{s.value}": mixed_surface(s) for s in SEMANTICS},
    **{f"agg.{s.value}": agg_surface(s) for s in SEMANTICS},
    **{f"disagg.{s.value}": disagg_surface(s) for s in SEMANTICS},
    "closed_loop.steady": closed_loop_surface,
}


def compute_record(surface: str, shape: Shape) -> dict:
    """The live record of one surface at one shape (an error record when the computation raises)."""
    try:
        return {k: float(v) for k, v in SURFACES[surface](shape).items()}
    except Exception as exc:  # noqa: BLE001 - the outcome class is part of the golden
        return error_record(exc)


@functools.cache
def _shapes_by_id() -> dict[str, Shape]:
    return {s.id: s for s in full_matrix()}


def shape_of_key(key: str) -> Shape:
    """The matrix shape a record key `<surface>|<shape id>` names (KeyError when retired)."""
    return _shapes_by_id()[key.split("|", 1)[1]]
