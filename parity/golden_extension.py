"""syrupy extension over the golden files: tolerance-aware comparison and explained diffs.

Usage in a test:  `assert record == golden_snapshot(name=record_key(surface, shape))`
where `golden_snapshot = snapshot.use_extension(GoldenExtension)`. The snapshot name is the
record key and the location is the (system, backend, family) golden file the key's shape maps to.
The golden files' lifecycle (append, refresh, change report) belongs to `python -m parity.pin`;
this extension never reports unasserted records as unused (the CI tier asserts a subset).
`pytest --snapshot-update` is refused with more than one xdist worker.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from syrupy.data import Snapshot, SnapshotCollection, SnapshotCollections
from syrupy.extensions.base import AbstractSyrupyExtension

from parity.compare import failures
from parity.goldens import GOLDENS_DIR, canonical, diff_record, explained, golden_file_text, read_golden_file


class GoldenUpdateRefused(RuntimeError):
    """Snapshot updates are single-process: concurrent writers have truncated golden files."""


def _location_of(key: str) -> str:
    """The golden file of a record key `<surface>|<system>-<backend>-<model...>`."""
    from parity.goldens import golden_path
    from parity.surfaces import shape_of_key

    return str(golden_path(shape_of_key(key)))


class GoldenExtension(AbstractSyrupyExtension):
    file_extension = "json"

    @classmethod
    def get_snapshot_name(cls, *, test_location, index=0) -> str:
        return str(index)

    @classmethod
    def get_location(cls, *, test_location, index) -> str:
        return _location_of(str(index))

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(GOLDENS_DIR)

    def discover_snapshots(self, *, test_location, ignore_extensions=None) -> SnapshotCollections:
        return SnapshotCollections()

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return canonical(data)

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        live, golden = json.loads(serialized_data), json.loads(snapshot_data)
        return not failures(diff_record("", _strip(golden), live))

    def diff_lines(self, serialized_data: Any, snapshot_data: Any):
        live, golden = json.loads(serialized_data), json.loads(snapshot_data)
        yield from explained(golden.get("__key__", "<record>"), _strip(golden), _strip(live)).splitlines()

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        collection = SnapshotCollection(location=snapshot_location)
        for key, record in read_golden_file(Path(snapshot_location))["records"].items():
            collection.add(Snapshot(name=key, data=canonical(dict(record, __key__=key))))
        return collection

    def read_snapshot_data_from_location(self, *, snapshot_location: str, snapshot_name: str, session_id: str):
        record = read_golden_file(Path(snapshot_location))["records"].get(snapshot_name)
        return None if record is None else canonical(dict(record, __key__=snapshot_name))

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: SnapshotCollection, name_order=None) -> None:
        if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
            raise GoldenUpdateRefused("refusing --snapshot-update under xdist with more than one worker; use `python -m parity.pin`")
        path = Path(snapshot_collection.location)
        doc = read_golden_file(path)
        for snap in snapshot_collection:
            doc["records"][snap.name] = _strip(json.loads(snap.data))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(golden_file_text(doc["provenance"], doc["records"]))

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        """Never deletes: retiring records is a reviewed pin, not a test-run side effect."""


def _strip(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "__key__"}
