"""Atomic output writes: an interrupted write leaves the old file (or none) and no temporary file."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from estimator.errors import InvalidInputError
from estimator.io import atomic_to_table, atomic_write_text


class Interrupting:
    """A cell whose rendering is interrupted, as Ctrl-C landing halfway through a table write."""

    def __str__(self) -> str:
        raise KeyboardInterrupt

    __repr__ = __str__


def half_written_table() -> pd.DataFrame:
    """Enough good rows that the writer has flushed some of them when the last one interrupts it."""
    return pd.DataFrame({"x": [*(f"row {i}" for i in range(100_000)), Interrupting()]})


@pytest.mark.parametrize("name", ["table.csv", "table.parquet"])
def test_interrupted_table_write_keeps_the_old_file(name, tmp_path):
    path = tmp_path / name
    atomic_to_table(pd.DataFrame({"x": ["old"]}), path)
    before = path.read_bytes()
    with pytest.raises((KeyboardInterrupt, TypeError)):  # pyarrow reports a cell it cannot convert as a TypeError
        atomic_to_table(half_written_table(), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == [name]


def test_interrupted_first_write_leaves_no_file(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        atomic_to_table(half_written_table(), tmp_path / "out" / "table.csv")
    assert os.listdir(tmp_path / "out") == []


def test_written_files_replace_the_old_and_take_the_umask_mode(tmp_path):
    path = tmp_path / "report.html"
    path.write_text("old")
    atomic_write_text(path, "<p>new</p>")
    atomic_to_table(pd.DataFrame({"x": [1, 2]}), tmp_path / "t.csv")
    mask = os.umask(0)
    os.umask(mask)
    assert path.read_text() == "<p>new</p>" and sorted(os.listdir(tmp_path)) == ["report.html", "t.csv"]
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {0o666 & ~mask}
    assert pd.read_csv(tmp_path / "t.csv")["x"].tolist() == [1, 2]


def test_a_refused_output_path_is_one_error_naming_it(tmp_path):
    """The system refusing the write (here a folder where a file is needed, so no temporary file can be made
    beside the target) is an InvalidInputError naming the path, not an OSError traceback; nothing is left behind."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InvalidInputError, match=r"cannot write '.*file/out\.csv'"):
        atomic_write_text(blocker / "out.csv", "a")
    with pytest.raises(InvalidInputError, match=r"cannot write '.*renamed'"):  # the rename over a directory fails after the write
        (tmp_path / "renamed").mkdir()
        (tmp_path / "renamed" / "inner").write_text("keep")
        atomic_write_text(tmp_path / "renamed", "a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "renamed"]


def test_a_full_disk_under_a_best_effort_cache_write_still_skips(tmp_path, monkeypatch):
    """UnwritableOutputError is an OSError too: the perf-table stack cache, which skips a write the file system
    refuses, keeps skipping (a full disk must not stop a run)."""
    from estimator.perf import stack

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(stack, "write", full)
    stack._write_cache(tmp_path / "x.tables", "label", {})
    assert not (tmp_path / "x.tables").exists() and not list(tmp_path.glob(".x.tables.*.tmp"))
