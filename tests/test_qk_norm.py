"""MiniMax-M2's cross-head q/k norm all-reduces (estimator.closedloop.qk_norm): the engines' count per
release, their price from the system's custom all-reduce table, and the replay's pass tables carrying
them (a test fails when the mechanism is removed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from estimator.closedloop.cases import prepare, replay_case
from estimator.closedloop.engine import PassModel, TableExtent, engine_tables
from estimator.closedloop.protocol import parse_protocol
from estimator.closedloop.qk_norm import cross_head_qk_norm, qk_norm_ms
from estimator.closedloop.replay import replay_agg
from estimator.closedloop.runs import AggRun, agg_engine_case
from estimator.deployment import Backend, Deployment
from estimator.errors import InvalidInputError
from estimator.perf.versions import resolve_version
from estimator.scheduler.facts import deployment_facts
from estimator.settings import EngineSettings, qk_norm_allreduces, system_defaults

pytestmark = pytest.mark.reference

MINIMAX_TP4 = Deployment("MiniMaxAI/MiniMax-M2.5", "b200_sxm", "vllm", tp=4, moe_tp=4, moe_ep=1)


@pytest.mark.parametrize(
    ("backend", "version", "count"),
    [
        ("vllm", "0.11.2", 2), ("vllm", "0.13.0", 2), ("vllm", "0.14.0", 1), ("vllm", "0.19.0", 1),
        ("vllm", "nightly-5b8c30d62b754b57", 1), ("vllm", None, 1),
        ("sglang", "0.5.6.post2", 2), ("sglang", "0.5.7", 2), ("sglang", "0.5.8.post1", 1), ("sglang", "0.5.9", 1),
        ("trtllm", "1.2.0rc6.post2", 0),
    ],
)  # fmt: skip
def test_each_engine_release_runs_its_count_of_allreduces(backend, version, count):
    """vLLM PR 31493 (0.14.0) and SGLang PR 14416 (0.5.8) reduce q and k together; TRT-LLM's code was not read."""
    assert qk_norm_allreduces(Backend.parse(backend), version) == count
    assert system_defaults(backend, "b200_sxm", version).qk_norm_allreduces == count


@pytest.mark.parametrize("value", [-1, 1.5, "2", None])
def test_a_bad_count_is_refused_naming_the_setting(value):
    with pytest.raises(InvalidInputError, match="qk_norm_allreduces"):
        EngineSettings(8192, True, qk_norm_allreduces=value)


def test_only_minimax_m2_under_attention_tp_reduces_its_norm():
    assert cross_head_qk_norm(MINIMAX_TP4)
    assert not cross_head_qk_norm(dataclasses.replace(MINIMAX_TP4, tp=1, moe_tp=1))
    assert not cross_head_qk_norm(Deployment("Qwen/Qwen3-32B", "b200_sxm", "vllm", tp=4))  # per-head q/k norm: no reduction


def _smallest_message_latency_ms(deployment: Deployment) -> float:
    """The custom all-reduce table's latency at its smallest message for the TP group, read from the
    collected file itself (CUDA-graph rows, as the engines run decode)."""
    import aiconfigurator_core

    backend = deployment.backend.value
    version = resolve_version(deployment.system, backend, deployment.version)
    path = Path(aiconfigurator_core.__file__).parent / "systems" / "data" / deployment.system / "comm" / backend / version / "custom_allreduce_perf.parquet"
    table = pd.read_parquet(path)
    table = table[(table["num_gpus"] == deployment.tp) & ~table["backend"].astype(str).str.endswith("_eager")]
    return float(table.loc[table["message_size"] == table["message_size"].min(), "latency"].iloc[0])


def test_a_small_pass_pays_layers_times_the_tables_smallest_allreduce():
    """A decode pass of a few tokens moves a message below the table: each all-reduce costs the table's floor."""
    layers = deployment_facts(MINIMAX_TP4).num_layers
    floor = _smallest_message_latency_ms(MINIMAX_TP4)
    one, two = qk_norm_ms(MINIMAX_TP4, 1, np.array([1.0, 4.0])), qk_norm_ms(MINIMAX_TP4, 2, np.array([1.0, 4.0]))
    assert one == pytest.approx([layers * floor] * 2, rel=1e-9)
    assert two == pytest.approx(2 * one, rel=1e-9)  # q and k apart: twice the launches, each at the floor


def test_a_large_pass_moves_a_larger_message():
    small, large = qk_norm_ms(MINIMAX_TP4, 1, np.array([4.0, 131072.0]))
    assert large > small > 0.0


def test_nothing_is_added_without_the_reduction():
    tokens = np.array([1.0, 512.0])
    assert not qk_norm_ms(MINIMAX_TP4, 0, tokens).any()
    assert not qk_norm_ms(dataclasses.replace(MINIMAX_TP4, tp=1, moe_tp=1), 1, tokens).any()


def test_the_pass_tables_carry_the_allreduces():
    """The decode step's and the shared prefill ops' tables are the reference graph's plus the all-reduces
    at every node (removing the mechanism fails here)."""
    extent = TableExtent(tokens=256, chunks=2, chunk=256, start=256, rows=16, kv=256)
    with_norm = engine_tables(PassModel(MINIMAX_TP4, "reference", qk_norm_allreduces=1), extent)
    without = engine_tables(PassModel(MINIMAX_TP4, "reference"), extent)
    added_decode = with_norm.decode_other - without.decode_other
    added_shared = with_norm.shared - without.shared
    assert added_decode == pytest.approx(qk_norm_ms(MINIMAX_TP4, 1, with_norm.decode_rows_axis), rel=1e-9)
    assert added_shared == pytest.approx(qk_norm_ms(MINIMAX_TP4, 1, with_norm.token_axis), rel=1e-9)
    assert (added_decode > 0).all() and np.array_equal(with_norm.decode_attention, without.decode_attention)


def test_the_replay_with_the_allreduces_is_slower_and_numba_equals_python():
    """Both replays price passes from the same tables: the kernel and the literal Python agree bit for bit,
    and the all-reduces lengthen every pass (TPOT and TTFT both rise)."""
    run = AggRun(MINIMAX_TP4, isl=512, osl=32, batch_size=8)
    settings = system_defaults("vllm", "b200_sxm", "0.19.0")
    case = agg_engine_case(run, settings, parse_protocol("steady"), "reference")
    prepared = prepare(case)
    numba, python = (replay_agg(prepared.plan, case.spec, prepared.pricers[0], impl).stats for impl in ("numba", "python"))
    assert numba.same_as(python)
    off = replay_case(dataclasses.replace(case, steps=dataclasses.replace(case.steps, qk_norm_allreduces=0))).stats
    assert numba.tpot_mean > off.tpot_mean and numba.ttft_mean > off.ttft_mean
