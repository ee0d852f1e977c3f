"""Re-pin goldens: `python -m parity.pin [--refresh KEY ...] [--refresh-all] [--allow-dirty]`.

By default only records missing from the golden files are appended; existing records change only
when named with --refresh (record keys, or key prefixes such as `agg.uncached|h200_sxm-sglang`) or
with --refresh-all. Every value is computed before any file is written; files are written with
sorted keys and full float repr, and a file whose records did not change is left untouched, so
re-running with no modelling change is byte-identical. A markdown change report lists every moved
record with before, after, delta % and the component that moved (goldens/CHANGES.md).

Refuses to run inside a pytest-xdist worker pool and on a dirty git tree unless --allow-dirty.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from parity.compare import failures
from parity.goldens import GOLDENS_DIR, ROOT, diff_record, golden_file_text, golden_path, read_golden_file, record_key
from parity.matrix import Shape, full_matrix
from parity.surfaces import COMPONENTS, SURFACES, compute_record

REPORT = GOLDENS_DIR / "CHANGES.md"
PACKAGES = ("aiconfigurator-core", "numba", "numpy", "pyarrow")


class PinRefused(SystemExit):
    """A precondition of a reviewed re-pin does not hold (exit status 2)."""

    def __init__(self, why: str):
        print(f"pin refused: {why}", file=sys.stderr)
        super().__init__(2)


@dataclass(frozen=True)
class Moved:
    key: str
    before: dict  # golden record
    after: dict  # live record
    components: tuple[str, ...]  # components whose metrics moved ("derived only" when none)


def attribute(key: str, before: dict, after: dict) -> tuple[str, ...]:
    """The components whose metrics moved between two records of one key."""
    moved = {d.metric for d in failures(diff_record(key, before, after))}
    if "<outcome>" in moved:
        return ("outcome (error vs value)",)
    parts = sorted({COMPONENTS[m] for m in moved if m in COMPONENTS})
    return tuple(parts) or ("derived only (queue factor / closed-form formula)",)


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def _check_preconditions(allow_dirty: bool) -> None:
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 or os.environ.get("PYTEST_XDIST_WORKER"):
        raise PinRefused("running under pytest-xdist with several workers; pin from a plain shell")
    if not allow_dirty and _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!goldens"):
        raise PinRefused("the git tree has uncommitted changes outside goldens/ (commit them, or pass --allow-dirty)")


def _wanted(key: str, refresh: list[str], refresh_all: bool) -> bool:
    return refresh_all or any(key == r or key.startswith(r) for r in refresh)


def plan_pin(shapes: tuple[Shape, ...], refresh: list[str], refresh_all: bool) -> tuple[dict[Path, dict], list[Moved], list[str]]:
    """Compute every record, then decide each file's new records. Returns (files to write, moved, added)."""
    live: dict[Path, dict[str, dict]] = defaultdict(dict)
    for shape in shapes:
        for surface in SURFACES:
            live[golden_path(shape)][record_key(surface, shape)] = compute_record(surface, shape)
    writes, moved, added = {}, [], []
    for path in sorted(live):
        doc = read_golden_file(path)
        records = dict(doc["records"])
        for key, record in sorted(live[path].items()):
            if key not in records:
                records[key] = record
                added.append(key)
            elif _wanted(key, refresh, refresh_all) and failures(diff_record(key, records[key], record)):
                moved.append(Moved(key, records[key], record, attribute(key, records[key], record)))
                records[key] = record
        if records != doc["records"]:
            writes[path] = records
    return writes, moved, added


def provenance(argv: list[str]) -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return {
        "command": "python -m parity.pin " + " ".join(argv),
        "date": dt.date.today().isoformat(),
        "git_head": _git("rev-parse", "HEAD") or "unknown",
        "packages": versions,
    }


def change_report(moved: list[Moved], added: list[str], prov: dict) -> str:
    lines = [
        "# Golden change report",
        "",
        f"- command: `{prov['command']}`",
        f"- git head: `{prov['git_head']}`",
        f"- date: {prov['date']}",
        f"- records added: {len(added)}",
        f"- records moved: {len(moved)}",
        "",
    ]
    if moved:
        lines += ["| record | metric | before | after | delta % | moved component(s) |", "|---|---|---|---|---|---|"]
        for m in moved:
            for d in failures(diff_record(m.key, m.before, m.after)):
                pct = "-" if d.delta_pct != d.delta_pct else f"{d.delta_pct:+.6f}"
                lines.append(f"| `{m.key}` | {d.metric} | {d.expected!r} | {d.actual!r} | {pct} | {', '.join(m.components)} |")
    if added:
        lines += ["", "## Added records", ""] + [f"- `{k}`" for k in added]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m parity.pin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refresh", nargs="+", default=[], metavar="KEY", help="record keys or key prefixes to refresh")
    parser.add_argument("--refresh-all", action="store_true", help="refresh every record (a deliberate modelling change)")
    parser.add_argument("--allow-dirty", action="store_true", help="pin on a tree with uncommitted changes")
    args = parser.parse_args(argv)
    _check_preconditions(args.allow_dirty)
    writes, moved, added = plan_pin(full_matrix(), args.refresh, args.refresh_all)
    if not writes:
        print("goldens unchanged")
        return 0
    prov = provenance(argv)
    for path, records in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(golden_file_text(prov, records))
    REPORT.write_text(change_report(moved, added, prov))
    print(f"{len(added)} record(s) added, {len(moved)} moved, {len(writes)} file(s) written; report: {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
