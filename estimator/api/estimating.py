"""estimator.estimate: one operating point (agg, disagg or a static batch), the `estimate` command's
params and its result."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from estimator.api.deployments import (
    LAYOUT_PARAMS,
    LONG_CONTEXT_PARAM,
    MODEL_PARAMS,
    PRICER_PARAM,
    PRICING,
    QUANT_PARAMS,
    check_fits_model,
    layout_deployment,
    nextn_accepted,
    pricer_of,
    with_sizes,
)
from estimator.api.flags import Command, Param
from estimator.deployment import Deployment, Role, require_positive
from estimator.disagg import DisaggPoint, DisaggResult, run_disagg
from estimator.errors import InvalidInputError
from estimator.pricing import large_ep_note
from estimator.scheduler import AggPoint, StaticMode, StaticPoint, run_agg, run_static
from estimator.steps import DEFAULT_STRIDE, Semantics

MODES = ("agg", "disagg", *(m.value for m in StaticMode))
ROLES = ("prefill", "decode")
ROLE_SIZES = {"tp": "tp", "pp": "pp", "attention_dp": "dp", "moe_tp": "etp", "moe_ep": "ep"}  # Deployment size -> short flag (--p-tp, --d-ep)
WORKLOAD, MEMORY, DISAGG, CLOSED_LOOP = "mode and workload", "memory", "disagg workers", "closed loop"
CLOSED_LOOP_HELP = (
    "agg/disagg: also replay the point closed-loop (engine-priced passes) under this protocol (bare flag: steady) "
    "and report its figures beside the closed-form ones"
)

SEMANTICS_PARAM = Param("semantics", str, Semantics.UNCACHED.value, "legacy: aiconfigurator 0.12.0; uncached: only uncached prompt tokens "
                        "count against the prefill budget", PRICING, choices=tuple(s.value for s in Semantics))  # fmt: skip


def _role_params(role: str) -> tuple[Param, ...]:
    short = role[0]
    sizes = tuple(Param(f"{role}_{size}_size", int, help=f"{role} {size} size (default: the shared one)", group=DISAGG, aliases=(f"--{short}-{alias}",))
                  for size, alias in ROLE_SIZES.items())  # fmt: skip
    return sizes + (
        Param(f"{role}_batch_size", int, help=f"{role} batch size (required for disagg)", group=DISAGG, aliases=(f"--{short}-bs",)),
        Param(f"{role}_num_workers", int, help=f"{role} workers (required for disagg)", group=DISAGG, aliases=(f"--{short}-workers",)),
        Param(f"{role}_free_gpu_memory_fraction", float, help=f"{role} workers' KV budget fraction (default --free-gpu-memory-fraction)", group=DISAGG),
        Param(f"{role}_max_seq_len", int, help=f"{role} workers' KV slot per request (default --max-seq-len)", group=DISAGG),
    )


ESTIMATE = Command(
    "estimate",
    (
        *MODEL_PARAMS,
        *LAYOUT_PARAMS,
        Param("estimate_mode", str, "agg", "agg (in-flight batching), disagg, or a static batch", WORKLOAD, choices=MODES, aliases=("--mode",)),
        Param("isl", int, 1024, "input tokens per request", WORKLOAD),
        Param("osl", int, 1024, "output tokens per request", WORKLOAD),
        Param("prefix", int, 0, "cached prefix tokens per request, part of --isl", WORKLOAD),
        Param("batch_size", int, 128, "max concurrent requests", WORKLOAD, aliases=("--bs",)),
        Param("ctx_tokens", int, help="agg prefill budget per step, tokens (default: isl for legacy, max(isl - prefix, 1) for uncached)", group=WORKLOAD),
        Param("nextn_accepted", float, help="accepted draft tokens per decode step (required with --nextn)", group=WORKLOAD),
        Param("stride", int, DEFAULT_STRIDE, "static decode sampling stride", WORKLOAD),
        Param("free_gpu_memory_fraction", float, help="KV budget fraction (default: the backend's)", group=MEMORY),
        Param(
            "max_seq_len", int, help="KV slot per request, tokens (agg: TRT-LLM's max_seq_len; static, disagg: any backend; default isl + osl)", group=MEMORY
        ),
        *QUANT_PARAMS,
        PRICER_PARAM,
        SEMANTICS_PARAM,
        LONG_CONTEXT_PARAM,
        *(p for role in ROLES for p in _role_params(role)),
        Param("decode_system", str, help="decode workers' system (default --system)", group=DISAGG),
        Param("closed_loop", str, help=CLOSED_LOOP_HELP, group=CLOSED_LOOP, choices=("steady", "benchmark"), const="steady"),
    ),
    example="python -m estimator estimate --model-path Qwen/Qwen3-32B-FP8 --system h200_sxm --backend sglang --tp-size 2 "
    "--batch-size 16 --isl 32768 --osl 512 --ctx-tokens 16384 --semantics legacy",
)


@dataclass(frozen=True)
class EstimateResult:
    """One estimated operating point."""

    row: Mapping[str, object]  # the row `estimate --json` prints: unrounded figures (ms, tokens/s, GiB), oom, closed_loop when replayed
    warnings: tuple[str, ...]  # what the command prints on stderr (out of memory), one line each
    arguments: object = field(compare=False)  # the call's arguments, defaults filled in (ESTIMATE.arguments_type)
    priced: object = field(repr=False, compare=False)  # the AggResult, DisaggResult or StaticResult behind the row (steps, memory)

    @property
    def oom(self) -> bool:
        """The point does not fit: the deployment (or a disagg worker) is out of memory or its batch exceeds the KV cache."""
        return bool(self.row["oom"])

    @property
    def ttft_ms(self) -> float:
        """Mean time to first token, ms (closed form)."""
        return float(self.row["ttft"])

    @property
    def tpot_ms(self) -> float:
        """Mean time per output token, ms (closed form)."""
        return float(self.row["tpot"])

    def to_frame(self):
        """The row as a one-row DataFrame; closed-loop figures become columns suffixed _closed_loop."""
        import pandas as pd

        flat = {k: v for k, v in self.row.items() if k != "closed_loop"}
        flat |= {f"{k}_closed_loop": v for k, v in (self.row.get("closed_loop") or {}).items()}
        return pd.DataFrame([flat])


def estimate(**arguments) -> EstimateResult:
    """One operating point, as `python -m estimator estimate`: keyword arguments are its flags with
    underscores (model_path, system, backend, tp_size, batch_size, isl, osl, estimate_mode, ...) and
    take the same defaults. Bad arguments raise EstimatorError with the command's one-line message."""
    return estimate_with(ESTIMATE.bind(arguments))


def estimate_with(args) -> EstimateResult:
    """estimate of bound arguments (the command line calls this with its parsed flags)."""
    pricer = pricer_of(args)
    priced = price(args, pricer)
    refined = closed_loop_figures(args, pricer) if args.closed_loop else None
    row = dict(priced.row) | {"oom": out_of_memory(priced)} | ({"closed_loop": refined} if refined else {})
    return EstimateResult(row, tuple(warnings(priced, args.batch_size, pricer)), args, priced)


def price(args, pricer: str):
    """The AggResult, DisaggResult or StaticResult of the arguments, priced by `pricer` (a resolved
    pricer or "sol")."""
    require_positive("stride", args.stride)  # checked in every mode, also where it is not read (agg)
    if args.estimate_mode == "disagg":
        prefill, decode = (role_deployment(args, role) for role in ROLES)
        for worker in (prefill, decode):
            check_fits_model(worker.model, worker.pp, args.isl + args.osl, args.allow_long_context)
        return run_disagg(prefill, decode, disagg_point(args), args.semantics, pricer)
    shared = layout_deployment(args)
    check_fits_model(shared.model, shared.pp, args.isl + args.osl, args.allow_long_context)
    if args.estimate_mode == "agg":
        return run_agg(shared, agg_point(args), args.semantics, pricer)
    point = StaticPoint(
        isl=args.isl, osl=args.osl, batch_size=args.batch_size, prefix=args.prefix, nextn_accepted=nextn_accepted(args),
        stride=args.stride, free_gpu_memory_fraction=args.free_gpu_memory_fraction, max_seq_len=args.max_seq_len,
    )  # fmt: skip
    return run_static(dataclasses.replace(shared, role=STATIC_ROLES[args.estimate_mode]), point, args.estimate_mode, pricer)


def agg_point(args) -> AggPoint:
    return AggPoint(
        isl=args.isl, osl=args.osl, batch_size=args.batch_size, ctx_tokens=args.ctx_tokens, prefix=args.prefix,
        nextn_accepted=nextn_accepted(args), free_gpu_memory_fraction=args.free_gpu_memory_fraction, max_seq_len=args.max_seq_len,
    )  # fmt: skip


STATIC_ROLES = {"static": Role.STATIC, "static_ctx": Role.PREFILL, "static_gen": Role.STATIC}  # the CLI's phases resolved per static mode


def role_deployment(args, role: str) -> Deployment:
    """A disagg worker's deployment: the shared layout with the role's sizes (and the decode system)."""
    shared = layout_deployment(args)
    system = args.decode_system if role == "decode" and args.decode_system else shared.system
    return with_sizes(dataclasses.replace(shared, system=system), **{size: getattr(args, f"{role}_{size}_size") for size in ROLE_SIZES})


def disagg_point(args) -> DisaggPoint:
    """The disagg worker shapes of the arguments (the four of them are required)."""
    for name in ("prefill_batch_size", "prefill_num_workers", "decode_batch_size", "decode_num_workers"):
        if getattr(args, name) is None:
            raise InvalidInputError(f"--{name.replace('_', '-')} is required for --estimate-mode disagg")
    return DisaggPoint(
        isl=args.isl, osl=args.osl, prefill_batch_size=args.prefill_batch_size, prefill_workers=args.prefill_num_workers,
        decode_batch_size=args.decode_batch_size, decode_workers=args.decode_num_workers, prefix=args.prefix,
        nextn_accepted=nextn_accepted(args), stride=args.stride, free_gpu_memory_fraction=args.free_gpu_memory_fraction,
        prefill_free_gpu_memory_fraction=args.prefill_free_gpu_memory_fraction,
        decode_free_gpu_memory_fraction=args.decode_free_gpu_memory_fraction, max_seq_len=args.max_seq_len,
        prefill_max_seq_len=args.prefill_max_seq_len, decode_max_seq_len=args.decode_max_seq_len,
    )  # fmt: skip


def out_of_memory(result) -> bool:
    """The point does not fit: the deployment (or a disagg worker) OOMs or its batch exceeds the KV cache."""
    return result.oom if isinstance(result, DisaggResult) else result.memory.oom or result.memory.kv_oom


def warnings(result, batch_size: int, pricer: str) -> list[str]:
    """The out-of-memory warnings of a result, then, under the reference pricer, how each disagg
    worker's cross-node MoE all-to-all is priced where there is one to name, one line each."""
    if isinstance(result, DisaggResult):
        workers = (result.prefill, result.decode)
        oom = [f"warning: OOM: the {w.role.value} worker ({w.row['memory']:.2f} GiB per GPU, batch {w.row['bs']}) does not fit"
               for w in workers if not w.fits]  # fmt: skip
        notes = (large_ep_note(w.deployment) for w in workers) if pricer in ("reference", "hybrid") else ()
        return oom + [f"note: {n}" for n in notes if n]
    if result.memory.oom:
        return [f"warning: OOM: {result.row['memory']:.2f} GiB per GPU does not fit in GPU memory"]
    if result.memory.kv_oom:
        return [f"warning: batch_size ({batch_size}) exceeds the estimated KV cache capacity"]
    return []


def closed_loop_figures(args, pricer: str) -> dict:
    """The closed-loop replay of the point (engine-priced passes, the backend's default settings,
    args.closed_loop protocol): figures in ms and requests/s, then the protocol and settings replayed."""
    from estimator.closedloop import ENGINE, agg_run, disagg_run, record, replay_run

    if args.estimate_mode == "agg":
        run = agg_run(layout_deployment(args), agg_point(args))
    elif args.estimate_mode == "disagg":
        run = disagg_run(role_deployment(args, "prefill"), role_deployment(args, "decode"), disagg_point(args))
    else:
        raise InvalidInputError(f"--closed-loop applies to agg and disagg, not --estimate-mode {args.estimate_mode}")
    replayed = replay_run(run, None, args.closed_loop, pricer)
    return record(replayed, run.osl, ENGINE, replayed.protocol, replayed.settings)
