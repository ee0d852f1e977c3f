"""Static-batch parity on expert parallelism wider than a node: our `estimate --estimate-mode
static | static_ctx | static_gen` equals AIConfigurator 0.12.0's `cli_estimate` in the same mode
(ttft, tpot, memory at rel 1e-9), the CLI resolving the cross-node all-to-all for the phases each
mode names (cli/api.py _run_static_estimate L1760-1771: static_ctx the context phase, the others
both; estimator.api.estimating.STATIC_ROLES)."""

from __future__ import annotations

import pytest

from estimator.api.estimating import STATIC_ROLES
from estimator.deployment import Deployment, Role
from estimator.scheduler import StaticPoint, run_static
from parity.compare import compare_records, explain, failures

REL_TOL = 1e-9
METRICS = ("ttft", "tpot", "memory")
# DeepSeek-V3 on gb200 (4 GPUs a node) at attention DP = EP = 16: the SGLang wide-EP tables cover both phases
LAYOUT = {"tp_size": 1, "attention_dp_size": 16, "moe_tp_size": 1, "moe_ep_size": 16}
WORKLOAD = {"batch_size": 2, "isl": 1024, "osl": 64}
MODES = ("static", "static_ctx", "static_gen")


def _theirs(mode: str) -> dict:
    from aiconfigurator.cli.api import cli_estimate

    result = cli_estimate(model_path="deepseek-ai/DeepSeek-V3", system_name="gb200", backend_name="sglang", mode=mode, **LAYOUT, **WORKLOAD)
    return {"ttft": result.ttft, "tpot": result.tpot, "memory": result.raw["memory"]}


def _ours(mode: str) -> dict:
    deployment = Deployment("deepseek-ai/DeepSeek-V3", "gb200", "sglang", tp=1, attention_dp=16, moe_tp=1, moe_ep=16, role=STATIC_ROLES[mode])
    row = run_static(deployment, StaticPoint(WORKLOAD["isl"], WORKLOAD["osl"], WORKLOAD["batch_size"]), mode).row
    return {m: row[m] for m in METRICS}


@pytest.mark.reference
@pytest.mark.parametrize("mode", MODES)
def test_static_modes_equal_the_cli_on_expert_parallelism_wider_than_a_node(mode):
    diffs = compare_records(f"DeepSeek-V3-gb200-sglang-dep16-{mode}", _theirs(mode), _ours(mode), REL_TOL)
    assert not failures(diffs), explain(diffs)


@pytest.mark.reference
def test_static_parity_fails_when_the_static_batch_keeps_the_fused_graph(monkeypatch, fresh_caches):
    from estimator.api import estimating

    monkeypatch.setitem(estimating.STATIC_ROLES, "static", Role.AGG)  # the agg estimate's choice: no phase resolved
    failing = {d.metric for d in failures(compare_records("static", _theirs("static"), _ours("static"), REL_TOL))}
    assert {"ttft", "tpot"} <= failing
