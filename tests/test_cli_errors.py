"""Hostile input: every bad value gets one `error:` line naming it and exit 2, never a traceback."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

import estimator
from estimator.cli import main
from estimator.errors import EstimatorError

MODEL = ["--model-path", "Qwen/Qwen3-32B", "--system", "h200_sxm", "--backend", "sglang"]
SWEEP = ["sweep", *MODEL, "--ttft", "5000", "--tpot", "50", "--tp-list", "8", "--progress", "never"]
INT64_MAX = str(2**63 - 1)


def one_error_line(argv: list[str], capsys) -> str:
    """The single error line a bad invocation prints (asserting exit 2, no stdout, nothing else on stderr)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), (code, out, err)
    return err.strip()


@pytest.mark.parametrize("argv,named", [
    (["--isl", INT64_MAX], f"isl + osl ({2**63 - 1 + 1024})"),
    (["--isl", "4503599627370496", "--batch-size", "4096"], "isl + osl (4503599627371520) exceeds the max_position_embeddings (40960)"),
    (["--isl", "4503599627370496", "--batch-size", "4096", "--allow-long-context"], "isl must be at most 2147483647, got 4503599627370496"),
    (["--isl", "2000000", "--batch-size", "1000000", "--allow-long-context"], "batch_size x (isl + osl) = 1000000 x 2001024 exceeds"),
    (["--isl", "40000", "--osl", "1000"], "isl + osl (41000) exceeds the max_position_embeddings (40960)"),
    (["--osl", INT64_MAX, "--allow-long-context"], "osl must be at most 2147483647"),
    (["--estimate-mode", "static", "--osl", "2147483647", "--batch-size", "1", "--allow-long-context"], "osl (2147483647) over stride (32)"),
    (["--pp-size", "128"], "pp size 128 exceeds the 64 layers of 'Qwen/Qwen3-32B'"),
    (["--nextn", INT64_MAX, "--nextn-accepted", "0", "--estimate-mode", "disagg", "--p-bs", "1", "--p-workers", "1", "--d-bs", "1",
      "--d-workers", "1"], "nextn must be within [0, 2147483647], got 9223372036854775807"),  # an OverflowError traceback before
    (["--estimate-mode", "disagg", "--prefill-batch-size", "1", "--prefill-num-workers", "1", "--decode-batch-size", "8",
      "--decode-num-workers", "1", "--decode-pp-size", "65"], "pp size 65 exceeds the 64 layers"),
    (["--nextn-accepted", "nan"], "nextn_accepted must be a finite number >= 0, got nan"),  # ignored without --nextn: was exit 0
    (["--stride", "-5"], "stride must be a positive integer, got -5"),  # not read by agg: was exit 0
])  # fmt: skip
def test_estimate_sizes_beyond_the_model_or_the_arithmetic(argv, named, capsys):
    assert named in one_error_line(["estimate", *MODEL, *argv], capsys)


def test_long_context_flag_estimates_beyond_max_position_embeddings(capsys):
    assert main(["estimate", *MODEL, "--isl", "40000", "--osl", "1000", "--batch-size", "1", "--allow-long-context", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["isl"] == 40000 and row["ttft"] > 0 and row["tpot"] > 0


@pytest.mark.parametrize("argv,named", [
    (["--phase", "context", "--batch-size", "1", "--isl", INT64_MAX], "isl must be at most 2147483647"),
    (["--phase", "generation", "--batch-size", "1", "--isl", "50000"], "isl (50000) exceeds the max_position_embeddings (40960)"),
    (["--phase", "context", "--batch-size", "1", "--isl", "128", "--pp-size", "65"], "pp size 65 exceeds the 64 layers"),
])  # fmt: skip
def test_price_ops_sizes(argv, named, capsys):
    assert named in one_error_line(["price-ops", *MODEL, *argv], capsys)


@pytest.mark.parametrize("argv,named", [
    (["--show", "0"], "show must be a positive integer, got 0"),
    (["--show", "-5"], "show must be a positive integer, got -5"),
    (["--isl", INT64_MAX], "isl must be at most 2147483647"),
    (["--isl", "40000", "--osl", "1000"], "isl + osl (41000) exceeds the max_position_embeddings (40960)"),
    (["--pp-list", "1", "128"], "pp size 128 exceeds the 64 layers"),
    (["--tp-list", "2", "4", "2"], "argument --tp-list: 2 is given twice"),  # each of its rows was ranked twice
    (["--tpot", "50", "50"], "argument --tpot: 50.0 is given twice"),  # two identical rankings
])  # fmt: skip
def test_sweep_sizes(argv, named, capsys):
    assert named in one_error_line([*SWEEP, *argv], capsys)


def config_file(tmp_path, model: str = "Qwen/Qwen3-32B", text: str | None = None, **fields) -> str:
    """A config.json path: a bundled model's config with `fields` replaced, or `text` verbatim."""
    from estimator.models.config import bundled_model_configs_dir

    path = tmp_path / "config.json"
    raw = json.loads((bundled_model_configs_dir() / f"{model.replace('/', '--')}_config.json").read_text())
    path.write_text(text if text is not None else json.dumps(raw | fields))
    return str(path)


@pytest.mark.parametrize("fields,named", [
    ({"num_hidden_layers": -4}, "'num_hidden_layers' must be an integer >= 1, got -4"),
    ({"num_hidden_layers": 0}, "'num_hidden_layers' must be an integer >= 1, got 0"),
    ({"num_hidden_layers": "64"}, "'num_hidden_layers' must be an integer >= 1, got \"64\""),
    ({"num_attention_heads": 0}, "'num_attention_heads' must be an integer >= 1, got 0"),
    ({"hidden_size": -5120}, "'hidden_size' must be an integer >= 1, got -5120"),
    ({"hidden_size": 5120.5}, "'hidden_size' must be an integer >= 1, got 5120.5"),
    ({"num_key_value_heads": -8}, "'num_key_value_heads' must be an integer >= 0, got -8"),
    ({"max_position_embeddings": True}, "'max_position_embeddings' must be an integer >= 1, got true"),
    ({"architectures": "Qwen3ForCausalLM"}, "'architectures' must be a list of names, got \"Qwen3ForCausalLM\""),
    ({"head_dim": None, "attention_head_dim": "x"}, "'attention_head_dim' must be an integer >= 0, got \"x\""),  # a TypeError before
    ({"head_dim": None, "attention_head_dim": [1]}, "'attention_head_dim' must be an integer >= 0, got [1]"),
    ({"num_attention_heads": 2**63}, "'num_attention_heads' must be at most 2147483647, got 9223372036854775808"),  # OverflowErrors before
    ({"num_hidden_layers": 10**400}, "'num_hidden_layers' must be at most 2147483647, got 10000000000000000000...00000000000000000000"),
])  # fmt: skip
@pytest.mark.parametrize("model", ["Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3"], ids=["native", "reference"])
def test_malformed_model_config_names_the_field(model, fields, named, tmp_path, capsys):
    path = config_file(tmp_path, model, **fields)
    assert named in one_error_line(["estimate", *MODEL[2:], "--model-path", path, "--batch-size", "8"], capsys)


@pytest.mark.parametrize("model", ["Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3"], ids=["native", "reference"])
def test_a_text_config_that_is_not_an_object_is_named(model, tmp_path, capsys):
    """Every reader of a multimodal config's text config refuses the same way (before: model_shape named it, the
    identity reader skipped it, the layer-kind reader raised AttributeError)."""
    path = config_file(tmp_path, model, text_config="x")
    named = "config field 'text_config' must be a JSON object, got \"x\""
    assert named in one_error_line(["estimate", *MODEL[2:], "--model-path", path, "--batch-size", "8"], capsys)


@pytest.mark.parametrize("fields,named", [
    ({"text_config": [1]}, "config field 'text_config' must be a JSON object, got [1]"),
    ({"layer_types": 5}, "config field 'layer_types' must be a list of layer kinds, got 5"),
])  # fmt: skip
def test_the_layer_kind_reader_names_a_malformed_field(fields, named, tmp_path):
    from estimator.errors import InvalidInputError
    from estimator.models.config import linear_attention_layers

    with pytest.raises(InvalidInputError, match=re.escape(named)):
        linear_attention_layers(config_file(tmp_path, **fields))
    (tmp_path / "null").mkdir()
    assert linear_attention_layers(config_file(tmp_path / "null", text_config=None)) == 0  # null: the config itself


@pytest.mark.parametrize("field", ["num_attention_heads", "hidden_size", "vocab_size", "max_position_embeddings"])
@pytest.mark.parametrize("model", ["Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3"], ids=["native-family", "reference-only"])
def test_reference_pricer_names_a_missing_config_field(model, field, tmp_path, capsys):
    """Before: the reference's bare KeyError ("error: 'num_attention_heads'")."""
    path = Path(config_file(tmp_path, model))
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != field}))
    argv = ["estimate", *MODEL[2:], "--model-path", str(path), "--batch-size", "8", "--pricer", "reference"]
    assert f"model {str(path)!r}: config.json lacks required field {field!r}" in one_error_line(argv, capsys)


@pytest.mark.parametrize("text,named", [
    ("[1, 2]", "must hold a JSON object, not a list"),
    ('"Qwen3ForCausalLM"', "must hold a JSON object, not a str"),
    ("{\"architectures\": [\"Qwen3ForCausalLM\"], \"num_hidden_layers\": NaN}", "'num_hidden_layers' must be an integer >= 1, got null or NaN"),
    ("{\"architectures\": [\"Qwen3ForCausalLM\"], \"num_hidden_la", "cannot read model config"),
    pytest.param("[" * 100_000 + "]" * 100_000, "cannot read model config", id="nested-past-the-recursion-limit"),  # a RecursionError before
])  # fmt: skip
def test_config_that_is_not_a_json_object_of_sizes(text, named, tmp_path, capsys):
    path = config_file(tmp_path, text=text)
    assert named in one_error_line(["estimate", *MODEL[2:], "--model-path", path], capsys)


@pytest.mark.parametrize("argv,named", [
    (["--free-gpu-memory-fraction", "1.5"], "free_gpu_memory_fraction must be within (0, 1], got 1.5"),
    (["--free-gpu-memory-fraction", "0"], "free_gpu_memory_fraction must be within (0, 1], got 0.0"),
    (["--free-gpu-memory-fraction", "nan", "--estimate-mode", "static"], "free_gpu_memory_fraction must be within (0, 1], got nan"),
    (["--free-gpu-memory-fraction", "-1e400"], "free_gpu_memory_fraction must be within (0, 1], got -inf"),  # argparse took these two
    (["--free-gpu-memory-fraction", "-inf"], "free_gpu_memory_fraction must be within (0, 1], got -inf"),  # for flags before
    (["--max-seq-len", "10"], "max_seq_len (10) must be at least isl + osl (2048)"),
    (["--max-seq-len", "2047", "--estimate-mode", "static_gen"], "max_seq_len (2047) must be at least isl + osl (2048)"),
    (["--max-seq-len", "1024", "--estimate-mode", "static_ctx"], "max_seq_len (1024) must be at least isl + 1 (1025)"),
    (["--estimate-mode", "disagg", "--prefill-batch-size", "1", "--prefill-num-workers", "1", "--decode-batch-size", "8",
      "--decode-num-workers", "1", "--decode-free-gpu-memory-fraction", "-0.1"], "decode_free_gpu_memory_fraction must be within (0, 1]"),
    (["--estimate-mode", "disagg", "--prefill-batch-size", "1", "--prefill-num-workers", "1", "--decode-batch-size", "8",
      "--decode-num-workers", "1", "--decode-max-seq-len", "100"], "decode_max_seq_len (100) must be at least isl + osl (2048)"),
])  # fmt: skip
def test_memory_flags_out_of_their_domain(argv, named, capsys):
    assert named in one_error_line(["estimate", *MODEL, *argv], capsys)


@pytest.mark.parametrize("argv,oom", [
    (["--batch-size", "8"], False),
    (["--batch-size", "4096", "--isl", "8192"], True),  # 9284 GiB per GPU
    (["--batch-size", "4096", "--isl", "8192", "--estimate-mode", "static"], True),
    (["--estimate-mode", "disagg", "--prefill-batch-size", "1", "--prefill-num-workers", "1", "--decode-batch-size", "4096",
      "--decode-num-workers", "1", "--isl", "8192"], True),
])  # fmt: skip
def test_out_of_memory_is_marked_in_the_result(argv, oom, capsys):
    """Not only a warning on stderr: the --json row carries oom and the summary table an "Out of memory" line."""
    assert main(["estimate", *MODEL, *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["oom"] is oom
    assert main(["estimate", *MODEL, *argv]) == 0
    out, err = capsys.readouterr()
    assert f"Out of memory:    {oom}" in out and ("OOM" in err) is oom


def test_kv_bytes_of_a_sequence_beyond_int64_are_a_figure(tmp_path, capsys):
    """Fuzz finding: a config whose KV bytes per sequence pass int64 (2**40 layers at isl 2**31-1; now the most
    a config gives, 2**31-1, still does) multiplied the batch array into an OverflowError traceback; it is out
    of memory, figures finite."""
    path = config_file(tmp_path, num_hidden_layers=2**31 - 1)
    assert main(["estimate", "--model-path", path, *MODEL[2:], "--isl", str(2**31 - 1), "--allow-long-context", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["oom"] and math.isfinite(row["memory"]) and row["memory"] * 2**30 > 2**63  # GiB past int64 bytes


@pytest.mark.parametrize("under_a_file", [True, False], ids=["under-a-file", "a-directory"])
def test_sweep_out_is_checked_before_the_sweep(under_a_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("estimator.cli.sweep.sweep_with", lambda *a: pytest.fail("swept before --out was checked"))
    if under_a_file:
        (tmp_path / "file").write_text("")
        out, named = tmp_path / "file" / "t.csv", f"{str(tmp_path / 'file')!r} is not a directory"
    else:
        (out := tmp_path / "t.csv").mkdir()
        named = "is a directory"
    line = one_error_line([*SWEEP, "--out", str(out)], capsys)
    assert str(out) in line and named in line


@pytest.mark.parametrize("command", ["sweep", "refine", "import"])
def test_an_output_whose_temporary_file_name_is_too_long_is_refused_before_any_work(command, result_rows, tmp_path, capsys, monkeypatch):
    """A name that fits the file system but not with atomic_path's ".<name>.XXXXXXXX.tmp": before, sweep printed its
    whole ranking, refine refined every row, then each failed to write."""
    for work in ("estimator.cli.sweep.sweep_with", "estimator.cli.refine.refine_with", "estimator.cli.import_runs.import_files"):
        monkeypatch.setattr(work, lambda *a, work=work: pytest.fail(f"{work} ran before the output was checked"))
    out = tmp_path / ("x" * (os.pathconf(tmp_path, "PC_NAME_MAX") - 14) + ".csv")
    src, fixtures = tmp_path / "in.csv", Path(__file__).parent / "fixtures" / "import"
    result_rows.to_csv(src, index=False)
    argv = {"sweep": [*SWEEP, "--out", str(out)], "refine": ["refine", str(src), str(out)],
            "import": ["import", str(fixtures / "vllm_bench_serve.json"), "--deployment", str(fixtures / "deploy.yaml"), "--out", str(out)]}  # fmt: skip
    line = one_error_line(argv[command], capsys)
    assert str(out) in line and "file name too long: its temporary file's name would take" in line and not out.exists()


def test_ctrl_c_inside_a_numba_kernel_writes_the_partial_table(tmp_path, capsys, monkeypatch):
    """Ctrl-C landing inside a Numba kernel surfaces as a SystemError chained to the KeyboardInterrupt."""
    from estimator.cli.sweep import ProgressBar

    record = ProgressBar.__call__

    def interrupted_after_rows(self, rows, done, total):
        record(self, rows, done, total)
        if self.rows:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise SystemError("<built-in function kernel> returned a result with an exception set") from exc

    monkeypatch.setattr(ProgressBar, "__call__", interrupted_after_rows)
    out = tmp_path / "partial.csv"
    assert main([*SWEEP, "--out", str(out)]) == 130
    _, err = capsys.readouterr()
    assert "Traceback" not in err and "partial table" in err and err.rstrip().endswith("interrupted")
    assert len(pd.read_csv(out)) > 0


def test_a_system_error_that_is_no_interrupt_is_not_taken_for_one(capsys, monkeypatch):
    def broken(*args):
        raise SystemError("a real bug")

    monkeypatch.setattr("estimator.cli.sweep.sweep_with", broken)
    with pytest.raises(SystemError, match="a real bug"):
        main(SWEEP)


@pytest.fixture
def no_network(monkeypatch):
    """Any HTTP request fails the test (the reference SDK downloads configs of names it does not bundle)."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access: {args[0]!r}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


REFERENCE_OPS = ["--system", "h200_sxm", "--backend", "sglang", "--pricer", "reference", "--phase", "context", "--batch-size", "2",
                 "--isl", "512", "--json"]  # fmt: skip


def test_a_config_json_path_reaches_the_reference_as_its_folder(tmp_path, no_network, capsys):
    """A sweep or a reference pricing of a config.json given by path reads it locally (it was a
    download request for https://huggingface.co/<path>/raw/main/config.json, and a traceback
    without network), with the figures of the bundled model it copies."""
    path = config_file(tmp_path)
    assert main(["price-ops", "--model-path", path, *REFERENCE_OPS]) == 0
    assert main(["price-ops", "--model-path", "Qwen/Qwen3-32B", *REFERENCE_OPS]) == 0
    by_path, bundled = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert by_path == bundled
    assert main([*SWEEP[:1], "--model-path", path, *SWEEP[3:]]) == 0
    assert main(["recommend", "--model-path", path, "--system", "h200_sxm", "--total-gpus", "2", "--backend", "sglang"]) == 0  # is_moe_model


def test_a_config_file_of_any_name_prices_by_reference_as_its_folder_would(tmp_path, no_network, capsys):
    """A config file not named config.json is given to the reference as a private folder holding a copy
    of it (it reads local models by folder): the same ops as the bundled model, no download."""
    model = str(tmp_path / "qwen.json")
    Path(config_file(tmp_path)).rename(model)
    assert main(["price-ops", "--model-path", model, *REFERENCE_OPS]) == 0
    assert main(["price-ops", "--model-path", "Qwen/Qwen3-32B", *REFERENCE_OPS]) == 0
    by_file, bundled = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert by_file == bundled


def test_the_reference_is_never_given_a_model_to_download(no_network, capsys):
    """A bundled config the reference SDK would fetch from the hub anyway is one line naming it."""
    model = "mistralai/Mixtral-8x7B-v0.1"
    line = one_error_line(["price-ops", "--model-path", model, *REFERENCE_OPS], capsys)
    assert f"{model!r} is neither: give the folder holding its config.json" in line


@pytest.mark.parametrize("architectures", [None, []], ids=["null", "empty"])
@pytest.mark.parametrize(
    "command", [["price-ops", *REFERENCE_OPS[:-1]], ["recommend", "--system", "h200_sxm", "--total-gpus", "1"]], ids=["price-ops", "recommend"]
)
def test_a_local_config_without_architectures_is_named_before_the_reference_reads_it(architectures, command, tmp_path, no_network, capsys):
    """The reference reads the model family off architectures[0]: without one it raised TypeError
    ("'NoneType' object is not subscriptable" as the error line) or asked the hub for the config."""
    path = config_file(tmp_path, architectures=architectures)
    assert "its config lists no 'architectures', which the reference pricer needs" in one_error_line([command[0], "--model-path", path, *command[1:]], capsys)


@pytest.mark.parametrize("flags,same_as", [
    (["--max-prefill-workers", str(2**31 - 1)], ["--max-prefill-workers", "8"]),  # no more workers than the 8 GPUs
    (["--total-gpus", str(2**31 - 1)], ["--total-gpus", "64"]),  # 32 + 32 one-GPU workers reach 64
], ids=["workers", "gpus"])  # fmt: skip
def test_disagg_sweep_worker_counts_up_to_the_size_limit(flags, same_as, capsys):
    """Nightly fuzz finding (a worker killed for memory): --max-prefill-workers or --total-gpus at
    2**31-1 built a tuple or set of that many ints (tens of GB); worker counts stop at --total-gpus
    and the allowed GPU counts at what the counts reach: the rows of the counts they stand for."""
    base = ["sweep", *MODEL, "--mode", "disagg", "--tp-list", "1", "--progress", "never", "--json"]
    rows = []
    for extra in (flags, same_as):
        assert main([*base, *extra]) == 0
        rows.append([{k: v for k, v in r.items() if k not in ("replicas", "total_gpus")} for r in json.loads(capsys.readouterr().out)["rankings"][0]["rows"]])
    assert rows[0] == rows[1] and rows[0]


def test_disagg_sweep_worker_count_pairs_are_bounded(capsys):
    line = one_error_line(["sweep", *MODEL, "--mode", "disagg", "--tp-list", "1", "--total-gpus", str(2**31 - 1),
                           "--max-prefill-workers", "1000", "--max-decode-workers", "1000"], capsys)  # fmt: skip
    assert "at most 65536 (2**16) prefill x decode worker counts, and 1000 x 1000 were asked" in line


@pytest.mark.parametrize("command", [["sweep", "--backend", "sglang", "--progress", "never"], ["estimate", "--backend", "sglang"],
                                     ["recommend", "--total-gpus", "8"]], ids=["sweep", "estimate", "recommend"])  # fmt: skip
def test_native_pricer_on_a_model_without_a_native_builder_is_refused_first(command, caplog, capsys):
    """Nightly fuzz finding: sweep --pricer native on DeepSeek-V3 warned that each small layout fits
    nowhere before the error a priced layout raised; the API layer refuses the pricer up front."""
    with caplog.at_level(logging.WARNING):
        line = one_error_line([command[0], "--model-path", "deepseek-ai/DeepSeek-V3", "--system", "h200_sxm", "--pricer", "native", *command[1:]], capsys)
    assert "has architecture 'DeepseekV3ForCausalLM', which has no native op builder" in line and not caplog.records
    with pytest.raises(EstimatorError, match="no native op builder"):
        estimator.sweep(model_path="deepseek-ai/DeepSeek-V3", system="h200_sxm", backend="sglang", pricer="native")


def test_a_recommend_error_is_its_line_alone(caplog, capsys):
    """Fuzz finding: every layout's sweep warnings ("agg sweep: no grid point of tp1pp1... fits in
    memory", ...) were logged before the error line; they are dropped with an error and kept, in
    order, with a recommendation."""
    with caplog.at_level(logging.WARNING):
        line = one_error_line(["recommend", "--model-path", "deepseek-ai/DeepSeek-V3", "--system", "h200_sxm", "--total-gpus", "2"], capsys)
    assert "fits in no searched layout of at most 2 GPUs" in line and not caplog.records
    with caplog.at_level(logging.WARNING):
        assert main(["recommend", *MODEL[:4], "--backend", "sglang", "--total-gpus", "2", "--ttft", "10"]) == 3
    assert caplog.messages[:2] == ["agg sweep: no operating point meets the targets", "disagg sweep: no worker combination meets the targets"]


@pytest.mark.parametrize("argv,named", [
    (["--system", "h900_sxm"], "unknown system 'h900_sxm'"),
    (["--backend-version", "0.0.1"], "0.0.1"),
    (["--gemm-quant-mode", "bogus"], "unknown gemm quant mode 'bogus'"),
    (["--kvcache-quant-mode", "float16"], "unknown kvcache quant mode 'float16'"),
    (["--mode", "disagg", "--decode-system", "h900_sxm"], "unknown system 'h900_sxm'"),
])  # fmt: skip
def test_sweep_a_fault_every_layout_shares_is_one_line(argv, named, capsys):
    """Not a skipped-layout warning per layout before the error."""
    assert named in one_error_line([*SWEEP[:-4], "--tp-list", "1", "2", "4", *argv], capsys)


@pytest.fixture(scope="module")
def result_rows(tmp_path_factory) -> pd.DataFrame:
    """Three agg sweep rows to refine."""
    path = tmp_path_factory.mktemp("rows") / "rows.csv"
    assert main([*SWEEP[:-4], "--tp-list", "2", "--isl", "1024", "--osl", "128", "--progress", "never", "--out", str(path)]) == 0
    return pd.read_csv(path).head(3)


def bad_row(rows: pd.DataFrame, column: str, value) -> pd.DataFrame:
    bad = rows.astype({column: object})
    bad.loc[1, column] = value
    return bad


ROW_REASONS = [
    ("osl", 1e20, "osl must be at most 2147483647"),
    ("concurrency", 0, "concurrency must be a positive integer, got 0"),
    ("concurrency", -3, "concurrency must be a positive integer, got -3"),
    ("isl", 40900, "isl + osl (41028) exceeds the max_position_embeddings (40960) of 'Qwen/Qwen3-32B'"),
    ("pp", 65, "pp size 65 exceeds the 64 layers of 'Qwen/Qwen3-32B'"),
    ("pp", 0, "pp must be a positive integer, got 0"),
]  # fmt: skip
ENGINE_ROW_REASONS = [  # engine pricing builds the row's deployment; row pricing reads neither
    ("tp", None, "tp is missing"),
    ("tp", float("nan"), "tp is missing"),
    ("model", "MODEL", "must hold a JSON object, not a list"),
]  # fmt: skip


@pytest.mark.parametrize("column,value,reason,pricing", [
    *[(*case, pricing) for case in ROW_REASONS for pricing in ("engine", "row")],
    *[(*case, "engine") for case in ENGINE_ROW_REASONS],
])  # fmt: skip
def test_refine_one_bad_row_never_costs_the_others(column, value, reason, pricing, result_rows, tmp_path, capsys):
    if value == "MODEL":
        value = config_file(tmp_path, text="[1, 2]")
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    bad_row(result_rows, column, value).to_csv(src, index=False)
    assert main(["refine", str(src), str(out), "--pricing", pricing]) == 0
    assert "refined 2 of 3 rows" in capsys.readouterr().err
    refined = pd.read_csv(out, keep_default_na=False)
    assert reason in refined["refine_reason"][1] and refined["ttft_refined"][1] == ""
    assert (refined["refine_reason"][[0, 2]] == "").all() and (refined["ttft_refined"][[0, 2]].astype(float) > 0).all()


def test_refine_a_first_row_with_a_trailing_comma_keeps_every_column(result_rows, tmp_path, capsys):
    """Before: pandas took the rows' first column for an index and shifted every other ('osl must be a positive integer, got 0')."""
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    lines = result_rows.to_csv(index=False).splitlines()
    src.write_text("\n".join([lines[0], lines[1] + ",", *lines[2:]]) + "\n")
    assert main(["refine", str(src), str(out)]) == 0
    refined = pd.read_csv(out, keep_default_na=False)
    assert (refined["refine_reason"] == "").all() and refined["model"].tolist() == result_rows["model"].tolist()


@pytest.mark.parametrize("line,cell,named", [
    (1, "7", "a row has more cells than the header"),  # pandas dropped the 7 with a warning
    (2, "", "fields in line 3, saw"),
])  # fmt: skip
def test_refine_a_row_with_more_cells_than_the_header_refuses_the_file(line, cell, named, result_rows, tmp_path, capsys):
    src = tmp_path / "in.csv"
    lines = result_rows.to_csv(index=False).splitlines()
    lines[line] += "," + cell
    src.write_text("\n".join(lines) + "\n")
    assert named in one_error_line(["refine", str(src), str(tmp_path / "out.csv")], capsys)


def test_refine_a_repeated_column_refuses_the_file(result_rows, tmp_path, capsys):
    """Before: pandas renamed the second tp to tp.1 and refined the rows by the first."""
    src = tmp_path / "in.csv"
    header, *rows = result_rows.to_csv(index=False).splitlines()
    src.write_text("\n".join([header + ",tp", *(row + ",1" for row in rows)]) + "\n")
    line = one_error_line(["refine", str(src), str(tmp_path / "out.csv")], capsys)
    assert str(src) in line and "the header names a column more than once: ['tp']" in line


def test_refine_reads_a_version_like_0_10_as_text(result_rows, tmp_path, capsys):
    """Before: 0.10 was the float 0.1, and every row's reason a TypeError."""
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    result_rows.assign(version="0.10").to_csv(src, index=False)
    assert main(["refine", str(src), str(out)]) == 0
    refined = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert (refined["version"] == "0.10").all() and refined["refine_reason"].str.startswith("version '0.10' is not a queryable sglang version").all()


@pytest.fixture(scope="module")
def disagg_rows(tmp_path_factory) -> pd.DataFrame:
    """Two disagg sweep rows to refine."""
    path = tmp_path_factory.mktemp("rows") / "disagg.csv"
    argv = [*SWEEP[:-4], "--tp-list", "2", "--isl", "1024", "--osl", "128", "--mode", "disagg", "--max-prefill-workers", "2", "--max-decode-workers", "2"]
    assert main([*argv, "--progress", "never", "--out", str(path)]) == 0
    return pd.read_csv(path).head(2)


@pytest.mark.parametrize("mode,column,value,reason,argv", [
    ("agg", "bs", 2**31 - 1, "a closed-loop replay at concurrency 2147483647 holds 21474836470 requests, more than 4194304 (2**22)", []),
    ("agg", "osl", 2**31 - 1, "exceeds 2**32 request-passes", ["--allow-long-context"]),
    ("agg", "isl", 2**31 - 1, "exceeds 2**32 request-passes", ["--allow-long-context", "--budget", "1", "--pricing", "row"]),
    ("agg", "ctx_tokens", 2**63, "ctx_tokens must be an integer in [1, 2147483647], got 9223372036854775808", ["--pricing", "row"]),
    ("disagg", "concurrency", 2**31 - 1, "a closed-loop replay at concurrency 2147483647 holds", []),
    ("disagg", "(p)workers", 2**31, "(p)workers must be an integer in [1, 2147483647]", []),
    ("disagg", "(d)workers", 100_000, "decode_workers must be at most 65536 (2**16), got 100000", ["--pricing", "row"]),
])  # fmt: skip
def test_refine_rows_beyond_what_a_replay_holds_are_reasons(mode, column, value, reason, argv, result_rows, disagg_rows, tmp_path, capsys):
    """A row whose replay would hold more requests or workers than memory allows, or run for hours
    (requests x passes each), is a reason naming the size, found before the replay allocates."""
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    rows = result_rows.head(2) if mode == "agg" else disagg_rows
    bad_row(rows, column, value).to_csv(src, index=False)
    assert main(["refine", str(src), str(out), *argv]) == 0
    refined = pd.read_csv(out, keep_default_na=False)
    assert reason in refined["refine_reason"][1] and refined["refine_reason"][0] == "" and float(refined["ttft_refined"][0]) > 0


@pytest.mark.parametrize("argv,named", [
    (["--batch-size", "1000000", "--closed-loop"], "a closed-loop replay at concurrency 1000000 holds 10000000 requests, more than 4194304"),
    (["--batch-size", "100000", "--osl", "100000", "--allow-long-context", "--closed-loop"], "exceeds 2**32 request-passes"),
    (["--batch-size", "100", "--closed-loop", "benchmark", "--estimate-mode", "disagg", "--prefill-batch-size", "1", "--prefill-num-workers", "1",
      "--decode-batch-size", "8", "--decode-num-workers", "100000"], "decode_workers must be at most 65536"),
])  # fmt: skip
def test_estimate_closed_loop_beyond_what_a_replay_holds(argv, named, capsys):
    assert named in one_error_line(["estimate", *MODEL, *argv], capsys)


@pytest.mark.parametrize("argv,named", [
    (["--budget", str(2**63)], "step_token_budget must be at most 2147483647, got 9223372036854775808"),
    (["--budget", "4096", "--max-num-seqs", str(2**31)], "max_num_seqs must be at most 2147483647, got 2147483648"),
    (["--protocol", "benchmark", "--prompts-per-client", str(2**31)], "prompts_per_client must be within [1, 4194304] (2**22), got 2147483648"),
    (["--protocol", "benchmark", "--client-seed", str(2**32)], "a client seed must be an integer within [0, 2**32), got 4294967296"),
    (["--protocol", "benchmark", "--client-seed", "-1"], "a client seed must be an integer within [0, 2**32), got -1"),
])  # fmt: skip
def test_refine_options_beyond_the_arithmetic_are_one_line(argv, named, result_rows, tmp_path, capsys):
    """Not the same OverflowError as every row's reason."""
    src = tmp_path / "in.csv"
    result_rows.to_csv(src, index=False)
    assert named in one_error_line(["refine", str(src), str(tmp_path / "out.csv"), *argv], capsys)


def test_refine_long_context_rows_with_the_flag(result_rows, tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    bad_row(result_rows, "isl", 40900).to_csv(src, index=False)
    assert main(["refine", str(src), str(out), "--allow-long-context"]) == 0
    refined = pd.read_csv(out, keep_default_na=False)
    assert (refined["refine_reason"] == "").all() and refined["ttft_refined"][1] > refined["ttft_refined"][0]


@pytest.mark.parametrize("name,content,named", [
    ("empty.csv", b"", "No columns to parse"),
    ("binary.csv", bytes(range(256)) * 4, "cannot read"),
    ("header.csv", b"model,isl,osl\n", "no rows"),
    ("truncated.parquet", None, "Parquet magic bytes not found"),
])  # fmt: skip
def test_refine_unreadable_input_is_one_line(name, content, named, result_rows, tmp_path, capsys):
    src = tmp_path / name
    if content is None:
        result_rows.to_parquet(src)
        content = src.read_bytes()[: src.stat().st_size // 2]
    src.write_bytes(content)
    line = one_error_line(["refine", str(src), str(tmp_path / "out.csv")], capsys)
    assert str(src) in line and named in line


def test_refine_checks_its_output_before_any_row_and_keeps_its_input(result_rows, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.csv"
    result_rows.to_csv(src, index=False)
    before = src.read_bytes()
    monkeypatch.setattr("estimator.cli.refine.refine_with", lambda *a: pytest.fail("refined before OUT was checked"))
    assert "pass --overwrite-input" in one_error_line(["refine", str(src), str(src)], capsys)
    assert "is not a directory" in one_error_line(["refine", str(src), str(src / "out.csv")], capsys)
    assert src.read_bytes() == before
    monkeypatch.undo()
    assert main(["refine", str(src), str(src), "--overwrite-input"]) == 0
    assert "ttft_refined" in pd.read_csv(src).columns


@pytest.mark.parametrize("argv,named", [
    (["estimate", "--isl", "abc"], "argument --isl: invalid int value: 'abc' (see python -m estimator estimate --help)"),
    (["nosuch"], "invalid choice: 'nosuch'"),
    (["models", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
])  # fmt: skip
def test_argument_errors_are_one_line_with_a_hint(argv, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ") and named in err, err


# The labels a covered point needs (report.points.LABEL_COLUMNS) beside the id and method.
POINT_LABELS = {"backend": "vllm", "mode": "agg", "model": "Qwen/Qwen3-32B", "system": "h200_sxm", "concurrency_bucket": "2-4", "source": "user"}


@pytest.mark.parametrize("column,value,named", [
    ("ttft_meas_ms", "0", "ttft_meas_ms must be a positive number, got '0"),
    ("tpot_meas_ms", "abc", "tpot_meas_ms must be a positive number, got 'abc'"),
    ("ttft_pred_ms", "-1", "ttft_pred_ms must be a finite number >= 0 or empty, got '-1"),
])  # fmt: skip
def test_a_points_file_with_a_bad_number_is_one_line_naming_the_row(tmp_path, column, value, named, capsys):
    from estimator.report.points import POINT_COLUMNS

    row = dict.fromkeys(POINT_COLUMNS, "") | POINT_LABELS | {"id": "r1", "method": "legacy", "covered": "True", "ttft_meas_ms": "100",
                                                             "tpot_meas_ms": "10", "ttft_pred_ms": "90", "tpot_pred_ms": "9", "concurrency": "4",
                                                             "isl": "1024", "osl": "1024"}  # fmt: skip
    path = tmp_path / "points.csv"
    pd.DataFrame([row | {column: value}], columns=list(POINT_COLUMNS)).to_csv(path, index=False)
    line = one_error_line(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")], capsys)
    assert "row r1 (legacy)" in line and named in line, line


def test_a_points_file_with_fewer_rows_than_its_provenance_is_refused_unless_allowed(tmp_path, capsys):
    from estimator.report.points import POINT_COLUMNS, write_points

    row = dict.fromkeys(POINT_COLUMNS) | POINT_LABELS | {"id": "r1", "method": "legacy", "covered": True, "ttft_meas_ms": 100.0,
                                                         "tpot_meas_ms": 10.0, "ttft_pred_ms": 90.0, "tpot_pred_ms": 9.0, "concurrency": 4,
                                                         "isl": 1024, "osl": 1024}  # fmt: skip
    path = tmp_path / "points.csv"
    write_points(pd.DataFrame([row], columns=list(POINT_COLUMNS)), path, {"data_rows": 2})
    argv = ["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]
    assert "holds 1 measured rows but its provenance records 2" in one_error_line(argv, capsys)
    assert main([*argv, "--allow-partial"]) == 0 and (tmp_path / "r.html").is_file()
