"""The metric blocks of genai-perf's ``profile_export_genai_perf.json``, which aiperf's ``profile_export_aiperf.json`` mimics.

Each metric is a top-level key holding ``{"unit": ..., "avg": ..., "p1": ..., ..., "p50": ...,
"p99": ..., "min": ..., "max": ..., "std": ...}`` over the measured requests (genai-perf
``genai_perf/metrics/statistics.py`` ``Statistics`` @ 263c5f6e0c7a6c15472a54409174981f67930cfe: numpy
mean, percentiles 1..99, min, max, std; aiperf ``aiperf/common/models/export_models.py``
``JsonMetricResult`` @ db4f6397d11ee2d4cfbb41f70b2327315163dcf0, "designed to mimic the structure of
the GenAI-Perf JSON output"). Both define, per request:

* ``time_to_first_token``: first response - request start;
* ``inter_token_latency``: (request_latency - time_to_first_token) / (output_sequence_length - 1), for
  requests of at least two output tokens (genai-perf ``llm_profile_data_parser.py``, aiperf
  ``inter_token_latency_metric.py``): the benchmark_serving family's TPOT;
* ``input_sequence_length`` / ``output_sequence_length``: tokens per request.

The statistics kept: mean = ``avg``, median = ``p50``, p99 = ``p99``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.errors import InvalidInputError
from measurements.importers.document import Document, latency, measure
from measurements.importers.result import Lengths, stated

TTFT = "time_to_first_token"
ITL = "inter_token_latency"
ISL = "input_sequence_length"
OSL = "output_sequence_length"
REQUEST_COUNT = "request_count"
STAT_KEYS = {"mean": "avg", "median": "p50", "p99": "p99"}  # the schema's statistic -> the block's key
MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "sec": 1000.0, "s": 1000.0}  # time unit tags (aiperf MetricTimeUnit) -> ms
TPOT_DEFINITION = "(request_latency - ttft)/(output_sequence_length - 1) per request (inter_token_latency), {stat} over requests"


def export_of(document: Document) -> Mapping[str, Any] | str:
    """The document's one JSON object of metric blocks, or why it is not one."""
    objects = document.objects()
    if objects is None or len(objects) != 1:
        return "not one JSON object"
    if not any(is_block(objects[0].get(tag)) for tag in (TTFT, ITL, "request_latency")):
        return "no profile-export metric blocks (time_to_first_token, inter_token_latency)"
    return objects[0]


def is_block(value: Any) -> bool:
    """True for a metric block: a mapping with a unit."""
    return isinstance(value, Mapping) and "unit" in value


def latency_statistics(metrics: Mapping[str, Any], tag: str, where: str) -> dict[str, float]:
    """The mean, median and p99 of a time metric, ms ({} when the metric is absent)."""
    block = metrics.get(tag)
    if not is_block(block):
        return {}
    unit = block["unit"]
    if not isinstance(unit, str) or unit not in MS_PER_UNIT:
        raise InvalidInputError(f"{where}: {tag} unit {unit!r} is not a time unit ({', '.join(MS_PER_UNIT)})")
    return {stat: value * MS_PER_UNIT[unit] for stat, key in STAT_KEYS.items() if (value := latency(block.get(key))) is not None}


def measured(metrics: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The ResultRun fields the metric blocks give: ttft_ms, tpot_ms (inter_token_latency) and lengths."""
    tpot = latency_statistics(metrics, ITL, where)
    return {
        "ttft_ms": latency_statistics(metrics, TTFT, where),
        "tpot_ms": {s: (v, TPOT_DEFINITION) for s, v in tpot.items()},
        "lengths": lengths(metrics, where),
    }


def average(metrics: Mapping[str, Any], tag: str, where: str) -> float | None:
    """A count metric's avg, None when absent; InvalidInputError unless it is a finite number >= 0."""
    block = metrics.get(tag)
    return measure(block.get("avg"), f"{tag} avg", where) if is_block(block) else None


def lengths(metrics: Mapping[str, Any], where: str) -> Lengths | None:
    """The measured lengths: mean and max of input_sequence_length and output_sequence_length (None
    when a block or a mean is absent or 0)."""
    ins, outs = metrics.get(ISL), metrics.get(OSL)
    if not (is_block(ins) and is_block(outs)):
        return None
    (mean_in, max_in), (mean_out, max_out) = _mean_max(ins, ISL, where), _mean_max(outs, OSL, where)
    if not (mean_in and mean_out):
        return None
    return Lengths(mean_in, mean_out, None if max_in is None else round(max_in), None if max_out is None else round(max_out),
                   "input/output_sequence_length statistics")  # fmt: skip


def _mean_max(block: Mapping[str, Any], tag: str, where: str) -> tuple[float | None, float | None]:
    """(avg, max) of a length block, tokens (None: absent); InvalidInputError unless each is a finite number >= 0."""
    return measure(block.get("avg"), f"{tag} avg", where), measure(block.get("max"), f"{tag} max", where)


def config_fact(config: Mapping[str, Any], key: str, name: str, where: str, path: str) -> Any:
    """The run fact `name` a section of input_config states under `key`, checked as a supplied one is
    (`path`: the section's place in messages, e.g. "input_config.loadgen"); None when absent, null or
    "" (genai-perf's nested input_config writes None as "")."""
    value = config.get(key)
    return stated(name, None if value == "" else value, f"{where}: {path}.{key}")
