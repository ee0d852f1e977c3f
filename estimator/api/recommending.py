"""estimator.recommend: agg against disagg (and every backend with backend="auto") within a GPU
budget, the `recommend` command's params and its result: each mode's top configurations, the
verdict, the Pareto frontier and the launch files."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from estimator.api.deployments import DEPLOYMENT, LONG_CONTEXT_PARAM, PRICER_PARAM, check_fits_model, pricer_of
from estimator.api.estimating import SEMANTICS_PARAM
from estimator.api.flags import Command, Param
from estimator.api.status import ExitStatus
from estimator.api.sweeping import CLOSED_LOOP, SWEEP, TARGETS
from estimator.perf import load_system_spec
from estimator.pricing.reference import is_moe_model
from estimator.recommend import AUTO, Recommendation, RecommendTask, recommend_task
from estimator.recommend.output import best_configs, json_document, pareto_rows, save

# The flags recommend shares with sweep: the same name, kind, default and help.
MODEL_PATH, SYSTEM, BACKEND_VERSION, DECODE_SYSTEM, ISL, OSL, PREFIX, TTFT = (
    SWEEP.param(name) for name in ("model_path", "system", "backend_version", "decode_system", "isl", "osl", "prefix", "ttft")
)
TOTAL_GPUS = dataclasses.replace(SWEEP.param("total_gpus"), default=None, required=True)  # sweep's flag, without its default

RECOMMEND = Command(
    "recommend",
    (
        MODEL_PATH,
        SYSTEM,
        Param("backend", str, AUTO, "trtllm | vllm | sglang | auto (every backend)", DEPLOYMENT),
        BACKEND_VERSION,
        DECODE_SYSTEM,
        TOTAL_GPUS,
        ISL,
        OSL,
        PREFIX,
        TTFT,
        Param("tpot", float, 30.0, "TPOT target, ms", TARGETS),
        Param("request_latency", float, help="request latency target, ms (ranks by it instead of TPOT)", group=TARGETS),
        Param("top_n", int, 5, "configurations per mode", TARGETS),
        PRICER_PARAM,
        SEMANTICS_PARAM,
        LONG_CONTEXT_PARAM,
        Param("refined_sla", bool, False, "the closed-loop replay (benchmark protocol) ranks the top configurations", CLOSED_LOOP),
    ),
    example="python -m estimator recommend --model-path Qwen/Qwen3-32B-FP8 --system h200_sxm --total-gpus 8 --isl 4000 --osl 1000 --ttft 1000 --tpot 30",
)


@dataclass(frozen=True)
class RecommendResult:
    """A finished recommendation and what the command exits with."""

    recommendation: Recommendation = field(repr=False, compare=False)  # per mode its top rows and frontier, the verdict, the notes
    status: ExitStatus  # FOUND (some mode meets the targets) or NOTHING_MEETS_TARGETS (each mode's closest miss in to_json())
    arguments: object = field(compare=False)  # the call's arguments, defaults filled in (RECOMMEND.arguments_type)

    @property
    def verdict(self) -> str:
        """The line comparing the modes, e.g. "disagg 1.07x better than agg"."""
        return self.recommendation.verdict

    @property
    def row(self) -> dict | None:
        """The best configuration as `recommend --json` prints it: rank 1 of the winning mode
        (figures in ms and tokens/s, tokens/s/gpu budget-wide); None when nothing meets the targets."""
        winner = self.recommendation.winner
        return None if winner is None else self.to_json()["modes"][winner]["top"][0]

    def to_frame(self) -> pd.DataFrame:
        """Every mode's top configurations (agg first, rank from 1): what best_configs.csv holds."""
        return best_configs(self.recommendation)

    def frontier(self) -> pd.DataFrame:
        """Every mode's Pareto frontier (closed-form figures): what pareto.csv holds."""
        return pareto_rows(self.recommendation)

    def to_json(self) -> dict:
        """What `recommend --json` prints (NaN as None)."""
        return json_document(self.recommendation)

    def save(self, folder: str | Path) -> list[Path]:
        """Write what `recommend --save-dir folder` writes (tables, frontier page, launch files); the files, in order."""
        return save(self.recommendation, folder, is_moe_model(self.recommendation.task.model))


def recommend(**arguments) -> RecommendResult:
    """The deployment to run within a GPU budget, as `python -m estimator recommend`: keyword
    arguments are its flags with underscores (model_path, system, total_gpus, isl, osl, ttft, tpot,
    backend, ...) and take the same defaults. Bad arguments, or a budget no searched layout fits in,
    raise EstimatorError with the command's one-line message."""
    return recommend_with(RECOMMEND.bind(arguments))


def recommend_with(args) -> RecommendResult:
    """recommend of bound arguments (the command line calls this with its parsed flags)."""
    check_fits_model(args.model_path, 1, args.isl + args.osl, args.allow_long_context)
    pricer_of(args)
    if args.decode_system is not None:
        load_system_spec(args.decode_system)  # an unknown decode system is the error, not a disagg mode skipped for it
    task = RecommendTask(model=args.model_path, system=args.system, total_gpus=args.total_gpus, isl=args.isl, osl=args.osl, ttft=args.ttft,
                         tpot=args.tpot, backend=args.backend, decode_system=args.decode_system, prefix=args.prefix,
                         request_latency=args.request_latency, top_n=args.top_n, semantics=args.semantics, refined=args.refined_sla,
                         backend_version=args.backend_version, pricer=args.pricer)  # fmt: skip
    rec = recommend_task(task)
    return RecommendResult(rec, ExitStatus.FOUND if rec.found else ExitStatus.NOTHING_MEETS_TARGETS, args)
