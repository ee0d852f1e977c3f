"""What one benchmark result says about one run (`ResultRun`), and the measurement row it makes with the deployment.

Every format reader (`measurements.importers.formats`) turns a result into `ResultRun`s in the
schema's units; `to_row` completes each with the deployment file and the supplied facts:

* every fact, the result's own and a reader's derived ones included, is held to the rules a supplied
  one is (`stated`, `_checked`: counts whole and within [1, MAX_SIZE], the range ratio in (0, 1], the
  request rate > 0); a run breaking one is refused with a line naming the field and value;
* a fact the result states wins; else the supplied one (a flag, else the deployment's ``client:``
  block), listed under ``supplied=`` in the row's provenance; else a derived one, listed under
  ``derived=`` (lengths from the measured ones, the concurrency of a run that sent every request at
  t = 0, batch sizes from the layout);
* the row's ``ttft_ms`` / ``tpot_ms`` are the chosen statistic (``--statistic``, default mean), and
  every statistic the result keeps is in the row's `Statistics`;
* a result naming a model that is a known config of another model than the deployment's (another
  architecture or other decoder sizes, `estimator.models.model_identity`) is refused; a name that
  differs but is unknown (a served name) is recorded beside the deployment's with a warning.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from estimator.caching import memo
from estimator.closedloop import check_client_seed
from estimator.deployment import MAX_SIZE
from estimator.errors import InvalidInputError, UnknownModelError
from estimator.models import model_identity
from measurements import builds
from measurements.importers.deployment import CLIENT_KEYS, DeploymentFile
from measurements.schema import LATENCY_RESOLUTION_MS, STATISTICS, Measurement, Protocol, Statistics

SOURCE = "import"  # the imported rows' source key


@dataclass(frozen=True)
class Supplied:
    """Facts given outside the result file: each value with where it came from ("--isl", "client block")."""

    values: Mapping[str, tuple[Any, str]]  # fact -> (value, origin)

    def get(self, name: str) -> Any:
        return self.values[name][0] if name in self.values else None

    @staticmethod
    def of(flags: Mapping[str, Any], client: Mapping[str, Any]) -> Supplied:
        """The supplied facts: flags (name -> value, None: not given) over the deployment's client: block."""
        values: dict[str, tuple[Any, str]] = {}
        for name in CLIENT_KEYS:
            flag = "--" + name.replace("_", "-")
            if flags.get(name) is not None:
                values[name] = (_checked(name, flags[name], flag), flag)
            elif client.get(name) is not None:
                values[name] = (_checked(name, client[name], f"client block {name}"), "client block")
        return Supplied(values)


INTEGER_FACTS: Mapping[str, int] = MappingProxyType({"isl": 1, "osl": 1, "concurrency": 1, "num_prompts": 1, "num_warmups": 0})  # fact -> its least value


def stated(name: str, value: Any, where: str) -> Any:
    """A fact the result file states, by the rules of a supplied one (`where` names the file and its key,
    e.g. "run.json: max_concurrency"); None when the file leaves it out (absent or null). A whole float
    up to MAX_SIZE counts as an integer (a larger one is refused as written) and the string "inf" as
    infinity, as the clients write them."""
    if value is None:
        return None
    if isinstance(value, str) and value == "inf":
        value = math.inf
    elif name in INTEGER_FACTS and isinstance(value, float) and abs(value) <= MAX_SIZE and value == int(value):
        value = int(value)
    return _checked(name, value, where)


def _checked(name: str, value: Any, where: str) -> Any:
    """The value of a supplied fact; InvalidInputError naming it when it is not one."""
    if name in INTEGER_FACTS:
        minimum = INTEGER_FACTS[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidInputError(f"{where} must be {'a positive integer' if minimum == 1 else f'an integer >= {minimum}'}, got {value!r}")
        if value > MAX_SIZE:
            raise InvalidInputError(f"{where} must be at most {MAX_SIZE}, got {value}")
    elif name == "random_range_ratio":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise InvalidInputError(f"{where} must be in (0, 1], got {value!r}")
        value = float(value)
    elif name == "request_rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
            raise InvalidInputError(f"{where} must be a positive number of requests/s or inf, got {value!r}")
        value = float(value)
    elif name == "statistic":
        if value not in STATISTICS:
            raise InvalidInputError(f"{where} must be one of {', '.join(STATISTICS)}, got {value!r}")
    elif name == "client_seed":
        check_client_seed(value, where)
    elif name == "ignore_eos" and not isinstance(value, bool):
        raise InvalidInputError(f"{where} must be true or false, got {value!r}")
    return value


@dataclass(frozen=True)
class Lengths:
    """The successful requests' token counts as a result reports them."""

    mean_isl: float  # mean input tokens per request, > 0
    mean_osl: float  # mean output tokens per request, > 0
    max_isl: int | None  # largest input length measured (None: the result keeps no maximum)
    max_osl: int | None  # largest output length measured
    source: str  # where they come from, e.g. "per-request lengths", "total_*_tokens / completed"


@dataclass(frozen=True)
class ResultRun:
    """One run as its result states it, in the schema's units (None: the result does not say)."""

    client: str  # the client (and dataset), e.g. "vLLM vllm bench serve, random dataset"
    citation: str  # "owner/repo path@commit" the field meanings are taken from
    ttft_ms: Mapping[str, float]  # statistic (mean | median | p99) -> TTFT over the successful requests, ms
    tpot_ms: Mapping[str, tuple[float, str]]  # statistic -> (TPOT, ms; its definition, "{stat}" standing for the statistic)
    lengths: Lengths | None  # measured lengths (None: the result keeps none)
    isl: int | None  # nominal input tokens the client was configured with (the maximum when lengths vary)
    osl: int | None  # nominal output tokens
    random_range_ratio: float | None  # lengths uniform on [r*L, L]; 1.0: fixed
    num_prompts: int | None  # requests in the measured pass
    request_rate: float | None  # requests/s offered; inf: every request sent at once (up to the concurrency)
    concurrency: int | None  # requests in flight at most
    num_warmups: int | None  # warm-up requests before the measured ones
    ignore_eos: bool | None  # outputs always run to osl tokens
    measured_date: str | None  # ISO date
    model: str | None  # the model name the client sent (often a served name)
    notes: Mapping[str, str]  # further provenance, key -> value (e.g. the client flavour)
    derived: tuple[str, ...] = ()  # facts the reader derived, each "name=value (how)"
    draws: str | None = None  # its random lengths' rule, which a supplied client_seed repeats (SEEDED_DRAWS); None: another rule


# The length rules the replay repeats from a client's seed (estimator.closedloop.lengths.client_draws): np.random.seed(seed),
# then np.random.randint(low, L + 1, size=N) for the inputs and for the outputs, low being the client's lower bound
SEEDED_DRAWS: Mapping[str, str] = MappingProxyType({
    "vllm": "int(r*L): vLLM benchmarks/benchmark_serving.py and its copies (InferenceX, srt-slurm sa-bench)",
    "sglang": "max(int(r*L), 1): SGLang bench_serving compute_random_lens",
})  # fmt: skip


def seed_reason(draws: str | None, client: str, ratio: float | None, isl: int, osl: int) -> str | None:
    """Why a client seed cannot be repeated for this run (None: it can): a client that draws its lengths by another rule,
    or a vLLM-family client whose lower bound int(r*L) is 0 (the replay draws from 1, as SGLang's client does)."""
    if draws not in SEEDED_DRAWS:
        return f"{client} draws its lengths by a rule the replay does not repeat (it repeats {'; '.join(SEEDED_DRAWS.values())})"
    if draws == "vllm" and ratio is not None and min(int(isl * ratio), int(osl * ratio)) < 1:
        return f"its client draws lengths from int(r*L) = 0 at r = {ratio}, which the replay does not repeat (it draws from 1)"
    return None


def to_row(run: ResultRun, deployment: DeploymentFile, supplied: Supplied, row_id: str, label: str, fmt: str) -> tuple[Measurement, list[str]]:
    """The measurement row of one run and its warnings; InvalidInputError naming `label` when a
    needed fact is missing or the result names another model."""
    notes: dict[str, str] = {"import": fmt, "file": label, **run.notes}
    supplied_names: list[str] = []
    derived = list(run.derived)

    def fact(name: str, own: Any) -> Any:
        """The result's own value (checked as a supplied one is: a reader's derived value too), else the supplied one (noted)."""
        if own is not None:
            return _checked(name, own, f"{label}: {name}")
        value = supplied.get(name)
        if value is not None:
            supplied_names.append(f"{name}={value} ({supplied.values[name][1]})")
        return value

    statistic = fact("statistic", None)
    if statistic is None:
        statistic = "mean"
        derived.append("statistic=mean (default)")
    ttft, tpot, tpot_definition = _headline(run, statistic, label)

    ratio = fact("random_range_ratio", run.random_range_ratio)
    isl, osl = fact("isl", run.isl), fact("osl", run.osl)
    if run.lengths is not None:
        notes.update({"mean_isl": f"{run.lengths.mean_isl:.6g}", "mean_osl": f"{run.lengths.mean_osl:.6g}"})
    if isl is None or osl is None:
        if run.lengths is None:
            raise InvalidInputError(f"{label}: no lengths (the result keeps no configured or measured lengths; give --isl and --osl)")
        if isl is None:
            isl, how = _nominal("isl", run.lengths.max_isl, run.lengths.mean_isl, ratio, run.lengths.source, label)
            derived.append(f"isl={isl} ({how})")
        if osl is None:
            osl, how = _nominal("osl", run.lengths.max_osl, run.lengths.mean_osl, ratio, run.lengths.source, label)
            derived.append(f"osl={osl} ({how})")

    num_prompts = fact("num_prompts", run.num_prompts)
    request_rate = fact("request_rate", run.request_rate)
    concurrency = fact("concurrency", run.concurrency)
    ignore_eos, num_warmups = fact("ignore_eos", run.ignore_eos), fact("num_warmups", run.num_warmups)
    client_seed = fact("client_seed", None)  # no result format records it
    reason = None if client_seed is None else seed_reason(run.draws, run.client, ratio, int(isl), int(osl))
    if reason is not None:
        raise InvalidInputError(f"{label}: client_seed {client_seed} supplied, but {reason}")
    agg, prefill, decode, layout_notes = _layouts(deployment, concurrency, int(isl))
    derived += layout_notes

    warnings = _model_warnings(run.model, deployment.model, label)
    if run.model and run.model != deployment.model:
        notes["result_model"] = run.model
    if supplied_names:
        notes["supplied"] = ", ".join(supplied_names)
    if derived:
        notes["derived"] = ", ".join(derived)
    m = Measurement(
        id=row_id,
        source=SOURCE,
        provenance="; ".join(f"{k}={v}" for k, v in notes.items()),
        engine=deployment.backend,
        engine_version=deployment.backend_version,
        image=deployment.image,
        system=deployment.system,
        model=deployment.model,
        precision=deployment.precision,
        gemm_quant=deployment.gemm_quant,
        moe_quant=deployment.moe_quant,
        mode=deployment.mode,
        isl=int(isl),
        osl=int(osl),
        concurrency=None if concurrency is None else int(concurrency),
        agg=agg,
        prefill=prefill,
        decode=decode,
        ttft_ms=ttft,
        tpot_ms=tpot,
        ttft_statistic=f"{statistic} over requests",
        tpot_definition=tpot_definition,
        statistics=Statistics(
            statistic=statistic,
            **{f"ttft_{s}_ms": run.ttft_ms.get(s) for s in STATISTICS},
            **{f"tpot_{s}_ms": run.tpot_ms[s][0] if s in run.tpot_ms else None for s in STATISTICS},
        ),
        measured_date=run.measured_date,
        protocol=Protocol(
            client=run.client,
            num_prompts=None if num_prompts is None else int(num_prompts),
            request_rate=request_rate,
            random_range_ratio=ratio,
            ignore_eos=ignore_eos,
            client_citation=run.citation,
            num_warmups=num_warmups,
            client_seed=client_seed,
        ),
        settings=deployment.settings,
    )
    return builds.with_build_compiles(m), warnings


def _headline(run: ResultRun, statistic: str, label: str) -> tuple[float, float, str]:
    """(TTFT ms, TPOT ms, TPOT definition) of the chosen statistic; InvalidInputError when the result
    lacks it, or when it or any statistic the row keeps is not a finite number of ms above a clock's nanosecond."""
    if not run.ttft_ms and not run.tpot_ms:
        raise InvalidInputError(f"{label}: no latency fields (no TTFT or TPOT statistic and no per-request latencies)")
    kept = [(f"{s} TTFT", v) for s, v in run.ttft_ms.items()] + [(f"{s} TPOT", v) for s, (v, _) in run.tpot_ms.items()]
    for name, value in kept:
        if not math.isfinite(value):
            raise InvalidInputError(f"{label}: {name} {value} ms is not a finite latency")
        if value <= 0:
            raise InvalidInputError(f"{label}: {name} {value} ms is not a latency (> 0 ms; did every request fail?)")
        if value < LATENCY_RESOLUTION_MS:
            raise InvalidInputError(f"{label}: {name} {value} ms is below a clock's nanosecond, not a measured latency")
    if statistic not in run.ttft_ms:
        raise InvalidInputError(f"{label}: no {statistic} TTFT (has {', '.join(run.ttft_ms) or 'none'}; choose another with --statistic)")
    if statistic not in run.tpot_ms:
        raise InvalidInputError(f"{label}: no {statistic} TPOT (has {', '.join(run.tpot_ms) or 'none'}; choose another with --statistic)")
    ttft, (tpot, definition) = run.ttft_ms[statistic], run.tpot_ms[statistic]
    return ttft, tpot, definition.format(stat=statistic)


def _nominal(name: str, largest: int | None, mean: float, ratio: float | None, source: str, label: str) -> tuple[int, str]:
    """The nominal (maximum) length, tokens, of lengths uniform on [r*L, L]: the largest measured one,
    else from the mean, L = 2 mean / (1 + r) (r in (0, 1]; unknown: taken as fixed lengths, L = mean);
    InvalidInputError naming `name` unless it is within [1, MAX_SIZE] tokens."""
    if largest is not None:
        value, how = largest, f"max of {source}"
    else:
        r = 1.0 if ratio is None else ratio
        value, how = 2 * mean / (1 + r), f"from the mean, {source}, random_range_ratio {r}"
    if not (math.isfinite(value) and 1 <= round(value) <= MAX_SIZE):
        raise InvalidInputError(f"{label}: {name} {how}, is {value:.6g} tokens, not within [1, {MAX_SIZE}]")
    return round(value), how


def _layouts(deployment: DeploymentFile, concurrency: int | None, isl: int):
    """(agg, prefill, decode, derived notes): the deployment's layouts with the batch sizes the run implies."""
    agg, prefill, decode, notes = deployment.agg, deployment.prefill, deployment.decode, []
    if agg is not None and concurrency is not None:  # the client's cap spread over the attention-DP ranks of the one worker
        agg = dataclasses.replace(agg, batch_size=math.ceil(concurrency / (agg.attention_dp or 1)))
        notes.append(f"agg_batch_size={agg.batch_size} (concurrency / attention_dp)")
    if prefill is not None and decode is not None:  # the rule measurements.topologies.runs.published_run applies to a disagg config without batch sizes
        settings = deployment.settings
        prefill = dataclasses.replace(prefill, batch_size=max(1, settings.step_token_budget // isl))
        notes.append(f"prefill_batch_size={prefill.batch_size} (whole prompts of the step token budget {settings.step_token_budget})")
        cap = settings.max_num_seqs or (math.ceil(concurrency / decode.workers / (decode.attention_dp or 1)) if concurrency else None)
        if cap is not None:
            decode = dataclasses.replace(decode, batch_size=cap)
            notes.append(f"decode_batch_size={cap} ({'the engine cap' if settings.max_num_seqs else 'the clients per rank'})")
    return agg, prefill, decode, notes


def _model_warnings(result_model: str | None, deployed: str, label: str) -> list[str]:
    """A warning when the result names another model than the deployment; InvalidInputError when
    that name is a known config of another model (another architecture or other decoder sizes)."""
    if not result_model or result_model == deployed:
        return []
    other, ours = _identity(result_model), _identity(deployed)
    if other is not None and ours is not None and other != ours:
        raise InvalidInputError(
            f"{label}: result model {result_model!r} is a known config of another model ({other.describe()}) "
            f"than the deployment's {deployed!r} ({ours.describe()})"
        )
    return [f"{label}: result model {result_model!r} differs from the deployment's {deployed!r}; both recorded"]


@memo()
def _identity(model: str):
    """The model's identity, None when no config of that name is known (a served name)."""
    try:
        return model_identity(model)
    except (UnknownModelError, InvalidInputError):
        return None
