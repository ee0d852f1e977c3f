"""Provenance of a report run: package versions, the project's git head, the date, the command, the data file."""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path

PACKAGES = ("aiconfigurator-core", "numpy", "pandas", "numba", "jinja2")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages the numbers depend on, plus Python's."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_head(repo: Path) -> str:
    """The repository's HEAD commit (with "+dirty" when the work tree has changes), or "unknown"."""
    try:
        head = _git(repo, "rev-parse", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def collect(data_paths: Sequence[Path], rows: int, command: str, repo: Path) -> dict:
    """The provenance record written beside the per-point CSV and shown in the report (several data
    files: their paths and digests joined by "; ", in the order given)."""
    return {
        "generated_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git_head": git_head(repo),
        "command": command,
        "packages": package_versions(),
        "data_file": "; ".join(str(p) for p in data_paths),
        "data_sha256": "; ".join(file_sha256(p) for p in data_paths),
        "data_rows": rows,
    }
