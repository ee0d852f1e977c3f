"""The deployment file: what ran, for result files that only say what the client measured.

A YAML mapping (read as ``yaml.safe_load`` reads it, except that a key given twice in one mapping is
refused: ``safe_load`` keeps the last value silently; and a number in YAML 1.1's octal or base-60 form is refused:
``tp: 010`` reads as 8). Required: ``model`` (a bundled model id or a path to
a config.json), ``system`` (a shipped GPU system id), ``backend`` (trtllm | vllm | sglang),
``backend_version``, ``mode`` (agg | disagg); for agg ``tp``, for disagg ``prefill`` and ``decode``
blocks each with ``workers`` and ``tp``. Optional: ``image``, ``precision``, ``gemm_quant``,
``moe_quant``, ``pp`` / ``attention_dp`` / ``moe_tp`` / ``moe_ep`` (agg at the top level, disagg in
each block), an ``engine:`` block of launch settings named as the launch flags are (see
``ENGINE_KEYS``) and a ``client:`` block of facts a result file may lack (``CLIENT_KEYS``).

Engine settings start from the engine's documented defaults on the system's GPU
(``estimator.settings.engine_defaults``); when the ``engine:`` block sets any field, the settings'
origin is "source" and their citation "deployment file <path>", else they are the defaults,
origin and citation included. An unknown model, system or backend, a missing required key or an
unknown key is an ``InvalidInputError`` (or its ``UnknownModelError`` / ``UnknownSystemError`` /
``UnknownBackendError`` kin) of one line naming it; so are a file that is not UTF-8, a
``backend_version`` that is not a string (YAML reads an unquoted 0.10 as the number 0.1), an unknown
``gemm_quant`` / ``moe_quant`` mode and a boolean engine setting that is not a YAML boolean (the
string "false" would read as true).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from estimator.deployment import MAX_SIZE, Backend, QuantOverrides
from estimator.errors import EstimatorError, InvalidInputError, UnknownModelError, UnsupportedModelError
from estimator.models import ModelConfig, check_overrides, infer_quant, resolve_model_config
from estimator.settings import KV_MEMORY_SETTINGS, SOURCE_ORIGIN, EngineSettings, foreign_setting, system_defaults
from measurements.schema import Layout

MODES = ("agg", "disagg")
LAYOUT_KEYS = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep")
TOP_KEYS = frozenset({"model", "system", "backend", "backend_version", "mode", "image", "precision", "gemm_quant", "moe_quant",
                      "prefill", "decode", "engine", "client", *LAYOUT_KEYS})  # fmt: skip
BLOCK_KEYS = frozenset({"workers", *LAYOUT_KEYS})

# engine: launch flag (TRT-LLM extra-llm-api-config / vLLM `vllm serve` / SGLang ServerArgs name) -> EngineSettings field
ENGINE_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "max_num_tokens": "step_token_budget",  # TRT-LLM
        "max_num_batched_tokens": "step_token_budget",  # vLLM
        "chunked_prefill_size": "step_token_budget",  # SGLang
        "max_batch_size": "max_num_seqs",  # TRT-LLM
        "max_num_seqs": "max_num_seqs",  # vLLM
        "max_running_requests": "max_num_seqs",  # SGLang
        "chunked_prefill": "chunked_prefill",
        "enable_chunked_prefill": "chunked_prefill",  # TRT-LLM, vLLM
        "kv_cache_free_memory_fraction": "kv_free_memory_fraction",  # TRT-LLM kv_cache_config.free_gpu_memory_fraction
        "gpu_memory_utilization": "gpu_memory_utilization",  # vLLM
        "kv_cache_dtype": "kv_cache_dtype",
        "overlap_scheduler": "overlap_scheduler",
        "num_nextn_predict_layers": "nextn",  # TRT-LLM speculative_config (MTP)
        "speculative_num_steps": "nextn",  # SGLang
        "stream_interval": "stream_interval",
        "moe_backend": "moe_backend",  # TRT-LLM moe_config.backend
        "max_cudagraph_capture_size": "cudagraph_max_tokens",  # vLLM
        "enable_piecewise_cuda_graph": "piecewise_cuda_graph",  # SGLang through 0.5.9 (on by default from 0.5.10)
    }
)
FRACTION_FIELDS = frozenset(KV_MEMORY_SETTINGS)  # the fraction-valued settings: an integer 1 there reads as 1.0
IGNORED_ENGINE_KEYS = frozenset({"cuda_graph_batch_sizes"})  # accepted launch settings the estimate does not read
CLIENT_KEYS = ("isl", "osl", "random_range_ratio", "num_warmups", "client_seed", "statistic", "ignore_eos", "concurrency", "num_prompts", "request_rate")


@dataclass(frozen=True)
class DeploymentFile:
    """One deployment as its file states it, checked against the bundled models and systems."""

    path: str
    model: str
    system: str
    backend: str  # "trtllm" | "vllm" | "sglang"
    backend_version: str
    mode: str  # "agg" | "disagg"
    agg: Layout | None
    prefill: Layout | None
    decode: Layout | None
    image: str | None
    precision: str | None
    gemm_quant: str | None
    moe_quant: str | None
    settings: EngineSettings
    engine_keys: tuple[str, ...]  # engine: keys the file set (empty: every setting is the engine default)
    client: Mapping[str, Any] = field(default_factory=dict)  # the client: block, checked against CLIENT_KEYS


class _RefusedFormError(yaml.YAMLError):
    """The file writes something yaml.SafeLoader would read otherwise than written (a key given twice, a YAML 1.1
    octal or base-60 number); the message names it and its line(s)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader refusing a mapping that gives a key twice (SafeLoader keeps the last value)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        lines: dict[Any, int] = {}  # key -> the line (from 1) that gives it first
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # a << merge: its keys may be overridden
                continue
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            if not isinstance(key, Hashable):  # SafeLoader refuses it below
                continue
            if key in lines:
                raise _RefusedFormError(f"key {key!r} is given twice (lines {lines[key]} and {line})")
            lines[key] = line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refusing YAML 1.1's octal and base-60 forms (010 reads as 8, 1:30 as 90)."""
        value = super().construct_yaml_int(node)
        if _NON_DECIMAL_INT.fullmatch(str(node.value)):
            raise _read_otherwise(node, value)
        return value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        """A float, refusing YAML 1.1's base-60 form (1:30.5 reads as 90.5)."""
        value = super().construct_yaml_float(node)
        if ":" in str(node.value):
            raise _read_otherwise(node, value)
        return value


def _read_otherwise(node: yaml.ScalarNode, value: float) -> _RefusedFormError:
    """The error for a number YAML 1.1 reads as `value` though written otherwise, naming it and its line."""
    return _RefusedFormError(f"{node.value!r} (line {node.start_mark.line + 1}) reads as {value} in YAML 1.1: write the decimal number")


_NON_DECIMAL_INT = re.compile(r"[-+]?(0[0-7_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)")  # YAML 1.1 octal, sexagesimal
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", _UniqueKeyLoader.construct_yaml_float)


def load_deployment(path: str | Path) -> DeploymentFile:
    """Read and check a deployment file."""
    path = Path(path)
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise InvalidInputError(f"cannot read deployment file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"deployment file {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    except _RefusedFormError as exc:
        raise InvalidInputError(f"deployment file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"deployment file {path}: not YAML ({str(exc).splitlines()[0]})") from None
    return parse_deployment(doc, str(path))


def parse_deployment(doc: Any, path: str) -> DeploymentFile:
    """The deployment of a parsed YAML document (path names it in messages and the citation)."""
    where = f"deployment file {path}"
    if not isinstance(doc, Mapping):
        raise InvalidInputError(f"{where}: expected a mapping of keys, got {type(doc).__name__}")
    _no_unknown(doc, TOP_KEYS, where)
    for key in ("model", "system", "backend", "backend_version", "mode"):
        if doc.get(key) in (None, ""):
            raise InvalidInputError(f"{where}: missing required key {key!r}")
    model, system = str(doc["model"]), str(doc["system"])
    version = doc["backend_version"]
    if not isinstance(version, str):  # YAML reads 0.10 as the float 0.1
        kind = "a number" if isinstance(version, (int, float)) and not isinstance(version, bool) else f"a {type(version).__name__}"
        raise InvalidInputError(f"{where}: backend_version must be a quoted string, got {version!r} ({kind}); write it in quotes")
    try:
        backend = Backend.parse(str(doc["backend"])).value
    except EstimatorError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    mode = str(doc["mode"])
    if mode not in MODES:
        raise InvalidInputError(f"{where}: mode must be agg or disagg, got {mode!r}")
    config = _check_model(model, where)
    try:
        defaults = system_defaults(backend, system, version)
    except EstimatorError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    if mode == "agg":
        for key in ("prefill", "decode"):
            if key in doc:
                raise InvalidInputError(f"{where}: agg deployment has a {key!r} block (disagg only)")
        agg, prefill, decode = _layout(doc, where, workers=1), None, None
    else:
        for key in LAYOUT_KEYS:
            if key in doc:
                raise InvalidInputError(f"{where}: disagg deployment sets {key!r} at the top level (put it in the prefill and decode blocks)")
        agg, prefill, decode = None, _block(doc, "prefill", where), _block(doc, "decode", where)
    settings, engine_keys = _settings(doc.get("engine"), defaults, path)
    foreign = foreign_setting(settings, Backend.parse(backend))
    if foreign is not None:
        raise InvalidInputError(f"{where}: engine: {foreign}")
    gemm_quant, moe_quant = _quant_modes(doc, config, backend, where)
    client = doc.get("client") or {}
    if not isinstance(client, Mapping):
        raise InvalidInputError(f"{where}: client must be a mapping, got {type(client).__name__}")
    _no_unknown(client, frozenset(CLIENT_KEYS), f"{where}: client")
    return DeploymentFile(
        path=path,
        model=model,
        system=system,
        backend=backend,
        backend_version=version,
        mode=mode,
        agg=agg,
        prefill=prefill,
        decode=decode,
        image=_opt_str(doc, "image", where),
        precision=_opt_str(doc, "precision", where),
        gemm_quant=gemm_quant,
        moe_quant=moe_quant,
        settings=settings,
        engine_keys=engine_keys,
        client=MappingProxyType(dict(client)),
    )


def _check_model(model: str, where: str) -> ModelConfig | None:
    """The model's config (None: one with no native builder, which is known); UnknownModelError naming
    the model unless it resolves to a config."""
    try:
        return resolve_model_config(model)
    except UnsupportedModelError:
        return None
    except UnknownModelError as exc:
        raise UnknownModelError(f"{where}: {exc}") from None


def _quant_modes(doc: Mapping, config: ModelConfig | None, backend: str, where: str) -> tuple[str | None, str | None]:
    """(gemm_quant, moe_quant) of the file (None: inferred from the checkpoint); InvalidInputError naming
    one that is not a known quant mode of its kind (every model), or one the natively modelled model's
    checkpoint cannot take (`infer_quant`)."""
    gemm, moe = _opt_str(doc, "gemm_quant", where), _opt_str(doc, "moe_quant", where)
    try:
        check_overrides(QuantOverrides(gemm=gemm, moe=moe))
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    if config is not None and (gemm or moe):
        try:
            infer_quant(config, backend, QuantOverrides(gemm=gemm, moe=moe))
        except UnsupportedModelError:  # the checkpoint's own quantization: refused where a row is priced
            pass
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    return gemm, moe


def _no_unknown(doc: Mapping, known: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in doc if k not in known)
    if unknown:
        raise InvalidInputError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def _size(value: Any, name: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
        raise InvalidInputError(f"{where}: {name} must be an integer within [1, {MAX_SIZE}], got {value!r}")
    return value


def _layout(doc: Mapping, where: str, workers: int | None) -> Layout:
    if doc.get("tp") is None:
        raise InvalidInputError(f"{where}: missing required key 'tp'")
    sizes = {key: _size(doc.get(key), key, where) for key in LAYOUT_KEYS}
    sizes["pp"] = sizes["pp"] or 1  # no pp: one pipeline stage
    return Layout(batch_size=None, workers=workers, **sizes)


def _block(doc: Mapping, name: str, where: str) -> Layout:
    block = doc.get(name)
    if not isinstance(block, Mapping):
        raise InvalidInputError(f"{where}: disagg deployment needs a {name!r} block with workers and tp")
    _no_unknown(block, BLOCK_KEYS, f"{where}: {name}")
    if block.get("workers") is None:
        raise InvalidInputError(f"{where}: {name} block lacks 'workers'")
    return _layout(block, f"{where}: {name}", workers=_size(block["workers"], "workers", f"{where}: {name}"))


def _settings(engine: Any, defaults: EngineSettings, path: str) -> tuple[EngineSettings, tuple[str, ...]]:
    """The launch settings: the engine's defaults on the GPU, with the engine: block's values over them."""
    if engine is None:
        return defaults, ()
    where = f"deployment file {path}: engine"
    if not isinstance(engine, Mapping):
        raise InvalidInputError(f"{where} must be a mapping, got {type(engine).__name__}")
    _no_unknown(engine, frozenset(ENGINE_KEYS) | IGNORED_ENGINE_KEYS, where)
    values: dict[str, Any] = {}
    for key, value in engine.items():
        if key in IGNORED_ENGINE_KEYS or value is None:
            continue
        name = ENGINE_KEYS[key]
        if isinstance(getattr(defaults, name), bool) and not isinstance(value, bool):  # "false" would be read as true
            raise InvalidInputError(f"{where}: {key} must be true or false (a YAML boolean), got {value!r}")
        if name in values:
            raise InvalidInputError(f"{where}: {key} sets {name}, already set by another key")
        values[name] = float(value) if name in FRACTION_FIELDS and isinstance(value, int) and not isinstance(value, bool) else value
    if not values:
        return defaults, ()
    try:
        settings = defaults.replace(**values, origin=SOURCE_ORIGIN, citation=f"deployment file {path}")
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    return settings, tuple(k for k in engine if k not in IGNORED_ENGINE_KEYS and engine[k] is not None)


def _opt_str(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    """An optional text key: None when absent or empty; InvalidInputError naming a list or mapping."""
    value = doc.get(key)
    if isinstance(value, (list, dict)):
        raise InvalidInputError(f"{where}: {key} must be a text value, got {value!r}")
    return None if value in (None, "") else str(value)


TEMPLATE = """\
# Deployment file for `python -m estimator import RESULT... --deployment THIS.yaml --out runs.csv`.
# What ran; the result files say what the client measured. Required keys are uncommented.
model: Qwen/Qwen3-32B          # a bundled model id (python -m estimator models) or a path to a config.json
system: h200_sxm               # GPU system id, e.g. h100_sxm, h200_sxm, b200_sxm
backend: trtllm                # trtllm | vllm | sglang
backend_version: 1.0.0         # the engine version that served the run
mode: agg                      # agg | disagg
tp: 1                          # agg: tensor parallel size (disagg: in the prefill and decode blocks)
# pp: 1                        # pipeline parallel size
# attention_dp: 1              # attention data-parallel size
# moe_tp: 1                    # MoE tensor parallel size (MoE models)
# moe_ep: 1                    # MoE expert parallel size (MoE models)
# image: nvcr.io/nvidia/tensorrt-llm/release:1.0.0   # container image
# precision: fp8               # checkpoint precision label
# gemm_quant: fp8_block        # GEMM quant mode (default: inferred from the checkpoint)
# moe_quant: fp8_block         # MoE quant mode (default: inferred from the checkpoint)
#
# disagg instead of tp above:
# prefill: {workers: 1, tp: 4}
# decode: {workers: 1, tp: 4}
#
# Launch settings, named as the launch flags are; what is not given takes the engine's documented default.
# engine:
#   max_num_tokens: 8192                 # tokens per step (vLLM max_num_batched_tokens, SGLang chunked_prefill_size)
#   max_batch_size: 256                  # running requests per rank (vLLM max_num_seqs, SGLang max_running_requests)
#   chunked_prefill: false               # (or enable_chunked_prefill)
#   kv_cache_free_memory_fraction: 0.9   # TRT-LLM kv_cache_config.free_gpu_memory_fraction
#   kv_cache_dtype: fp8
#   overlap_scheduler: true
#   num_nextn_predict_layers: 0          # MTP speculative depth (SGLang speculative_num_steps)
#   moe_backend: TRTLLM                  # TRT-LLM moe_config.backend (disagg: the prefill workers')
#   max_cudagraph_capture_size: 2048     # vLLM: largest pass replayed as a CUDA graph
#   cuda_graph_batch_sizes: [1, 2, 4]    # accepted, not read by the estimate
#
# Facts a result file may lack (the --isl/--osl/... flags override these):
# client:
#   isl: 1024                  # nominal input tokens per request (the maximum when lengths vary)
#   osl: 1024                  # nominal output tokens per request
#   random_range_ratio: 1.0    # lengths uniform on [r*L, L]; 1.0: fixed
#   num_warmups: 0             # warm-up requests before the measured ones
#   client_seed: 0             # the client's NumPy seed (vLLM benchmark_serving 0, SGLang bench_serving 1): the replay repeats its draws
#   statistic: mean            # mean | median | p99: which statistic the row's ttft_ms and tpot_ms are
#   ignore_eos: true           # outputs always run to osl tokens
#   concurrency: 16            # requests in flight at most (aiperf's CSV keeps none)
#   num_prompts: 160           # requests in the measured pass
#   request_rate: .inf         # requests/s offered; .inf: each sent as soon as a slot frees
"""
