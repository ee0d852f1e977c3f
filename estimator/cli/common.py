"""Arguments shared by commands: the deployment and the pricer."""
from __future__ import annotations

import argparse

from estimator.deployment import Deployment, QuantOverrides, require_positive
from estimator.models.config import is_natively_modelled
from estimator.pricing import PRICERS

AUTO = "auto"  # native for the natively modelled architectures, the reference engine otherwise


def add_pricer_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pricer", choices=(AUTO, *PRICERS), default=AUTO,
                   help="op pricer (default auto: native for dense Llama/Qwen/MiMo models, reference otherwise)")  # fmt: skip


def resolve_pricer(args: argparse.Namespace) -> None:
    """Replace --pricer auto by the pricer the model needs (a model without a config is an error)."""
    if getattr(args, "pricer", None) == AUTO:
        args.pricer = "native" if is_natively_modelled(args.model_path) else "reference"


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
