"""The `benchmark_serving` result JSON family -> `Measurement` rows.

One family, versions differ in keys. Each key's meaning and unit is taken from the client's own code:

* vLLM ``benchmarks/benchmark_serving.py`` @ 8668d7c05027b98ac66bd5540955dd2ce3a0f318 (the older key
  set; the client the InferenceX runs use, see ``measurements.clients.INFERENCEX``): ``--save-result``
  writes ``date`` (``%Y%m%d-%H%M%S``), ``backend``, ``model_id``, ``num_prompts``, ``request_rate``
  (req/s, the string ``"inf"`` when every request is sent at t = 0), ``completed`` (successful
  requests), ``total_input_tokens`` / ``total_output_tokens`` (over the successful requests),
  ``{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms`` (ms; ``calculate_metrics`` scales the
  per-request seconds by 1000) and always the per-request ``input_lens``, ``output_lens`` (tokens; 0
  for a failed request), ``ttfts`` (seconds; 0 for a failed request), ``itls`` (per request, the gaps
  between streamed chunks after the first, seconds) and ``errors``. No ``max_concurrency``, no
  warm-ups.
* vLLM ``vllm/benchmarks/serve.py`` (``vllm bench serve``) @ def9ce85ba1079af970a58ed3d42dd861ae35d58
  (the newer key set): as above plus ``endpoint_type``, ``label``, ``burstiness``,
  ``max_concurrency`` (null: unlimited), ``failed``, ``request_goodput``, ``max_output_tokens_per_s``,
  ``max_concurrent_requests``; the per-request arrays only with ``--save-detailed``; ``--num-warmups``
  (default 0), the lengths (``--random-input-len`` ...) and ``--random-range-ratio`` are not saved;
  ``--append-result`` appends one JSON object per line.
* SGLang ``python/sglang/bench_serving.py`` @ 50a613687fe1ffc6f1bb630c684a24c428a54a74: its JSONL
  line (one per run, appended) holds ``backend``, ``dataset_name``, ``request_rate``,
  ``total_input_tokens``, ``total_output_tokens``, ``total_output_tokens_retokenized``,
  ``{mean,median}_e2e_latency_ms``, ``median_ttft_ms``, ``median_itl_ms``, ``random_input_len``,
  ``random_output_len``, ``random_range_ratio`` (the lengths' flags, meaningful for the random
  dataset), ``duration``, ``completed``; later versions add ``max_concurrency`` and the mean/p99
  statistics under the vLLM names.

TPOT in every version is ``(latency - ttft) / (output_len - 1)`` per request with more than one
output token (``calculate_metrics``), the statistic taken over requests. From the per-request arrays
it is ``sum(itls[i]) / (output_lens[i] - 1)``: the request functions (``backend_request_func.py``)
append each chunk's gap since the previous one to ``itl`` and end ``latency`` at the last chunk, so
``latency - ttft == sum(itl)``. A file with no TPOT but an ITL statistic (the older SGLang line)
takes the ITL statistic, and its ``tpot_definition`` says so.

A fact the file lacks (isl, osl, random-range-ratio, warm-ups, statistic, ignore-eos) comes from
``Supplied`` (flags over the deployment's ``client:`` block); the row's provenance lists which facts
were supplied and which derived. The row keeps the chosen statistic in ``ttft_ms`` / ``tpot_ms`` and
every statistic the file holds or its arrays give (mean, median, p99) in its provenance.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from estimator.errors import InvalidInputError
from measurements import builds
from measurements.importers.deployment import CLIENT_KEYS, STATISTICS, DeploymentFile
from measurements.schema import Measurement, Protocol

FORMAT = "benchmark_serving"
SOURCE = "benchmark_serving"  # the rows' source key
CITATIONS = {
    "vllm-legacy": "vllm-project/vllm benchmarks/benchmark_serving.py@8668d7c05027b98ac66bd5540955dd2ce3a0f318",
    "vllm-bench-serve": "vllm-project/vllm vllm/benchmarks/serve.py@def9ce85ba1079af970a58ed3d42dd861ae35d58",
    "sglang": "sgl-project/sglang python/sglang/bench_serving.py@50a613687fe1ffc6f1bb630c684a24c428a54a74",
}
CLIENT_NAMES = {
    "vllm-legacy": "vLLM benchmarks/benchmark_serving.py",
    "vllm-bench-serve": "vLLM vllm bench serve",
    "sglang": "SGLang bench_serving",
}
SIGNATURE_KEYS = frozenset({"completed", "total_input_tokens", "total_output_tokens", "request_throughput", "duration"})
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl)_ms$")
TPOT_DEFINITION = "(e2e - ttft)/(output_len - 1) per request, {stat} over requests"
ITL_DEFINITION = "{stat} inter-token latency over all streamed token gaps (the file has no TPOT)"


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
            if flags.get(name) is not None:
                values[name] = (_checked(name, flags[name], "--" + name.replace("_", "-")), "--" + name.replace("_", "-"))
            elif client.get(name) is not None:
                values[name] = (_checked(name, client[name], f"client block {name}"), "client block")
        return Supplied(values)


def _checked(name: str, value: Any, where: str) -> Any:
    if name in ("isl", "osl"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"{where} must be a positive integer, got {value!r}")
    elif name == "num_warmups":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{where} must be an integer >= 0, got {value!r}")
    elif name == "random_range_ratio":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise InvalidInputError(f"{where} must be in (0, 1], got {value!r}")
        value = float(value)
    elif name == "statistic":
        if value not in STATISTICS:
            raise InvalidInputError(f"{where} must be one of {', '.join(STATISTICS)}, got {value!r}")
    elif name == "ignore_eos" and not isinstance(value, bool):
        raise InvalidInputError(f"{where} must be true or false, got {value!r}")
    return value


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The result objects of a file: one JSON object, or one per line (vLLM --append-result, SGLang's
    JSONL); InvalidInputError naming the file when it is not a benchmark_serving result."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        records = [json.loads(text)]
    except json.JSONDecodeError:
        try:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise InvalidInputError(f"{path}: unknown format (not JSON or JSON lines)") from None
    if not records or not all(isinstance(r, dict) for r in records):
        raise InvalidInputError(f"{path}: unknown format (expected a JSON object per run)")
    for record in records:
        if not SIGNATURE_KEYS & record.keys():
            raise InvalidInputError(f"{path}: unknown format (no benchmark_serving keys: {', '.join(sorted(SIGNATURE_KEYS))})")
    return records


def flavour(record: Mapping[str, Any]) -> str:
    """Which client wrote the record, by the keys only it writes."""
    if "total_output_tokens_retokenized" in record:
        return "sglang"
    if {"endpoint_type", "burstiness", "max_concurrency", "failed"} & record.keys():
        return "vllm-bench-serve"
    return "vllm-legacy"


@dataclass(frozen=True)
class _PerRequest:
    """The successful requests' arrays (lengths in tokens, latencies in ms)."""

    input_lens: np.ndarray
    output_lens: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray  # requests with more than one output token


def _per_request(record: Mapping[str, Any], where: str) -> _PerRequest | None:
    """The per-request arrays of a --save-detailed record (None when it has none)."""
    names = ("input_lens", "output_lens", "ttfts", "itls")
    if not all(isinstance(record.get(n), list) for n in names):
        return None
    lengths = {len(record[n]) for n in names}
    if len(lengths) != 1:
        raise InvalidInputError(f"{where}: per-request arrays differ in length ({', '.join(f'{n} {len(record[n])}' for n in names)})")
    try:
        ins = np.asarray(record["input_lens"], dtype=float)
        outs = np.asarray(record["output_lens"], dtype=float)
        ttfts = np.asarray(record["ttfts"], dtype=float)
        itl_sums = np.asarray([math.fsum(gaps) if gaps else 0.0 for gaps in record["itls"]], dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{where}: per-request arrays are not numbers") from None
    errors = record.get("errors")
    ok = (ttfts > 0) & (outs > 0)
    if isinstance(errors, list) and len(errors) == len(ok):
        ok &= np.asarray([not e for e in errors], dtype=bool)
    multi = ok & (outs > 1)
    return _PerRequest(ins[ok], outs[ok], ttfts[ok] * 1000.0, itl_sums[multi] / (outs[multi] - 1) * 1000.0)


def _statistics(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {}
    return {"mean": float(np.mean(values)), "median": float(np.median(values)), "p99": float(np.percentile(values, 99))}


def _file_statistics(record: Mapping[str, Any], metric: str) -> dict[str, float]:
    out = {}
    for stat in STATISTICS:
        value = record.get(f"{stat}_{metric}_ms")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[stat] = float(value)
    return out


def _number(record: Mapping[str, Any], key: str) -> float | None:
    value = record.get(key)
    if value is None or isinstance(value, bool):
        return None
    if value == "inf":
        return math.inf
    return float(value) if isinstance(value, (int, float)) else None


def import_record(record: Mapping[str, Any], deployment: DeploymentFile, supplied: Supplied, row_id: str, label: str) -> tuple[Measurement, list[str]]:
    """One run's row and its warnings; InvalidInputError naming `label` when a needed fact is missing."""
    kind = flavour(record)
    notes: dict[str, str] = {"import": FORMAT, "file": label, "client": kind}
    supplied_names: list[str] = []
    derived: list[str] = []

    def fact(name: str, own: Any) -> Any:
        """The file's own value, else the supplied one (noted)."""
        if own is not None:
            return own
        value = supplied.get(name)
        if value is not None:
            supplied_names.append(f"{name}={value} ({supplied.values[name][1]})")
        return value

    arrays = _per_request(record, label)
    ttft_stats = _file_statistics(record, "ttft") or (_statistics(arrays.ttft_ms) if arrays else {})
    tpot_stats = _file_statistics(record, "tpot") or (_statistics(arrays.tpot_ms) if arrays else {})
    itl_stats = _file_statistics(record, "itl")
    if not ttft_stats and not tpot_stats and not itl_stats:
        raise InvalidInputError(f"{label}: no latency fields (no *_ttft_ms / *_tpot_ms keys and no per-request ttfts/itls)")
    statistic = fact("statistic", None) or "mean"
    if supplied.get("statistic") is None:
        derived.append("statistic=mean (default)")
    ttft = ttft_stats.get(statistic)
    if ttft is None:
        raise InvalidInputError(f"{label}: no {statistic} TTFT (has {', '.join(ttft_stats) or 'none'}; choose another with --statistic)")
    tpot, tpot_definition = tpot_stats.get(statistic), TPOT_DEFINITION.format(stat=statistic)
    if tpot is None and itl_stats.get(statistic) is not None:
        tpot, tpot_definition = itl_stats[statistic], ITL_DEFINITION.format(stat=statistic)
    if tpot is None:
        raise InvalidInputError(f"{label}: no {statistic} TPOT (has {', '.join(tpot_stats) or 'none'}; choose another with --statistic)")
    if not (ttft > 0 and tpot > 0):
        raise InvalidInputError(f"{label}: {statistic} TTFT {ttft} ms and TPOT {tpot} ms must be > 0 (did every request fail?)")
    for metric, stats in (("ttft", ttft_stats), ("tpot", tpot_stats)):
        notes.update({f"{metric}_{s}_ms": f"{v:.6g}" for s, v in stats.items()})

    completed = _number(record, "completed")
    random_dataset = record.get("dataset_name") == "random"
    ratio = fact("random_range_ratio", _number(record, "random_range_ratio") if random_dataset else None)
    isl = fact("isl", record.get("random_input_len") if random_dataset else None)
    osl = fact("osl", record.get("random_output_len") if random_dataset else None)
    mean_in, mean_out, source = _mean_lengths(record, arrays, completed)
    if mean_in is not None:
        notes.update({"mean_isl": f"{mean_in:.6g}", "mean_osl": f"{mean_out:.6g}"})
    if isl is None or osl is None:
        if mean_in is None:
            raise InvalidInputError(f"{label}: no lengths (no totals or per-request lengths; give --isl and --osl)")
        isl, how_in = _nominal(arrays.input_lens if arrays else None, mean_in, ratio, source) if isl is None else (isl, None)
        osl, how_out = _nominal(arrays.output_lens if arrays else None, mean_out, ratio, source) if osl is None else (osl, None)
        derived += [f"{n}={v} ({how})" for n, v, how in (("isl", isl, how_in), ("osl", osl, how_out)) if how]

    num_prompts = _number(record, "num_prompts")
    if num_prompts is None and isinstance(record.get("input_lens"), list):
        num_prompts = len(record["input_lens"])
        derived.append(f"num_prompts={num_prompts} (per-request arrays)")
    request_rate = _number(record, "request_rate")
    concurrency = _number(record, "max_concurrency")
    if concurrency is None and request_rate == math.inf and num_prompts is not None:
        concurrency = num_prompts
        derived.append(f"concurrency={int(num_prompts)} (no max_concurrency, every request sent at t = 0)")
    agg = deployment.agg
    if agg is not None and concurrency is not None:  # the client's cap spread over the attention-DP ranks of the one worker
        agg = dataclasses.replace(agg, batch_size=math.ceil(concurrency / (agg.attention_dp or 1)))
        derived.append(f"agg_batch_size={agg.batch_size} (concurrency / attention_dp)")
    prefill, decode = deployment.prefill, deployment.decode
    if prefill is not None and decode is not None:  # the rule measurements.topologies.runs.published_run applies to a disagg config without batch sizes
        settings = deployment.settings
        prefill = dataclasses.replace(prefill, batch_size=max(1, settings.step_token_budget // int(isl)))
        derived.append(f"prefill_batch_size={prefill.batch_size} (whole prompts of the step token budget {settings.step_token_budget})")
        cap = settings.max_num_seqs or (math.ceil(concurrency / decode.workers / (decode.attention_dp or 1)) if concurrency else None)
        if cap is not None:
            decode = dataclasses.replace(decode, batch_size=cap)
            derived.append(f"decode_batch_size={cap} ({'the engine cap' if settings.max_num_seqs else 'the clients per rank'})")
    warmups = fact("num_warmups", None)
    if warmups is not None:
        notes["num_warmups"] = str(warmups)
    warnings = []
    result_model = record.get("model_id")
    if result_model and result_model != deployment.model:
        notes["result_model"] = str(result_model)
        warnings.append(f"{label}: result model {result_model!r} differs from the deployment's {deployment.model!r}; both recorded")
    if supplied_names:
        notes["supplied"] = ", ".join(supplied_names)
    if derived:
        notes["derived"] = ", ".join(derived)
    dataset = record.get("dataset_name")
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
        measured_date=_date(record.get("date")),
        protocol=Protocol(
            client=CLIENT_NAMES[kind] + (f", {dataset} dataset" if dataset else ""),
            num_prompts=None if num_prompts is None else int(num_prompts),
            request_rate=request_rate,
            random_range_ratio=ratio,
            ignore_eos=fact("ignore_eos", None),
            client_citation=CITATIONS[kind],
        ),
        settings=deployment.settings,
    )
    return dataclasses.replace(m, settings=m.settings.replace(shape_compile_ms=builds.shape_compile_ms(m))), warnings


def _mean_lengths(record: Mapping[str, Any], arrays: _PerRequest | None, completed: float | None) -> tuple[float | None, float | None, str]:
    """Mean input and output tokens per successful request: from the arrays, else from the totals."""
    if arrays is not None and arrays.input_lens.size:
        return float(arrays.input_lens.mean()), float(arrays.output_lens.mean()), "per-request lengths"
    total_in, total_out = _number(record, "total_input_tokens"), _number(record, "total_output_tokens")
    if completed and total_in is not None and total_out is not None:
        return total_in / completed, total_out / completed, "total_*_tokens / completed"
    return None, None, ""


def _nominal(lengths: np.ndarray | None, mean: float, ratio: float | None, source: str) -> tuple[int, str]:
    """The nominal (maximum) length of lengths uniform on [r*L, L]: the largest measured one, else
    from the mean, L = 2 mean / (1 + r) (r unknown: taken as fixed lengths, L = mean)."""
    if lengths is not None and lengths.size:
        return max(1, int(lengths.max())), "max of per-request lengths"
    r = 1.0 if ratio is None else ratio
    return max(1, round(2 * mean / (1 + r))), f"from the mean, {source}, random_range_ratio {r}"


def _date(value: Any) -> str | None:
    """The ISO date of the client's %Y%m%d-%H%M%S stamp (None when absent or another form)."""
    match = re.match(r"^(\d{4})(\d{2})(\d{2})-\d{6}$", str(value)) if value else None
    return f"{match[1]}-{match[2]}-{match[3]}" if match else None
