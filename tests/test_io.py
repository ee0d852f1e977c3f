"""Atomic output writes: an interrupted write leaves the old file (or none) and no temporary file."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from estimator.errors import InvalidInputError
from estimator.io import atomic_to_table, atomic_write_text, require_writable


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
    with pytest.raises(InvalidInputError, match=r"cannot write '.*renamed'"):  # a directory is no file to replace
        (tmp_path / "renamed").mkdir()
        (tmp_path / "renamed" / "inner").write_text("keep")
        atomic_write_text(tmp_path / "renamed", "a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "renamed"]


def test_an_output_that_is_no_regular_file_is_refused_and_left_in_place(tmp_path):
    """A FIFO (as a socket or a device) at the output path, or a symlink to one, is refused before any
    write; os.replace put a regular file in its place before."""
    fifo, link = tmp_path / "pipe.csv", tmp_path / "link.csv"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    for path in (fifo, link):
        with pytest.raises(InvalidInputError, match=rf"--out '.*{path.name}' is not a regular file"):
            require_writable(path, "--out")
        with pytest.raises(InvalidInputError, match=rf"cannot write '.*{path.name}': it is not a regular file"):
            atomic_write_text(path, "a")
    assert stat.S_ISFIFO(fifo.stat().st_mode) and link.is_symlink() and sorted(os.listdir(tmp_path)) == ["link.csv", "pipe.csv"]


def test_a_name_too_long_for_its_temporary_file_is_refused_where_the_write_would_fail(tmp_path):
    """atomic_path writes ".<name>.XXXXXXXX.tmp" (14 bytes more than the name): require_writable refuses exactly the
    names whose temporary file the file system would refuse, before any work (a 245-character name: after it)."""
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    fits, too_long = tmp_path / ("x" * (name_max - 14)), tmp_path / ("x" * (name_max - 13))
    require_writable(fits, "--out")
    atomic_write_text(fits, "a")
    with pytest.raises(InvalidInputError, match=rf"--out '.*x{{{name_max - 13}}}': file name too long: its temporary file's name would take {name_max + 1}"):
        require_writable(too_long, "--out")
    with pytest.raises(InvalidInputError, match="cannot write .*: File name too long"):
        atomic_write_text(too_long, "a")
    assert os.listdir(tmp_path) == [fits.name]


def test_a_symlinked_output_replaces_the_file_it_names_and_keeps_the_link(tmp_path):
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old")
    link.symlink_to(real)
    require_writable(link, "--out")
    atomic_to_table(pd.DataFrame({"x": [1]}), link)
    assert link.is_symlink() and pd.read_csv(real)["x"].tolist() == [1] and sorted(os.listdir(tmp_path)) == ["link.csv", "real.csv"]


def test_a_full_disk_under_a_best_effort_cache_write_still_skips(tmp_path, monkeypatch):
    """UnwritableOutputError is an OSError too: the perf-table stack cache, which skips a write the file system
    refuses, keeps skipping (a full disk must not stop a run)."""
    from estimator.perf import stack

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(stack, "write", full)
    stack._write_cache(tmp_path / "x.tables", "label", {})
    assert not (tmp_path / "x.tables").exists() and not list(tmp_path.glob(".x.tables.*.tmp"))
