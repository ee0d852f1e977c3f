"""The on-disk caches' folders (built perf tables, Numba's compiled kernels), private to this user.

What a cache holds is read back into this process (Numba's files are machine code), so a folder
that others can write could run their code as this user. Every missing folder from the cache root
down is created 0o700; an existing one that group or others can write, or that another user owns,
is refused (UnsafeCacheDirError, one line naming it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from estimator.errors import UnsafeCacheDirError

PRIVATE_MODE = 0o700  # what a new cache folder is created with (the umask can only narrow it)


def cache_root() -> Path:
    """$ESTIMATOR_CACHE_DIR, else ~/.cache/llm-serving-estimator."""
    return Path(os.environ.get("ESTIMATOR_CACHE_DIR") or Path.home() / ".cache" / "llm-serving-estimator")


def private_dir(path: Path, root: Path) -> Path:
    """`path` (`root` or a folder under it) with every missing folder on the way created 0o700;
    UnsafeCacheDirError names the first folder from `root` down to `path` that group or others can
    write or another user owns (nothing is created below it). OSError when a folder cannot be created."""
    path, root = Path(path), Path(root)
    _make(*reversed([root, *root.parents]))
    folder = root
    for part in ("", *path.relative_to(root).parts):
        folder = folder / part
        _make(folder)
        _refuse_unless_private(folder)
    return path


def _make(*folders: Path) -> None:
    """Create each missing folder, in order, 0o700."""
    for folder in folders:
        if not folder.is_dir():
            folder.mkdir(mode=PRIVATE_MODE, exist_ok=True)


def _refuse_unless_private(folder: Path) -> None:
    st = folder.stat()
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = f"group or others (mode {stat.S_IMODE(st.st_mode):o})"
    elif st.st_uid != os.geteuid():
        who = f"another user (uid {st.st_uid})"
    else:
        return
    raise UnsafeCacheDirError(
        f"cache folder {str(folder)!r} can be written by {who}, so its files could run their code: "
        "make it yours alone (chmod go-w) or set ESTIMATOR_CACHE_DIR (NUMBA_CACHE_DIR for compiled kernels) to a private folder"
    )
