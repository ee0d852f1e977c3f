"""List the GPU systems, their backends and perf-data versions (aiconfigurator-core's bundled data).

current / previous / next are the queryable --backend-version slots; data versions are every
version directory the data ships for the backend on that system (the others serve as fallback
sources). A system listed without backends has no perf data.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json

from estimator.perf.paths import REFERENCE_PACKAGE
from estimator.perf.versions import SLOT_ALIASES, system_catalog

EXAMPLE = "python -m estimator systems --json"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument_group("output").add_argument("--json", action="store_true", help="print the catalog as one JSON object")


def catalog() -> dict:
    """The data package and version, and per system its backends' slots and data versions."""
    systems = [{"system": system, "backends": [{"backend": b.backend, **{a: b.slots.get(a) for a in SLOT_ALIASES},
                                                 "data_versions": list(b.data_versions)} for b in backends]}
               for system, backends in system_catalog().items()]  # fmt: skip
    package = REFERENCE_PACKAGE.replace("_", "-")
    return {"data_package": package, "data_version": importlib.metadata.version(package), "systems": systems}


def render(doc: dict) -> str:
    lines = [f"perf data: {doc['data_package']} {doc['data_version']}", f"{'system':<22}{'backend':<9}{'current':<14}{'previous':<14}{'next':<14}data versions"]
    for entry in doc["systems"]:
        if not entry["backends"]:
            lines.append(f"{entry['system']:<22}{'-':<9}(no perf data)")
        for b in entry["backends"]:
            slots = "".join(f"{b[a] or '-':<14}" for a in SLOT_ALIASES)
            lines.append(f"{entry['system']:<22}{b['backend']:<9}{slots}{' '.join(b['data_versions'])}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    doc = catalog()
    print(json.dumps(doc) if args.json else render(doc))
    return 0
