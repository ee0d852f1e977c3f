"""`price-ops --json`: one schema and the same numbers under both pricers; bad input exits 2."""

from __future__ import annotations

import json

import pytest

from estimator.cli import main

BASE = ["price-ops", "--system", "h200_sxm", "--backend", "sglang", "--json"]


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.reference
@pytest.mark.parametrize(
    "extra",
    [
        ["--model-path", "Qwen/Qwen3-32B-FP8", "--tp-size", "2", "--phase", "context", "--batch-size", "4", "--isl", "2048", "--prefix", "512"],
        ["--model-path", "meta-llama/Meta-Llama-3.1-70B", "--tp-size", "4", "--phase", "generation", "--batch-size", "16", "--isl", "33025"],
        ["--model-path", "meta-llama/Meta-Llama-3.1-8B", "--pp-size", "2", "--phase", "context", "--batch-size", "1", "--isl", "32768"],
    ],
    ids=["qwen3-fp8-ctx-prefix", "llama70b-gen", "llama8b-pp2-ctx"],
)
def test_json_is_identical_under_both_pricers(extra, capsys):
    outputs = []
    for pricer in ("native", "reference"):
        code, out, _ = _run([*BASE, *extra, "--pricer", pricer], capsys)
        assert code == 0
        outputs.append(json.loads(out))
    native, reference = outputs
    assert native == reference
    assert set(native) == {"ops", "total_ms"} and all(set(op) == {"name", "latency_ms", "source"} for op in native["ops"])
    assert native["total_ms"] == pytest.approx(sum(op["latency_ms"] for op in native["ops"]), rel=1e-12)


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--model-path", "Qwen/Qwen3-33B", "--phase", "context", "--batch-size", "1", "--isl", "128"], "Qwen/Qwen3-33B"),
        (["--model-path", "Qwen/Qwen3-32B", "--phase", "context", "--batch-size", "0", "--isl", "128"], "batch-size"),
        (["--model-path", "Qwen/Qwen3-32B", "--phase", "context", "--batch-size", "1", "--isl", "128", "--prefix", "128"], "prefix (128)"),
        (["--model-path", "Qwen/Qwen3-32B", "--phase", "context", "--batch-size", "1", "--isl", "128", "--backend-version", "9.9"], "9.9"),
        (["--model-path", "deepseek-ai/DeepSeek-V3", "--phase", "context", "--batch-size", "1", "--isl", "128", "--pricer", "native"], "reference"),
    ],
    ids=["unknown-model", "zero-batch", "prefix-at-isl", "unknown-version", "non-native-family"],
)
def test_bad_input_is_one_line_and_exit_2(extra, named, capsys):
    code, out, err = _run([*BASE, *extra], capsys)
    assert code == 2 and not out
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and named in lines[0]
