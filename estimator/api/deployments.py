"""The params every pricing command shares (model, system, backend, layout, quantization, pricer)
and the checks and deployments built from them."""

from __future__ import annotations

import dataclasses
import math

from estimator.api.flags import Param
from estimator.deployment import Deployment, QuantOverrides
from estimator.errors import InvalidInputError
from estimator.models.config import model_shape, require_native, require_pipeline_fits
from estimator.pricing import AUTO, PRICERS, resolve_pricer

DEPLOYMENT, LAYOUT, QUANTIZATION, PRICING = "deployment", "parallel layout", "quantization", "pricing"
QUANT_KINDS = ("gemm", "moe", "kvcache", "fmha", "comm")

MODEL_PARAMS = (
    Param("model_path", str, required=True, group=DEPLOYMENT, help="HF model id (bundled config) or path to config.json / model dir"),
    Param("system", str, required=True, group=DEPLOYMENT, help="GPU system, e.g. h200_sxm (python -m estimator systems lists them)"),
    Param("backend", str, required=True, group=DEPLOYMENT, help="trtllm | vllm | sglang"),
    Param("backend_version", str, group=DEPLOYMENT, help="literal version or current/previous/next (default: current)"),
    Param("nextn", int, 0, "speculative (MTP) draft depth", DEPLOYMENT),
)
LAYOUT_PARAMS = (
    Param("tp_size", int, 1, "tensor parallel size", LAYOUT),
    Param("pp_size", int, 1, "pipeline parallel size", LAYOUT),
    Param("attention_dp_size", int, 1, "attention data-parallel size", LAYOUT),
    Param("moe_tp_size", int, help="MoE tensor parallel size (MoE models)", group=LAYOUT),
    Param("moe_ep_size", int, help="MoE expert parallel size (MoE models)", group=LAYOUT),
)
QUANT_PARAMS = tuple(Param(f"{kind}_quant_mode", str, group=QUANTIZATION, help=f"override the inferred {kind} quant mode") for kind in QUANT_KINDS)
PRICER_PARAM = Param("pricer", str, AUTO, "op pricer (auto: native for dense Llama/Qwen/MiMo models, reference otherwise)", PRICING,
                     choices=(AUTO, *PRICERS))  # fmt: skip
LONG_CONTEXT_PARAM = Param("allow_long_context", bool, False, "estimate sequences longer than the model's max_position_embeddings", PRICING)


def deployment(args, system: str | None = None, **sizes: int | None) -> Deployment:
    """The deployment of a command's arguments on `system` (default: args.system) with the given
    parallel sizes (Deployment field names; default: a single GPU)."""
    quant = QuantOverrides(**{kind: getattr(args, f"{kind}_quant_mode") for kind in QUANT_KINDS})
    return Deployment(args.model_path, system or args.system, args.backend, args.backend_version, nextn=args.nextn, quant=quant, **sizes)


def layout_deployment(args) -> Deployment:
    """The deployment of a command that takes one parallel layout (LAYOUT_PARAMS)."""
    sizes = {"tp": args.tp_size, "pp": args.pp_size, "attention_dp": args.attention_dp_size, "moe_tp": args.moe_tp_size, "moe_ep": args.moe_ep_size}
    return deployment(args, **sizes)


def with_sizes(base: Deployment, **sizes: int | None) -> Deployment:
    """base with the sizes that are given (None keeps base's)."""
    return dataclasses.replace(base, **{k: v for k, v in sizes.items() if v is not None})


def check_fits_model(model: str, pp: int, tokens: int, allow_long_context: bool, what: str = "isl + osl") -> None:
    """InvalidInputError unless the model has at least pp layers and, unless allow_long_context,
    its context holds the `tokens` (`what`) of a request."""
    shape = model_shape(model)
    require_pipeline_fits(model, pp, shape.num_layers)
    if not allow_long_context and shape.max_context is not None and tokens > shape.max_context:
        raise InvalidInputError(f"{what} ({tokens}) exceeds the max_position_embeddings ({shape.max_context}) of {model!r}; "
                                "--allow-long-context estimates beyond it")  # fmt: skip


def pricer_of(args) -> str:
    """The pricer --pricer stands for on the model (auto resolved); a native pricer on a model without a
    native op builder is refused here, one line, before a sweep skips (and warns about) layout after layout."""
    pricer = resolve_pricer(args.pricer, args.model_path)
    if pricer == "native":
        require_native(args.model_path)
    return pricer


def nextn_accepted(args) -> float:
    """args.nextn_accepted, required (and bounded by nextn) when MTP is on; 0 otherwise. A value given
    without MTP must still be a finite number >= 0 (it is ignored, never silently bad)."""
    given = args.nextn_accepted
    if given is not None and not (math.isfinite(given) and given >= 0):
        raise InvalidInputError(f"nextn_accepted must be a finite number >= 0, got {given!r}")
    if args.nextn <= 0:
        return 0.0
    if given is None:
        raise InvalidInputError(f"nextn={args.nextn} requires --nextn-accepted (average accepted draft tokens per step, 0 <= nextn_accepted <= nextn)")
    return given


def layout_label(row, prefix: str = "") -> str:
    """A row's parallel layout as printed: tp, pp and attention dp, then MoE tp and ep when set
    (never "None"); `prefix` reads a disagg role's columns, e.g. "(p)"."""
    sizes = [("tp", "tp"), ("pp", "pp"), ("dp", "dp"), ("etp", "moe_tp"), ("ep", "moe_ep")]
    return "".join(f"{label}{_whole(row[prefix + key])}" for label, key in sizes if _present(row.get(prefix + key)))


def _present(value) -> bool:
    return value is not None and value == value  # NaN (a missing size read back from a table) is absent


def _whole(value) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value
