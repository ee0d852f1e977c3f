"""Which parquet files feed one perf table, in priority order (the reference's four-channel resolution).

Channels, in priority order (SILICON/HYBRID "shared layer"):
  primary         the requested version's own file (family dirs first, then the legacy path)
  declared_reuse  tables named by the requested version dir's reuse.yaml (may borrow a newer version)
  fallback        every strictly older version of the same backend holding the file, nearest first
  cross_backend   other backends' files, rows filtered to the kernel_sources the reuse manifest shares
Rows merge first-wins in this order, so later sources only add missing points. NCCL/oneCCL
tables are system-wide and take no extra sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from estimator.caching import memo
from estimator.deployment import Backend
from estimator.perf.paths import (
    backend_version_dirs,
    family_dirs,
    read_yaml,
    reuse_declarations,
    system_data_dir,
    system_yaml,
    systems_root,
    version_dir_unusable,
)

CHANNELS = ("primary", "declared_reuse", "fallback", "cross_backend")
REUSE_MANIFEST = "perf_data_reuse_manifest.yaml"
_SHARED_TIERS = frozenset({"shared", "shared_fallback"})  # manifest tiers the resolver admits
SYSTEM_WIDE_TABLES = frozenset({"nccl_perf.parquet", "oneccl_perf.parquet"})  # never take extra sources


@dataclass(frozen=True)
class TableSource:
    """One parquet file feeding a table."""

    path: Path  # absolute path of an existing parquet file
    channel: str  # one of CHANNELS
    version: str  # version dir name the file belongs to (of the donor backend for cross_backend)
    kernel_sources: tuple[str, ...] | None  # sorted admitted kernel_source values; None admits every row


def _basename(table: str) -> str:
    """`gemm_perf` or `gemm_perf.parquet` -> `gemm_perf.parquet`."""
    return table if table.endswith(".parquet") else f"{table}.parquet"


def locate(data_dir: Path, backend: str, version: str, basename: str, family: str | None = None) -> Path:
    """Where a table of (backend, version) lives: the first usable family dir holding it, else the legacy path.

    `family` (if given) is searched first; family dirs whose version dir carries the legacy
    INCOMPLETE veto are skipped. The legacy path `<data_dir>/<backend>/<version>/<basename>` is
    returned when no family dir holds the file, whether or not it exists.
    """
    for fam in sorted(family_dirs(data_dir), key=lambda f: f.name != family):
        version_dir = fam / backend / version
        if version_dir.is_dir() and not version_dir_unusable(version_dir) and (version_dir / basename).exists():
            return version_dir / basename
    return data_dir / backend / version / basename


def _admissible(path: Path) -> bool:
    """True iff `path` is a file whose version dir is not vetoed."""
    return path.is_file() and not version_dir_unusable(path.parent)


def _pep440(version: str) -> Version | None:
    """PEP 440 parse, or None for unparseable dir names (those never act as implicit fallbacks)."""
    try:
        return Version(version)
    except InvalidVersion:
        return None


def _descending(versions, key) -> list[str]:
    """Version names by `key`, highest first; equal keys keep ascending name order (as the reference)."""
    return sorted(sorted(versions), key=key, reverse=True)


def _declared_reuse(data_dir: Path, backend: str, version: str, basename: str) -> list[TableSource]:
    """Donors named for this table by reuse.yaml files of the requested version dirs, file order, first per version."""
    declared = [
        from_version
        for v, vdir in backend_version_dirs(data_dir, backend)
        if v == version
        for table, from_version in reuse_declarations(vdir)
        if f"{table}.parquet" == basename
    ]
    found = []
    for from_version in dict.fromkeys(declared):
        path = locate(data_dir, backend, from_version, basename)
        if _admissible(path):
            found.append(TableSource(path, "declared_reuse", from_version, None))
    return found


def _fallbacks(data_dir: Path, backend: str, version: str, basename: str, skip: set[str]) -> list[TableSource]:
    """Strictly older PEP 440 versions of the same backend that hold the table, nearest first.

    `skip` holds the declared-reuse donor versions, which are never listed twice.
    """
    requested = _pep440(version)
    if requested is None:
        return []
    siblings = {v for v, _ in backend_version_dirs(data_dir, backend)} - skip - {version}
    older = [v for v in siblings if (parsed := _pep440(v)) is not None and parsed < requested]
    found = []
    for sibling in _descending(older, _pep440):
        path = locate(data_dir, backend, sibling, basename)
        if _admissible(path):
            found.append(TableSource(path, "fallback", sibling, None))
    return found


@memo()
def _shared_kernel_sources(basename: str, backend: str) -> dict[str, tuple[str, ...]]:
    """Per donor backend, the sorted kernel_sources `backend` may inherit for a table (from the reuse manifest).

    A manifest group qualifies when its op_file matches, its tier is shared or shared_fallback,
    it names a kernel_source, and its frameworks include `backend`; each other framework of a
    qualifying group may then donate that kernel_source.
    """
    groups = read_yaml(systems_root() / REUSE_MANIFEST).get("groups") or []
    admitted: dict[str, set[str]] = {}
    for group in groups:
        frameworks = {str(f).lower() for f in group.get("frameworks") or []}
        if _manifest_op_file(group) == basename and group.get("tier") in _SHARED_TIERS and group.get("kernel_source") and backend in frameworks:
            for framework in frameworks - {backend}:
                admitted.setdefault(framework, set()).add(str(group["kernel_source"]))
    return {fw: tuple(sorted(ks)) for fw, ks in sorted(admitted.items())}


def _manifest_op_file(group: dict) -> str:
    """A manifest group's op_file basename, with legacy `.txt` names read as `.parquet`."""
    op_file = str(group.get("op_file") or "")
    return op_file.removesuffix(".txt") + ".parquet" if op_file.endswith(".txt") else op_file


def _newest_first_key(version: str) -> tuple[int, Version | str]:
    """Ordering key: any PEP 440 version ranks above any unparseable name; within a group, by version / name."""
    parsed = _pep440(version)
    return (1, parsed) if parsed is not None else (0, version)


def _cross_backend(data_dir: Path, backend: str, basename: str) -> list[TableSource]:
    """Other backends' files (donor backends by name, each newest version first) with kernel_source filters."""
    found = []
    for donor, kernel_sources in _shared_kernel_sources(basename, backend).items():
        for version in _descending({v for v, _ in backend_version_dirs(data_dir, donor)}, _newest_first_key):
            path = locate(data_dir, donor, version, basename)
            if _admissible(path):
                found.append(TableSource(path, "cross_backend", version, kernel_sources))
    return found


@memo()
def _resolve(system: str, backend: str, version: str, family: str, basename: str) -> tuple[TableSource, ...]:
    """Cached body of `table_sources` (resolution is a pure function of the shipped tree)."""
    data_dir = system_data_dir(system)
    primary = locate(data_dir, backend, version, basename, family)
    sources = [TableSource(primary, "primary", version, None)] if _admissible(primary) else []
    if basename in SYSTEM_WIDE_TABLES:
        return tuple(sources)
    declared = _declared_reuse(data_dir, backend, version, basename)
    fallbacks = _fallbacks(data_dir, backend, version, basename, {s.version for s in declared})
    return tuple(sources + declared + fallbacks + _cross_backend(data_dir, backend, basename))


def table_sources(system: str, backend: str | Backend, version: str, family: str, table: str) -> list[TableSource]:
    """The existing files feeding `table` for (system, backend, version), in priority order.

    `version` is a literal version dir name (see versions.resolve_version); `family` is the
    family dir the table is expected in (e.g. "gemm"); `table` is the stem ("gemm_perf") or the
    basename. An empty list means no data anywhere. Unlike the reference's report, a primary
    file that does not exist is omitted rather than listed with exists=False.
    """
    name = Backend.parse(backend).value
    return list(_resolve(system, name, version, family, _basename(table)))


def nccl_source(system: str) -> TableSource | None:
    """The system-wide NCCL table `comm/nccl/<misc.nccl_version>/nccl_perf.parquet` (no extra sources).

    None when the spec names no nccl_version or that version ships no file (e.g. b60).
    """
    return _collective_source(system, "nccl")


def oneccl_source(system: str) -> TableSource | None:
    """The oneCCL table `comm/oneccl/<misc.oneccl_version>/oneccl_perf.parquet`, the reference's NCCL
    stand-in on XPU systems (b60); None when the spec names no oneccl_version or no file ships."""
    return _collective_source(system, "oneccl")


def _collective_source(system: str, library: str) -> TableSource | None:
    """Primary-only source of a system-wide collective library table ("nccl" or "oneccl")."""
    version = (system_yaml(system).get("misc") or {}).get(f"{library}_version")
    if not version:
        return None
    path = locate(system_data_dir(system), library, str(version), f"{library}_perf.parquet", "comm")
    return TableSource(path, "primary", str(version), None) if _admissible(path) else None
