"""Legacy recommend parity against aiconfigurator 0.12.0's ``cli default``: the same top rows per mode (the
table ``cli default`` prints: its best configurations that meet the TPOT target, best first), every
reference column, budget-wide tokens/s/gpu and replicas included, at rel 1e-9, and the same verdict.

The reference side is ``cli default``'s own pipeline: ``build_default_tasks``, each task's ``run()``,
``process_experiment_result`` (``pick_default``) and, for ``--backend auto``, ``merge_experiment_results_by_mode``.
On SGLang the reference's context-parallel layouts (cp 2/4/8), which this estimator does not model, are
switched off on both pools (``agg_cp_candidates`` / ``prefill_cp_candidates`` = [1]); nothing else is changed.
The dense TRT-LLM and SGLang tasks run by default; the MoE task (its reference run is the slowest) runs with ``--full``.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from estimator.recommend import RecommendTask, recommend_task
from estimator.recommend.picking import CLUSTER, meeting_targets, verdict
from parity.compare import MetricDiff, compare_records, explain, failures

REL_TOL = 1e-9
MODES = ("agg", "disagg")


@dataclasses.dataclass(frozen=True)
class DefaultTask:
    """One `aiconfigurator cli default` invocation."""

    model: str
    backend: str
    total_gpus: int
    isl: int = 4000
    osl: int = 1000
    ttft: float = 1000.0
    tpot: float = 30.0
    system: str = "h200_sxm"

    @property
    def id(self) -> str:
        return f"{self.model.split('/')[1]}-{self.system}-{self.backend}-{self.total_gpus}gpu-{self.isl}x{self.osl}-ttft{self.ttft:g}-tpot{self.tpot:g}"

    def ours(self) -> RecommendTask:
        return RecommendTask(self.model, self.system, self.total_gpus, self.isl, self.osl, self.ttft, self.tpot, backend=self.backend,
                             semantics="legacy")  # fmt: skip


TASKS = [
    DefaultTask("Qwen/Qwen3-32B-FP8", "trtllm", 8),  # dense, TRT-LLM: the benchmark task
    DefaultTask("Qwen/Qwen3-32B-FP8", "sglang", 8, isl=2048, osl=512, ttft=600.0, tpot=20.0),  # dense, SGLang
    pytest.param(DefaultTask("Qwen/Qwen3-235B-A22B-FP8", "trtllm", 4, isl=2048, osl=512, ttft=2000.0, tpot=40.0),  # MoE, TRT-LLM (~26 s)
                 marks=pytest.mark.full),
]  # fmt: skip


def reference_tops(task: DefaultTask) -> tuple[dict[str, pd.DataFrame], str]:
    """cli default's printed top rows per mode (tpot <= target, best first) and its verdict."""
    from aiconfigurator.cli.main import build_default_tasks
    from aiconfigurator.cli.utils import merge_experiment_results_by_mode, process_experiment_result

    tasks = build_default_tasks(model_path=task.model, total_gpus=task.total_gpus, system=task.system, backend=task.backend,
                                isl=task.isl, osl=task.osl, ttft=task.ttft, tpot=task.tpot)  # fmt: skip
    best, fronts, axes = {}, {}, {}
    for name, t in tasks.items():
        for role in ("agg", "prefill"):
            if getattr(t, f"{role}_cp_candidates", None):
                setattr(t, f"{role}_cp_candidates", [1])
        best[name], _, fronts[name], axes[name], _ = process_experiment_result(t, {"pareto_df": t.run()}, 5)
    if len(tasks) > 2:
        best, _, _, _ = merge_experiment_results_by_mode(tasks, best, fronts, axes, 5)
    tops = {}
    for mode in MODES:
        frame = best.get(mode, pd.DataFrame())
        tops[mode] = frame[frame["tpot"] <= task.tpot].sort_values(by=CLUSTER, ascending=False).head(5).reset_index(drop=True)
    throughputs = {m: float(t[CLUSTER].iloc[0]) for m, t in tops.items() if not t.empty}
    return tops, verdict(throughputs)


def _plain(record: dict) -> dict:
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in record.items()}


def top_diffs(name: str, expected: pd.DataFrame, actual: pd.DataFrame) -> list:
    """Row by row (same count, same order), every reference column our rows hold."""
    diffs = [MetricDiff(name, "<rows>", float(len(expected)), float(len(actual)), 0.0, len(expected) == len(actual))]
    shared = [c for c in expected.columns if c in actual.columns and not c.startswith("_")]
    for i, (e, a) in enumerate(zip(expected[shared].to_dict("records"), actual[shared].to_dict("records"))):
        diffs += compare_records(f"{name} row {i}", _plain(e), _plain(a), REL_TOL)
    return diffs


@pytest.fixture(scope="module", params=TASKS, ids=lambda t: t.id)
def pair(request):
    task = request.param
    rec = recommend_task(task.ours())
    ours = {m: meeting_targets(rec.modes[m].top, task.ours().constraint, 5) for m in MODES}
    return task, ours, rec.verdict, *reference_tops(task)


@pytest.mark.reference
def test_top_rows_equal_cli_default(pair):
    task, ours, _, theirs, _ = pair
    diffs = [d for m in MODES for d in top_diffs(f"{task.id} {m}", theirs[m], ours[m])]
    assert all(not theirs[m].empty for m in MODES), "a task whose modes both have top rows"
    assert not failures(diffs), explain(diffs)


@pytest.mark.reference
def test_verdict_equals_cli_default(pair):
    _, _, ours, _, theirs = pair
    assert ours == theirs


@pytest.mark.reference
def test_parity_fails_on_a_perturbed_value(pair):
    task, ours, _, theirs, _ = pair
    perturbed = ours["agg"].copy()
    perturbed.loc[0, CLUSTER] *= 1 + 1e-7
    bad = failures(top_diffs(f"{task.id} agg", theirs["agg"], perturbed))
    assert [(d.record, d.metric) for d in bad] == [(f"{task.id} agg row 0", CLUSTER)]
    assert "<rows>" in {d.metric for d in failures(top_diffs(f"{task.id} agg", theirs["agg"], ours["agg"].iloc[:-1]))}
