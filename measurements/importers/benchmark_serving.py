"""The `benchmark_serving` result JSON family -> `ResultRun`s.

One family, its clients differ in keys. Each key's meaning and unit is taken from the client's own code:

* vLLM ``benchmarks/benchmark_serving.py`` @ 8668d7c05027b98ac66bd5540955dd2ce3a0f318 (the older key
  set): ``--save-result`` writes ``date`` (``%Y%m%d-%H%M%S``), ``backend``, ``model_id``,
  ``num_prompts``, ``request_rate`` (req/s, the string ``"inf"`` when every request is sent at
  t = 0), ``completed`` (successful requests), ``total_input_tokens`` / ``total_output_tokens`` (over
  the successful requests), ``{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms`` (ms;
  ``calculate_metrics`` scales the per-request seconds by 1000) and always the per-request
  ``input_lens``, ``output_lens`` (tokens; 0 for a failed request), ``ttfts`` (seconds; 0 for a
  failed request), ``itls`` (per request, the gaps between streamed chunks after the first,
  seconds) and ``errors``. No ``max_concurrency`` (later versions of the file add it and
  ``burstiness``), no warm-ups.
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
  dataset), ``duration``, ``completed``; later versions (@ 0033168f0f58b2bc05aa0273bd475d9c01bafb1c)
  add ``max_concurrency`` (null: no cap), the mean/p99 statistics under the vLLM names,
  ``concurrency`` (the measured mean requests in flight, not a setting: not read),
  ``accept_length`` and, with ``--output-details``, the per-request arrays; the client sends
  ``--warmup-requests`` (default 1) first and does not save the count.
* TensorRT-LLM ``tensorrt_llm/serve/scripts/benchmark_serving.py`` @ f61d71d9fe7b0127ae4c20c3e9aa77dc4d78396f
  (adopted from vLLM's at 200bbf92): the vLLM keys (``date``, ``backend``, ``model_id``,
  ``tokenizer_id``, ``num_prompts``, ``request_rate``, ``burstiness``, ``max_concurrency``, the
  totals, ``{mean,median,std,p99}_{ttft,tpot,itl}_ms``) plus its own ``user_throughput`` (mean
  output tokens/s per request) and ``avg_decoded_tokens_per_iter`` (the last value the server
  reported; > 1 with speculative decoding); the per-request arrays only with ``--save-detailed``;
  a request's output length is the server's ``usage.completion_tokens`` (the tokenizer's count of
  the text when the server gives none). No lengths, range ratio, ignore-eos or warm-ups.
* InferenceX ``utils/bench_serving/benchmark_serving.py`` @ 8b4dcfaebcaf7d431cecbd665b5f87e11304847a
  (the client its ``benchmarks/benchmark_lib.sh`` runs): the vLLM keys plus
  ``benchmark_start_time_unix`` / ``benchmark_end_time_unix`` (epoch seconds); without
  ``--save-detailed`` it drops ``ttfts``, ``itls``, ``generated_texts`` and ``errors`` but keeps
  ``input_lens`` and ``output_lens``; ``--num-warmups`` (benchmark_lib.sh passes 2 x C) is not saved.

TPOT in every version is ``(latency - ttft) / (output_len - 1)`` per request with more than one
output token (``calculate_metrics``), the statistic taken over requests. From the per-request arrays
it is ``sum(itls[i]) / (output_lens[i] - 1)``: the request functions (``backend_request_func.py``)
append each chunk's gap since the previous one to ``itl`` and end ``latency`` at the last chunk, so
``latency - ttft == sum(itl)``. A file with no TPOT but an ITL statistic (the older SGLang line)
takes the ITL statistic, and its TPOT definition says so.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.errors import InvalidInputError
from measurements.importers.document import Document, calendar_date, is_measure, measure, not_measure, number
from measurements.importers.result import Lengths, ResultRun, stated
from measurements.published.derive import replay_range_ratio
from measurements.schema import STATISTICS

SIGNATURE_KEYS = frozenset({"completed", "total_input_tokens", "total_output_tokens", "request_throughput", "duration"})
TPOT_DEFINITION = "(e2e - ttft)/(output_len - 1) per request, {stat} over requests"
ITL_DEFINITION = "{stat} inter-token latency over all streamed token gaps (the file has no TPOT)"


@dataclass(frozen=True)
class Flavour:
    """One client of the family."""

    name: str  # the provenance's client= value
    client: str  # the row's protocol client
    citation: str  # "owner/repo path@commit" of the client's code
    keys: frozenset[str]  # keys only this client writes (any one identifies it; empty: the fallback)
    draws: str | None  # its random dataset's length rule a client_seed repeats (result.SEEDED_DRAWS); None: another rule


FLAVOURS = (
    Flavour("sglang", "SGLang bench_serving", "sgl-project/sglang python/sglang/bench_serving.py@50a613687fe1ffc6f1bb630c684a24c428a54a74",
            frozenset({"total_output_tokens_retokenized"}), "sglang"),
    Flavour("trtllm", "TensorRT-LLM benchmark_serving", "NVIDIA/TensorRT-LLM tensorrt_llm/serve/scripts/benchmark_serving.py@f61d71d9fe7b0127ae4c20c3e9aa77dc4d78396f",
            frozenset({"avg_decoded_tokens_per_iter", "user_throughput"}), None),
    Flavour("inferencex", "InferenceX benchmark_serving.py", "SemiAnalysisAI/InferenceX utils/bench_serving/benchmark_serving.py@8b4dcfaebcaf7d431cecbd665b5f87e11304847a",
            frozenset({"benchmark_start_time_unix"}), "vllm"),
    Flavour("vllm-bench-serve", "vLLM vllm bench serve", "vllm-project/vllm vllm/benchmarks/serve.py@def9ce85ba1079af970a58ed3d42dd861ae35d58",
            frozenset({"endpoint_type", "failed", "max_concurrent_requests"}), None),
    Flavour("vllm-legacy", "vLLM benchmarks/benchmark_serving.py", "vllm-project/vllm benchmarks/benchmark_serving.py@8668d7c05027b98ac66bd5540955dd2ce3a0f318",
            frozenset(), "vllm"),
)  # fmt: skip


def flavour(record: Mapping[str, Any]) -> Flavour:
    """Which client wrote the record, by the keys only it writes."""
    return next(f for f in FLAVOURS if not f.keys or f.keys & record.keys())


def matches(document: Document) -> str | None:
    """None when every JSON object of the document carries the family's keys, else why not."""
    entries = document.entries()
    if entries is None:
        return "not a JSON object or JSON lines of objects"
    records = [e for e in entries if isinstance(e, Mapping)]
    if not all(any(number(r.get(key)) is not None for key in SIGNATURE_KEYS) for r in records):
        return f"no benchmark_serving keys ({', '.join(sorted(SIGNATURE_KEYS))} holding a number)"
    return None


def runs(document: Document) -> list[ResultRun | InvalidInputError]:
    """One run per JSON object (a file of --append-result or SGLang lines holds several); an object
    that cannot be read, or a line that holds none, stands as its InvalidInputError, and the others are still read."""
    entries = document.entries()
    return [e if isinstance(e, InvalidInputError) else _read(e, f"{document.path}" if len(entries) == 1 else f"{document.path} run {i + 1}")
            for i, e in enumerate(entries)]  # fmt: skip


def _read(record: Mapping[str, Any], where: str) -> ResultRun | InvalidInputError:
    """The run of one record, or the InvalidInputError that says why it cannot be read."""
    try:
        return run(record, where)
    except InvalidInputError as exc:
        return exc


@dataclass(frozen=True)
class _PerRequest:
    """The successful requests' arrays (lengths in tokens, latencies in ms)."""

    input_lens: np.ndarray
    output_lens: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray  # requests with more than one output token


def run(record: Mapping[str, Any], where: str) -> ResultRun:
    """The run one result object states."""
    kind = flavour(record)
    arrays = _per_request(record, where)
    ttft = _file_statistics(record, "ttft", where) or (_statistics(arrays.ttft_ms) if arrays else {})
    tpot = _file_statistics(record, "tpot", where) or (_statistics(arrays.tpot_ms) if arrays else {})
    itl = _file_statistics(record, "itl", where)
    tpot_ms = {s: (tpot[s], TPOT_DEFINITION) if s in tpot else (itl[s], ITL_DEFINITION) for s in STATISTICS if s in tpot or s in itl}
    random = record.get("dataset_name") == "random"  # SGLang saves its random dataset's length flags
    derived = []
    num_prompts = _fact(record, "num_prompts", "num_prompts", where)
    if num_prompts is None and isinstance(record.get("input_lens"), list) and record["input_lens"]:
        num_prompts = len(record["input_lens"])
        derived.append(f"num_prompts={num_prompts} (per-request arrays)")
    request_rate, concurrency = _fact(record, "request_rate", "request_rate", where), _fact(record, "max_concurrency", "concurrency", where)
    if concurrency is None and request_rate == math.inf and num_prompts is not None:  # no cap (absent or null): all in flight
        concurrency = num_prompts
        derived.append(f"concurrency={num_prompts} (no max_concurrency, every request sent at t = 0)")
    isl = _fact(record, "random_input_len", "isl", where) if random else None
    osl = _fact(record, "random_output_len", "osl", where) if random else None
    ratio = _range_ratio(record, isl, osl, where, derived) if random else None
    dataset = record.get("dataset_name")
    return ResultRun(
        client=kind.client + (f", {dataset} dataset" if dataset else ""),
        citation=kind.citation,
        ttft_ms=ttft,
        tpot_ms=tpot_ms,
        lengths=_lengths(record, arrays, where),
        isl=isl,
        osl=osl,
        random_range_ratio=ratio,
        num_prompts=num_prompts,
        request_rate=request_rate,
        concurrency=concurrency,
        num_warmups=None,
        ignore_eos=None,
        measured_date=_date(record.get("date")),
        model=str(record["model_id"]) if record.get("model_id") else None,
        notes={"client": kind.name},
        derived=tuple(derived),
        draws=kind.draws if dataset in (None, "random") else None,
    )


def _fact(record: Mapping[str, Any], key: str, name: str, where: str) -> Any:
    """The run fact `name` the record states under `key` (None: absent or null), checked as a supplied one is."""
    return stated(name, record.get(key), f"{where}: {key}")


def _range_ratio(record: Mapping[str, Any], isl: int | None, osl: int | None, where: str, derived: list[str]) -> float | None:
    """SGLang's random_range_ratio as the row's r in (0, 1]: its default 0 draws each length uniform on
    [1, L], recorded as r = 1/max(isl, osl) as the published SGLang rows are (`replay_range_ratio`)."""
    value = record.get("random_range_ratio")
    if value == 0 and not isinstance(value, bool) and isl and osl:
        ratio = replay_range_ratio(0.0, isl, osl)
        derived.append(f"random_range_ratio={ratio} (SGLang's 0: lengths uniform on [1, L])")
        return ratio
    return _fact(record, "random_range_ratio", "random_range_ratio", where)


def _per_request(record: Mapping[str, Any], where: str) -> _PerRequest | None:
    """The per-request arrays of a --save-detailed record (None when it has none)."""
    names = ("input_lens", "output_lens", "ttfts", "itls")
    if not all(isinstance(record.get(n), list) for n in names):
        return None
    if len({len(record[n]) for n in names}) != 1:
        raise InvalidInputError(f"{where}: per-request arrays differ in length ({', '.join(f'{n} {len(record[n])}' for n in names)})")
    ins, outs = _measures(record, "input_lens", where, whole=True), _measures(record, "output_lens", where, whole=True)
    ttfts = _measures(record, "ttfts", where)
    itl_sums = np.asarray([_gap_sum(gaps, i, where) for i, gaps in enumerate(record["itls"])], dtype=float)
    errors = record.get("errors")
    ok = (ttfts > 0) & (outs > 0)
    if isinstance(errors, list) and len(errors) == len(ok):
        ok &= np.asarray([not e for e in errors], dtype=bool)
    multi = ok & (outs > 1)
    with np.errstate(over="ignore"):  # seconds past float range in ms are inf, refused by `to_row`
        return _PerRequest(ins[ok], outs[ok], ttfts[ok] * 1000.0, itl_sums[multi] / (outs[multi] - 1) * 1000.0)


def _measures(record: Mapping[str, Any], name: str, where: str, whole: bool = False) -> np.ndarray:
    """One per-request array (a list) as floats; InvalidInputError naming the first entry that is not a
    finite number >= 0 (a whole one when `whole`: a token count)."""
    values = record[name]
    bad = next((i for i, value in enumerate(values) if not is_measure(value, whole)), None)
    if bad is not None:
        raise not_measure(f"{name}[{bad}]", values[bad], where, whole)
    return np.asarray(values, dtype=float)


def _gap_sum(gaps: Any, i: int, where: str) -> float:
    """The sum of one request's streamed-chunk gaps, s; InvalidInputError unless they are a list of finite numbers >= 0."""
    try:
        total = math.fsum(gaps) if isinstance(gaps, list) else math.nan
        ok = math.isfinite(total) and (not gaps or min(gaps) >= 0)
    except (TypeError, ValueError):  # a gap that is not a number; inf and -inf together
        ok = False
    if not ok:
        raise InvalidInputError(f"{where}: itls[{i}] must be a list of finite gaps >= 0 (s), got {reprlib.repr(gaps)}")
    return total


def _statistics(values: np.ndarray) -> dict[str, float]:
    """Mean, median and p99 of per-request latencies, ms ({}: none); one past float range is inf, refused by `to_row`."""
    if values.size == 0:
        return {}
    with np.errstate(over="ignore", invalid="ignore"):
        return {"mean": float(np.mean(values)), "median": float(np.median(values)), "p99": float(np.percentile(values, 99))}


def _file_statistics(record: Mapping[str, Any], metric: str, where: str) -> dict[str, float]:
    """The result's own statistics of a metric, ms; one present but not a finite number is kept as inf or NaN,
    so that the row names it (result._headline) instead of reporting it missing."""
    out = {}
    for stat in STATISTICS:
        key = f"{stat}_{metric}_ms"
        if record.get(key) is None:
            continue
        value = number(record[key])
        if value is None and not (isinstance(record[key], float) and math.isnan(record[key])):
            raise InvalidInputError(f"{where}: {key} {record[key]!r} is not a number")
        out[stat] = math.nan if value is None else value
    return out


def _lengths(record: Mapping[str, Any], arrays: _PerRequest | None, where: str) -> Lengths | None:
    """The successful requests' lengths: from the arrays, else from the length arrays alone (a failed
    request has output length 0), else mean lengths from the totals."""
    if arrays is not None and arrays.input_lens.size:
        ins, outs = arrays.input_lens, arrays.output_lens
    elif isinstance(record.get("input_lens"), list) and isinstance(record.get("output_lens"), list):
        ins, outs = _measures(record, "input_lens", where, whole=True), _measures(record, "output_lens", where, whole=True)
        if ins.shape != outs.shape:
            raise InvalidInputError(f"{where}: input_lens ({ins.size}) and output_lens ({outs.size}) differ in length")
        ins, outs = ins[outs > 0], outs[outs > 0]
    else:
        ins = outs = np.empty(0)
    if ins.size:
        return Lengths(float(ins.mean()), float(outs.mean()), int(ins.max()), int(outs.max()), "per-request lengths")
    completed = measure(record.get("completed"), "completed", where, whole=True)
    total_in, total_out = (measure(record.get(key), key, where) for key in ("total_input_tokens", "total_output_tokens"))
    if completed and total_in and total_out:  # 0 or absent: no successful request, or no count
        return Lengths(total_in / completed, total_out / completed, None, None, "total_*_tokens / completed")
    return None


def _date(value: Any) -> str | None:
    """The ISO date of the client's %Y%m%d-%H%M%S stamp (None when absent, another form or no calendar day)."""
    match = re.match(r"^(\d{4})(\d{2})(\d{2})-\d{6}$", str(value)) if value else None
    return calendar_date(*match.groups()) if match else None
