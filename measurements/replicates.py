"""Replicate runs: measured rows that no estimator of the recorded inputs can tell apart.

Two rows are replicates when every recorded fact an estimator reads is the same: the whole
`Measurement` but its id, provenance, measured date and measured latencies, plus the id's own
deployment stem and, for an InferenceX row, the published topology its measured date resolves to (`id_stem`: the id less its date and serial, keeping any layout or config name
it carries). An estimator is a function of those facts, so it gives replicates one
prediction; where their measurements disagree, part of its error is the measurements' own
(`best_constant`, `replicate_floor`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

import numpy as np

from measurements.clients import INFERENCEX
from measurements.layout import ID_LAYOUT
from measurements.schema import Measurement, Statistics, flatten
from measurements.topologies.resolver import resolve

# what replicates may differ in: the row's name and record, and what it measured
NOT_RECORDED = frozenset({"id", "provenance", "measured_date", "ttft_ms", "tpot_ms", *(f.name for f in dataclasses.fields(Statistics))})
# facts added to the schema after the first digests: left out while not recorded, so those digests stand
LATER_FACTS = frozenset({"num_warmups", "client_seed"})
_DATE_PREFIX = re.compile(r"^\d{4}_\d{2}_\d{2}_")
_SERIAL_SUFFIX = re.compile(r"_\d+$")


def id_stem(row_id: str) -> str:
    """The id less a leading date (yyyy_mm_dd_) and a trailing serial (_<digits>), its layout
    spelled one way (InferenceX writes both _tp8_ep8_ and _tp8_0_ep8_0_)."""
    canonical = ID_LAYOUT.sub(lambda match: f"_tp{match.group(1)}_ep{match.group(2)}_", _DATE_PREFIX.sub("", row_id))
    return _SERIAL_SUFFIX.sub("", canonical)


def replicate_key(m: Measurement) -> str:
    """A 16-hex-digit digest of what an estimator reads from the row; equal for replicates only."""
    facts = {c: v for c, v in flatten(m).items() if c not in NOT_RECORDED and not (c in LATER_FACTS and v is None)}
    published = resolve(m) if m.source == INFERENCEX else None  # the config in force on the measured date decides a disagg run's topology
    text = repr((id_stem(m.id), sorted(facts.items()), published))  # flat columns: the key does not depend on how the schema nests them
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def best_constant(measured: np.ndarray) -> float:
    """The one prediction p minimising the summed APE sum(|p - v| / v) over measured values v > 0:
    their median weighted by 1/v (the lowest such value where the optimum is an interval)."""
    values = np.sort(np.asarray(measured, dtype=float))
    if values.size == 0 or not np.all(values > 0):
        raise ValueError(f"best_constant needs positive measurements, got {values.tolist()}")
    weights = 1.0 / values
    reached = np.cumsum(weights) >= weights.sum() / 2
    return float(values[np.argmax(reached)])


def replicate_floor(measured: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per row, the APE of its group's best constant: the least error any estimator giving each
    group one prediction can reach on that row (0 for a row measured once or alike)."""
    measured = np.asarray(measured, dtype=float)
    groups = np.asarray(groups)
    floor = np.zeros(measured.size)
    for group in np.unique(groups):
        members = np.flatnonzero(groups == group)
        best = best_constant(measured[members])
        floor[members] = np.abs(best / measured[members] - 1.0)
    return floor
