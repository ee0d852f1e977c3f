"""`python -m estimator import`: benchmark_serving result files and a deployment file -> measurement rows.

The fixtures are written here from the clients' own definitions (the key sets and units the
importer cites: vLLM benchmarks/benchmark_serving.py, vllm/benchmarks/serve.py, SGLang
bench_serving.py), never copied from a run.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from estimator.cli import main
from estimator.errors import InvalidInputError, UnknownBackendError, UnknownModelError, UnknownSystemError
from estimator.report.batch import predict
from measurements.importers.deployment import TEMPLATE, load_deployment, parse_deployment
from measurements.importers.formats import import_file
from measurements.importers.result import Supplied
from measurements.loaders import load_measurements, provenance_fields
from measurements.mapping import map_all
from measurements.schema import Statistics

DEPLOYMENT = {"model": "Qwen/Qwen3-32B", "system": "h200_sxm", "backend": "trtllm", "backend_version": "1.0.0", "mode": "agg", "tp": 1}


def _requests(n: int, seed: int = 0, failed: int = 1) -> dict:
    """Per-request arrays as the vLLM client saves them: lengths in tokens, ttfts and itls in seconds,
    a failed request with ttft 0, output length 0 and its error."""
    rng = np.random.default_rng(seed)
    ins = rng.integers(820, 1025, n).tolist()
    outs = rng.integers(820, 1025, n).tolist()
    ttfts = rng.uniform(0.05, 0.3, n).tolist()
    itls = [rng.uniform(0.008, 0.016, o - 1).tolist() for o in outs]
    errors = [""] * n
    for i in range(failed):
        outs[i], ttfts[i], itls[i], errors[i] = 0, 0.0, [], "ServerDisconnectedError"
    return {"input_lens": ins, "output_lens": outs, "ttfts": ttfts, "itls": itls, "generated_texts": [""] * n, "errors": errors}


def _client_metrics(arrays: dict) -> dict:
    """The summary keys as the client's calculate_metrics computes them from the same requests."""
    ok = [i for i, e in enumerate(arrays["errors"]) if not e]
    ttfts = [arrays["ttfts"][i] for i in ok]
    tpots = [sum(arrays["itls"][i]) / (arrays["output_lens"][i] - 1) for i in ok if arrays["output_lens"][i] > 1]
    out = {"completed": len(ok), "total_input_tokens": sum(arrays["input_lens"][i] for i in ok), "total_output_tokens": sum(arrays["output_lens"])}
    for name, values in (("ttft", ttfts), ("tpot", tpots)):
        out |= {
            f"mean_{name}_ms": float(np.mean(values)) * 1000,
            f"median_{name}_ms": float(np.median(values)) * 1000,
            f"std_{name}_ms": float(np.std(values)) * 1000,
            f"p99_{name}_ms": float(np.percentile(values, 99)) * 1000,
        }
    return out


def older_detailed(n: int = 16) -> dict:
    """vLLM benchmarks/benchmark_serving.py --save-result: no max_concurrency, the arrays always saved."""
    arrays = _requests(n)
    head = {"date": "20250110-093000", "backend": "vllm", "model_id": "Qwen/Qwen3-32B", "tokenizer_id": "Qwen/Qwen3-32B", "best_of": 1,
            "num_prompts": n, "request_rate": "inf", "duration": 12.5, "request_throughput": 1.2, "output_throughput": 900.0}  # fmt: skip
    return head | _client_metrics(arrays) | arrays


def newer_summary(concurrency: int = 4, prompts: int = 40) -> dict:
    """vllm bench serve --save-result without --save-detailed: max_concurrency and no arrays."""
    return {
        "date": "20260105-101500", "endpoint_type": "openai", "backend": "openai", "label": None, "model_id": "Qwen/Qwen3-32B",
        "tokenizer_id": "Qwen/Qwen3-32B", "num_prompts": prompts, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": concurrency,
        "duration": 30.0, "completed": prompts, "failed": 0, "total_input_tokens": prompts * 922, "total_output_tokens": prompts * 921,
        "request_throughput": 1.3, "request_goodput": None, "output_throughput": 1228.0, "total_token_throughput": 2457.0,
        "max_output_tokens_per_s": 1300.0, "max_concurrent_requests": concurrency,
        "mean_ttft_ms": 120.5, "median_ttft_ms": 110.0, "std_ttft_ms": 10.0, "p99_ttft_ms": 180.0,
        "mean_tpot_ms": 12.5, "median_tpot_ms": 12.4, "std_tpot_ms": 0.5, "p99_tpot_ms": 14.0,
        "mean_itl_ms": 12.5, "median_itl_ms": 12.3, "std_itl_ms": 1.0, "p99_itl_ms": 20.0,
        "mean_e2el_ms": 11600.0, "median_e2el_ms": 11500.0, "std_e2el_ms": 100.0, "p99_e2el_ms": 12000.0,
    }  # fmt: skip


def sglang_line(rate: float) -> dict:
    """SGLang bench_serving's appended JSONL line (random dataset): median TTFT and ITL only."""
    return {"backend": "sglang", "dataset_name": "random", "request_rate": rate, "total_input_tokens": 102400, "total_output_tokens": 51200,
            "total_output_tokens_retokenized": 51190, "mean_e2e_latency_ms": 5000.0, "median_e2e_latency_ms": 4900.0, "median_ttft_ms": 95.0,
            "median_itl_ms": 9.5, "output_throughput": 3000.0, "random_input_len": 1024, "random_output_len": 512, "random_range_ratio": 0.5,
            "duration": 17.0, "completed": 100}  # fmt: skip


def _write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture
def deploy(tmp_path) -> Path:
    return _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT))


def _import(tmp_path, *args) -> tuple[int, list]:
    out = tmp_path / "runs.csv"
    rc = main(["import", *map(str, args), "--out", str(out)])
    return rc, load_measurements(out) if out.exists() else []


def test_newer_summary_only_result_imports_with_supplied_lengths_and_round_trips(tmp_path, deploy, capsys):
    result = _write(tmp_path, "summary.json", newer_summary())
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--isl", 1024, "--osl", 1024, "--random-range-ratio", 0.8)
    assert rc == 0
    assert (row.ttft_ms, row.tpot_ms, row.ttft_statistic) == (120.5, 12.5, "mean over requests")
    assert (row.isl, row.osl, row.concurrency, row.protocol.num_prompts, row.protocol.request_rate) == (1024, 1024, 4, 40, math.inf)
    assert row.protocol.random_range_ratio == 0.8 and row.measured_date == "2026-01-05"
    assert row.agg.tp == 1 and row.agg.batch_size == 4 and row.agg.pp == 1
    assert "vllm/benchmarks/serve.py@" in row.protocol.client_citation
    fields = provenance_fields(row.provenance)
    assert "isl=1024 (--isl)" in fields["supplied"] and "random_range_ratio=0.8 (--random-range-ratio)" in fields["supplied"]
    assert (fields["mean_isl"], fields["mean_osl"]) == ("922", "921")  # summary-only: mean lengths from the totals
    assert row.statistics == Statistics("mean", 120.5, 110.0, 180.0, 12.5, 12.4, 14.0)  # every statistic kept, in its columns
    assert row.settings.origin == "engine default" and row.settings.step_token_budget == 8192  # TRT-LLM's documented defaults


def test_summary_only_without_lengths_takes_them_from_the_totals(tmp_path, deploy):
    result = _write(tmp_path, "summary.json", newer_summary())
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy)
    assert rc == 0 and (row.isl, row.osl) == (922, 921)  # no range ratio given: fixed lengths, L = mean
    assert "isl=922 (from the mean, total_*_tokens / completed" in provenance_fields(row.provenance)["derived"]
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--random-range-ratio", 0.8)
    assert (row.isl, row.osl) == (round(2 * 922 / 1.8), round(2 * 921 / 1.8))


def test_older_detailed_result_uses_the_clients_statistics_and_the_per_request_lengths(tmp_path, deploy):
    record = older_detailed()
    result = _write(tmp_path, "older.json", record)
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--statistic", "p99")
    assert rc == 0
    assert row.ttft_ms == pytest.approx(record["p99_ttft_ms"]) and row.tpot_ms == pytest.approx(record["p99_tpot_ms"])
    assert row.ttft_statistic == "p99 over requests" and "p99 over requests" in row.tpot_definition
    ok = [i for i, e in enumerate(record["errors"]) if not e]
    assert row.isl == max(record["input_lens"][i] for i in ok) and row.osl == max(record["output_lens"][i] for i in ok)
    assert row.concurrency == 16  # no max_concurrency, request_rate inf: every prompt in flight
    assert "benchmarks/benchmark_serving.py@" in row.protocol.client_citation
    fields = provenance_fields(row.provenance)
    assert "statistic=p99 (--statistic)" in fields["supplied"]
    assert float(fields["mean_isl"]) == pytest.approx(np.mean([record["input_lens"][i] for i in ok]), rel=1e-5)


def test_per_request_arrays_alone_give_the_clients_statistics(tmp_path, deploy):
    """Without the summary keys, the statistics come from ttfts (s) and itls: the same numbers the client computes."""
    record = older_detailed(40)
    stripped = {k: v for k, v in record.items() if not k.endswith("_ms")}
    deployment = load_deployment(deploy)
    for statistic in ("mean", "median", "p99"):
        (row,) = import_file(_write(tmp_path, "arrays.json", stripped), "auto", deployment, Supplied.of({"statistic": statistic}, {})).rows
        assert row.ttft_ms == pytest.approx(record[f"{statistic}_ttft_ms"]) and row.tpot_ms == pytest.approx(record[f"{statistic}_tpot_ms"])


def test_sglang_jsonl_lines_each_import_and_a_missing_statistic_is_one_line(tmp_path, deploy, capsys):
    result = _write(tmp_path, "sglang.jsonl", "\n".join(json.dumps(sglang_line(r)) for r in (4.0, 8.0)) + "\n")
    rc, rows = _import(tmp_path, result, "--deployment", deploy, "--statistic", "median")
    assert rc == 0 and [r.id for r in rows] == ["sglang#1", "sglang#2"]
    assert [r.protocol.request_rate for r in rows] == [4.0, 8.0]
    assert (rows[0].isl, rows[0].osl, rows[0].protocol.random_range_ratio) == (1024, 512, 0.5)  # the file's own lengths
    assert rows[0].ttft_ms == 95.0 and rows[0].tpot_ms == 9.5 and "inter-token latency" in rows[0].tpot_definition
    assert "bench_serving.py@" in rows[0].protocol.client_citation
    capsys.readouterr()
    rc, _ = _import(tmp_path, result, "--deployment", deploy)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no mean TTFT" in err[0] and "sglang.jsonl" in err[0]


def test_client_block_supplies_facts_and_flags_override_it(tmp_path):
    deploy = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | {"client": {"isl": 1000, "osl": 900, "num_warmups": 8, "ignore_eos": True}}))
    result = _write(tmp_path, "summary.json", newer_summary())
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--osl", 1024)
    assert rc == 0 and (row.isl, row.osl, row.protocol.ignore_eos) == (1000, 1024, True)
    fields = provenance_fields(row.provenance)
    assert "isl=1000 (client block)" in fields["supplied"] and "osl=1024 (--osl)" in fields["supplied"]
    assert row.protocol.num_warmups == 8 and row.protocol.client_seed is None  # no result format records the seed


def test_client_seed_comes_from_the_client_block_or_its_flag_for_a_client_whose_draws_are_repeated(tmp_path, capsys):
    """vLLM's benchmarks/benchmark_serving.py and SGLang bench_serving draw lengths as the replay repeats them from a
    seed; vllm bench serve draws otherwise: a seed supplied for it, or for a vLLM-family run drawing from int(r*L) = 0,
    is refused in one line."""
    deploy = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | {"client": {"isl": 1000, "osl": 900, "client_seed": 1}}))
    legacy = _write(tmp_path, "legacy.json", older_detailed())
    rc, (row,) = _import(tmp_path, legacy, "--deployment", deploy, "--random-range-ratio", 0.8)
    assert rc == 0 and row.protocol.client_seed == 1 and "client_seed=1 (client block)" in provenance_fields(row.provenance)["supplied"]
    rc, (row,) = _import(tmp_path, legacy, "--deployment", deploy, "--random-range-ratio", 0.8, "--client-seed", 0)
    assert rc == 0 and row.protocol.client_seed == 0
    sglang = _write(tmp_path, "s.jsonl", json.dumps(sglang_line(4.0) | {"random_range_ratio": 0.0}))
    rc, (row,) = _import(tmp_path, sglang, "--deployment", deploy, "--statistic", "median")
    assert rc == 0 and row.protocol.client_seed == 1  # its lower bound max(int(r*L), 1) is the replay's
    for result, flags, needle in (
        (_write(tmp_path, "summary.json", newer_summary()), [], "vLLM vllm bench serve draws its lengths by a rule the replay does not repeat"),
        (legacy, ["--random-range-ratio", 0.0005], "draws lengths from int(r*L) = 0 at r = 0.0005"),
    ):
        capsys.readouterr()
        rc, _ = _import(tmp_path, result, "--deployment", deploy, *flags)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "client_seed 1 supplied, but" in err[0] and needle in err[0], err
    capsys.readouterr()
    rc, _ = _import(tmp_path, legacy, "--deployment", deploy, "--client-seed", 2**32)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--client-seed must be an integer within [0, 2**32), got 4294967296" in err[0]


def test_engine_block_maps_launch_settings_with_source_origin(tmp_path):
    engine = {"max_num_tokens": 4096, "max_batch_size": 64, "chunked_prefill": True, "kv_cache_free_memory_fraction": 0.85,
              "kv_cache_dtype": "fp8", "overlap_scheduler": False, "num_nextn_predict_layers": 0, "cuda_graph_batch_sizes": [1, 2]}  # fmt: skip
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | {"engine": engine}))
    s = load_deployment(path).settings
    assert (s.step_token_budget, s.max_num_seqs, s.chunked_prefill, s.kv_free_memory_fraction) == (4096, 64, True, 0.85)
    assert (s.kv_cache_dtype, s.overlap_scheduler, s.nextn) == ("fp8", False, 0)
    assert s.origin == "source" and s.citation == f"deployment file {path}"
    vllm = parse_deployment(DEPLOYMENT | {"backend": "vllm", "engine": {"max_num_batched_tokens": 2048}}, "d.yaml").settings
    assert (vllm.step_token_budget, vllm.max_num_seqs, vllm.overlap_scheduler) == (2048, 1024, True)  # the rest stays vLLM 1.0.0's default on an H200
    assert vllm.gpu_memory_utilization == 0.9  # vLLM's default
    launched = parse_deployment(DEPLOYMENT | {"backend": "vllm", "engine": {"gpu_memory_utilization": 1}}, "d.yaml").settings
    assert launched.gpu_memory_utilization == 1.0 and isinstance(launched.gpu_memory_utilization, float)
    for backend, key, owner in (("trtllm", "gpu_memory_utilization", "vllm"), ("vllm", "kv_cache_free_memory_fraction", "trtllm")):
        with pytest.raises(InvalidInputError, match=f"engine: .* is {owner}'s KV-cache setting; backend '{backend}' has none"):
            parse_deployment(DEPLOYMENT | {"backend": backend, "engine": {key: 0.9}}, "d.yaml")
    assert parse_deployment(DEPLOYMENT | {"engine": {"moe_backend": "TRTLLM"}}, "d.yaml").settings.moe_backend == "TRTLLM"
    with pytest.raises(InvalidInputError, match="engine: moe_backend is trtllm's MoE backend; backend 'vllm' has none"):
        parse_deployment(DEPLOYMENT | {"backend": "vllm", "engine": {"moe_backend": "TRTLLM"}}, "d.yaml")
    with pytest.raises(InvalidInputError, match="engine: moe_backend must be one of .* got 'trtllm-gen'"):
        parse_deployment(DEPLOYMENT | {"engine": {"moe_backend": "trtllm-gen"}}, "d.yaml")
    vllm = DEPLOYMENT | {"backend": "vllm"}
    assert parse_deployment(vllm | {"engine": {"max_cudagraph_capture_size": 2048}}, "d.yaml").settings.cudagraph_max_tokens == 2048
    with pytest.raises(InvalidInputError, match="engine: cudagraph_max_tokens is vllm's CUDA-graph capture size; backend 'trtllm' has none"):
        parse_deployment(DEPLOYMENT | {"engine": {"max_cudagraph_capture_size": 2048}}, "d.yaml")
    for bad in (0, -1, 2.5, True, "big"):
        with pytest.raises(InvalidInputError, match=f"engine: cudagraph_max_tokens must be .*, got {bad!r}"):
            parse_deployment(vllm | {"engine": {"max_cudagraph_capture_size": bad}}, "d.yaml")
    old = parse_deployment(DEPLOYMENT | {"backend": "vllm", "backend_version": "0.13.0"}, "d.yaml").settings
    assert not old.overlap_scheduler  # async scheduling is the default from vLLM 0.14.0


def test_disagg_deployment_and_the_template_parse():
    d = parse_deployment(
        {k: v for k, v in DEPLOYMENT.items() if k != "tp"} | {"mode": "disagg", "prefill": {"workers": 2, "tp": 2}, "decode": {"workers": 1, "tp": 4}}, "d.yaml"
    )
    assert (d.prefill.workers, d.prefill.tp, d.decode.workers, d.decode.tp, d.agg) == (2, 2, 1, 4, None)
    t = parse_deployment(yaml.safe_load(TEMPLATE), "template")
    assert (t.model, t.backend, t.mode, t.agg.tp) == ("Qwen/Qwen3-32B", "trtllm", "agg", 1)
    with pytest.raises(InvalidInputError, match="decode"):
        parse_deployment({k: v for k, v in DEPLOYMENT.items() if k != "tp"} | {"mode": "disagg", "prefill": {"workers": 1, "tp": 2}}, "d.yaml")


def test_write_template_prints_a_deployment_file(capsys):
    assert main(["import", "--write-template"]) == 0
    assert parse_deployment(yaml.safe_load(capsys.readouterr().out), "stdout").system == "h200_sxm"


def test_imported_row_is_predicted_by_closed_loop_with_engine_defaults(tmp_path, deploy):
    """The report's predict path on the loaded rows: a row with only the required facts replays under its client protocol."""
    result = _write(tmp_path, "summary.json", newer_summary())
    rc, rows = _import(tmp_path, result, "--deployment", deploy, "--isl", 1024, "--osl", 1024, "--random-range-ratio", 1.0)
    (mapped,) = map_all(rows)
    assert mapped.reason is None
    r = predict(mapped, "closed_loop")
    assert r.covered, r.reason
    assert r.ttft_pred_ms > 0 and r.tpot_pred_ms > 0
    assert mapped.measurement.settings.origin == "engine default"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("id,ttft\n1,2\n", "unknown format"),
        ({"foo": 1}, "unknown format"),
        ({"completed": 10, "total_input_tokens": 100, "total_output_tokens": 100, "num_prompts": 10}, "no latency fields"),
    ],
)
def test_bad_result_is_one_line_naming_it_exit_2(tmp_path, deploy, capsys, content, needle):
    result = _write(tmp_path, "bad.json", content)
    rc, rows = _import(tmp_path, result, "--deployment", deploy)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and rows == [] and len(err) == 1
    assert needle in err[0] and "bad.json" in err[0]
    assert not (tmp_path / "runs.csv").exists()


@pytest.mark.parametrize(
    ("override", "error", "needle"),
    [({"model": "nobody/NoSuchModel"}, UnknownModelError, "nobody/NoSuchModel"), ({"system": "tpu_v9"}, UnknownSystemError, "tpu_v9"),
     ({"backend": "tgi"}, UnknownBackendError, "tgi")],
)  # fmt: skip
def test_bad_deployment_is_one_line_naming_it_exit_2(tmp_path, capsys, override, error, needle):
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | override))
    with pytest.raises(error, match=needle):
        load_deployment(path)
    rc, _ = _import(tmp_path, _write(tmp_path, "summary.json", newer_summary()), "--deployment", path)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0] and "deploy.yaml" in err[0]


def test_several_files_one_bad_imports_the_others_and_lists_the_bad_one(tmp_path, deploy, capsys):
    good = _write(tmp_path, "good.json", newer_summary())
    older = _write(tmp_path, "older.json", older_detailed())
    bad = _write(tmp_path, "nolatency.json", {"completed": 3, "total_input_tokens": 30, "total_output_tokens": 30})
    rc, rows = _import(tmp_path, good, bad, older, "--deployment", deploy)
    err = capsys.readouterr().err
    assert rc == 2 and [r.id for r in rows] == ["good", "older"]
    assert "not imported: " in err and "nolatency.json: no latency fields" in err


def test_a_thousand_per_request_records_import_as_one_row(tmp_path, deploy):
    """The speed of this import is measured by benchmarks/bench_import.py, not asserted here."""
    record = older_detailed(1000)
    path = _write(tmp_path, "big.json", record)
    (row,) = import_file(path, "auto", load_deployment(deploy), Supplied.of({}, {})).rows
    assert row.protocol.num_prompts == 1000


def test_served_model_name_differing_from_the_deployment_is_recorded_with_a_warning(tmp_path, deploy, capsys):
    result = _write(tmp_path, "served.json", newer_summary() | {"model_id": "qwen32b-prod"})
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--format", "benchmark_serving")
    assert rc == 0 and row.model == "Qwen/Qwen3-32B"
    assert provenance_fields(row.provenance)["result_model"] == "qwen32b-prod"
    assert "warning: " in capsys.readouterr().err


def test_missing_deployment_or_out_is_one_line_exit_2(tmp_path, capsys):
    result = _write(tmp_path, "summary.json", newer_summary())
    assert main(["import", str(result), "--out", str(tmp_path / "runs.csv")]) == 2
    assert main(["import", str(tmp_path / "absent.json"), "--deployment", str(_write(tmp_path, "d.yaml", yaml.safe_dump(DEPLOYMENT))),
                 "--out", str(tmp_path / "runs.csv")]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--deployment" in err[0] and "absent.json: no such file" in err[1]


def test_report_on_the_imported_file_predicts_every_row_by_closed_loop(tmp_path, deploy):
    """The loop's last step: `report --measurements runs.csv` prices the imported rows (engine defaults, supplied protocol)."""
    import pandas as pd

    results = [_write(tmp_path, "older.json", older_detailed()), _write(tmp_path, "summary.json", newer_summary())]
    rc, rows = _import(tmp_path, *results, "--deployment", deploy, "--random-range-ratio", 1.0)
    assert rc == 0 and len(rows) == 2
    points = tmp_path / "points.csv"
    argv = ["report", "--measurements", str(tmp_path / "runs.csv"), "--limit", "5", "--workers", "1", "--out", str(tmp_path / "acc.html")]
    assert main([*argv, "--points", str(points), "--methods", "closed_loop", "uncached"]) == 0
    table = pd.read_csv(points)
    assert set(table["id"]) == {"older", "summary"} and table["covered"].all(), table[["id", "method", "reason"]]
    assert (table["engine_settings"] == "engine default").all()


def test_disagg_import_takes_batch_sizes_from_the_engine_defaults_and_is_predicted(tmp_path):
    doc = {k: v for k, v in DEPLOYMENT.items() if k != "tp"} | {"backend": "sglang", "backend_version": "0.5.5", "mode": "disagg",
                                                                 "prefill": {"workers": 1, "tp": 2}, "decode": {"workers": 2, "tp": 2}}  # fmt: skip
    deploy = _write(tmp_path, "disagg.yaml", yaml.safe_dump(doc | {"client": {"isl": 1024, "osl": 1024, "random_range_ratio": 1.0}}))
    rc, (row,) = _import(tmp_path, _write(tmp_path, "summary.json", newer_summary(concurrency=8, prompts=80)), "--deployment", deploy)
    assert rc == 0 and row.mode == "disagg" and row.agg is None
    assert row.settings.step_token_budget == 8192 and row.prefill.batch_size == 8  # SGLang's default chunk on an H200: whole 1024-token prompts
    assert row.decode.batch_size == 4  # SGLang has no running cap by default: 8 clients over 2 decode workers
    (mapped,) = map_all([row])
    assert mapped.reason is None and predict(mapped, "closed_loop").covered


def test_imported_rows_round_trip_through_load_measurements_unchanged(tmp_path, deploy):
    engine = {"max_num_tokens": 4096, "kv_cache_free_memory_fraction": 0.9}
    deploy = _write(tmp_path, "engine.yaml", yaml.safe_dump(DEPLOYMENT | {"engine": engine}))
    deployment, supplied = load_deployment(deploy), Supplied.of({"random_range_ratio": 0.8}, {})
    paths = [_write(tmp_path, "older.json", older_detailed()), _write(tmp_path, "summary.json", newer_summary())]
    expected = [row for p in paths for row in import_file(p, "auto", deployment, supplied).rows]
    rc, loaded = _import(tmp_path, *paths, "--deployment", deploy, "--random-range-ratio", 0.8)
    assert rc == 0 and loaded == expected
    assert [(r.settings.origin, r.settings.citation) for r in loaded] == [("source", f"deployment file {deploy}")] * 2


# Bad input: one line naming the bad value, exit 2, no traceback, nothing written; in a batch the others import.

FIXTURES = Path(__file__).parent / "fixtures" / "import"
SUMMARY = {"completed": 2, "total_input_tokens": 2048, "total_output_tokens": 256, "mean_ttft_ms": 100, "mean_tpot_ms": 10}
DISAGG = {k: v for k, v in DEPLOYMENT.items() if k != "tp"} | {"mode": "disagg", "prefill": {"workers": 1, "tp": 2}, "decode": {"workers": 1, "tp": 2}}


def _refused(tmp_path, capsys, result: Path, *args) -> str:
    """The one stderr line of an import that must fail with exit 2 and write nothing."""
    capsys.readouterr()
    rc, rows = _import(tmp_path, result, *args)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and rows == [] and len(err) == 1, err
    assert "Traceback" not in err[0] and result.name in err[0]
    assert not (tmp_path / "runs.csv").exists()
    return err[0]


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, -5, 1024.5, "1024"])
def test_a_bad_per_request_length_is_refused_and_the_other_files_import(tmp_path, deploy, capsys, bad):
    arrays = {"input_lens": [1024, bad], "output_lens": [128, 128], "ttfts": [0.1, 0.1], "itls": [[0.01], [0.01]]}
    result = _write(tmp_path, "a.json", SUMMARY | arrays)
    assert "a.json: input_lens[1] must be a whole number >= 0, got " in _refused(tmp_path, capsys, result, "--deployment", deploy)
    rc, rows = _import(tmp_path, FIXTURES / "vllm_bench_serve.json", result, "--deployment", deploy)
    err = capsys.readouterr().err
    assert rc == 2 and [r.id for r in rows] == ["vllm_bench_serve"]
    assert "not imported: " in err and "a.json: input_lens[1]" in err and "Traceback" not in err


def test_bad_per_request_latencies_are_refused(tmp_path, deploy, capsys):
    arrays = {"input_lens": [1024, 1024], "output_lens": [128, 128], "ttfts": [0.1, 0.1], "itls": [[0.01], [0.01]]}
    record = {k: v for k, v in SUMMARY.items() if not k.endswith("_ms")} | arrays
    for key, value, needle in (("ttfts", [0.1, math.nan], "ttfts[1] must be a finite number >= 0, got nan"),
                               ("itls", [[0.01], [math.inf]], "itls[1] must be a list of finite gaps >= 0"),
                               ("ttfts", [1e306, 1e306], "mean TTFT inf ms")):  # fmt: skip
        assert needle in _refused(tmp_path, capsys, _write(tmp_path, "lat.json", record | {key: value}), "--deployment", deploy)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"total_input_tokens": "inf"}, "total_input_tokens must be a finite number >= 0, got 'inf'"),
        ({"total_input_tokens": -2048}, "total_input_tokens must be a finite number >= 0, got -2048"),
        ({"total_output_tokens": math.inf}, "total_output_tokens must be a finite number >= 0, got inf"),
        ({"completed": 1e-300}, "completed must be a whole number >= 0, got 1e-300"),
        ({"total_input_tokens": 1e300}, "isl from the mean, total_*_tokens / completed, random_range_ratio 1.0, is 5e+299 tokens, not within [1, 2147483647]"),
        ({"max_concurrency": 0}, "max_concurrency must be a positive integer, got 0"),
        ({"max_concurrency": -4, "request_rate": "inf", "num_prompts": 8}, "max_concurrency must be a positive integer, got -4"),
        ({"max_concurrency": 8.5, "request_rate": "inf", "num_prompts": 8}, "max_concurrency must be a positive integer, got 8.5"),
        ({"request_rate": -3}, "request_rate must be a positive number of requests/s or inf, got -3"),
        ({"request_rate": math.nan}, "request_rate must be a positive number of requests/s or inf, got nan"),
        ({"num_prompts": 0}, "num_prompts must be a positive integer, got 0"),
        ({"num_prompts": 2**40}, "num_prompts must be at most 2147483647, got 1099511627776"),
    ],
)
def test_impossible_facts_of_the_result_are_refused_naming_field_and_value(tmp_path, deploy, capsys, fields, needle):
    result = _write(tmp_path, "d.json", SUMMARY | fields)
    assert needle in _refused(tmp_path, capsys, result, "--deployment", deploy)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"random_range_ratio": -1, "random_input_len": None}, "random_range_ratio must be in (0, 1], got -1"),
        ({"random_range_ratio": 5}, "random_range_ratio must be in (0, 1], got 5"),
        ({"random_range_ratio": math.inf}, "random_range_ratio must be in (0, 1], got inf"),
        ({"random_input_len": 0}, "random_input_len must be a positive integer, got 0"),
        ({"random_output_len": 1e300}, "random_output_len must be a positive integer, got 1e+300"),
    ],
)
def test_impossible_sglang_length_flags_are_refused(tmp_path, deploy, capsys, fields, needle):
    result = _write(tmp_path, "s.jsonl", json.dumps({k: v for k, v in (sglang_line(4.0) | fields).items() if v is not None}))
    assert needle in _refused(tmp_path, capsys, result, "--deployment", deploy, "--statistic", "median")


def test_zero_random_input_len_with_a_disagg_deployment_is_refused(tmp_path, capsys):
    deploy = _write(tmp_path, "disagg.yaml", yaml.safe_dump(DISAGG))
    result = _write(tmp_path, "s.jsonl", json.dumps(sglang_line(4.0) | {"random_input_len": 0}))
    assert "random_input_len must be a positive integer, got 0" in _refused(tmp_path, capsys, result, "--deployment", deploy, "--statistic", "median")


def test_sglang_default_range_ratio_zero_is_recorded_as_the_replays_ratio(tmp_path, deploy):
    """SGLang's default r = 0 draws lengths on [1, L]: recorded as r = 1/max(isl, osl), as the published SGLang rows are."""
    result = _write(tmp_path, "s.jsonl", json.dumps(sglang_line(4.0) | {"random_range_ratio": 0.0}))
    rc, (row,) = _import(tmp_path, result, "--deployment", deploy, "--statistic", "median")
    assert rc == 0 and row.protocol.random_range_ratio == 1 / 1024
    assert "random_range_ratio=0.0009765625 (SGLang's 0" in provenance_fields(row.provenance)["derived"]


def test_one_bad_line_of_a_jsonl_result_is_listed_and_the_other_lines_import(tmp_path, deploy, capsys):
    lines = [sglang_line(4.0), sglang_line(8.0) | {"random_input_len": -1}, sglang_line(16.0)]
    result = _write(tmp_path, "s.jsonl", "\n".join(map(json.dumps, lines)))
    rc, rows = _import(tmp_path, result, "--deployment", deploy, "--statistic", "median")
    err = capsys.readouterr().err
    assert rc == 2 and [r.id for r in rows] == ["s#1", "s#3"]
    assert "s.jsonl run 2: random_input_len must be a positive integer, got -1" in err


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        (json.dumps(sglang_line(8.0))[:100], "s.jsonl line 3: not JSON (Unterminated string"),  # a benchmark killed mid-append
        ("[1, 2]", "s.jsonl line 3: not a JSON object, got [1, 2]"),
    ],
    ids=["cut-short", "a-list"],
)
def test_a_jsonl_line_holding_no_object_is_listed_by_number_and_the_other_lines_import(tmp_path, deploy, capsys, bad, needle):
    """Before: the whole file was refused as "unknown format", its good runs lost."""
    result = _write(tmp_path, "s.jsonl", "\n".join([json.dumps(sglang_line(4.0)), "", bad, json.dumps(sglang_line(16.0))]))
    rc, rows = _import(tmp_path, result, "--deployment", deploy, "--statistic", "median")
    err = capsys.readouterr().err
    assert rc == 2 and [r.id for r in rows] == ["s#1", "s#3"] and f"not imported: {tmp_path / needle}" in err


def test_a_jsonl_first_line_past_float_range_is_listed_by_number_and_the_other_lines_import(tmp_path, deploy, capsys):
    """Before: the whole file was refused when its first line (not a later one) held an integer past float range."""
    first = json.dumps(sglang_line(4.0) | {"mean_ttft_ms": "N"}).replace('"N"', "9" * 401)
    result = _write(tmp_path, "s.jsonl", "\n".join([first, json.dumps(sglang_line(16.0))]))
    rc, rows = _import(tmp_path, result, "--deployment", deploy, "--statistic", "median")
    assert rc == 2 and [r.id for r in rows] == ["s#2"] and f"{tmp_path / 's.jsonl'} line 1" in capsys.readouterr().err


def _export(name: str, **changes) -> dict:
    """A profile-export fixture with top-level blocks replaced."""
    return json.loads((FIXTURES / name).read_text()) | changes


@pytest.mark.parametrize("name", ["profile_export_aiperf.json", "profile_export_genai_perf.json"])
@pytest.mark.parametrize(
    ("block", "change", "needle"),
    [
        ("input_sequence_length", {"max": math.inf}, "input_sequence_length max must be a finite number >= 0, got inf"),
        ("output_sequence_length", {"avg": -128}, "output_sequence_length avg must be a finite number >= 0, got -128"),
        ("time_to_first_token", {"unit": ["ms"]}, "time_to_first_token unit ['ms'] is not a time unit"),
        ("inter_token_latency", {"unit": {"ms": 1}}, "inter_token_latency unit {'ms': 1} is not a time unit"),
    ],
)
def test_bad_profile_export_blocks_are_refused(tmp_path, deploy, capsys, name, block, change, needle):
    doc = _export(name)
    result = _write(tmp_path, name, doc | {block: doc[block] | change})
    assert needle in _refused(tmp_path, capsys, result, "--deployment", deploy, "--concurrency", 4)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("mean_ttft_ms", math.nan, "vllm.json: mean TTFT nan ms is not a finite latency"),
        ("p99_tpot_ms", math.inf, "vllm.json: p99 TPOT inf ms is not a finite latency"),
        ("median_tpot_ms", "fast", "vllm.json: median_tpot_ms 'fast' is not a number"),
        ("mean_ttft_ms", 1e-320, "vllm.json: mean TTFT 1e-320 ms is below a clock's nanosecond, not a measured latency"),
        ("median_ttft_ms", -1, "vllm.json: median TTFT -1.0 ms is not a latency (> 0 ms; did every request fail?)"),  # the
        ("p99_tpot_ms", 0, "vllm.json: p99 TPOT 0.0 ms is not a latency (> 0 ms; did every request fail?)"),  # report refused it later
    ],
)
def test_a_benchmark_serving_statistic_that_is_not_a_latency_is_named(tmp_path, deploy, capsys, key, value, needle):
    """Before: a NaN or a string statistic was taken for a missing one ('no mean TTFT')."""
    doc = json.loads((FIXTURES / "vllm_bench_serve.json").read_text()) | {key: value}
    result = _write(tmp_path, "vllm.json", json.dumps(doc))
    assert needle in _refused(tmp_path, capsys, result, "--deployment", deploy)


@pytest.mark.parametrize("cell", ["inf", "nan", "-inf"])
def test_a_non_finite_aiperf_csv_cell_is_refused(tmp_path, deploy, capsys, cell):
    text = (FIXTURES / "profile_export_aiperf.csv").read_text().replace("Request Count,40", f"Request Count,{cell}")
    result = _write(tmp_path, "aiperf.csv", text)
    assert f"aiperf.csv line 13: {cell!r} is not a finite number" in _refused(tmp_path, capsys, result, "--deployment", deploy, "--concurrency", 4)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ((FIXTURES / "profile_export_aiperf.csv").read_text().replace("Request Count,40", f"Request Count,{'1' * 131_073}"),
         "aiperf.csv line 13: field larger than field limit (131072)"),
        (f"Metric,{'a' * 131_073}\n", "aiperf.csv: unknown format"),  # the header check
    ],
    ids=["cell", "header"],
)  # fmt: skip
def test_an_aiperf_csv_cell_past_the_csv_field_limit_is_refused(tmp_path, deploy, capsys, text, needle):
    """Before: _csv.Error: field larger than field limit."""
    assert needle in _refused(tmp_path, capsys, _write(tmp_path, "aiperf.csv", text), "--deployment", deploy, "--concurrency", 4)


def test_a_long_bad_aiperf_csv_cell_is_shown_cut(tmp_path, deploy, capsys):
    """A refused cell of 100,000 characters is named by its ends, so the error stays one short line."""
    text = (FIXTURES / "profile_export_aiperf.csv").read_text().replace("Request Count,40", f"Request Count,{'x' * 100_000}")
    reason = _refused(tmp_path, capsys, _write(tmp_path, "aiperf.csv", text), "--deployment", deploy, "--concurrency", 4)
    assert "aiperf.csv line 13: 'xxx" in reason and "...xxx" in reason and len(reason) < 300


@pytest.mark.parametrize("digits", [401, 5000])
def test_a_json_integer_past_float_range_refuses_the_file(tmp_path, deploy, capsys, digits):
    """Before: an OverflowError (math.isnan of a 401-digit integer) or a ValueError past Python's 4300-digit limit."""
    text = json.dumps(json.loads((FIXTURES / "vllm_bench_serve.json").read_text()) | {"mean_ttft_ms": "N"}).replace('"N"', "9" * digits)
    needle = f"vllm.json: cannot read its JSON: an integer of {digits} digits is past float range"
    assert needle in _refused(tmp_path, capsys, _write(tmp_path, "vllm.json", text), "--deployment", deploy)


def test_json_nested_past_the_recursion_limit_refuses_the_file(tmp_path, deploy, capsys):
    result = _write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    assert "deep.json: cannot read its JSON: maximum recursion depth exceeded" in _refused(tmp_path, capsys, result, "--deployment", deploy)


def test_bad_aiperf_loadgen_facts_are_refused(tmp_path, deploy, capsys):
    doc = _export("profile_export_aiperf.json")
    for loadgen, needle in (({"concurrency": 0}, "input_config.loadgen.concurrency must be a positive integer, got 0"),
                            ({"request_rate": -1.0}, "input_config.loadgen.request_rate must be a positive number"),
                            ({"request_count": 2.5}, "input_config.loadgen.request_count must be a positive integer, got 2.5")):  # fmt: skip
        config = doc["input_config"] | {"loadgen": doc["input_config"]["loadgen"] | loadgen}
        result = _write(tmp_path, "profile_export_aiperf.json", doc | {"input_config": config})
        assert needle in _refused(tmp_path, capsys, result, "--deployment", deploy)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"engine": {"chunked_prefill": "false"}}, "engine: chunked_prefill must be true or false (a YAML boolean), got 'false'"),
        ({"engine": {"enable_chunked_prefill": "no"}}, "engine: enable_chunked_prefill must be true or false (a YAML boolean), got 'no'"),
        ({"engine": {"overlap_scheduler": 1}}, "engine: overlap_scheduler must be true or false (a YAML boolean), got 1"),
        ({"backend_version": 0.10}, "backend_version must be a quoted string, got 0.1 (a number); write it in quotes"),
        ({"backend_version": [1, 0]}, "backend_version must be a quoted string, got [1, 0] (a list); write it in quotes"),
        ({"gemm_quant": "bogus"}, "unknown gemm quant mode 'bogus'"),
        ({"moe_quant": "fp9"}, "unknown moe quant mode 'fp9'"),
        ({"model": "deepseek-ai/DeepSeek-V3", "moe_quant": "fp9"}, "unknown moe quant mode 'fp9'"),  # no native builder
        ({"image": ["a", "b"]}, "image must be a text value, got ['a', 'b']"),  # was written as the text "['a', 'b']"
        ({"precision": {"fp8": True}}, "precision must be a text value, got {'fp8': True}"),
    ],
)
def test_bad_deployment_values_are_refused_when_the_file_is_read(tmp_path, capsys, change, needle):
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | change))
    with pytest.raises(InvalidInputError, match="deploy.yaml") as exc:
        load_deployment(path)
    assert needle in str(exc.value)
    assert needle in _refused(tmp_path, capsys, path, "--deployment", path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("tp: 2\ntp: 4\n", "key 'tp' is given twice (lines 6 and 7)"),
        ("tp: 2\nclient:\n  isl: 1024\nclient:\n  osl: 128\n", "key 'client' is given twice (lines 7 and 9)"),
        ("tp: 2\nengine: {max_num_tokens: 2048, max_num_tokens: 4096}\n", "key 'max_num_tokens' is given twice (lines 7 and 7)"),
        ("tp: 010\n", "'010' (line 6) reads as 8 in YAML 1.1: write the decimal number"),
        ("tp: 2\nengine: {max_num_tokens: 1:30}\n", "'1:30' (line 7) reads as 90 in YAML 1.1: write the decimal number"),
        ("tp: 2\nengine: {kv_cache_free_memory_fraction: 0:0.5}\n", "'0:0.5' (line 7) reads as 0.5 in YAML 1.1: write the decimal number"),
    ],
    ids=["tp", "client-block", "engine-setting", "octal", "base-60", "base-60-float"],
)
def test_a_deployment_form_read_otherwise_than_written_is_refused_naming_it(tmp_path, capsys, text, needle):
    """Before: YAML's last value won silently (tp 4, or the second client: block alone), and yaml.safe_load read
    tp: 010 as 8 (octal) and 1:30 as 90 (base 60): silently another deployment."""
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump({k: v for k, v in DEPLOYMENT.items() if k != "tp"}) + text)
    with pytest.raises(InvalidInputError, match="deploy.yaml") as exc:
        load_deployment(path)
    assert needle in str(exc.value)
    assert needle in _refused(tmp_path, capsys, path, "--deployment", path)


def test_a_deployment_integer_written_in_decimal_or_hex_reads_as_written(tmp_path):
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump({k: v for k, v in DEPLOYMENT.items() if k != "tp"}) + "tp: 0x2\n")
    plain = load_deployment(_write(tmp_path, "plain.yaml", yaml.safe_dump(DEPLOYMENT | {"tp": 2})))
    assert load_deployment(path) == dataclasses.replace(plain, path=str(path))


def test_a_request_rate_flag_of_minus_inf_is_refused_by_name(tmp_path, deploy, capsys):
    """Before: argparse took -inf for a flag ("--request-rate: expected one argument")."""
    rc, rows = _import(tmp_path, FIXTURES / "vllm_bench_serve.json", "--deployment", deploy, "--request-rate", "-inf")
    assert rc == 2 and rows == [] and capsys.readouterr().err == "error: --request-rate must be a positive number of requests/s or inf, got -inf\n"


def test_a_deployment_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "deploy.yaml"
    path.write_bytes(yaml.safe_dump(DEPLOYMENT).encode() + b"image: caf\xe9\n")  # a Latin-1 byte
    with pytest.raises(InvalidInputError, match=r"deploy.yaml: not UTF-8 text \(byte 0xe9 at offset \d+\)"):
        load_deployment(path)
    assert "not UTF-8" in _refused(tmp_path, capsys, path, "--deployment", path)


def test_deployment_booleans_and_quant_modes_that_are_right_still_load():
    d = parse_deployment(
        DEPLOYMENT | {"gemm_quant": "fp8_block", "moe_quant": "fp8", "engine": {"chunked_prefill": False, "overlap_scheduler": True}}, "d.yaml"
    )
    assert (d.gemm_quant, d.moe_quant, d.settings.chunked_prefill, d.settings.overlap_scheduler) == ("fp8_block", "fp8", False, True)


@pytest.mark.parametrize(
    ("name", "config", "needle"),
    [
        (
            "profile_export_genai_perf.json",
            {"perf_analyzer": {"stimulus": {"concurrency": 0}}},
            "perf_analyzer.stimulus.concurrency must be a positive integer, got 0",
        ),
        (
            "profile_export_genai_perf.json",
            {"input": {"synthetic_tokens": {"mean": 0.5, "stddev": 0}}},
            "input.synthetic_tokens.mean must be a positive integer",
        ),
        ("profile_export_genai_perf_flat.json", {"request_count": -2}, "input_config.request_count must be a positive integer, got -2"),
        ("profile_export_genai_perf_flat.json", {"output_tokens_stddev": math.nan}, "input_config.output_tokens_stddev must be a finite number >= 0, got nan"),
    ],
)
def test_bad_genai_perf_input_config_facts_are_refused(tmp_path, deploy, capsys, name, config, needle):
    doc = _export(name)
    merged = doc["input_config"] | {k: doc["input_config"][k] | v if isinstance(v, dict) else v for k, v in config.items()}
    assert needle in _refused(tmp_path, capsys, _write(tmp_path, name, doc | {"input_config": merged}), "--deployment", deploy)


@pytest.mark.parametrize("clash", ["deployment", "result"])
def test_import_out_may_not_overwrite_an_input(tmp_path, capsys, clash):
    """import --out naming its deployment file or a result file would replace it with the CSV: exit 2, the input kept."""
    result = _write(tmp_path, "r.json", (FIXTURES / "vllm_bench_serve.json").read_text())
    deploy = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT))
    out = deploy if clash == "deployment" else result
    before = out.read_text()
    assert main(["import", str(result), "--deployment", str(deploy), "--out", str(out)]) == 2
    assert "the import would overwrite it" in capsys.readouterr().err and out.read_text() == before


def test_a_deployment_size_beyond_the_arithmetic_is_refused(tmp_path):
    path = _write(tmp_path, "deploy.yaml", yaml.safe_dump(DEPLOYMENT | {"tp": 2**80}))
    with pytest.raises(InvalidInputError, match=rf"tp must be an integer within \[1, 2147483647\], got {2**80}"):
        load_deployment(path)


def test_a_result_file_with_a_byte_order_mark_imports(tmp_path):
    """A result saved with a UTF-8 byte-order mark (as some editors and spreadsheets write) reads as its JSON."""
    result = tmp_path / "bom.json"
    result.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "vllm_bench_serve.json").read_bytes())
    out = tmp_path / "runs.csv"
    assert main(["import", str(result), "--deployment", str(FIXTURES / "deploy.yaml"), "--out", str(out)]) == 0
    assert len(load_measurements(out)) == 1
