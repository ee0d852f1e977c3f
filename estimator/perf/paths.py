"""Where aiconfigurator-core's shipped perf data lives, found without importing the package.

Layout (all paths under `systems_root()`):
  `<system>.yaml`                                 hardware spec; its `data_dir` names the data tree
  `data/<system>/<family>/<backend>/<version>/`   perf tables (family layout)
  `data/<system>/<backend>/<version>/`            deprecated legacy layout, still honoured
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml

from estimator.caching import memo
from estimator.errors import EstimatorError, UnknownSystemError

REFERENCE_PACKAGE = "aiconfigurator_core"

# First-level directories of a system's data tree that are backend dirs (legacy layout) or
# system-wide comm libraries, never family dirs.
NON_FAMILY_DIRS = frozenset({"trtllm", "sglang", "vllm", "nccl", "oneccl"})

# Version-dir sidecars: provenance metadata, never tables.
COLLECTION_META = "collection_meta.yaml"  # structured per-table provenance (supersedes INCOMPLETE.txt)
REUSE_YAML = "reuse.yaml"  # declared reuse: `reuse: [{table, from_version, reason, approved_by}]`
LEGACY_INCOMPLETE = "INCOMPLETE.txt"  # legacy whole-directory veto
LEGACY_REUSE = "SHARED_LAYER_REUSE.txt"  # legacy reuse marker (declares a version, names no donor)
_SIDECARS = frozenset({COLLECTION_META, REUSE_YAML, LEGACY_INCOMPLETE, LEGACY_REUSE})
_REUSE_KEYS = ("table", "from_version", "reason", "approved_by")  # required non-empty strings per entry

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@memo()
def systems_root() -> Path:
    """Absolute path of `aiconfigurator_core/systems` (located via find_spec; nothing is imported)."""
    spec = importlib.util.find_spec(REFERENCE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EstimatorError(f"package {REFERENCE_PACKAGE!r} is not installed; it ships the perf tables")
    root = Path(next(iter(spec.submodule_search_locations))) / "systems"
    if not root.is_dir():
        raise EstimatorError(f"{REFERENCE_PACKAGE!r} has no systems directory at {root}")
    return root


@memo()
def read_yaml(path: Path) -> Any:
    """Parsed YAML document at `path` (cached; callers must not mutate it). Empty file -> {}."""
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_YAML_LOADER) or {}


def system_yaml(system: str) -> dict:
    """The raw spec mapping of `systems/<system>.yaml`; UnknownSystemError if the system is not shipped."""
    if system not in _system_names():
        raise UnknownSystemError(f"unknown system {system!r} (known: {', '.join(_system_names())})")
    return read_yaml(systems_root() / f"{system}.yaml")


def system_data_dir(system: str) -> Path:
    """The system's data tree `systems/<data_dir>` (exists for every listed system)."""
    return systems_root() / system_yaml(system)["data_dir"]


def list_systems() -> list[str]:
    """Sorted names of systems that ship both a spec yaml (with `data_dir`) and that data directory.

    Estimate-only systems (an empty data dir, e.g. a100_pcie) are included; other yaml files in
    the root (query_versions, manifests) are not systems because they have no `data_dir`.
    """
    return list(_system_names())


@memo()
def _system_names() -> tuple[str, ...]:
    """Cached body of `list_systems`."""
    root = systems_root()
    return tuple(
        path.stem
        for path in sorted(root.glob("*.yaml"))
        if isinstance(doc := read_yaml(path), dict) and doc.get("data_dir") and (root / doc["data_dir"]).is_dir()
    )


@memo()
def family_dirs(data_dir: Path) -> tuple[Path, ...]:
    """First-level family directories of a system data tree, in name order.

    A family dir is any visible directory that is not a backend/comm-library dir. The reference
    walks them in readdir order; every shipped table stem lives in exactly one family, so the
    order never changes a result and name order keeps ours deterministic.
    """
    if not data_dir.is_dir():
        return ()
    visible = (p for p in sorted(data_dir.iterdir()) if p.is_dir() and not p.name.startswith("."))
    return tuple(p for p in visible if p.name not in NON_FAMILY_DIRS)


@memo()
def backend_version_dirs(data_dir: Path, backend: str) -> tuple[tuple[str, Path], ...]:
    """Every `(version, version_dir)` of `backend` in a data tree, over both layouts.

    Family layout `<family>/<backend>/<version>` plus legacy `<backend>/<version>`; one version may
    appear under several families. Version dirs starting with '.' or '_' are ignored.
    """
    parents = [f / backend for f in family_dirs(data_dir)] + [data_dir / backend]
    found = []
    for parent in parents:
        if parent.is_dir():
            found.extend((p.name, p) for p in sorted(parent.iterdir()) if p.is_dir() and not p.name.startswith((".", "_")))
    return tuple(found)


def version_dir_unusable(version_dir: Path) -> bool:
    """True iff the dir carries the legacy INCOMPLETE.txt veto and no collection_meta.yaml.

    `status: partial` inside collection_meta.yaml is informational: its rows stay usable.
    """
    return (version_dir / LEGACY_INCOMPLETE).is_file() and not (version_dir / COLLECTION_META).is_file()


def version_dir_has_tables(version_dir: Path) -> bool:
    """True iff the dir holds at least one visible regular file that is not a sidecar."""
    return version_dir.is_dir() and any(p.is_file() and not p.name.startswith(".") and p.name not in _SIDECARS for p in version_dir.iterdir())


def reuse_declarations(version_dir: Path) -> list[tuple[str, str]]:
    """`(table stem, from_version)` pairs of the dir's reuse.yaml, in file order ([] if absent).

    Raises EstimatorError naming the file when the document is malformed, as the reference's
    loader does (its non-strict source resolver would instead warn and ignore the file).
    """
    path = version_dir / REUSE_YAML
    if not path.is_file():
        return []
    doc = read_yaml(path)
    entries = doc.get("reuse") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and all(isinstance(e.get(k), str) and e[k].strip() for k in _REUSE_KEYS) for e in entries):
        raise EstimatorError(f"{path}: malformed reuse.yaml (need reuse: [{{{', '.join(_REUSE_KEYS)}}}])")
    return [(e["table"], e["from_version"]) for e in entries]


def version_dir_declared(version_dir: Path) -> bool:
    """True iff the dir declares its version: usable and holding tables or a reuse declaration."""
    if version_dir_unusable(version_dir):
        return False
    return version_dir_has_tables(version_dir) or bool(reuse_declarations(version_dir)) or (version_dir / LEGACY_REUSE).is_file()
