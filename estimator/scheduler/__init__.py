"""Agg and static schedulers over priced steps, with the backend policies and the memory model."""

from estimator.scheduler.agg import AGG_COLUMNS, AggEstimator, AggPoint, AggResult, run_agg
from estimator.scheduler.plan import AggPlan, AggPlans, MixGroup, agg_plans, plan_agg
from estimator.scheduler.policies import POLICIES, BackendPolicy
from estimator.scheduler.static import STATIC_COLUMNS, StaticMode, StaticPoint, StaticResult, run_static

__all__ = [
    "AGG_COLUMNS",
    "AggEstimator",
    "POLICIES",
    "AggPlan",
    "AggPlans",
    "AggPoint",
    "AggResult",
    "BackendPolicy",
    "MixGroup",
    "STATIC_COLUMNS",
    "StaticMode",
    "StaticPoint",
    "StaticResult",
    "agg_plans",
    "plan_agg",
    "run_agg",
    "run_static",
]
