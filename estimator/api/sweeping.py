"""estimator.sweep: the best parallel layouts under latency targets (agg or disagg), the `sweep`
command's params and its report: one ranking per target, the full table, the exit status."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from estimator.api.deployments import (
    DEPLOYMENT,
    LONG_CONTEXT_PARAM,
    MODEL_PARAMS,
    PRICER_PARAM,
    QUANT_PARAMS,
    check_fits_model,
    deployment,
    layout_label,
    nextn_accepted,
    pricer_of,
)
from estimator.api.estimating import SEMANTICS_PARAM, WORKLOAD
from estimator.api.flags import Command, Param
from estimator.api.status import ExitStatus
from estimator.closedloop import PRICINGS, ROW, ReplayOptions
from estimator.deployment import Backend, Deployment
from estimator.disagg.search import DEFAULT_DECODE_MAX_NUM_TOKENS, DEFAULT_PREFILL_MAX_NUM_TOKENS, DEFAULT_TOP_N, WorkerLimits
from estimator.errors import InvalidInputError
from estimator.models.quant import check_overrides
from estimator.perf.versions import resolve_version
from estimator.steps import Semantics
from estimator.sweep import AggOptions, DisaggOptions, Sla, Workload, sweep_agg, sweep_disagg
from estimator.sweep.agg import DEFAULT_TOP_K
from estimator.sweep.driver import REPLAYED, Report, SweepResult
from estimator.sweep.grid import DEFAULT_CTX_STRIDE, DEFAULT_MAX_BATCH_SIZE
from estimator.sweep.space import (
    DEFAULT_DP_SIZES,
    DEFAULT_MOE_EP_SIZES,
    DEFAULT_MOE_TP_SIZES,
    DEFAULT_PP_SIZES,
    DEFAULT_TOTAL_GPUS,
    DEFAULT_TP_SIZES,
    MoeSizes,
    sweep_layouts,
)

TARGETS, SPACE, AGG, DISAGG, CLOSED_LOOP = "targets", "search space", "agg search", "disagg search", "closed loop"
# Figures the closed-loop replay reprices in a refined sweep's best rows; their columns there are suffixed.
REPRICED = ("ttft", "tpot", "request_latency", "request_rate", "seq/s", "seq/s/gpu", "tokens/s", "tokens/s/gpu", "tokens/s/user")
CLOSED_LOOP_SUFFIX = "_closed_loop"
MAX_WORKER_PAIRS = (
    2**16
)  # prefill x decode worker counts a disagg sweep rate-matches (its memoised int64 grids hold this many cells per GPU-count pair; default 32 x 32)
TOTAL_GPUS_HELP = (
    "GPUs in total: a replica (an agg worker, or a disagg deployment) uses at most this many, and `replicas` "
    "counts the copies that fit, as aiconfigurator counts them"
)

SWEEP = Command(
    "sweep",
    (
        *MODEL_PARAMS,
        Param("mode", str, "agg", "serving mode to sweep", DEPLOYMENT, choices=("agg", "disagg")),
        Param("isl", int, 4000, "input tokens per request", WORKLOAD),
        Param("osl", int, 1000, "output tokens per request", WORKLOAD),
        Param("prefix", int, 0, "cached prefix tokens per request, part of --isl", WORKLOAD),
        Param("nextn_accepted", float, help="accepted draft tokens per decode step (required with --nextn)", group=WORKLOAD),
        Param("ttft", float, 1000.0, "TTFT target, ms", TARGETS),
        Param("tpot", float, (50.0,), "TPOT target(s), ms; one ranking per target", TARGETS, many=True),
        Param("request_latency", float, help="request latency target, ms (derives (ttft, tpot) target pairs)", group=TARGETS),
        Param("tp_list", int, DEFAULT_TP_SIZES, "tensor parallel sizes", SPACE, many=True),
        Param("pp_list", int, DEFAULT_PP_SIZES, "pipeline parallel sizes", SPACE, many=True),
        Param("dp_list", int, DEFAULT_DP_SIZES, "MoE models: attention data-parallel sizes", SPACE, many=True),
        Param("moe_tp_list", int, DEFAULT_MOE_TP_SIZES, "MoE models: MoE tensor parallel sizes", SPACE, many=True),
        Param("moe_ep_list", int, DEFAULT_MOE_EP_SIZES, "MoE models: MoE expert parallel sizes (a layout needs tp*dp = moe_tp*moe_ep)", SPACE, many=True),
        Param("total_gpus", int, DEFAULT_TOTAL_GPUS, TOTAL_GPUS_HELP, SPACE),
        Param("max_batch_size", int, DEFAULT_MAX_BATCH_SIZE, "agg: largest batch", AGG),
        Param("ctx_stride", int, DEFAULT_CTX_STRIDE, "agg: small prefill-budget stride, tokens", AGG),
        Param("enable_chunked_prefill", bool, False, "agg: budgets need not be multiples of the prompt", AGG),
        Param("top_k", int, DEFAULT_TOP_K, "agg: best rows per layout and target (0: all)", AGG),
        Param("decode_system", str, help="disagg: decode workers' system (default --system)", group=DISAGG),
        Param("prefill_tp_list", int, help="disagg: prefill TP sizes (default --tp-list)", group=DISAGG, many=True),
        Param("decode_tp_list", int, help="disagg: decode TP sizes (default --tp-list)", group=DISAGG, many=True),
        Param("prefill_max_num_tokens", int, DEFAULT_PREFILL_MAX_NUM_TOKENS, "disagg: prompt tokens per prefill batch", DISAGG),
        Param("decode_max_batch_size", int, DEFAULT_DECODE_MAX_NUM_TOKENS, "disagg: largest decode batch", DISAGG),
        Param("max_prefill_workers", int, 32, "disagg: prefill workers per replica at most", DISAGG),
        Param("max_decode_workers", int, 32, "disagg: decode workers per replica at most", DISAGG),
        Param("top_n", int, DEFAULT_TOP_N, "disagg: best rows per target", DISAGG),
        Param("autoscale", bool, False, "disagg: pick prefill and decode engines apart, one worker each, at --ttft and the largest --tpot", DISAGG),
        *QUANT_PARAMS,
        PRICER_PARAM,
        SEMANTICS_PARAM,
        LONG_CONTEXT_PARAM,
        Param("refined_sla", bool, False, "gate and reprice candidates by the closed-loop replay (the rankings' figures: suffixed _closed_loop)", CLOSED_LOOP),
        Param("replay_pricing", str, ROW, "closed-loop pass pricing for --refined-sla", CLOSED_LOOP, choices=PRICINGS),
    ),
    example="python -m estimator sweep --model-path Qwen/Qwen3-32B --system h200_sxm --backend vllm --isl 4000 --osl 500 "
    "--ttft 1000 --tpot 30 50 --tp-list 1 2 4",
)


@dataclass(frozen=True)
class Target:
    """One target a sweep ranks configurations under: a (TTFT, TPOT) pair, or a request latency
    (whose derived (TTFT, TPOT) pairs rank as one target)."""

    ttft_ms: float | None = None  # > 0; None for a request-latency target
    tpot_ms: float | None = None  # > 0; None for a request-latency target
    request_latency_ms: float | None = None  # > 0; None for a (TTFT, TPOT) pair

    @property
    def label(self) -> str:
        """The value of the `target` column, e.g. "ttft<=1000ms tpot<=30ms"."""
        if self.request_latency_ms is not None:
            return f"request_latency<={self.request_latency_ms:g}ms"
        return f"ttft<={self.ttft_ms:g}ms tpot<={self.tpot_ms:g}ms"

    @property
    def title(self) -> str:
        if self.request_latency_ms is not None:
            return f"request latency <= {self.request_latency_ms:g} ms"
        return f"TTFT <= {self.ttft_ms:g} ms, TPOT <= {self.tpot_ms:g} ms"

    def miss(self, ttft: np.ndarray, tpot: np.ndarray, osl: np.ndarray) -> np.ndarray:
        """How far figures (ms) are from the target (<= 1: met): the request latency over its
        target, else the larger of TTFT and TPOT over theirs."""
        if self.request_latency_ms is not None:
            return (ttft + tpot * np.maximum(osl - 1, 0)) / self.request_latency_ms
        return np.maximum(ttft / self.ttft_ms, tpot / self.tpot_ms)


@dataclass(frozen=True)
class Ranking:
    """The best configurations under one target."""

    target: Target
    frame: pd.DataFrame = field(compare=False)  # best first: rank, target, the row's columns, replicas, total_gpus, oom


@dataclass(frozen=True)
class SweepReport:
    """A finished sweep: one ranking per target, the full table, and what the command exits with."""

    mode: str  # "agg" or "disagg"
    closed_loop: bool  # the rankings' figures are the closed-loop replay's (--refined-sla), columns suffixed _closed_loop
    rankings: tuple[Ranking, ...]  # one per target, in the targets' order
    status: ExitStatus  # FOUND, NOTHING_MEETS_TARGETS, or OUT_OF_MEMORY (nothing evaluated fits in GPU memory)
    closest_miss: Mapping[str, object] | None  # when nothing meets a target: the table row nearest to one (miss factor, target); None when the table is empty
    arguments: object = field(compare=False)  # the call's arguments, defaults filled in (SWEEP.arguments_type)
    tabulate: Callable[[], pd.DataFrame] = field(repr=False, compare=False)  # builds `table`

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        """Every evaluated operating point, unrounded, in evaluation order, with replicas, total_gpus,
        oom and target (the targets its judged TTFT and TPOT meet, "; "-separated)."""
        return self.tabulate()

    @property
    def row(self) -> dict | None:
        """The best configuration of the first target that has one (None when nothing meets a target)."""
        return next((r.frame.iloc[0].to_dict() for r in self.rankings if len(r.frame)), None)

    def to_frame(self) -> pd.DataFrame:
        """Every ranking, in target order, as one frame (its `target` and `rank` columns first)."""
        frames = [r.frame for r in self.rankings]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def to_json(self) -> dict:
        """What `sweep --json` prints (NaN as None)."""
        return {
            "mode": self.mode,
            "closed_loop": self.closed_loop,
            "status": self.status.name.lower(),
            "rankings": [{"target": dataclasses.asdict(r.target) | {"label": r.target.label}, "rows": [json_values(row) for row in r.frame.to_dict("records")]}
                         for r in self.rankings],
            "closest_miss": None if self.closest_miss is None else json_values(self.closest_miss),
        }  # fmt: skip


def json_values(row: Mapping) -> dict:
    """A row as JSON values: a NaN (a figure the row lacks, e.g. an unreplayed row's ttft_refined) as None."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def sweep(**arguments) -> SweepReport:
    """The best configurations under latency targets, as `python -m estimator sweep`: keyword
    arguments are its flags with underscores (model_path, system, backend, mode, isl, osl, ttft,
    tpot, tp_list, ...) and take the same defaults; a list flag takes one value or a sequence. Bad
    arguments raise EstimatorError with the command's one-line message."""
    return sweep_with(SWEEP.bind(arguments))


def sweep_with(args, report: Report | None = None) -> SweepReport:
    """sweep of bound arguments (the command line calls this with its parsed flags and a progress
    callback, which receives each unit's rows as they are computed)."""
    result = run_sweep(args, pricer_of(args), report)
    if args.request_latency is not None:  # its derived pairs are one target, ranked together
        ranked, frames = targets(args), (result.best,)
    else:
        ranked, frames = tuple(Target(*pair) for pair in result.targets), result.rankings
    rankings = tuple(Ranking(t, ranking_frame(frame, t, args.total_gpus, args.refined_sla)) for t, frame in zip(ranked, frames))
    table = functools.cache(functools.partial(annotated, result, ranked, args.total_gpus))
    if any(len(r.frame) for r in rankings):
        status, miss = ExitStatus.FOUND, None
    elif result.fits:
        status, miss = ExitStatus.NOTHING_MEETS_TARGETS, closest_miss(table(), ranked)
    else:
        status, miss = ExitStatus.OUT_OF_MEMORY, None
    return SweepReport(args.mode, args.refined_sla, rankings, status, miss, args, table)


def check_stacks(base: Deployment, decode_system: str | None) -> None:
    """The systems, backend version and quant modes every layout shares, checked once before the
    search: a bad one is one error line, not a skipped-layout warning per layout first."""
    check_overrides(base.quant)
    for system in dict.fromkeys((base.system, decode_system or base.system)):
        resolve_version(system, base.backend, base.version)


def run_sweep(args, pricer: str, report: Report | None = None) -> SweepResult:
    """The internal sweep of the arguments, priced by `pricer` (resolved)."""
    semantics = Semantics.parse(args.semantics)
    workload = Workload(args.isl, args.osl, args.prefix, nextn_accepted(args))
    sla = Sla(args.ttft, args.tpot, args.request_latency)
    replay = ReplayOptions(pricing=args.replay_pricing, pricer=pricer) if args.refined_sla else None
    base = deployment(args)
    check_stacks(base, args.decode_system)
    for pp in args.pp_list:
        check_fits_model(base.model, pp, args.isl + args.osl, args.allow_long_context)
    moe = MoeSizes(args.dp_list, args.moe_tp_list, args.moe_ep_list)
    if args.mode == "agg":
        layouts = sweep_layouts(base, args.tp_list, args.pp_list, args.total_gpus, moe)
        options = AggOptions(args.max_batch_size, args.ctx_stride, args.enable_chunked_prefill, args.top_k)
        return sweep_agg(layouts, workload, sla, options, semantics, pricer, report, refined=replay)
    prefill = sweep_layouts(base, args.prefill_tp_list or args.tp_list, args.pp_list, args.total_gpus, moe)
    decode = sweep_layouts(deployment(args, args.decode_system), args.decode_tp_list or args.tp_list, args.pp_list, args.total_gpus, moe)
    options = DisaggOptions(args.prefill_max_num_tokens, args.decode_max_batch_size, worker_limits(args, prefill, decode, base.backend is Backend.SGLANG), top_n=args.top_n,
                            autoscale=args.autoscale)  # fmt: skip
    return sweep_disagg(prefill, decode, workload, sla, options, semantics, pricer, report, refined=replay)


def worker_limits(args, prefill: list[Deployment], decode: list[Deployment], same_tp: bool) -> WorkerLimits:
    """The rate matching's worker counts, each at most --total-gpus (a worker holds a GPU at least),
    and the deployment GPU counts it allows: 1 to --total-gpus, listed up to the most the counts
    reach on these layouts (the same pairs are allowed as with every count listed; 2**31-1 workers
    or GPUs were a tuple or set of that many ints, tens of GB); InvalidInputError beyond
    MAX_WORKER_PAIRS (prefill x decode) counts."""
    counts = [range(1, min(most, args.total_gpus) + 1) for most in (args.max_prefill_workers, args.max_decode_workers)]
    if len(counts[0]) * len(counts[1]) > MAX_WORKER_PAIRS:
        raise InvalidInputError(f"a disagg sweep rate-matches at most {MAX_WORKER_PAIRS} (2**16) prefill x decode worker counts, and "
                                f"{len(counts[0])} x {len(counts[1])} were asked: lower --max-prefill-workers or --max-decode-workers")  # fmt: skip
    reach = sum(len(n) * max((d.tp * d.pp * d.attention_dp for d in pool), default=1) for n, pool in zip(counts, (prefill, decode)))
    return WorkerLimits(tuple(counts[0]), tuple(counts[1]), frozenset(range(1, min(args.total_gpus, reach) + 1)), same_tp=same_tp)


def with_replicas(frame: pd.DataFrame, total_gpus: int) -> pd.DataFrame:
    """frame plus replicas (copies of the row's deployment that fit in total_gpus) and total_gpus
    (the GPUs they use), as aiconfigurator counts them, and oom (False: a sweep evaluates only
    points that fit in GPU memory)."""
    per_replica = frame["num_total_gpus"].to_numpy(np.int64) if len(frame) else np.zeros(0, np.int64)
    replicas = total_gpus // np.maximum(per_replica, 1)
    return frame.assign(replicas=replicas, total_gpus=replicas * per_replica, oom=np.zeros(len(frame), dtype=bool))


def ranking_frame(best: pd.DataFrame, target: Target, total_gpus: int, refined: bool) -> pd.DataFrame:
    """A target's best rows as a ranking: rank and target first, then the row, replicas, total_gpus
    and oom; a refined sweep's repriced figures renamed with the _closed_loop suffix."""
    frame = with_replicas(best, total_gpus).reset_index(drop=True)
    if refined:
        frame = frame.rename(columns={c: c + CLOSED_LOOP_SUFFIX for c in REPRICED if c in frame.columns})
    frame.insert(0, "target", target.label)
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame


def judged_figures(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ttft ms, tpot ms, osl) of each table row as the sweep judges it: the closed-loop figures
    where the replay priced the row (ttft_refined, tpot_refined), the closed-form ones otherwise."""
    ttft, tpot = table["ttft"].to_numpy(np.float64), table["tpot"].to_numpy(np.float64)
    if "ttft_refined" in table.columns:
        ttft_r, tpot_r = table["ttft_refined"].to_numpy(np.float64), table["tpot_refined"].to_numpy(np.float64)
        priced = ~np.isnan(ttft_r)
        ttft, tpot = np.where(priced, ttft_r, ttft), np.where(priced, tpot_r, tpot)
    return ttft, tpot, table["osl"].to_numpy(np.float64)


def annotated(result: SweepResult, ranked: tuple[Target, ...], total_gpus: int) -> pd.DataFrame:
    """The sweep's full table with replicas, total_gpus, oom and target."""
    table = result.table
    return with_replicas(table, total_gpus).assign(target=targets_met(table, ranked))


def targets(args) -> tuple[Target, ...]:
    """The targets the arguments name: the request latency, else one per TPOT target."""
    if args.request_latency is not None:
        return (Target(request_latency_ms=args.request_latency),)
    return tuple(Target(args.ttft, tpot) for tpot in args.tpot)


def partial_table(args, rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of an interrupted sweep with the full table's added columns (target against the arguments' targets)."""
    return with_replicas(rows, args.total_gpus).assign(target=targets_met(rows, targets(args)))


def targets_met(table: pd.DataFrame, ranked: tuple[Target, ...]) -> list[str]:
    """Per row, the labels of the targets its judged figures meet, "; "-separated ("" for none)."""
    figures = judged_figures(table)
    met = [t.miss(*figures) <= 1.0 for t in ranked]
    return ["; ".join(t.label for t, m in zip(ranked, met) if m[i]) for i in range(len(table))]


def closest_miss(table: pd.DataFrame, ranked: tuple[Target, ...]) -> dict | None:
    """The table row nearest to meeting a target (smallest miss factor over rows and targets, the
    first on ties), with miss_factor and the target it misses; None for an empty table."""
    if table.empty or not ranked:
        return None
    figures = judged_figures(table)
    misses = np.vstack([t.miss(*figures) for t in ranked])
    target, row = np.unravel_index(int(np.argmin(misses)), misses.shape)
    return table.iloc[int(row)].to_dict() | {"miss_factor": float(misses[target, row]), "missed_target": ranked[int(target)].label}


def describe_configuration(row: Mapping) -> str:
    """A row's configuration in words: the layout and batch (agg), the workers (disagg)."""
    if "(p)workers" in row:
        return (f"{row['(p)workers']} x prefill {layout_label(row, '(p)')} bs {row['(p)bs']}, "
                f"{row['(d)workers']} x decode {layout_label(row, '(d)')} bs {row['(d)bs']}")  # fmt: skip
    return f"{layout_label(row)} bs {row['bs']} ctx_tokens {row['ctx_tokens']}"


def miss_line(miss: Mapping) -> str:
    """One line naming the closest miss, its judged figures and how far it is from its target."""
    ttft, tpot = (float(miss[f"{c}_refined"]) if not math.isnan(miss.get(f"{c}_refined", math.nan)) else float(miss[c]) for c in ("ttft", "tpot"))
    return (f"closest miss: {describe_configuration(miss)}: TTFT {ttft:.3f} ms, TPOT {tpot:.3f} ms against {miss['missed_target']} "
            f"({miss['miss_factor']:.3f}x)")  # fmt: skip


__all__ = ["CLOSED_LOOP_SUFFIX", "REPLAYED", "SWEEP", "Ranking", "SweepReport", "Target", "miss_line", "partial_table", "sweep", "sweep_with"]
