"""Launch files of one recommended configuration: the engine's config, bench.sh and the deployment file.

Per configuration (one replica: an agg worker, or a disagg replica of prefill and decode workers):

* the engine's config for each worker role: TensorRT-LLM ``engine.yaml`` (``trtllm-serve
  --extra_llm_api_options``), vLLM ``vllm serve`` and SGLang ``python -m sglang.launch_server`` arguments in
  ``launch.sh`` (disagg: ``launch_prefill.sh`` / ``launch_decode.sh``): tp, ep, attention DP, max batch, token
  budget, chunked prefill, KV-cache memory fraction and dtype, CUDA-graph batch sizes; an SGLang worker
  priced on the DeepEP all-to-all runs it (``--moe-a2a-backend deepep``, its role's ``--deepep-mode``), and
  one spanning nodes runs the script on each (``--nnodes``, ``--node-rank "$NODE_RANK"``, ``--dist-init-addr
  "$DIST_INIT_ADDR"``); a vLLM worker whose data-parallel ranks span nodes runs one ``vllm serve`` a node
  (``--data-parallel-size-local``, ``--data-parallel-start-rank``, ``--data-parallel-address "$DP_ADDRESS"``,
  ``--headless`` after the head: vllm ``docs/serving/data_parallel_deployment.md``); a TensorRT-LLM worker
  spanning nodes is one Slurm launch, a rank a GPU (``srun ... --mpi=pmix trtllm-llmapi-launch trtllm-serve``,
  its ``trtllm-serve.rst``); vLLM tensor parallelism across nodes says it needs vLLM's multi-node launcher;
* ``bench.sh``: the benchmark client at the replica's concurrency C under the protocol the closed-loop
  replay models (``search.REPLAY_PROTOCOL``: 10 x C prompts, request rate inf, input and output lengths uniform
  on [0.8 L, L], no warm-up, ignore-eos), saving a result file ``python -m estimator import`` reads;
* ``deployment.yaml``: what ran, in the deployment-file format of ``measurements/importers/deployment.py``
  (its ``client:`` block holds the facts the result file lacks), so measured and predicted meet in one report.

``check_launch_dir`` reads the written files back and names every option not in the engine version's
derived list (``engine_names``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from estimator.closedloop import Benchmark
from estimator.deployment import Backend, Deployment, Role
from estimator.perf.system_spec import load_system_spec
from estimator.pricing import prices_wide_ep
from estimator.recommend import engine_names as names
from estimator.recommend.summary import is_disagg
from estimator.scheduler import POLICIES
from estimator.scheduler.facts import deployment_facts

DEFAULT_PORT = {Backend.TRTLLM: 8000, Backend.VLLM: 8000, Backend.SGLANG: 30000}
# SGLang's DeepEP mode per worker role, as srt-slurm's wide-EP recipes run it (recipes/gb200-fp8/1k1k/max-tpt.yaml:
# normal on the prefill workers, low_latency on the decode workers) and the estimate prices it (deepep_ht / deepep_ll)
DEEPEP_MODES = {"prefill": "normal", "decode": "low_latency"}
NODE_ENV = ("NODE_RANK", "DIST_INIT_ADDR", "DP_ADDRESS")  # what a multi-node worker's script reads on each node
DP_RPC_PORT = 13345  # vLLM's multi-node data-parallel RPC port, as its docs' example
LAUNCHER = "trtllm-llmapi-launch"  # TensorRT-LLM's per-rank wrapper under a Slurm launch
# vLLM's data-parallel ranks on the nodes after the head run without an API server (docs/serving/data_parallel_deployment.md)
HEADLESS = 'HEADLESS=$([ "$NODE_RANK" -eq 0 ] || echo --headless)'
PREAMBLE = "set -euo pipefail"  # every script's first command
STATISTIC = "mean"  # the statistic the imported rows' ttft_ms / tpot_ms hold


@dataclass(frozen=True)
class Worker:
    """One worker role's launch settings."""

    role: str  # agg | prefill | decode
    tp: int  # attention tensor parallel size
    pp: int
    dp: int  # attention data-parallel size
    moe_tp: int
    moe_ep: int
    batch: int  # running requests per attention-DP rank (>= 1)
    token_budget: int  # tokens per engine step (>= batch)
    kv_fraction: float  # the engine's KV memory fraction the estimate assumed (0, 1]
    kv_fp8: bool  # an FP8 KV cache
    nodes: int = 1  # nodes the worker's GPUs span (>= 1)
    dp_per_node: int = 0  # attention-DP ranks on each node when DP spans nodes (a tp x pp group within one), else 0
    deepep_mode: str = ""  # SGLang --deepep-mode of the DeepEP all-to-all the estimate priced ("" for the fused MoE graph)

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp


@dataclass(frozen=True)
class LaunchFile:
    name: str  # path inside the launch folder
    text: str
    executable: bool = False


def workers(row: Mapping, model: str, isl: int, moe: bool) -> list[Worker]:
    """The worker roles of a top row (agg: one; disagg: prefill then decode)."""
    roles = (("prefill", "(p)"), ("decode", "(d)")) if is_disagg(row) else (("agg", ""),)
    out = []
    for role, p in roles:
        backend, system, version = Backend.parse(row[f"{p}backend"]), row[f"{p}system"], row[f"{p}version"]
        tp, pp, dp = int(row[f"{p}tp"]), int(row[f"{p}pp"]), int(row[f"{p}dp"])
        moe_tp, moe_ep = int(row[f"{p}moe_tp"] or 1), int(row[f"{p}moe_ep"] or 1)
        deployment = Deployment(model, system, backend, version, tp, pp, dp, moe_tp if moe else None, moe_ep if moe else None, role=Role(role))
        facts = deployment_facts(deployment)
        fraction = POLICIES[backend].default_kv_fraction(facts.version, facts.capacity_bytes, tp, pp, dp, static=role != "agg")
        batch = int(row[f"{p}bs"])
        budget = int(row["ctx_tokens"]) if role == "agg" else (isl * batch if role == "prefill" else batch)
        per_node = load_system_spec(system).num_gpus_per_node
        nodes = -(-tp * pp * dp // per_node)
        dp_per_node = per_node // (tp * pp) if nodes > 1 and tp * pp <= per_node else 0
        deepep = DEEPEP_MODES[role] if backend is Backend.SGLANG and moe and prices_wide_ep(deployment) else ""
        out.append(Worker(role, tp, pp, dp, moe_tp, moe_ep, batch, max(budget, batch), round(fraction, 4), "fp8" in str(row[f"{p}kvcache"]),
                          nodes, dp_per_node, deepep))  # fmt: skip
    return out


def cuda_graph_sizes(batch: int) -> list[int]:
    """Powers of two below the batch, then the batch."""
    sizes, b = [], 1
    while b < batch:
        sizes.append(b)
        b *= 2
    return sizes + [batch]


def trtllm_config(w: Worker, max_seq_len: int, moe: bool, disagg: bool) -> dict:
    config = {"tensor_parallel_size": w.tp * w.dp, "pipeline_parallel_size": w.pp}
    if moe:
        config |= {"moe_tensor_parallel_size": w.moe_tp, "moe_expert_parallel_size": w.moe_ep}
    config |= {
        "enable_attention_dp": w.dp > 1, "max_batch_size": w.batch, "max_num_tokens": w.token_budget, "max_seq_len": max_seq_len,
        "enable_chunked_prefill": False, "kv_cache_config": {"free_gpu_memory_fraction": w.kv_fraction, "dtype": "fp8" if w.kv_fp8 else "auto"},
        "cuda_graph_config": {"batch_sizes": cuda_graph_sizes(w.batch)},
    }  # fmt: skip
    if disagg:
        config["cache_transceiver_config"] = {"backend": "DEFAULT"}
    return config


def vllm_args(w: Worker, max_seq_len: int, moe: bool, disagg: bool) -> list[str]:
    args = ["--tensor-parallel-size", str(w.tp), "--pipeline-parallel-size", str(w.pp)]
    if w.dp > 1:
        args += ["--data-parallel-size", str(w.dp)]
    if moe and w.moe_ep > 1:
        args += ["--enable-expert-parallel"]
    args += ["--max-num-seqs", str(w.batch), "--max-num-batched-tokens", str(w.token_budget), "--enable-chunked-prefill",
             "--gpu-memory-utilization", str(w.kv_fraction), "--kv-cache-dtype", "fp8" if w.kv_fp8 else "auto",
             "--max-model-len", str(max_seq_len), "--compilation-config", json.dumps({"cudagraph_capture_sizes": cuda_graph_sizes(w.batch)})]  # fmt: skip
    if w.dp_per_node:  # one vllm serve per node (vllm docs/serving/data_parallel_deployment.md, internal load balancing)
        args += ["--data-parallel-size-local", str(w.dp_per_node), "--data-parallel-start-rank", f'"$((NODE_RANK * {w.dp_per_node}))"',
                 "--data-parallel-address", '"$DP_ADDRESS"', "--data-parallel-rpc-port", str(DP_RPC_PORT), "$HEADLESS"]  # fmt: skip
    if disagg:
        args += ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})]
    return args


def sglang_args(w: Worker, max_seq_len: int, moe: bool, disagg: bool) -> list[str]:
    args = ["--tp-size", str(w.tp * w.dp), "--pp-size", str(w.pp)]
    if w.dp > 1:
        args += ["--dp-size", str(w.dp), "--enable-dp-attention"]
    if moe and w.moe_ep > 1:
        args += ["--ep-size", str(w.moe_ep)]
    args += ["--max-running-requests", str(w.batch * w.dp), "--chunked-prefill-size", str(w.token_budget),
             "--mem-fraction-static", str(w.kv_fraction), "--kv-cache-dtype", "fp8_e4m3" if w.kv_fp8 else "auto",
             "--context-length", str(max_seq_len), "--cuda-graph-bs", *map(str, cuda_graph_sizes(w.batch))]  # fmt: skip
    if w.deepep_mode:
        args += ["--moe-a2a-backend", "deepep", "--deepep-mode", w.deepep_mode]
    if w.nodes > 1:
        args += ["--nnodes", str(w.nodes), "--node-rank", '"$NODE_RANK"', "--dist-init-addr", '"$DIST_INIT_ADDR"']
    if disagg:
        args += ["--disaggregation-mode", w.role]
    return args


def _slurm_launch(w: Worker) -> list[str]:
    """The Slurm launch of a TensorRT-LLM worker spanning nodes, a rank a GPU (TensorRT-LLM
    docs/source/commands/trtllm-serve/trtllm-serve.rst: srun -N .. --ntasks .. --ntasks-per-node ..
    --mpi=pmix trtllm-llmapi-launch trtllm-serve ...); nothing for a worker within one node."""
    if w.nodes == 1:
        return []
    return ["srun", "-N", str(w.nodes), "--ntasks", str(w.gpus), "--ntasks-per-node", str(-(-w.gpus // w.nodes)), "--mpi=pmix", LAUNCHER]


def _word(word: str) -> str:
    """A shell word: an expansion of the node's environment ("$NAME", "$((...))", $HEADLESS) as is, anything else quoted."""
    return word if word.startswith(('"$', "$HEADLESS")) else shlex.quote(word)


def _script(comment: str, command: Sequence[str]) -> str:
    """A bash script running one command: its leading words on the first line, then one option per line."""
    groups = [[]]
    for word in command:
        if word.startswith("--"):
            groups.append([])
        groups[-1].append(word)
    body = " \\\n  ".join(" ".join(map(_word, g)) for g in groups if g)
    checks = "".join(f': "${{{name}:?set {name} on each node}}"\n' for name in NODE_ENV if re.search(rf"\b{name}\b", body))
    headless = f"{HEADLESS}\n" if "$HEADLESS" in command else ""
    return f"#!/usr/bin/env bash\n# {comment}\n{PREAMBLE}\n{checks}{headless}{body}\n"


def engine_files(backend: Backend, model: str, ws: Sequence[Worker], max_seq_len: int, moe: bool) -> list[LaunchFile]:
    disagg = len(ws) > 1
    files = []
    for w in ws:
        suffix = f"_{w.role}" if disagg else ""
        what = f"one {w.role} worker ({w.gpus} GPUs)"
        if w.nodes > 1:
            what += f" on {w.nodes} nodes: " + (
                f"run this on each node, NODE_RANK 0..{w.nodes - 1}, DIST_INIT_ADDR node 0's host:port" if backend is Backend.SGLANG
                else f"run this on each node, NODE_RANK 0..{w.nodes - 1}, DP_ADDRESS node 0's address" if backend is Backend.VLLM and w.dp_per_node
                else f"run this once in a Slurm allocation of the {w.nodes} nodes" if backend is Backend.TRTLLM
                else f"run it under {backend.value}'s multi-node launcher (not generated)"
            )  # fmt: skip
        if backend is Backend.TRTLLM:
            config = f"engine{suffix}.yaml"
            files.append(
                LaunchFile(
                    config, f"# trtllm-serve --extra_llm_api_options: {what}\n" + yaml.safe_dump(trtllm_config(w, max_seq_len, moe, disagg), sort_keys=False)
                )
            )
            command = [*_slurm_launch(w), "trtllm-serve", model, "--extra_llm_api_options", config]
        elif backend is Backend.VLLM:
            command = ["vllm", "serve", model, *vllm_args(w, max_seq_len, moe, disagg)]
        else:
            command = ["python", "-m", "sglang.launch_server", "--model-path", model, *sglang_args(w, max_seq_len, moe, disagg)]
        files.append(
            LaunchFile(f"launch{suffix}.sh", _script(f"{what}; disagg replicas run their workers behind a P/D router" if disagg else what, command), True)
        )
    return files


# The seed bench.sh gives SGLang's client (its default, stated so the file says it), which deployment.yaml records as
# client_seed: SGLang bench_serving draws lengths with np.random.randint(max(int(L*r), 1), L + 1) as the replay's
# lengths.client_draws repeats them; vllm bench serve samples lengths its own way, so its seed is not recorded.
SGLANG_BENCH_SEED = 1


def bench_command(backend: Backend, model: str, isl: int, osl: int, prefix: int, concurrency: int, protocol: Benchmark) -> list[str]:
    """The benchmark client under the replay's protocol; SGLang's own client for SGLang, `vllm bench serve` otherwise.
    vLLM samples lengths on [m(1 - q), m(1 + q)], so [r L, L] is m = L(1 + r)/2, q = (1 - r)/(1 + r)."""
    prompts, r = protocol.prompts_per_client * concurrency, protocol.range_ratio
    port = DEFAULT_PORT[backend]
    if backend is Backend.SGLANG:
        return ["python", "-m", "sglang.bench_serving", "--backend", "sglang", "--base-url", f"http://127.0.0.1:{port}", "--model", model,
                "--dataset-name", "random", "--random-input-len", str(isl), "--random-output-len", str(osl), "--random-range-ratio", str(r),
                "--num-prompts", str(prompts), "--max-concurrency", str(concurrency), "--request-rate", "inf", "--warmup-requests", "0",
                "--seed", str(SGLANG_BENCH_SEED), "--output-file", "result.jsonl"]  # fmt: skip
    q = f"{(1 - r) / (1 + r):.6f}"
    lengths = ["--random-input-len", str(round((isl - prefix) * (1 + r) / 2)), "--random-output-len", str(round(osl * (1 + r) / 2)), "--random-range-ratio", q]
    if prefix:
        lengths += ["--random-prefix-len", str(prefix)]
    return ["vllm", "bench", "serve", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}", "--model", model, "--dataset-name", "random",
            *lengths, "--num-prompts", str(prompts), "--max-concurrency", str(concurrency), "--request-rate", "inf", "--num-warmups", "0",
            "--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--result-dir", ".", "--result-filename", "result.json"]  # fmt: skip


def deployment_doc(row: Mapping, ws: Sequence[Worker], backend: Backend, isl: int, osl: int, protocol: Benchmark) -> dict:
    """The deployment file of the replica bench.sh measures (measurements/importers/deployment.py)."""
    p = "(p)" if is_disagg(row) else ""
    doc = {"model": row["model"], "system": row[f"{p}system"], "backend": backend.value, "backend_version": str(row[f"{p}version"]),
           "mode": "disagg" if is_disagg(row) else "agg"}  # fmt: skip

    def sizes(w: Worker) -> dict:
        return {"tp": w.tp, "pp": w.pp, "attention_dp": w.dp, "moe_tp": w.moe_tp, "moe_ep": w.moe_ep}

    if is_disagg(row):
        doc["prefill"] = {"workers": int(row["(p)workers"]), **sizes(ws[0])}
        doc["decode"] = {"workers": int(row["(d)workers"]), **sizes(ws[1])}
    else:
        w = ws[0]
        budget, batch = {Backend.TRTLLM: ("max_num_tokens", "max_batch_size"), Backend.VLLM: ("max_num_batched_tokens", "max_num_seqs"),
                         Backend.SGLANG: ("chunked_prefill_size", "max_running_requests")}[backend]  # fmt: skip
        doc |= sizes(w)
        doc["engine"] = {budget: w.token_budget, batch: w.batch, "chunked_prefill": backend is not Backend.TRTLLM,
                         "kv_cache_dtype": "fp8" if w.kv_fp8 else "auto", "cuda_graph_batch_sizes": cuda_graph_sizes(w.batch)}  # fmt: skip
        if backend is Backend.TRTLLM:
            doc["engine"]["kv_cache_free_memory_fraction"] = w.kv_fraction
    doc["client"] = {"isl": isl, "osl": osl, "random_range_ratio": protocol.range_ratio, "num_warmups": 0, "statistic": STATISTIC, "ignore_eos": True}
    if backend is Backend.SGLANG:
        doc["client"]["client_seed"] = SGLANG_BENCH_SEED
    return doc


def launch_files(row: Mapping, isl: int, osl: int, prefix: int, moe: bool, protocol: Benchmark) -> list[LaunchFile]:
    """Every launch file of one top row (one replica)."""
    backend = Backend.parse(row["backend"])
    model = str(row["model"])
    ws = workers(row, model, isl, moe)
    concurrency = int(row["concurrency"])
    files = engine_files(backend, model, ws, isl + osl, moe)
    bench = bench_command(backend, model, isl, osl, prefix, concurrency, protocol)
    result = "result.jsonl" if backend is Backend.SGLANG else "result.json"
    comment = (f"one replica at concurrency {concurrency}: {protocol.prompts_per_client} prompts per client, lengths on "
               f"[{protocol.range_ratio} L, L], no warm-up; then: python -m estimator import {result} --deployment deployment.yaml --out measured.csv")  # fmt: skip
    files.append(LaunchFile("bench.sh", _script(comment, bench), True))
    files.append(LaunchFile("deployment.yaml", "# python -m estimator import RESULT --deployment deployment.yaml --out measured.csv\n"
                            + yaml.safe_dump(deployment_doc(row, ws, backend, isl, osl, protocol), sort_keys=False)))  # fmt: skip
    return files


# ---------------------------------------------------------------------------------------------
# Checking written files against the engines' option names
# ---------------------------------------------------------------------------------------------

PROGRAMS = (  # a command's leading words -> the option names its flags must be in
    (("vllm", "bench", "serve"), names.VLLM_BENCH),
    (("vllm", "serve"), names.VLLM),
    (("python", "-m", "sglang.launch_server"), names.SGLANG),
    (("python", "-m", "sglang.bench_serving"), names.SGLANG_BENCH),
    (("trtllm-serve",), names.TRTLLM_SERVE),
)


def check_script(text: str, where: str) -> list[str]:
    """Every flag of the script's command that its engine's list lacks (and JSON values' unknown keys), one line each;
    a Slurm launch's own options against srun's."""
    lines = text.replace(PREAMBLE, "", 1).splitlines()
    starts = {p[0] for p, _ in PROGRAMS} | {"srun"}
    first = next((i for i, line in enumerate(lines) if line.split()[:1] and line.split()[0] in starts), 0)
    words = shlex.split("\n".join(lines[first:]), comments=True)  # the command, past the node's environment checks
    problems = []
    if words[:1] == ["srun"] and LAUNCHER in words:  # a Slurm launch: its own options, then the program it launches
        cut = words.index(LAUNCHER)
        problems, words = _unknown(words[:cut], names.SRUN, where), words[cut + 1 :]
    for program, allowed in PROGRAMS:
        if tuple(words[: len(program)]) == program:
            return problems + _unknown(words, allowed, where)
    return [f"{where}: no known command in {' '.join(words[:3])!r}"]


def _unknown(words: Sequence[str], allowed: names.OptionNames, where: str) -> list[str]:
    """The flags among words (``--name`` or ``--name=value``) that allowed lacks, and JSON values' unknown keys."""
    problems = []
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        flag = word.split("=", 1)[0]
        if flag not in allowed.names:
            problems.append(f"{where}: {flag} is not a {allowed.engine} {allowed.version} option ({allowed.citation})")
        elif flag in allowed.nested:
            keys = json.loads(words[i + 1])
            problems += [f"{where}: {flag} key {k!r} is not a {allowed.engine} {allowed.version} field" for k in keys if k not in allowed.nested[flag]]
    return problems


def check_config(doc: Mapping, where: str, allowed: names.OptionNames = names.TRTLLM) -> list[str]:
    """Every key of a TensorRT-LLM engine config that the derived list lacks."""
    problems = []
    for key, value in doc.items():
        if key not in allowed.names:
            problems.append(f"{where}: {key} is not a {allowed.engine} {allowed.version} option ({allowed.citation})")
        elif isinstance(value, Mapping):
            nested = allowed.nested.get(key, frozenset())
            problems += [f"{where}: {key}.{k} is not a {allowed.engine} {allowed.version} field" for k in value if k not in nested]
    return problems


def check_launch_dir(folder: Path) -> list[str]:
    """Every unknown option in a launch folder's engine configs and scripts (YAML and shell must parse)."""
    problems = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".sh":
            problems += check_script(path.read_text(encoding="utf-8"), path.name)
        elif path.name.startswith("engine") and path.suffix == ".yaml":
            problems += check_config(yaml.safe_load(path.read_text(encoding="utf-8")), path.name)
    return problems
