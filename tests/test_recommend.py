"""recommend: the search space, picking, the CLI's exit codes and the --save-dir folder (launch files checked
against the engines' option names, the deployment file read back by `python -m estimator import`).
The default tier checks each engine once (dense TRT-LLM and vLLM, MoE SGLang); the other cases run with --full."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml

from estimator.cli import main
from estimator.deployment import Backend, Deployment
from estimator.recommend import RecommendTask, recommend_task
from estimator.recommend import engine_names as names
from estimator.recommend.launch import SGLANG_BENCH_SEED, check_config, check_launch_dir, check_script, engine_files, workers
from estimator.recommend.output import best_configs, save
from estimator.recommend.picking import CLUSTER, REPLICAS, Constraint, best_under, pareto_front, verdict, with_budget
from estimator.recommend.space import replica_limits, worker_layouts
from measurements.importers.deployment import load_deployment

DENSE = "Qwen/Qwen3-8B"
MOE = "Qwen/Qwen3-30B-A3B-FP8"


def task(backend: str, model: str = DENSE, gpus: int = 2, **kw) -> RecommendTask:
    return RecommendTask(model, "h200_sxm", gpus, 2048, 256, kw.pop("ttft", 1000.0), kw.pop("tpot", 30.0), backend=backend, **kw)


# ---------------------------------------------------------------------------------------------
# The search space and the picking
# ---------------------------------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("backend,model,moe", [
    (Backend.TRTLLM, DENSE, False),
    (Backend.SGLANG, MOE, True),
    *(pytest.param(b, m, moe, marks=pytest.mark.full) for b, m, moe in ((Backend.VLLM, DENSE, False), (Backend.SGLANG, DENSE, False),
                                                                        (Backend.TRTLLM, MOE, True), (Backend.VLLM, MOE, True))),
])  # fmt: skip
def test_layouts_are_cli_defaults(backend, model, moe):
    """Every mode's layouts equal aiconfigurator's Task.iter_parallel (context parallelism left out)."""
    from aiconfigurator.cli.main import build_default_tasks

    tasks = build_default_tasks(model_path=model, total_gpus=8, system="h200_sxm", backend=backend.value, isl=2048, osl=256, ttft=1000, tpot=30)
    ours = [(d.tp, d.pp, d.attention_dp, d.moe_tp, d.moe_ep) for d in worker_layouts(Deployment(model, "h200_sxm", backend), 8, moe)]
    for t in tasks.values():
        for role in ("agg",) if t.serving_mode == "agg" else ("prefill", "decode"):
            assert ours == [tuple(c[:5]) for c in t.iter_parallel(role) if c[5] == 1], (t.serving_mode, role)
        if t.serving_mode == "disagg":
            assert replica_limits(8, backend).total_gpus == frozenset(t._replica_num_gpu_list())


def test_layouts_stay_within_the_budget():
    assert {d.tp for d in worker_layouts(Deployment(DENSE, "h200_sxm", "vllm"), 3, False)} == {1, 2}
    assert all(d.tp * d.attention_dp <= 4 for d in worker_layouts(Deployment(MOE, "h200_sxm", "sglang"), 4, True))


def test_replicas_and_budget_wide_throughput():
    frame = with_budget(pd.DataFrame({"tokens/s/gpu": [100.0, 100.0, 100.0], "num_total_gpus": [2, 3, 8]}), 8)
    assert frame[REPLICAS].tolist() == [4, 2, 1]
    assert frame[CLUSTER].tolist() == [100.0, 100.0 * 6 / 8, 100.0]  # 3-GPU replicas leave 2 GPUs idle


def test_pareto_front_drops_dominated_points():
    frame = pd.DataFrame({"tokens/s/user": [10.0, 20.0, 15.0, 30.0], CLUSTER: [500.0, 400.0, 300.0, 100.0]})
    assert pareto_front(frame, "tokens/s/user")[CLUSTER].tolist() == [500.0, 400.0, 100.0]


def test_best_under_keeps_one_row_per_layout_or_the_closest():
    frame = pd.DataFrame({"parallel": ["a", "a", "b"], "tpot": [20.0, 25.0, 40.0], CLUSTER: [100.0, 200.0, 300.0], "tokens/s/user": [1.0] * 3})
    assert best_under(frame, Constraint(30.0), "parallel", 5)[CLUSTER].tolist() == [200.0]
    assert best_under(frame, Constraint(10.0), "parallel", 5)["tpot"].tolist() == [25.0, 40.0]  # none meets: closest first


def test_verdict_words():
    assert verdict({"agg": 100.0, "disagg": 107.0}) == "disagg 1.07x better than agg"
    assert verdict({"agg": 100.0, "disagg": 100.0}) == "agg and disagg tied"
    assert verdict({"agg": 100.0}).startswith("only agg meets the targets")


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------

BASE = ["recommend", "--model-path", DENSE, "--system", "h200_sxm", "--isl", "2048", "--osl", "256"]


@pytest.mark.parametrize("argv,named", [
    (["--backend", "trtllm", "--total-gpus", "0"], "total_gpus must be a positive integer, got 0"),
    (["--backend", "tgi", "--total-gpus", "2"], "unknown backend 'tgi' (known: trtllm, vllm, sglang, auto)"),
    (["--backend", "vllm", "--total-gpus", "2", "--system", "h999"], "h999"),
    (["--backend", "vllm", "--total-gpus", "2", "--model-path", "nobody/none"], "nobody/none"),
    (["--backend", "vllm", "--total-gpus", "2", "--tpot", "-1"], "tpot target must be a positive number of ms, got -1"),
    (["--backend", "vllm", "--total-gpus", "2", "--prefix", "2048"], "prefix (2048) must be smaller than the effective isl (2048)"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(argv, named, capsys):
    code = main([*BASE, *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and named in err, (code, out, err)


def test_a_budget_too_small_for_any_layout_is_exit_2(capsys):
    code = main(["recommend", "--model-path", "Qwen/Qwen3-235B-A22B-FP8", "--system", "h200_sxm", "--backend", "trtllm", "--total-gpus", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "fits in no searched layout of at most 1 GPUs" in err, err


def test_nothing_meeting_the_targets_is_exit_3_with_the_closest_miss(capsys):
    code = main([*BASE, "--backend", "vllm", "--total-gpus", "2", "--tpot", "1"])
    out, _ = capsys.readouterr()
    assert code == 3
    assert "verdict: no configuration meets the targets" in out
    assert "agg: closest miss vllm tp" in out and "(target 1 ms)" in out


# ---------------------------------------------------------------------------------------------
# --save-dir: the folder, the launch files, the loop back into `import`
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[("trtllm", DENSE), ("vllm", DENSE), ("sglang", MOE),  # every engine's launch files, dense and MoE
                                        *(pytest.param(p, marks=pytest.mark.full) for p in (("sglang", DENSE), ("trtllm", MOE), ("vllm", MOE)))],
                ids=lambda p: f"{p[0]}-{p[1].split('/')[1]}")  # fmt: skip
def saved(request, tmp_path_factory):
    backend, model = request.param
    rec = recommend_task(task(backend, model, gpus=4 if model == MOE else 2, ttft=2000.0, tpot=50.0))
    folder = tmp_path_factory.mktemp("rec")
    return rec, folder, save(rec, folder, model == MOE)


def test_the_folder_holds_the_tables_the_page_and_a_launch_dir_per_top_row(saved):
    rec, folder, written = saved
    table = pd.read_csv(folder / "best_configs.csv")
    assert {"mode", "rank", "backend", "tokens/s/gpu", "tokens/s/user", "ttft_ms", "tpot_ms", "concurrency", "total_gpus", "replicas",
            "layout", "launch_dir"} <= set(table.columns)  # fmt: skip
    assert len(table) == sum(len(r.top) for r in rec.modes.values()) > 0
    assert all((folder / d / "bench.sh").is_file() and (folder / d / "deployment.yaml").is_file() for d in table["launch_dir"])
    assert not pd.read_csv(folder / "pareto.csv").empty
    page = (folder / "frontier.html").read_text()
    assert "<svg" in page and "http://www.w3.org/2000/svg" in page and "<script" not in page and "src=" not in page
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]  # atomic writes leave no temporary file
    assert all(os.access(p, os.X_OK) for p in written if p.suffix == ".sh")


def test_every_launch_file_parses_and_uses_only_cited_option_names(saved):
    _, folder, written = saved
    for path in written:
        if path.suffix == ".yaml":
            assert isinstance(yaml.safe_load(path.read_text()), dict), path
        elif path.suffix == ".sh":
            assert shlex.split(path.read_text(), comments=True), path
    dirs = sorted({p.parent for p in written if p.name == "bench.sh"})
    assert dirs and all(check_launch_dir(d) == [] for d in dirs), [check_launch_dir(d) for d in dirs]


def test_the_deployment_file_is_read_by_import(saved):
    rec, folder, _ = saved
    top = best_configs(rec).iloc[0]
    deployment = load_deployment(folder / top["launch_dir"] / "deployment.yaml")
    assert (deployment.mode, deployment.backend, deployment.client["isl"], deployment.client["random_range_ratio"]) == (top["mode"], top["backend"], 2048, 0.8)
    bench = (folder / top["launch_dir"] / "bench.sh").read_text()
    sglang = top["backend"] == "sglang"  # SGLang's client draws lengths as the replay repeats them: its seed is recorded
    assert deployment.client.get("client_seed") == (SGLANG_BENCH_SEED if sglang else None) and ("--seed 1 " in bench) == sglang


def test_a_planted_bad_name_fails_the_check():
    assert check_config({"max_batch_size": 8, "max_batchsize": 8}, "engine.yaml") == [
        f"engine.yaml: max_batchsize is not a trtllm 1.3.0rc20 option ({names.TRTLLM.citation})"
    ]
    assert check_config({"kv_cache_config": {"free_gpu_mem_fraction": 0.9}}, "engine.yaml") == [
        "engine.yaml: kv_cache_config.free_gpu_mem_fraction is not a trtllm 1.3.0rc20 field"
    ]
    assert check_script("vllm serve M --tensor-parallel-size 2 --max-num-seq 8\n", "launch.sh") == [
        f"launch.sh: --max-num-seq is not a vllm 0.24.0 option ({names.VLLM.citation})"
    ]
    assert "--cuda-graph-batch-sizes" in check_script("python -m sglang.launch_server --tp-size 2 --cuda-graph-batch-sizes 1 2\n", "x")[0]
    assert "'cudagraph_sizes'" in check_script("vllm serve M --compilation-config '{\"cudagraph_sizes\": [1]}'\n", "x")[0]


def test_imported_result_of_bench_sh_closes_the_loop(saved, tmp_path, capsys):
    rec, folder, _ = saved
    top = best_configs(rec).iloc[0]
    if top["backend"] == "sglang":
        pytest.skip("the vLLM client's result format is exercised here")
    result = {"date": "20260101-000000", "backend": "openai", "model_id": rec.task.model, "num_prompts": 10, "request_rate": "inf",
              "max_concurrency": int(top["concurrency_per_replica"]), "duration": 10.0, "completed": 10, "failed": 0,
              "total_input_tokens": 18000, "total_output_tokens": 2300, "request_throughput": 1.0, "output_throughput": 230.0,
              "mean_ttft_ms": 500.0, "median_ttft_ms": 480.0, "p99_ttft_ms": 700.0, "mean_tpot_ms": 20.0, "median_tpot_ms": 20.0,
              "p99_tpot_ms": 25.0, "mean_itl_ms": 20.0, "median_itl_ms": 20.0, "p99_itl_ms": 30.0}  # fmt: skip
    (tmp_path / "result.json").write_text(json.dumps(result))
    out = tmp_path / "measured.csv"
    assert main(["import", str(tmp_path / "result.json"), "--deployment", str(folder / top["launch_dir"] / "deployment.yaml"), "--out", str(out)]) == 0
    capsys.readouterr()
    row = pd.read_csv(out).iloc[0]
    assert (row["mode"], row["engine"], row["ttft_ms"], row["random_range_ratio"]) == (top["mode"], top["backend"], 500.0, 0.8)


def test_same_inputs_write_byte_identical_files(tmp_path):
    rec = recommend_task(task("trtllm"))
    a, b = save(rec, tmp_path / "a", False), save(rec, tmp_path / "b", False)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert [p.relative_to(tmp_path / "a") for p in a] == [p.relative_to(tmp_path / "b") for p in b]


def test_json_and_refined_output_say_what_decided(capsys):
    code = main([*BASE, "--backend", "trtllm", "--total-gpus", "2", "--ttft", "2000", "--tpot", "50", "--refined-sla", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["decided_by"] == "closed-loop replay" and doc["found"]
    assert all(r["decided_by"] == "closed-loop replay" for m in doc["modes"].values() for r in m["top"])


def test_launch_dir_names_match(saved):
    rec, folder, _ = saved
    assert sorted(best_configs(rec)["launch_dir"]) == sorted(str(p.parent.relative_to(folder)) for p in folder.rglob("bench.sh"))
    assert Path(folder / "best_configs.csv").read_text().splitlines()[0].startswith("mode,rank,backend")


def _wide_ep_row(backend: str) -> dict:
    """A DeepSeek-V3 gb200 disagg replica: a DEP16 prefill worker and a DEP32 decode worker (4 and 8 nodes)."""
    worker = {"backend": backend, "system": "gb200", "version": None, "tp": 1, "pp": 1, "moe_tp": 1, "workers": 1, "kvcache": "fp8"}
    return {"model": "deepseek-ai/DeepSeek-V3", **{f"(p){k}": v for k, v in (worker | {"dp": 16, "moe_ep": 16, "bs": 1}).items()},
            **{f"(d){k}": v for k, v in (worker | {"dp": 32, "moe_ep": 32, "bs": 16}).items()}}  # fmt: skip


@pytest.mark.reference
def test_a_multi_node_sglang_worker_s_script_runs_on_each_node_with_the_deepep_mode_the_estimate_priced(tmp_path):
    row = _wide_ep_row("sglang")
    files = {f.name: f.text for f in engine_files(Backend.SGLANG, row["model"], workers(row, row["model"], 1024, True), 2048, True)}
    prefill, decode = files["launch_prefill.sh"], files["launch_decode.sh"]
    assert "--moe-a2a-backend deepep \\\n  --deepep-mode normal" in prefill and "--deepep-mode low_latency" in decode
    assert "--nnodes 4" in prefill and "--nnodes 8" in decode and '--node-rank "$NODE_RANK"' in decode
    assert ': "${NODE_RANK:?set NODE_RANK on each node}"' in decode and "on 8 nodes: run this on each node" in decode
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert check_launch_dir(tmp_path) == []


@pytest.mark.reference
def test_a_multi_node_vllm_worker_runs_one_vllm_serve_per_node_its_ranks_after_the_head_headless(tmp_path):
    """vllm docs/serving/data_parallel_deployment.md: per node --data-parallel-size-local and -start-rank,
    rank 0's address and RPC port, --headless on the nodes after the head."""
    row = _wide_ep_row("vllm")
    files = {f.name: f.text for f in engine_files(Backend.VLLM, row["model"], workers(row, row["model"], 1024, True), 2048, True)}
    decode = files["launch_decode.sh"]
    assert '--data-parallel-size-local 4 \\\n  --data-parallel-start-rank "$((NODE_RANK * 4))"' in decode
    assert '--data-parallel-address "$DP_ADDRESS"' in decode and 'HEADLESS=$([ "$NODE_RANK" -eq 0 ] || echo --headless)' in decode
    assert "deepep" not in decode  # vLLM's own all-to-all, as the estimate prices it
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert check_launch_dir(tmp_path) == []


@pytest.mark.reference
def test_a_multi_node_tensorrt_llm_worker_is_one_slurm_launch_a_rank_a_gpu(tmp_path):
    """TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst: srun -N .. --ntasks .. --ntasks-per-node ..
    --mpi=pmix trtllm-llmapi-launch trtllm-serve ..."""
    row = _wide_ep_row("trtllm")
    files = {f.name: f.text for f in engine_files(Backend.TRTLLM, row["model"], workers(row, row["model"], 1024, True), 2048, True)}
    decode = files["launch_decode.sh"]
    assert "srun -N 8 \\\n  --ntasks 32 \\\n  --ntasks-per-node 4 \\\n  --mpi=pmix trtllm-llmapi-launch trtllm-serve" in decode
    assert "run this once in a Slurm allocation of the 8 nodes" in decode
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert check_launch_dir(tmp_path) == []
    assert check_script(decode.replace("--ntasks-per-node", "--ntask-per-node"), "x") == [
        f"x: --ntask-per-node is not a srun slurm option ({names.SRUN.citation})"
    ]


@pytest.mark.parametrize("decode_system", ["h900", ""])
def test_an_unknown_decode_system_is_one_error_before_the_search(capsys, decode_system):
    """recommend names an unknown --decode-system and exits 2 up front, as sweep does; it used to skip the disagg mode
    (or report no configuration meeting the targets) and exit 0."""
    code = main(["recommend", "--model-path", "Qwen/Qwen3-0.6B", "--system", "h200_sxm", "--backend", "vllm", "--total-gpus", "2",
                 "--isl", "512", "--osl", "64", "--decode-system", decode_system])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"unknown system {decode_system!r}" in err[0]


def test_the_backend_auto_reads_in_any_case_like_the_backends():
    assert RecommendTask("m", "h200_sxm", 8, 1024, 128, 1000.0, 30.0, backend="AUTO").backend == "auto"
    assert RecommendTask("m", "h200_sxm", 8, 1024, 128, 1000.0, 30.0, backend="VLLM").backend == "vllm"
