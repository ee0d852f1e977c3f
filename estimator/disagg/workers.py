"""Disagg worker rows: one static batch per role, with the reference's latency corrections.

A prefill worker is a static_ctx batch of `bs` prompts, a decode worker a static_gen batch of `bs`
sequences (aiconfigurator 0.12.0 ``predict_disagg_worker``; legacy-semantics.md 3.1 and 3.2). Every
op latency is multiplied by the role's correction before the phase is summed. Legacy mode rounds
the row to 3 decimals before the decode speculative projection and again after it, as the
reference's summary DataFrames do; uncached mode never rounds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from estimator.deployment import Deployment, Role
from estimator.errors import InvalidInputError
from estimator.pricing import AUTO
from estimator.scheduler import StaticMode, StaticPoint
from estimator.scheduler.agg import decode_tokens_per_iteration
from estimator.scheduler.facts import deployment_facts
from estimator.scheduler.memory import MemoryVerdict
from estimator.scheduler.static import project_speculative, run_static_batches, static_row
from estimator.steps import Semantics, StepCost

LEGACY_DECIMALS = 3  # the reference rounds every summary DataFrame to 3 decimals


STATIC_MODES = {Role.PREFILL: StaticMode.CONTEXT, Role.DECODE: StaticMode.GENERATION}  # the static phase a disagg worker runs
DISAGG_ROLES = tuple(STATIC_MODES)  # the workers of a disagg deployment, prefill first


@dataclass(frozen=True)
class Calibration:
    """The reference's disagg constants (aiconfigurator Task defaults); every factor is > 0."""

    prefill_correction: float = 1.1  # multiplies every prefill op latency
    decode_correction: float = 1.08  # multiplies every decode op latency
    ttft_factor: float = 1.8  # prefill TTFT queueing pre-correction (_AUTOSCALE_TTFT_CORRECTION_FACTOR)
    prefill_degradation: float = 0.9  # share of the prefill pool's rate kept under rate matching
    decode_degradation: float = 0.92  # share of the decode pool's rate kept under rate matching

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not (math.isfinite(value) and value > 0):
                raise InvalidInputError(f"{field.name} must be a positive number, got {value!r}")

    def correction(self, role: Role) -> float:
        return self.prefill_correction if role is Role.PREFILL else self.decode_correction


@dataclass(frozen=True)
class WorkerRow:
    """One priced worker candidate."""

    deployment: Deployment  # the worker's deployment (its parallel layout)
    role: Role
    row: Mapping[str, object]  # STATIC_COLUMNS -> value, corrected (3-decimal rounded in legacy mode)
    phase: StepCost  # the priced phase before the correction, ms per op
    memory: MemoryVerdict
    decode_tokens_per_iteration: float = 1.0  # output tokens one decode iteration commits (1 for a prefill worker; 1 + accepted drafts)

    @property
    def fits(self) -> bool:
        """Neither OOM nor KV-OOM: the worker can hold its batch."""
        return not (self.memory.oom or self.memory.kv_oom)


def round_decimals(value: float, decimals: int = LEGACY_DECIMALS) -> float:
    """numpy's round of one float (scale, round half to even, unscale), as DataFrame.round does it."""
    if not math.isfinite(value):
        return value
    scale = 10.0**decimals
    scaled = value * scale
    return (float(round(scaled)) or math.copysign(0.0, scaled)) / scale


def round_row(row: Mapping[str, object], decimals: int = LEGACY_DECIMALS) -> dict:
    """DataFrame.round on one row: floats rounded (round_decimals), everything else kept."""
    return {k: round_decimals(v, decimals) if isinstance(v, float) else v for k, v in row.items()}


def corrected_ms(step: StepCost, correction: float) -> float:
    """A phase total with every op latency corrected first (the reference's per-op fold)."""
    total = 0.0
    for op in step.ops:
        total += op.latency_ms * correction
    return total


def worker_row(
    deployment: Deployment,
    point: StaticPoint,
    role: Role,
    semantics: Semantics = Semantics.UNCACHED,
    calibration: Calibration = Calibration(),
    pricer: str = AUTO,
) -> WorkerRow:
    """The worker row of one role at one batch (point.batch_size requests per attention-DP rank)."""
    return worker_rows(deployment, point, (point.batch_size,), role, semantics, calibration, pricer)[0]


def worker_rows(
    deployment: Deployment,
    point: StaticPoint,
    batches: Sequence[int],
    role: Role,
    semantics: Semantics = Semantics.UNCACHED,
    calibration: Calibration = Calibration(),
    pricer: str = AUTO,
) -> list[WorkerRow]:
    """worker_row at every batch size, the role's phase priced for all of them in one call (a
    perf-data miss at any batch raises PerfDataMissingError)."""
    legacy = Semantics.parse(semantics) is Semantics.LEGACY
    deployment = dataclasses.replace(deployment, role=role)  # prices the role's cross-node MoE all-to-all
    progress = decode_tokens_per_iteration(deployment.nextn, point.nextn_accepted)
    facts = deployment_facts(deployment)
    rows = []
    for b, raw in zip(batches, run_static_batches(deployment, dataclasses.replace(point, nextn_accepted=0.0), batches, STATIC_MODES[role], pricer)):
        at_batch = dataclasses.replace(point, batch_size=b)
        phase = raw.context if role is Role.PREFILL else raw.generation
        ms = corrected_ms(phase, calibration.correction(role))
        context_ms, generation_ms = (ms, 0.0) if role is Role.PREFILL else (0.0, ms)
        row = static_row(facts, deployment, at_batch, STATIC_MODES[role], context_ms, generation_ms, raw.memory)
        row = round_row(row) if legacy else row
        if role is Role.DECODE and progress > 1.0:
            row = project_speculative(row, progress, STATIC_MODES[role])
            row = round_row(row) if legacy else row
        rows.append(WorkerRow(deployment, role, row, phase, raw.memory, progress if role is Role.DECODE else 1.0))
    return rows
