"""Queryable backend-version slots (`systems/query_versions.yaml`), as aiconfigurator-core 0.12.0 applies them.

Each (system, backend) exposes at most three versions: `current` and `previous` are authored
(per-system `overrides` win over `defaults`); `next` is derived fleet-wide. The aliases
current/previous/next are accepted wherever a version is requested; any other version is
rejected unless explicitly allowed. Version dirs outside the slots still serve as fallback
sources (see sources.py) but are not queryable versions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from estimator.caching import memo
from estimator.deployment import Backend
from estimator.errors import UnknownBackendError, UnknownVersionError
from estimator.perf.paths import (
    backend_version_dirs,
    list_systems,
    read_yaml,
    system_data_dir,
    systems_root,
    version_dir_declared,
    version_dir_has_tables,
    version_dir_unusable,
)

SLOT_ALIASES = ("current", "previous", "next")
ALLOW_UNLISTED_ENV = "AIC_ALLOW_UNLISTED_VERSIONS"


@dataclass(frozen=True)
class VersionSlots:
    """The queryable versions of one (system, backend); every value is a literal version dir name."""

    current: str  # the maintained default
    previous: str | None  # the current before it (None when not authored)
    next: str | None  # derived: highest data-backed version newer than current (None on override systems)

    def get(self, alias: str) -> str | None:
        """The version behind a slot alias ('current' / 'previous' / 'next')."""
        return getattr(self, alias)

    def versions(self) -> tuple[str, ...]:
        """The distinct slot versions, ascending (by `slot_sort_key`)."""
        return tuple(sorted({v for v in (self.current, self.previous, self.next) if v}, key=slot_sort_key))

    def describe(self) -> str:
        """Human-readable slot listing, e.g. "current=0.5.14, next=0.5.16"."""
        return ", ".join(f"{a}={self.get(a)}" for a in SLOT_ALIASES if self.get(a))


def slot_sort_key(version: str) -> tuple[int, int, int, int, int, int]:
    """Ordering key the reference uses for slots (not PEP 440): (major, minor, patch, stable, rc, suffix).

    `stable` is 0 for any version containing "rc" (rc number from "rc<N>"), else 1; `suffix` is the
    last digit run after the matched numeric core (e.g. 2 in "0.5.6.post2"). A version without
    "a.b" sorts lowest.
    """
    text = str(version).lower()
    core = re.search(r"(\d+)\.(\d+)\.(\d+)", text) or re.search(r"v?(\d+)\.(\d+)", text)
    if core is None:
        return (0, 0, 0, 0, 0, 0)
    major, minor, patch = (list(map(int, core.groups())) + [0])[:3]
    rc = re.search(r"rc(\d+)", text)
    stable, rc_number = (0, int(rc.group(1))) if rc else ((0, 0) if "rc" in text else (1, 0))
    tail_digits = re.findall(r"\d+", text[core.end() :])
    return (major, minor, patch, stable, rc_number, int(tail_digits[-1]) if tail_digits else 0)


def names_release(version: str | None) -> bool:
    """True when `version` starts with a release number (a.b, optionally v-prefixed), as "0.5.9" or
    "v0.10.2"; False for None and a build named otherwise (a nightly, a dev image)."""
    return version is not None and re.match(r"v?\d+\.\d+", version) is not None


def _slots_doc() -> dict:
    """Parsed `systems/query_versions.yaml`."""
    return read_yaml(systems_root() / "query_versions.yaml")


def _authored_entry(system: str, backend: str) -> tuple[dict, bool]:
    """`(entry, is_override)`: the per-system override for the backend if any, else the default."""
    doc = _slots_doc()
    override = ((doc.get("overrides") or {}).get(system) or {}).get(backend)
    if override is not None:
        return override, True
    return (doc.get("defaults") or {}).get(backend) or {}, False


def _override_systems(backend: str) -> frozenset[str]:
    """Systems whose overrides govern `backend`; they stay out of the fleet `next` derivation."""
    overrides = _slots_doc().get("overrides") or {}
    return frozenset(name for name, per_backend in overrides.items() if (per_backend or {}).get(backend))


@memo()
def fleet_next(backend: str, current: str) -> str | None:
    """Highest version newer than `current` (by `slot_sort_key`) whose dir holds tables on any
    defaults-governed system; marker-only dirs (reuse.yaml alone) do not count."""
    excluded = _override_systems(backend)
    newer = {
        version
        for system in list_systems()
        if system not in excluded
        for version, vdir in backend_version_dirs(system_data_dir(system), backend)
        if slot_sort_key(version) > slot_sort_key(current) and version_dir_has_tables(vdir)
    }
    return max(newer, key=slot_sort_key) if newer else None


def version_slots(system: str, backend: str | Backend) -> VersionSlots:
    """The queryable slots of (system, backend).

    Raises UnknownSystemError for a system that is not shipped and UnknownBackendError for a
    backend name that is unknown or has no version directory on that system.
    """
    name = Backend.parse(backend).value
    data_dir = system_data_dir(system)
    entry, is_override = _authored_entry(system, name)
    if not entry.get("current") or not backend_version_dirs(data_dir, name):
        raise UnknownBackendError(f"backend {name!r} has no perf data on system {system!r}")
    current = str(entry["current"])
    return VersionSlots(
        current=current,
        previous=str(entry["previous"]) if entry.get("previous") else None,
        next=None if is_override else fleet_next(name, current),
    )


def unlisted_versions_allowed() -> bool:
    """True when the environment opts into raw (non-slot) versions, as the reference's escape hatch."""
    return os.environ.get(ALLOW_UNLISTED_ENV, "").lower() in ("1", "true", "yes")


def resolve_version(system: str, backend: str | Backend, version: str | None = None, *, allow_unlisted: bool = False) -> str:
    """Map a requested version (None = current, a slot alias, or a literal) to its version dir name.

    A literal outside the slots raises UnknownVersionError naming it and the allowed versions,
    unless `allow_unlisted` or AIC_ALLOW_UNLISTED_VERSIONS=1. The result must also be loadable
    as the reference's get_database loads it: a usable version dir exists on the system, or it
    is the advertised `next` slot (a dir-less next is served entirely by fallback sources).
    """
    name = Backend.parse(backend).value
    slots = version_slots(system, name)
    requested = version or "current"
    if requested in SLOT_ALIASES:
        resolved = slots.get(requested)
        if resolved is None:
            raise UnknownVersionError(f"{name} on {system} has no {requested!r} version (slots: {slots.describe()})")
    elif requested in slots.versions() or allow_unlisted or unlisted_versions_allowed():
        resolved = requested
    else:
        raise UnknownVersionError(
            f"version {requested!r} is not a queryable {name} version on {system}; "
            f"allowed: {slots.describe()} (or an alias {', '.join(SLOT_ALIASES)}); "
            f"set {ALLOW_UNLISTED_ENV}=1 to query raw version directories"
        )
    if resolved != slots.next and not _has_usable_dir(system, name, resolved):
        raise UnknownVersionError(f"no {name} perf data for version {resolved!r} on {system}")
    return resolved


def _has_usable_dir(system: str, backend: str, version: str) -> bool:
    """True iff some dir of that version exists and not every such dir carries the legacy veto."""
    dirs = [d for v, d in backend_version_dirs(system_data_dir(system), backend) if v == version]
    return bool(dirs) and not all(version_dir_unusable(d) for d in dirs)


def list_stacks() -> list[tuple[str, str, str]]:
    """Every shipped queryable (system, backend, version), mirroring the reference's supported-databases list.

    A backend counts on a system when at least one of its version dirs is declared (holds
    tables or a reuse declaration); its stacks are then its slot versions, including a
    dir-less `next`. Sorted by system, backend, then slot order.
    """
    stacks = []
    for system in list_systems():
        data_dir = system_data_dir(system)
        for backend in sorted(b.value for b in Backend):
            if any(version_dir_declared(d) for _, d in backend_version_dirs(data_dir, backend)):
                stacks.extend((system, backend, v) for v in version_slots(system, backend).versions())
    return stacks


@dataclass(frozen=True)
class BackendData:
    """One backend's perf data on one system."""

    backend: str
    slots: VersionSlots  # the queryable versions (--backend-version current / previous / next)
    data_versions: tuple[str, ...]  # every declared version dir (tables or a reuse declaration), ascending by slot_sort_key


def system_catalog() -> dict[str, tuple[BackendData, ...]]:
    """Per shipped system (sorted), its backends with declared perf data, as list_stacks counts
    them; a system without any (estimate-only) maps to ()."""
    catalog = {}
    for system in list_systems():
        data_dir = system_data_dir(system)
        backends = []
        for backend in sorted(b.value for b in Backend):
            declared = {version for version, d in backend_version_dirs(data_dir, backend) if version_dir_declared(d)}
            if declared:
                backends.append(BackendData(backend, version_slots(system, backend), tuple(sorted(declared, key=slot_sort_key))))
        catalog[system] = tuple(backends)
    return catalog
