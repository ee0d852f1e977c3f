"""Atomic output writes: every output is written to a temporary file in its own folder, then
renamed over the target (os.replace), so an interrupted write leaves the old file or none.

An existing target must be a regular file: a directory, FIFO, socket or device is refused, never
replaced. A symlink is followed: the file it names is the target (replaced, the link kept), and
a link to anything but a regular file is refused as that thing would be.

Input CSVs are read with read_csv_table, which keeps every cell under its own column's name."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from estimator.errors import InvalidInputError, UnwritableOutputError

TABLE_WRITERS = {".csv": "to_csv", ".parquet": "to_parquet"}  # suffix -> DataFrame method


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() gives a new file; mkstemp's own 0o600 would hide outputs from the group
# atomic_path's temporary file beside a target <name>: ".<name>." + the random characters tempfile.mkstemp draws + ".tmp"
_TMP_SUFFIX = ".tmp"
_TMP_RANDOM_CHARS = 8
_DEFAULT_NAME_MAX = 255  # bytes a file name may take where the file system does not say (ext4, xfs, btrfs, tmpfs)


def _tmp_prefix(target: Path) -> str:
    return f".{target.name}."


def require_writable(path: Path, what: str) -> None:
    """InvalidInputError naming `what` unless a file can be written at `path`: absent or a regular
    file (symlinks followed), its nearest existing folder a directory this user may write in, and
    the name of atomic_path's temporary file beside it within the file system's limit (checked
    before any work)."""
    try:
        _require_writable(path, what)
    except OSError as exc:  # e.g. a file name longer than the file system takes
        raise InvalidInputError(f"{what} {str(path)!r}: {exc.strerror or exc}") from None


def _require_writable(path: Path, what: str) -> None:
    target = Path(os.path.realpath(path))
    kind = _not_regular(target)
    if kind:
        raise InvalidInputError(f"{what} {str(path)!r} is {kind}")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InvalidInputError(f"{what} {str(path)!r}: {str(folder)!r} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{what} {str(path)!r}: {str(folder)!r} is not writable")
    tmp_bytes, name_max = len(os.fsencode(_tmp_prefix(target))) + _TMP_RANDOM_CHARS + len(_TMP_SUFFIX), _name_max(folder)
    if tmp_bytes > name_max:
        raise InvalidInputError(f"{what} {str(path)!r}: file name too long: its temporary file's name would take {tmp_bytes} bytes, "
                                f"more than the {name_max} the file system takes")  # fmt: skip


def _name_max(folder: Path) -> int:
    """The most bytes a file name in `folder` may take (_DEFAULT_NAME_MAX when the file system does not say)."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return _DEFAULT_NAME_MAX
    return limit if limit > 0 else _DEFAULT_NAME_MAX


def require_distinct(outputs: list[tuple[str, Path]], others: list[tuple[str, Path | None]], command: str) -> None:
    """InvalidInputError naming both when an output (flag, path) names the same file as a later output or
    any of `others` (flag, path; None: not given), which `command` would overwrite."""
    named = [*outputs, *others]
    for i, (flag, path) in enumerate(outputs):
        for other, other_path in named[i + 1 :]:
            if other_path is not None and Path(path).resolve() == Path(other_path).resolve():
                raise InvalidInputError(f"{flag} and {other} name the same file {str(path)!r}: the {command} would overwrite it")


def _not_regular(path: Path) -> str | None:
    """What an existing `path` (symlinks followed) is when it is not a regular file ("a directory", "not a
    regular file": a FIFO, socket or device); None when it is one or is absent."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # absent: no such file, or a folder on its way is a file
        return None
    return None if stat.S_ISREG(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A fresh temporary path beside `path`'s target (symlinks followed; its folder created) to write to;
    renamed over the target when the block ends, removed when it raises (KeyboardInterrupt included).
    A target that exists and is not a regular file, and an OSError (making the folder or the temporary
    file, writing, renaming), are raised as UnwritableOutputError naming `path`."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    try:
        kind = _not_regular(target)
        if kind:
            raise FileExistsError(errno.EEXIST, f"it is {kind}")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=_tmp_prefix(target), suffix=_TMP_SUFFIX)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, _FILE_MODE)
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _unwritable(path, exc) from None
        raise


def _unwritable(path: Path, exc: OSError) -> UnwritableOutputError:
    """The one-line error of an output path the system refuses (a read-only or full file system, a missing folder)."""
    return UnwritableOutputError(f"cannot write {str(path)!r}: {exc.strerror or exc}")


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_to_table(table: pd.DataFrame, path: str | Path) -> None:
    """Write `table` without its index to `path` atomically, as CSV or Parquet by its suffix."""
    writer = TABLE_WRITERS[Path(path).suffix.lower()]
    with atomic_path(path) as tmp:
        getattr(table, writer)(tmp, index=False)


def read_csv_table(data: bytes, **options) -> pd.DataFrame:
    """The rows of CSV bytes (pandas.read_csv with `options`), every cell under its own column: read with
    index_col=False, so a trailing comma never makes the first column an index that shifts the others.
    ValueError naming a column the header repeats (pandas would rename the second x.1) or for a row with
    more cells than the header (pandas drops them silently when empty and the first row has them, else with a warning)."""
    header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, dtype=str, keep_default_na=False, index_col=False).iloc[0]
    repeated = sorted(name for name, count in Counter(header).items() if count > 1 and name)
    if repeated:
        raise ValueError(f"the header names a column more than once: {repeated}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)  # pandas' warning that it drops a row's extra cell
        try:
            return pd.read_csv(io.BytesIO(data), index_col=False, **options)
        except pd.errors.ParserWarning:
            raise ValueError("a row has more cells than the header") from None
