"""Regenerate rules.csv from local git mirrors of the public sources (see README.md).

    python -m measurements.topologies.derive <InferenceX git dir> <srt-slurm git dir> [before UTC] > measurements/topologies/rules.csv

Reads every version of InferenceX `.github/configs/nvidia-master.yaml` (its disaggregated keys),
the versions of `runners/launch_gb200-nv.sh` older than the first GB200 disaggregated key, and for
each recipe a config names (CONFIG_FILE) the recipe file in srt-slurm. Writes one row per
(key, unchanged span of versions, conc-list entry); nothing is fitted.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime

import yaml

INFERENCEX = "SemiAnalysisAI/InferenceX"
SRT_SLURM = "NVIDIA/srt-slurm"  # ishandhanani/srt-slurm moved here; the configs' recipe paths resolve in its history
CONFIG = ".github/configs/nvidia-master.yaml"
LAUNCHER = "runners/launch_gb200-nv.sh"
GB_GPUS_PER_NODE = 4  # GB200/GB300 trays: dynamo components/backends/sglang/slurm_jobs/submit_disagg.sh GPUS_PER_NODE=4
SGLANG_MAX_PREFILL_TOKENS = 16384  # sglang ServerArgs max_prefill_tokens default (python/sglang/srt/server_args.py)
FRAMEWORKS = {"dynamo-trt": "trtllm", "dynamo-trtllm": "trtllm", "dynamo-sglang": "sglang", "dynamo-vllm": "vllm"}


@dataclass(frozen=True)
class Rule:
    """One derived rule row (empty string: the source does not decide the value)."""

    key: str  # InferenceX benchmark key, or launcher:<framework> for the GB200 launcher
    model_prefix: str  # InferenceX model-prefix (dsr1, gptoss, kimik2.5, glm5, ...)
    model: str  # the config's model path
    precision: str  # fp4 / fp8
    runner: str  # InferenceX runner label (h200-multinode, gb200, ...)
    framework: str  # trtllm / sglang / vllm
    isl: int  # input length, tokens
    osl: int  # output length, tokens
    image: str  # container image ('#' normalised to '/'); empty: not named
    conc: int  # the conc-list entry
    recipe_concurrency: str  # sa-bench concurrencies the recipe sends for this entry ('x'-separated); empty: no recipe
    conc_basis: str  # total / per_decode_worker (recipe concurrency = conc x decode workers); empty: undecided
    prefill_workers: int
    prefill_tp: int | str  # GPUs per prefill worker (tensor parallel size)
    prefill_ep: int | str  # MoE expert parallel size
    prefill_attention_dp: str  # true / false
    prefill_max_batch_size: int | str  # running-request cap per attention-DP rank
    prefill_token_budget: int | str  # prompt tokens one prefill pass takes per attention-DP rank (prefill_budget); empty: not set
    prefill_overlap: str  # false: the recipe turns the prefill workers' overlap scheduler off (prefill_overlap_off); empty: not
    prefill_moe_backend: str  # TRT-LLM prefill workers' moe_config.backend in the recipe (TRTLLM, CUTLASS, ...); empty: not set
    decode_workers: int
    decode_tp: int | str
    decode_ep: int | str
    decode_attention_dp: str
    decode_max_batch_size: int | str
    decode_recv_interval: int | str  # SGLang decode workers' scheduler-recv-interval in the recipe; empty: not set (the engine default, 1)
    spec_mode: str  # mtp / none; empty: not decided
    nextn: int | str  # draft tokens per step (0 without MTP)
    recipe_file: str  # srt-slurm recipe path; empty: none
    recipe_commit: str  # srt-slurm commit the recipe facts were read at
    file: str  # source file in `repository`
    commit: str  # first version of `file` holding this row
    first_date: str  # that version's commit time, UTC
    last_commit: str  # last consecutive version holding it
    until: str  # commit time (UTC) of the next version, which no longer holds it; empty: still held at the newest version read
    lines: str  # lines of the entry in `file` @ `commit`
    excerpt: str  # the entry's concurrency line, verbatim
    launch_script: str  # GB200 launcher rows: the script the call runs and where its layout facts are read; empty otherwise

    repository: str = INFERENCEX


COLUMNS = [f.name for f in fields(Rule)]


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True).stdout


def versions(gitdir: str, path: str, before: str = "9999") -> list[tuple[str, str]]:
    """(commit, UTC time) of every version of `path` committed before `before` (UTC), oldest first."""
    out = git(gitdir, "log", "--format=%H %cI", "--", path).split("\n")
    return [(c, utc(t)) for c, t in (line.split() for line in reversed(out) if line) if utc(t) < before]


def utc(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plain(node: yaml.Node):
    """A composed YAML node as Python values (line marks kept only on the nodes)."""
    if isinstance(node, yaml.MappingNode):
        return {plain(k): plain(v) for k, v in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [plain(v) for v in node.value]
    tag, text = node.tag.rsplit(":", 1)[-1], node.value
    if tag == "int":
        return int(text)
    if tag == "bool":
        return text.lower() in ("true", "yes", "on")
    if tag == "float":
        return float(text)
    return None if tag == "null" else text


def settings(stage: dict) -> dict[str, str]:
    """A stage's additional-settings as KEY -> value."""
    return dict(s.split("=", 1) for s in stage.get("additional-settings") or [] if "=" in s)


class Recipes:
    """Facts read from srt-slurm recipe files: the version of a path last written on or before a time."""

    def __init__(self, gitdir: str):
        self.gitdir, self.history, self.cache = gitdir, {}, {}

    def facts(self, path: str, when: str) -> dict:
        """The recipe at `path` as of `when` (UTC; its oldest version if none is older), or {} if absent."""
        if path not in self.history:
            log = git(self.gitdir, "log", "--all", "--diff-filter=AMR", "--format=%H %cI", "--", path).split("\n")
            self.history[path] = sorted((utc(t), c) for c, t in (line.split() for line in log if line))
        past = [c for t, c in self.history[path] if t <= when] or [c for _, c in self.history[path][:1]]
        if not past:
            return {}
        if (path, past[-1]) not in self.cache:
            self.cache[path, past[-1]] = self._read(path, past[-1])
        return self.cache[path, past[-1]]

    def _read(self, path: str, commit: str) -> dict:
        doc = yaml.load(git(self.gitdir, "show", f"{commit}:{path}"), Loader=yaml.CSafeLoader)
        backend, bench = doc.get("backend", {}), doc.get("benchmark", {})
        engine = backend.get("trtllm_config") or backend.get("sglang_config") or backend.get("vllm_config") or {}
        out = {"commit": commit[:12], "concurrencies": str(bench.get("concurrencies", ""))}
        for stage in ("prefill", "decode"):
            cfg = engine.get(stage) or {}
            cap = cfg.get("max_batch_size")
            if cap is None and cfg.get("max-running-requests") is not None:  # SGLang: per worker, split across DP ranks
                dp = cfg.get("data-parallel-size") or cfg.get("dp-size") or 1
                cap = -(-int(cfg["max-running-requests"]) // int(dp)) if cfg.get("enable-dp-attention") else cfg["max-running-requests"]
            out[f"{stage}_max_batch_size"] = cap
            spec = cfg.get("speculative_config") or {}
            steps = spec.get("num_nextn_predict_layers", cfg.get("speculative-num-steps"))
            out[f"{stage}_nextn"] = steps if steps is not None else (0 if stage == "decode" else None)
        prefill, decode = engine.get("prefill") or {}, engine.get("decode") or {}
        out["decode_recv_interval"] = decode.get("scheduler-recv-interval")
        out["prefill_token_budget"] = prefill_budget(prefill)
        out["prefill_overlap"] = "false" if prefill_overlap_off(prefill, backend.get("prefill_environment") or {}) else ""
        out["prefill_moe_backend"] = (prefill.get("moe_config") or {}).get("backend") or ""
        return out


def prefill_overlap_off(stage: dict, environment: dict) -> bool:
    """A recipe's prefill stage turns the overlap scheduler off: TRT-LLM disable_overlap_scheduler; SGLang
    disable-overlap-schedule, or a speculative algorithm without SGLANG_ENABLE_SPEC_V2 (ServerArgs: "Overlap
    scheduler is disabled because of using eagle3 or standalone speculative decoding")."""
    if stage.get("disable_overlap_scheduler") or stage.get("disable-overlap-schedule"):
        return True
    return stage.get("speculative-algorithm") is not None and str(environment.get("SGLANG_ENABLE_SPEC_V2", "")).lower() not in ("1", "true")


def prefill_budget(stage: dict) -> int | None:
    """Prompt tokens one pass of a recipe's prefill stage takes per attention-DP rank, or None when the recipe
    leaves it to the engine: TRT-LLM max_num_tokens (per rank); SGLang min(chunked-prefill-size, divided by the DP
    size under DP attention (ServerArgs._handle_data_parallelism), max-prefill-tokens (default 16384)), the
    PrefillAdder spending both on every prompt it takes (-1: no chunk limit)."""
    if stage.get("max_num_tokens") is not None:
        return int(stage["max_num_tokens"])
    chunk = stage.get("chunked-prefill-size")
    if chunk is None:
        return None
    limit = int(stage.get("max-prefill-tokens") or SGLANG_MAX_PREFILL_TOKENS)
    if int(chunk) < 0:
        return limit
    dp = int(stage.get("data-parallel-size") or stage.get("dp-size") or 1)
    return min(int(chunk) // dp if stage.get("enable-dp-attention") and dp > 1 else int(chunk), limit)


def config_rules(gitdir: str, recipes: Recipes, before: str) -> list[tuple[str, str, dict]]:
    """(commit, time, row) for every disaggregated conc-list entry of every config version before `before`."""
    rows = []
    for commit, when in versions(gitdir, CONFIG, before):
        if git(gitdir, "ls-tree", commit, "--", CONFIG):  # skips the version that deleted the file
            rows += version_rows(git(gitdir, "show", f"{commit}:{CONFIG}"), commit, when, recipes)
    return rows


def version_rows(text: str, commit: str, when: str, recipes: Recipes) -> list[tuple[str, str, dict]]:
    """(commit, time, row) for every disaggregated conc-list entry of one config text."""
    rows, lines = [], text.split("\n")
    for key_node, value_node in yaml.compose(text, Loader=yaml.CSafeLoader).value:
        entry = plain(value_node)
        if not isinstance(entry, dict) or not entry.get("disagg") or "seq-len-configs" not in entry:
            continue  # newer layouts without seq-len-configs postdate every measured run
        for slc_node in _get(value_node, "seq-len-configs").value:
            slc = plain(slc_node)
            for item_node in _get(slc_node, "search-space").value:
                rows += _entry_rows(key_node.value, entry, slc, item_node, lines, recipes, commit, when)
    return rows


def _get(node: yaml.MappingNode, name: str) -> yaml.Node:
    return next(v for k, v in node.value if k.value == name)


def _entry_rows(key, entry, slc, item_node, lines, recipes, commit, when):
    item = plain(item_node)
    if "prefill" not in item or "decode" not in item:
        return []
    pre, dec = item["prefill"], item["decode"]
    ps, ds = settings(pre), settings(dec)
    recipe_file = ps.get("CONFIG_FILE") or ds.get("CONFIG_FILE") or ""
    rec = recipes.facts(recipe_file, when) if recipe_file else {}
    system = entry["runner"].split("-")[0]
    first, end = item_node.start_mark.line, item_node.end_mark
    last = end.line - 1 if end.line >= len(lines) or not lines[end.line][: end.column].strip() else end.line  # mark on the next item
    conc_line = next((ln.strip() for ln in lines[first : last + 1] if "conc-list" in ln), "")
    spec = item.get("spec-decoding")
    nextn = ds.get("DECODE_MTP_SIZE", rec.get("decode_nextn", "") if rec else "")
    if spec is None and nextn == "":
        spec_mode = ""
    else:
        spec_mode = "mtp" if (spec == "mtp" or (nextn not in ("", None) and int(nextn) > 0)) else "none"
    out = []
    for conc in item.get("conc-list", []):
        row = dict(
            key=key, model_prefix=entry.get("model-prefix", ""), model=entry["model"], precision=entry["precision"],
            runner=entry["runner"], framework=FRAMEWORKS.get(entry["framework"], entry["framework"]), isl=slc["isl"], osl=slc["osl"],
            image=entry.get("image", "").replace("#", "/"), conc=conc,
            recipe_concurrency=rec.get("concurrencies", ""), conc_basis=_basis(conc, rec, dec["num-worker"]),
            prefill_workers=pre["num-worker"], decode_workers=dec["num-worker"],
            **_stage("prefill", pre, ps, rec, system, entry["framework"]), **_stage("decode", dec, ds, rec, system, entry["framework"]),
            prefill_token_budget="" if rec.get("prefill_token_budget") is None else rec["prefill_token_budget"],
            prefill_overlap=rec.get("prefill_overlap", ""), prefill_moe_backend=rec.get("prefill_moe_backend", ""),
            decode_recv_interval="" if rec.get("decode_recv_interval") is None else int(rec["decode_recv_interval"]),
            spec_mode=spec_mode, nextn="" if nextn in (None, "") else int(nextn),
            recipe_file=recipe_file, recipe_commit=rec.get("commit", "") if rec else "",
            file=CONFIG, lines=f"L{first + 1}-L{last + 1}", excerpt=conc_line, launch_script="",
        )  # fmt: skip
        out.append((commit, when, row))
    return out


def _basis(conc: int, rec: dict, decode_workers: int) -> str:
    sent = [int(c) for c in rec.get("concurrencies", "").split("x") if c.strip().isdigit()] if rec else []
    if conc in sent:
        return "total"
    return "per_decode_worker" if conc * decode_workers in sent else ""


def _stage(name: str, stage: dict, sets: dict, rec: dict, system: str, framework: str) -> dict:
    tp, ep, dp = stage.get("tp", ""), stage.get("ep", ""), stage.get("dp-attn", "")
    nodes = sets.get(f"{name.upper()}_NODES")
    if framework == "dynamo-sglang" and system in ("gb200", "gb300") and tp == 1 and nodes:
        # placeholder tp ("tp, ep, and dp-attn do nothing"): the launcher's script hardcodes the layout
        tp, ep, dp = int(nodes) * GB_GPUS_PER_NODE // stage["num-worker"], "", ""
    cap = sets.get(f"{name.upper()}_MAX_BATCH_SIZE", rec.get(f"{name}_max_batch_size") if rec else None)
    return {f"{name}_tp": tp, f"{name}_ep": ep, f"{name}_attention_dp": "" if dp == "" else str(bool(dp)).lower(),
            f"{name}_max_batch_size": "" if cap is None else int(cap)}  # fmt: skip


_TRT_CALL = re.compile(r'\./submit_disagg\.sh "mtp=(on|off)" "(tep|dep)" (\d+) (\d+) (\d+) (\d+) (\d+) "[\d.]+" (\d+) (\d+) "([\d ]+)"')
_SGL_CALL = re.compile(r"bash \./submit_disagg\.sh (\d+) (\d+) (\d+) (\d+) (\d+) \$ISL \$OSL \$(\w+) inf(?: (\w+))?")

# What the launcher's calls launch, read from the scripts they run (ai-dynamo/dynamo; its fork csahithi/dynamo carries the
# release branches the launcher checks out). TRT-LLM context workers: tp 4 with EP 4 and attention DP, per-rank batch 4 and
# max_num_tokens 4608 when ISL == OSL, else 1 and 8448.
TRT_CONTEXT_SCRIPT = (
    "ai-dynamo/dynamo components/backends/trtllm/performance_sweeps/submit_disagg.sh @ 0b6abc828 (release/0.5.1-rc0.20251105; "
    "the same lines in release/0.5.1-rc0.pre1 @ 6735f4667) L97-L100: 'benchmark_disagg.slurm ${ctx_num} 4 4 4608 true' if "
    "ISL == OSL else '${ctx_num} 4 1 8448 true' (ctx_tp_size ctx_batch_size ctx_max_num_tokens ctx_enable_attention_dp, "
    "benchmark_disagg.slurm L16-L20); gen_yaml.py: moe_expert_parallel_size ctx_tp_size"
)
TRT_CONTEXT_TP = 4
# SGLang: every worker of the default scripts runs DP attention over all its GPUs with DeepEP MoE (SGLang sets ep_size =
# tp_size under DeepEP); the '1p_4d' script the launcher names is undecided: its comment and the script disagree.
SGLANG_DEFAULT_SCRIPT = (
    "ai-dynamo/dynamo components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh @ e1c7a4a49 L95-L97 and "
    "examples/backends/sglang/slurm_jobs/scripts/gb200-fp8/disagg/default.sh @ 01a634d1b L106-L108: --tp-size $TOTAL_GPUS "
    "--dp-size $TOTAL_GPUS --enable-dp-attention with DeepEP MoE (ep = tp); the launcher's comments: DEP8 / DEP32 / DEP48"
)
SGLANG_SCRIPTS_UNDECIDED = {
    "1p_4d": (
        "the launcher's comment says 'DEP4' but ai-dynamo/dynamo examples/backends/sglang/slurm_jobs/scripts/gb200-fp8/"
        "disagg/1p_4d.sh @ 01a634d1b L127-L129 runs --tensor-parallel-size $TOTAL_GPUS --data-parallel-size 1 "
        "--expert-parallel-size 1: attention DP and EP undecided"
    ),
}
# The launcher's SGLang jobs ran no speculative decoding: InferenceX lists them "mtp": "off" and their scripts pass no
# speculative flag.
SGLANG_NO_SPEC = 'SemiAnalysisAI/InferenceX .github/workflows/full-sweep-1k1k-scheduler.yml @ 175fe5364 L109-L116: "mtp": "off"'
_SEQ = re.compile(r'"\$(?:isl|ISL)" = "(\d+)" \] && \[ "\$(?:osl|OSL)" = "(\d+)"')


def launcher_rules(gitdir: str, before: str) -> list:
    """Rows from the GB200 launcher versions older than `before` (UTC): its submit_disagg.sh calls."""
    out = []
    for commit, when in versions(gitdir, LAUNCHER):
        if when < before:
            out += launcher_version_rows(git(gitdir, "show", f"{commit}:{LAUNCHER}"), commit, when)
    return out


def launcher_version_rows(text: str, commit: str, when: str) -> list[tuple[str, str, dict]]:
    """(commit, time, row) for every submit_disagg.sh call of one launcher text and each of its concurrencies."""
    out, seq, lists = [], None, {}
    for number, line in enumerate(text.split("\n"), 1):
        if m := _SEQ.search(line):
            seq = (int(m[1]), int(m[2]))
        if m := re.search(r'(\w*concurrency_list)="([\dx]+)"', line):
            lists[m[1]] = m[2]
        common = {"model_prefix": "dsr1", "runner": "gb200", "image": "", "recipe_concurrency": "", "conc_basis": "", "recipe_file": "",
                  "recipe_commit": "", "file": LAUNCHER, "lines": f"L{number}", "excerpt": line.strip()}  # fmt: skip
        if (m := _TRT_CALL.search(line)) and seq:
            out += [(commit, when, row) for row in _trt_launch_rows(m.groups(), seq, common)]
        if (m := _SGL_CALL.search(line)) and seq and m[6] in lists:
            out += [(commit, when, row) for row in _sglang_launch_rows(m.groups(), lists[m[6]], seq, common)]
    return out


def _trt_launch_rows(call: tuple[str, ...], seq: tuple[int, int], common: dict) -> list[dict]:
    """One row per concurrency of a TRT-LLM submit_disagg.sh call (its context workers: TRT_CONTEXT_SCRIPT)."""
    mtp, mode, ctx, gen, gen_tp, batch, _, nextn, _, conc_list = call
    dp = "true" if mode == "dep" else "false"
    context_batch, context_tokens = (4, 4608) if seq[0] == seq[1] else (1, 8448)
    return [dict(common, key="launcher:dynamo-trtllm", model="deepseek-r1-0528-fp4-v2", precision="fp4", framework="trtllm", isl=seq[0],
                 osl=seq[1], conc=int(conc), prefill_workers=int(ctx), prefill_tp=TRT_CONTEXT_TP, prefill_ep=TRT_CONTEXT_TP,
                 prefill_attention_dp="true", prefill_max_batch_size=context_batch, prefill_token_budget=context_tokens, prefill_overlap="", prefill_moe_backend="",
                 decode_workers=int(gen), decode_tp=int(gen_tp),
                 decode_ep=int(gen_tp), decode_attention_dp=dp, decode_max_batch_size=int(batch), decode_recv_interval="", spec_mode="mtp" if mtp == "on" else "none",
                 nextn=int(nextn), launch_script=TRT_CONTEXT_SCRIPT)
            for conc in conc_list.split()]  # fmt: skip


def _sglang_launch_rows(call: tuple[str, ...], concs: str, seq: tuple[int, int], common: dict) -> list[dict]:
    """One row per concurrency of an SGLang submit_disagg.sh call: the default scripts' DEP layout (SGLANG_DEFAULT_SCRIPT)
    or, for a named script whose sources disagree, attention DP and EP left undecided; no speculative decoding."""
    pn, pw, dn, dw, _ = (int(g) for g in call[:5])
    undecided = SGLANG_SCRIPTS_UNDECIDED.get(call[6] or "")
    ptp, dtp = pn * GB_GPUS_PER_NODE // pw, dn * GB_GPUS_PER_NODE // dw
    dp, pep, dep = ("", "", "") if undecided else ("true", ptp, dtp)
    return [dict(common, key="launcher:dynamo-sglang", model="deepseek-r1-0528", precision="fp8", framework="sglang", isl=seq[0], osl=seq[1],
                 conc=int(conc), prefill_workers=pw, prefill_tp=ptp, prefill_ep=pep, prefill_attention_dp=dp, prefill_max_batch_size="", prefill_token_budget="", prefill_overlap="",
                 prefill_moe_backend="", decode_workers=dw, decode_tp=dtp, decode_ep=dep, decode_attention_dp=dp, decode_max_batch_size="", decode_recv_interval="", spec_mode="none", nextn=0,
                 launch_script=f"{undecided or SGLANG_DEFAULT_SCRIPT}; {SGLANG_NO_SPEC}")
            for conc in concs.split("x")]  # fmt: skip


def spans(rows: list, all_versions: dict[str, list[tuple[str, str]]]) -> list[Rule]:
    """Merge a row's consecutive versions into one Rule (identity: every field but the line marks)."""
    rules, open_ = [], {}
    by_file: dict[str, list] = {}
    for commit, when, row in rows:
        by_file.setdefault(row["file"], []).append((commit, when, row))
    for file, items in by_file.items():
        order = all_versions[file]
        index = {c: i for i, (c, _) in enumerate(order)}
        open_.clear()
        for commit, when, row in items:
            ident = tuple((k, v) for k, v in row.items() if k not in ("lines", "excerpt"))
            i = index[commit]
            span = open_.get(ident)
            if span and span["last"] == i - 1:
                span["last"] = i
            else:
                if span:
                    rules.append(_close(span, order))
                open_[ident] = {"first": i, "last": i, "row": row, "commit": commit, "when": when}
        rules += [_close(s, order) for s in open_.values()]
    return sorted(rules, key=lambda r: (r.key, r.first_date, r.isl, r.osl, r.conc, r.spec_mode, r.lines))


def _close(span: dict, order: list) -> Rule:
    nxt = order[span["last"] + 1][1] if span["last"] + 1 < len(order) else ""
    return Rule(**span["row"], commit=span["commit"][:9], first_date=span["when"], last_commit=order[span["last"]][0][:9], until=nxt)


def main(argv: list[str]) -> None:
    inferencex, srt_slurm, before = (argv + ["9999"])[:3]
    rows = config_rules(inferencex, Recipes(srt_slurm), before)
    gb_first = min((when for _, when, row in rows if row["runner"].startswith("gb200")), default="9999")
    rows += launcher_rules(inferencex, gb_first)
    rules = spans(rows, {CONFIG: versions(inferencex, CONFIG, before), LAUNCHER: versions(inferencex, LAUNCHER, before)})
    writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for rule in rules:
        writer.writerow(asdict(rule))


if __name__ == "__main__":
    main(sys.argv[1:])
