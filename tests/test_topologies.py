"""The disaggregated-topology resolver: config excerpts written for the test, then the real sample."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, replace
from typing import ClassVar

import pytest

from measurements.loaders import load_silicon_sample
from measurements.recipes import models as recipe_models
from measurements.recipes.models import dsr1_mtp_accepted
from measurements.schema import Layout
from measurements.topologies import derive
from measurements.topologies.resolver import (
    Topology,
    Unresolved,
    corrected_layouts,
    inferencex_twin,
    load_rules,
    resolve,
)
from measurements.topologies.runs import published_run

# Two entries of one key with the same conc-list value: MTP with 11 decode workers, STP with 9 (the
# shape of dsr1-fp8-h200-dynamo-trt); an MTP/STP pair with one topology; a pair told apart only by
# its recipe's concurrencies.
CONFIG = """
dsr1-fp8-h200-dynamo-trt:
  image: nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1
  model: deepseek-ai/DeepSeek-R1-0528
  model-prefix: dsr1
  runner: h200-multinode
  precision: fp8
  framework: dynamo-trt
  multinode: true
  disagg: true
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - spec-decoding: "mtp"
      conc-list: [32]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true, additional-settings: ["PREFILL_MAX_BATCH_SIZE=8"]}
      decode: {num-worker: 11, tp: 8, ep: 8, dp-attn: false, additional-settings: ["DECODE_MAX_BATCH_SIZE=128", "DECODE_MTP_SIZE=3"]}
    - conc-list: [32]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true, additional-settings: ["PREFILL_MAX_BATCH_SIZE=8"]}
      decode: {num-worker: 9, tp: 8, ep: 8, dp-attn: false, additional-settings: ["DECODE_MAX_BATCH_SIZE=256", "DECODE_MTP_SIZE=0"]}
    - spec-decoding: "mtp"
      conc-list: [4]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: false}
      decode: {num-worker: 2, tp: 8, ep: 8, dp-attn: false, additional-settings: ["DECODE_MTP_SIZE=3"]}
    - conc-list: [4]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: false}
      decode: {num-worker: 2, tp: 8, ep: 8, dp-attn: false, additional-settings: ["DECODE_MTP_SIZE=0"]}
  - isl: 8192
    osl: 1024
    search-space:
    - conc-list: [16]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true, additional-settings: ["CONFIG_FILE=recipes/a.yaml"]}
      decode: {num-worker: 4, tp: 8, ep: 8, dp-attn: false}
    - conc-list: [64]
      prefill: {num-worker: 1, tp: 8, ep: 8, dp-attn: true, additional-settings: ["CONFIG_FILE=recipes/b.yaml"]}
      decode: {num-worker: 1, tp: 8, ep: 8, dp-attn: true}
"""
COMMIT, WHEN = "c0ffee0000000000000000000000000000000000", "2026-03-01T12:00:00Z"


class FakeRecipes:
    """Recipe facts written for the test: a.yaml sends 16 x 4 decode workers, b.yaml sends 64."""

    FACTS: ClassVar[dict[str, dict]] = {
        "recipes/a.yaml": {"commit": "aaaa", "concurrencies": "64", "prefill_max_batch_size": 4, "decode_max_batch_size": 16, "decode_nextn": 0},
        "recipes/b.yaml": {"commit": "bbbb", "concurrencies": "64", "prefill_max_batch_size": 4, "decode_max_batch_size": 8, "decode_nextn": 0},
    }

    def facts(self, path: str, when: str) -> dict:
        return self.FACTS[path]


@pytest.fixture(scope="module")
def rules() -> list[dict[str, str]]:
    rows = derive.version_rows(CONFIG, COMMIT, WHEN, FakeRecipes())
    return [{k: str(v) for k, v in asdict(r).items()} for r in derive.spans(rows, {derive.CONFIG: [(COMMIT, WHEN)]})]


@pytest.fixture(scope="module")
def sample():
    return load_silicon_sample()


@pytest.fixture(scope="module")
def disagg_row(sample):
    """A real InferenceX H200 TRT-LLM disagg row, to be re-dressed per test."""
    return next(m for m in sample if m.mode == "disagg" and m.system == "h200_sxm" and m.engine == "trtllm" and m.source == "inferencex")


def _row(base, concurrency, tp=8, isl=1024, measured="2026-03-02T00:00:00Z"):
    layout = Layout(batch_size=None, workers=None, tp=tp, pp=1, attention_dp=1, moe_tp=1, moe_ep=8)
    return replace(
        base,
        concurrency=concurrency,
        isl=isl,
        osl=1024,
        prefill=layout,
        decode=layout,
        model="deepseek-ai/DeepSeek-R1",
        precision="fp8",
        image="nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1",
        provenance=f"measured={measured}",
    )


def test_unique_match_by_total_concurrency(rules, disagg_row):
    """288 = 32 x 9 decode workers: only the STP entry; 352 = 32 x 11: only the MTP one."""
    stp = resolve(_row(disagg_row, 288), rules)
    assert isinstance(stp, Topology), stp
    assert (stp.decode.workers, stp.nextn, stp.conc_entry, stp.conc_basis) == (9, 0, 32, "per_decode_worker")
    assert (stp.prefill.attention_dp, stp.prefill.max_batch_size, stp.decode.max_batch_size) == (True, 8, 256)
    assert COMMIT[:9] in stp.citation and "conc-list: [32]" in stp.citation
    mtp = resolve(_row(disagg_row, 352), rules)
    assert isinstance(mtp, Topology) and (mtp.decode.workers, mtp.nextn) == (11, 3)


def test_mtp_stp_tie_stays_unresolved_naming_both(rules, disagg_row):
    result = resolve(_row(disagg_row, 8), rules)  # 4 x 2 decode workers: both entries, one topology
    assert isinstance(result, Unresolved)
    assert result.reason.startswith("2 candidate topologies") and "MTP3" in result.reason and "STP" in result.reason


def test_recipe_concurrencies_decide_the_basis(rules, disagg_row):
    """a.yaml sends 64 = 16 x 4 (per decode worker), b.yaml 64 (total): a row at 64 has two candidates
    by the conc-list alone, and the recipes keep both; a row at 16 is no recipe's and matches none."""
    both = resolve(_row(disagg_row, 64, isl=8192), rules)
    assert isinstance(both, Unresolved) and both.reason.startswith("2 candidate topologies")
    none = resolve(_row(disagg_row, 16, isl=8192), rules)
    assert isinstance(none, Unresolved) and "concurrency 16" in none.reason


def test_row_before_any_config(rules, disagg_row):
    result = resolve(_row(disagg_row, 288, measured="2026-02-01T00:00:00Z"), rules)
    assert isinstance(result, Unresolved) and "before 2026-02-01" in result.reason


def test_total_gpu_count_in_tp_matches_and_is_corrected(rules, disagg_row):
    """Recorded tp 80 in both stages = 1 x 8 + 9 x 8 GPUs: the STP entry; the layouts take the config's."""
    m = _row(disagg_row, 288, tp=80)
    topology = resolve(m, rules)
    assert isinstance(topology, Topology), topology
    prefill, decode, note = corrected_layouts(m, topology)
    assert (prefill.tp, prefill.attention_dp, prefill.moe_ep, prefill.workers, prefill.batch_size) == (1, 8, 8, 1, 8)
    assert (decode.tp, decode.attention_dp, decode.moe_ep, decode.workers, decode.batch_size) == (8, 1, 8, 9, 256)
    assert "total GPU count" in note and "attention_dp 1->8" in note and "tp 80->1" in note


def test_wrong_tp_is_not_matched(rules, disagg_row):
    result = resolve(_row(disagg_row, 288, tp=4), rules)
    assert isinstance(result, Unresolved) and "recorded tp" in result.reason


def test_rule_table_cites_every_row():
    table = load_rules()
    assert table and all(r["repository"] and r["file"] and re.fullmatch(r"[0-9a-f]{9}", r["commit"]) and r["excerpt"] for r in table)
    assert all(r["recipe_commit"] for r in table if r["recipe_concurrency"] or r["conc_basis"])


def test_real_sample_coverage(sample):
    """Coverage of the InferenceX disagg rows and the 55 agg-labelled GB200 DeepSeek-R1 rows."""
    disagg = [m for m in sample if m.source == "inferencex" and m.mode == "disagg"]
    agg = [m for m in sample if m.source == "inferencex" and m.mode == "agg" and m.system == "gb200" and m.model == "deepseek-ai/DeepSeek-R1"]
    counts = {}
    for name, rows in (("disagg", disagg), ("agg", agg)):
        results = [(m, resolve(m)) for m in rows]
        reasons = Counter(re.sub(r"^\d+ candidate topologies:.*", "candidates", r.reason) for _, r in results if isinstance(r, Unresolved))
        counts[name] = (len(rows), sum(isinstance(r, Topology) for _, r in results), dict(reasons))
        assert all(r.reason.strip() for _, r in results if isinstance(r, Unresolved))
        for m, r in results:
            if isinstance(r, Topology):
                prefill, decode, note = corrected_layouts(m, r)
                assert prefill.workers == r.prefill.workers and decode.workers == r.decode.workers and note
    print(counts)
    assert counts["disagg"][1] >= 1000 and counts["agg"] == (55, counts["agg"][1], counts["agg"][2]) and counts["agg"][1] >= 45


def test_gap_analysis_twins(sample):
    gap = [m for m in sample if re.search(r"source_file=(kimi-k2\.5|qwen3\.5-397b)-gap-analysis\.csv", m.provenance)]
    twins = {m.id: inferencex_twin(m, sample) for m in gap}
    by_id = {m.id: m for m in sample}
    assert len(gap) == 123 and sum(t is not None for t in twins.values()) >= 120
    for gid, tid in twins.items():
        if tid is not None:
            g, t = by_id[gid], by_id[tid]
            assert t.source == "inferencex" and abs(t.ttft_ms - g.ttft_ms) <= 6e-4 * g.ttft_ms and t.concurrency == g.concurrency


@pytest.mark.parametrize(
    ("engine", "nextn", "accepted"),
    [("trtllm", 1, 0.92), ("trtllm", 2, 1.58), ("trtllm", 3, 1.82), ("sglang", 2, 1.58), ("sglang", 1, None), ("sglang", 3, None), ("vllm", 2, None)],
)
def test_dsr1_mtp_acceptance_carries_to_sglang_only_inside_its_published_range(engine, nextn, accepted):
    """The checkpoint's published figure (TRT-LLM blog 1) serves SGLang where SGLang's own published range
    holds it (depth 2: 2.58 in 2.4-2.7); at depths 1 and 3 it lies outside (1.92 > 1.9, 2.82 < 2.9)."""
    got = dsr1_mtp_accepted(engine, nextn)
    if accepted is None:
        assert isinstance(got, str) and engine in got and str(nextn) in got
    else:
        assert got[0] == accepted and "blog1" in got[1] and (engine == "trtllm" or "lm-sys" in got[1])


def test_dsr1_mtp_acceptance_outside_a_narrowed_range_is_refused(monkeypatch):
    """The SGLang check can fail: a published range that excludes the checkpoint's figure leaves the depth unpriced."""
    monkeypatch.setattr(recipe_models, "SGLANG_DSR1_ACCEPT_LENGTH", {2: (2.6, 2.7)})
    assert "outside SGLang's published 2.6-2.7" in recipe_models.dsr1_mtp_accepted("sglang", 2)


def test_sglang_mtp_depth_2_runs_are_priced_with_the_checkpoint_acceptance(sample):
    sglang_mtp = [r for r in map(resolve, (m for m in sample if m.engine == "sglang" and m.mode == "disagg")) if isinstance(r, Topology) and r.nextn == 2]
    assert sglang_mtp
    m = next(m for m in sample if m.engine == "sglang" and m.mode == "disagg" and isinstance(resolve(m), Topology) and resolve(m).nextn == 2)
    published = published_run(m, resolve(m))
    assert not isinstance(published, str), published
    run, note = published
    assert (run.settings.nextn, run.settings.nextn_accepted) == (2, 1.58) and "inside SGLang's own published 2.4-2.7" in note


# A launcher text written for the test in the shape of InferenceX runners/launch_gb200-nv.sh: one TRT-LLM call per sequence
# length, then SGLang calls over named concurrency lists, one of them naming a script whose sources disagree.
LAUNCHER_TEXT = """
    if [ "$isl" = "1024" ] && [ "$osl" = "1024" ]; then
        ./submit_disagg.sh "mtp=off" "tep" 1 4 8 128 128 "0.9" 0 0 "1 2"
    elif [ "$isl" = "8192" ] && [ "$osl" = "1024" ]; then
        ./submit_disagg.sh "mtp=on" "dep" 5 1 32 8 32 "0.7" 3 0 "128"
    fi
    if [ "$ISL" = "1024" ] && [ "$OSL" = "1024" ]; then
        top_of_curve_concurrency_list="4096"
        bottom_of_curve_concurrency_list="2x4"
        bash ./submit_disagg.sh 4 2 8 1 9 $ISL $OSL $top_of_curve_concurrency_list inf
        bash ./submit_disagg.sh 1 1 4 4 9 $ISL $OSL $bottom_of_curve_concurrency_list inf 1p_4d
"""


def test_launcher_calls_carry_their_scripts_layouts():
    rows = [row for _, _, row in derive.launcher_version_rows(LAUNCHER_TEXT, COMMIT, WHEN)]
    trt = [r for r in rows if r["framework"] == "trtllm"]
    assert [(r["isl"], r["conc"], r["prefill_attention_dp"], r["prefill_max_batch_size"], r["decode_attention_dp"], r["nextn"]) for r in trt] == [
        (1024, 1, "true", 4, "false", 0), (1024, 2, "true", 4, "false", 0), (8192, 128, "true", 1, "true", 3)]  # fmt: skip
    assert all(r["prefill_tp"] == r["prefill_ep"] == 4 and "submit_disagg.sh @ 0b6abc828" in r["launch_script"] for r in trt)
    sglang = {r["conc"]: r for r in rows if r["framework"] == "sglang"}
    assert sorted(sglang) == [2, 4, 4096]
    top = sglang[4096]
    assert (top["prefill_workers"], top["prefill_tp"], top["prefill_ep"], top["prefill_attention_dp"]) == (2, 8, 8, "true")
    assert (top["decode_workers"], top["decode_tp"], top["decode_ep"], top["decode_attention_dp"], top["nextn"]) == (1, 32, 32, "true", 0)
    bottom = sglang[2]
    assert (bottom["prefill_attention_dp"], bottom["decode_attention_dp"], bottom["prefill_ep"]) == ("", "", "")
    assert "DEP4" in bottom["launch_script"] and bottom["nextn"] == 0


def test_a_row_in_the_launcher_result_schema_resolves_to_the_launcher_on_the_cutover_day(sample):
    """On the day the configs took over (a date-only stamp reads as that day's end), a row recording the run's GPU count
    in both tp fields ran under the launcher; the same row recording per-stage tp takes the config."""
    rows = load_rules()
    v1 = next(m for m in sample if m.engine == "sglang" and m.system == "gb200" and m.isl == 8192 and m.concurrency == 512
              and m.mode == "disagg" and m.prefill.tp == 72)  # fmt: skip
    topology = resolve(v1, rows)
    assert isinstance(topology, Topology) and topology.key == "launcher:dynamo-sglang" and topology.decode.attention_dp
    assert topology.prefill.ep == topology.prefill.tp == 8 and topology.nextn == 0
    per_stage = replace(v1, prefill=replace(v1.prefill, tp=1), decode=replace(v1.decode, tp=1))
    other = resolve(per_stage, rows)
    assert not isinstance(other, Topology) or not other.key.startswith("launcher:")


@pytest.mark.parametrize(("framework", "per_c"), [("trtllm", 8), ("sglang", 5)])
def test_launcher_runs_take_their_launch_paths_client(sample, framework, per_c):
    runs = []
    for m in sample:
        if m.system == "gb200" and m.engine == framework and isinstance(t := resolve(m), Topology) and t.key.startswith("launcher:"):
            published = published_run(m, t)
            if not isinstance(published, str):
                runs.append((m, published[0]))
    assert runs
    for m, run in runs:
        assert run.protocol.num_prompts == per_c * m.concurrency and run.protocol.random_range_ratio == 0.8 and run.protocol.request_rate == math.inf
        assert "dynamo" in run.protocol.client_citation and "discarded" in run.protocol.client_citation


def test_sglang_low_latency_recipes_carry_their_decode_recv_interval(sample):
    """The GB200/GB300 low-latency recipes set scheduler-recv-interval 10 on the decode worker (rules.csv
    decode_recv_interval): the published run and its estimator inputs carry it, cited; other recipes leave 1."""
    from measurements.mapping import map_measurement

    intervals = Counter()
    for m in (m for m in sample if m.engine == "sglang" and m.mode == "disagg" and m.system in ("gb200", "gb300")):
        topology = resolve(m)
        published = published_run(m, topology) if isinstance(topology, Topology) else None
        if published is None or isinstance(published, str):
            continue
        run, _ = published
        intervals[run.settings.recv_interval] += 1
        if topology.decode.recv_interval is not None:
            assert f"decode scheduler-recv-interval {topology.decode.recv_interval}" in run.settings.citation
            assert topology.recipe_file and topology.recipe_file in run.settings.citation
        inputs = map_measurement(m).inputs
        assert inputs is None or inputs.decode_recv_interval == run.settings.recv_interval
    assert intervals[10] >= 40 and intervals[1] >= 100 and set(intervals) == {1, 10}


RECIPE = """
backend:
  sglang_config:
    prefill: {scheduler-recv-interval: 5, max-running-requests: 64}
    decode: {scheduler-recv-interval: 10, max-running-requests: 256}
benchmark: {concurrencies: "4x8"}
"""


def test_recipe_recv_interval_is_read_from_the_decode_stage(monkeypatch):
    """derive reads scheduler-recv-interval from a recipe's decode stage (not the prefill's) into the rule row; a recipe
    without it leaves the cell empty (the engine default)."""
    monkeypatch.setattr(derive, "git", lambda gitdir, *args: RECIPE)
    assert derive.Recipes("unused")._read("recipes/a.yaml", "f" * 40)["decode_recv_interval"] == 10
    monkeypatch.setattr(derive, "git", lambda gitdir, *args: RECIPE.replace("scheduler-recv-interval: 10, ", ""))
    assert derive.Recipes("unused")._read("recipes/a.yaml", "f" * 40)["decode_recv_interval"] is None
    rows = derive.version_rows(CONFIG, COMMIT, WHEN, FakeRecipesWithIntervals())
    by_recipe = {row["recipe_file"]: row["decode_recv_interval"] for _, _, row in rows if row["recipe_file"]}
    assert by_recipe == {"recipes/a.yaml": 10, "recipes/b.yaml": ""}


class FakeRecipesWithIntervals(FakeRecipes):
    FACTS: ClassVar[dict[str, dict]] = {
        "recipes/a.yaml": FakeRecipes.FACTS["recipes/a.yaml"] | {"decode_recv_interval": 10},
        "recipes/b.yaml": FakeRecipes.FACTS["recipes/b.yaml"] | {"decode_recv_interval": None},
    }


@pytest.mark.parametrize(
    ("stage", "budget"),
    [
        ({"max_num_tokens": 16384, "max_batch_size": 16}, 16384),  # TRT-LLM: per attention-DP rank already
        ({"chunked-prefill-size": 32768, "max-prefill-tokens": 32768}, 32768),
        ({"chunked-prefill-size": 65536, "max-prefill-tokens": 65536, "enable-dp-attention": True, "data-parallel-size": 8}, 8192),
        ({"chunked-prefill-size": 65536, "max-prefill-tokens": 8192, "enable-dp-attention": True, "dp-size": 4}, 8192),
        ({"chunked-prefill-size": 24576}, 16384),  # SGLang's default max-prefill-tokens binds
        ({"chunked-prefill-size": -1, "max-prefill-tokens": 20000}, 20000),  # no chunk limit
        ({"max-running-requests": 64}, None),  # left to the engine
    ],
)
def test_prefill_budget_per_attention_dp_rank(stage, budget):
    assert derive.prefill_budget(stage) == budget


def test_published_prefill_batch_takes_the_recipes_budget(sample):
    """A TRT-LLM recipe with max_num_tokens 16384 and max_batch_size 16 prefills 16 whole 1k prompts a pass per rank,
    not the 8 of the engine's default 8192."""
    m = next(m for m in sample if m.id == "dsr1_gb200_trtllm_fp4_disagg_1024x1024_c6144_cfg411")
    topology = resolve(m)
    assert isinstance(topology, Topology) and topology.prefill.token_budget == 16384 and topology.prefill.max_batch_size == 16
    run, note = published_run(m, topology)
    assert run.prefill.batch_size == 16 and "the recipe's budget" not in note
    lower = replace(topology, prefill=replace(topology.prefill, token_budget=8192))
    run, note = published_run(m, lower)
    assert run.prefill.batch_size == 8 and "the whole prompts of the recipe's budget (8192 // 1024 = 8)" in note


@pytest.mark.parametrize(
    ("stage", "environment", "off"),
    [
        ({"disable_overlap_scheduler": True}, {}, True),  # TRT-LLM context servers
        ({"disable-overlap-schedule": True}, {}, True),
        ({"speculative-algorithm": "EAGLE"}, {}, True),  # spec v1: SGLang turns the overlap scheduler off
        ({"speculative-algorithm": "EAGLE"}, {"SGLANG_ENABLE_SPEC_V2": "1"}, False),
        ({"chunked-prefill-size": 8192}, {}, False),
    ],
)
def test_a_recipe_turning_the_prefill_overlap_off_is_read(stage, environment, off):
    assert derive.prefill_overlap_off(stage, environment) is off
