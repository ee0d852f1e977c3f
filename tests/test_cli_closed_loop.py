"""`estimate --closed-loop`: the refined figures beside the closed-form ones, and its scope errors."""

from __future__ import annotations

import json

from estimator.cli import main

POINT = "estimate --model-path Qwen/Qwen3-32B-FP8 --system h200_sxm --backend sglang --tp-size 2 --batch-size 16 --isl 4096 --osl 512".split()


def test_json_carries_the_replay_next_to_the_closed_form_row(capsys):
    assert main([*POINT, "--closed-loop", "benchmark", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    refined = row["closed_loop"]
    assert refined["protocol"] == "benchmark" and refined["pricing"] == "engine"
    assert 0 < refined["ttft_p50"] <= refined["ttft_p99"] and refined["tpot"] > 0
    assert row["ttft"] > 0 and refined["ttft"] != row["ttft"]


def test_text_report_prints_both_columns(capsys):
    assert main([*POINT, "--closed-loop"]) == 0
    out = capsys.readouterr().out
    assert "Closed loop (steady protocol, engine-priced passes" in out and "closed form" in out


def test_static_modes_reject_closed_loop(capsys):
    assert main([*POINT, "--estimate-mode", "static", "--closed-loop"]) == 2
    assert "--closed-loop applies to agg and disagg" in capsys.readouterr().err


def test_one_output_token_has_no_inter_token_latency(capsys):
    """osl 1 emits no second token: the ITL statistics are null in --json (they were NaN)."""
    assert main([*POINT[:-1], "1", "--closed-loop", "--json"]) == 0
    refined = json.loads(capsys.readouterr().out)["closed_loop"]
    assert refined["itl"] is None and refined["itl_p50"] is None and refined["itl_p99"] is None
    assert refined["ttft"] > 0 and refined["tpot"] == 0.0
    assert main([*POINT, "--closed-loop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["closed_loop"]["itl"] > 0


def test_text_report_says_when_the_kv_pool_caps_the_running_requests(capsys):
    """vLLM's 0.9 of an H100 less Qwen3-32B's weights holds fewer 4k-token requests than 64: the report says
    how many ran and why; a batch the pool holds gets no such line."""
    vllm = "estimate --model-path Qwen/Qwen3-32B --system h100_sxm --backend vllm --isl 4096 --osl 256 --closed-loop".split()
    assert main([*vllm, "--batch-size", "64"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "capped" in x]
    assert "of 64 per rank by the KV-cache pool (gpu_memory_utilization 0.9 less the weights)" in line
    assert main([*vllm, "--batch-size", "2"]) == 0
    assert "capped" not in capsys.readouterr().out
