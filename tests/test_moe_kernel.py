"""TensorRT-LLM's trtllm-gen MoE (estimator.closedloop.moe_kernel): a launch whose moe_config.backend is TRTLLM has
its MoE priced at the tables' trtllm-gen curve at every token count, everything else as the reference prices it; the
recipe fact reaches the replay from the published topology (a test fails when the mechanism is removed)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from estimator.closedloop.engine import PassModel, _component_pricers
from estimator.closedloop.moe_kernel import priced_apart, trtllm_gen_pricer
from estimator.closedloop.protocol import parse_protocol
from estimator.closedloop.runs import tandem_engine_case
from estimator.deployment import Deployment, QuantOverrides, Role
from estimator.errors import InvalidInputError
from estimator.models.ops import Moe
from estimator.perf.paths import systems_root
from estimator.perf.stack import load_stack
from estimator.pricing.native import TRTLLM_CUTLASS, TRTLLM_GEN, NativePricer
from estimator.report.methods import replay_input
from estimator.settings import EngineSettings
from measurements.loaders import load_silicon_sample
from measurements.mapping import map_measurement
from measurements.recipes.trtllm import dsr1_fp4_b200_moe_backend
from measurements.topologies.derive import COLUMNS
from measurements.topologies.resolver import RULES_PATH

pytestmark = pytest.mark.reference

VERSION = "1.3.0rc20"
PREFILL = Deployment("deepseek-ai/DeepSeek-R1", "b200_sxm", "trtllm", VERSION, tp=1, attention_dp=4, moe_tp=1, moe_ep=4,
                     quant=QuantOverrides(gemm="nvfp4", moe="nvfp4"), role=Role.PREFILL)  # fmt: skip
SHARED = ("context_attention", "context_mla_block")  # the KV-reading ops the pass tables price apart
TOKENS = np.array([[1, t, 0] for t in (64, 1024, 4096, 8192)], dtype=np.float64)
TRTLLM_ROW = "2026_03_25_deepseek_r1_gb200_trtllm_fp4_disagg_8192x1024_c4_tp4_0_ep4_0_441"  # srt-slurm prefill: TRTLLM


def _moe(**changes) -> Moe:
    fields = dict(name="context_moe", scale_factor=1.0, hidden_size=7168, inter_size=2048, topk=8, num_experts=256, moe_tp_size=1,
                  moe_ep_size=4, attention_dp_size=1, quant_mode="nvfp4", workload_distribution="power_law_1.01", is_context=True)  # fmt: skip
    return Moe(**{**fields, **changes})


def _measured(kernel: str, tokens: int) -> float:
    """The B200 1.3.0rc20 moe_perf latency of DeepSeek-R1's nvfp4 MoE at EP 4 by kernel source, ms."""
    t = pd.read_parquet(systems_root() / "data" / "b200_sxm" / "moe" / "trtllm" / VERSION / "moe_perf.parquet")
    row = t[(t.kernel_source == kernel) & (t.moe_dtype == "nvfp4") & (t.hidden_size == 7168) & (t.num_experts == 256) & (t.moe_ep_size == 4)
            & (t.moe_tp_size == 1) & (t.distribution == "power_law_1.01") & (t.num_tokens == tokens)]  # fmt: skip
    return float(row.latency.iloc[0])


@pytest.mark.parametrize("tokens", [64, 4096])
def test_the_trtllm_backend_prices_the_trtllm_gen_curve_at_every_token_count(tokens):
    """At a measured token count the op is the trtllm-gen kernel's measurement (CUTLASS's with that backend); without
    a backend the reference's rule prices CUTLASS's above 128 tokens."""
    tables = load_stack("b200_sxm", "trtllm", VERSION)
    shape = np.array([[1, tokens, 0]], dtype=np.float64)
    gen = NativePricer(tables, [_moe(moe_backend=TRTLLM_GEN)], []).context_many(shape)[0, 0]
    cutlass = NativePricer(tables, [_moe(moe_backend=TRTLLM_CUTLASS)], []).context_many(shape)[0, 0]
    rule = NativePricer(tables, [_moe()], []).context_many(shape)[0, 0]
    assert gen == pytest.approx(_measured("moe_torch_flow_min_latency", tokens), rel=1e-9)
    assert cutlass == pytest.approx(_measured("moe_torch_flow_cutlass", tokens), rel=1e-9)
    assert rule == pytest.approx(_measured("moe_torch_flow_min_latency" if tokens <= 128 else "moe_torch_flow_cutlass", tokens), rel=1e-9)


def test_a_quant_without_a_trtllm_gen_curve_keeps_the_reference_price():
    assert trtllm_gen_pricer(PREFILL, tuple(sorted(_moe(quant_mode="fp8_block").spec()["Moe"].items()))) is None


def _shared(moe_backend: str | None, deployment: Deployment = PREFILL) -> np.ndarray:
    return _component_pricers(PassModel(deployment, "reference", moe_backend=moe_backend)).context(TOKENS, exclude=SHARED)


def test_the_pass_tables_swap_only_the_moe_op():
    """The prefill worker's shared context price drops by the reference's MoE less trtllm-gen's, token for token;
    another backend (CUTLASS) keeps the reference's prices bit for bit."""
    full = _component_pricers(PassModel(PREFILL, "reference")).full
    col = full.context_names.index("context_moe")
    reference_moe = full.context_many(TOKENS)[:, col]
    op = Moe(**{**full.moe_op("context"), "moe_backend": TRTLLM_GEN})
    gen_moe = NativePricer(load_stack("b200_sxm", "trtllm", VERSION), [op], []).context_many(TOKENS)[:, 0]
    assert np.all(gen_moe < reference_moe)
    np.testing.assert_allclose(_shared(None) - _shared("TRTLLM"), reference_moe - gen_moe, rtol=1e-9)
    assert np.array_equal(_shared("CUTLASS"), _shared(None))


def test_a_system_without_the_curve_takes_its_siblings_ratio():
    """GB300's tables hold no trtllm-gen curve: its MoE is its own CUTLASS price times GB200's trtllm-gen / CUTLASS ratio
    at the same op and token count; without the backend it keeps the reference's price."""
    gb300 = dataclasses.replace(PREFILL, system="gb300")
    full = _component_pricers(PassModel(gb300, "reference")).full
    fields = full.moe_op("context")

    def moe(system: str, backend: str) -> np.ndarray:
        pricer = NativePricer(load_stack(system, "trtllm", VERSION), [Moe(**{**fields, "moe_backend": backend})], [])
        return pricer.context_many(TOKENS)[:, 0]

    transferred = moe("gb300", TRTLLM_CUTLASS) * moe("gb200", TRTLLM_GEN) / moe("gb200", TRTLLM_CUTLASS)
    reference_moe = full.context_many(TOKENS)[:, full.context_names.index("context_moe")]
    np.testing.assert_allclose(_shared(None, gb300) - _shared("TRTLLM", gb300), reference_moe - transferred, rtol=1e-9)
    assert np.all(transferred < reference_moe)


def test_the_recipe_fact_reaches_the_prefill_workers():
    """rules.csv holds the recipe's prefill moe_config.backend (derive.Recipes), the published run cites it, and the
    disagg inputs carry it to the replay's prefill pass model."""
    assert "prefill_moe_backend" in COLUMNS and "prefill_moe_backend" in pd.read_csv(RULES_PATH, nrows=0).columns
    run = next(m for m in load_silicon_sample() if m.id == TRTLLM_ROW)
    row = map_measurement(run)
    assert row.inputs.prefill_moe_backend == "TRTLLM"
    assert "prefill moe_config.backend TRTLLM: " in row.measurement.settings.citation


@pytest.mark.parametrize("bad", ["trtllm-gen", "cutlass", 1])
def test_an_unknown_moe_backend_is_refused_naming_it(bad):
    with pytest.raises(InvalidInputError, match="moe_backend must be one of"):
        EngineSettings(step_token_budget=8192, chunked_prefill=False, moe_backend=bad)


def test_the_native_twin_of_the_reference_op_prices_as_the_reference():
    """Without the backend the native op built from the reference's Moe fields prices the reference's column (below and
    above 128 tokens), so the swap changes the kernel and nothing else."""
    full = _component_pricers(PassModel(PREFILL, "reference")).full
    twin = NativePricer(load_stack("b200_sxm", "trtllm", VERSION), [Moe(**full.moe_op("context"))], [])
    np.testing.assert_allclose(twin.context_many(TOKENS)[:, 0], full.context_many(TOKENS)[:, full.context_names.index("context_moe")], rtol=1e-9)


def test_only_the_trtllm_backend_gets_its_own_pass_model():
    """Backends priced as the reference prices them share one pass model (one set of price grids); the prefill worker of
    the TRTLLM row replays with it."""
    row = map_measurement(next(m for m in load_silicon_sample() if m.id == TRTLLM_ROW))
    case = tandem_engine_case(replay_input(row), parse_protocol("steady"), "reference")
    assert case.prefill.moe_backend == "TRTLLM" and case.decode.moe_backend is None
    assert priced_apart("CUTLASS") is None and priced_apart("TRTLLM") == "TRTLLM"


@pytest.mark.parametrize(
    ("measured", "image", "mtp", "tp", "lengths", "concurrency", "attention_dp", "backend"),
    [
        ("2025-11-02T12:00", None, False, 8, (1024, 1024), 256, 8, "CUTLASS"),  # 9596d23d7: CUTLASS with attention DP
        ("2025-11-02T12:00", None, False, 8, (1024, 1024), 64, 1, "TRTLLM"),
        ("2025-11-03T17:00", None, False, 8, (1024, 1024), 256, 1, "TRTLLM"),  # before PR 145's merge (18:05Z)
        ("2025-12-15T12:00", None, False, 8, (1024, 1024), 256, 1, "CUTLASS"),  # PR 145 on: by concurrency
        ("2025-12-15T12:00", None, False, 4, (1024, 8192), 128, 1, "TRTLLM"),
        ("2026-01-14T12:00", None, False, 4, (8192, 1024), 64, 1, "CUTLASS"),
        ("2026-01-14T12:00", None, False, 4, (8192, 1024), 32, 1, "TRTLLM"),
        ("2026-01-14T12:00", None, True, 8, (8192, 1024), 64, 1, "TRTLLM"),  # the MTP scripts: by attention DP in every version
        ("2026-02-03T12:00", None, False, 8, (8192, 1024), 64, 1, "CUTLASS"),  # before PR 620's merge (17:34Z)
        ("2026-02-03T18:00", None, False, 8, (8192, 1024), 64, 1, "TRTLLM"),  # PR 620 on: by attention DP
        ("2026-02-03T18:00", None, False, 8, (1024, 1024), 4, 8, "CUTLASS"),
        ("2026-02-03T00:00", "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2", False, 8, (1024, 1024), 128, 8, "CUTLASS"),  # PR 620's run
    ],
)  # fmt: skip
def test_the_dsr1_fp4_b200_agg_scripts_moe_backend_by_version(measured, image, mtp, tp, lengths, concurrency, attention_dp, backend):
    assert dsr1_fp4_b200_moe_backend(measured, image, mtp, tp, *lengths, concurrency, attention_dp)[0] == backend


def test_an_agg_run_carries_its_scripts_moe_backend():
    run = next(m for m in load_silicon_sample() if m.id == "dsr1_b200_trtllm_fp4_agg_1024x1024_c32_cfg91")
    settings = map_measurement(run).measurement.settings
    assert settings.moe_backend == "TRTLLM" and "moe_config backend TRTLLM" in settings.citation
