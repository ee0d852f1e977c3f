"""Every result format from its fixture to the report: tests/fixtures/import holds one small result of
each format, written from the clients' definitions (the keys and units each importer cites), never
copied from a run; deploy.yaml is the deployment they describe. Expected values are read from the
fixtures themselves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from estimator.cli import main
from estimator.errors import InvalidInputError
from estimator.report import METHOD_NAMES
from measurements.importers.deployment import load_deployment
from measurements.importers.formats import Format, format_of, import_file, read_document, unique_ids
from measurements.importers.result import Supplied
from measurements.loaders import load_measurements, provenance_fields, write_measurements

FIXTURES = Path(__file__).parent / "fixtures" / "import"
DEPLOY = FIXTURES / "deploy.yaml"
RAW = sorted(FIXTURES.glob("*.json")) + [FIXTURES / "sglang_bench_serving.jsonl"]  # what the one-command report reads
FORMATS = {
    "vllm_benchmark_serving.json": (Format.BENCHMARK_SERVING, "vllm-legacy", "vllm-project/vllm benchmarks/benchmark_serving.py@8668d7c0"),
    "vllm_bench_serve.json": (Format.BENCHMARK_SERVING, "vllm-bench-serve", "vllm-project/vllm vllm/benchmarks/serve.py@def9ce85"),
    "sglang_bench_serving.jsonl": (Format.BENCHMARK_SERVING, "sglang", "sgl-project/sglang python/sglang/bench_serving.py@50a61368"),
    "trtllm_benchmark_serving.json": (Format.BENCHMARK_SERVING, "trtllm", "NVIDIA/TensorRT-LLM tensorrt_llm/serve/scripts/benchmark_serving.py@f61d71d9"),
    "inferencex_benchmark_serving.json": (Format.BENCHMARK_SERVING, "inferencex", "SemiAnalysisAI/InferenceX utils/bench_serving/benchmark_serving.py@8b4dcfae"),
    "profile_export_aiperf.json": (Format.AIPERF, "aiperf", "ai-dynamo/aiperf aiperf/exporters/json_exporter.py@db4f6397"),
    "profile_export_aiperf.csv": (Format.AIPERF_CSV, "aiperf", "ai-dynamo/aiperf aiperf/exporters/csv_exporter.py@db4f6397"),
    "profile_export_genai_perf.json": (Format.GENAI_PERF, "genai-perf (nested input_config)", "triton-inference-server/perf_analyzer genai-perf/genai_perf/export_data/json_exporter.py@263c5f6e"),
    "profile_export_genai_perf_flat.json": (Format.GENAI_PERF, "genai-perf (flat input_config)", "triton-inference-server/perf_analyzer genai-perf/genai_perf/export_data/json_exporter.py@bf8c950f"),
}  # fmt: skip


def _doc(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _rows(path: Path, **flags):
    deployment = load_deployment(DEPLOY)
    imported = import_file(path, "auto", deployment, Supplied.of(flags, deployment.client))
    assert imported.bad == (), imported.bad
    return list(imported.rows)


def _write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _stats(block: dict) -> tuple[float, float, float]:
    return block["avg"], block["p50"], block["p99"]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_fixture_is_read_as_its_format_and_cites_its_client(name):
    fmt, client, citation = FORMATS[name]
    assert format_of(read_document(FIXTURES / name), "auto") is fmt
    rows = _rows(FIXTURES / name, concurrency=4)  # the CSV keeps no concurrency; every other fixture states its own
    for row in rows:
        assert row.protocol.client_citation.startswith(citation)  # repository, path and commit
        assert provenance_fields(row.provenance)["client"] == client
        assert (row.source, row.model, row.engine, row.agg.tp) == ("import", "Qwen/Qwen3-32B", "trtllm", 2)


def test_a_forced_format_that_does_not_fit_is_one_line_naming_the_file(tmp_path, capsys):
    argv = ["import", str(FIXTURES / "vllm_bench_serve.json"), "--deployment", str(DEPLOY), "--out", str(tmp_path / "r.csv")]
    assert main([*argv, "--format", "aiperf"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "vllm_bench_serve.json: unknown format" in line and "profile-export metric blocks" in line


def test_trtllm_result_keeps_its_statistics_and_takes_lengths_from_the_totals():
    doc = _doc("trtllm_benchmark_serving.json")
    (row,) = _rows(FIXTURES / "trtllm_benchmark_serving.json")
    s = row.statistics
    assert (s.statistic, s.ttft_mean_ms, s.ttft_median_ms, s.ttft_p99_ms) == ("mean", doc["mean_ttft_ms"], doc["median_ttft_ms"], doc["p99_ttft_ms"])
    assert (s.tpot_mean_ms, s.tpot_median_ms, s.tpot_p99_ms) == (doc["mean_tpot_ms"], doc["median_tpot_ms"], doc["p99_tpot_ms"])
    assert (row.concurrency, row.protocol.num_prompts, row.protocol.request_rate) == (doc["max_concurrency"], doc["num_prompts"], math.inf)
    assert (row.isl, row.osl) == (doc["total_input_tokens"] // doc["completed"], doc["total_output_tokens"] // doc["completed"])
    assert "random_range_ratio=1.0 (client block)" in provenance_fields(row.provenance)["supplied"]


def test_inferencex_result_takes_lengths_from_the_kept_length_arrays_without_failed_requests(tmp_path):
    doc = _doc("inferencex_benchmark_serving.json")
    doc["input_lens"][0], doc["output_lens"][0] = 4 * max(doc["input_lens"]), 0  # a failed request: output length 0
    (row,) = _rows(_write(tmp_path, "ix.json", doc))
    assert (row.isl, row.osl) == (max(doc["input_lens"][1:]), max(doc["output_lens"]))
    assert "isl=1024 (max of per-request lengths)" in provenance_fields(row.provenance)["derived"]
    assert (row.measured_date, row.ttft_ms) == (f"{doc['date'][:4]}-{doc['date'][4:6]}-{doc['date'][6:8]}", doc["mean_ttft_ms"])


@pytest.mark.parametrize(
    ("name", "key", "stamp"),
    [("inferencex_benchmark_serving.json", "date", "20261399-101500"), ("profile_export_aiperf.json", "start_time", "2026-02-30T10:00:00")],
)
def test_a_date_stamp_naming_no_calendar_day_is_not_a_measured_date(tmp_path, name, key, stamp):
    """Before: '2026-13-99' went into the row as its measured date."""
    (row,) = _rows(_write(tmp_path, name, _doc(name) | {key: stamp}))
    assert row.measured_date is None


def test_sglang_lines_take_the_random_dataset_flags_and_the_per_request_count():
    lines = [json.loads(line) for line in (FIXTURES / "sglang_bench_serving.jsonl").read_text().splitlines()]
    rows = _rows(FIXTURES / "sglang_bench_serving.jsonl")
    assert [r.id for r in rows] == ["sglang_bench_serving#1", "sglang_bench_serving#2"]
    for row, line in zip(rows, lines, strict=True):
        assert (row.isl, row.osl, row.protocol.random_range_ratio) == (line["random_input_len"], line["random_output_len"], line["random_range_ratio"])
        assert (row.concurrency, row.protocol.num_prompts) == (line["max_concurrency"], len(line["input_lens"]))


def test_aiperf_json_reads_its_metric_blocks_and_user_config():
    doc = _doc("profile_export_aiperf.json")
    (row,) = _rows(FIXTURES / "profile_export_aiperf.json")
    s, cfg = row.statistics, doc["input_config"]
    assert (s.ttft_mean_ms, s.ttft_median_ms, s.ttft_p99_ms) == _stats(doc["time_to_first_token"])
    assert (s.tpot_mean_ms, s.tpot_median_ms, s.tpot_p99_ms) == _stats(doc["inter_token_latency"])
    assert (row.concurrency, row.protocol.num_prompts, row.protocol.num_warmups) == (
        cfg["loadgen"]["concurrency"], cfg["loadgen"]["request_count"], cfg["loadgen"]["warmup_request_count"])  # fmt: skip
    assert (row.isl, row.osl) == (cfg["input"]["prompt"]["input_tokens"]["mean"], cfg["input"]["prompt"]["output_tokens"]["mean"])
    assert (row.protocol.random_range_ratio, row.protocol.request_rate, row.protocol.ignore_eos) == (1.0, math.inf, True)
    assert row.measured_date == doc["start_time"][:10] and "inter_token_latency" in row.tpot_definition
    assert "supplied" not in provenance_fields(row.provenance)  # the export states every fact itself


def test_aiperf_time_units_convert_to_ms(tmp_path):
    doc = _doc("profile_export_aiperf.json")
    doc["time_to_first_token"] = {k: v * 1e6 if k != "unit" else "ns" for k, v in doc["time_to_first_token"].items()}
    (row,) = _rows(_write(tmp_path, "ns.json", doc))
    assert row.ttft_ms == pytest.approx(_doc("profile_export_aiperf.json")["time_to_first_token"]["avg"], rel=1e-12)
    doc["time_to_first_token"]["unit"] = "tokens"
    deployment = load_deployment(DEPLOY)
    with pytest.raises(InvalidInputError, match="time_to_first_token unit 'tokens' is not a time unit"):
        import_file(_write(tmp_path, "bad.json", doc), "auto", deployment, Supplied.of({}, {}))


def test_aiperf_defaults_apply_to_what_its_export_leaves_unset(tmp_path):
    """exclude_unset leaves defaults out: no request_rate is concurrency-burst mode at concurrency 1; no count: the measured requests."""
    doc = _doc("profile_export_aiperf.json")
    doc["input_config"]["loadgen"] = {}
    doc["error_request_count"] = {"unit": "requests", "avg": 2}
    (row,) = _rows(_write(tmp_path, "defaults.json", doc))
    assert (row.concurrency, row.protocol.request_rate, row.protocol.num_warmups) == (1, math.inf, 0)
    assert row.protocol.num_prompts == doc["request_count"]["avg"] + 2
    assert "num_prompts=42 (request_count + error_request_count)" in provenance_fields(row.provenance)["derived"]


def test_aiperf_csv_gives_the_json_exports_statistics_with_the_supplied_concurrency():
    (from_json,) = _rows(FIXTURES / "profile_export_aiperf.json")
    (from_csv,) = _rows(FIXTURES / "profile_export_aiperf.csv", concurrency=from_json.concurrency)
    for name in ("ttft_mean_ms", "ttft_median_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_median_ms", "tpot_p99_ms"):
        assert getattr(from_csv.statistics, name) == pytest.approx(getattr(from_json.statistics, name), abs=0.005)  # two decimals
    assert (from_csv.isl, from_csv.osl, from_csv.concurrency, from_csv.protocol.num_prompts) == (
        from_json.isl, from_json.osl, from_json.concurrency, from_json.protocol.num_prompts)  # fmt: skip
    assert "concurrency=4 (--concurrency)" in provenance_fields(from_csv.provenance)["supplied"]


def test_genai_perf_nested_config_and_its_derived_request_count(tmp_path):
    doc = _doc("profile_export_genai_perf.json")
    (row,) = _rows(FIXTURES / "profile_export_genai_perf.json")
    pa = doc["input_config"]["perf_analyzer"]
    concurrency = pa["stimulus"]["concurrency"]
    assert (row.concurrency, row.protocol.num_prompts, row.protocol.num_warmups) == (concurrency, max(10, 2 * concurrency), pa["warmup_request_count"])
    assert (row.ttft_ms, row.tpot_ms, row.protocol.ignore_eos) == (doc["time_to_first_token"]["avg"], doc["inter_token_latency"]["avg"], True)
    pa["measurement"]["num"] = 24
    (row,) = _rows(_write(tmp_path, "counted.json", doc))
    assert row.protocol.num_prompts == 24


def test_genai_perf_flat_config_until_stable_has_no_prompt_count_and_the_benchmark_replay_says_so():
    from estimator.report.batch import predict
    from measurements.mapping import map_all

    doc = _doc("profile_export_genai_perf_flat.json")
    (row,) = _rows(FIXTURES / "profile_export_genai_perf_flat.json")
    assert (row.concurrency, row.protocol.num_prompts, row.isl) == (
        doc["input_config"]["concurrency"],
        None,
        doc["input_config"]["synthetic_input_tokens_mean"],
    )
    (mapped,) = map_all([row])
    assert predict(mapped, "closed_loop_steady").covered
    benchmark = predict(mapped, "closed_loop")
    assert not benchmark.covered and "benchmark protocol not documented" in benchmark.reason


@pytest.mark.parametrize("statistic", ["mean", "median", "p99"])
def test_the_chosen_statistic_is_the_headline_of_every_format(statistic):
    for name in FORMATS:
        for row in _rows(FIXTURES / name, concurrency=4, statistic=statistic):
            assert row.statistics.statistic == statistic and row.ttft_statistic == f"{statistic} over requests"
            assert (row.ttft_ms, row.tpot_ms) == (getattr(row.statistics, f"ttft_{statistic}_ms"), getattr(row.statistics, f"tpot_{statistic}_ms"))


def test_statistics_and_warmups_round_trip_and_a_statistic_no_client_writes_is_refused(tmp_path):
    rows = [r for name in FORMATS for r in _rows(FIXTURES / name, concurrency=4)]
    path = tmp_path / "runs.csv"
    write_measurements(rows, path)
    assert load_measurements(path) == rows
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[0, "statistic"] = "median"
    frame.to_csv(path, index=False)
    assert load_measurements(path)[0].statistics.statistic == "median"
    frame.loc[0, "statistic"] = "p95"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=f"row {rows[0].id}: statistic must be one of mean, median, p99, got 'p95'"):
        load_measurements(path)


@pytest.mark.parametrize(
    ("model", "known"),
    [("meta-llama/Meta-Llama-3.1-8B", "LlamaForCausalLM"), ("Qwen/Qwen3-8B", "Qwen3ForCausalLM, 36 layers"), ("deepseek-ai/DeepSeek-R1", "DeepseekV3")],
)
def test_a_result_model_that_is_a_known_config_of_another_model_is_refused(tmp_path, capsys, model, known):
    doc = _doc("profile_export_aiperf.json")
    doc["input_config"]["endpoint"]["model_names"] = [model]
    path = _write(tmp_path, "other.json", doc)
    assert main(["import", str(path), "--deployment", str(DEPLOY), "--out", str(tmp_path / "r.csv")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"result model {model!r} is a known config of another model ({known}" in line and "'Qwen/Qwen3-32B' (Qwen3ForCausalLM, 64 layers" in line
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("served", ["Qwen/Qwen3-32B-FP8", "qwen3-32b-prod"])
def test_a_served_name_of_the_same_model_or_an_unknown_one_imports_with_a_warning(tmp_path, capsys, served):
    doc = _doc("vllm_bench_serve.json") | {"model_id": served}
    (row,) = _rows(_write(tmp_path, "served.json", doc))
    assert row.model == "Qwen/Qwen3-32B" and provenance_fields(row.provenance)["result_model"] == served


def test_a_bad_run_in_a_multi_run_file_is_listed_and_the_others_import(tmp_path, capsys):
    text = (FIXTURES / "sglang_bench_serving.jsonl").read_text() + (FIXTURES / "sglang_bench_serving_median.jsonl").read_text()
    path = _write(tmp_path, "mixed.jsonl", text)
    out = tmp_path / "runs.csv"
    assert main(["import", str(path), "--deployment", str(DEPLOY), "--out", str(out)]) == 2
    assert [r.id for r in load_measurements(out)] == ["mixed#1", "mixed#2"]
    err = capsys.readouterr().err
    assert "not imported: " in err and "mixed.jsonl run 3: no mean TTFT (has median" in err


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("profile_export_aiperf.json", lambda d: {k: v for k, v in d.items() if k not in ("time_to_first_token", "inter_token_latency")}),
        ("profile_export_genai_perf.json", lambda d: {k: v for k, v in d.items() if k not in ("time_to_first_token", "inter_token_latency")}),
        ("profile_export_aiperf.csv", lambda t: "\n".join(x for x in t.splitlines() if not x.startswith(("Time to First", "Inter Token")))),
    ],
)
def test_a_profile_export_without_latencies_is_one_line(tmp_path, capsys, name, edit):
    content = edit(_doc(name) if name.endswith(".json") else (FIXTURES / name).read_text())
    path = _write(tmp_path, name, content)
    assert main(["import", str(path), "--deployment", str(DEPLOY), "--concurrency", "4", "--out", str(tmp_path / "r.csv")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{name}: no latency fields" in line


def test_report_on_the_users_runs_alone_is_complete(tmp_path):
    """One command from raw result files (and an imported CSV) to the report: every method, the
    partitions, the plots and the coverage reasons, as on the bundled sample."""
    imported = tmp_path / "aiperf_csv.csv"
    argv = ["import", str(FIXTURES / "profile_export_aiperf.csv"), "--deployment", str(DEPLOY), "--concurrency", "4", "--out", str(imported)]
    assert main(argv) == 0
    html, points_path = tmp_path / "report.html", tmp_path / "points.csv"
    argv = ["report", "--measurements", str(imported), *map(str, RAW), "--deployment", str(DEPLOY), "--workers", "1", "--out", str(html),
            "--points", str(points_path)]  # fmt: skip
    assert main(argv) == 0
    points = pd.read_csv(points_path)
    expected = [r.id for r in unique_ids([*load_measurements(imported), *(r for p in RAW for r in _rows(p))])]  # every format's rows
    assert sorted(set(points["id"])) == sorted(expected) and len(expected) == len(FORMATS) + 1  # the SGLang file holds two runs
    assert set(points["method"]) == set(METHOD_NAMES) and len(points) == len(METHOD_NAMES) * len(expected)
    (missed,) = points[~points["covered"]].itertuples()  # every other row is predicted by every method
    assert (missed.id, missed.method) == ("profile_export_genai_perf_flat", "closed_loop")
    assert (points[points["covered"]][["ttft_pred_ms", "tpot_pred_ms"]] > 0).all().all()
    page = html.read_text()
    for section in ('id="coverage"', 'id="partitions"', "By system x backend x mode", "By model", "By concurrency bucket", 'id="plots"',
                    "Signed error histograms", 'id="provenance"', missed.reason):  # fmt: skip
        assert section in page, section


def test_report_on_a_result_file_without_deployment_is_one_line(tmp_path, capsys):
    assert main(["report", "--measurements", str(FIXTURES / "vllm_bench_serve.json"), "--out", str(tmp_path / "r.html")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "vllm_bench_serve.json is not a measurement CSV: a benchmark result file needs --deployment" in line


def test_deployment_fixture_is_a_valid_deployment_file():
    doc = yaml.safe_load(DEPLOY.read_text())
    deployment = load_deployment(DEPLOY)
    assert (deployment.model, deployment.system, deployment.agg.tp, dict(deployment.client)) == (doc["model"], doc["system"], doc["tp"], doc["client"])


def test_report_on_two_imported_files_sharing_an_id_suffixes_the_later_one(tmp_path):
    tables = []
    for name, flags in (("profile_export_aiperf.json", []), ("profile_export_aiperf.csv", ["--concurrency", "4"])):
        tables.append(tmp_path / f"{Path(name).suffix[1:]}.csv")
        assert main(["import", str(FIXTURES / name), "--deployment", str(DEPLOY), *flags, "--out", str(tables[-1])]) == 0
    points = tmp_path / "points.csv"
    argv = ["report", "--measurements", *map(str, tables), "--methods", "legacy", "--workers", "1", "--out", str(tmp_path / "r.html"), "--points", str(points)]
    assert main(argv) == 0
    assert list(pd.read_csv(points)["id"]) == ["profile_export_aiperf", "profile_export_aiperf-2"]


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [("--concurrency", "0", "--concurrency must be a positive integer, got 0"), ("--num-prompts", "-3", "--num-prompts must be a positive integer"),
     ("--request-rate", "-1", "--request-rate must be a positive number of requests/s or inf, got -1.0"), ("--request-rate", "nan", "got nan")],
)  # fmt: skip
def test_a_bad_supplied_fact_is_one_line_naming_the_flag(tmp_path, capsys, flag, value, needle):
    argv = ["import", str(FIXTURES / "profile_export_aiperf.csv"), "--deployment", str(DEPLOY), flag, value, "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert needle in line and not (tmp_path / "r.csv").exists()
