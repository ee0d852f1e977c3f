"""The published SGLang cookbook set (measurements/published): the committed CSV loads with its client
protocol, the derivation reproduces a golden file from fixture pages written for these tests (every
figure invented) and the committed CSV from the cookbook mirror when present, and the report's
closed-loop replay covers the rows."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from estimator.cli import main
from estimator.closedloop.host import sglang_graphs_every_prefill
from estimator.closedloop.lengths import uniform_quantile_lengths
from estimator.report.methods import replay_input
from estimator.settings import SGLANG_SHAPE_COMPILE_MS
from measurements import builds
from measurements.clients import CLIENTS, SGL_COOKBOOK
from measurements.loaders import load_measurements, write_measurements
from measurements.mapping import map_measurement
from measurements.published import derive

FIXTURES = Path(__file__).parent / "fixtures" / "published"
GOLDEN = FIXTURES / "expected.csv"
MIRROR = Path(os.environ.get("SGL_COOKBOOK_GIT", "/work/.mirror/sgl-project+sgl-cookbook/repo"))
PAGES = (("A/model_a.md", "model_a.md", "2026-01-01T00:00:00Z"), ("B/model_b.md", "model_b.md", "2026-02-01T00:00:00Z"))


def fixture_repo(root: Path, edit=lambda name, text: text) -> Path:
    """A git repository holding the fixture pages under docs/autoregressive/, one commit each at fixed
    dates and names (the same commit ids on every machine); `edit` may change a page's text."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    run = lambda *args, **extra: subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env={**env, **extra})  # noqa: E731
    root.mkdir(parents=True, exist_ok=True)
    run("init", "-q", "-b", "main")
    for target, name, date in PAGES:
        path = root / "docs" / "autoregressive" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(edit(name, (FIXTURES / name).read_text()))
        run("add", str(path))
        run("commit", "-q", "-m", f"add {name}", GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return root / ".git"


def derived_csv(gitdir: Path, out: Path) -> bytes:
    """The derived file's bytes (line ends included: the same mirror and REF give a byte-identical file)."""
    assert derive.main([str(gitdir), "--out", str(out)]) == 0
    return out.read_bytes()


@pytest.fixture(scope="module")
def fixture_derivation(tmp_path_factory) -> derive.Derivation:
    return derive.derive(fixture_repo(tmp_path_factory.mktemp("cookbook")))


@pytest.fixture(scope="module")
def committed():
    return load_measurements(derive.CSV_PATH)


# ---- the committed set ------------------------------------------------------------------------


def test_committed_set_loads_with_the_cookbook_protocol(committed):
    assert committed and len({m.id for m in committed}) == len(committed)
    client = CLIENTS[SGL_COOKBOOK]
    for m in committed:
        p, s = m.protocol, m.statistics
        assert (m.source, m.engine, m.mode, p.client, p.client_citation) == (SGL_COOKBOOK, "sglang", "agg", client.client, client.citation)
        assert (s.statistic, m.ttft_ms, m.tpot_ms) == ("mean", s.ttft_mean_ms, s.tpot_mean_ms), m.id
        assert p.num_prompts % m.concurrency == 0 and p.num_warmups == 1 and p.ignore_eos and p.request_rate == float("inf"), m.id
        zero_outputs = m.engine_version in derive.ZERO_OUTPUT_RELEASES  # every committed run keeps bench_serving's r = 0
        assert p.client_seed == (None if zero_outputs else 1), m.id
        assert p.random_range_ratio == 1.0 / max(m.isl, m.osl), m.id  # SGLang's default 0.0: lengths on [1, L]
        assert m.agg.tp * m.agg.attention_dp == m.agg.moe_tp * m.agg.moe_ep and m.agg.batch_size == m.concurrency, m.id
        assert m.system in {system for _, system in derive.SYSTEMS}
        assert "outputs match on [" in m.provenance, m.id  # every output ran to its seed-1 draw: ignore_eos, lengths on [1, L]


def test_committed_speculative_rows_carry_their_published_acceptance(committed):
    speculative = [m for m in committed if m.settings.nextn]
    assert speculative
    for m in speculative:
        accept = float(m.provenance.split("accept length ")[1].split(" ")[0])
        assert m.settings.nextn_accepted == pytest.approx(accept - 1.0) and 0 < m.settings.nextn_accepted <= m.settings.nextn
        assert (m.settings.max_num_seqs, m.settings.overlap_scheduler) == (derive.SPECULATIVE_RUNNING_DEFAULT, False)


def test_piecewise_graphs_follow_the_build_and_the_launch(committed):
    """A page's SGLang release before 0.5.10 has the piecewise CUDA graphs off (recorded false); from 0.5.10 (or a block
    dated from PR 16331's merge) they are left to the default, on, and the replay graphs the launches SGLang would: the
    MiniMax-M2.7 TP 2 rows (0.5.10.post1) pay no eager floor, the same rows on 0.5.9 would."""
    release = lambda m: tuple(int(x) for x in m.engine_version.split(".")[:3]) if m.engine_version else None  # noqa: E731
    off = [m for m in committed if m.settings.piecewise_cuda_graph is False]
    default = [m for m in committed if m.settings.piecewise_cuda_graph is None]
    assert off and default and len(off) + len(default) == len(committed)
    assert all(release(m) is None or release(m) < (0, 5, 10) for m in off)
    assert all(release(m) is None or release(m) >= (0, 5, 10) for m in default)
    minimax = [m for m in default if m.model == "MiniMaxAI/MiniMax-M2.7"]
    assert minimax and all(sglang_graphs_every_prefill(replay_input(map_measurement(m)).deployment, m.settings) for m in minimax)
    older = builds.with_build_compiles(dataclasses.replace(minimax[0], engine_version="0.5.9"))
    assert older.settings.piecewise_cuda_graph is False and not builds.sglang_piecewise_default(older)


def test_a_result_published_before_the_l2norm_fix_compiles_per_prompt_length(committed):
    """A page records no run date; its block's last change bounds it. The Qwen3.5 runs (SGLang main, block of 2026-02-16)
    ran before PR 31558, so their gated-delta-net layers compile per new length as the sample's runs of that era do."""
    qwen = [m for m in committed if m.model == "Qwen/Qwen3.5-397B-A17B"]
    assert qwen and all(m.engine_version is None and m.measured_date is None for m in qwen)
    assert all(m.settings.shape_compile_ms == SGLANG_SHAPE_COMPILE_MS for m in qwen)
    assert all(m.settings.shape_compile_ms == 0.0 for m in committed if not builds._gated_delta_net(m.model))


def test_every_committed_model_is_priced_through_a_bundled_config(committed):
    for m in committed:
        mapped = map_measurement(m)
        assert mapped.reason is None and mapped.inputs is not None, (m.id, mapped.reason)


@pytest.mark.skipif(not MIRROR.exists(), reason=f"no sgl-cookbook mirror at {MIRROR} (set SGL_COOKBOOK_GIT)")
def test_derivation_reproduces_the_committed_csv_from_the_mirror(tmp_path):
    assert derived_csv(MIRROR, tmp_path / "out.csv") == derive.CSV_PATH.read_bytes()


# ---- the derivation, on fixture pages ---------------------------------------------------------


def test_derivation_reproduces_the_golden_file(tmp_path):
    assert derived_csv(fixture_repo(tmp_path / "repo"), tmp_path / "out.csv") == GOLDEN.read_bytes()


def test_a_perturbed_figure_changes_the_derived_file(tmp_path):
    def edit(name: str, text: str) -> str:
        return text.replace("Mean TTFT (ms):                          111.11", "Mean TTFT (ms):  111.12") if name == "model_a.md" else text

    assert derived_csv(fixture_repo(tmp_path / "repo", edit), tmp_path / "out.csv") != GOLDEN.read_bytes()


def test_a_row_holds_the_page_launch_and_bench_serving_defaults(fixture_derivation):
    row = next(m for m in fixture_derivation.rows if m.model == "MiniMaxAI/MiniMax-M2.5")
    assert (row.system, row.engine_version, row.isl, row.osl, row.concurrency) == ("b200_sxm", "0.5.9", 1000, 1000, 1)
    assert (row.ttft_ms, row.tpot_ms, row.statistics.ttft_median_ms, row.statistics.tpot_p99_ms) == (111.11, 7.77, 100.0, 8.88)
    layout = row.agg
    assert (layout.tp, layout.attention_dp, layout.moe_tp, layout.moe_ep, layout.batch_size) == (8, 1, 1, 8, 1)
    assert (row.settings.step_token_budget, row.settings.origin) == (8192, "source")  # the launch's --chunked-prefill-size
    assert (row.protocol.num_prompts, row.protocol.num_warmups, row.protocol.random_range_ratio) == (10, 1, 1.0 / 1000)
    assert "--mem-fraction-static" in row.provenance and "result L37-L54" in row.provenance


def test_a_speculative_row_takes_the_accept_length_and_sglangs_speculative_defaults(fixture_derivation):
    row = next(m for m in fixture_derivation.rows if m.model == "Qwen/Qwen3.5-397B-A17B")
    assert (row.system, row.engine_version, row.isl, row.osl, row.concurrency, row.protocol.num_prompts) == ("h200_sxm", None, 8000, 1000, 16, 80)
    assert (row.settings.nextn, row.settings.nextn_accepted, row.settings.max_num_seqs, row.settings.overlap_scheduler) == (3, 2.25, 48, False)
    assert row.settings.step_token_budget == 8192  # SGLang's default on a 141 GB GPU
    assert "inputs 1 against" in row.provenance and "outputs 2 against" in row.provenance  # the fixture's totals are not the draws


def test_left_out_blocks_name_their_reason(fixture_derivation):
    reasons = {(Path(item.path).name, item.line): item.reason for item in fixture_derivation.left_out}
    assert len(fixture_derivation.rows) == 2 and len(reasons) == 4
    assert reasons[("model_a.md", 62)].startswith("dataset sharegpt")
    assert reasons[("model_a.md", 118)].startswith("hardware 'MI300X' is not a GPU system")
    assert reasons[("model_b.md", 10)] == "the same figures as docs/autoregressive/A/model_a.md L37, published earlier"
    assert reasons[("model_b.md", 39)].startswith("no bundled config for model example-org/Not-A-Bundled-Model")


def test_a_block_without_an_agreeing_bench_command_is_left_out(tmp_path):
    def edit(name: str, text: str) -> str:
        return text.replace("--num-prompts 10 \\\n  --max-concurrency 1", "--num-prompts 20 \\\n  --max-concurrency 1") if name == "model_a.md" else text

    result = derive.derive(fixture_repo(tmp_path / "repo", edit))
    reasons = {(Path(i.path).name, i.line): i.reason for i in result.left_out}
    assert reasons[("model_a.md", 37)].startswith("no bench_serving command in its section agrees")


def test_the_seed_draw_check_tells_the_output_length_bound():
    figures = {"Total input tokens": "6101", "Total generated tokens": "4220"}
    said = lambda **change: derive.seed_draws({**figures, **change}, 1000, 1000, 0.0, 10, 1).split(": ", 1)[1]  # noqa: E731
    assert said() == "inputs match, outputs match on [1, osl]"
    assert said(**{"Total generated tokens": "4210"}) == "inputs match, outputs match on [0, osl]"
    assert (
        said(**{"Total generated tokens": "4221", "Total input tokens": "6091"})
        == "inputs 6091 against 6101 drawn, outputs 4221 against 4220 drawn on [1, osl]"
    )


@pytest.mark.parametrize("isl, osl", [(1000, 1000), (1000, 8000), (8000, 1000), (1024, 1024), (3, 7)])
def test_the_replay_ratio_gives_sglangs_default_lengths(isl, osl):
    ratio = derive.replay_range_ratio(0.0, isl, osl)
    assert 0 < ratio <= 1
    for length in (isl, osl):
        lengths = uniform_quantile_lengths(length, ratio, 4 * length)
        assert (lengths.min(), lengths.max()) == (1, length)  # [1, L]: SGLang's [max(int(L*0), 1), L]
    if isl != osl:  # the shorter length's reciprocal would start the longer one above 1
        longer = max(isl, osl)
        assert uniform_quantile_lengths(longer, 1.0 / min(isl, osl), longer).min() > 1


def test_a_bad_git_dir_is_one_line(tmp_path, capsys):
    assert derive.main([str(tmp_path / "missing"), "--out", str(tmp_path / "o.csv")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: cannot read HEAD of {tmp_path / 'missing'}") and not (tmp_path / "o.csv").exists()


# ---- the report on the set --------------------------------------------------------------------


def _closed_loop_points(tmp_path: Path, limit: int | None) -> pd.DataFrame:
    points = tmp_path / "points.csv"
    argv = ["report", "--measurements", str(derive.CSV_PATH), "--methods", "closed_loop", "--workers", "1", "--out", str(tmp_path / "r.html"),
            "--points", str(points), *(["--limit", str(limit)] if limit else [])]  # fmt: skip
    assert main(argv) == 0
    return pd.read_csv(points)


def test_the_report_replays_every_single_client_row(tmp_path, committed):
    single = sum(m.concurrency == 1 for m in committed)  # the file lists them first
    points = _closed_loop_points(tmp_path, single)
    assert len(points) == single and set(points["concurrency"]) == {1}
    assert points["covered"].all(), points.loc[~points["covered"], ["id", "reason"]].to_string()
    assert (points[["ttft_pred_ms", "tpot_pred_ms"]] > 0).all().all()


def test_the_report_replays_a_row_in_the_statistic_it_states(tmp_path, committed):
    """The replay reports the row's statistic: the same run stated as its median predicts the replay's median."""
    m = next(m for m in committed if m.concurrency == 16)
    stats = dataclasses.replace(m.statistics, statistic="median")
    median = dataclasses.replace(m, id=m.id + "-median", ttft_ms=stats.ttft_median_ms, tpot_ms=stats.tpot_median_ms, statistics=stats)
    path = tmp_path / "two.csv"
    write_measurements([m, median], path)
    points = tmp_path / "p.csv"
    argv = ["report", "--measurements", str(path), "--methods", "closed_loop", "--workers", "1", "--out", str(tmp_path / "r.html"), "--points", str(points)]
    assert main(argv) == 0
    mean, med = pd.read_csv(points).set_index("id").loc[[m.id, median.id], "ttft_pred_ms"]
    assert mean != med


def test_a_graphed_row_says_so_in_its_note_and_the_report_counts_it(tmp_path, committed):
    """The closed_loop note of a row SGLang graphs (MiniMax-M2.7, 0.5.10.post1) names the graphs, the same row with the
    graphs off does not, and the report's protocol facts count the graphed row apart from the eager ones."""
    from estimator.report import GRAPHED_PREFILL_NOTE

    graphed = next(m for m in committed if m.model == "MiniMaxAI/MiniMax-M2.7")
    eager = dataclasses.replace(graphed, id=graphed.id + "-eager", settings=graphed.settings.replace(piecewise_cuda_graph=False))
    path, points, html = tmp_path / "two.csv", tmp_path / "p.csv", tmp_path / "r.html"
    write_measurements([graphed, eager], path)
    argv = ["report", "--measurements", str(path), "--methods", "closed_loop", "--workers", "1", "--out", str(html), "--points", str(points)]
    assert main(argv) == 0
    notes = pd.read_csv(points).set_index("id")["note"].fillna("")
    assert GRAPHED_PREFILL_NOTE in notes[graphed.id] and GRAPHED_PREFILL_NOTE not in notes[eager.id]
    assert "1 SGLang agg rows run a build whose piecewise CUDA graphs" in html.read_text()


@pytest.mark.full
def test_the_report_replays_every_row(tmp_path, committed):
    points = _closed_loop_points(tmp_path, None)
    assert len(points) == len(committed)
    assert points["covered"].all(), points.loc[~points["covered"], ["id", "reason"]].to_string()
