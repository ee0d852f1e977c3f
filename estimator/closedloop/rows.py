"""Closed-loop figures of result rows: reading a row, the two pass pricings, the memoized replay.

Agg rows replay one attention-DP rank at C = ``bs`` (its per-rank batch); disagg rows replay the
whole P/D system at C = ``concurrency``. A row is disagg when its ``(p)workers`` value is present
(a NaN or None value in a mixed agg/disagg frame counts as absent). Optional columns that are
absent, None or NaN take their documented defaults.

Row wiring (``pricing="row"``, closed-loop.md sections 1 and 2, with the section 6 corrections):

* agg: ``prefill_step_ms*n*max(1, e - s)/chunk_ref + genonly_step_ms`` with
  ``chunk_ref = max(1, min(ctx_tokens, isl_eff - prefix))``; budget ``ctx_tokens``, chunking on,
  no sequence cap unless settings are given. ``isl_eff = isl + visual_tokens``; the encoder costs
  ``encoder_latency / bs`` per request (the row's encoder phase covers one batch of bs prompts);
  each decode pass advances ``decode_tokens_per_iteration`` tokens; throughput is scaled by
  ``concurrency / bs`` (= pp x attention_dp).
* disagg: flat ``(p)prefill_step_ms + encoder_latency`` per prefill batch of up to
  ``(p)global_bs`` prompts, flat ``tpot`` per decode iteration (already per token: k = 1) of up to
  ``(d)global_bs`` requests per worker (``(p)bs`` / ``(d)bs`` without attention DP).

Engine wiring (``pricing="engine"``): passes priced through estimator.closedloop.engine on the
row's deployment (agg: the given deployment or the row's model, system, backend, version,
parallel and quant columns; disagg: the ``(p)`` and ``(d)`` columns), with the engine's default
scheduler settings (estimator.closedloop.settings) unless settings are given; decode requests
take nextn + 1 budget tokens and advance ``decode_tokens_per_iteration`` tokens per pass; agg
passes that prefill also pay the engine's dispatch overhead as the reference's legacy TTFT does
(vLLM 0.8 ms per layer: eager prefill launches, once per pass); tandem workers price each pass at
the busiest attention-DP rank's share.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping

from estimator.closedloop.engine import PassModel, TableExtent, engine_tables
from estimator.closedloop.pricing import PassPricer, engine_pricer, flat_pricer, row_pricer
from estimator.closedloop.protocol import Benchmark, Protocol, RunPlan, Steady, parse_protocol, run_plan
from estimator.closedloop.replay import replay_agg, replay_tandem
from estimator.closedloop.settings import EngineSettings, eager_prefill_floor_ms, engine_defaults, kv_running_cap, reference_settings
from estimator.closedloop.spec import AggSpec, TandemSpec
from estimator.closedloop.stats import LatencyStats
from estimator.deployment import Backend, Deployment, QuantOverrides
from estimator.errors import InvalidInputError
from estimator.models.config import is_natively_modelled, model_architecture
from estimator.perf.system_spec import load_system_spec
from estimator.scheduler.facts import deployment_facts
from estimator.scheduler.memory import kv_pool_bytes
from estimator.scheduler.policies import POLICIES

ROW, ENGINE = "row", "engine"
PRICINGS = (ROW, ENGINE)
MEMO_SIZE = 65_536  # replays kept, least recently used evicted first
_ABSENT = object()


@dataclass(frozen=True)
class ReplayOptions:
    """How rows are replayed; part of every memo key."""

    pricing: str = ENGINE  # "row": the reference's row-scalar wiring | "engine": passes priced by the step composition
    protocol: Steady | Benchmark = Steady()  # run protocol (a name is accepted and parsed)
    settings: EngineSettings | None = None  # agg scheduler settings; None: ctx_tokens + chunking (row), backend defaults (engine)
    pricer: str = "native"  # op pricer behind engine pricing: native | reference | sol

    def __post_init__(self) -> None:
        if self.pricing not in PRICINGS:
            raise InvalidInputError(f"unknown pricing {self.pricing!r} (known: {', '.join(PRICINGS)})")
        object.__setattr__(self, "protocol", parse_protocol(self.protocol))


@dataclass(frozen=True)
class RowSteps:
    """The agg row-scalar wiring's step prices."""

    prefill_step_ms: float  # one prefill chunk's step, ms (finite, >= 0)
    chunk_ref: int  # new tokens that step stands for (>= 1)
    genonly_step_ms: float  # one decode iteration, ms (finite, >= 0)


@dataclass(frozen=True)
class AggCase:
    """Everything an agg row's replay depends on (its memo key)."""

    clients: int  # C = per-rank batch bs (>= 1)
    ranks: float  # concurrency / bs: pp x attention_dp ranks running the same replay
    isl: int  # text input tokens (L of the protocol)
    visual_tokens: int  # visual context tokens added to every prompt (>= 0)
    osl: int  # output tokens (L of the protocol)
    protocol: Protocol  # steady | benchmark
    spec: AggSpec  # engine settings and per-request facts
    steps: RowSteps | PassModel  # row pricing: the row's step scalars; engine pricing: the model

    @property
    def pricing(self) -> str:
        return ROW if isinstance(self.steps, RowSteps) else ENGINE


@dataclass(frozen=True)
class TandemCase:
    """Everything a disagg row's replay depends on (its memo key)."""

    clients: int  # C = system concurrency (>= 1)
    isl: int  # text input tokens
    visual_tokens: int  # visual context tokens added to every prompt (>= 0)
    osl: int  # output tokens
    protocol: Protocol  # steady | benchmark
    spec: TandemSpec  # workers, batch limits, hand-off
    prefill: float | PassModel  # row pricing: ms per prefill batch; engine pricing: the prefill worker's model
    decode: float | PassModel  # row pricing: ms per decode iteration; engine pricing: the decode worker's model

    @property
    def pricing(self) -> str:
        return ENGINE if isinstance(self.decode, PassModel) else ROW


Case = AggCase | TandemCase


@dataclass(frozen=True)
class ClosedLoop:
    """A row's replay."""

    stats: LatencyStats  # the replay's statistics (agg: one rank)
    throughput_rps: float  # system-wide completions per second


# ---------------------------------------------------------------------------------------------
# Reading rows
# ---------------------------------------------------------------------------------------------


def _value(row: Mapping, key: str, default=_ABSENT):
    """row[key]; a missing, None or NaN value is absent: the default, or InvalidInputError without one."""
    try:
        value = row[key]
    except (KeyError, IndexError):
        value = None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if default is _ABSENT:
            raise InvalidInputError(f"column {key!r} is missing or empty")
        return default
    return value


def _number(row: Mapping, key: str, default=_ABSENT) -> float | None:
    """A finite number; None only when the column is absent and the default is None."""
    value = _value(row, key, default)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{key} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise InvalidInputError(f"{key} must be finite, got {value!r}")
    return number


def _integer(row: Mapping, key: str, default=_ABSENT, minimum: int = 1) -> int | None:
    number = _number(row, key, default)
    if number is None:
        return None
    if number != int(number) or number < minimum:
        raise InvalidInputError(f"{key} must be an integer >= {minimum}, got {_value(row, key, default)!r}")
    return int(number)


def _time(row: Mapping, key: str, default=_ABSENT) -> float:
    ms = _number(row, key, default)
    if ms < 0:
        raise InvalidInputError(f"{key} must be >= 0 ms, got {ms}")
    return ms


def is_disagg(row: Mapping) -> bool:
    """A row is disagg when its (p)workers value is present."""
    return _value(row, "(p)workers", None) is not None


def deployment_from_row(row: Mapping, side: str = "") -> Deployment:
    """The deployment of a row's columns; side is "" (agg), "(p)" or "(d)"."""
    def col(name: str, default=_ABSENT):
        sided = _value(row, side + name, None) if side else None
        return sided if sided is not None else _value(row, name, default)

    quant = {kind: col(kind, None) for kind in ("gemm", "moe", "kvcache", "fmha", "comm")}
    optional = {name: _integer(row, side + name, None) for name in ("moe_tp", "moe_ep")}
    return Deployment(
        model=str(col("model")), system=str(col("system")), backend=str(col("backend")), version=col("version", None),
        tp=_integer(row, side + "tp", 1), pp=_integer(row, side + "pp", 1), attention_dp=_integer(row, side + "dp", 1),
        nextn=_integer(row, "nextn", 0, minimum=0), quant=QuantOverrides(**quant), **optional,
    )  # fmt: skip


def agg_case(row: Mapping, options: ReplayOptions, deployment: Deployment | None = None) -> AggCase:
    """The replay inputs of an agg result row (raises InvalidInputError naming the bad column)."""
    bs = _integer(row, "bs")
    isl, osl = _integer(row, "isl"), _integer(row, "osl")
    visual = _integer(row, "visual_tokens", 0, minimum=0)
    prefix = _integer(row, "prefix", 0, minimum=0)
    if prefix >= isl + visual:
        raise InvalidInputError(f"prefix ({prefix}) must be smaller than the effective isl ({isl + visual})")
    ranks = _number(row, "concurrency", bs) / bs
    facts = dict(prefix=prefix, tokens_per_decode=_number(row, "decode_tokens_per_iteration", 1.0),
                 encoder_ms=_time(row, "encoder_latency", 0.0) / bs)  # fmt: skip
    if options.pricing == ROW:
        ctx_tokens = _integer(row, "ctx_tokens")
        steps = RowSteps(_time(row, "prefill_step_ms"), max(1, min(ctx_tokens, isl + visual - prefix)), _time(row, "genonly_step_ms"))
        if options.settings is not None and options.settings.kv_free_memory_fraction is not None:
            raise InvalidInputError("kv_free_memory_fraction needs engine pricing (the KV pool is the deployment's)")
        spec = AggSpec(options.settings or reference_settings(ctx_tokens), **facts)
    else:
        deployment = deployment or deployment_from_row(row)
        steps = PassModel(deployment, options.pricer)
        settings = options.settings or default_settings(deployment)
        if deployment.attention_dp > 1:  # TRT-LLM PyExecutor._schedule: batch waiting without attention DP, its balance with it
            settings = dataclasses.replace(settings, batch_wait_iters=0, batch_wait_tokens_ratio=0.0)
        else:
            settings = dataclasses.replace(settings, adp_balance_iters=0, adp_batching_wait_iters=0)
        settings = kv_capped(settings, deployment, bs, isl, visual, osl, options.protocol)
        spec = AggSpec(settings, decode_budget_tokens=deployment.nextn + 1, dispatch_ms=dispatch_overhead_ms(deployment),
                       prefill_floor_ms=prefill_floor_ms(deployment), **facts)  # fmt: skip
    return AggCase(bs, ranks, isl, visual, osl, options.protocol, spec, steps)


def tandem_case(row: Mapping, options: ReplayOptions, prefill: Deployment | None = None, decode: Deployment | None = None) -> TandemCase:
    """The replay inputs of a disagg result row."""
    spec = TandemSpec(
        prefill_workers=_integer(row, "(p)workers"),
        decode_workers=_integer(row, "(d)workers"),
        prefill_batch=_integer(row, "(p)global_bs", None) or _integer(row, "(p)bs"),
        decode_max_seqs=_integer(row, "(d)global_bs", None) or _integer(row, "(d)bs"),
        prefix=_integer(row, "prefix", 0, minimum=0),
        tokens_per_decode=_number(row, "decode_tokens_per_iteration", 1.0) if options.pricing == ENGINE else 1.0,
        encoder_ms=_time(row, "encoder_latency", 0.0),
    )
    if options.pricing == ROW:
        prefill_side, decode_side = _time(row, "(p)prefill_step_ms"), _time(row, "tpot")
    else:
        prefill_side = PassModel(prefill or deployment_from_row(row, "(p)"), options.pricer)
        decode_side = PassModel(decode or deployment_from_row(row, "(d)"), options.pricer)
    visual = _integer(row, "visual_tokens", 0, minimum=0)
    return TandemCase(_integer(row, "concurrency"), _integer(row, "isl"), visual, _integer(row, "osl"), options.protocol, spec, prefill_side, decode_side)


def case_of(row: Mapping, options: ReplayOptions) -> Case:
    return tandem_case(row, options) if is_disagg(row) else agg_case(row, options)


def dispatch_overhead_ms(deployment: Deployment) -> float:
    """The CPU dispatch overhead of a forward pass that prefills, as the reference's legacy TTFT models
    it (vLLM: 0.8 ms per decoder layer, eager prefill launches; SGLang, TRT-LLM: none), ms."""
    return POLICIES[deployment.backend].dispatch_overhead_ms(deployment_facts(deployment).num_layers)


@functools.cache
def prefill_floor_ms(deployment: Deployment) -> float:
    """The host-bound floor of an eager pass that prefills (settings.eager_prefill_floor_ms), ms;
    cached per deployment (it reads the model's config file)."""
    return eager_prefill_floor_ms(deployment.backend, model_architecture(deployment.model), deployment_facts(deployment).num_layers)


def kv_capped(settings: EngineSettings, deployment: Deployment, clients: int, isl: int, visual: int, osl: int,
              protocol: Protocol) -> EngineSettings:  # fmt: skip
    """settings with max_num_seqs lowered to the running requests a TensorRT-LLM KV-cache pool holds
    (kv_running_cap at the protocol's mean lengths: text input and output lengths L scale with the
    benchmark's range, visual tokens do not; the pool at settings.kv_free_memory_fraction)
    when that is fewer than the rank's clients and than its cap; settings unchanged otherwise or
    without a fraction. InvalidInputError for a fraction on another backend (its admission differs)
    or on an architecture that is not natively modelled: the pool is the small difference of the
    GPU's memory and the memory model's weights, which only the native model derives from the
    bundled config (the reference's accounting, e.g. DeepSeek-R1 FP8 at 166.4 GiB per GPU on TP 4,
    is not checked against the checkpoints)."""
    if settings.kv_free_memory_fraction is None:
        return settings
    if deployment.backend is not Backend.TRTLLM:
        raise InvalidInputError(f"kv_free_memory_fraction is TensorRT-LLM's KV-cache setting; backend {deployment.backend.value!r} has none")
    if not is_natively_modelled(deployment.model):
        raise InvalidInputError(f"kv_free_memory_fraction needs the native memory model; {deployment.model!r} is not natively modelled")
    facts = deployment_facts(deployment)
    pool = kv_pool_bytes(facts, POLICIES[deployment.backend], settings.budget, settings.kv_free_memory_fraction)
    share = (1.0 + protocol.range_ratio) / 2 if isinstance(protocol, Benchmark) else 1.0  # mean of U[r L, L] over L
    cap = kv_running_cap(pool, facts.kv_bytes_per_sequence, share * isl + visual, share * osl)
    if cap is None or cap >= min(clients, settings.max_num_seqs or clients):
        return settings
    return dataclasses.replace(settings, max_num_seqs=cap)


def default_settings(deployment: Deployment) -> EngineSettings:
    """The deployment's serving engine defaults on its GPU."""
    return engine_defaults(deployment.backend, deployment.system, load_system_spec(deployment.system).mem_capacity)


# ---------------------------------------------------------------------------------------------
# Replaying a case
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Prepared:
    """A case ready for its kernel: the plan and the pass pricers (engine tables built)."""

    case: Case
    plan: RunPlan
    pricers: tuple[PassPricer, ...]  # agg: (pricer,); tandem: (prefill, decode)

    def run(self) -> ClosedLoop:
        """Replay (the Numba kernels release the GIL: prepared cases may run on threads)."""
        if isinstance(self.case, AggCase):
            stats = replay_agg(self.plan, self.case.spec, *self.pricers).stats
            return ClosedLoop(stats, stats.throughput_rps * self.case.ranks)
        stats = replay_tandem(self.plan, self.case.spec, *self.pricers).stats
        return ClosedLoop(stats, stats.throughput_rps)


def prepare(case: Case) -> Prepared:
    """The run plan and pass pricers of a case (engine tables are built here, on the caller's thread)."""
    plan = run_plan(case.protocol, case.clients, case.isl, case.osl, case.visual_tokens)
    case.spec.check(plan)
    if isinstance(case, AggCase):
        return Prepared(case, plan, (_agg_pricer(case, plan),))
    if isinstance(case.prefill, PassModel):
        pricers = (
            _engine(case.prefill, prefill_extent(plan, case.spec), case.prefill.deployment.attention_dp),
            _engine(case.decode, decode_extent(plan, case.spec, case.decode), case.decode.deployment.attention_dp),
        )
    else:
        pricers = (flat_pricer(case.prefill, 0.0), flat_pricer(0.0, case.decode))
    return Prepared(case, plan, pricers)


def _agg_pricer(case: AggCase, plan: RunPlan) -> PassPricer:
    if isinstance(case.steps, RowSteps):
        return row_pricer(case.steps.prefill_step_ms, case.steps.chunk_ref, case.steps.genonly_step_ms)
    return _engine(case.steps, agg_extent(plan, case.spec, case.steps))


def _engine(model: PassModel, extent: TableExtent, dp_ranks: int = 1) -> PassPricer:
    """Agg replays one rank (dp_ranks 1); the tandem replays whole workers, dp_ranks ranks each."""
    return engine_pricer(engine_tables(model, extent.rounded()), model.query_multiplier, dp_ranks)


def agg_extent(plan: RunPlan, spec: AggSpec, model: PassModel) -> TableExtent:
    """The largest pass shapes of an agg replay (without chunked prefill every chunk is a whole
    prompt, starting at the cached prefix)."""
    s = spec.settings
    running = min(plan.clients, s.max_num_seqs or plan.clients)
    longest = int(plan.isl.max())
    whole = s.budget // (int(plan.isl.min()) - spec.prefix) + 2  # whole prompts in a budget, plus a tail and a head chunk
    return TableExtent(
        tokens=s.budget, chunks=min(running, s.budget, whole), chunk=min(s.budget, longest - spec.prefix),
        start=max(1, longest - 1 if s.chunked else spec.prefix), rows=min(running * model.query_multiplier, s.budget),
        kv=longest + int(plan.osl.max()),
    )  # fmt: skip


def prefill_extent(plan: RunPlan, spec: TandemSpec) -> TableExtent:
    """The largest prefill batches of a tandem replay (whole prompts)."""
    batch = min(spec.prefill_batch, plan.clients)
    longest = int(plan.isl.max()) - spec.prefix
    return TableExtent(tokens=batch * longest, chunks=batch, chunk=longest, start=max(1, spec.prefix), rows=1, kv=2)


def decode_extent(plan: RunPlan, spec: TandemSpec, model: PassModel) -> TableExtent:
    """The largest decode iterations of a tandem replay."""
    rows = min(spec.decode_max_seqs, plan.clients) * model.query_multiplier
    return TableExtent(tokens=1, chunks=1, chunk=1, start=1, rows=rows, kv=int(plan.isl.max()) + int(plan.osl.max()))


class _Memo:
    """Replays by case, least recently used evicted beyond MEMO_SIZE."""

    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict[Case, ClosedLoop] = OrderedDict()

    def get(self, case: Case) -> ClosedLoop | None:
        hit = self.items.get(case)
        if hit is not None:
            self.items.move_to_end(case)
        return hit

    def put(self, case: Case, result: ClosedLoop) -> None:
        self.items[case] = result
        if len(self.items) > self.size:
            self.items.popitem(last=False)


MEMO = _Memo(MEMO_SIZE)


def replay_case(case: Case) -> ClosedLoop:
    """The memoized replay of a case (raises InvalidInputError, NoProgressError)."""
    hit = MEMO.get(case)
    if hit is None:
        hit = prepare(case).run()
        MEMO.put(case, hit)
    return hit


# ---------------------------------------------------------------------------------------------
# Figures for one row
# ---------------------------------------------------------------------------------------------


def figures(result: ClosedLoop, osl: int) -> dict:
    """The refined figures in result-row terms (ms, requests/s)."""
    s = result.stats
    return {
        "ttft": s.ttft_mean, "ttft_p50": s.ttft_p50, "ttft_p99": s.ttft_p99, "ttft_max": s.ttft_max,
        "tpot": s.tpot_mean, "tpot_p50": s.tpot_p50, "tpot_p99": s.tpot_p99,
        "itl": s.itl_mean, "itl_p50": s.itl_p50, "itl_p99": s.itl_p99,
        "request_latency": s.ttft_mean + s.tpot_mean * max(osl - 1, 0), "seq/s": result.throughput_rps,
    }  # fmt: skip


def closed_loop_for_agg_row(row: Mapping, deployment: Deployment, *, pricing: str = ENGINE, protocol: str | Protocol = "steady",
                            settings: EngineSettings | None = None, pricer: str = "native") -> dict:  # fmt: skip
    """Closed-loop figures of one agg result row (run_agg's row) on its deployment: TTFT mean/p50/p99/max,
    TPOT and ITL statistics (ms), request_latency (ms), seq/s (system-wide), plus the pricing,
    protocol and scheduler settings used. Raises InvalidInputError / NoProgressError / PerfDataMissingError."""
    case = agg_case(row, ReplayOptions(pricing, protocol, settings, pricer), deployment)
    return figures(replay_case(case), case.osl) | _setup(case)


def closed_loop_for_disagg_row(row: Mapping, prefill: Deployment, decode: Deployment, *, pricing: str = ENGINE,
                               protocol: str | Protocol = "steady", pricer: str = "native") -> dict:  # fmt: skip
    """Closed-loop figures of one disagg result row on its prefill and decode deployments (as closed_loop_for_agg_row)."""
    case = tandem_case(row, ReplayOptions(pricing, protocol, None, pricer), prefill, decode)
    return figures(replay_case(case), case.osl) | _setup(case)


def solo_prefill_ms(row: Mapping, options: ReplayOptions | None = None) -> float:
    """The row's prompt prefilled alone: the replay's exact C = 1 TTFT, the true lower bound of its
    closed-loop TTFT for SLA gates (row pricing: prefill_step_ms * (isl_eff - prefix) / chunk_ref;
    the reference's ceil(eff / chunk) gate overstates it up to 2x)."""
    alone = dict(row) | ({"concurrency": 1} if is_disagg(row) else {"bs": 1, "concurrency": 1})
    options = dataclasses.replace(options or ReplayOptions(), protocol=Steady(warm_gens=0, win_gens=1))
    return replay_case(case_of(alone, options)).stats.ttft_max


def _setup(case: Case) -> dict:
    setup = {"pricing": case.pricing, "protocol": case.protocol.name}
    if isinstance(case, AggCase):
        setup |= dataclasses.asdict(case.spec.settings)  # every EngineSettings field, in declaration order
    return setup
