"""genai-perf's ``profile_export_genai_perf.json`` -> one `ResultRun`.

``genai_perf/export_data/json_exporter.py`` writes the metric blocks (`measurements.importers.profile_export`)
and ``input_config``, the run's configuration, in one of two key sets:

* nested, from the config-file rewrite on (triton-inference-server/perf_analyzer ``genai-perf/`` @
  263c5f6e0c7a6c15472a54409174981f67930cfe, genai-perf 0.0.16dev): ``ConfigCommand.to_json_dict``
  (``config/input/base_config.py``) writes every field, a default included, ``None`` as ``""``:
  ``model_names``; ``perf_analyzer.stimulus`` (``{"concurrency": C}``, perf_analyzer keeping C requests
  in flight, or ``{"request_rate": R}``; default ``{"concurrency": 1}``), ``perf_analyzer.warmup_request_count``
  (default 0), ``perf_analyzer.measurement`` (``mode`` ``request_count`` or ``interval``; ``num``, and when
  it is not set the request count is ``max(10, 2 x C)``: ``config/generate/perf_analyzer_config.py``
  ``_calculate_request_count``); ``input.synthetic_tokens`` / ``input.output_tokens`` ``{mean, stddev}``
  (prompt and output lengths normal around the mean; stddev 0: fixed), ``input.prompt_source``
  (``synthetic`` unless a file or payload gives the prompts), ``input.extra`` (``--extra-inputs``).
* flat, the argparse namespace of earlier versions (@ bf8c950f0625a9b06b152f26500da615f7387c0d,
  genai-perf 0.0.11dev, ``parser.py``): ``model`` (a list), ``concurrency``, ``request_rate``,
  ``request_count`` (default 0: perf_analyzer measures windows until stable, no finite count),
  ``warmup_request_count``, ``synthetic_input_tokens_mean`` / ``_stddev`` (defaults 550 / 0),
  ``output_tokens_mean`` (-1: not set) / ``_stddev``, ``prompt_source``, ``extra_inputs`` (a mapping).

genai-perf records no date.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from measurements.importers import profile_export as pe
from measurements.importers.document import Document, measure, section
from measurements.importers.result import ResultRun

CLIENT = "genai-perf profile (perf_analyzer)"
CITATIONS = {
    "nested": "triton-inference-server/perf_analyzer genai-perf/genai_perf/export_data/json_exporter.py@263c5f6e0c7a6c15472a54409174981f67930cfe",
    "flat": "triton-inference-server/perf_analyzer genai-perf/genai_perf/export_data/json_exporter.py@bf8c950f0625a9b06b152f26500da615f7387c0d",
}
NESTED_KEYS = frozenset({"perf_analyzer", "model_names"})
FLAT_KEYS = frozenset({"service_kind", "synthetic_input_tokens_mean"})
CONFIG = "input_config"  # the configuration's place, in messages
REQUEST_COUNT_MINIMUM, REQUEST_COUNT_PER_CONCURRENCY = 10, 2  # _calculate_request_count: max(10, 2 x C)


def key_set(config: Any) -> str | None:
    """ "nested" or "flat" by input_config's keys; None for neither."""
    if not isinstance(config, Mapping):
        return None
    return "nested" if NESTED_KEYS & config.keys() else "flat" if FLAT_KEYS & config.keys() else None


def matches(document: Document) -> str | None:
    doc = pe.export_of(document)
    if isinstance(doc, str):
        return doc
    if key_set(doc.get("input_config")) is None:
        return f"no genai-perf input_config ({', '.join(sorted(NESTED_KEYS | FLAT_KEYS))})"
    return None


def runs(document: Document) -> list[ResultRun]:
    doc = document.objects()[0]
    config = doc["input_config"]
    kind = key_set(config)
    where = str(document.path)
    facts = _nested(config, where) if kind == "nested" else _flat(config, where)
    derived = list(facts.pop("derived"))
    isl, osl = facts.pop("isl"), facts.pop("osl")
    ratio = 1.0 if isl is not None and osl is not None else None
    if ratio is not None:
        derived.append("random_range_ratio=1.0 (synthetic and output tokens stddev 0: fixed lengths)")
    return [
        ResultRun(
            client=CLIENT,
            citation=CITATIONS[kind],
            **pe.measured(doc, where),
            isl=isl,
            osl=osl,
            random_range_ratio=ratio,
            measured_date=None,
            notes={"client": f"genai-perf ({kind} input_config)"},
            derived=tuple(derived),
            **facts,
        )
    ]


def _nested(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The run's facts from the nested key set."""
    analyzer, inputs = section(config, "perf_analyzer"), section(config, "input")
    stimulus, measurement = section(analyzer, "stimulus"), section(analyzer, "measurement")
    stimulus_path = f"{CONFIG}.perf_analyzer.stimulus"
    concurrency, rate, derived = _load(pe.config_fact(stimulus, "concurrency", "concurrency", where, stimulus_path),
                                       pe.config_fact(stimulus, "request_rate", "request_rate", where, stimulus_path))  # fmt: skip
    by_count = measurement.get("mode") == "request_count"
    num_prompts = pe.config_fact(measurement, "num", "num_prompts", where, f"{CONFIG}.perf_analyzer.measurement") if by_count else None
    if num_prompts is None and by_count and concurrency is not None:
        num_prompts = max(REQUEST_COUNT_MINIMUM, REQUEST_COUNT_PER_CONCURRENCY * concurrency)
        derived.append(f"num_prompts={num_prompts} (genai-perf's request count max(10, 2 x concurrency))")
    synthetic = inputs.get("prompt_source", "synthetic") == "synthetic"
    tokens = {name: section(inputs, key) for name, key in (("isl", "synthetic_tokens"), ("osl", "output_tokens"))}
    return {
        "concurrency": concurrency,
        "request_rate": rate,
        "num_prompts": num_prompts,
        "num_warmups": pe.config_fact(analyzer, "warmup_request_count", "num_warmups", where, f"{CONFIG}.perf_analyzer"),
        "isl": _fixed(tokens["isl"], "mean", "stddev", "isl", synthetic, where, f"{CONFIG}.input.synthetic_tokens"),
        "osl": _fixed(tokens["osl"], "mean", "stddev", "osl", True, where, f"{CONFIG}.input.output_tokens"),
        "ignore_eos": _ignore_eos(inputs.get("extra")),
        "model": _first(config.get("model_names")),
        "derived": derived,
    }


def _flat(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The run's facts from the flat key set."""
    concurrency, rate, derived = _load(pe.config_fact(config, "concurrency", "concurrency", where, CONFIG),
                                       pe.config_fact(config, "request_rate", "request_rate", where, CONFIG))  # fmt: skip
    num_prompts = None if config.get("request_count") == 0 else pe.config_fact(config, "request_count", "num_prompts", where, CONFIG)
    if num_prompts is None:
        derived.append("num_prompts not recorded (request_count 0: perf_analyzer measured windows until stable)")
    synthetic = config.get("prompt_source", "synthetic") == "synthetic"
    return {
        "concurrency": concurrency,
        "request_rate": rate,
        "num_prompts": num_prompts,
        "num_warmups": pe.config_fact(config, "warmup_request_count", "num_warmups", where, CONFIG),
        "isl": _fixed(config, "synthetic_input_tokens_mean", "synthetic_input_tokens_stddev", "isl", synthetic, where, CONFIG),
        "osl": _fixed(config, "output_tokens_mean", "output_tokens_stddev", "osl", True, where, CONFIG),
        "ignore_eos": _ignore_eos(config.get("extra_inputs")),
        "model": _first(config.get("model")),
        "derived": derived,
    }


def _load(concurrency: int | None, rate: float | None) -> tuple[int | None, float | None, list[str]]:
    """(concurrency, request rate, derived notes): in concurrency mode every freed slot sends at once."""
    if concurrency is not None and rate is None:
        return concurrency, float("inf"), [f"request_rate=inf (concurrency mode: {concurrency} requests kept in flight)"]
    return concurrency, rate, []


def _fixed(config: Mapping[str, Any], mean: str, stddev: str, name: str, applies: bool, where: str, path: str) -> int | None:
    """The configured mean length (config[`mean`], tokens; -1 or absent: not set) when it applies and the
    lengths are fixed (config[`stddev`] absent, "" or 0), else None; InvalidInputError naming a mean that
    applies and is not a length, or a stddev that is not a finite number >= 0."""
    if not applies or config.get(mean) == -1:
        return None
    length = pe.config_fact(config, mean, name, where, path)
    spread = config.get(stddev)
    spread = measure(None if spread == "" else spread, f"{path}.{stddev}", where)
    return length if length is not None and not spread else None


def _ignore_eos(extra: Any) -> bool | None:
    value = extra.get("ignore_eos") if isinstance(extra, Mapping) else None
    return value if isinstance(value, bool) else None


def _first(names: Any) -> str | None:
    return str(names[0]) if isinstance(names, list) and names and names[0] else None
