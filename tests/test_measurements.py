"""Measured serving data: the silicon_sample.csv loader, source protocols, the project CSV format, and
the mapping of rows to estimator inputs (aliases, versions, reasons)."""

from __future__ import annotations

import collections
import dataclasses
import math

import pandas as pd
import pytest

from estimator.errors import InvalidInputError
from estimator.models import checkpoint_quant
from estimator.perf.versions import version_slots
from estimator.report import methods
from estimator.settings import GIB, SGLANG_SHAPE_COMPILE_MS, engine_defaults, system_defaults
from measurements import builds, checkpoints, clients, recipes, tokenizers
from measurements.loaders import load_measurements, load_silicon_sample, provenance_fields, source_of, write_measurements
from measurements.mapping import (
    DISAGG_INCOMPLETE,
    MODEL_ALIASES,
    AggInputs,
    DisaggInputs,
    bundled_architecture,
    labelled_layout,
    map_all,
    map_measurement,
    nearest_data_version,
    resolve_model,
    served_kv_cache,
)
from measurements.recipes import models as recipe_models_
from measurements.recipes import sglang as sglang_recipes
from measurements.schema import ADDED_COLUMNS, COLUMN_DOCS, CSV_COLUMNS, SETTINGS_COLUMNS, Layout, flatten, unflatten

SETTINGS_FIELDS_BY_COLUMN = {column: name for name, column in SETTINGS_COLUMNS.items()}


@pytest.fixture(scope="module")
def sample():
    return load_silicon_sample()


@pytest.fixture(scope="module")
def mapped(sample):
    return map_all(sample)


# ---- loading the shipped sample ---------------------------------------------------------------


def test_sample_has_every_row_of_the_baseline(sample):
    assert len(sample) == 5221
    assert collections.Counter(m.engine for m in sample) == {"trtllm": 2389, "sglang": 1487, "vllm": 1345}
    assert collections.Counter(m.mode for m in sample) == {"agg": 3619, "disagg": 1602}


def test_sample_ids_are_unique(sample):
    assert len({m.id for m in sample}) == len(sample)


def test_agg_rows_carry_an_agg_layout_and_disagg_rows_two_worker_layouts(sample):
    for m in sample:
        assert (m.agg is not None) == (m.mode == "agg")
        assert (m.prefill is not None) == (m.decode is not None) == (m.mode == "disagg")


def test_measured_latencies_are_positive(sample):
    assert all(m.ttft_ms > 0 and m.tpot_ms > 0 for m in sample)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("db-dump/2026-04-27; config_id=733; silicon_concurrency=128; measured=2026-04-17T00:00:00.000Z; vllm/vllm-openai:v0.19.0-cu130",
         {"config_id": "733", "silicon_concurrency": "128", "measured": "2026-04-17T00:00:00.000Z", "image": "vllm/vllm-openai:v0.19.0-cu130"}),
        ("source_file=x.csv; silicon_concurrency=8; image=lmsysorg/sglang:v0.5.9-cu130",
         {"source_file": "x.csv", "silicon_concurrency": "8", "image": "lmsysorg/sglang:v0.5.9-cu130"}),
    ],
    ids=["bare-image", "keyed-image"],
)  # fmt: skip
def test_provenance_fields(text, expected):
    assert provenance_fields(text) == expected


@pytest.mark.parametrize(
    "provenance, source",
    [
        ("db-dump/2026-04-27; config_id=1", clients.INFERENCEX),
        ("source_file=2026-04-06.csv; model=DeepSeek-R1", clients.INFERENCEX),
        ("source_file=/Users/x/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/q.csv", clients.AIC_GAP_ANALYSIS),
        ("source_file=kimi-k2.5-gap-analysis.csv", clients.AIC_GAP_ANALYSIS),
        ("somewhere else", clients.UNKNOWN_SOURCE),
    ],
    ids=["db-dump", "dated-csv", "gap-analysis-path", "gap-analysis-file", "unknown"],
)
def test_source_attribution(provenance, source):
    assert source_of(provenance) == source


def test_sources_of_the_sample(sample):
    assert collections.Counter(m.source for m in sample) == {clients.INFERENCEX: 4250, clients.AIC_GAP_ANALYSIS: 971}


# ---- protocols --------------------------------------------------------------------------------


def test_inferencex_rows_follow_the_published_client_protocol(sample):
    """10 x C prompts, but where InferenceX's B200 docker runner set 50 x C (20 x C at OSL 8192): the SGLang DeepSeek-R1 FP8
    B200 runs before PR 480."""
    rows = [m for m in sample if m.source == clients.INFERENCEX and m.concurrency is not None]
    docker = [m for m in rows if "launch_b200-nvd.sh" in m.protocol.client_citation]
    assert len(docker) == 31 and {m.measured_date for m in docker} == {"2025-11-18", "2025-12-31"}
    for m in rows:
        p = m.protocol
        per_c = (20 if m.osl == 8192 else 50) if m in docker else 10
        assert (p.num_prompts, p.request_rate, p.random_range_ratio, p.ignore_eos) == (per_c * m.concurrency, math.inf, 0.8, True)
        assert "benchmark_lib.sh" in p.client_citation and p.client_seed == 0 and "--seed default 0" in p.client_citation


def test_the_replay_repeats_the_clients_seeded_draws(sample):
    """A row whose client seed is recorded replays that client's draws; one without takes the lattice."""
    m = next(m for m in sample if m.source == clients.INFERENCEX and m.concurrency == 8)
    seeded = methods.replay_protocol(m, "benchmark")
    assert seeded.seed == 0 and (seeded.prompts_per_client, seeded.range_ratio) == (10, 0.8)
    unrecorded = methods.replay_protocol(dataclasses.replace(m, protocol=dataclasses.replace(m.protocol, client_seed=None)), "benchmark")
    assert unrecorded.seed is None and unrecorded == dataclasses.replace(seeded, seed=None)


@pytest.mark.parametrize(("precision", "osl", "measured", "prompts"), [
    ("fp8", 1024, "2025-11-18T00:00:00.000Z", 400), ("fp8", 8192, "2025-11-18T00:00:00.000Z", 160),
    ("fp8", 1024, "2026-01-21T18:00:00Z", None), ("fp8", 1024, "2025-10-05", None), ("fp4", 1024, "2025-11-18", None),
])  # fmt: skip
def test_b200_docker_runner_prompt_count(precision, osl, measured, prompts):
    """launch_b200-nvd.sh set 50 x C prompts (20 x C at OSL 8192) for DeepSeek-R1-0528 from PR 89 until PR 480; the FP4
    model id (-FP4-V2) did not match its test."""
    assert recipes.b200_docker_prompts("sglang", "deepseek-ai/DeepSeek-R1", precision, "b200_sxm", osl, 8, measured) == prompts
    assert recipes.b200_docker_prompts("sglang", "deepseek-ai/DeepSeek-R1", precision, "h200_sxm", osl, 8, measured) is None


def test_undocumented_sources_leave_the_client_protocol_empty(sample):
    p = next(m for m in sample if m.source == clients.AIC_GAP_ANALYSIS).protocol
    assert (p.num_prompts, p.request_rate, p.random_range_ratio, p.ignore_eos, p.client_seed) == (None, None, None, None, None)
    assert p.client_citation.startswith("undocumented")


def test_engine_settings_come_from_the_recipe_only_where_one_documents_them(sample):
    """InferenceX TRT-LLM rows carry the recipe's max_num_tokens rule; its SGLang agg rows with a
    resolved recipe (DeepSeek-R1/V3, Qwen3.5, GLM-5; those whose scripts changed later only for the runs
    of the version that ran) the recipe's flags; its MiniMax-M2.5 vLLM B200/B300 rows on v0.19.0 and
    Kimi-K2.5 FP4 B200 rows from 2026-04-20 twice the ISL as budget; every other row the engine defaults."""
    resolved = {(f, p, s) for f, p, s in sglang_recipes.SGLANG_RECIPES}
    families = {**dict.fromkeys(recipe_models_.DSR1_MODELS, "dsr1"), **dict.fromkeys(recipe_models_.QWEN35_MODELS, "qwen3.5"),
                **dict.fromkeys(recipe_models_.GLM5_MODELS, "glm5")}  # fmt: skip
    recipe_models = recipe_models_.DSR1_MODELS | recipe_models_.GPTOSS_MODELS | recipe_models_.LLAMA_70B_MODELS
    seen = collections.Counter()
    for m in sample:
        p, key = m.settings, (families.get(m.model), m.precision, m.system)
        runs = sglang_recipes.SGLANG_RECIPE_RUNS.get(key, sglang_recipes.RecipeRuns())
        twice_the_isl = m.engine == "vllm" and ((m.model == "MiniMaxAI/MiniMax-M2.5" and "v0.19.0" in (m.image or "") and m.system in
                                                 ("b200_sxm", "b300_sxm")) or (m.model == "moonshotai/Kimi-K2.5" and m.precision == "fp4"
                                                 and m.system == "b200_sxm" and (m.measured_date or "") >= "2026-04-20"))  # fmt: skip
        if m.source == clients.INFERENCEX and m.engine == "trtllm" and m.concurrency and m.model in recipe_models:
            assert p.origin == "source" and "_trt" in p.citation and p.chunked_prefill is False
            assert p.step_token_budget >= m.isl  # every recipe admits a whole prompt
        elif m.source == clients.INFERENCEX and m.engine == "sglang" and m.mode == "agg" and key in resolved and runs.covers(m.image, m.measured_date):
            assert p.origin == "source" and p.mixed_batches is False and p.chunked_prefill is True, m.id
            assert f"{key[0]}_{m.precision}_" in p.citation.replace("nvfp4", "fp4")
            seen[key[0]] += 1
        elif m.source == clients.INFERENCEX and twice_the_isl:
            assert p.origin == "source" and p.step_token_budget == 2 * m.isl and p.stream_interval == 20, m.id
            assert p.cudagraph_max_tokens == 2048 and "--max-cudagraph-capture-size 2048" in p.citation, m.id
            seen[m.model] += 1
        elif "InferenceX twin" not in m.protocol.client_citation:  # a gap-analysis twin takes its InferenceX run's settings
            assert p.origin == "engine default", m.id
    assert seen["glm5"] == 46 and seen["moonshotai/Kimi-K2.5"] == 11 and seen["qwen3.5"] > 150, seen


@pytest.mark.parametrize(
    "model, precision, system, tp, concurrency, flags",
    [
        ("deepseek-ai/DeepSeek-R1", "fp8", "b200_sxm", 8, 16, (32768, 30, 30)),
        ("deepseek-ai/DeepSeek-R1", "fp8", "b200_sxm", 8, 8, (32768, 30, 10)),
        ("deepseek-ai/DeepSeek-V3", "fp8", "b300_sxm", 4, 64, (8192, 30, 10)),
        ("deepseek-ai/DeepSeek-V3", "fp8", "b300_sxm", 8, 64, (32768, 30, 30)),
        ("deepseek-ai/DeepSeek-R1", "fp4", "b200_sxm", 8, 4, (16384, 10, 10)),
        ("deepseek-ai/DeepSeek-V3", "fp4", "b300_sxm", 4, 16, (16384, 10, 30)),
        ("deepseek-ai/DeepSeek-R1", "fp8", "h200_sxm", 8, 64, (32768, 10, 1)),
        ("Qwen/Qwen3.5-397B-A17B", "fp8", "b300_sxm", 4, 64, (16384, 50, 10)),
        ("Qwen/Qwen3.5-397B-A17B", "fp8", "b200_sxm", 4, 8, (32768, 30, 10)),
        ("Qwen/Qwen3.5-397B-A17B", "fp8", "b200_sxm", 8, 16, (32768, 30, 30)),
        ("Qwen/Qwen3.5-397B-A17B", "fp8", "b300_sxm", 8, 2, (16384, 50, 10)),
        ("Qwen/Qwen3.5-397B-A17B", "fp8", "h200_sxm", 8, 64, (16384, 50, 1)),
    ],
)
def test_sglang_recipe_flags(model, precision, system, tp, concurrency, flags):
    def settings(system=system, precision=precision, tp=tp, mode="agg", image="lmsysorg/sglang:v0.5.9-cu130-amd64"):
        return recipes.recipe_settings(clients.INFERENCEX, "sglang", 1024, 1024, concurrency, model, system, precision, tp, mode, image)

    s = settings()
    assert (s.step_token_budget, s.stream_interval, s.recv_interval, s.max_num_seqs, s.mixed_batches) == (*flags, None, False)
    assert settings(mode="disagg") is None and settings(precision="bf16") is None and settings(tp=None) is None


def test_image_bound_recipe_applies_to_its_image_line_only():
    """Qwen3.5 FP8 B200 is resolved for the v0.5.9 runs only: a later image keeps the engine defaults."""

    def settings(image):
        return recipes.recipe_settings(clients.INFERENCEX, "sglang", 1024, 1024, 16, "Qwen/Qwen3.5-397B-A17B", "b200_sxm", "fp8", 4, "agg", image)

    assert settings("lmsysorg/sglang:v0.5.9-cu129-amd64").step_token_budget == 32768
    assert settings("lmsysorg/sglang:nightly-dev-20260422-de962f32") is None and settings(None) is None


@pytest.mark.parametrize(("model", "precision", "system", "measured", "flags"), [
    ("Qwen/Qwen3.5-397B-A17B", "bf16", "b200_sxm", "2026-02-20", (32768, 30, 30)),
    ("Qwen/Qwen3.5-397B-A17B", "fp4", "b200_sxm", "2026-04-08", (32768, 30, 30)),
    ("Qwen/Qwen3.5-397B-A17B", "fp4", "b200_sxm", "2026-05-01", None),  # 16384 and stream 50 from 9189c1884
    ("Qwen/Qwen3.5-397B-A17B", "fp4", "b300_sxm", "2026-04-18", (32768, 30, 30)),
    ("Qwen/Qwen3.5-397B-A17B", "bf16", "b300_sxm", "2026-04-16", None),  # before the script
    ("zhipuai/GLM-5", "fp8", "b200_sxm", "2026-03-20", (32768, 30, 1)),
    ("zhipuai/GLM-5", "fp4", "b200_sxm", "2026-03-29", (131072, 30, 1)),
    ("zhipuai/GLM-5", "fp8", "h200_sxm", "2026-03-19", None),  # no recipe resolved
    ("zhipuai/GLM-5", "fp8", "b200_sxm", None, None),  # undated: the version is unknown
])  # fmt: skip
def test_date_bound_recipe_applies_to_the_runs_of_its_script_version(model, precision, system, measured, flags):
    """A recipe whose script changed later applies to the runs measured while the version that ran was in effect."""
    s = recipes.recipe_settings(clients.INFERENCEX, "sglang", 1024, 1024, 16, model, system, precision, 4, "agg", None, measured=measured)
    assert (None if s is None else (s.step_token_budget, s.stream_interval, s.recv_interval)) == flags


def test_kimi_k2_5_fp4_b200_runs_take_twice_the_isl_from_pr_1047():
    def settings(measured, isl=1024):
        return recipes.recipe_settings(clients.INFERENCEX, "vllm", isl, 1024, 16, "moonshotai/Kimi-K2.5", "b200_sxm", "fp4", 4, "agg",
                                       "vllm/vllm-openai:v0.17.0", measured=measured)  # fmt: skip

    assert (settings("2026-04-20").step_token_budget, settings("2026-04-20", 8192).step_token_budget) == (2048, 16384)
    assert settings("2026-04-20").stream_interval == 20 and settings("2026-03-27") is None and settings(None) is None


def test_sglang_recipe_has_no_branch_for_other_tp_sizes():
    """dsr1_fp8_b200.sh knows TP 4 and TP 8 only: a TP 2 run keeps the engine defaults."""
    assert recipes.recipe_settings(clients.INFERENCEX, "sglang", 1024, 1024, 16, "deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 2) is None


def test_recipe_branch_follows_the_priced_layout(mapped):
    """A DeepSeek FP8 B200 SGLang row gets the TP 4 branch (budget 8192) exactly when the layout the
    mapping prices has 4 GPUs, also where its columns said 16 (tp 16 x MoE 4 x 4)."""
    rows = [r for r in mapped if r.inputs and r.measurement.engine == "sglang" and r.measurement.system == "b200_sxm"
            and r.measurement.precision == "fp8" and r.measurement.settings.origin == "source"
            and r.measurement.model in recipe_models_.DSR1_MODELS]  # fmt: skip
    assert any(r.recorded is not None for r in rows)
    for r in rows:
        d = r.inputs.deployment
        assert (r.measurement.settings.step_token_budget == 8192) == (d.tp * d.attention_dp == 4), r.measurement.id


@pytest.mark.parametrize(
    "isl, concurrency, budget",
    [(1024, 4, 8192), (8192, 4, 8320), (8192, 256, 8512), (8000, 1, 8192), (1024, 8000, 9088)],
)
def test_trtllm_recipe_budget_holds_a_prompt_beside_every_decode(isl, concurrency, budget):
    def settings(source=clients.INFERENCEX, engine="trtllm", model="deepseek-ai/DeepSeek-R1"):
        return recipes.recipe_settings(source, engine, isl, 1024, concurrency, model, "b200_sxm")

    s = settings()
    assert (s.step_token_budget, s.chunked_prefill, s.max_num_seqs) == (budget, False, concurrency)
    assert settings(model="openai/gpt-oss-120b").step_token_budget == 20000
    assert settings(model="meta-llama/Llama-3.1-70B").step_token_budget == 16384
    assert settings(model="zhipuai/GLM-5") is None  # no resolved recipe: engine defaults
    assert settings(engine="vllm") is None and settings(source=clients.AIC_GAP_ANALYSIS) is None


@pytest.mark.parametrize(("measured", "budget"), [
    ("2025-12-15T00:00:00.000Z", 1152), ("2026-01-21T22:00:00Z", 1152), ("2026-01-21T23:05:00Z", 8192), (None, 8192),
])  # fmt: skip
def test_trtllm_dsr1_budget_floor_holds_from_pr_258(measured, budget):
    """DeepSeek-R1's agg scripts launched (C + ISL + 64) rounded up to 64 with no floor until PR 258 (64af5a771) set 8192;
    a disagg run's workers keep the floor (their recipes are not these scripts)."""

    def settings(mode="agg"):
        return recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 64, "deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 8,
                                       mode, measured=measured)  # fmt: skip

    assert settings().step_token_budget == budget and settings("disagg").step_token_budget == 8192


@pytest.mark.parametrize(
    "isl, osl, tp, mode, waits",
    [(1024, 1024, 2, "agg", True), (1024, 1024, 4, "agg", True), (1024, 1024, 8, "agg", False), (1024, 8192, 2, "agg", False),
     (8192, 1024, 1, "agg", False), (1024, 1024, None, "agg", False), (1024, 1024, 2, "disagg", False)],
)  # fmt: skip
def test_trtllm_llama_recipe_batch_waits_on_its_1k1k_runs_below_tp8(isl, osl, tp, mode, waits):
    """The Llama-3.1-70B TRT-LLM scripts add batch_wait_max_tokens_ratio 0.9 and
    batch_wait_timeout_iters 20 for ISL = OSL = 1024 and TP < 8 only (agg single-node runs)."""
    s = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, osl, 4, "meta-llama/Llama-3.1-70B", "b200_sxm", "fp8", tp, mode)
    assert (s.batch_wait_iters, s.batch_wait_tokens_ratio) == ((20, 0.9) if waits else (0, 0.0))
    assert "batch_wait_timeout_iters 20" in s.citation


def test_sample_llama_trtllm_rows_batch_wait_where_the_recipe_does(sample):
    rows = [m for m in sample if m.model in recipe_models_.LLAMA_70B_MODELS and m.engine == "trtllm" and m.source == clients.INFERENCEX]
    waiting = [m for m in rows if m.settings.batch_wait_iters]
    assert waiting and all((m.isl, m.osl, m.mode) == (1024, 1024, "agg") and m.agg.tp < 8 for m in waiting)
    assert all(m.settings.batch_wait_tokens_ratio == 0.9 for m in waiting)


@pytest.mark.parametrize(
    "model, attention_dp, mode, balance",
    [("deepseek-ai/DeepSeek-R1", 8, "agg", (60, 0)), ("deepseek-ai/DeepSeek-V3", 4, "agg", (60, 0)),
     ("openai/gpt-oss-120b", 2, "agg", (50, 10)), ("deepseek-ai/DeepSeek-R1", 1, "agg", (0, 0)),
     ("meta-llama/Llama-3.1-70B", 8, "agg", (0, 0)), ("deepseek-ai/DeepSeek-R1", 8, "disagg", (0, 0))],
)  # fmt: skip
def test_trtllm_recipes_balance_prefills_under_attention_dp(model, attention_dp, mode, balance):
    """The DeepSeek-R1 TRT-LLM scripts set attention_dp_config (enable_balance, timeout_iters 60,
    batching_wait_iters 0) under attention DP; the gpt-oss scripts enable the balance at TRT-LLM's
    defaults (50, 10); Llama's and the disagg recipes set none."""
    s = recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 64, model, "b200_sxm", "fp8", 8, mode, None, attention_dp)
    assert (s.adp_balance_iters, s.adp_batching_wait_iters) == balance
    assert ("attention_dp_config" in s.citation) == (balance != (0, 0))


def test_trtllm_agg_recipes_launch_an_fp8_kv_cache():
    """Every InferenceX TRT-LLM script trtllm_recipe resolves sets kv_cache_config dtype fp8 (agg
    scripts; the disagg runs used other recipes)."""
    for model in ("deepseek-ai/DeepSeek-R1", "openai/gpt-oss-120b", "meta-llama/Llama-3.1-70B"):
        agg = recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 16, model, "b200_sxm", "fp8", 8, "agg")
        disagg = recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 16, model, "b200_sxm", "fp8", None, "disagg")
        assert (agg.kv_cache_dtype, disagg.kv_cache_dtype) == ("fp8", None) and "kv_cache_config dtype fp8" in agg.citation
        assert "kv_cache_config" not in disagg.citation


def test_trtllm_gptoss_on_h200_keeps_the_checkpoints_kv_cache():
    """gpt-oss's H200 TRT-LLM scripts launch kv_cache_config dtype auto in every stored version read."""
    h200 = recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 16, "openai/gpt-oss-120b", "h200_sxm", "fp4", 1, "agg")
    assert h200.kv_cache_dtype is None and "dtype auto" in h200.citation and "dtype fp8" not in h200.citation
    llama = recipes.recipe_settings(clients.INFERENCEX, "trtllm", 1024, 1024, 16, "meta-llama/Llama-3.1-70B", "h200_sxm", "fp8", 1, "agg")
    assert llama.kv_cache_dtype == "fp8"


def test_the_launch_kv_cache_dtype_is_priced_but_not_by_the_baseline(mapped):
    """The rows launched with an fp8 KV cache price it (their inputs and checkpoint inputs); the
    SGLang and vLLM rows launched without one price the engine's auto (the checkpoint's declared KV
    quantization, else bfloat16); the TRT-LLM rows without one, and the baseline view of every row,
    leave the KV cache to the reference's checkpoint rule, as the accuracy baseline did."""
    launched = [r for r in mapped if r.inputs is not None and r.measurement.settings.kv_cache_dtype == "fp8"]
    assert launched and {r.measurement.engine for r in launched} >= {"trtllm"}
    for r in launched:
        assert all(d.quant.kvcache == "fp8" for d in r.inputs.deployments)
        assert r.checkpoint_inputs is None or all(d.quant.kvcache == "fp8" for d in r.checkpoint_inputs.deployments)
    auto = [r for r in mapped if r.inputs is not None and r.measurement.settings.kv_cache_dtype is None]
    by_engine = {e: {d.quant.kvcache for r in auto if r.measurement.engine == e for d in r.inputs.deployments} for e in ("trtllm", "sglang", "vllm")}
    assert by_engine["trtllm"] == {None} and by_engine["vllm"] == {"bfloat16"} and by_engine["sglang"] == {"bfloat16", "fp8"}
    assert all(d.quant.kvcache is None for r in mapped if r.baseline.inputs is not None for d in r.baseline.inputs.deployments)


@pytest.mark.parametrize(
    "model, system, precision, isl, osl, concurrency, tp, image, fraction",
    [("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 8192, 1024, 64, 8, None, 0.8),
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 8192, 1024, 64, 4, None, 0.75),  # 8k/1k on TP 4
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 1024, 8192, 256, 8, None, 0.7),  # 1k ISL at CONC >= 256
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 1024, 1024, 128, 8, None, 0.8),
     ("deepseek-ai/DeepSeek-V3", "b200_sxm", "fp4", 1024, 1024, 256, 4, None, 0.8),
     ("deepseek-ai/DeepSeek-R1", "h200_sxm", "fp8", 1024, 1024, 4, 8, None, 0.75),
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp8", 1024, 1024, 256, 8, "nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3", 0.8),
     ("deepseek-ai/DeepSeek-R1", "h100_sxm", "fp8", 1024, 1024, 4, 8, None, None),  # no recipe read
     ("openai/gpt-oss-120b", "b200_sxm", "fp4", 1024, 1024, 4, 1, None, 0.85),
     ("openai/gpt-oss-120b", "h200_sxm", "fp4", 1024, 1024, 4, 1, None, 0.85),
     ("openai/gpt-oss-120b", "h100_sxm", "fp8", 1024, 1024, 4, 1, None, None),
     ("meta-llama/Llama-3.1-70B", "h200_sxm", "fp8", 8192, 1024, 64, 1, None, 0.9)],  # TRT-LLM's default
)  # fmt: skip
def test_trtllm_agg_recipes_record_their_kv_cache_memory_fraction(model, system, precision, isl, osl, concurrency, tp, image, fraction):
    """The KV-cache memory fraction of the InferenceX TRT-LLM scripts read (free_gpu_memory_fraction,
    or TRT-LLM's default 0.9 where a script sets none), cited; none for recipes not read nor for
    disagg runs, whose workers other recipes launch."""
    s = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, osl, concurrency, model, system, precision, tp, "agg", image)
    assert s.kv_free_memory_fraction == fraction
    assert ("free_gpu_memory_fraction" in s.citation) == (fraction is not None)
    disagg = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, osl, concurrency, model, system, precision, None, "disagg", image)
    assert disagg.kv_free_memory_fraction is None and "free_gpu_memory_fraction" not in disagg.citation


def test_sample_rows_carry_a_kv_cache_memory_fraction_only_from_trtllm_recipes(sample):
    with_fraction = [m for m in sample if m.settings.kv_free_memory_fraction is not None]
    assert with_fraction and {(m.engine, m.mode, m.source) for m in with_fraction} == {("trtllm", "agg", clients.INFERENCEX)}
    assert {m.settings.kv_free_memory_fraction for m in with_fraction if m.model in recipe_models_.LLAMA_70B_MODELS} == {0.9}


def test_sample_vllm_rows_carry_their_launchs_gpu_memory_utilization(sample):
    """Every vLLM row runs vLLM's 0.9 but the InferenceX launches that set 0.95 (Kimi-K2.5 INT4, MiniMax-M2.5
    FP8 on H200, and on B200 before the v0.19.0 image, MiniMax-M2.5 FP4 B200 on PR 996's nightly image) and their
    gap-analysis twins, cited; no other engine's row carries one."""
    vllm = [m for m in sample if m.engine == "vllm"]
    raised = {(m.model, m.precision, m.system, m.image) for m in vllm if m.settings.gpu_memory_utilization == 0.95}
    assert {(model, precision, system) for model, precision, system, _ in raised} == {
        ("moonshotai/Kimi-K2.5", "int4", "b200_sxm"), ("moonshotai/Kimi-K2.5", "int4", "h200_sxm"),
        ("MiniMaxAI/MiniMax-M2.5", "fp8", "h200_sxm"), ("MiniMaxAI/MiniMax-M2.5", "fp8", "b200_sxm"),
        ("MiniMaxAI/MiniMax-M2.5", "fp4", "b200_sxm")}  # fmt: skip
    assert all(image is None or not image.startswith("vllm/vllm-openai:v0.19") for *_, image in raised)  # None: a gap-analysis twin
    assert {m.settings.gpu_memory_utilization for m in vllm} == {0.9, 0.95}
    assert all("--gpu-memory-utilization 0.95" in m.settings.citation for m in vllm if m.settings.gpu_memory_utilization == 0.95)
    assert all(m.settings.gpu_memory_utilization is None for m in sample if m.engine != "vllm")


@pytest.mark.parametrize(
    "precision, system, image, isl, budget",
    [("fp8", "b200_sxm", "vllm/vllm-openai:v0.19.0-cu130", 1024, 2048),
     ("fp4", "b300_sxm", "vllm/vllm-openai:v0.19.0-cu130", 8192, 16384),
     ("fp8", "b200_sxm", "vllm/vllm-openai:v0.17.0-cu130", 1024, None),  # before PR 947: the engine default
     ("fp4", "b200_sxm", "vllm/vllm-openai:nightly-5b8c30d62b754b575e043ce2fc0dcbf8a64f6306", 1024, None),  # PR 996's branch runs
     ("fp8", "h200_sxm", "vllm/vllm-openai:v0.19.0-cu130", 1024, None)],
)  # fmt: skip
def test_vllm_minimax_blackwell_recipe_sets_twice_the_isl_as_budget(precision, system, image, isl, budget):
    """InferenceX's MiniMax-M2.5 B200/B300 scripts on the v0.19.0 image launch --max-num-batched-tokens $((ISL * 2))
    --stream-interval 20; runs on other images, systems and models keep vLLM's defaults (no recipe)."""
    s = recipes.recipe_settings(clients.INFERENCEX, "vllm", isl, 1024, 64, "MiniMaxAI/MiniMax-M2.5", system, precision, 2, "agg", image)
    if budget is None:
        assert s is None
        return
    assert (s.step_token_budget, s.stream_interval, s.chunked_prefill, s.origin) == (budget, 20, True, "source")
    assert "--max-num-batched-tokens $((ISL * 2))" in s.citation and s.overlap_scheduler
    assert recipes.recipe_settings(clients.INFERENCEX, "vllm", isl, 1024, 64, "openai/gpt-oss-120b", system, precision, 2, "agg", image) is None


MTP_IMAGE = "nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3"


@pytest.mark.parametrize(
    "model, system, image, tp, attention_dp, concurrency, isl, drafts, budget",
    [("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE, 8, 1, 4, 1024, 3, 1152),  # (4*4 + 1024 + 127) // 64 * 64
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE.replace("#", "/"), 8, 8, 256, 8192, 1, 8320),  # batch 256/8: (2*32 + 8192 + 127)
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE, 8, 8, 4, 1024, 1, 1152),  # batch 4/8 clamped to 1: (2*1 + 1024 + 127)
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE, 8, 1, 256, 1024, 3, 2112),  # (4*256 + 1024 + 127): without MTP+1, 1344
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE.replace("post3", "post2"), 8, 1, 4, 1024, 0, 8192),
     ("deepseek-ai/DeepSeek-R1", "b200_sxm", MTP_IMAGE + "0", 8, 1, 4, 1024, 0, 8192),  # another tag (post30)
     ("deepseek-ai/DeepSeek-R1", "h200_sxm", MTP_IMAGE, 8, 1, 4, 1024, 0, 8192),
     ("deepseek-ai/DeepSeek-V3", "b200_sxm", MTP_IMAGE, 8, 1, 4, 1024, 0, 8192)],
)  # fmt: skip
def test_trtllm_mtp_recipe_runs_drafts_on_its_image_only(model, system, image, tp, attention_dp, concurrency, isl, drafts, budget):
    """InferenceX's DeepSeek-R1 MTP keys alone ran 1.2.0rc6.post3 on B200: their scripts draft 3
    tokens (1 under attention DP) and size max_num_tokens for (MTP+1) tokens per running request
    plus one prompt; the accepted drafts are TRT-LLM's published figures (2.82 and 1.92 tokens per
    step, less the committed one). Other images, systems and models run no drafts."""
    s = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, 1024, concurrency, model, system, "fp8", tp, "agg", image, attention_dp)
    assert (s.nextn, s.step_token_budget) == (drafts, budget)
    assert s.nextn_accepted == {0: 0.0, 1: 0.92, 3: 1.82}[drafts]
    assert ("spec-decoding: mtp" in s.citation) == (drafts > 0)
    disagg = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, 1024, concurrency, model, system, "fp8", None, "disagg", image)
    assert disagg.nextn == 0


POST2_IMAGE = MTP_IMAGE.replace("post3", "post2")


@pytest.mark.parametrize(
    "precision, image, isl, osl, concurrency, tp, ep, attention_dp, piecewise, waits",
    [("fp8", POST2_IMAGE, 1024, 1024, 64, 8, 1, 1, True, True),  # PR 594: 1k/1k from CONC 64, with DELAY_BATCHING
     ("fp8", POST2_IMAGE, 1024, 1024, 32, 8, 1, 1, False, False),
     ("fp8", POST2_IMAGE, 1024, 8192, 128, 8, 1, 1, True, False),  # 1k/8k: CONC 128 only (DEEPGEMM from 256)
     ("fp8", POST2_IMAGE, 1024, 8192, 256, 8, 1, 1, False, False),
     ("fp8", POST2_IMAGE, 8192, 1024, 64, 4, 1, 1, True, False),
     ("fp4", POST2_IMAGE, 1024, 1024, 4, 8, 8, 1, True, False),  # PR 620: 1k/1k on TP 8 EP 8 only
     ("fp4", POST2_IMAGE, 1024, 1024, 4, 8, 1, 1, False, False),
     ("fp8", MTP_IMAGE, 1024, 1024, 8, 8, 1, 1, True, False),  # PR 632: above CONC 4 at 1k/1k, not under attention DP
     ("fp8", MTP_IMAGE, 1024, 1024, 4, 8, 1, 1, False, False),
     ("fp8", MTP_IMAGE, 8192, 1024, 64, 8, 8, 8, False, False),
     ("fp4", MTP_IMAGE, 1024, 1024, 128, 8, 1, 1, True, False),  # PR 642: CONC 32, 64, and 128 without attention DP
     ("fp4", MTP_IMAGE, 1024, 1024, 128, 8, 8, 8, False, False),
     ("fp4", MTP_IMAGE, 1024, 8192, 64, 8, 1, 1, True, False),
     ("fp8", "nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2", 1024, 1024, 64, 8, 1, 1, False, False)],  # before the PRs
)  # fmt: skip
def test_trtllm_dsr1_b200_recipes_launch_piecewise_cuda_graphs(precision, image, isl, osl, concurrency, tp, ep, attention_dp, piecewise, waits):
    """TRT-LLM 1.2's DeepSeek-R1 B200 agg scripts (PRs 594, 620, 632, 642) capture the passes that prefill as piecewise
    CUDA graphs where they set PIECEWISE_CUDA_GRAPHS: no eager prefill floor (eager_layer_ms 0, cited); PR 594 also
    batch-waits its 1k/1k runs from CONC 64. Other runs keep the framework's floor; disagg workers are not these scripts'."""
    s = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, osl, concurrency, "deepseek-ai/DeepSeek-R1", "b200_sxm", precision, tp, "agg",
                                image, attention_dp, moe_ep=ep)  # fmt: skip
    assert (s.eager_layer_ms == 0.0, "piecewise CUDA graphs" in s.citation) == (piecewise, piecewise)
    assert s.eager_layer_ms is None or piecewise
    assert (s.batch_wait_iters, s.batch_wait_tokens_ratio) == ((40, 0.8) if waits else (0, 0.0))
    disagg = recipes.recipe_settings(clients.INFERENCEX, "trtllm", isl, osl, concurrency, "deepseek-ai/DeepSeek-R1", "b200_sxm", precision,
                                     None, "disagg", image, moe_ep=ep)  # fmt: skip
    assert disagg.eager_layer_ms is None


def test_the_piecewise_runs_replay_without_the_eager_floor(sample):
    """A run of PR 594's piecewise configs is replayed with no prefill floor; the same run with the framework's floor
    predicts a longer TTFT (the floor binds on its 1k-token passes that prefill, whose GPU time is below it)."""
    m = next(m for m in sample if m.engine == "trtllm" and m.mode == "agg" and m.system == "b200_sxm" and m.settings.eager_layer_ms == 0.0
             and m.settings.nextn == 0 and (m.isl, m.osl, m.concurrency) == (1024, 1024, 64))  # fmt: skip
    row = map_measurement(m)
    floored = dataclasses.replace(row, measurement=dataclasses.replace(m, settings=m.settings.replace(eager_layer_ms=None)))
    assert methods.METHODS["closed_loop"](floored).ttft_ms > methods.METHODS["closed_loop"](row).ttft_ms


def test_the_mtp_drafts_are_priced_but_not_by_the_baseline(mapped):
    """The MTP runs' deployments draft and their inputs carry the accepted drafts; the baseline view
    (the legacy method's) drafts nothing, as the accuracy baseline did."""
    drafting = [r for r in mapped if r.inputs is not None and r.measurement.settings.nextn]
    agg = [r for r in drafting if r.recipe is None and r.measurement.engine == "trtllm"]
    on_b200 = [r for r in agg if r.measurement.system == "b200_sxm"]
    assert len(on_b200) == 120 and {r.measurement.image.rpartition(":")[2] for r in on_b200} == {"1.2.0rc6.post3", "1.1.0rc2.post2"}
    assert {r.measurement.measured_date for r in agg if r.measurement.image.endswith("1.1.0rc2.post2")} == {"2026-01-14"}  # PR 392's run
    assert {r.recipe.nextn for r in drafting if r.recipe is not None} == {1, 2, 3}  # the published disagg depths with a cited acceptance
    for r in drafting:
        assert all(d.nextn == r.measurement.settings.nextn for d in r.inputs.deployments)
        assert r.inputs.nextn_accepted == r.measurement.settings.nextn_accepted > 0
        assert r.baseline.inputs is None or (all(d.nextn == 0 for d in r.baseline.inputs.deployments) and r.baseline.inputs.nextn_accepted == 0.0)
    assert all(d.nextn == 0 for r in mapped if r.inputs is not None and r not in drafting for d in r.inputs.deployments)


def test_sample_trtllm_attention_dp_rows_carry_the_balance(mapped):
    """Exactly the rows priced under attention DP (as recorded, named by their id, or as their script chose it) carry it."""
    rows = [r for r in mapped if r.measurement.engine == "trtllm" and r.measurement.mode == "agg" and r.inputs is not None
            and r.measurement.source == clients.INFERENCEX and r.measurement.model in recipe_models_.DSR1_MODELS | recipe_models_.GPTOSS_MODELS]  # fmt: skip
    balanced = {r.measurement.id for r in rows if r.measurement.settings.adp_balance_iters}
    assert balanced and {r.measurement.settings.adp_balance_iters for r in rows if r.measurement.id in balanced} == {50, 60}
    assert balanced == {r.measurement.id for r in rows if r.inputs.deployment.attention_dp > 1}


@pytest.mark.parametrize(
    "engine, gib, budget, chunked, max_seqs",
    [
        ("vllm", 141, 8192, True, 1024),
        ("vllm", 48, 2048, True, 256),
        ("sglang", 80, 8192, True, None),
        ("sglang", 180, 16384, True, None),
        ("trtllm", 141, 8192, False, 2048),
    ],
    ids=["vllm-h200", "vllm-small-gpu", "sglang-h100", "sglang-b200", "trtllm"],
)
def test_engine_documented_defaults(engine, gib, budget, chunked, max_seqs):
    s = engine_defaults(engine, "", gib * GIB)
    assert (s.step_token_budget, s.chunked_prefill, s.max_num_seqs) == (budget, chunked, max_seqs)


# ---- the project's own CSV format -------------------------------------------------------------


def test_every_csv_column_is_documented():
    assert set(COLUMN_DOCS) == set(CSV_COLUMNS)


def test_flatten_round_trip(sample):
    for m in sample[:20] + [m for m in sample if m.mode == "disagg"][:20]:
        assert unflatten(flatten(m), system_defaults) == m


def test_csv_round_trip(sample, tmp_path):
    chosen = sample[:30] + [m for m in sample if m.mode == "disagg"][:30] + [m for m in sample if m.source != clients.INFERENCEX][:30]
    path = tmp_path / "runs.csv"
    write_measurements(chosen, path)
    assert load_measurements(path) == chosen


def test_csv_written_before_an_added_column_still_loads(sample, tmp_path):
    """A file without the columns added to the format (ADDED_COLUMNS) reads them as empty; another
    missing column is still rejected."""
    path = tmp_path / "runs.csv"
    write_measurements(sample[:3], path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.drop(columns=sorted(ADDED_COLUMNS)).to_csv(path, index=False)
    defaults = [system_defaults(m.engine, m.system) for m in sample[:3]]
    added = {SETTINGS_FIELDS_BY_COLUMN[c] for c in ADDED_COLUMNS if c in SETTINGS_FIELDS_BY_COLUMN}  # the others are empty in the sample
    assert load_measurements(path) == [
        dataclasses.replace(
            m, settings=m.settings.replace(**{f: getattr(d, f) for f in added}), protocol=dataclasses.replace(m.protocol, num_warmups=None, client_seed=None)
        )
        for m, d in zip(sample[:3], defaults)
    ]
    frame.drop(columns=["recv_interval", "ttft_ms"]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="ttft_ms"):
        load_measurements(path)


def test_csv_with_an_unknown_column_is_rejected(sample, tmp_path):
    path = tmp_path / "runs.csv"
    write_measurements(sample[:1], path)
    path.write_text(path.read_text().replace("ttft_ms", "ttft_p50_ms", 1))
    with pytest.raises(ValueError, match="ttft_p50_ms"):
        load_measurements(path)


# ---- mapping ----------------------------------------------------------------------------------


@pytest.mark.parametrize("alias", MODEL_ALIASES, ids=lambda a: f"{a.measured}->{a.bundled}")
def test_alias_targets_share_the_architecture(alias):
    assert bundled_architecture(alias.bundled) == alias.architecture
    assert bundled_architecture(alias.measured) is None  # only ids without a bundled config are aliased


@pytest.mark.parametrize("gemm, bundled", [("nvfp4", "nvidia/GLM-5-NVFP4"), ("fp8", "zai-org/GLM-5-FP8")], ids=["fp4", "fp8"])
def test_glm5_alias_follows_the_checkpoint_precision(sample, gemm, bundled):
    m = dataclasses.replace(next(m for m in sample if m.model == "zhipuai/GLM-5"), gemm_quant=gemm)
    assert resolve_model(m)[0] == bundled


def test_bundled_models_are_not_aliased(sample):
    m = next(m for m in sample if m.model == "Qwen/Qwen3-32B")
    assert resolve_model(m) == ("Qwen/Qwen3-32B", "")


@pytest.mark.parametrize(
    "version, expected",
    [("0.5.9", "0.5.14"), ("0.5.14", "0.5.14"), ("0.5.15", "0.5.14"), ("0.6.0", "0.5.16"), (None, "0.5.14"), ("nightly-dev", "0.5.14")],
    ids=["older", "exact", "between-slots", "newer-than-all", "not-recorded", "not-a-release"],
)
def test_nearest_data_version(version, expected):
    assert nearest_data_version("h200_sxm", "sglang", version)[0] == expected


def test_every_sample_row_lands_on_the_current_slot(mapped):
    for row in mapped:
        m = row.measurement
        assert row.data_version == version_slots(m.system, m.engine).current, m.id


def test_every_row_has_inputs_or_a_reason(mapped):
    for row in mapped:
        assert (row.inputs is None) == (row.reason is not None)


def test_a_row_longer_than_its_models_context_is_unestimated_naming_both(sample):
    """Every command refuses sequences past max_position_embeddings without --allow-long-context; a
    measured row past it is left unestimated with that reason instead of priced."""
    m = next(m for m in sample if m.model == "Qwen/Qwen3-32B" and m.mode == "agg")
    context = 40960  # Qwen3-32B's max_position_embeddings
    row = map_measurement(dataclasses.replace(m, isl=context - m.osl + 1))
    assert row.inputs is None and row.reason == f"isl + osl {context + 1} exceeds the model's context of {context} tokens (max_position_embeddings)"
    assert map_measurement(dataclasses.replace(m, isl=context - m.osl)).reason is None


def test_unestimable_reasons_of_the_sample(mapped):
    """Outside the disaggregated runs only the recorded columns and a client's concurrency cap fail; a disaggregated
    run without workers is unestimated only with its topology's reason (none resolved, several candidates, an
    undecided speculative mode or an unpublished acceptance rate)."""
    disaggregated = recipes.multinode_disagg_reason(clients.INFERENCEX, "deepseek-ai/DeepSeek-R1", "gb200", "agg")
    reasons = collections.Counter(
        row.reason.split(":")[0] for row in mapped
        if row.reason and row.recipe is None and not row.reason.startswith((DISAGG_INCOMPLETE, disaggregated))
    )  # fmt: skip
    assert reasons == {"tp*dp != moe_tp*moe_ep in the row": 19, "zero or missing parallel sizes": 2,
                       "concurrency 512 is the client's cap, not the server's": 9}  # fmt: skip
    incomplete = [r.reason for r in mapped if r.reason and r.reason.startswith((DISAGG_INCOMPLETE, disaggregated))]
    assert incomplete and all(reason.split("; ")[-1] for reason in incomplete)
    unpriced = {r.reason.split(" (")[0].split(":")[0] for r in mapped if r.reason and r.recipe is not None}
    assert unpriced <= {"the config"}


def test_dense_models_are_priced_natively_and_moe_models_by_the_reference(mapped):
    pricers = {(row.model_used, row.inputs.pricer) for row in mapped if row.inputs}
    assert ("Qwen/Qwen3-32B", "native") in pricers and ("deepseek-ai/DeepSeek-R1", "reference") in pricers
    agg = [row.inputs for row in mapped if isinstance(row.inputs, AggInputs)]
    assert all(i.deployment.moe_ep is None for i in agg if i.pricer == "native")
    assert all(i.deployment.moe_ep is not None for i in agg if i.pricer == "reference")


def test_agg_inputs_keep_the_row_shape(mapped):
    row = next(r for r in mapped if isinstance(r.inputs, AggInputs))
    m = row.measurement
    assert (row.inputs.isl, row.inputs.osl, row.inputs.batch_size) == (m.isl, m.osl, m.agg.batch_size)


def test_disagg_inputs_keep_both_worker_layouts(mapped):
    row = next(r for r in mapped if isinstance(r.inputs, DisaggInputs))
    p, d = row.measurement.prefill, row.measurement.decode
    i = row.inputs
    assert (i.prefill_batch_size, i.prefill_workers, i.decode_batch_size, i.decode_workers) == (p.batch_size, p.workers, d.batch_size, d.workers)
    assert (i.prefill.tp, i.decode.tp) == (p.tp, d.tp)


def test_zero_attention_dp_means_no_attention_dp(mapped):
    row = next(r for r in mapped if r.measurement.agg and r.measurement.agg.attention_dp == 0)
    assert row.inputs.deployment.attention_dp == 1


# ---- layouts named by the row id --------------------------------------------------------------


def _agg_row(sample, row_id: str, concurrency: int, system: str = "b200_sxm", **layout):
    """A sample DeepSeek-R1 agg row on `system` renamed `row_id`, with the given concurrency and layout columns, its date
    dropped (no script's MoE layout window applies: recipes.launched_moe_layout)."""
    m = next(m for m in sample if m.mode == "agg" and m.model == "deepseek-ai/DeepSeek-R1" and m.system == system)
    return dataclasses.replace(m, id=row_id, concurrency=concurrency, measured_date=None, agg=dataclasses.replace(m.agg, pp=1, **layout))


@pytest.mark.parametrize(
    "row_id, columns, expected",
    [
        ("x_c16_tp8_ep8_1", dict(tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16), (8, 1, 1, 8, 16)),
        ("x_c128_tp8_0_ep8_0_2", dict(tp=1, attention_dp=64, moe_tp=8, moe_ep=8, batch_size=2), (1, 8, 1, 8, 16)),
        ("x_c4_tp4_ep4_3", dict(tp=4, attention_dp=4, moe_tp=1, moe_ep=16, batch_size=1), (4, 1, 1, 4, 4)),
        ("x_c16_tp4_ep1_4", dict(tp=16, attention_dp=1, moe_tp=16, moe_ep=1, batch_size=16), (4, 1, 4, 1, 16)),
        ("x_c16_cfg5", dict(tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16), (8, 1, 1, 8, 16)),
        ("x_c128_cfg6", dict(tp=1, attention_dp=16, moe_tp=4, moe_ep=4, batch_size=8), (1, 4, 1, 4, 32)),
        ("x_c32_tp8_ep8_7", dict(tp=1, attention_dp=64, moe_tp=8, moe_ep=8, batch_size=32), (1, 8, 1, 8, 4)),
    ],
    ids=["tp-times-ep", "attention-dp", "dp-times-ep", "no-ep", "node-bound", "node-bound-attention-dp", "batch-not-per-rank"],
)
def test_a_layout_contradicting_the_row_id_is_taken_from_the_id(sample, row_id, columns, expected):
    m = _agg_row(sample, row_id, int(row_id.split("_c")[1].split("_")[0]), "b200_sxm", **columns)
    layout, note = labelled_layout(m)
    assert (layout.tp, layout.attention_dp, layout.moe_tp, layout.moe_ep, layout.batch_size) == expected
    assert f"the columns say tp {columns['tp']}" in note
    row = map_measurement(m)
    assert (row.inputs.deployment.tp, row.inputs.deployment.attention_dp, row.inputs.batch_size) == (expected[0], expected[1], expected[4])
    assert row.recorded.inputs.deployment.tp == columns["tp"] and row.recorded.layout_note == ""


@pytest.mark.parametrize(
    "row_id, system, columns",
    [("x_c16_tp8_ep8_1", "b200_sxm", dict(tp=8, attention_dp=1, moe_tp=1, moe_ep=8, batch_size=16)),
     ("x_c16_tp8_ep8_1", "b200_sxm", dict(tp=1, attention_dp=8, moe_tp=1, moe_ep=8, batch_size=2)),
     ("x_c16_cfg12", "b200_sxm", dict(tp=8, attention_dp=1, moe_tp=1, moe_ep=8, batch_size=16)),
     ("x_c16_cfg12", "b200_sxm", dict(tp=16, attention_dp=2, moe_tp=1, moe_ep=32, batch_size=8)),
     ("x_c16_cfg12", "gb200", dict(tp=16, attention_dp=1, moe_tp=1, moe_ep=16, batch_size=16))],
    ids=["consistent", "consistent-dp", "within-the-node", "not-a-square", "rack-system"],
)  # fmt: skip
def test_a_layout_agreeing_with_its_run_or_unnamed_is_kept(sample, row_id, system, columns):
    m = _agg_row(sample, row_id, 16, system, **columns)
    assert labelled_layout(m) is None
    row = map_measurement(m)
    assert row.recorded is None and row.layout_note == "" and row.inputs.deployment.tp == columns["tp"]


@pytest.mark.parametrize(
    "row_id, columns",
    [("x_c16_tp8_ep3_1", dict(tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16)),
     ("x_c16_tp0_ep8_1", dict(tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16)),
     ("x_c16_tp8_ep0_1", dict(tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16)),
     ("x_c12_tp8_ep8_1", dict(tp=1, attention_dp=12, moe_tp=1, moe_ep=12, batch_size=1))],
    ids=["ep-not-dividing", "zero-gpus", "zero-ep", "requests-not-spreading-evenly"],
)  # fmt: skip
def test_an_id_layout_that_cannot_be_the_run_is_not_applied(sample, row_id, columns):
    """An id naming an impossible run is not read (and the node bound is not tried instead)."""
    m = _agg_row(sample, row_id, int(row_id.split("_c")[1].split("_")[0]), "b200_sxm", **columns)
    assert labelled_layout(m) is None and map_measurement(m).recorded is None


def test_a_pipelined_layout_is_kept(sample):
    m = _agg_row(sample, "x_c16_tp8_ep8_1", 16, "b200_sxm", tp=64, attention_dp=1, moe_tp=8, moe_ep=8, batch_size=16)
    assert labelled_layout(dataclasses.replace(m, agg=dataclasses.replace(m.agg, pp=2))) is None


def test_a_dense_run_keeps_its_moe_cells(sample):
    m = _agg_row(sample, "x_c16_tp2_epnone_1", 16, "b200_sxm", tp=4, attention_dp=1, moe_tp=None, moe_ep=None, batch_size=16)
    layout, note = labelled_layout(m)
    assert (layout.tp, layout.moe_tp, layout.moe_ep) == (2, None, None) and "MoE" not in note


def test_id_layouts_agree_with_the_repeated_measurements_of_the_sample(mapped):
    """Rows the mapping relabels (from the id or the node bound) and whose measurement a consistently
    labelled row repeats exactly (same system, engine, model, lengths, TTFT and TPOT) get that row's
    layout, every one of them."""

    def key(row):
        m = row.measurement
        return (m.system, m.engine, m.model, m.isl, m.osl, m.ttft_ms, m.tpot_ms)

    def sizes(row):
        d = row.inputs.deployment
        return (d.tp, d.attention_dp, d.moe_tp, d.moe_ep, row.inputs.batch_size)

    consistent = collections.defaultdict(set)
    for row in mapped:
        if row.inputs and row.recorded is None and row.measurement.mode == "agg" and "_tp" in row.measurement.id:
            consistent[key(row)].add(sizes(row))
    relabelled = [row for row in mapped if labelled_layout(row.measurement) is not None and row.recipe is None]
    confirmed = [row for row in relabelled if key(row) in consistent]
    assert (len(relabelled), len(confirmed)) == (426, 69)
    for row in confirmed:
        assert sizes(row) in consistent[key(row)], row.measurement.id
    by_id = {key(row): sizes(row) for row in relabelled if "layout from the row id" in row.layout_note}
    by_config = [row for row in relabelled if "InferenceX config" in row.layout_note]
    twins = [row for row in by_config if key(row) in by_id]
    assert (len(by_config), len(twins)) == (41, 7)  # the config's run agrees with its csv twin's id (tp2_ep2)
    assert all(sizes(row) == by_id[key(row)] for row in twins)
    assert {sizes(row)[:4] for row in by_config} == {(2, 1, 1, 2), (1, 2, 1, 2)}  # 2 GPUs, MoE EP 2; DP attention under dp-attn


def test_inferencex_deepseek_rack_scale_agg_rows_are_multinode_disaggregated_runs(mapped):
    """InferenceX deploys DeepSeek-R1 on GB200/GB300 only multi-node and disaggregated; its rows
    labelled agg carry the run's GPU count as tp (12 to 72, most no TP of a 128-head model): the
    other methods leave them unestimated with that reason, legacy prices them as the baseline did."""
    rows = [r for r in mapped if (r.recorded or r).measurement.source == clients.INFERENCEX and (r.recorded or r).measurement.mode == "agg"
            and r.measurement.system in ("gb200", "gb300") and r.measurement.model == "deepseek-ai/DeepSeek-R1"]  # fmt: skip
    published = [r for r in rows if r.recipe is not None and r.inputs is not None]
    assert len(rows) == 55 and len(published) >= 20 and all(r.measurement.mode == "disagg" and r.layout_note.startswith("labelled agg") for r in published)
    assert all(r.inputs is None and "multi-node disaggregated" in r.reason for r in rows if r.recipe is None)
    assert all(r.baseline.inputs is not None and r.baseline.reason is None for r in rows)  # legacy prices the columns, as the baseline
    assert {(r.recorded or r).measurement.agg.tp for r in rows} >= {12, 20, 24, 28, 32, 36, 48, 64, 72}
    other = next(r for r in mapped if r.measurement.source == clients.INFERENCEX and r.measurement.mode == "agg"
                 and r.measurement.system == "b200_sxm" and r.measurement.model == "deepseek-ai/DeepSeek-R1")  # fmt: skip
    assert other.inputs is not None and recipes.multinode_disagg_reason("project", "deepseek-ai/DeepSeek-R1", "gb200", "agg") is None
    assert recipes.multinode_disagg_reason(clients.INFERENCEX, "deepseek-ai/DeepSeek-R1", "gb300", "agg") is not None
    assert recipes.multinode_disagg_reason(clients.INFERENCEX, "deepseek-ai/DeepSeek-R1", "gb200", "disagg") is None


@pytest.mark.parametrize(("engine", "model", "precision", "system", "recorded", "launched", "rows"), [
    ("sglang", "deepseek-ai/DeepSeek-R1", "fp4", "b200_sxm", "MoE TP", "EP", 36),  # --enable-ep-moe, then --ep-size $EP_SIZE
    ("vllm", "MiniMaxAI/MiniMax-M2.5", "fp8", "b200_sxm", "MoE TP", "EP", 40),  # [ "$EP_SIZE" -ge 1 ] with EP_SIZE >= 1
    ("vllm", "MiniMaxAI/MiniMax-M2.5", "fp8", "h200_sxm", "MoE TP", "EP", 54),
    ("vllm", "moonshotai/Kimi-K2.5", "fp4", "b200_sxm", "EP", "MoE TP", 45),  # the script passes no EP flag
])  # fmt: skip
def test_inferencex_rows_are_priced_at_the_moe_layout_their_script_launched(mapped, engine, model, precision, system, recorded, launched,
                                                                            rows):  # fmt: skip
    """An InferenceX agg run whose script launched the MoE otherwise than its columns record is priced at the launched
    layout (expert parallel: MoE TP 1, EP tp; tensor parallel: MoE TP tp, EP 1, no attention DP); legacy keeps the
    columns; a date outside the script's window, another precision or system, or columns that agree are left alone."""
    moved = [r for r in mapped if "the layout the launch ran" in r.layout_note and (r.measurement.engine, r.measurement.model,
             r.measurement.precision, r.measurement.system) == (engine, model, precision, system)]  # fmt: skip
    assert len(moved) == rows
    for r in moved:
        tp, priced = r.inputs.deployment.tp, r.inputs.deployment
        expected = (1, 1, tp) if launched == "EP" else (1, tp, 1)
        assert (priced.attention_dp, priced.moe_tp, priced.moe_ep) == expected
        assert (r.baseline.inputs.deployment.moe_tp, r.baseline.inputs.deployment.moe_ep) != (priced.moe_tp, priced.moe_ep)
    m = moved[0].measurement

    def layout(tp, dp, moe_tp, moe_ep):
        return Layout(batch_size=16, workers=1, tp=tp, pp=1, attention_dp=dp, moe_tp=moe_tp, moe_ep=moe_ep)

    columns, agreeing = (layout(4, 1, 4, 1), layout(4, 1, 1, 4)) if launched == "EP" else (layout(4, 1, 1, 4), layout(4, 1, 4, 1))
    call = (clients.INFERENCEX, engine, model, precision, system, "agg", m.measured_date, columns, 1024, 1024, 16)
    run, _ = recipes.launched_moe_layout(*call)
    assert (run.tp, run.attention_dp, run.moe_tp, run.moe_ep) == (agreeing.tp, 1, agreeing.moe_tp, agreeing.moe_ep)
    for position, other in ((3, "bf16"), (6, "2025-09-01"), (4, "gb200"), (5, "disagg"), (0, "project"), (7, agreeing)):
        changed = list(call)
        changed[position] = other
        assert recipes.launched_moe_layout(*changed) is None, other


@pytest.mark.parametrize(("precision", "system", "tp", "isl", "osl", "concurrency", "measured", "launched"), [
    ("fp4", "b200_sxm", 8, 1024, 1024, 256, "2025-11-02", (1, 8, 1, 8, 32)),  # EP above C 8, attention DP from C 256
    ("fp4", "b200_sxm", 8, 1024, 1024, 16, "2025-11-02", (8, 1, 1, 8, 16)),
    ("fp4", "b200_sxm", 8, 1024, 1024, 8, "2025-11-02", None),  # MoE TP: the columns agree
    ("fp4", "b200_sxm", 4, 8192, 1024, 64, "2025-11-02", (1, 4, 1, 4, 16)),
    ("fp8", "h200_sxm", 8, 8192, 1024, 64, "2025-11-02", (1, 8, 1, 8, 8)),  # attention DP above C 32 at 8k/1k
    ("fp8", "h200_sxm", 8, 1024, 1024, 64, "2025-11-02", (8, 1, 1, 8, 64)),  # EP only up to C 64
    ("fp8", "b200_sxm", 8, 1024, 1024, 64, "2025-11-02", (1, 8, 1, 8, 8)),  # attention DP above C 32 at 1k/1k on B200
    ("fp8", "h200_sxm", 8, 1024, 1024, 64, "2025-11-03", None),  # PR 145: the config's EP and DP, recorded
])  # fmt: skip
def test_trtllm_dsr1_runs_of_2025_11_02_are_priced_at_the_layout_their_script_chose(precision, system, tp, isl, osl, concurrency, measured,
                                                                                   launched):  # fmt: skip
    """Before PR 145 the DeepSeek-R1 TRT-LLM scripts chose EP and attention DP themselves and the results recorded
    neither (columns: MoE TP over the GPUs, no attention DP); the run is priced at what the script chose."""
    columns = Layout(batch_size=concurrency, workers=1, tp=tp, pp=1, attention_dp=1, moe_tp=tp, moe_ep=1)
    got = recipes.launched_moe_layout(clients.INFERENCEX, "trtllm", "deepseek-ai/DeepSeek-R1", precision, system, "agg", measured, columns,
                                      isl, osl, concurrency)  # fmt: skip
    assert (None if got is None else (got[0].tp, got[0].attention_dp, got[0].moe_tp, got[0].moe_ep, got[0].batch_size)) == launched


def test_inferencex_gpt_oss_h100_runs_recording_the_client_cap_are_unestimated_naming_the_config_s_concurrencies(mapped):
    """InferenceX's gpt-oss H100 vLLM docker script of 2025-11-21 to 2025-12-08 ran the client at --max-concurrency 512
    against a server launched at the config's concurrency (4 to 64): every C512 row of that window records the cap, so
    the other methods leave it unestimated naming the candidates, legacy prices it as recorded; a later run, another
    concurrency or another model is unaffected."""
    capped = [r for r in mapped if r.reason and "client's cap" in r.reason]
    assert len(capped) == 9 and {r.measurement.concurrency for r in capped} == {512}
    assert all(r.baseline.inputs is not None and r.inputs is None for r in capped)
    tp8_8k = next(r for r in capped if r.measurement.agg.tp == 8 and r.measurement.isl == 8192)
    assert "(4, 8, 16)" in tp8_8k.reason
    assert all("(4, 8, 16, 32, 64)" in r.reason for r in capped if r is not tp8_8k)
    m = tp8_8k.measurement
    call = (clients.INFERENCEX, "vllm", m.model, m.system, m.measured_date, 512, m.agg.tp, m.isl, m.osl)
    assert recipes.client_cap_reason(*call) is not None
    for position, other in ((4, "2025-12-09"), (5, 64), (2, "MiniMaxAI/MiniMax-M2.5"), (0, "project"), (1, "sglang")):
        changed = list(call)
        changed[position] = other
        assert recipes.client_cap_reason(*changed) is None, other


# ---- the arithmetic that ran (measurements.checkpoints) -------------------------------------------


def _first(sample, **fields):
    return next(m for m in sample if all(getattr(m, k) == v for k, v in fields.items()))


@pytest.mark.parametrize(
    ("system", "engine", "moe"),
    [
        ("b200_sxm", "trtllm", "w4a8_mxfp4_mxfp8"),  # TRT-LLM's Blackwell MoE backends: MXFP8 activations
        ("b200_sxm", "vllm", "w4a8_mxfp4_mxfp8"),  # the InferenceX recipe sets VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1
        ("h200_sxm", "trtllm", "w4a16_mxfp4"),  # Hopper: BF16 activations, the checkpoint's default reading
        ("h100_sxm", "vllm", "w4a16_mxfp4"),
    ],
)
def test_gpt_oss_rows_labelled_nvfp4_run_the_checkpoints_mxfp4_experts(sample, system, engine, moe):
    """gpt-oss-120b rows are labelled nvfp4/nvfp4; the checkpoint keeps attention in BF16 and stores
    MXFP4 experts, run with the activations the engine uses on that GPU."""
    m = _first(sample, model="openai/gpt-oss-120b", system=system, engine=engine, mode="agg")
    assert (m.gemm_quant, m.moe_quant) == ("nvfp4", "nvfp4")
    modes = checkpoints.checkpoint_modes(m, m.model, moe=True)
    assert (modes.gemm, modes.moe) == ("bfloat16", moe) and "config.json" in modes.note
    assert ("MXFP8 activations" in modes.note) == (moe == "w4a8_mxfp4_mxfp8")


@pytest.mark.parametrize(
    ("engine", "system", "source", "moe"),
    [
        ("trtllm", "b300_sxm", "inferencex", "w4a8_mxfp4_mxfp8"),  # sm103: named by TRT-LLM's guide
        ("trtllm", "gb300", "inferencex", "w4a8_mxfp4_mxfp8"),
        ("trtllm", "rtx_pro_6000_server", "inferencex", "w4a16_mxfp4"),  # a Blackwell the guide does not name
        ("vllm", "b200_sxm", "other", "w4a16_mxfp4"),  # MXFP8 under vLLM is the InferenceX recipe's, not vLLM's default
        ("vllm", "b300_sxm", "inferencex", "w4a16_mxfp4"),  # the cited recipe is B200's
    ],
)
def test_mxfp8_activations_follow_the_cited_setups_only(sample, engine, system, source, moe):
    m = _first(sample, model="openai/gpt-oss-120b", system="b200_sxm", engine=engine, mode="agg")
    assert checkpoints.checkpoint_modes(dataclasses.replace(m, system=system, source=source), m.model, moe=True).moe == moe


@pytest.mark.parametrize(
    ("model", "engine", "system", "label"),
    [
        ("MiniMaxAI/MiniMax-M2.5", "vllm", "h100_sxm", "fp8"),  # per-tensor label, 128x128-block checkpoint: same 8-bit math
        ("deepseek-ai/DeepSeek-R1", "sglang", "b200_sxm", "fp8_block"),  # fp8 GEMMs: SGLang's tables are not read as timing granularities alike
        ("deepseek-ai/DeepSeek-R1", "trtllm", "b200_sxm", "nvfp4"),  # a 4-bit label: another checkpoint ran
        ("openai/gpt-oss-120b", "trtllm", "h100_sxm", "fp8"),  # an 8-bit label on a 4-bit-expert checkpoint
    ],
)
def test_labels_naming_the_same_arithmetic_or_another_checkpoint_are_kept(sample, model, engine, system, label):
    m = _first(sample, model=model, engine=engine, system=system, moe_quant=label)
    assert checkpoints.checkpoint_modes(m, m.model, moe=True) is None


def test_a_missing_label_stands_for_the_checkpoints_own_mode(sample):
    """No label means the pricer infers the checkpoint's mode: the rule fires only where the run's
    arithmetic differs from that (MXFP8 activations on Blackwell)."""
    hopper = _first(sample, model="openai/gpt-oss-120b", system="h200_sxm", engine="trtllm", mode="agg")
    assert checkpoints.checkpoint_modes(dataclasses.replace(hopper, gemm_quant=None, moe_quant="w4a16_mxfp4"), hopper.model, moe=True) is None
    assert checkpoints.checkpoint_modes(dataclasses.replace(hopper, gemm_quant=None, moe_quant=None), hopper.model, moe=True) is None
    blackwell = _first(sample, model="openai/gpt-oss-120b", system="b200_sxm", engine="trtllm", mode="agg")
    modes = checkpoints.checkpoint_modes(dataclasses.replace(blackwell, gemm_quant=None, moe_quant=None), blackwell.model, moe=True)
    assert (modes.gemm, modes.moe) == ("bfloat16", "w4a8_mxfp4_mxfp8")


def test_weight_and_activation_bits_agree_with_the_references_quant_modes():
    """Weight bits from the reference's storage bytes, activation bits from its MMA compute dtype."""
    from aiconfigurator_core.sdk.common import GEMMQuantMode, MoEQuantMode

    from estimator.models.quant import GEMM_WEIGHT_BYTES, MOE_MODES

    compute_bits = {"bfloat16": 16, "fp8": 8, "int8": 8, "fp4": 4}
    reference = {mode.name: (int(mode.value.memory * 8), compute_bits[mode.value.compute_dtype]) for mode in (*GEMMQuantMode, *MoEQuantMode)}
    assert set(GEMM_WEIGHT_BYTES) | MOE_MODES == set(checkpoints.WEIGHT_AND_ACTIVATION_BITS)
    assert {mode: reference[mode] for mode in checkpoints.WEIGHT_AND_ACTIVATION_BITS} == dict(checkpoints.WEIGHT_AND_ACTIVATION_BITS)


def _fallbacks(m, model_used: str, moe: bool):
    """checkpoints.granularity_fallbacks after the modes the row prices first, as the mapping calls it."""
    return checkpoints.granularity_fallbacks(m, model_used, moe, checkpoints.checkpoint_modes(m, model_used, moe))


def _with_checkpoint_modes(monkeypatch, modes: dict) -> None:
    """Read every checkpoint as quantized with these modes."""
    monkeypatch.setattr(checkpoints, "checkpoint_quant_modes", lambda quant: modes)


def test_an_expert_only_checkpoint_keeps_bf16_gemms(sample, monkeypatch):
    """A checkpoint that quantizes only its experts implies BF16 GEMMs (no KeyError aborting the mapping)."""
    _with_checkpoint_modes(monkeypatch, {"moe": "w4a16_mxfp4"})
    m = _first(sample, model="openai/gpt-oss-120b", system="h200_sxm", engine="vllm", mode="agg")
    modes = checkpoints.checkpoint_modes(m, m.model, moe=True)
    assert (modes.gemm, modes.moe) == ("bfloat16", "w4a16_mxfp4")
    assert map_measurement(m).checkpoint_inputs.deployment.quant.gemm == "bfloat16"


def test_a_dense_model_is_judged_by_its_gemm_label(sample, monkeypatch):
    """For a dense model the MoE label means nothing: only the GEMM label is compared."""
    _with_checkpoint_modes(monkeypatch, {"gemm": "w4a16_nvfp4", "moe": "nvfp4"})
    m = _first(sample, model="Qwen/Qwen3-32B", engine="trtllm", system="gb200", gemm_quant="nvfp4")
    modes = checkpoints.checkpoint_modes(dataclasses.replace(m, moe_quant=None), m.model, moe=False)
    assert (modes.gemm, modes.moe) == ("w4a16_nvfp4", None)
    assert checkpoints.checkpoint_modes(dataclasses.replace(m, moe_quant="bfloat16"), m.model, moe=False).moe == "bfloat16"
    assert checkpoints.checkpoint_modes(dataclasses.replace(m, gemm_quant="fp8"), m.model, moe=False) is None


def test_an_unreadable_checkpoint_quantization_keeps_the_labels(sample, monkeypatch):
    """A checkpoint whose quantization the estimator cannot read leaves the row on its labels, and
    the mapping of the batch goes on."""
    from estimator.errors import UnsupportedModelError

    def unreadable(model):
        raise UnsupportedModelError(f"unsupported quantization algorithm for {model}")

    monkeypatch.setattr(checkpoints, "checkpoint_quant", unreadable)
    m = _first(sample, model="openai/gpt-oss-120b", system="b200_sxm", engine="trtllm", mode="agg")
    assert checkpoints.checkpoint_modes(m, m.model, moe=True) is None
    assert map_measurement(m).checkpoint_inputs is None


def test_an_aliased_model_keeps_its_labels(sample):
    m = _first(sample, model="zhipuai/GLM-5", gemm_quant="fp8")
    model_used, _ = resolve_model(m)
    assert model_used != m.model and checkpoints.checkpoint_modes(m, model_used, moe=True) is None
    gpt_oss = _first(sample, model="openai/gpt-oss-120b", system="b200_sxm", engine="trtllm", mode="agg")
    assert checkpoints.checkpoint_modes(dataclasses.replace(gpt_oss, model="vendor/gpt-oss-120b-copy"), gpt_oss.model, moe=True) is None


@pytest.mark.parametrize(("engine", "system", "gemm"), [
    ("trtllm", "b200_sxm", "fp8_static"),  # TRT-LLM's fp8 table quantizes activations dynamically
    ("trtllm", "h200_sxm", "fp8_static"),
    ("vllm", "b200_sxm", None),  # vLLM's fp8 table is measured with static scales: the label names the cost
])  # fmt: skip
def test_the_llama_fp8_runs_are_priced_at_their_checkpoints_static_activation_scales(sample, engine, system, gemm):
    """InferenceX's 70b-fp8 keys ran nvidia/Llama-3.3-70B-Instruct-FP8 (ModelOpt, static activation
    scales), read through the bundled nvidia/Llama-3.1-70B-Instruct-FP8; the sample's fp8 label is
    priced from the engine's fp8 table."""
    m = _first(sample, model="meta-llama/Llama-3.1-70B", engine=engine, system=system, gemm_quant="fp8")
    model_used, _ = resolve_model(m)
    modes = checkpoints.checkpoint_modes(m, model_used, moe=False)
    if gemm is None:
        assert modes is None and _fallbacks(m, model_used, moe=False) == ()
        return
    assert modes.gemm == gemm and "nvidia/Llama-3.3-70B-Instruct-FP8" in modes.note and "dynamically" in modes.note
    assert "read as nvidia/Llama-3.1-70B-Instruct-FP8" in modes.note
    row = map_measurement(m)
    assert row.checkpoint_inputs.deployment.quant.gemm == gemm and row.baseline.checkpoint_inputs is None
    assert checkpoints.checkpoint_modes(dataclasses.replace(m, source="other"), model_used, moe=False) is None  # no config names the run
    assert checkpoints.checkpoint_modes(dataclasses.replace(m, gemm_quant="nvfp4"), model_used, moe=False) is None  # another checkpoint


@pytest.mark.parametrize(("engine", "system", "priced"), [
    ("trtllm", "b200_sxm", ("fp8_block", "fp8_block")),  # TensorRT-LLM times block and per-tensor kernels alike
    ("trtllm", "h200_sxm", ("fp8_block", "fp8_block")),
    ("sglang", "b200_sxm", None),  # the labels stay first; the blocks are fallbacks
])  # fmt: skip
def test_deepseek_fp8_labels_are_priced_at_the_checkpoints_blocks_where_the_tables_time_them_alike(sample, engine, system, priced):
    """DeepSeek-R1's checkpoint scales FP8 in 128x128 blocks; the sample labels it per-tensor fp8."""
    m = _first(sample, model="deepseek-ai/DeepSeek-R1", engine=engine, system=system, gemm_quant="fp8", mode="agg")
    modes = checkpoints.checkpoint_modes(m, m.model, moe=True)
    fallbacks = _fallbacks(m, m.model, moe=True)
    if priced is None:
        assert modes is None and ("fp8_block", "fp8_block") in {(f.gemm, f.moe) for f in fallbacks}
        return
    assert (modes.gemm, modes.moe) == priced and "fp8_block where the labels name fp8" in modes.note and "CUDA-graph" in modes.note
    assert fallbacks and all((f.gemm, f.moe) != priced for f in fallbacks)
    row = map_measurement(m)  # priced at the blocks first; the labels, then the per-op fallbacks, if those miss data
    assert row.checkpoint_inputs is not None and len(row.granularity_fallbacks) == len(fallbacks) == 2


def test_a_label_of_other_arithmetic_and_granularity_maps_on_any_engine(sample):
    """A bf16 GEMM label on a block-FP8 DeepSeek checkpoint names other arithmetic for the GEMMs and
    per-tensor fp8 experts another granularity: every engine maps it, and only TensorRT-LLM's note
    names the granularity (its tables time both alike)."""
    m = _first(sample, model="deepseek-ai/DeepSeek-R1", engine="sglang", system="b200_sxm", moe_quant="fp8_block", mode="agg")
    for engine in ("sglang", "vllm", "trtllm"):
        run = dataclasses.replace(m, engine=engine, gemm_quant="bfloat16", moe_quant="fp8")
        modes = checkpoints.checkpoint_modes(run, m.model, moe=True)
        assert (modes.gemm, modes.moe) == ("fp8_block", "fp8_block") and ("CUDA-graph" in modes.note) == (engine == "trtllm")
        assert map_measurement(run).checkpoint_inputs is not None


@pytest.mark.parametrize(("engine", "gemm"), [("vllm", "fp8"), ("trtllm", None)])
def test_an_unlabelled_static_fp8_checkpoint_is_priced_as_its_engine_times_it(sample, engine, gemm):
    """Without a label the pricer infers fp8_static from a ModelOpt checkpoint (the fp8 table less
    its compute_scale); vLLM's fp8 table is static already, so the row is priced at fp8 there."""
    m = _first(sample, model="meta-llama/Llama-3.1-70B", engine="vllm", system="h200_sxm", gemm_quant="fp8")
    own = dataclasses.replace(m, model="nvidia/Llama-3.1-70B-Instruct-FP8", engine=engine, gemm_quant=None, moe_quant=None)
    modes = checkpoints.checkpoint_modes(own, own.model, moe=False)
    assert (modes.gemm if modes else None) == gemm
    static_moe_label = dataclasses.replace(m, model="nvidia/Llama-3.1-70B-Instruct-FP8", gemm_quant="fp8", moe_quant="fp8_static")
    assert checkpoints.checkpoint_modes(static_moe_label, static_moe_label.model, moe=False) is None  # a dense model's MoE label is kept


def test_a_ran_checkpoint_is_read_through_a_config_of_the_aliased_architecture():
    from estimator.models.config import model_architecture

    for ran in checkpoints.RAN_CHECKPOINTS:
        alias = next(a for a in MODEL_ALIASES if a.measured == ran.measured and a.gemm_quant in (None, ran.gemm_quant))
        assert model_architecture(ran.read_as) == alias.architecture


def test_mapping_carries_checkpoint_inputs_beside_the_labelled_ones(mapped):
    """Only the quant modes differ; the baseline view drops them."""
    rows = [r for r in mapped if r.checkpoint_inputs is not None]
    repriced = {"openai/gpt-oss-120b", "meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-235B-A22B-FP8"}
    assert {r.measurement.model for r in rows} == repriced
    for r in rows:
        assert r.quant_note and r.baseline.checkpoint_inputs is None
        base = (r.recorded or r).inputs
        if base is None:  # a published disaggregated run whose recorded columns the baseline could not price
            continue
        plain = tuple(dataclasses.replace(d, quant=dataclasses.replace(d.quant, kvcache=None), nextn=0) for d in base.deployments)
        assert r.baseline.inputs == dataclasses.replace(base.with_deployments(plain), nextn_accepted=0.0)
        for labelled, checkpoint in zip(r.inputs.deployments, r.checkpoint_inputs.deployments, strict=True):
            assert dataclasses.replace(checkpoint, quant=labelled.quant) == labelled
            assert (checkpoint.quant.gemm, checkpoint.quant.moe) != (labelled.quant.gemm, labelled.quant.moe)
    assert all(r.checkpoint_inputs is None and r.quant_note == "" for r in mapped if r.measurement.model not in repriced)


def test_granularity_fallbacks_change_as_few_ops_as_possible(sample):
    """MiniMax-M2.5 labelled fp8/fp8 ran a block-FP8 checkpoint: the same 8-bit arithmetic, so the
    labels stand and the fallbacks swap in the checkpoint's granularity for the experts, then the
    GEMMs, then both; a label already at the checkpoint's granularity is not repeated."""
    m = _first(sample, model="MiniMaxAI/MiniMax-M2.5", system="h100_sxm", gemm_quant="fp8", moe_quant="fp8")
    assert checkpoints.checkpoint_modes(m, m.model, moe=True) is None
    fallbacks = _fallbacks(m, m.model, moe=True)
    assert [(f.gemm, f.moe) for f in fallbacks] == [("fp8", "fp8_block"), ("fp8_block", "fp8"), ("fp8_block", "fp8_block")]
    assert all("labelled fp8/fp8" in f.note for f in fallbacks)
    r1 = _first(sample, model="deepseek-ai/DeepSeek-R1", gemm_quant="fp8", moe_quant="fp8_block")
    assert [(f.gemm, f.moe) for f in _fallbacks(r1, r1.model, moe=True)] == [("fp8_block", "fp8_block")]


def test_no_granularity_fallbacks_for_other_arithmetic_or_another_checkpoint(sample):
    gpt_oss = _first(sample, model="openai/gpt-oss-120b", system="b200_sxm", engine="trtllm", mode="agg")
    assert checkpoints.checkpoint_modes(gpt_oss, gpt_oss.model, moe=True) is not None
    assert _fallbacks(gpt_oss, gpt_oss.model, moe=True) == ()
    r1_nvfp4 = _first(sample, model="deepseek-ai/DeepSeek-R1", gemm_quant="nvfp4")  # another checkpoint: 4-bit experts
    assert _fallbacks(r1_nvfp4, r1_nvfp4.model, moe=True) == ()
    glm = _first(sample, model="zhipuai/GLM-5", gemm_quant="fp8")
    model_used, _ = resolve_model(glm)
    assert _fallbacks(glm, model_used, moe=True) == ()
    minimax = _first(sample, model="MiniMaxAI/MiniMax-M2.5", gemm_quant="fp8", moe_quant="fp8")
    own = dataclasses.replace(minimax, gemm_quant="fp8_block", moe_quant="fp8_block")
    assert _fallbacks(own, own.model, moe=True) == ()


def test_mapping_carries_granularity_fallbacks_that_differ_only_in_quant_modes(mapped):
    rows = [r for r in mapped if r.granularity_fallbacks]
    assert {r.measurement.model for r in rows} >= {"MiniMaxAI/MiniMax-M2.5", "deepseek-ai/DeepSeek-R1"}
    for r in rows:
        assert r.baseline.granularity_fallbacks == ()
        priced_first = r.checkpoint_inputs.deployments if r.checkpoint_inputs is not None else ()
        assert all(f.inputs.deployments != priced_first for f in r.granularity_fallbacks)  # never tried twice
        for fallback in r.granularity_fallbacks:
            for labelled, swapped in zip(r.inputs.deployments, fallback.inputs.deployments, strict=True):
                assert dataclasses.replace(swapped, quant=labelled.quant) == labelled and swapped.quant != labelled.quant


@pytest.mark.parametrize("nextn, accepted, named", [(3, 3.5, "nextn_accepted"), (0, 1.5, "nextn_accepted"), (-1, 0.0, "nextn")])
def test_mtp_drafts_out_of_range_are_rejected_naming_them(sample, nextn, accepted, named):
    """nextn_accepted must lie within [0, nextn] (accepted drafts without any draft are an error, not
    ignored): the settings are rejected with a message naming the field."""
    m = next(m for m in sample if m.engine == "trtllm" and m.mode == "agg")
    with pytest.raises(InvalidInputError, match=named):
        m.settings.replace(nextn=nextn, nextn_accepted=accepted)


def test_disagg_rows_commit_their_accepted_drafts(mapped):
    """A disagg run's drafts reach both workers and its accepted drafts the decode steps: TPOT falls
    as more drafts are accepted (a project measurement file may record them; the InferenceX recipes
    give disagg rows none)."""
    from estimator.report.batch import predict

    m = next(r.measurement for r in mapped if r.inputs is not None and r.recipe is None and r.measurement.mode == "disagg" and r.measurement.engine == "trtllm")
    for method in ("uncached", "closed_loop"):
        tpot = [predict(map_measurement(dataclasses.replace(m, settings=m.settings.replace(nextn=3, nextn_accepted=a))), method).tpot_pred_ms
                for a in (0.0, 1.8)]  # fmt: skip
        assert tpot[1] < tpot[0] / 1.5, method


@pytest.mark.parametrize(
    "engine, version, image, measured, model, compile_ms, measured_by",
    [
        ("sglang", "0.5.9", None, None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),  # a release whose l2norm.py was read
        ("sglang", "v0.5.10.post1", None, None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),
        ("sglang", None, "lmsysorg/sglang:v0.5.9-cu130", None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),  # the image tag
        ("sglang", None, "lmsysorg/sglang:nightly-dev-cu13-20260317-1eea7448", None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),
        ("sglang", None, None, "2026-07-17", "Qwen/Qwen3.5-397B-A17B", 0.0, None),  # measured the day the fix merged: not assumed
        ("sglang", "nightly-dev", "lmsysorg/sglang:nightly-dev-20260216-d3bae71e", None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),
        ("sglang", "nightly-dev", "lmsysorg/sglang:nightly-dev-20260801-0000000", "2026-06-01", "Qwen/Qwen3.5-397B-A17B", 0.0, None),  # image after the fix
        ("sglang", "0.5.12", None, "2026-06-30", "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, None),  # measured before the fix
        ("sglang", "0.5.12", None, "2026-08-30", "Qwen/Qwen3.5-397B-A17B", 0.0, None),  # an unread release after the fix: not assumed
        ("sglang", "0.5.9", None, None, "deepseek-ai/DeepSeek-R1", 0.0, None),  # no gated-delta-net layers
        ("vllm", "0.11.0", None, "2026-03-01", "Qwen/Qwen3.5-397B-A17B", 0.0, None),  # another engine's kernels
        ("sglang", None, None, None, "Qwen/Qwen3.5-397B-A17B", SGLANG_SHAPE_COMPILE_MS, "2026-02-16"),  # published before the fix
        ("sglang", None, None, None, "Qwen/Qwen3.5-397B-A17B", 0.0, "2026-08-01"),  # published after it: not assumed
        ("sglang", None, None, "2026-08-01", "Qwen/Qwen3.5-397B-A17B", 0.0, "2026-02-16"),  # a recorded date comes first
    ],
)
def test_sglang_builds_before_the_l2norm_fix_compile_per_prefill_shape(sample, engine, version, image, measured, model, compile_ms, measured_by):
    row = dataclasses.replace(sample[0], engine=engine, engine_version=version, image=image, measured_date=measured, model=model)
    assert row.mode == "agg" and builds.shape_compile_ms(row, measured_by) == compile_ms
    assert builds.with_build_compiles(row, measured_by).settings.shape_compile_ms == compile_ms
    assert builds.shape_compile_ms(dataclasses.replace(row, mode="disagg"), measured_by) == compile_ms  # a prefill worker's batches alike


@pytest.mark.parametrize(
    "version, image, measured, measured_by, default",
    [
        ("0.5.10.post1", None, None, None, True),  # PR 16331 is in v0.5.10rc0
        ("0.5.9", None, "2026-04-01", None, False),  # a recorded release comes first
        (None, "lmsysorg/sglang:v0.5.10.post1-cu130", None, None, True),  # the image's release tag
        ("nightly-dev", "lmsysorg/sglang:nightly-dev-cu13-20260317-1eea7448", None, None, True),  # a nightly after the merge
        ("nightly-dev", "lmsysorg/sglang:nightly-dev-20260216-d3bae71e", None, None, False),  # and one before it
        (None, None, "2026-03-25", None, True),  # no build recorded: the run's date
        (None, None, None, "2026-02-16", False),  # a published result bounded by its block's date
        (None, None, None, None, False),  # nothing recorded: not assumed
    ],
)
def test_sglang_builds_from_0_5_10_leave_piecewise_graphs_on(sample, version, image, measured, measured_by, default):
    first = next(m for m in sample if m.engine == "sglang")
    settings = first.settings.replace(piecewise_cuda_graph=None)
    row = dataclasses.replace(first, engine_version=version, image=image, measured_date=measured, settings=settings)
    assert builds.sglang_piecewise_default(row, measured_by) is default
    assert builds.with_build_compiles(row, measured_by).settings.piecewise_cuda_graph is (None if default else False)


def test_no_sample_run_is_replayed_with_graphed_prefills(mapped):
    """The sample's SGLang agg runs on builds with the graphs on by default are DeepSeek (MLA), GLM-5 (DSA) and Qwen3.5
    (multimodal) launches, which SGLang keeps eager: every one keeps its eager floor."""
    from estimator.closedloop.host import sglang_graphs_every_prefill

    runs = [(r, methods.replay_input(r)) for r in mapped if r.inputs is not None and r.measurement.engine == "sglang" and r.measurement.mode == "agg"]
    assert runs and sum(r.measurement.settings.piecewise_cuda_graph is None for r, _ in runs) > 50
    assert not any(sglang_graphs_every_prefill(run.deployment, r.measurement.settings) for r, run in runs)


def test_a_disagg_run_replays_its_builds_compile_on_the_prefill_workers(mapped):
    """A disaggregated run whose build compiles per prefill shape pays it on its prefill workers' new batch token
    counts (TandemSpec.prefill_compile_ms), and the ablation's compile key switches it off."""
    from estimator.report.ablation import MECHANISMS
    from estimator.report.batch import predict

    m = next(r.measurement for r in mapped if r.inputs is not None and r.measurement.mode == "disagg" and r.measurement.engine == "sglang")
    compiling = map_measurement(dataclasses.replace(m, settings=m.settings.replace(shape_compile_ms=500.0)))
    assert methods.replay_input(compiling).prefill_compile_ms == 500.0
    assert predict(compiling, "closed_loop").ttft_pred_ms > predict(map_measurement(m), "closed_loop").ttft_pred_ms
    assert methods.replay(compiling, "benchmark", MECHANISMS["compile"]).stats == methods.replay(map_measurement(m), "benchmark").stats


def test_the_sample_qwen35_sglang_rows_replay_with_the_shape_compile(mapped):
    """Every SGLang Qwen3.5 run of the sample whose build is dated predates the fix; the others
    record only "nightly-dev" (no image, no date) and are not assumed; no other row compiles per shape."""
    compiling = {r.measurement.id for r in mapped if r.some_inputs and r.measurement.settings.shape_compile_ms}
    qwen35 = [
        r.measurement
        for r in mapped
        if r.some_inputs
        and r.model_used == "Qwen/Qwen3.5-397B-A17B"
        and r.measurement.engine == "sglang"
        and "InferenceX twin" not in r.measurement.protocol.client_citation
    ]  # a twin takes its InferenceX run's build
    compiling -= {r.measurement.id for r in mapped if "InferenceX twin" in r.measurement.protocol.client_citation}
    undated = {m.id for m in qwen35 if (m.engine_version, m.image, m.measured_date) == ("nightly-dev", None, None)}
    assert compiling == {m.id for m in qwen35} - undated and len(compiling) > 250 and len(undated) < 20


def _cold_dsr1_b200(sample):
    """An InferenceX SGLang DeepSeek-R1 B200 agg run of the single-prompt warm-up era (2025-11)."""
    return next(m for m in sample if m.source == "inferencex" and m.engine == "sglang" and m.model == "deepseek-ai/DeepSeek-R1"
                and m.system == "b200_sxm" and m.mode == "agg" and m.measured_date == "2025-11-10")  # fmt: skip


@pytest.mark.parametrize(
    "changes, compile_ms",
    [
        ({}, builds.PREFIX_COMPILE_MS),  # v0.5.5 era, no version recorded: the config's images all predate the jit cache
        ({"engine_version": "0.5.6"}, builds.PREFIX_COMPILE_MS),  # the last release before PR 14959
        ({"image": "lmsysorg/sglang:v0.5.3rc1-cu129-b200"}, builds.PREFIX_COMPILE_MS),
        ({"engine_version": "0.5.7"}, 0.0),  # its image installs flashinfer-jit-cache
        ({"image": "lmsysorg/sglang:v0.5.9-cu130"}, 0.0),
        ({"mode": "disagg"}, 0.0),  # the P/D tandem charges none
        ({"engine": "vllm"}, 0.0),
        ({"source": "aic-gap-analysis"}, 0.0),  # no launch published (a twin takes its InferenceX run's settings)
        ({"system": "h200_sxm"}, 0.0),  # the trtllm_mla backend serves SM100 only
        ({"model": "Qwen/Qwen3.5-397B-A17B"}, 0.0),  # no MLA
        ({"isl": 20_000}, 0.0),  # the warm-up prompt itself extends a chunk
        ({"engine_version": "nightly-dev"}, 0.0),  # a build recorded but no release read: not assumed
        ({"engine_version": "nightly-dev", "image": "lmsysorg/sglang:v0.5.6-cu129-amd64"}, builds.PREFIX_COMPILE_MS),  # the tag
        ({"engine_version": "0.5.6.post2"}, builds.PREFIX_COMPILE_MS),  # 2025-12-11, before PR 14959
        ({"engine_version": "v0.5.9", "image": "lmsysorg/sglang:v0.5.5-cu129-amd64"}, 0.0),  # the version first
    ],
)
def test_cold_trtllm_mla_builds_compile_at_the_first_prefix_extend(sample, changes, compile_ms):
    m = _cold_dsr1_b200(sample)
    assert m.protocol.num_warmups == 1 and m.settings.step_token_budget == 16384
    assert builds.prefix_compile_ms(dataclasses.replace(m, **changes)) == compile_ms


def test_a_run_warmed_up_at_its_concurrency_compiles_before_it_is_measured(sample):
    m = _cold_dsr1_b200(sample)
    warmed, unrecorded = (dataclasses.replace(m, protocol=dataclasses.replace(m.protocol, num_warmups=n)) for n in (2 * m.concurrency, None))
    assert builds.prefix_compile_ms(m) == builds.PREFIX_COMPILE_MS
    assert builds.prefix_compile_ms(warmed) == builds.prefix_compile_ms(unrecorded) == 0.0


def test_the_sample_rows_that_replay_the_prefix_compile_are_the_cold_dsr1_b200_runs(sample):
    """The InferenceX SGLang DeepSeek-R1/V3 B200 agg runs before the 2 x C warm-up (PR 480), and no other row."""
    compiling = {m.id for m in sample if m.settings.prefix_compile_ms}
    cold = {m.id for m in sample if m.engine == "sglang" and m.system == "b200_sxm" and m.mode == "agg" and "DeepSeek" in m.model
            and m.source == "inferencex" and m.protocol.num_warmups == 1}  # fmt: skip
    assert compiling == cold and len(cold) > 90


def _dsr1_sglang(sample, **changes):
    base = next(m for m in sample if m.source == "inferencex" and m.engine == "sglang" and m.model in recipe_models_.DSR1_MODELS and m.mode == "agg")
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("image", "measured", "model", "served"),
    [
        ("lmsysorg/sglang:v0.5.10.post1-cu130", "2026-04-17T00:00:00Z", "deepseek-ai/DeepSeek-V3", True),
        ("lmsysorg/sglang:v0.5.10-cu129", "2026-03-01T00:00:00Z", "deepseek-ai/DeepSeek-R1", True),
        ("lmsysorg/sglang:v0.5.10.post1-cu130", "2026-05-16T00:00:00Z", "deepseek-ai/DeepSeek-R1", False),  # after PR 1381's repair
        ("lmsysorg/sglang:v0.5.9-cu130", "2026-04-17T00:00:00Z", "deepseek-ai/DeepSeek-R1", False),  # transformers 4.57.1
        ("lmsysorg/sglang:v0.5.10.post1-cu130", "2026-04-17T00:00:00Z", "Qwen/Qwen3.5-397B-A17B", False),  # another tokenizer
    ],
)
def test_served_prompt_follows_the_tokenizer_mismatch_window(sample, image, measured, model, served):
    m = _dsr1_sglang(sample, image=image, model=model, provenance=f"measured={measured}", isl=1024)
    got = tokenizers.served_prompt(m)
    if not served:
        assert got is None
        return
    run, note = got
    assert run.isl == round(1024 * 35921 / 7140) == 5152 and "PR 937" in note and "PR 1381" in note


def test_mismatched_rows_price_the_served_prompt_and_the_baseline_the_recorded_one(mapped):
    affected = [r for r in mapped if "tokenizer mismatch" in r.layout_note]
    assert affected
    for r in affected:
        assert r.inputs.isl == round(r.measurement.isl * 35921 / 7140) and r.baseline.inputs.isl == r.measurement.isl


@pytest.mark.parametrize(
    ("measured", "warmups"),
    [("2026-01-20T23:00:00Z", 1), ("2026-01-21T17:53:37Z", 1), ("2026-01-21T17:53:38Z", 64), ("2026-01-21", 64), ("2026-03-25", 64), (None, None)],
)
def test_inferencex_warmups_follow_pr_480(measured, warmups):
    """Before PR 480 the client sent one test prompt; from it on 2 x C copies of the first prompt."""
    assert clients.protocol_for(clients.INFERENCEX, 32, measured).num_warmups == warmups
    assert clients.protocol_for(clients.AIC_GAP_ANALYSIS, 32, measured).num_warmups is None


def test_cold_first_waves_are_noted_only_where_the_warmup_falls_short(sample):
    from estimator.report.methods import COLD_START_NOTE, cold_start_note

    cold = [m for m in sample if cold_start_note(m)]
    assert cold and all(m.protocol.num_warmups == 1 and m.concurrency > 1 for m in cold)
    plain = next(m for m in cold if not (m.settings.shape_compile_ms or m.settings.prefix_compile_ms))
    assert COLD_START_NOTE in cold_start_note(plain) and "1 warm-up request before a first wave" in cold_start_note(plain)
    charged = next(m for m in cold if m.settings.prefix_compile_ms)  # the note names what the replay charges instead
    assert COLD_START_NOTE not in cold_start_note(charged) and "at the first prefix extend 20000 ms" in cold_start_note(charged)
    warm = next(m for m in sample if m.protocol.num_warmups and m.protocol.num_warmups >= 2 * m.concurrency)
    assert cold_start_note(warm) == "" and cold_start_note(dataclasses.replace(warm, protocol=dataclasses.replace(warm.protocol, num_warmups=None))) == ""


def test_multinode_runs_record_their_clients_warmup(mapped):
    sa_bench = [r for r in mapped if r.recipe is not None and r.inputs is not None and not r.recipe.key.startswith("launcher:")]
    assert sa_bench and all(r.measurement.protocol.num_warmups == 5 * r.measurement.concurrency for r in sa_bench)
    launched = [r for r in mapped if r.recipe is not None and r.inputs is not None and r.recipe.key.startswith("launcher:")]
    assert launched and all(r.measurement.protocol.client_seed == 0 for r in sa_bench + launched)
    assert all("--seed default 0" in r.measurement.protocol.client_citation for r in sa_bench + launched)


@pytest.mark.parametrize(("model", "isl", "osl", "tp", "concurrency", "image", "measured", "drafts"), [
    ("Qwen/Qwen3.5-397B-A17B", 1024, 1024, 4, 4, "lmsysorg/sglang:v0.5.9-cu130", "2026-03-20", 3),  # only the -mtp key runs this image
    ("Qwen/Qwen3.5-397B-A17B", 1024, 1024, 4, 4, "lmsysorg/sglang:v0.5.9-cu130-amd64", "2026-03-24", 0),  # the plain key's run
    ("deepseek-ai/DeepSeek-R1", 1024, 1024, 8, 128, "lmsysorg/sglang:v0.5.9-cu130", "2026-03-25", 2),  # beyond the plain key's C 64
    ("deepseek-ai/DeepSeek-R1", 1024, 1024, 8, 64, "lmsysorg/sglang:v0.5.9-cu130", "2026-03-25", 0),  # both keys: the plain one
    ("deepseek-ai/DeepSeek-R1", 8192, 1024, 8, 8, "lmsysorg/sglang:v0.5.9-cu130", "2026-03-25", 2),  # the plain key stops at C 4
    ("deepseek-ai/DeepSeek-R1", 1024, 1024, 8, 128, "lmsysorg/sglang:v0.5.9-cu130", "2026-03-26", 0),  # another day's config
])  # fmt: skip
def test_sglang_mtp_key_runs_recorded_as_plain_rows_draft(model, isl, osl, tp, concurrency, image, measured, drafts):
    """The sample drops the spec-decoding column: a run only the -mtp config key of its day could have made drafts with
    its script's depth and the published acceptance, the overlap schedule off; the plain key's runs do not."""
    s = recipes.recipe_settings(clients.INFERENCEX, "sglang", isl, osl, concurrency, model, "b200_sxm", "fp8", tp, "agg", image,
                                measured=measured)  # fmt: skip
    assert (s.nextn if s is not None else 0) == drafts
    if drafts:
        assert 0 < s.nextn_accepted <= drafts and s.overlap_scheduler is False and "-mtp" in s.citation


@pytest.mark.parametrize(
    ("measured", "attention_dp", "drafts"),
    [("2026-01-14T22:26:21Z", 1, 3), ("2026-01-14T00:00:00.000Z", 8, 1), ("2026-01-28T06:18:44Z", 1, 0), ("2025-12-15T00:00:00.000Z", 1, 0), (None, 1, 0)],
)
def test_trtllm_dsr1_mtp_runs_on_the_old_image_are_those_of_pr_392s_merge(measured, attention_dp, drafts):
    """The MTP keys first ran the non-MTP keys' image: only the run PR 392's merge started (its changelog names the
    three -trt-mtp keys, B200 and H200, alone) drafts, 3 tokens or 1 under attention DP; no other system does."""
    image = "nvcr.io#nvidia/tensorrt-llm/release:1.1.0rc2.post2"
    for system in ("h200_sxm", "b200_sxm"):
        assert recipes.trtllm.dsr1_mtp_drafts("deepseek-ai/DeepSeek-R1", system, image, attention_dp, measured) == drafts
    assert recipes.trtllm.dsr1_mtp_drafts("deepseek-ai/DeepSeek-R1", "b300_sxm", image, attention_dp, measured) == 0


def test_the_h200_mtp_run_is_priced_with_its_recipe(sample):
    run = [m for m in sample if m.engine == "trtllm" and m.system == "h200_sxm" and m.settings.nextn]
    assert len(run) == 41
    for m in run:
        assert m.settings.nextn_accepted == recipe_models_.DSR1_MTP_ACCEPTED[m.settings.nextn] and "PR 392" in m.settings.citation
        assert m.settings.kv_free_memory_fraction == 0.75


@pytest.mark.parametrize(
    "engine, model, precision, system, mode, image, served",
    [("sglang", "deepseek-ai/DeepSeek-R1", "fp8", "h200_sxm", "agg", "lmsysorg/sglang:v0.5.9-cu130", "bfloat16"),  # dsr1_fp8_h200.sh: no flag
     ("sglang", "deepseek-ai/DeepSeek-R1", "fp8", "b200_sxm", "agg", "lmsysorg/sglang:v0.5.9-cu130", "fp8"),  # --kv-cache-dtype fp8_e4m3
     ("sglang", "deepseek-ai/DeepSeek-R1", "fp8", "gb200", "disagg", None, "fp8"),  # srt-slurm recipes
     ("sglang", "deepseek-ai/DeepSeek-R1", "fp8", "h200_sxm", "disagg", None, "bfloat16"),
     ("sglang", "zhipuai/GLM-5", "fp8", "b300_sxm", "agg", None, "fp8"),  # no public script: the NSA auto on Blackwell
     ("sglang", "zhipuai/GLM-5", "fp8", "h200_sxm", "agg", None, "bfloat16"),  # the NSA auto on Hopper
     ("vllm", "MiniMaxAI/MiniMax-M2.5", "fp8", "b200_sxm", "agg", "vllm/vllm-openai:v0.17.0-cu130", "bfloat16"),
     ("vllm", "MiniMaxAI/MiniMax-M2.5", "fp8", "b200_sxm", "agg", "vllm/vllm-openai:v0.19.0-cu130", "fp8"),  # PR 947 with the image
     ("vllm", "moonshotai/Kimi-K2.5", "int4", "h200_sxm", "agg", "vllm/vllm-openai:v0.16.0", "bfloat16"),
     ("vllm", "moonshotai/Kimi-K2.5", "fp4", "b200_sxm", "agg", "vllm/vllm-openai:v0.17.0", "fp8"),  # the NVFP4 checkpoint's ModelOpt KV
     ("trtllm", "deepseek-ai/DeepSeek-R1", "fp8", "h200_sxm", "agg", None, None)],  # not an SGLang or vLLM launch: no rule
)  # fmt: skip
def test_inferencex_launches_serve_their_scripts_kv_cache(sample, engine, model, precision, system, mode, image, served):
    """An InferenceX SGLang or vLLM run is priced at the KV cache its script or recipe launched (cited in its
    settings), else at the engine's auto (measurements.recipes.kvcache)."""
    m = next(m for m in sample if m.source == clients.INFERENCEX and (m.model, m.precision) == (model, precision))
    m = dataclasses.replace(m, engine=engine, model=model, precision=precision, system=system, mode=mode, image=image,
                            settings=system_defaults(engine, system))  # fmt: skip
    settings = recipes.with_launch_kv_cache(m.settings, m.source, engine, model, precision, system, mode, image)
    assert ("KV cache:" in settings.citation) == (settings.kv_cache_dtype == "fp8")
    model_used = resolve_model(dataclasses.replace(m, settings=settings))[0]
    assert served_kv_cache(dataclasses.replace(m, settings=settings), model_used) == served


def test_every_launch_kv_cache_rule_serves_fp8_to_some_sample_row(sample):
    """Each rule of measurements.recipes.kvcache matches a row of the sample, which its launch then prices at fp8
    (a rule that names the wrong models, systems, modes or image line matches none)."""
    from measurements.recipes.kvcache import KV_CACHE_RULES

    fp8 = [m for m in sample if m.settings.kv_cache_dtype == "fp8" and m.engine in ("sglang", "vllm")]
    for rule in KV_CACHE_RULES:
        hits = [m for m in fp8 if rule.citation in m.settings.citation]
        assert hits, rule
        assert all(served_kv_cache(m, resolve_model(m)[0]) == "fp8" for m in hits[:3])


def test_an_alias_priced_on_another_formats_config_takes_no_declared_kv_cache():
    """Nemotron-3-Super's BF16 cookbook run is priced on the FP8 config's sizes, which declares an fp8 KV cache:
    the run launched auto on a BF16 checkpoint, so it serves bfloat16 (checkpoints.declared_kv_cache)."""
    (m,) = [m for m in load_measurements("measurements/published/sgl_cookbook.csv") if "Nemotron3-Super" in m.id]
    model_used = resolve_model(m)[0]
    assert checkpoint_quant(model_used).kv_cache_algo == "fp8" and served_kv_cache(m, model_used) == "bfloat16"


def test_inferencex_vllm_launches_schedule_asynchronously_as_they_ran(sample):
    """vLLM's async scheduling is its version's default (on from 0.14.0) but where an InferenceX launch set it apart:
    the gpt-oss scripts turn it on on every image (0.11.2 too), and so do the Llama-3.1-70B scripts (no version recorded;
    v0.10.2, where it is off by default and runs on the mp executor at any TP) (measurements.recipes.vllm)."""
    vllm = [m for m in sample if m.source == clients.INFERENCEX and m.engine == "vllm"]
    gpt_oss_old = [m for m in vllm if m.model == "openai/gpt-oss-120b" and m.engine_version == "0.11.2"]
    llama = [m for m in vllm if m.model == "meta-llama/Llama-3.1-70B"]
    minimax = [m for m in vllm if m.model == "MiniMaxAI/MiniMax-M2.5" and m.engine_version == "0.16.0"]
    assert gpt_oss_old and all(m.settings.overlap_scheduler and "async-scheduling: true" in m.settings.citation for m in gpt_oss_old)
    assert llama and all(m.settings.overlap_scheduler and "v0.10.2" in m.settings.citation for m in llama)
    assert minimax and all(m.settings.overlap_scheduler and "async scheduling:" not in m.settings.citation for m in minimax)


@pytest.mark.parametrize("version, overlap", [("0.12.0", False), ("0.19.0", True)])
def test_an_empty_settings_cell_takes_the_default_of_the_rows_engine_version(sample, version, overlap):
    """A measurement CSV row with no overlap_scheduler recorded takes vLLM's default for its engine version
    (async scheduling from 0.14.0), not the current release's."""
    m = next(m for m in sample if m.engine == "vllm")
    record = flatten(dataclasses.replace(m, engine_version=version)) | {"overlap_scheduler": None}
    assert unflatten(record, system_defaults).settings.overlap_scheduler is overlap
