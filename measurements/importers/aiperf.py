"""aiperf's ``profile_export_aiperf.json`` -> one `ResultRun`.

Field meanings from ai-dynamo/aiperf @ db4f6397d11ee2d4cfbb41f70b2327315163dcf0 (v0.1.1):

* ``aiperf/exporters/json_exporter.py`` writes ``JsonExportData`` (``aiperf/common/models/export_models.py``)
  with ``model_dump_json(exclude_unset=True)``: one metric block per exported metric in its display
  unit (the metric blocks: `measurements.importers.profile_export`), ``request_count`` (valid
  requests), ``error_request_count``, ``input_config`` (the ``UserConfig``, only the fields the run set),
  ``was_cancelled``, ``error_summary``, ``start_time`` / ``end_time`` (ISO datetimes).
* ``input_config.endpoint.model_names``: the model names sent (``EndpointConfig``).
* ``input_config.loadgen`` (``LoadGeneratorConfig``; defaults ``config_defaults.LoadGeneratorDefaults``):
  ``concurrency`` (requests in flight at most), ``request_rate`` (req/s; when absent the run is in
  concurrency-burst mode, each freed slot sending the next request at once, and ``concurrency``
  defaults to 1: ``UserConfig.validate_timing_mode``), ``request_count`` (requests measured, default
  10), ``warmup_request_count`` (default 0), ``benchmark_duration`` (a duration-based run: no count).
* ``input_config.input.prompt.input_tokens`` / ``output_tokens`` ``{mean, stddev}``
  (``prompt_config.py``, the ``--isl`` / ``--osl`` flags): synthetic prompt lengths normal around
  the mean (stddev default 0: fixed); unused when ``input.file`` or ``input.public_dataset`` gives
  the prompts. ``input.extra`` (``--extra-inputs``): ``[name, value]`` pairs added to every request
  body, e.g. ``ignore_eos``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from measurements.importers import profile_export as pe
from measurements.importers.document import Document, calendar_date, measure, section
from measurements.importers.result import ResultRun, stated

CLIENT = "aiperf profile"
CITATION = "ai-dynamo/aiperf aiperf/exporters/json_exporter.py@db4f6397d11ee2d4cfbb41f70b2327315163dcf0"
MARKERS = frozenset({"was_cancelled", "error_summary", "start_time", "end_time"})  # top-level keys aiperf writes and genai-perf does not
CONFIG_MARKERS = frozenset({"loadgen"})  # an input_config section of aiperf's UserConfig that genai-perf's lacks
DEFAULT_WARMUPS = 0  # LoadGeneratorDefaults.WARMUP_REQUEST_COUNT
LOADGEN, PROMPT = "input_config.loadgen", "input_config.input.prompt"  # the sections' places, in messages


def matches(document: Document) -> str | None:
    """None when the document is one JSON object of profile-export metric blocks with aiperf's own keys."""
    doc = pe.export_of(document)
    if isinstance(doc, str):
        return doc
    if not (MARKERS & doc.keys() or CONFIG_MARKERS & section(doc, "input_config").keys()):
        return f"no aiperf keys ({', '.join(sorted(MARKERS))} or input_config {', '.join(sorted(CONFIG_MARKERS))})"
    return None


def runs(document: Document) -> list[ResultRun]:
    doc = document.objects()[0]
    config = section(doc, "input_config")
    date = re.match(r"^(\d{4})-(\d{2})-(\d{2})", str(doc.get("start_time") or ""))
    notes = {"client": "aiperf", **({"was_cancelled": "true"} if doc.get("was_cancelled") else {})}
    return [run(doc, config, str(document.path), CLIENT, CITATION, calendar_date(*date.groups()) if date else None, notes)]


def run(metrics: Mapping[str, Any], config: Mapping[str, Any], where: str, client: str, citation: str, date: str | None,
        notes: Mapping[str, str]) -> ResultRun:  # fmt: skip
    """The run of aiperf metric blocks and the run's UserConfig (empty when the export keeps none)."""
    loadgen = section(config, "loadgen")
    prompt = section(section(config, "input"), "prompt")
    derived = []
    isl, isl_fixed = _nominal(prompt, "input_tokens", "isl", _synthetic(config), where)
    osl, osl_fixed = _nominal(prompt, "output_tokens", "osl", True, where)
    ratio = 1.0 if isl_fixed and osl_fixed else None
    if ratio is not None:
        derived.append("random_range_ratio=1.0 (input and output tokens stddev 0: fixed lengths)")
    rate = pe.config_fact(loadgen, "request_rate", "request_rate", where, LOADGEN)
    concurrency = pe.config_fact(loadgen, "concurrency", "concurrency", where, LOADGEN)
    if config and rate is None:  # concurrency-burst mode: every freed slot sends at once
        rate = float("inf")
        derived.append("request_rate=inf (no request_rate: concurrency-burst mode)")
        if concurrency is None:
            concurrency = 1
            derived.append("concurrency=1 (aiperf's default without request_rate)")
    num_prompts = pe.config_fact(loadgen, "request_count", "num_prompts", where, LOADGEN)
    if num_prompts is None and "benchmark_duration" not in loadgen:
        valid, errors = pe.average(metrics, pe.REQUEST_COUNT, where), pe.average(metrics, "error_request_count", where) or 0.0
        if valid:
            num_prompts = stated("num_prompts", valid + errors, f"{where}: request_count + error_request_count")
            derived.append(f"num_prompts={num_prompts} (request_count + error_request_count)")
    warmups = pe.config_fact(loadgen, "warmup_request_count", "num_warmups", where, LOADGEN)
    if warmups is None and config:
        warmups = DEFAULT_WARMUPS
        derived.append(f"num_warmups={DEFAULT_WARMUPS} (aiperf's default)")
    names = section(config, "endpoint").get("model_names")
    return ResultRun(
        client=client,
        citation=citation,
        **pe.measured(metrics, where),
        isl=isl,
        osl=osl,
        random_range_ratio=ratio,
        num_prompts=num_prompts,
        request_rate=rate,
        concurrency=concurrency,
        num_warmups=warmups,
        ignore_eos=ignore_eos if isinstance(ignore_eos := _extra(section(config, "input").get("extra"), "ignore_eos"), bool) else None,
        measured_date=date,
        model=str(names[0]) if isinstance(names, list) and names else None,
        notes=notes,
        derived=tuple(derived),
    )


def _synthetic(config: Mapping[str, Any]) -> bool:
    """True unless a file or public dataset gives the prompts (their lengths are then not the configured ones)."""
    inputs = section(config, "input")
    return not (inputs.get("file") or inputs.get("public_dataset") or inputs.get("custom_dataset_type"))


def _nominal(prompt: Mapping[str, Any], key: str, name: str, synthetic: bool, where: str) -> tuple[int | None, bool]:
    """(the configured mean length, tokens, when the lengths are fixed, whether they are) of
    prompt.`key` ``{mean, stddev}``: stddev absent means its default 0; a mean or stddev the synthetic
    prompts use that is not a length (a positive integer; stddev a finite number >= 0) is an InvalidInputError."""
    if not synthetic:
        return None, False
    tokens, path = section(prompt, key), f"{PROMPT}.{key}"
    mean = pe.config_fact(tokens, "mean", name, where, path)
    fixed = mean is not None and measure(tokens.get("stddev", 0), f"{path}.stddev", where) == 0
    return (mean if fixed else None), fixed


def _extra(extra: Any, name: str) -> Any:
    """The value of one --extra-inputs entry (a list of [name, value] pairs, or a mapping), None when absent."""
    if isinstance(extra, Mapping):
        return extra.get(name)
    if isinstance(extra, list):
        return next((pair[1] for pair in extra if isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] == name), None)
    return None
