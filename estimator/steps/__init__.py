"""Step composition over any Pricer: static phases, the decode step and the mixed step (both semantics)."""

from estimator.steps.fold import ZERO_STEP, OpCost, StepCost
from estimator.steps.mixed import MixedShape, MixedStepCost, Semantics, mixed_step, mixed_step_totals, mixed_steps
from estimator.steps.phases import DEFAULT_STRIDE, StepModel, decode_step, decode_step_totals, static_context, static_generation

__all__ = [
    "DEFAULT_STRIDE",
    "ZERO_STEP",
    "MixedShape",
    "MixedStepCost",
    "OpCost",
    "Semantics",
    "StepCost",
    "StepModel",
    "decode_step",
    "decode_step_totals",
    "mixed_step",
    "mixed_step_totals",
    "mixed_steps",
    "static_context",
    "static_generation",
]
