"""Atomic output writes: every output is written to a temporary file in its own folder, then
renamed over the target (os.replace), so an interrupted write leaves the old file or none.

An existing target must be a regular file: a directory, FIFO, socket or device is refused, never
replaced. A symlink is followed: the file it names is the target (replaced, the link kept), and
a link to anything but a regular file is refused as that thing would be."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
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


def require_writable(path: Path, what: str) -> None:
    """InvalidInputError naming `what` unless a file can be written at `path`: absent or a regular
    file (symlinks followed), and its nearest existing folder a directory this user may write in
    (checked before any work)."""
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
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
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
