"""The cache folders: created private (0o700), and a root others can write refused with one line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import estimator.numba_cache as nc
import estimator.perf.stack as S
from estimator.cachedirs import private_dir
from estimator.cli import main
from estimator.closedloop import tablecache
from estimator.errors import UnsafeCacheDirError

ROOT = Path(__file__).resolve().parent.parent
ESTIMATE = ["estimate", "--model-path", "Qwen/Qwen3-32B", "--system", "h200_sxm", "--backend", "sglang", "--isl", "1024", "--osl", "128"]


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_missing_folders_are_created_private(tmp_path, monkeypatch):
    root = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(root))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    S.table_cache_dir()
    keyed = nc.numba_cache_dir()
    with tablecache.enabled() as grids:
        pass
    created = [tmp_path / "a", tmp_path / "a" / "b", root, root / "tables", root / "numba", keyed, root / "tables" / "engine", grids]
    assert [mode(p) for p in created] == [0o700] * len(created)


@pytest.mark.parametrize("unsafe", [0o777, 0o770, 0o722, 0o1777])
def test_a_root_others_can_write_is_refused(unsafe, tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    root.chmod(unsafe)
    with pytest.raises(UnsafeCacheDirError, match=f"cache folder '{root}' can be written by group or others \\(mode {unsafe:o}\\)"):
        private_dir(root / "tables", root)


def test_a_subfolder_others_can_write_is_refused(tmp_path):
    (tmp_path / "tables").mkdir(mode=0o700)
    (tmp_path / "tables").chmod(0o775)
    with pytest.raises(UnsafeCacheDirError, match="tables"):
        private_dir(tmp_path / "tables", tmp_path)
    (tmp_path / "tables").chmod(0o755)  # readable by others is fine: only writing plants code
    assert private_dir(tmp_path / "tables", tmp_path) == tmp_path / "tables"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_root_another_user_owns_is_refused(tmp_path):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    with pytest.raises(UnsafeCacheDirError, match="another user \\(uid 65534\\)"):
        private_dir(root, root)


@pytest.mark.parametrize("variable", ["ESTIMATOR_CACHE_DIR", "NUMBA_CACHE_DIR"])
def test_the_command_line_refuses_a_world_writable_root(variable, tmp_path, monkeypatch, capsys):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv(variable, str(root))
    S.load_stack.cache_clear()
    assert main(ESTIMATE) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(f"error: cache folder '{root}' can be written by group or others")
    assert list(root.iterdir()) == []  # nothing read, nothing written


def test_an_unsafe_kernel_root_is_refused_from_a_fresh_process(tmp_path):
    """At import the kernels are pointed at a private temporary folder instead (nothing is loaded from
    the unsafe one), and the command exits 2 with one line, no traceback."""
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    env = {k: v for k, v in os.environ.items() if k != "ESTIMATOR_HARNESS_NUMBA_CACHE"} | {"NUMBA_CACHE_DIR": str(root)}
    done = subprocess.run([sys.executable, "-m", "estimator", *ESTIMATE], env=env, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert "can be written by group or others" in done.stderr and list(root.iterdir()) == []


def test_import_time_falls_back_to_a_private_temporary_folder(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(root))
    folder = nc._kernel_folder()
    assert root not in folder.parents and mode(folder) == 0o700


def test_the_engine_grid_store_refuses_a_folder_others_can_write(tmp_path, monkeypatch):
    monkeypatch.setenv("ESTIMATOR_CACHE_DIR", str(tmp_path / "cache"))
    engine = S.table_cache_dir() / "engine"
    engine.mkdir(mode=0o700)
    engine.chmod(0o777)
    with pytest.raises(UnsafeCacheDirError, match="engine"), tablecache.enabled():
        pass
