"""Perf-table resolution: version slots, system specs, table builders and their on-disk cache."""

from estimator.perf.system_spec import load_system_spec
from estimator.perf.versions import names_release, slot_sort_key, version_slots

__all__ = ["load_system_spec", "names_release", "slot_sort_key", "version_slots"]
