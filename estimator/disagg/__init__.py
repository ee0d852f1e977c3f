"""Disaggregated serving: static worker rows, the single-point disagg row and the disagg search."""

from estimator.disagg.combine import DISAGG_COLUMNS, disagg_row, system_rate
from estimator.disagg.single import DisaggPoint, DisaggResult, run_disagg
from estimator.disagg.workers import DISAGG_ROLES, Calibration, Role, WorkerRow, round_row, worker_row

__all__ = [
    "DISAGG_COLUMNS",
    "DISAGG_ROLES",
    "Calibration",
    "DisaggPoint",
    "DisaggResult",
    "Role",
    "WorkerRow",
    "disagg_row",
    "round_row",
    "run_disagg",
    "system_rate",
    "worker_row",
]
