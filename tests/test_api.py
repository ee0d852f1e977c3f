"""The public Python API (estimator.estimate / sweep / refine / recommend) against the command line: the same
numbers, defaults and one-line errors, and the light `import estimator`."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import math
import shlex
import subprocess
import sys

import pandas as pd
import pytest

import estimator
from estimator.api import ESTIMATE, RECOMMEND, REFINE, SWEEP, EstimatorError, ExitStatus
from estimator.cli import COMMANDS, build_parser, main
from estimator.disagg import run_disagg
from estimator.pricing import AUTO
from estimator.scheduler import run_agg, run_static
from estimator.sweep import sweep_agg, sweep_disagg

MODEL = {"model_path": "Qwen/Qwen3-32B-FP8", "system": "h200_sxm", "backend": "sglang"}
AGG = MODEL | {"tp_size": 2, "batch_size": 16, "isl": 4096, "osl": 512}
DISAGG = MODEL | {"estimate_mode": "disagg", "isl": 4096, "osl": 512, "prefill_batch_size": 1, "prefill_num_workers": 2,
                  "decode_batch_size": 32, "decode_num_workers": 1, "decode_tp_size": 2}  # fmt: skip
SWEEP_ARGS = MODEL | {"isl": 4096, "osl": 512, "ttft": 2000.0, "tpot": (30.0, 50.0), "tp_list": (1, 2)}
RECOMMEND_ARGS = {"model_path": "Qwen/Qwen3-8B", "system": "h200_sxm", "backend": "trtllm", "total_gpus": 2, "isl": 2048, "osl": 256,
                  "ttft": 2000.0, "tpot": 50.0}  # fmt: skip


def argv(command: str, arguments: dict) -> list[str]:
    """The command line of keyword arguments: each keyword as its flag, lists as several words, True as a bare flag."""
    words = [command]
    for name, value in arguments.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        else:
            words += [flag, *map(str, value if isinstance(value, tuple) else (value,))]
    return words


def cli(words: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------
# The API and the command line give the same numbers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [AGG, AGG | {"semantics": "legacy", "ctx_tokens": 2048}, DISAGG], ids=["agg", "agg-legacy", "disagg"])
def test_estimate_row_is_the_json_the_command_prints(arguments):
    code, out, _ = cli([*argv("estimate", arguments), "--json"])
    result = estimator.estimate(**arguments)
    assert code == 0 and json.dumps(result.row) == out.strip()
    assert result.to_frame().iloc[0].to_dict().keys() == result.row.keys()


def test_the_agreement_check_sees_a_different_point():
    """The comparison above fails when the API prices another point than the command line."""
    _, out, _ = cli([*argv("estimate", AGG), "--json"])
    assert json.dumps(estimator.estimate(**AGG | {"tp_size": 4}).row) != out.strip()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """(the API's report, the command's JSON, the command's --out table) of one two-target sweep."""
    path = tmp_path_factory.mktemp("sweep") / "table.csv"
    code, out, _ = cli([*argv("sweep", SWEEP_ARGS), "--json", "--out", str(path), "--progress", "never"])
    assert code == 0
    return estimator.sweep(**SWEEP_ARGS), out.strip(), path


def test_sweep_report_is_what_the_command_prints_and_writes(swept, tmp_path):
    report, out, path = swept
    assert json.dumps(report.to_json()) == out
    report.table.to_csv(tmp_path / "api.csv", index=False)
    assert (tmp_path / "api.csv").read_bytes() == path.read_bytes()
    assert report.row == report.rankings[0].frame.iloc[0].to_dict() and len(report.to_frame()) == sum(len(r.frame) for r in report.rankings)


def test_refine_frame_is_the_file_the_command_writes(swept, tmp_path):
    rows = pd.read_csv(swept[2]).head(3)
    rows.to_csv(src := tmp_path / "rows.csv", index=False)
    code, _, err = cli(["refine", str(src), str(out := tmp_path / "refined.csv"), "--pricing", "row", "--protocol", "benchmark"])
    result = estimator.refine(rows, pricing="row", protocol="benchmark")
    result.to_frame().to_csv(tmp_path / "api.csv", index=False)
    assert code == 0 and err.strip() == result.summary and (tmp_path / "api.csv").read_bytes() == out.read_bytes()
    assert result.unpriced == 0 and result.row["ttft_refined"] > 0
    seeded = estimator.refine(rows, pricing="row", protocol="benchmark", client_seed=0)
    assert seeded.arguments.client_seed == 0 and not seeded.frame["ttft_refined"].equals(result.frame["ttft_refined"])


@pytest.fixture(scope="module")
def recommended(tmp_path_factory):
    """(the API's result, the command's JSON, the command's --save-dir folder) of one recommendation."""
    folder = tmp_path_factory.mktemp("recommend") / "saved"
    code, out, _ = cli([*argv("recommend", RECOMMEND_ARGS), "--json", "--save-dir", str(folder)])
    assert code == 0
    return estimator.recommend(**RECOMMEND_ARGS), out.strip(), folder


def best_printed_row(out: str) -> dict:
    """Rank 1 of the mode whose rank 1 has the most tokens/s/gpu in `recommend --json`'s output."""
    tops = [mode["top"][0] for mode in json.loads(out)["modes"].values() if mode["top"]]
    return max(tops, key=lambda row: row["tokens/s/gpu"])


def test_recommend_row_and_json_are_what_the_command_prints_and_writes(recommended, tmp_path):
    result, out, folder = recommended
    assert result.status is ExitStatus.FOUND and json.dumps(result.to_json(), sort_keys=True, indent=1) == out
    assert result.row == best_printed_row(out) and result.verdict == json.loads(out)["verdict"]
    api = tmp_path / "api"
    written = result.save(api)
    assert sorted(p.relative_to(api) for p in written) == sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert all(p.read_bytes() == (folder / p.relative_to(api)).read_bytes() for p in written)
    result.to_frame().to_csv(tmp_path / "best.csv", index=False, lineterminator="\n")
    assert (tmp_path / "best.csv").read_bytes() == (folder / "best_configs.csv").read_bytes()


def test_the_recommend_agreement_check_sees_a_different_budget(recommended):
    """The comparison above fails when the API recommends for another budget than the command line."""
    _, out, _ = recommended
    other = estimator.recommend(**RECOMMEND_ARGS | {"total_gpus": 4})
    assert other.row != best_printed_row(out) and json.dumps(other.to_json(), sort_keys=True, indent=1) != out


# ---------------------------------------------------------------------------------------------
# One source of arguments: defaults, kinds and errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [ESTIMATE, SWEEP, REFINE, RECOMMEND], ids=lambda c: c.name)
def test_the_command_line_and_the_api_bind_the_same_defaults(command):
    """An absent flag is left to bind: the command line's namespace of required flags alone binds
    to the API's defaults (one source), and every param is a flag of the command."""
    required = {p.name: "1" if p.kind is int else "x" for p in command.params if p.required}
    words = [command.name, *(["in.csv", "out.csv"] if command is REFINE else []), *argv("", required)[1:]]
    namespace = build_parser().parse_args(words)
    assert command.bind(command.given(namespace)) == command.bind(required)
    flags = {s for a in build_parser()._subparsers._group_actions[0].choices[command.name]._actions for s in a.option_strings}
    assert {p.flag for p in command.params} <= flags


def test_the_internal_entry_points_default_to_the_commands_pricer():
    """run_agg and the other entry points default to pricer auto, as the commands do."""
    for function in (run_agg, run_static, run_disagg, sweep_agg, sweep_disagg):
        assert inspect.signature(function).parameters["pricer"].default == AUTO
    assert ESTIMATE.bind(MODEL).pricer == SWEEP.bind(MODEL).pricer == AUTO


@pytest.mark.parametrize("command,arguments,flags", [
    ("estimate", AGG | {"tp_size": "two"}, ["--tp-size", "two"]),
    ("estimate", AGG | {"semantics": "exact"}, ["--semantics", "exact"]),
    ("estimate", AGG | {"isl": 0}, ["--isl", "0"]),
    ("estimate", AGG | {"system": "h900"}, ["--system", "h900"]),
    ("estimate", AGG | {"estimate_mode": "disagg"}, ["--estimate-mode", "disagg"]),
    ("sweep", SWEEP_ARGS | {"tpot": -1.0}, ["--tpot", "-1.0"]),
    ("sweep", SWEEP_ARGS | {"ttft": 1e-320}, ["--ttft", "1e-320"]),  # below the least latency: an inf miss factor before
    ("recommend", RECOMMEND_ARGS | {"tpot": 1e-320}, ["--tpot", "1e-320"]),
    ("sweep", SWEEP_ARGS | {"tp_list": (1, "x")}, ["--tp-list", "1", "x"]),
    ("recommend", RECOMMEND_ARGS | {"total_gpus": 0}, ["--total-gpus", "0"]),
    ("recommend", RECOMMEND_ARGS | {"backend": "tgi"}, ["--backend", "tgi"]),
    ("recommend", RECOMMEND_ARGS | {"top_n": "five"}, ["--top-n", "five"]),
])  # fmt: skip
def test_bad_arguments_raise_one_error_with_the_commands_message(command, arguments, flags, capsys):
    with pytest.raises(EstimatorError) as raised:
        getattr(estimator, command)(**arguments)
    message = str(raised.value)
    words = argv(command, {k: v for k, v in arguments.items()})
    try:
        code = main(words)
    except SystemExit as exit_:  # argparse's own conversion error
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err and "\n" not in message, (message, err)


def test_an_integer_past_float_range_is_one_error():
    """Before: float(10**400) raised OverflowError from the flag converter."""
    with pytest.raises(EstimatorError, match="invalid float value"):
        estimator.sweep(model_path="Qwen/Qwen3-32B", system="h200_sxm", backend="sglang", ttft=10**400)


def test_missing_and_unknown_keywords_are_errors_too():
    with pytest.raises(EstimatorError, match="the following arguments are required: --model-path"):
        estimator.estimate(system="h200_sxm", backend="sglang")
    with pytest.raises(EstimatorError, match="unrecognized arguments: tp"):
        estimator.estimate(**AGG, tp=2)


def test_importing_the_estimator_stays_light_and_sweep_and_recommend_are_callable_packages():
    code = (
        "import sys, estimator; assert 'numba' not in sys.modules and 'pandas' not in sys.modules; "
        "import estimator.sweep.agg; assert estimator.sweep is sys.modules['estimator.sweep'] and callable(estimator.sweep); "
        "from estimator.api import sweep, estimate; assert estimator.estimate is estimate and estimator.sweep.sweep_agg; "
        "import estimator.recommend.output; assert estimator.recommend is sys.modules['estimator.recommend'] and callable(estimator.recommend)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------
# The sweep's and the estimate's output
# ---------------------------------------------------------------------------------------------


def test_one_ranking_per_target_each_the_single_target_sweeps(swept):
    report = swept[0]
    assert [r.target.label for r in report.rankings] == ["ttft<=2000ms tpot<=30ms", "ttft<=2000ms tpot<=50ms"]
    for ranking, tpot in zip(report.rankings, (30.0, 50.0)):
        alone = estimator.sweep(**SWEEP_ARGS | {"tpot": tpot}).rankings[0].frame
        assert ranking.frame.equals(alone) and (ranking.frame["tpot"] <= tpot).all() and (ranking.frame["target"] == ranking.target.label).all()
    assert not report.rankings[0].frame.equals(report.rankings[1].frame)


def test_the_table_names_the_targets_each_point_meets(swept):
    table = pd.read_csv(swept[2], keep_default_na=False)
    for tpot in (30.0, 50.0):
        meets = (table["ttft"] <= 2000.0) & (table["tpot"] <= tpot)
        assert (table["target"].str.contains(f"tpot<={tpot:g}ms", regex=False) == meets).all()
    assert set(table["target"]) >= {"", "ttft<=2000ms tpot<=30ms; ttft<=2000ms tpot<=50ms", "ttft<=2000ms tpot<=50ms"}


def test_replicas_and_total_gpus_count_copies_within_the_gpu_budget(swept):
    report = swept[0]
    small = estimator.sweep(**SWEEP_ARGS | {"total_gpus": 3})
    for frame, budget in ((report.to_frame(), 8), (small.to_frame(), 3)):
        assert (frame["replicas"] == budget // frame["num_total_gpus"]).all() and (frame["total_gpus"] == frame["replicas"] * frame["num_total_gpus"]).all()
    assert set(small.to_frame()["replicas"]) == {1, 3} and not report.table["oom"].any()


def test_printed_rankings_carry_units_replicas_and_a_heading_per_target():
    code, out, _ = cli([*argv("sweep", SWEEP_ARGS), "--show", "2", "--progress", "never"])
    blocks = out.strip().split("\n\n")
    assert code == 0 and [b.splitlines()[0].split(" (")[0] for b in blocks] == ["TTFT <= 2000 ms, TPOT <= 30 ms", "TTFT <= 2000 ms, TPOT <= 50 ms"]
    header = blocks[0].splitlines()[1].split()
    assert header == ["parallel", "replicas", "total_gpus", "bs", "ctx_tokens", "concurrency", "ttft(ms)", "tpot(ms)", "tokens/s/gpu",
                      "tokens/s/user", "seq/s", "memory(GiB)"]  # fmt: skip
    assert all(len(b.splitlines()) == 4 for b in blocks) and "None" not in out


def test_refined_rankings_label_their_figures_closed_loop():
    arguments = SWEEP_ARGS | {"tpot": 50.0, "tp_list": 2, "refined_sla": True}
    report = estimator.sweep(**arguments)
    frame, table = report.rankings[0].frame, report.table
    assert report.closed_loop and len(frame) and {"ttft_closed_loop", "tpot_closed_loop", "tokens/s/gpu_closed_loop"} <= set(frame.columns)
    assert "ttft" not in frame.columns and frame["replayed"].all()
    keyed = table.set_index(["parallel", "bs", "ctx_tokens"])
    for row in frame.to_dict("records"):
        assert row["ttft_closed_loop"] == keyed.loc[(row["parallel"], row["bs"], row["ctx_tokens"]), "ttft_refined"]
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never"])
    assert code == 0 and "closed-loop figures" in out and "ttft_closed_loop(ms)" in out.splitlines()[1]


def test_nothing_meeting_the_targets_exits_3_with_the_closest_miss():
    arguments = SWEEP_ARGS | {"ttft": 50.0, "tpot": 30.0}
    report = estimator.sweep(**arguments)
    miss = report.closest_miss
    assert report.status is ExitStatus.NOTHING_MEETS_TARGETS and not report.to_frame().size
    table = report.table
    assert miss["miss_factor"] == pytest.approx(min((table["ttft"] / 50.0).combine(table["tpot"] / 30.0, max)))
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never"])
    assert code == 3 and f"closest miss: {miss['parallel']} bs {miss['bs']} " in out and f"({miss['miss_factor']:.3f}x)" in out
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never", "--json"])
    assert code == 3 and out.strip() == json.dumps(report.to_json()) and json.loads(out)["status"] == "nothing_meets_targets"


def test_sweep_json_holds_no_nan():
    """Fuzz finding: a refined sweep whose closest miss was never replayed printed its ttft_refined as
    NaN, which is not JSON; a figure a row lacks is null."""
    arguments = SWEEP_ARGS | {"tp_list": 2, "ttft": 1.0, "tpot": 1.0, "refined_sla": True}
    report = estimator.sweep(**arguments)
    assert report.status is ExitStatus.NOTHING_MEETS_TARGETS and math.isnan(report.closest_miss["ttft_refined"])
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never", "--json"])
    document = json.loads(out, parse_constant=lambda word: pytest.fail(f"{word} in sweep --json"))
    assert code == 3 and document["closest_miss"]["ttft_refined"] is None and document["closest_miss"]["ttft"] > 0


def test_a_disagg_sweep_whose_gates_form_no_pair_exits_3_without_a_closest_miss():
    """Fuzz finding: a TTFT target no prefill worker meets forms no worker pair, so the table is empty
    and there is no closest miss to name (the text output raised AttributeError on None)."""
    arguments = {"model_path": "Qwen/Qwen3-32B", "system": "h200_sxm", "backend": "sglang", "mode": "disagg", "tp_list": (1, 2), "ttft": 1.0}
    report = estimator.sweep(**arguments)
    assert report.status is ExitStatus.NOTHING_MEETS_TARGETS and report.closest_miss is None and report.table.empty
    code, out, err = cli([*argv("sweep", arguments), "--progress", "never"])
    assert code == 3 and "no prefill and decode worker pair passed the targets' gates" in out and "Traceback" not in err
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never", "--json"])
    assert code == 3 and json.loads(out)["closest_miss"] is None


@pytest.mark.parametrize("mode", ["agg", "disagg"])
def test_nothing_fitting_in_memory_exits_4_only_when_strict(mode):
    """Qwen3-32B in bf16 (65 GB of weights) on one 48 GB L40S GPU fits nowhere."""
    arguments = {"model_path": "Qwen/Qwen3-32B", "system": "l40s", "backend": "sglang", "mode": mode, "tp_list": 1, "isl": 1024, "osl": 128}
    assert estimator.sweep(**arguments).status is ExitStatus.OUT_OF_MEMORY
    code, out, _ = cli([*argv("sweep", arguments), "--progress", "never"])
    assert code == 3 and "no evaluated point fits in GPU memory" in out
    assert cli([*argv("sweep", arguments), "--progress", "never", "--strict"])[0] == 4


@pytest.mark.parametrize("arguments", [AGG, DISAGG], ids=["agg", "disagg"])
def test_estimate_prints_layouts_without_none(arguments):
    code, out, _ = cli(argv("estimate", arguments))
    assert code == 0 and "None" not in out and "tp2pp1dp1" in out


def test_an_out_of_memory_estimate_is_a_field_a_column_and_exit_4_when_strict():
    arguments = AGG | {"batch_size": 4096, "isl": 8192}
    result = estimator.estimate(**arguments)
    assert result.oom and result.to_frame()["oom"].tolist() == [True] and result.warnings
    assert cli(argv("estimate", arguments))[0] == 0 and cli([*argv("estimate", arguments), "--strict"])[0] == 4
    assert cli([*argv("estimate", AGG), "--strict"])[0] == 0


def test_sweep_json_holds_every_ranking(swept):
    doc = json.loads(swept[1])
    assert doc["status"] == "found" and [r["target"]["tpot_ms"] for r in doc["rankings"]] == [30.0, 50.0]
    assert [len(r["rows"]) for r in doc["rankings"]] == [len(r.frame) for r in swept[0].rankings]


def test_a_request_latency_target_is_one_ranking():
    report = estimator.sweep(**SWEEP_ARGS | {"request_latency": 20000.0, "tp_list": 2})
    (ranking,) = report.rankings
    frame = ranking.frame
    assert ranking.target.label == "request_latency<=20000ms" and len(frame) and (frame["request_latency"] <= 20000.0).all()


# ---------------------------------------------------------------------------------------------
# Help and the systems listing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_help_has_groups_an_example_that_parses_and_exit_statuses(name):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[name]
    text = sub.format_help()
    example = text.split("example:\n  ")[1].splitlines()[0]
    assert example.startswith(f"python -m estimator {name} ") and "exit status:\n  0  " in text
    assert parser.parse_args(shlex.split(example)[3:]).command == name
    assert len([g for g in sub._action_groups if g._group_actions and g.title not in ("options", "positional arguments")]) >= 1


def test_systems_lists_systems_backends_and_data_versions():
    from estimator.perf.versions import version_slots

    code, out, _ = cli(["systems", "--json"])
    doc = json.loads(out)
    h200 = {b["backend"]: b for s in doc["systems"] if s["system"] == "h200_sxm" for b in s["backends"]}
    assert code == 0 and doc["data_package"] == "aiconfigurator-core" and set(h200) == {"sglang", "trtllm", "vllm"}
    assert h200["sglang"]["current"] == version_slots("h200_sxm", "sglang").current in h200["sglang"]["data_versions"]
    text = cli(["systems"])[1]
    assert any(line.split()[:3] == ["h200_sxm", "sglang", h200["sglang"]["current"]] for line in text.splitlines())
