"""Replay cases: everything one replay depends on (its memo key), made ready for its kernel, and
the memoized replay (estimator.closedloop.runs builds engine-priced cases, rows the row-priced ones)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from estimator.caching import register
from estimator.closedloop.engine import PassModel, TableExtent, engine_tables
from estimator.closedloop.pricing import PassPricer, engine_pricer, flat_pricer, row_pricer
from estimator.closedloop.protocol import Protocol, RunPlan, run_plan
from estimator.closedloop.replay import replay_agg, replay_tandem
from estimator.closedloop.spec import AggSpec, TandemSpec
from estimator.closedloop.stats import LatencyStats

ROW, ENGINE = "row", "engine"
PRICINGS = (ROW, ENGINE)
MEMO_SIZE = 65_536  # replays kept, least recently used evicted first


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
    whole = s.step_token_budget // (int(plan.isl.min()) - spec.prefix) + 2  # whole prompts in a budget, plus a tail and a head chunk
    return TableExtent(
        tokens=s.step_token_budget, chunks=min(running, s.step_token_budget, whole), chunk=min(s.step_token_budget, longest - spec.prefix),
        start=max(1, longest - 1 if s.chunked_prefill else spec.prefix), rows=min(running * model.query_multiplier, s.step_token_budget),
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
register(MEMO.items.clear)  # estimator.caching.clear_caches empties the replay memo too


def replay_case(case: Case) -> ClosedLoop:
    """The memoized replay of a case (raises InvalidInputError, NoProgressError)."""
    hit = MEMO.get(case)
    if hit is None:
        hit = prepare(case).run()
        MEMO.put(case, hit)
    return hit
