"""Map an InferenceX disaggregated run to the deployment its published config launched.

The rules are `rules.csv` (derived by `derive.py` from InferenceX's nvidia-master.yaml history, its
GB200 launcher and the srt-slurm recipes; README.md). `resolve` applies the matching rule of
shared/docs/accuracy-evidence.md section 4; `corrected_layouts` replaces the sample's unreliable
disaggregated columns with the config's; `inferencex_twin` finds a gap-analysis row's InferenceX twin.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from estimator.caching import memo
from measurements.provenance import provenance_fields
from measurements.schema import Layout, Measurement

RULES_PATH = Path(__file__).with_name("rules.csv")

# sample model -> InferenceX model-prefix; the db-dump rows labelled DeepSeek-V3 carry dsr1_ ids (InferenceX runs only R1)
MODEL_PREFIX = {"deepseek-ai/DeepSeek-R1": "dsr1", "deepseek-ai/DeepSeek-V3": "dsr1", "moonshotai/Kimi-K2.5": "kimik2.5",
                "openai/gpt-oss-120b": "gptoss", "zhipuai/GLM-5": "glm5"}  # fmt: skip
PLACEHOLDER_TP_SYSTEMS = frozenset({"gb200", "gb300"})  # SGLang rows there record tp 1 (the config's placeholder)
TWIN_TOLERANCE = 6e-4  # relative TTFT and TPOT agreement of a gap-analysis row and its InferenceX twin (0.06%)
LAUNCHER_KEY = "launcher:"  # key prefix of the rules of the GB200 launcher, which ran the multi-node runs before the configs named them
# Before the configs took over, InferenceX's multi-node workflow recorded one tp per run, the run's GPU count, in both stage
# fields; the configs' result processing writes each stage's own tp. A disagg row recording a launcher rule's GPU count in
# both fields therefore ran under the launcher, even on the day the configs took over.
LAUNCHER_SCHEMA_CITATION = (
    "SemiAnalysisAI/InferenceX .github/workflows/benchmark-multinode-tmpl.yml @ 175fe5364 L100-L106 (TP=$gpus ... "
    "python3 utils/process_result.py); utils/process_result.py @ 93e1b3ca1 L65-L93 (prefill_tp, decode_tp)"
)


@dataclass(frozen=True)
class Stage:
    """One stage (prefill or decode) of a disaggregated deployment, as its config sets it."""

    workers: int  # engine instances of this stage (>= 1)
    tp: int  # GPUs per worker (the engine's tensor_parallel_size / tp-size)
    ep: int | None  # MoE expert-parallel size per worker; None: the source does not decide it
    attention_dp: bool | None  # attention data parallel across the worker's GPUs; None: not decided
    max_batch_size: int | None  # engine cap on running requests per attention-DP rank; None: not decided
    recv_interval: int | None = None  # SGLang --scheduler-recv-interval the recipe sets; None: not set (the engine default, 1)
    token_budget: int | None = None  # prompt tokens one pass takes per attention-DP rank (derive.prefill_budget); None: not set
    overlap: bool | None = None  # False: the recipe turns the overlap scheduler off (derive.prefill_overlap_off); None: not set
    moe_backend: str | None = None  # TRT-LLM moe_config.backend the recipe sets (prefill stage only); None: not set


@dataclass(frozen=True)
class Topology:
    """The published deployment a measured run matches."""

    key: str  # InferenceX benchmark key (or launcher:<framework> for the pre-config GB200 launcher)
    commit: str  # first version of the cited file holding the entry (9 hex digits)
    conc_entry: int  # the conc-list entry matched
    conc_basis: str  # "total": the run's concurrency is the entry; "per_decode_worker": entry x decode workers
    prefill: Stage
    decode: Stage
    nextn: int | None  # MTP draft tokens per decode step (0: none); None: the config does not decide it
    recipe_file: str | None  # srt-slurm recipe the entry names; None: no recipe
    launch_script: str | None  # GB200 launcher rows: the script the call ran and the citation of its layout facts; None otherwise
    citation: str  # repository file @ commit, lines and excerpt (plus the recipe @ commit or the launch script)


@dataclass(frozen=True)
class Unresolved:
    """A row no published topology covers, or covers ambiguously."""

    reason: str  # one line: which condition failed, or the candidate topologies


@dataclass(frozen=True)
class MultinodeClient:
    """The benchmark client of a multi-node disaggregated launch path, per concurrency C (the run's total)."""

    client: str  # benchmark client and dataset
    warmup: str  # what runs before the measured pass (its results are discarded; the replay starts at the measured pass)
    warmups_per_concurrency: int | None  # warm-up requests = this x C before the measured pass; None: not a multiple of C
    prompts_per_concurrency: int  # measured requests = this x C
    request_rate: float  # measured requests/s offered (inf: all at t = 0, C in flight)
    random_range_ratio: float  # lengths uniform on [r*L, L]
    ignore_eos: bool  # outputs run to osl tokens
    seed: int  # the NumPy seed its length draws start from (0 <= seed < 2**32)
    citation: str


SA_BENCH = MultinodeClient(
    client="srt-slurm sa-bench (vLLM benchmark_serving.py, random dataset)", warmup="5 x C prompts at request rate 250", warmups_per_concurrency=5,
    prompts_per_concurrency=5, request_rate=math.inf, random_range_ratio=0.8, ignore_eos=True, seed=0,
    citation=("ishandhanani/srt-slurm src/srtctl/benchmarks/scripts/sa-bench/bench.sh @ 09211b641fc3: warm-up loop "
              "num_prompts=$((concurrency * 5)) --random-range-ratio 0.8 --ignore-eos --request-rate 250; benchmark loop "
              "num_prompts=$((concurrency * 5)) --random-range-ratio 0.8 --ignore-eos --request-rate \"${REQ_RATE}\" "
              "(recipes: req_rate \"inf\"), no --seed: sa-bench/benchmark_serving.py @ 7da82281 --seed default 0 (L1115), "
              "np.random.seed(args.seed) (L820-L821), inputs then outputs drawn by np.random.randint (L355-L364), each loop "
              "a process of its own"),
)  # fmt: skip
# The pre-config GB200 launcher's two paths (runners/launch_gb200-nv.sh): dynamo's TRT-LLM performance sweep and its SGLang
# slurm jobs, each with its own copy of the vLLM benchmark_serving.py client.
DYNAMO_TRTLLM_SWEEP = MultinodeClient(
    client="dynamo trtllm performance_sweeps bench.sh (kedarpotdar-nv/bench_serving benchmark_serving.py, random dataset)",
    warmup="once per job, 8 prompts at concurrency 1; the job's concurrencies then run back to back", warmups_per_concurrency=None,
    prompts_per_concurrency=8, request_rate=math.inf, random_range_ratio=0.8, ignore_eos=True, seed=0,
    citation=("ai-dynamo/dynamo components/backends/trtllm/performance_sweeps/scripts/bench.sh @ 0b6abc828 L170-L195: "
              "concurrency=$((concurrency * num_gen_servers)); num_prompts=$((concurrency * multi_round)) --random-range-ratio 0.8 "
              "--ignore-eos --max-concurrency \"$concurrency\" (no --request-rate: inf, kedarpotdar-nv/bench_serving "
              "benchmark_serving.py @ f3ea022a L1146-L1148; no --seed: --seed default 0, np.random.seed(args.seed) in main @ 499c0b17, "
              "one process per concurrency); benchmark_disagg.slurm L4 MULTI_ROUND=8"),
)  # fmt: skip
DYNAMO_SGLANG_SLURM = MultinodeClient(
    client="dynamo sglang slurm_jobs scripts/vllm/bench.sh (vLLM benchmark_serving.py, random dataset)",
    warmup="a warm-up pass at request rate 250 (its size differs by branch)", warmups_per_concurrency=None,
    prompts_per_concurrency=5, request_rate=math.inf, random_range_ratio=0.8, ignore_eos=True, seed=0,
    citation=("ai-dynamo/dynamo components/backends/sglang/slurm_jobs/scripts/vllm/bench.sh @ e1c7a4a49 L65-L81: "
              "num_prompts=$((concurrency * 5)) --random-range-ratio 0.8 --ignore-eos --request-rate ${chosen_req_rate} "
              "(the launcher passes inf) --max-concurrency \"$concurrency\", no --seed: scripts/vllm/benchmark_serving.py "
              "@ 3336912b9 --seed default 0, np.random.seed(args.seed) in main"),
)  # fmt: skip
LAUNCH_CLIENTS = {"launcher:dynamo-trtllm": DYNAMO_TRTLLM_SWEEP, "launcher:dynamo-sglang": DYNAMO_SGLANG_SLURM}  # key -> client; else SA_BENCH


def multinode_client(topology: Topology) -> MultinodeClient:
    """The benchmark client that measured a run of this topology."""
    return LAUNCH_CLIENTS.get(topology.key, SA_BENCH)


@memo(4)
def load_rules(path: str | Path = RULES_PATH) -> tuple[dict[str, str], ...]:
    """The rule table's rows (strings; empty: not decided)."""
    with open(path, newline="") as fh:
        return tuple(csv.DictReader(fh))


def resolve(m: Measurement, rules: Iterable[dict[str, str]] | None = None) -> Topology | Unresolved:
    """The one published topology `m` matches (rules: load_rules() by default), or why there is none."""
    rules = load_rules() if rules is None else tuple(rules)
    when = _measured_time(m)
    prefix = MODEL_PREFIX.get(m.model)
    if when is None:
        return Unresolved("no measured date in the provenance")
    if prefix is None:
        return Unresolved(f"no public config for {m.model}")
    steps = [
        (lambda r: r["model_prefix"] == prefix and r["precision"] == m.precision and _system(r["runner"]) == m.system
         and r["framework"] == m.engine, f"no public config for {m.model} {m.precision} {m.engine} on {m.system}"),
        (lambda r: r["first_date"] <= when, f"no public config for {prefix} {m.precision} {m.engine} on {m.system} before {when[:10]}"),
        (lambda r: (int(r["isl"]), int(r["osl"])) == (m.isl, m.osl), f"no config entry for isl/osl {m.isl}/{m.osl}"),
        (lambda r: _image_agrees(r["image"], m.image), f"no config entry with image {m.image}"),
        (lambda r: _basis(r, m.concurrency) is not None, f"no config entry for concurrency {m.concurrency}"),
        (lambda r: _tp_agrees(r, m), f"no config entry with the recorded tp ({_recorded_tp(m)})"),
    ]  # fmt: skip
    matching = list(rules)
    for keep, why in steps:
        matching = [r for r in matching if keep(r)]
        if not matching:
            return Unresolved(why)
    launched = [r for r in matching if r["key"].startswith(LAUNCHER_KEY) and _records_run_gpus(r, m)]
    if launched:  # the launcher-era result schema (LAUNCHER_SCHEMA_CITATION)
        matching = launched
    candidates = _latest(matching, when)
    distinct = {_signature(r): r for r in candidates}
    if len(distinct) > 1:
        names = "; ".join(_describe(r) for r in distinct.values())
        return Unresolved(f"{len(distinct)} candidate topologies: {names}")
    return _topology(next(iter(distinct.values())), m.concurrency)


def corrected_layouts(m: Measurement, topology: Topology) -> tuple[Layout, Layout, str]:
    """(prefill, decode) Layouts from the config, and a note naming each recorded value replaced.

    Layout convention (the sample's own recorded runs): GPUs per worker = tp x attention_dp; under
    attention DP tp is 1 and attention_dp the worker's GPUs; moe_tp x moe_ep = GPUs per worker."""
    recorded = (m.prefill, m.decode) if m.mode == "disagg" else (None, None)
    layouts, notes = [], [] if m.mode == "disagg" else [f"labelled {m.mode}: a multi-node disaggregated run ({topology.key})"]
    gpus = topology.prefill.workers * topology.prefill.tp + topology.decode.workers * topology.decode.tp
    if _recorded_tp(m) == (gpus, gpus) or (m.agg is not None and m.agg.tp == gpus):
        notes.append(f"recorded tp {gpus} was the run's total GPU count")
    elif _placeholder_tp(m):
        notes.append("recorded tp 1 was the config's placeholder")
    for name, stage, old in zip(("prefill", "decode"), (topology.prefill, topology.decode), recorded):
        new = _layout(stage, old)
        changed = [f"{f} {getattr(old, f) if old else None}->{getattr(new, f)}" for f in Layout.__dataclass_fields__
                   if old is None or getattr(old, f) != getattr(new, f)]  # fmt: skip
        if changed:
            notes.append(f"{name}: " + ", ".join(changed))
        layouts.append(new)
    notes.append(f"from {topology.citation}")
    return layouts[0], layouts[1], "; ".join(notes)


def inferencex_twin(m: Measurement, sample: Sequence[Measurement]) -> str | None:
    """The id of the InferenceX row that is the same run as `m` (same model, system, backend, precision,
    isl/osl, concurrency, mode and layout (_same_layout); TTFT and TPOT within TWIN_TOLERANCE), or None; of several
    such rows (one run exported twice) the first id in sort order."""
    twins = sorted(x.id for x in sample if x.source == "inferencex" and x.id != m.id and _same_run(x, m))
    return twins[0] if twins else None


def _same_run(x: Measurement, m: Measurement) -> bool:
    alike = ("model", "system", "engine", "precision", "isl", "osl", "concurrency", "mode")
    if any(getattr(x, f) != getattr(m, f) for f in alike) or not _same_layout(x, m):
        return False
    return all(math.isclose(getattr(x, f), getattr(m, f), rel_tol=TWIN_TOLERANCE) for f in ("ttft_ms", "tpot_ms"))


def _same_layout(x: Measurement, m: Measurement) -> bool:
    """Each layout agrees in tp or in moe_ep (the two exports of one run disagree on the other columns,
    e.g. tp 4 / moe_ep 4 recorded as tp 16 / moe_ep 4)."""
    pairs = ((x.agg, m.agg), (x.prefill, m.prefill), (x.decode, m.decode))
    return all((a is None) == (b is None) and (a is None or a.tp == b.tp or a.moe_ep == b.moe_ep) for a, b in pairs)


def _measured_time(m: Measurement) -> str | None:
    """The measured UTC time; a bare date (midnight) reads as the end of that day."""
    stamp = provenance_fields(m.provenance).get("measured") or m.measured_date
    if not stamp:
        return None
    day, _, clock = stamp.partition("T")
    clock = clock.rstrip("Z").split(".")[0]
    return f"{day}T23:59:59Z" if clock in ("", "00:00:00") else f"{day}T{clock}Z"


def _system(runner: str) -> str:
    base = runner.split("-")[0]
    return base if base.startswith("gb") else f"{base}_sxm"


def _image_agrees(rule_image: str, image: str | None) -> bool:
    return not rule_image or image is None or rule_image == image.replace("#", "/")


def _basis(rule: dict[str, str], concurrency: int | None) -> str | None:
    """How `concurrency` relates to the rule's conc-list entry, or None if it is not this entry's run:
    with a recipe, it must be one the recipe's sa-bench sends; without, the entry or entry x decode workers."""
    conc, workers = int(rule["conc"]), int(rule["decode_workers"])
    sent = [int(c) for c in rule["recipe_concurrency"].split("x") if c.strip().isdigit()]
    if sent and concurrency not in sent:
        return None
    if concurrency == conc:
        return "total"
    if concurrency == conc * workers:
        return "per_decode_worker"
    return None


def _recorded_tp(m: Measurement) -> tuple[int | None, int | None]:
    if m.mode == "disagg":
        return m.prefill.tp, m.decode.tp
    return m.agg.tp, m.agg.tp


def _tp_agrees(rule: dict[str, str], m: Measurement) -> bool:
    """Recorded tp equals the config's per stage, or both hold the total GPU count (the agg-labelled
    rows' one tp too), or GB200/GB300 SGLang's placeholder 1; recorded workers, where present, agree."""
    ptp, dtp = _int(rule["prefill_tp"]), _int(rule["decode_tp"])
    pw, dw = int(rule["prefill_workers"]), int(rule["decode_workers"])
    if m.mode == "disagg" and (m.prefill.workers, m.decode.workers) not in ((None, None), (pw, dw)):
        return False
    recorded = _recorded_tp(m)
    if m.mode == "disagg" and _gpus(m.prefill) == ptp and _gpus(m.decode) == dtp:
        return True
    total = pw * ptp + dw * dtp if ptp and dtp else None
    if recorded == (total, total):
        return True
    return _placeholder_tp(m)


def _records_run_gpus(rule: dict[str, str], m: Measurement) -> bool:
    """A disagg row records the rule's total GPU count in both stage tp fields."""
    total = int(rule["prefill_workers"]) * int(rule["prefill_tp"]) + int(rule["decode_workers"]) * int(rule["decode_tp"])
    return m.mode == "disagg" and _recorded_tp(m) == (total, total)


def _placeholder_tp(m: Measurement) -> bool:
    """GB200/GB300 SGLang disagg rows recording one GPU per stage: the config's placeholder tp 1."""
    return m.mode == "disagg" and m.engine == "sglang" and m.system in PLACEHOLDER_TP_SYSTEMS and (_gpus(m.prefill), _gpus(m.decode)) == (1, 1)


def _gpus(layout: Layout) -> int | None:
    """GPUs per worker a recorded layout states (tp x attention_dp)."""
    return None if layout.tp is None else layout.tp * (layout.attention_dp or 1)


def _latest(rules: list[dict[str, str]], when: str) -> list[dict[str, str]]:
    """The matching entries of the latest config version on or before `when`."""

    def effective(r: dict[str, str]) -> str:
        return when if not r["until"] or r["until"] > when else r["until"]

    newest = max(effective(r) for r in rules)
    return [r for r in rules if effective(r) == newest]


def _signature(rule: dict[str, str]) -> tuple:
    cols = ("prefill_workers", "prefill_tp", "prefill_ep", "prefill_attention_dp", "prefill_max_batch_size", "prefill_token_budget",
            "prefill_overlap", "prefill_moe_backend", "decode_workers",
            "decode_tp", "decode_ep", "decode_attention_dp", "decode_max_batch_size", "decode_recv_interval", "nextn")  # fmt: skip
    return tuple(rule[c] for c in cols)


def _describe(rule: dict[str, str]) -> str:
    spec = {"": "spec undecided", "none": "STP"}.get(rule["spec_mode"], f"MTP{rule['nextn']}")

    def stage(s: str) -> str:
        dp = {"true": " dp-attn", "false": "", "": " dp-attn?"}[rule[f"{s}_attention_dp"]]
        moe = f" moe {rule[f'{s}_moe_backend']}" if rule.get(f"{s}_moe_backend") else ""
        return f"{rule[f'{s}_workers']}x tp{rule[f'{s}_tp']} ep{rule[f'{s}_ep'] or '?'}{dp}{moe}"

    return f"{rule['key']}@{rule['commit']} conc {rule['conc']} P {stage('prefill')} / D {stage('decode')} {spec}"


def _topology(rule: dict[str, str], concurrency: int | None) -> Topology:
    def stage(s: str) -> Stage:
        dp = rule[f"{s}_attention_dp"]
        return Stage(workers=int(rule[f"{s}_workers"]), tp=int(rule[f"{s}_tp"]), ep=_int(rule[f"{s}_ep"]),
                     attention_dp=None if dp == "" else dp == "true", max_batch_size=_int(rule[f"{s}_max_batch_size"]),
                     recv_interval=_int(rule.get(f"{s}_recv_interval", "")), token_budget=_int(rule.get(f"{s}_token_budget", "")),
                     overlap=False if rule.get(f"{s}_overlap") == "false" else None, moe_backend=rule.get(f"{s}_moe_backend") or None)  # fmt: skip

    citation = f"{rule['repository']} {rule['file']} @ {rule['commit']} {rule['lines']}: {rule['excerpt']}"
    if rule["recipe_file"]:
        citation += f"; recipe NVIDIA/srt-slurm {rule['recipe_file']} @ {rule['recipe_commit']}"
    if rule["launch_script"]:
        citation += f"; launch script {rule['launch_script']}"
    return Topology(key=rule["key"], commit=rule["commit"], conc_entry=int(rule["conc"]), conc_basis=_basis(rule, concurrency) or "",
                    prefill=stage("prefill"), decode=stage("decode"), nextn=_drafts(rule),
                    recipe_file=rule["recipe_file"] or None, launch_script=rule["launch_script"] or None, citation=citation)  # fmt: skip


def _layout(stage: Stage, old: Layout | None) -> Layout:
    """A stage as a Layout (see corrected_layouts); pp kept as recorded (1 if none)."""
    dp = stage.tp if stage.attention_dp else (1 if stage.attention_dp is False else None)
    tp = 1 if stage.attention_dp else stage.tp  # attention DP undecided: tp holds the worker's GPUs
    moe_tp = stage.tp // stage.ep if stage.ep else None
    pp = old.pp if old is not None and old.pp is not None else 1
    return Layout(batch_size=stage.max_batch_size, workers=stage.workers, tp=tp, pp=pp, attention_dp=dp, moe_tp=moe_tp, moe_ep=stage.ep)


def _drafts(rule: dict[str, str]) -> int | None:
    """The rule's MTP depth: its recorded depth, 0 where the config sets spec-decoding "none" (it
    then decides that no drafts run), else None (undecided)."""
    if rule["nextn"] != "":
        return int(rule["nextn"])
    return 0 if rule["spec_mode"] == "none" else None


def _int(text: str) -> int | None:
    return int(text) if text not in ("", None) else None


__all__ = [
    "SA_BENCH",
    "MultinodeClient",
    "multinode_client",
    "Stage",
    "Topology",
    "Unresolved",
    "corrected_layouts",
    "inferencex_twin",
    "load_rules",
    "resolve",
]
