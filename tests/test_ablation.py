"""The report's ablation (estimator.report.ablation): closed_loop with one first-token mechanism off.

Each mechanism moves the figures of a row it acts on and leaves the others' unchanged (so a
mechanism dropped from the replay, or an ablation that switches nothing off, fails here); the
table compares the same rows; --ablation is refused where it cannot replay."""

from __future__ import annotations

import pandas as pd
import pytest

from estimator.cli import main
from estimator.report import methods
from estimator.report.ablation import ABLATED_METHODS, MECHANISMS, PREFIX, ablation_table
from measurements.loaders import load_silicon_sample
from measurements.mapping import map_measurement

ROWS = {
    "sglang_agg": "2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_1024x1024_c64_tp8_0_ep1_0_288",
    "trtllm_agg": "2026_03_25_gpt_oss_120b_b200_sxm_trtllm_fp4_agg_1024x1024_c32_tp2_0_ep1_0_1008",
    "trtllm_disagg": "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_disagg_8192x1024_c32_tp8_0_ep1_0_432",
    "mismatch": "dsr1_b300_sglang_fp4_agg_1024x1024_c4_cfg717",  # transformers-5 tokenizer mismatch
    "sglang_intake": "dsr1_gb200_sglang_fp8_disagg_8192x1024_c8_cfg536",  # decode recipe: scheduler-recv-interval 10
    "vllm_kv": "2026_04_06_minimax_m2_5_h100_sxm_vllm_fp8_agg_8192x1024_c64_tp4_ep4_1359",  # 64 clients, the pool holds fewer
    "cold_sglang": "dsr1_b200_sglang_fp8_agg_1024x1024_c64_cfg199",  # 2025-11-18: the first prefix extend builds FlashInfer's FMHA
    "trtllm_fp4_disagg": "2026_03_25_deepseek_r1_gb200_trtllm_fp4_disagg_8192x1024_c4_tp4_0_ep4_0_441",  # prefill recipe: TRTLLM MoE
    "vllm_graphs": "minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c4_cfg633",  # v0.19 script: CUDA graphs up to 2,048 tokens, budget 2,048
}
AGG = {"sglang_agg", "trtllm_agg", "mismatch", "vllm_kv", "cold_sglang", "vllm_graphs"}
MAY_ACT = {  # the rows a mechanism can act on at all, by where it sits in the replay
    "overlap": AGG,  # agg passes only (the tandem replays no overlap)
    "eager_floor": set(ROWS),  # agg and prefill-stage passes
    "request_path": {"trtllm_agg", "vllm_graphs"},  # an eager vLLM request's path sits inside the dispatch charge
    "compile": {"cold_sglang"},  # no Qwen3.5 row here compiles per shape
    "admission": {"trtllm_disagg", "sglang_intake", "trtllm_fp4_disagg"},  # a disagg request's first token
    "admission_lag": {"trtllm_disagg", "sglang_intake", "trtllm_fp4_disagg"},
    "decode_intake": {"sglang_intake"},
    "prefill_overlap": {"sglang_intake"},
    "kv_pool": {"vllm_kv"},
    "cuda_graphs": {"vllm_graphs"},
    "qk_norm": {"vllm_kv", "vllm_graphs"},  # MiniMax-M2 at TP > 1
    "moe_backend": {"trtllm_fp4_disagg"},  # the FP8 row's prefill runs TRTLLM too, but no trtllm-gen fp8_block curve exists
    "tokenizer": {"mismatch"},
    "client_draws": set(ROWS),  # every InferenceX and sa-bench client records its seed
    "burst": set(ROWS),  # every row's benchmark opens with a burst of C > 1
    "statistic": set(),  # every sample row states the mean
}
MOVES = {  # a row each mechanism moves (busy enough that it shows)
    "overlap": "trtllm_agg", "eager_floor": "sglang_agg", "request_path": "trtllm_agg", "admission": "trtllm_disagg", "admission_lag": "trtllm_disagg",
    "tokenizer": "mismatch", "decode_intake": "sglang_intake", "prefill_overlap": "sglang_intake", "kv_pool": "vllm_kv",
    "qk_norm": "vllm_kv", "compile": "cold_sglang", "moe_backend": "trtllm_fp4_disagg", "cuda_graphs": "vllm_graphs",
    "client_draws": "sglang_agg",
    "burst": "sglang_agg",
}  # fmt: skip


@pytest.fixture(scope="module")
def rows():
    wanted = set(ROWS.values())
    found = {m.id: map_measurement(m) for m in load_silicon_sample() if m.id in wanted}
    return {name: found[mid] for name, mid in ROWS.items()}


@pytest.fixture(scope="module")
def full(rows):
    return {name: methods.METHODS["closed_loop"](row) for name, row in rows.items()}


def test_every_mechanism_has_its_ablated_method_in_table_order():
    assert ABLATED_METHODS == tuple(PREFIX + key for key in MECHANISMS) and set(MAY_ACT) == set(MECHANISMS)


@pytest.mark.parametrize("key", list(MECHANISMS))
def test_a_mechanism_off_moves_only_rows_it_acts_on(key, rows, full):
    moved = set()
    for name, row in rows.items():
        off = methods.METHODS[PREFIX + key](row)
        if (off.ttft_ms, off.tpot_ms) != (full[name].ttft_ms, full[name].tpot_ms):
            moved.add(name)
    assert moved <= MAY_ACT[key] and (key not in MOVES or MOVES[key] in moved), (key, moved)


def test_the_served_prompt_is_what_the_mismatch_ablation_gives_back(rows, full):
    """Without the mismatch the row prices the client's recorded prompt (fewer tokens: a lower TTFT)."""
    assert methods.METHODS[PREFIX + "tokenizer"](rows["mismatch"]).ttft_ms < full["mismatch"].ttft_ms


def _point(id_, method, ttft, tpot=10.0, backend="vllm", mode="agg", covered=True):
    return {"id": id_, "method": method, "covered": covered, "ttft_pred_ms": ttft, "tpot_pred_ms": tpot,
            "ttft_meas_ms": 100.0, "tpot_meas_ms": 10.0, "backend": backend, "mode": mode}  # fmt: skip


def test_the_table_compares_the_rows_every_replay_covers():
    points = pd.DataFrame([
        _point("a", "closed_loop", 90.0), _point("a", PREFIX + "overlap", 70.0),
        _point("b", "closed_loop", 120.0, backend="sglang"), _point("b", PREFIX + "overlap", 150.0, backend="sglang"),
        _point("c", "closed_loop", 100.0), _point("c", PREFIX + "overlap", float("nan"), covered=False),
    ])  # fmt: skip
    table = ablation_table(points)
    assert table["mechanisms"] == [("overlap", MECHANISMS["overlap"].label)]
    everything, sglang, vllm = table["rows"]
    assert (everything["partition"], everything["n"]) == ("all", 2)  # c: the ablated replay did not cover it
    assert everything["closed_loop"].ttft.mape == pytest.approx(0.15) and everything["overlap"].ttft.mape == pytest.approx(0.4)
    assert (sglang["partition"], sglang["overlap"].ttft.bias) == ("sglang / agg", pytest.approx(0.5))
    assert (vllm["partition"], vllm["closed_loop"].ttft.bias) == ("vllm / agg", pytest.approx(-0.1))


def test_no_ablated_method_no_table():
    assert ablation_table(pd.DataFrame([_point("a", "closed_loop", 90.0)])) is None


@pytest.mark.parametrize("argv", [["--from-points", "x.csv"], ["--methods", "legacy"]])
def test_ablation_needs_a_closed_loop_computation(argv, capsys):
    assert main(["report", "--ablation", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ablation" in err
