"""Ablation of closed_loop: the replay with one first-token mechanism switched off in turn.

Each mechanism is replayed because an engine does it (estimator/docs/engine-settings.md gives the
citation); switching it off shows what it moves on the measured rows. A mechanism acts on a
replay case (case), on the mapped row (row) or on the statistic reported (mean instead of the
row's stated one); where it does not act on a row, the row keeps closed_loop's figures.

| key | switched off | acts on |
|---|---|---|
| overlap | overlap scheduling: a pass's tokens out when it ends, requests taken in when the pass is formed | agg passes |
| eager_floor | the host floor of eager prefill passes (layers x per-layer eager cost) | agg and prefill-stage passes |
| request_path | the fixed cost on a request's first-token path outside the passes | TRT-LLM agg requests; vLLM's where no dispatch charge holds it |
| compile | the first-use compiles of the run's engine build (per new prefill shape; the first prefix extend) | SGLang agg runs whose build compiles |
| admission | the first token at decode admission (out at the prefill hand-off instead) | disagg requests |
| admission_lag | a busy decode worker's admission one iteration after it sees the hand-off | TRT-LLM, SGLang disagg |
| decode_intake | a busy decode worker's intake every recv-interval passes gating the prefill (taken in at once instead) | SGLang disagg runs whose decode recipe sets it |
| prefill_overlap | a prefill worker's overlap loop: the next batch launched while a batch runs, the batch's KV sent once that launch is done (at its end instead) | SGLang disagg prefill workers |
| kv_pool | vLLM's KV-cache pool capping the running requests (no cap instead) | vLLM agg runs whose clients outnumber what the pool holds |
| cuda_graphs | graphed prefills: vLLM's (capture size holds the budget; eager dispatch instead), SGLang's piecewise graphs (eager floor instead) | vLLM agg, such a capture size; SGLang agg runs it graphs |
| qk_norm | MiniMax-M2's cross-head q/k norm all-reduces in every pass | vLLM, SGLang runs of MiniMax-M2 at TP > 1 |
| moe_backend | the launch's MoE backend: trtllm-gen's curve at every token count (the reference's rule instead) | TRT-LLM DeepSeek-R1 FP4 runs launched with TRTLLM (disagg prefill, B200 agg) |
| tokenizer | the served prompt of the transformers-5 mismatch (the recorded prompt instead) | the mismatched runs |
| client_draws | the client's own seeded length draws (evenly spaced lengths instead) | rows whose client seed is recorded |
| burst | the first wave reaching the engine one request after another (all at once instead) | benchmark rows at C > 1 |
| statistic | the row's stated statistic (the mean instead) | rows stating median or p99 |
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from estimator.closedloop import Benchmark
from estimator.closedloop.cases import AggCase, Case, TandemCase
from estimator.closedloop.engine import PassModel
from estimator.report import metrics
from measurements.mapping import MappedRow
from measurements.tokenizers import served_prompt

PREFIX = "closed_loop-no-"  # an ablated method's name: PREFIX + the mechanism's key


def _same(value):
    return value


def _agg_settings(**changes) -> Callable[[Case], Case]:
    def off(case: Case) -> Case:
        if not isinstance(case, AggCase):
            return case
        return dataclasses.replace(case, spec=dataclasses.replace(case.spec, settings=case.spec.settings.replace(**changes)))

    return off


def _no_floor(case: Case) -> Case:
    return dataclasses.replace(case, spec=dataclasses.replace(case.spec, prefill_floor_ms=0.0))


def _tandem_spec(**changes) -> Callable[[Case], Case]:
    def off(case: Case) -> Case:
        if not isinstance(case, TandemCase):
            return case
        return dataclasses.replace(case, spec=dataclasses.replace(case.spec, **changes))

    return off


def _no_compiles(case: Case) -> Case:
    """The case without first-use compiles: an agg run's per-shape and prefix-extend compiles, a disagg run's prefill-batch compile."""
    return _tandem_spec(prefill_compile_ms=0.0)(_agg_settings(shape_compile_ms=0.0, prefix_compile_ms=0.0)(case))


def _pass_models(**changes) -> Callable[[Case], Case]:
    def off(case: Case) -> Case:
        """The case with `changes` on each of its pass models (agg steps; disagg prefill and decode)."""
        if isinstance(case, AggCase):
            return case if not isinstance(case.steps, PassModel) else dataclasses.replace(case, steps=dataclasses.replace(case.steps, **changes))
        if not (isinstance(case.prefill, PassModel) and isinstance(case.decode, PassModel)):
            return case
        return dataclasses.replace(case, prefill=dataclasses.replace(case.prefill, **changes), decode=dataclasses.replace(case.decode, **changes))

    return off


def _recorded_prompt(row: MappedRow) -> MappedRow:
    """The row priced at the prompt the client recorded, where the server computed another."""
    if row.inputs is None or served_prompt(row.measurement) is None:
        return row
    isl = row.measurement.isl
    fallbacks = tuple(dataclasses.replace(f, inputs=dataclasses.replace(f.inputs, isl=isl)) for f in row.granularity_fallbacks)
    checkpoint = None if row.checkpoint_inputs is None else dataclasses.replace(row.checkpoint_inputs, isl=isl)
    return dataclasses.replace(row, inputs=dataclasses.replace(row.inputs, isl=isl), checkpoint_inputs=checkpoint, granularity_fallbacks=fallbacks)


def _row_without(name: str) -> Callable[[MappedRow], MappedRow]:
    def off(row: MappedRow) -> MappedRow:
        """The row without its launch's setting `name` (the engine's default instead)."""
        settings = row.measurement.settings
        if getattr(settings, name) is None:
            return row
        return dataclasses.replace(row, measurement=dataclasses.replace(row.measurement, settings=settings.replace(**{name: None})))

    return off


def _eager_prefills(row: MappedRow) -> MappedRow:
    """The row with its passes that prefill run eagerly: a vLLM launch without its capture size (the default's, below
    the step budget: the eager dispatch charged), an SGLang launch with its piecewise CUDA graphs off."""
    settings = row.measurement.settings
    if settings.cudagraph_max_tokens is not None:
        return _row_without("cudagraph_max_tokens")(row)
    if row.measurement.engine != "sglang" or settings.piecewise_cuda_graph is False:
        return row
    return dataclasses.replace(row, measurement=dataclasses.replace(row.measurement, settings=settings.replace(piecewise_cuda_graph=False)))


def _benchmark(**changes) -> Callable[[Case], Case]:
    def off(case: Case) -> Case:
        """The case with `changes` on its benchmark protocol (a steady replay unchanged)."""
        if not isinstance(case.protocol, Benchmark):
            return case
        return dataclasses.replace(case, protocol=dataclasses.replace(case.protocol, **changes))

    return off


@dataclass(frozen=True)
class Mechanism:
    """One replayed mechanism and how the ablation switches it off."""

    key: str  # short name, the ablated method's suffix
    label: str  # what is switched off, as the report's table heads it
    case: Callable[[Case], Case] = _same  # the replay case with the mechanism off (unchanged where it does not act)
    row: Callable[[MappedRow], MappedRow] = _same  # the mapped row with the mechanism off
    stated_statistic: bool = True  # False: the replay reports the mean whatever the row states


MECHANISMS: Mapping[str, Mechanism] = MappingProxyType({m.key: m for m in (
    Mechanism("overlap", "overlap scheduling", case=_agg_settings(overlap_scheduler=False)),
    Mechanism("eager_floor", "eager prefill floor", case=_no_floor),
    Mechanism("request_path", "request path", case=_agg_settings(request_path_ms=0.0)),
    Mechanism("compile", "first-use compiles", case=_no_compiles),
    Mechanism("admission", "first token at decode admission", case=_tandem_spec(first_token_on_admission=False)),
    Mechanism("admission_lag", "admission one iteration after the hand-off is seen", case=_tandem_spec(admission_lag=False)),
    Mechanism("decode_intake", "decode intake every recv-interval passes", case=_tandem_spec(decode_intake_interval=1)),
    Mechanism("prefill_overlap", "prefill workers' overlap loop (launch while the last batch runs, its KV after that launch)", case=_tandem_spec(prefill_overlap=False)),
    Mechanism("kv_pool", "vLLM KV-pool cap on running requests", row=_row_without("gpu_memory_utilization")),
    Mechanism("cuda_graphs", "graphed prefills: vLLM's capture size, SGLang's piecewise graphs (eager instead)", row=_eager_prefills),
    Mechanism("qk_norm", "q/k norm all-reduces (MiniMax-M2)", case=_pass_models(qk_norm_allreduces=0)),
    Mechanism("moe_backend", "the launch's MoE backend (trtllm-gen)", case=_pass_models(moe_backend=None)),
    Mechanism("tokenizer", "served prompt (tokenizer mismatch)", row=_recorded_prompt),
    Mechanism("client_draws", "the client's seeded length draws (evenly spaced lengths instead)", case=_benchmark(seed=None)),
    Mechanism("burst", "the first wave reaching the engine in turn (all at once instead)", case=_benchmark(staggered=False)),
    Mechanism("statistic", "stated statistic (mean instead)", stated_statistic=False),
)})  # fmt: skip
ABLATED_METHODS = tuple(PREFIX + key for key in MECHANISMS)  # the ablation's methods, in table order
ABLATION_KEYS = ["backend", "mode"]  # the ablation table's partitions


def ablation_table(points: pd.DataFrame) -> dict | None:
    """closed_loop's TTFT and TPOT error per backend x mode (and over all rows) beside the same rows'
    error with each mechanism off, on the rows closed_loop and every ablated method cover; None when
    the points hold no ablated method (report --ablation computes them)."""
    keys = [key for key in MECHANISMS if (points["method"] == PREFIX + key).any()]
    if not keys:
        return None
    hit = points[points["covered"]]
    full = hit[hit["method"] == "closed_loop"].set_index("id")
    ablated = {key: hit[hit["method"] == PREFIX + key].set_index("id") for key in keys}
    ids = full.index.intersection(functools.reduce(pd.Index.intersection, (a.index for a in ablated.values())))
    full = full.loc[ids]
    groups = [("all", ids), *((" / ".join(map(str, name)), group.index) for name, group in full.groupby(ABLATION_KEYS, sort=True))]
    rows = [{"partition": name, "n": len(index), "closed_loop": metrics.group_stats(full.loc[index]),
             **{key: metrics.group_stats(ablated[key].loc[index]) for key in keys}} for name, index in groups]  # fmt: skip
    return {"mechanisms": [(key, MECHANISMS[key].label) for key in keys], "rows": rows}
