"""Bad input to `python -m estimator report`: one line naming the bad value, exit 2, no traceback.

A measurement CSV row the schema refuses is reported uncovered with its reason (the other rows
complete); a malformed file, a bad output flag or a malformed per-point file stops the report
before anything is written.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from estimator.cli import main
from estimator.report.points import read_points
from measurements.loaders import load_measurements, read_measurements

FIXTURES = Path(__file__).parent / "fixtures" / "import"
FAST = ["--methods", "legacy", "--workers", "1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A one-row measurement CSV, as `python -m estimator import` writes it."""
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    argv = ["import", str(FIXTURES / "vllm_bench_serve.json"), "--deployment", str(FIXTURES / "deploy.yaml"), "--out", str(path)]
    assert main(argv) == 0
    return path


def with_bad_row(runs: Path, folder: Path, cells: dict[str, str] | None = None, row: list[str] | None = None) -> Path:
    """A CSV of the row of `runs` as "good", then as "bad" with `cells` replaced (or the raw cells `row`)."""
    header, cells_of_runs = list(csv.reader(runs.open()))
    good = dict(zip(header, cells_of_runs)) | {"id": "good"}
    bad = good | {"id": "bad"} | (cells or {})
    path = folder / "mixed.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, [good[c] for c in header], row or [bad[c] for c in header]])
    return path


def report(tmp_path: Path, *argv: str) -> int:
    return main(["report", *argv, "--out", str(tmp_path / "r.html"), "--points", str(tmp_path / "p.csv"), *FAST])


def one_error(capsys) -> str:
    """The one line a refused command prints."""
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ")
    return line


# ---- measurement CSV rows -----------------------------------------------------------------------

REFUSED_CELLS = {
    "ttft-empty": ({"ttft_ms": ""}, "ttft_ms is empty"),
    "ttft-zero": ({"ttft_ms": "0"}, "ttft_ms must be >= 1e-06 ms (a clock's nanosecond), got 0.0"),
    "tpot-negative": ({"tpot_ms": "-1"}, "tpot_ms must be >= 1e-06 ms (a clock's nanosecond), got -1.0"),
    "ttft-subnormal": ({"ttft_ms": "1e-320"}, "ttft_ms must be >= 1e-06 ms (a clock's nanosecond), got 1e-320"),
    "ttft-nan": ({"ttft_ms": "nan"}, "ttft_ms must be a finite number, got nan"),
    "tpot-inf": ({"tpot_ms": "inf"}, "tpot_ms must be a finite number, got inf"),
    "mode-other": ({"mode": "both"}, "mode must be one of agg, disagg, got 'both'"),
    "disagg-without-layouts": ({"mode": "disagg"}, "mode disagg needs its prefill and decode layouts"),
    "agg-without-layout": ({f"agg_{f}": "" for f in ("batch_size", "workers", "tp", "pp")}, "mode agg needs its agg layout"),
    "model-empty": ({"model": ""}, "model is empty"),
    "tp-negative": ({"agg_tp": "-2"}, "agg_tp must be within [1, 2147483647], got -2"),
    "tp-fractional": ({"agg_tp": "2.5"}, "agg_tp must be an integer, got '2.5'"),
    "chunked-maybe": ({"chunked_prefill": "maybe"}, "chunked_prefill must be true or false, got 'maybe'"),
    "system-unknown": ({"system": "h999_sxm"}, "system: unknown system 'h999_sxm'"),
    "isl-zero": ({"isl": "0"}, "isl must be within [1, 2147483647], got 0"),
    "tp-huge": ({"agg_tp": "99999999999999999999999"}, "agg_tp must be within [1, 2147483647], got 99999999999999999999999"),
    "concurrency-negative": ({"concurrency": "-3"}, "concurrency must be within [1, 2147483647], got -3"),
    "budget-zero": ({"step_token_budget": "0"}, "step_token_budget must be a positive integer, got 0"),
    "seed-too-large": ({"client_seed": "4294967296"}, "client_seed must be within [0, 2**32), got 4294967296"),
    "seed-negative": ({"client_seed": "-1"}, "client_seed must be within [0, 2**32), got -1"),
}


@pytest.mark.parametrize(("cells", "named"), REFUSED_CELLS.values(), ids=REFUSED_CELLS.keys())
def test_a_refused_row_is_reported_uncovered_and_the_others_complete(runs, tmp_path, capsys, cells, named):
    assert report(tmp_path, "--measurements", str(with_bad_row(runs, tmp_path, cells))) == 2
    points = pd.read_csv(tmp_path / "p.csv").set_index("id")
    assert points.at["good", "covered"] and not points.at["bad", "covered"]
    assert points.at["bad", "reason"].startswith(f"{tmp_path / 'mixed.csv'}: row bad: ") and named in points.at["bad", "reason"]
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"refused (reported uncovered): {tmp_path / 'mixed.csv'}: row bad: " in err
    assert main(["report", "--from-points", str(tmp_path / "p.csv"), "--out", str(tmp_path / "again.html")]) == 0  # the table reads back


def test_a_row_with_more_pipeline_stages_than_layers_is_uncovered_by_every_method(runs, tmp_path):
    """pp 1000 on a 64-layer model was priced by every method (a silently wrong result)."""
    report(tmp_path, "--measurements", str(with_bad_row(runs, tmp_path, {"agg_pp": "1000"})))
    points = pd.read_csv(tmp_path / "p.csv")
    bad = points[points["id"] == "bad"]
    assert len(bad) > 0 and not bad["covered"].any()
    assert bad["reason"].str.contains("pp size 1000 exceeds the 64 layers of 'Qwen/Qwen3-32B'", regex=False).all()
    assert points[points["id"] == "good"]["covered"].all()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda cells: [*cells, "spare"], "row bad: 83 cells where the header has 82"),
        (lambda cells: cells[:-3], "row bad: 79 cells where the header has 82"),
        (lambda cells: ["", *cells[1:]], "line 3: id is empty"),
    ],
    ids=["extra-cell", "fewer-cells", "no-id"],
)
def test_a_row_that_does_not_match_the_header_is_reported_uncovered(runs, tmp_path, capsys, edit, named):
    header, good = list(csv.reader(runs.open()))
    assert len(header) == 82  # the counts named below
    path = with_bad_row(runs, tmp_path, row=edit(["bad", *good[1:]]))
    assert report(tmp_path, "--measurements", str(path)) == 2
    points = pd.read_csv(tmp_path / "p.csv")
    assert list(points["covered"]) == [True, False] and points["reason"][1] == f"{path}: {named}"
    assert "Traceback" not in capsys.readouterr().err


def test_a_header_only_measurement_file_is_one_line(runs, tmp_path, capsys):
    path = tmp_path / "empty.csv"
    path.write_text(runs.read_text().splitlines()[0] + "\n")
    assert report(tmp_path, "--measurements", str(path)) == 2
    assert f"no measurement rows in {path}" in one_error(capsys)
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("column", ["ttft_ms", "id"])
def test_a_measurement_csv_repeating_a_column_is_one_line(runs, tmp_path, capsys, column):
    """Before: csv.DictReader kept the last cell of the column silently (a ttft_ms of 999, or the id "other")."""
    header, cells = list(csv.reader(runs.open()))
    path = tmp_path / "repeated.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([[*header, column], [*cells, "999" if column == "ttft_ms" else "other"]])
    assert report(tmp_path, "--measurements", str(path)) == 2
    assert f"{path}: the header names a column more than once: [{column!r}]" in one_error(capsys) and not (tmp_path / "p.csv").exists()


def test_load_measurements_refuses_the_file_naming_the_row_and_read_measurements_keeps_the_others(runs, tmp_path):
    path = with_bad_row(runs, tmp_path, {"agg_tp": "2.5"})
    with pytest.raises(ValueError, match="row bad: agg_tp must be an integer, got '2.5'"):
        load_measurements(path)
    good, refused = read_measurements(path)
    assert good == dataclasses.replace(load_measurements(runs)[0], id="good")
    assert refused.row.id == "bad" and refused.row.model == good.model and refused.row.settings is None


# ---- output flags -------------------------------------------------------------------------------


def test_a_method_named_twice_runs_once(runs, tmp_path):
    assert main(["report", "--measurements", str(runs), "--methods", "legacy", "legacy", "--workers", "1",
                 "--out", str(tmp_path / "r.html"), "--points", str(tmp_path / "p.csv")]) == 0  # fmt: skip
    assert list(pd.read_csv(tmp_path / "p.csv")["method"]) == ["legacy"]


@pytest.mark.parametrize("flag", ["--out", "--points"])
def test_an_output_that_is_a_directory_is_refused_before_any_work(runs, tmp_path, capsys, flag):
    paths = {"--out": tmp_path / "r.html", "--points": tmp_path / "p.csv"} | {flag: tmp_path}
    argv = ["report", "--measurements", str(runs), *FAST, "--out", str(paths["--out"]), "--points", str(paths["--points"])]
    assert main(argv) == 2
    assert f"{flag} '{tmp_path}' is a directory" in one_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (lambda tmp, runs: ["--out", str(tmp / "x.csv"), "--points", str(tmp / "x.csv")], "--out and --points"),
        (lambda tmp, runs: ["--out", str(runs), "--points", str(tmp / "p.csv")], "--out and --measurements"),
        (lambda tmp, runs: ["--out", str(tmp / "r.html"), "--points", str(runs)], "--points and --measurements"),
    ],
    ids=["out-is-points", "out-is-input", "points-is-input"],
)
def test_an_output_naming_another_output_or_an_input_is_refused(runs, tmp_path, capsys, flags, named):
    before = runs.read_bytes()
    assert main(["report", "--measurements", str(runs), *FAST, *flags(tmp_path, runs)]) == 2
    assert f"{named} name the same file" in one_error(capsys)
    assert runs.read_bytes() == before and not list(tmp_path.iterdir())


# ---- per-point files ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def points_file(runs, tmp_path_factory) -> Path:
    """A per-point file of two rows, one uncovered (refused at load), with its provenance."""
    folder = tmp_path_factory.mktemp("points")
    assert report(folder, "--measurements", str(with_bad_row(runs, folder, {"ttft_ms": "nan"}))) == 2
    return folder / "p.csv"


def edited_points(points_file: Path, folder: Path, edit) -> Path:
    """A copy of points_file with its table edited (as text cells), without a provenance."""
    path = folder / "edited.csv"
    edit(pd.read_csv(points_file, dtype=str, keep_default_na=False)).to_csv(path, index=False)
    return path


def _set(column: str, value: str):
    def edit(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[0, column] = value
        return frame

    return edit


BAD_POINTS = {
    "ttft-meas-inf": (_set("ttft_meas_ms", "inf"), "row good (legacy): ttft_meas_ms must be a positive number, got 'inf'"),
    "tpot-meas-inf": (_set("tpot_meas_ms", "inf"), "row good (legacy): tpot_meas_ms must be a positive number, got 'inf'"),
    "covered-meas-empty": (_set("ttft_meas_ms", ""), "row good (legacy): ttft_meas_ms must be a positive number, got an empty cell"),
    "compile-inf": (_set("shape_compile_ms", "inf"), "row good (legacy): shape_compile_ms must be a finite number or empty, got 'inf'"),
    **{
        f"{c}-text": (_set(c, "many"), f"row good (legacy): {c} must be a finite number or empty, got 'many'")
        for c in ("concurrency", "attention_dp", "step_token_budget", "decode_step_ms")
    },  # fmt: skip
    "duplicated": (lambda f: pd.concat([f, f.iloc[[0]]], ignore_index=True), "row good (legacy) appears more than once"),
    "covered-1": (_set("covered", "1"), "row good (legacy): covered must be True or False, got '1'"),
    "covered-yes": (_set("covered", "yes"), "row good (legacy): covered must be True or False, got 'yes'"),
    "header-only": (lambda f: f.iloc[:0], "holds no points (a header only)"),
    "model-empty": (_set("model", ""), "row good (legacy): model must not be empty, got an empty cell"),  # was a 'nan' group label
    "system-blank": (_set("system", "  "), "row good (legacy): system must not be empty, got '  '"),
    "id-empty": (_set("id", ""), "line 2: id must not be empty, got an empty cell"),
}


@pytest.mark.parametrize(("edit", "named"), BAD_POINTS.values(), ids=BAD_POINTS.keys())
def test_a_malformed_points_file_is_one_line(points_file, tmp_path, capsys, edit, named):
    path = edited_points(points_file, tmp_path, edit)
    assert main(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]) == 2
    assert named in one_error(capsys)
    assert not (tmp_path / "r.html").exists()


def test_a_points_file_with_a_trailing_comma_on_each_row_reads_as_without(points_file, tmp_path):
    """Before: pandas took the ids for an index and shifted every column ("The truth value of a Series is ambiguous")."""
    edited = edited_points(points_file, tmp_path, lambda f: f)
    header, *rows = edited.read_text().splitlines()
    path = tmp_path / "commas.csv"
    path.write_text("\n".join([header, *(row + "," for row in rows)]) + "\n")
    assert read_points(path)[0].equals(read_points(edited)[0])
    assert main(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]) == 0


def test_a_points_file_repeating_a_column_is_one_line(points_file, tmp_path, capsys):
    """Before: pandas renamed the second ttft_pred_ms to ttft_pred_ms.1 and rendered the first."""
    header, *rows = edited_points(points_file, tmp_path, lambda f: f).read_text().splitlines()
    path = tmp_path / "repeated.csv"
    path.write_text("\n".join([header + ",ttft_pred_ms", *(row + ",1" for row in rows)]) + "\n")
    assert main(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]) == 2
    assert "the header names a column more than once: ['ttft_pred_ms']" in one_error(capsys) and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("record", "named"),
    [([1, 2], "must be a JSON object, got a list"), ({"data_rows": "many"}, "data_rows must be a count of rows (an integer >= 0), got 'many'")],
    ids=["list", "data-rows-text"],
)
def test_a_malformed_provenance_is_one_line(points_file, tmp_path, capsys, record, named):
    path = edited_points(points_file, tmp_path, lambda f: f)
    path.with_name("edited.provenance.json").write_text(json.dumps(record))
    assert main(["report", "--from-points", str(path), "--out", str(tmp_path / "r.html")]) == 2
    line = one_error(capsys)
    assert "its provenance edited.provenance.json" in line and named in line


def test_a_cell_beyond_the_csv_field_limit_is_one_line(runs, tmp_path, capsys):
    """A cell longer than the csv module's field limit (131,072 characters) is bad input naming the file, not a csv.Error traceback."""
    path = with_bad_row(runs, tmp_path, {"provenance": "x" * 200_000})
    assert report(tmp_path, "--measurements", str(path)) == 2
    assert "field larger than field limit" in one_error(capsys) and not (tmp_path / "p.csv").exists()


def test_an_output_may_not_name_a_per_point_files_provenance(points_file, tmp_path, capsys):
    """--out naming the provenance sidecar of --from-points (or of --points) would overwrite it: exit 2 before any work."""
    sidecar = points_file.with_name(points_file.stem + ".provenance.json")
    before = sidecar.read_text()
    assert main(["report", "--from-points", str(points_file), "--out", str(sidecar)]) == 2
    assert "--out and --from-points's provenance name the same file" in one_error(capsys) and sidecar.read_text() == before


def test_an_output_name_the_file_system_refuses_is_one_line(runs, tmp_path, capsys):
    """A file name longer than the file system takes is bad input naming the flag, not an OSError traceback."""
    assert main(["report", "--measurements", str(runs), "--out", str(tmp_path / ("a" * 300 + ".html")), *FAST]) == 2
    assert "--out" in (line := one_error(capsys)) and "File name too long" in line


@pytest.mark.parametrize(("flag", "short_by"), [("--out", 10), ("--points", 10), ("--points's provenance", 16)])
def test_an_output_whose_temporary_file_name_is_too_long_is_refused_before_any_work(runs, tmp_path, capsys, flag, short_by):
    """A name `short_by` bytes within the file system's limit, too long with atomic_path's ".<name>.XXXXXXXX.tmp"
    (a points file 16 bytes within: its provenance sidecar's is): before, the report computed, wrote --points and
    its provenance, then failed on --out."""
    name = "a" * (os.pathconf(tmp_path, "PC_NAME_MAX") - short_by - 4)
    paths = {"--out": tmp_path / "r.html", "--points": tmp_path / "p.csv"} | {flag.split("'")[0]: tmp_path / f"{name}.out"}
    assert main(["report", "--measurements", str(runs), *FAST, "--out", str(paths["--out"]), "--points", str(paths["--points"])]) == 2
    line = one_error(capsys)
    assert line.startswith(f"error: {flag} ") and "file name too long" in line and not list(tmp_path.iterdir())


def test_a_measurement_csv_with_a_byte_order_mark_reads(runs, tmp_path):
    """A measurement CSV re-saved with a UTF-8 byte-order mark is still a measurement CSV (its id column named as such)."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + runs.read_bytes())
    assert report(tmp_path, "--measurements", str(path)) == 0
