"""Sweeps: agg (batch x prefill budget per deployment) and disagg (worker search), best rows under targets.

The package is callable: estimator.sweep(...) runs estimator.api.sweep, the `sweep` command's API.
"""

from estimator.entry import make_callable
from estimator.sweep.agg import AggOptions, AggRows, best_agg, grid_points, price_points
from estimator.sweep.driver import DisaggOptions, SweepResult, sweep_agg, sweep_disagg
from estimator.sweep.grid import AGG_BATCH_SCHEDULE, AggGrid
from estimator.sweep.sla import Sla, Workload

__all__ = [
    "AGG_BATCH_SCHEDULE",
    "AggGrid",
    "AggOptions",
    "AggRows",
    "DisaggOptions",
    "Sla",
    "SweepResult",
    "Workload",
    "best_agg",
    "grid_points",
    "price_points",
    "sweep_agg",
    "sweep_disagg",
]

make_callable(__name__, "sweep")
