"""Legacy sweep parity against aiconfigurator 0.12.0's own ``sweep.sweep_agg`` / ``sweep.sweep_disagg``:
the same candidate set (every agg grid point that fits; every disagg worker candidate), the same
best rows in the same order, every number at rel 1e-9. Tasks span models, systems, backends,
workloads, prefixes, MTP and targets (TTFT with one or several TPOTs, request latency)."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from estimator.deployment import Backend, Deployment
from estimator.disagg import DISAGG_ROLES, Calibration, Role
from estimator.disagg.search import WorkerLimits, decode_batch_sizes, prefill_batch_sizes, worker_candidates
from estimator.scheduler import STATIC_COLUMNS, StaticPoint
from estimator.steps import Semantics
from estimator.sweep import AggOptions, DisaggOptions, Sla, Workload, sweep_agg, sweep_disagg
from estimator.sweep.space import MoeSizes, sweep_layouts
from parity.compare import MetricDiff, compare_records, explain, failures
from parity.test_disagg_parity import _database, reference_config

REL_TOL = 1e-9
LOOSE = 1e9  # ms: a target every point meets (the candidate-set query)
LEGACY = Semantics.LEGACY


@dataclasses.dataclass(frozen=True)
class SweepTask:
    """One sweep of one model on one system and backend."""

    mode: str  # "agg" | "disagg"
    model: str
    system: str
    backend: str
    isl: int
    osl: int
    sla: Sla
    tps: tuple[int, ...] = (1, 2, 4, 8)  # tensor parallel sizes swept (both disagg roles)
    prefix: int = 0
    nextn: int = 0
    accepted: float = 0.0  # nextn_accepted
    top_k: int = 10  # agg
    prefill_max_num_tokens: int = 16384  # disagg
    moe: MoeSizes = MoeSizes()  # attention-DP and MoE sizes swept (MoE models only)
    pricer: str = "native"  # ours: "reference" for models without a native op builder
    autoscale: bool = False  # disagg: engines picked per pool at one worker each (pick_autoscale)

    @property
    def id(self) -> str:
        targets = f"rl{self.sla.request_latency:g}" if self.sla.request_latency else f"ttft{self.sla.ttft:g}-tpot{'_'.join(f'{t:g}' for t in self.sla.tpots)}"
        return (
            f"{self.mode}-{self.model.split('/')[1]}-{self.system}-{self.backend}-{self.isl}x{self.osl}-p{self.prefix}"
            f"-n{self.nextn}-tp{''.join(map(str, self.tps))}-{targets}{'-autoscale' if self.autoscale else ''}"
        )

    @property
    def layouts(self) -> list[Deployment]:
        return sweep_layouts(Deployment(self.model, self.system, self.backend, nextn=self.nextn), self.tps, sizes=self.moe)

    @property
    def workload(self) -> Workload:
        return Workload(self.isl, self.osl, self.prefix, self.accepted)


TASKS = [
    SweepTask("agg", "Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", 4096, 512, Sla(2000.0, (30.0, 50.0))),
    SweepTask("agg", "meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm", 1000, 200, Sla(300.0, (10.0, 15.0)), (1, 2), prefix=300),
    SweepTask("disagg", "Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", 4096, 512, Sla(2000.0, (30.0, 50.0))),
    SweepTask("disagg", "meta-llama/Meta-Llama-3.1-8B", "h200_sxm", "trtllm", 1000, 2000, Sla(200.0, (8.0, 12.0)), (1, 2),
              prefill_max_num_tokens=8192),
    SweepTask("agg", "Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm", 2048, 1024, Sla(1000.0, (20.0, 40.0))),
    SweepTask("agg", "Qwen/Qwen3-32B", "h100_sxm", "trtllm", 8192, 256, Sla(3000.0, (60.0,))),
    SweepTask("agg", "meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm", 4096, 1024, Sla(1000.0, request_latency=40000.0)),
    SweepTask("agg", "Qwen/Qwen3-32B", "b200_sxm", "sglang", 16384, 128, Sla(5000.0, (100.0,)), nextn=1, accepted=0.7),
    SweepTask("agg", "meta-llama/Meta-Llama-3.1-8B", "h200_sxm", "sglang", 3000, 700, Sla(800.0, (12.0, 25.0)), top_k=5),
    SweepTask("disagg", "Qwen/Qwen3-32B", "h100_sxm", "vllm", 2048, 1024, Sla(1500.0, (25.0,))),
    SweepTask("disagg", "meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm", 8192, 256, Sla(3000.0, (40.0,))),
    SweepTask("disagg", "Qwen/Qwen3-32B-FP8", "b200_sxm", "vllm", 32768, 512, Sla(8000.0, request_latency=60000.0)),
    SweepTask("disagg", "meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "sglang", 4096, 256, Sla(1000.0, (20.0,)), (1, 2, 4),
              prefix=1024, nextn=2, accepted=1.2),
]  # fmt: skip
# MoE models (reference-priced): attention DP x MoE TP x MoE EP layouts under the backends' filters
MOE_TASKS = [
    SweepTask("agg", "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "trtllm", 2048, 256, Sla(2000.0, (30.0, 60.0)), (1, 2, 4),
              moe=MoeSizes(dp=(1, 2), moe_tp=(1, 2), moe_ep=(1, 2, 4)), pricer="reference"),
    SweepTask("disagg", "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "vllm", 4096, 512, Sla(3000.0, (40.0,)), (2, 4),
              moe=MoeSizes(dp=(1,), moe_tp=(1, 2), moe_ep=(1, 2, 4)), pricer="reference"),
]  # fmt: skip
# autoscale picking: targets met by some engines, then targets no engine meets (the closest-engine fallback)
AUTOSCALE_TASKS = [
    SweepTask("disagg", "Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", 4096, 512, Sla(2000.0, (30.0, 50.0)), autoscale=True),
    SweepTask("disagg", "meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm", 8192, 256, Sla(200.0, (4.0,)), autoscale=True),
    SweepTask("disagg", "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "vllm", 4096, 512, Sla(3000.0, (40.0,)), (2, 4),
              moe=MoeSizes(dp=(1,), moe_tp=(1, 2), moe_ep=(1, 2, 4)), pricer="reference", autoscale=True),
]  # fmt: skip
CI_TASKS = TASKS[:4] + MOE_TASKS[:1] + AUTOSCALE_TASKS[:2]
FULL_TASKS = TASKS[4:] + MOE_TASKS[1:] + AUTOSCALE_TASKS[2:]


# ---------------------------------------------------------------------------------------------
# The reference side
# ---------------------------------------------------------------------------------------------


def _runtime(task: SweepTask, sla: Sla):
    from aiconfigurator.sdk.config import RuntimeConfig

    return RuntimeConfig(isl=task.isl, osl=task.osl, prefix=task.prefix, ttft=sla.ttft, tpot=list(sla.tpots), request_latency=sla.request_latency)


def _speculative(task: SweepTask):
    from aiconfigurator.sdk.speculative import SpeculativeDecodingProfile

    return SpeculativeDecodingProfile.from_inputs(task.nextn, task.accepted if task.nextn else None)


def _parallel(task: SweepTask) -> list[tuple[int, ...]]:
    return [(d.tp, d.pp, d.attention_dp, d.moe_tp, d.moe_ep, 1) for d in task.layouts]


def reference_sweep(task: SweepTask, sla: Sla, top_k: int | None = None) -> pd.DataFrame:
    """aiconfigurator's sweep_agg / sweep_disagg over the task's layouts."""
    from aiconfigurator.sdk import sweep

    base = task.layouts[0]
    common = dict(model_path=task.model, runtime_config=_runtime(task, sla), speculative_profile=_speculative(task))
    if task.mode == "agg":
        return sweep.sweep_agg(**common, database=_database(base), backend_name=task.backend, model_config=reference_config(base, True),
                               parallel_config_list=_parallel(task), top_k=task.top_k if top_k is None else top_k)  # fmt: skip
    return sweep.sweep_disagg(
        **common, prefill_database=_database(base), prefill_backend_name=task.backend, prefill_model_config=reference_config(base, True),
        prefill_parallel_config_list=_parallel(task), prefill_latency_correction=1.1, decode_database=_database(base),
        decode_backend_name=task.backend, decode_model_config=reference_config(base, False), decode_parallel_config_list=_parallel(task),
        decode_latency_correction=1.08, prefill_max_num_tokens=task.prefill_max_num_tokens, prefill_num_worker_list=list(range(1, 33)),
        decode_num_worker_list=list(range(1, 33)), num_gpu_list=list(range(1, 9)), require_same_tp=task.backend == "sglang",
        autoscale=task.autoscale,
    )  # fmt: skip


def reference_workers(task: SweepTask, role: Role) -> pd.DataFrame:
    """aiconfigurator's disagg worker candidates of one role."""
    from aiconfigurator.sdk import sweep

    base = task.layouts[0]
    batches = prefill_batch_sizes(task.prefill_max_num_tokens, task.isl) if role is Role.PREFILL else decode_batch_sizes(512)
    return sweep._get_disagg_worker_candidates(
        model_path=task.model, model_config=reference_config(base, role is Role.PREFILL), parallel_config_list=_parallel(task),
        b_list=batches, runtime_config=_runtime(task, task.sla), role=role.value, database=_database(base), backend_name=task.backend,
        latency_correction=1.1 if role is Role.PREFILL else 1.08, speculative_profile=_speculative(task),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Our side
# ---------------------------------------------------------------------------------------------


def our_sweep(task: SweepTask, sla: Sla, top_k: int | None = None):
    if task.mode == "agg":
        options = AggOptions(top_k=task.top_k if top_k is None else top_k)
        return sweep_agg(task.layouts, task.workload, sla, options, LEGACY, task.pricer)
    limits = WorkerLimits(total_gpus=frozenset(range(1, 9)), same_tp=Backend(task.backend) is Backend.SGLANG)
    options = DisaggOptions(task.prefill_max_num_tokens, limits=limits, autoscale=task.autoscale)
    return sweep_disagg(task.layouts, task.layouts, task.workload, sla, options, LEGACY, task.pricer)


def our_workers(task: SweepTask, role: Role) -> pd.DataFrame:
    point = StaticPoint(task.isl, task.osl, 1, task.prefix, task.accepted)
    batches = prefill_batch_sizes(task.prefill_max_num_tokens, task.isl) if role is Role.PREFILL else decode_batch_sizes(512)
    rows = [w.row for d in task.layouts for w in worker_candidates(d, batches, point, role, LEGACY, Calibration(), task.pricer)]
    return pd.DataFrame(rows, columns=list(STATIC_COLUMNS))


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------


def compare_frames(name: str, expected: pd.DataFrame, actual: pd.DataFrame, columns) -> list[MetricDiff]:
    """Row by row (same count, same order), every reference column."""
    diffs = [MetricDiff(name, "<rows>", float(len(expected)), float(len(actual)), 0.0, len(expected) == len(actual))]
    shared = [c for c in expected.columns if c in columns]
    for i, (e, a) in enumerate(zip(expected[shared].to_dict("records"), actual[shared].to_dict("records"))):
        diffs += compare_records(f"{name} row {i}", _plain(e), _plain(a), REL_TOL)
    return diffs


def _plain(record: dict) -> dict:
    """NaN-free values (pandas fills None into object columns as NaN in some frames)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in record.items()}


def best_diffs(task: SweepTask) -> list[MetricDiff]:
    ours = our_sweep(task, task.sla).best
    return compare_frames(task.id, reference_sweep(task, task.sla), ours, ours.columns)


def candidate_diffs(task: SweepTask) -> list[MetricDiff]:
    """Agg: every point that fits (loose targets, no top-k cut); disagg: both roles' worker candidates."""
    if task.mode == "agg":
        loose = Sla(LOOSE, (LOOSE,))
        ours = our_sweep(task, loose, top_k=0).best
        return compare_frames(f"{task.id} candidates", reference_sweep(task, loose, top_k=0), ours, ours.columns)
    return [d for role in DISAGG_ROLES for d in compare_frames(f"{task.id} {role.value} workers", reference_workers(task, role),
                                                       our_workers(task, role), STATIC_COLUMNS)]  # fmt: skip


def _assert_ok(diffs: list[MetricDiff]) -> None:
    assert not failures(diffs), explain(diffs)


@pytest.mark.reference
@pytest.mark.parametrize("task", CI_TASKS, ids=lambda t: t.id)
def test_best_rows_equal_reference(task):
    _assert_ok(best_diffs(task))


@pytest.mark.reference
@pytest.mark.parametrize("task", CI_TASKS, ids=lambda t: t.id)
def test_candidate_set_equals_reference(task):
    _assert_ok(candidate_diffs(task))


@pytest.mark.full
@pytest.mark.reference
@pytest.mark.parametrize("task", FULL_TASKS, ids=lambda t: t.id)
def test_best_rows_equal_reference_full(task):
    _assert_ok(best_diffs(task))


@pytest.mark.full
@pytest.mark.reference
@pytest.mark.parametrize("task", FULL_TASKS, ids=lambda t: t.id)
def test_candidate_set_equals_reference_full(task):
    _assert_ok(candidate_diffs(task))


@pytest.mark.reference
@pytest.mark.parametrize("task", [CI_TASKS[0], AUTOSCALE_TASKS[0]], ids=lambda t: t.id)
def test_sweep_parity_fails_on_a_perturbed_value(task):
    ours = our_sweep(task, task.sla).best
    ours.loc[3, "tokens/s/gpu"] *= 1 + 1e-7
    bad = failures(compare_frames(task.id, reference_sweep(task, task.sla), ours, ours.columns))
    assert [(d.record, d.metric) for d in bad] == [(f"{task.id} row 3", "tokens/s/gpu")]


@pytest.mark.reference
def test_sweep_parity_fails_on_a_missing_or_reordered_row():
    task = CI_TASKS[2]
    ours, theirs = our_sweep(task, task.sla).best, reference_sweep(task, task.sla)
    assert "<rows>" in {d.metric for d in failures(compare_frames(task.id, theirs, ours.iloc[:-1], ours.columns))}
    swapped = ours.iloc[[1, 0, *range(2, len(ours))]]
    assert failures(compare_frames(task.id, theirs, swapped, ours.columns))
