"""Agg and static schedulers over priced steps, with the backend policies and the memory model."""
from estimator.scheduler.agg import AGG_COLUMNS, AggEstimator, AggPlan, AggPoint, AggResult, MixGroup, plan_agg, run_agg
from estimator.scheduler.policies import POLICIES, BackendPolicy
from estimator.scheduler.static import STATIC_COLUMNS, StaticMode, StaticPoint, StaticResult, run_static

__all__ = ["AGG_COLUMNS", "AggEstimator", "POLICIES", "AggPlan", "AggPoint", "AggResult", "BackendPolicy", "MixGroup", "STATIC_COLUMNS", "StaticMode", "StaticPoint", "StaticResult", "plan_agg", "run_agg", "run_static"]
