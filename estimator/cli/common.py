"""Arguments shared by commands: the deployment and the pricer."""

from __future__ import annotations

import argparse

from estimator.deployment import Deployment, QuantOverrides, require_positive
from estimator.errors import InvalidInputError
from estimator.models.config import is_natively_modelled, model_shape
from estimator.numba_cache import numba_cache_dir
from estimator.perf.stack import table_cache_dir
from estimator.pricing import PRICERS

AUTO = "auto"  # native for the natively modelled architectures, the reference engine otherwise


def add_pricer_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pricer", choices=(AUTO, *PRICERS), default=AUTO,
                   help="op pricer (default auto: native for dense Llama/Qwen/MiMo models, reference otherwise)")  # fmt: skip


def resolve_pricer(args: argparse.Namespace) -> None:
    """Replace --pricer auto by the pricer the model needs (a model without a config is an error)."""
    if getattr(args, "pricer", None) == AUTO:
        args.pricer = "native" if is_natively_modelled(args.model_path) else "reference"


def check_cache_dirs() -> None:
    """UnsafeCacheDirError (exit 2) when others can write a cache folder, before any cached table or
    kernel is read; a folder that cannot be created only costs the warm start."""
    for folder in (numba_cache_dir, table_cache_dir):
        try:
            folder()
        except OSError:
            continue


def add_deployment_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-path", required=True, help="HF model id (bundled config) or path to config.json / model dir")
    p.add_argument("--system", required=True, help="GPU system, e.g. h200_sxm")
    p.add_argument("--backend", required=True, help="trtllm | vllm | sglang")
    p.add_argument("--backend-version", default=None, help="literal version or current/previous/next (default: current)")
    p.add_argument("--tp-size", type=int, default=1)
    p.add_argument("--pp-size", type=int, default=1)
    p.add_argument("--attention-dp-size", type=int, default=1)
    p.add_argument("--moe-tp-size", type=int, default=None)
    p.add_argument("--moe-ep-size", type=int, default=None)
    p.add_argument("--nextn", type=int, default=0, help="speculative (MTP) draft depth")
    for kind in ("gemm", "moe", "kvcache", "fmha", "comm"):
        p.add_argument(f"--{kind}-quant-mode", default=None, help=f"override the inferred {kind} quant mode")
    add_pricer_arg(p)
    add_long_context_arg(p)


def add_long_context_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-long-context", action="store_true",
                   help="estimate sequences longer than the model's max_position_embeddings")  # fmt: skip


def check_fits_model(model: str, pp: int, tokens: int, allow_long_context: bool, what: str = "isl + osl") -> None:
    """InvalidInputError unless the model has at least pp layers and, unless allow_long_context,
    its context holds the `tokens` (`what`) of a request."""
    shape = model_shape(model)
    if shape.num_layers is not None and pp > shape.num_layers:
        raise InvalidInputError(f"pp size {pp} exceeds the {shape.num_layers} layers of {model!r}")
    if not allow_long_context and shape.max_context is not None and tokens > shape.max_context:
        raise InvalidInputError(f"{what} ({tokens}) exceeds the max_position_embeddings ({shape.max_context}) of {model!r}; "
                                "--allow-long-context estimates beyond it")  # fmt: skip


def deployment_from_args(args: argparse.Namespace) -> Deployment:
    return Deployment(
        model=args.model_path,
        system=args.system,
        backend=args.backend,
        version=args.backend_version,
        tp=args.tp_size,
        pp=args.pp_size,
        attention_dp=args.attention_dp_size,
        moe_tp=args.moe_tp_size,
        moe_ep=args.moe_ep_size,
        nextn=args.nextn,
        quant=QuantOverrides(
            gemm=args.gemm_quant_mode,
            moe=args.moe_quant_mode,
            kvcache=args.kvcache_quant_mode,
            fmha=args.fmha_quant_mode,
            comm=args.comm_quant_mode,
        ),
    )


def positive(name: str, value: int) -> int:
    return require_positive(name, value)
