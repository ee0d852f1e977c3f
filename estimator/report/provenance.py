"""Provenance of a report run: package versions, the project's git head, the date, the command, the data file."""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import platform
import subprocess
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


def collect(data_path: Path, rows: int, command: str, repo: Path) -> dict:
    """The provenance record written beside the per-point CSV and shown in the report."""
    return {
        "generated_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git_head": git_head(repo),
        "command": command,
        "packages": package_versions(),
        "data_file": str(data_path),
        "data_sha256": file_sha256(data_path),
        "data_rows": rows,
    }
