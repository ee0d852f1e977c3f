"""Closed-loop latency: a deterministic pass-granularity replay of the serving scheduler under C clients.

Layers, bottom up:

* ``replay``: the agg pass calendar (one rank's continuous batching) and the P/D tandem, each as a
  literal Python oracle (``oracle``) and as Numba kernels (``kernels``) that agree bit for bit;
* ``pricing`` / ``engine``: what a pass costs, from a row's step scalars (``row``, the reference
  wiring) or from the deployment's step composition over price tables (``engine``);
* ``protocol``: ``steady`` (the reference's warm-up and window) or ``benchmark`` (a finite run of
  N prompts from a burst start, as serving benchmarks measure);
* ``rows`` / ``frame``: result rows in, refined figures out, memoized on every input.

Specs: ../shared/docs/closed-loop.md (algorithms, wiring, reference cases, the defects of section 6).
"""
from estimator.closedloop.frame import (
    REFINED_COLUMNS,
    filter_closed_loop_sla,
    pick_under_closed_loop_sla,
    refine_closed_loop_latency,
    reprice_closed_loop_row,
)
from estimator.closedloop.protocol import Benchmark, Steady, run_plan
from estimator.closedloop.replay import replay_agg, replay_tandem
from estimator.closedloop.rows import (
    ENGINE,
    PRICINGS,
    ROW,
    ReplayOptions,
    closed_loop_for_agg_row,
    closed_loop_for_disagg_row,
    solo_prefill_ms,
)
from estimator.closedloop.settings import EngineSettings, engine_defaults
from estimator.closedloop.spec import AggSpec, NoProgressError, TandemSpec
from estimator.closedloop.stats import LatencyStats, ReplayResult

__all__ = [
    "ENGINE",
    "PRICINGS",
    "REFINED_COLUMNS",
    "ROW",
    "AggSpec",
    "Benchmark",
    "EngineSettings",
    "LatencyStats",
    "NoProgressError",
    "ReplayOptions",
    "ReplayResult",
    "Steady",
    "TandemSpec",
    "closed_loop_for_agg_row",
    "closed_loop_for_disagg_row",
    "engine_defaults",
    "filter_closed_loop_sla",
    "pick_under_closed_loop_sla",
    "refine_closed_loop_latency",
    "replay_agg",
    "replay_tandem",
    "reprice_closed_loop_row",
    "run_plan",
    "solo_prefill_ms",
]
