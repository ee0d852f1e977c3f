"""Fuzz tier (issue 26 item 10): hypothesis draws command lines of `estimate`, `price-ops`, `sweep`,
`recommend` and `refine` rows (sizes across and beyond their ranges, names, flag combinations) and
each run must either print its result with finite, non-negative figures (exit 0; 3 when a sweep or
recommend finds nothing meeting the targets; 4 out of memory under --strict) or exit 2 with one
`error:` line and no traceback.

Runs go in-process through the command line's main. Examples per command: 2,000 under the nightly
hypothesis profile, FUZZ_EXAMPLES otherwise (the ci profile draws them derandomized, so CI runs the
same seeded subset every time). A replayed run's work grows with concurrency x output length, so the
closed-loop flags are drawn at sizes a replay finishes in seconds; every other size is drawn freely.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from estimator.cli import main
from estimator.errors import InvalidInputError
from estimator.pricing.base import OpPrice

NIGHTLY_EXAMPLES = 2000
FUZZ_EXAMPLES = 30  # per command outside the nightly profile: a few dozen
fuzz = settings(max_examples=NIGHTLY_EXAMPLES if settings.get_current_profile_name() == "nightly" else FUZZ_EXAMPLES)

# ---- what a run may print ------------------------------------------------------------------------


def run(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one in-process command line; stderr holds the log records a
    user sees there (the command line configures no logging, so Python's last-resort handler prints
    warnings bare; under pytest its capture handler would take them instead)."""
    out, err = io.StringIO(), io.StringIO()
    logs = logging.StreamHandler(err)
    logs.setLevel(logging.WARNING)
    logging.getLogger().addHandler(logs)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:  # argument errors leave through the parser
        code = exc.code
    finally:
        logging.getLogger().removeHandler(logs)
    return code, out.getvalue(), err.getvalue()


def numbers(text: str) -> list[tuple[str, float]]:
    """Every figure of a command's output: the numbers of a JSON document, else each whitespace-
    separated token that reads as a float (names such as Llama-3.1-8B do not)."""
    try:
        document = json.loads(text)
    except ValueError:
        return [(token, float(token)) for token in text.split() if _is_float(token)]
    return list(_json_numbers(document, ""))


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _json_numbers(value, where: str):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _json_numbers(item, f"{where}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield where, float(value)


def bad_figures(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Figures that are not finite, or negative (a printed '-0.000' included)."""
    return [(name, v) for name, v in pairs if not math.isfinite(v) or v < 0 or name.startswith("-")]


PYTHON_ERROR = re.compile(r"(^|: )[A-Z]\w*(Error|Exception): ")  # a reason or warning quoting a Python exception: a bug escaped as text
ERROR_LINE = re.compile(r"^error: ", re.MULTILINE)  # the command line's error line (a warning's reason may quote "database error: ...")


REPORTS_A_MISS = ("sweep", "recommend")  # the commands that exit 3 when no configuration meets the targets (estimator.api.status)


def assert_one_outcome(argv: list[str]) -> tuple[int, str]:
    """Exit 2 with one error line and nothing on stdout, or a result with finite non-negative figures
    on stdout and no error: exit 0, 3 (sweep, recommend: nothing meets the targets) or 4 (--strict:
    out of memory); anything else (another status, a traceback, an exception) fails. (status, stdout)."""
    code, out, err = run(argv)
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("error: "), (argv, out, err)
        return code, out
    allowed = {0} | ({3} if argv[0] in REPORTS_A_MISS else set()) | ({4} if "--strict" in argv else set())
    assert code in allowed, (argv, code, err)
    assert "Traceback" not in err and not ERROR_LINE.search(err) and not PYTHON_ERROR.search(err), (argv, err)
    assert not bad_figures(numbers(out)), (argv, out[-2000:], bad_figures(numbers(out)))
    return code, out


def test_the_checks_catch_what_they_are_for(monkeypatch):
    """The outcome checks fail on a NaN, an infinity and a negative figure (text and JSON), on an
    exception escaping main, on a two-line error and on an exit status the command never exits with
    (3 outside sweep and recommend, 4 without --strict)."""
    assert [name for name, _ in bad_figures(numbers("TTFT: nan ms\nTPOT: 1.5 ms -0.000 x inf"))] == ["nan", "-0.000", "inf"]
    assert bad_figures(numbers('{"ttft": -1.0, "x": {"y": [2, 3]}, "m": "Llama-3.1-8B"}')) == [(".ttft", -1.0)]
    assert numbers("Meta-Llama-3.1-8B tp1pp1 64.2%") == []
    assert PYTHON_ERROR.search("sweep: skipping h200_sxm tp2: IndexError: index 0") and PYTHON_ERROR.search("OverflowError: int too large")
    assert not PYTHON_ERROR.search("unknown system 'h900_sxm'") and not PYTHON_ERROR.search("error: tp must be a positive integer")
    assert ERROR_LINE.search("sweep: skipping gb200 tp2: no data\nerror: no layout fits") and ERROR_LINE.search("error: x")
    assert not ERROR_LINE.search("sweep: skipping gb200 tp2 pp1: perf database error: MoE data missing for MoeKey {...}\n")
    price_ops = ["price-ops", *DEPLOY_OK, "--phase", "context", "--batch-size", "1", "--isl", "8"]
    assert assert_one_outcome(price_ops)[0] == 0
    monkeypatch.setattr("estimator.cli.price_ops.price_phase", lambda args: [OpPrice("op", -1.0, "silicon")])
    with pytest.raises(AssertionError, match="-1.0"):
        assert_one_outcome(price_ops)
    monkeypatch.setattr("estimator.cli.price_ops.price_phase", lambda args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        assert_one_outcome(price_ops)
    monkeypatch.setattr("estimator.cli.price_ops.price_phase", lambda args: (_ for _ in ()).throw(InvalidInputError("two\nlines")))
    with pytest.raises(AssertionError):
        assert_one_outcome(price_ops)
    for status in (3, 4):
        monkeypatch.setattr("estimator.cli.price_ops.run", lambda ns, status=status: status)
        with pytest.raises(AssertionError, match=f"assert {status} in"):
            assert_one_outcome(price_ops)


# ---- drawn arguments -----------------------------------------------------------------------------

MODELS = ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-0.6B", "meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3")
SYSTEMS = ("h200_sxm", "h100_sxm", "b200_sxm", "gb200")
BACKENDS = ("sglang", "vllm", "trtllm")
QUANTS = ("fp8", "fp8_block", "float16", "bfloat16", "nvfp4", "int4_wo", "w4a16_mxfp4")
EDGE_INTS = (0, -1, -(2**31), 2**31 - 1, 2**31, 2**40, 2**53 + 1, 2**63 - 1, 2**63, 10**30)
NOT_NUMBERS = ("1.5", "abc", "", "1e3", "0x10", "nan", " 7", "-", "\u0663")  # the last: an Arabic-Indic 3, which int() reads
BAD_FLOATS = ("0", "-0.1", "1.0000001", "nan", "inf", "-inf", "1e-300", "1e300", "abc", "")


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy, odds: int = 4) -> st.SearchStrategy:
    """good `odds` times to bad's once: most runs get past one value and reach the next."""
    return st.sampled_from((True,) * odds + (False,)).flatmap(lambda ok: good if ok else bad)  # one_of(good, good, ...) would weigh good once


def size(lo: int, hi: int) -> st.SearchStrategy:
    """An integer argument: within [lo, hi] mostly, else at and beyond the arithmetic's edges or not an integer."""
    return mostly(st.integers(lo, hi).map(str), st.one_of(st.sampled_from(EDGE_INTS).map(str), st.sampled_from(NOT_NUMBERS)))


def fraction(lo: float, hi: float) -> st.SearchStrategy:
    return mostly(st.floats(lo, hi).map(repr), st.one_of(st.floats().map(repr), st.sampled_from(BAD_FLOATS)))


def name(valid: tuple[str, ...], invalid: tuple[str, ...]) -> st.SearchStrategy:
    return mostly(st.sampled_from(valid), st.sampled_from(invalid))


def flag(option: str, values: st.SearchStrategy, rare: bool = False) -> st.SearchStrategy:
    """[] or [option, value] (a list value gives several tokens); present half the time, a rare flag a quarter."""
    present = values.map(lambda v: [option, *v] if isinstance(v, list) else [option, v])
    return st.sampled_from((False, False, False, True) if rare else (False, True)).flatmap(lambda on: present if on else st.just([]))


def needed(option: str, values: st.SearchStrategy) -> st.SearchStrategy:
    """[option, value] mostly, [] (the option left out) else: for options a mode requires."""
    return mostly(values.map(lambda v: [option, v]), st.just([]), odds=9)


def flags(*drawn: st.SearchStrategy) -> st.SearchStrategy:
    return st.tuples(*drawn).map(lambda parts: [token for part in parts for token in part])


def switch(option: str) -> st.SearchStrategy:
    return st.sampled_from(([], [option]))


parallel = mostly(st.sampled_from(("1", "2", "4", "8")), st.sampled_from(("0", "-1", "3", "16", "64", "65", "128", str(2**31), "abc")))
ISL, OSL, BATCH = size(1, 32768), size(1, 4096), size(1, 1024)
REPLAY_BATCH, REPLAY_OSL = size(1, 256), size(1, 2048)  # a replay's work grows with concurrency x osl
RECOMMEND_REFINED_OSL = mostly(st.integers(1, 64).map(str), st.sampled_from(EDGE_INTS).map(str))  # the edges fail fast (range, replay bound)


@st.composite
def model_config(draw, folder: Path) -> str:
    """A config.json path: Qwen3-32B's config with a field or two drawn from any JSON value."""
    from estimator.models.config import bundled_model_configs_dir

    raw = json.loads((bundled_model_configs_dir() / "Qwen--Qwen3-32B_config.json").read_text())
    fields = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
              "max_position_embeddings", "vocab_size", "architectures", "torch_dtype")  # fmt: skip
    value = st.one_of(
        st.integers(-2, 2**40), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4), st.none(), st.lists(st.integers(0, 4), max_size=2)
    )
    for field in draw(st.lists(st.sampled_from(fields), min_size=1, max_size=2)):
        raw[field] = draw(value)
    path = folder / "config.json"
    path.write_text(json.dumps(raw))
    return str(path)


@st.composite
def deployment(draw, folder: Path, layout: bool = True) -> list[str]:
    """The deployment's names and options, and with `layout` its parallel sizes (a sweep takes lists)."""
    model = draw(mostly(name(MODELS, ("no/such-model", "")), model_config(folder)))
    argv = ["--model-path", model, "--system", draw(name(SYSTEMS, ("h900_sxm", ""))), "--backend", draw(name(BACKENDS, ("tensorrt", "SGLang")))]
    argv += draw(flags(
        flag("--backend-version", name(("current", "previous"), ("next", "0.0.1", "1.3.0rc20", "")), rare=True), flag("--nextn", size(0, 3), rare=True),
        flag("--gemm-quant-mode", name(QUANTS, ("bogus", "")), rare=True), flag("--kvcache-quant-mode", name(QUANTS, ("bogus", "")), rare=True),
        flag("--pricer", st.sampled_from(("auto", "native", "reference", "hybrid")), rare=True), switch("--allow-long-context"),
    ))  # fmt: skip
    if layout:
        argv += draw(flags(
            flag("--tp-size", parallel), flag("--pp-size", parallel, rare=True), flag("--attention-dp-size", parallel, rare=True),
            flag("--moe-tp-size", parallel, rare=True), flag("--moe-ep-size", parallel),
        ))  # fmt: skip
    return argv


DEPLOY_OK = ["--model-path", "Qwen/Qwen3-32B", "--system", "h200_sxm", "--backend", "sglang"]

# ---- the commands --------------------------------------------------------------------------------


@st.composite
def estimate_argv(draw, folder: Path) -> list[str]:
    mode = draw(mostly(st.sampled_from(("agg", "disagg", "static", "static_ctx", "static_gen")), st.just("bogus"), odds=9))
    closed_loop = draw(st.sampled_from(([], [], ["--closed-loop"], ["--closed-loop", "benchmark"]))) if mode in ("agg", "disagg") else []
    batch, osl = (REPLAY_BATCH, REPLAY_OSL) if closed_loop else (BATCH, OSL)
    argv = ["estimate", *draw(deployment(folder)), "--estimate-mode", mode, *closed_loop]
    argv += draw(flags(
        flag("--isl", ISL), flag("--osl", osl), flag("--prefix", size(0, 4096), rare=True), flag("--batch-size", batch),
        flag("--ctx-tokens", size(1, 65536), rare=True), flag("--nextn-accepted", fraction(0.0, 4.0), rare=True),
        flag("--stride", size(1, 64), rare=True), flag("--free-gpu-memory-fraction", fraction(0.05, 1.0), rare=True),
        flag("--max-seq-len", size(1, 65536), rare=True), flag("--semantics", st.sampled_from(("legacy", "uncached"))),
        switch("--json"), flag("--detail", st.just("time"), rare=True), switch("--strict"),
    ))  # fmt: skip
    if mode == "disagg":
        for role in ("prefill", "decode"):
            argv += draw(flags(
                needed(f"--{role}-batch-size", batch), needed(f"--{role}-num-workers", size(1, 8)),
                flag(f"--{role}-tp-size", parallel, rare=True), flag(f"--{role}-pp-size", parallel, rare=True),
                flag(f"--{role}-free-gpu-memory-fraction", fraction(0.05, 1.0), rare=True), flag(f"--{role}-max-seq-len", size(1, 65536), rare=True),
            ))  # fmt: skip
        argv += draw(flag("--decode-system", name(SYSTEMS, ("h900_sxm",)), rare=True))
    return argv


@st.composite
def price_ops_argv(draw, folder: Path) -> list[str]:
    argv = ["price-ops", *draw(deployment(folder)), "--phase", draw(mostly(st.sampled_from(("context", "generation")), st.just("decode"), odds=9))]
    argv += draw(flags(needed("--batch-size", BATCH), needed("--isl", ISL)))
    return argv + draw(flags(flag("--prefix", size(0, 4096)), switch("--json")))


SIZE_LISTS = st.lists(parallel, min_size=1, max_size=2)


@st.composite
def sweep_argv(draw, folder: Path) -> list[str]:
    mode = draw(mostly(st.sampled_from(("agg", "disagg")), st.just("static"), odds=9))
    refined = draw(st.sampled_from(([], [], [], ["--refined-sla"])))
    osl, batch = (REPLAY_OSL, REPLAY_BATCH) if refined else (OSL, size(1, 2048))
    argv = ["sweep", *draw(deployment(folder, layout=False)), "--mode", mode, "--progress", "never", *refined]
    argv += draw(flags(
        flag("--isl", ISL), flag("--osl", osl), flag("--prefix", size(0, 4096), rare=True), flag("--ttft", fraction(1.0, 1e5)),
        flag("--tpot", st.lists(fraction(1.0, 1e3), min_size=1, max_size=2)), flag("--request-latency", fraction(1.0, 1e6), rare=True),
        flag("--tp-list", SIZE_LISTS), flag("--pp-list", SIZE_LISTS, rare=True), flag("--dp-list", SIZE_LISTS, rare=True),
        flag("--moe-tp-list", SIZE_LISTS, rare=True), flag("--moe-ep-list", SIZE_LISTS), flag("--total-gpus", parallel, rare=True),
        flag("--max-batch-size", batch, rare=True), flag("--ctx-stride", size(1, 4096), rare=True), switch("--enable-chunked-prefill"),
        flag("--top-k", size(0, 20), rare=True), flag("--semantics", st.sampled_from(("legacy", "uncached"))), flag("--show", size(1, 10), rare=True),
        flag("--nextn-accepted", fraction(0.0, 4.0), rare=True), flag("--replay-pricing", st.sampled_from(("row", "engine"))),
        flag("--out", name(("table.csv", "table.parquet"), ("table.txt", "missing/dir/table.csv", "")).map(lambda n: str(folder / n))),
        switch("--json"), switch("--strict"),
    ))  # fmt: skip
    if mode == "disagg":
        argv += draw(flags(
            flag("--decode-system", name(SYSTEMS, ("h900_sxm",)), rare=True), flag("--prefill-tp-list", SIZE_LISTS, rare=True),
            flag("--decode-tp-list", SIZE_LISTS, rare=True), flag("--prefill-max-num-tokens", size(1, 65536), rare=True),
            flag("--decode-max-batch-size", batch, rare=True), flag("--max-prefill-workers", size(1, 8)), flag("--max-decode-workers", size(1, 8)),
            flag("--top-n", size(1, 10), rare=True), switch("--autoscale"),
        ))  # fmt: skip
    return argv


@st.composite
def recommend_argv(draw, folder: Path) -> list[str]:
    model = draw(mostly(name(MODELS, ("no/such-model", "")), model_config(folder)))
    argv = ["recommend", "--model-path", model, "--system", draw(name(SYSTEMS, ("h900_sxm", "")))]
    # --refined-sla replays the top configurations at the concurrency they reach (thousands for a short prompt): osl stays short
    refined = draw(st.sampled_from(([], [], [], ["--refined-sla"])))
    argv += [*refined, "--osl", draw(RECOMMEND_REFINED_OSL)] if refined else draw(flag("--osl", OSL))
    argv += draw(flags(
        needed("--total-gpus", mostly(st.sampled_from(("1", "2", "4", "8")), st.sampled_from(("0", "-1", "3", "65", str(2**31), "abc")))),
        flag("--backend", name((*BACKENDS, "auto"), ("tensorrt", "SGLang"))), flag("--backend-version", name(("current", "previous"), ("next", "0.0.1", "")), rare=True),
        flag("--decode-system", name(SYSTEMS, ("h900_sxm",)), rare=True), flag("--isl", ISL),
        flag("--prefix", size(0, 4096), rare=True), flag("--ttft", fraction(1.0, 1e5)), flag("--tpot", fraction(1.0, 1e3)),
        flag("--request-latency", fraction(1.0, 1e6), rare=True), flag("--top-n", size(1, 10), rare=True),
        flag("--pricer", st.sampled_from(("auto", "native", "reference", "hybrid")), rare=True), flag("--semantics", st.sampled_from(("legacy", "uncached"))),
        switch("--allow-long-context"), switch("--json"),
        flag("--save-dir", name(("saved",), ("missing/dir", "")).map(lambda n: str(folder / n)), rare=True),
    ))  # fmt: skip
    return argv


WRITTEN = {"--out": Path("."), "--save-dir": Path("best_configs.csv")}  # output flag -> the file a run writes under its value


def check_in_a_folder(data, command) -> None:
    """A command line drawn by `command` (a strategy given the run's scratch folder) has one outcome,
    and a run that printed its result wrote its --out (sweep) or --save-dir (recommend)."""
    with tempfile.TemporaryDirectory() as folder:
        argv = data.draw(command(Path(folder)))
        code, _ = assert_one_outcome(argv)
        event(f"exit {code}")
        for i, token in enumerate(argv[:-1]):
            if token in WRITTEN and code != 2:
                assert (Path(argv[i + 1]) / WRITTEN[token]).is_file(), argv


@pytest.mark.parametrize("command", [estimate_argv, price_ops_argv, sweep_argv, recommend_argv], ids=["estimate", "price-ops", "sweep", "recommend"])
@given(st.data())
@fuzz
def test_fuzz_command_line(command, data):
    check_in_a_folder(data, command)


# ---- refine rows ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_rows(tmp_path_factory) -> pd.DataFrame:
    """Two agg and two disagg sweep rows, the rows refine is fuzzed from."""
    folder = tmp_path_factory.mktemp("fuzz-rows")
    base = ["sweep", *DEPLOY_OK[:-1], "vllm", "--isl", "1024", "--osl", "128", "--tp-list", "2", "--progress", "never", "--ttft", "5000", "--tpot", "100"]
    frames = []
    for mode in ("agg", "disagg"):
        assert main([*base, "--mode", mode, "--max-prefill-workers", "2", "--max-decode-workers", "2", "--out", str(folder / f"{mode}.csv")]) == 0
        frames.append(pd.read_csv(folder / f"{mode}.csv").head(2))
    return pd.concat(frames, ignore_index=True)


ints = st.integers
ROW_VALUES = {  # column -> the values a sweep row holds there (replayed sizes bounded to a replay's seconds)
    "isl": ints(1, 32768), "osl": ints(1, 2048), "bs": ints(1, 256), "concurrency": ints(1, 256), "ctx_tokens": ints(1, 65536),
    "tp": st.sampled_from((1, 2, 4, 8)), "pp": st.sampled_from((1, 2)), "dp": st.sampled_from((1, 2)), "prefix": ints(0, 512),
    "model": st.sampled_from(MODELS), "system": st.sampled_from(SYSTEMS), "backend": st.sampled_from(BACKENDS),
    "version": st.sampled_from(("0.10.1", "0.24.0", "0.5.14", "1.3.0rc20")), "ttft": st.floats(1, 1e5), "tpot": st.floats(1, 1e3),
    "(p)workers": ints(1, 4), "(p)tp": st.sampled_from((1, 2, 4)), "(p)pp": st.sampled_from((1, 2)), "(p)bs": ints(1, 64),
    "(d)workers": ints(1, 4), "(d)tp": st.sampled_from((1, 2, 4)), "(d)bs": ints(1, 256),
}  # fmt: skip
bad_cell = st.one_of(
    st.sampled_from(EDGE_INTS), st.floats(allow_nan=True, allow_infinity=True), st.none(),
    st.sampled_from(("abc", "", "1.5", "no/such-model", "h900_sxm", "tensorrt", "0.0.1")),
)  # fmt: skip


@st.composite
def refine_case(draw, rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Some of the sweep rows with a few cells redrawn, and refine's options."""
    picked = rows.iloc[draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=len(rows)))].reset_index(drop=True).astype(object)
    for _ in range(draw(st.integers(0, 3))):
        column = draw(st.sampled_from(sorted(ROW_VALUES)))
        picked.loc[draw(st.integers(0, len(picked) - 1)), column] = draw(mostly(ROW_VALUES[column], bad_cell))
    options = draw(flags(
        flag("--pricing", st.sampled_from(("row", "engine"))), flag("--protocol", st.sampled_from(("steady", "benchmark"))),
        flag("--prompts-per-client", size(1, 4), rare=True), flag("--range-ratio", fraction(0.05, 1.0), rare=True),
        flag("--budget", size(1, 65536)), st.sampled_from(([], ["--chunked"], ["--no-chunked"])), flag("--max-num-seqs", size(1, 512), rare=True),
        flag("--kv-free-memory-fraction", fraction(0.05, 1.0), rare=True), flag("--pricer", name(("native", "reference", "sol"), ("bogus",)), rare=True),
        switch("--allow-long-context"),
    ))  # fmt: skip
    return picked, options


REFINED = ("ttft_refined", "ttft_p50_refined", "ttft_p99_refined", "tpot_refined", "throughput_refined")


@given(st.data())
@fuzz
def test_fuzz_refine_rows(sweep_rows, data):
    rows, options = data.draw(refine_case(sweep_rows))
    with tempfile.TemporaryDirectory() as folder:
        src, out = Path(folder) / "in.csv", Path(folder) / "out.csv"
        rows.to_csv(src, index=False)
        argv = ["refine", str(src), str(out), *options]
        code, _ = assert_one_outcome(argv)
        event(f"exit {code}")
        if code == 0:
            refined = pd.read_csv(out, keep_default_na=False)
            assert len(refined) == len(rows), argv
            for _, row in refined.iterrows():
                figures = [row[c] for c in REFINED]
                event("row refined" if row["refine_reason"] == "" else "row with a reason")
                if row["refine_reason"] == "":
                    assert all(math.isfinite(float(v)) and float(v) >= 0 for v in figures), (argv, row.to_dict())
                else:
                    assert all(v == "" for v in figures) and not PYTHON_ERROR.search(row["refine_reason"]), (argv, row.to_dict())
