"""Closed-loop latency: a deterministic pass-granularity replay of the serving scheduler under C clients.

Layers, bottom up:

* ``replay``: the agg pass calendar (one rank's continuous batching) and the P/D tandem, each as a
  literal Python oracle (``oracle``) and as Numba kernels (``kernels``) that agree bit for bit;
* ``pricing`` / ``engine``: what a pass costs, from a row's step scalars (``row``, the reference
  wiring) or from the deployment's step composition over price tables (``engine``);
* ``protocol``: ``steady`` (the reference's warm-up and window) or ``benchmark`` (a finite run of
  N prompts from a burst start, as serving benchmarks measure);
* ``runs``: the typed entry point, ``replay_run(AggRun | DisaggRun, settings, protocol)``;
* ``cases``: a replay's memo key made ready for its kernel, and the memoized replay;
* ``rows`` / ``frame``: result rows in (converted to runs once, at this edge), refined figures out.

Specs: ../shared/docs/closed-loop.md (algorithms, wiring, reference cases, the defects of section 6).
"""

from estimator.closedloop.cases import ENGINE, PRICINGS, ROW
from estimator.closedloop.frame import (
    REFINED_COLUMNS,
    filter_closed_loop_sla,
    pick_under_closed_loop_sla,
    refine_closed_loop_latency,
    reprice_closed_loop_row,
)
from estimator.closedloop.lengths import SEED_LIMIT, check_client_seed
from estimator.closedloop.protocol import Benchmark, Steady, run_plan
from estimator.closedloop.replay import replay_agg, replay_tandem
from estimator.closedloop.rows import (
    ReplayOptions,
    closed_loop_for_agg_row,
    closed_loop_for_disagg_row,
    figures,
    record,
    solo_prefill_ms,
)
from estimator.closedloop.runs import AggRun, DisaggRun, Replayed, agg_run, disagg_run, replay_run
from estimator.closedloop.spec import AggSpec, NoProgressError, TandemSpec
from estimator.closedloop.stats import LatencyStats, ReplayResult

__all__ = [
    "ENGINE",
    "PRICINGS",
    "REFINED_COLUMNS",
    "ROW",
    "SEED_LIMIT",
    "AggRun",
    "AggSpec",
    "DisaggRun",
    "Benchmark",
    "LatencyStats",
    "NoProgressError",
    "ReplayOptions",
    "Replayed",
    "ReplayResult",
    "Steady",
    "TandemSpec",
    "agg_run",
    "check_client_seed",
    "closed_loop_for_agg_row",
    "closed_loop_for_disagg_row",
    "disagg_run",
    "figures",
    "record",
    "filter_closed_loop_sla",
    "pick_under_closed_loop_sla",
    "refine_closed_loop_latency",
    "replay_agg",
    "replay_run",
    "replay_tandem",
    "reprice_closed_loop_row",
    "run_plan",
    "solo_prefill_ms",
]
