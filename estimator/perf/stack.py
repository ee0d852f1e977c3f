"""All perf tables of one (system, backend, version) stack, built once and cached on disk.

The first load reads parquet and builds the arrays; the arrays are then saved (estimator.perf.tablefile:
plain numbers, nothing that runs) in a private folder under the cache root, keyed by a hash of every
source file's bytes, so a warm load is two np.load calls. A file that fails to load is rebuilt and
replaced.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from estimator.cachedirs import cache_root, private_dir
from estimator.caching import memo
from estimator.deployment import Backend
from estimator.errors import PerfDataMissingError
from estimator.io import atomic_path
from estimator.kernels.packing import pack
from estimator.perf import families as F
from estimator.perf.paths import systems_root
from estimator.perf.sources import nccl_source, oneccl_source, table_sources
from estimator.perf.system_spec import QUANT_PROFILES, SystemSpec, load_system_spec
from estimator.perf.tablefile import FORMAT, Uncacheable, read, write
from estimator.perf.tables import Curves, Grid2, Grid3
from estimator.perf.versions import resolve_version

# (attribute, family dir, table stem)
_TABLES = (
    ("gemm", "gemm", "gemm_perf"),
    ("context_attention", "attention", "context_attention_perf"),
    ("generation_attention", "attention", "generation_attention_perf"),
    ("allreduce", "comm", "custom_allreduce_perf"),
    ("compute_scale", "quantize", "computescale_perf"),
    ("scale_matrix", "quantize", "scale_matrix_perf"),
    ("moe", "moe", "moe_perf"),
)


def table_cache_dir() -> Path:
    """Where built tables live: <cache root>/tables (estimator.cachedirs), created private;
    UnsafeCacheDirError when others can write it or the root, OSError when it cannot be created."""
    return private_dir(cache_root() / "tables", cache_root())


@dataclass(frozen=True)
class StackTables:
    """Built tables of one stack; kernel_tables is the tuple the Numba op evaluator takes."""

    system: str
    backend: str
    version: str  # literal version dir name
    spec: SystemSpec
    gemm: F.GemmSites
    context_attention: Grid3
    generation_attention: Grid3
    allreduce: Curves
    compute_scale: Grid2
    scale_matrix: Grid2
    nccl: Curves  # keyed (dtype, operation, num_gpus); oneCCL curves stand in for keys NCCL lacks
    moe: F.MoeCurves
    context_lanes: tuple[str, ...]  # every lane of the context table, alphabetical
    generation_lanes: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.system}/{self.backend}/{self.version}"

    @functools.cached_property
    def kernel_tables(self) -> tuple:
        """(fdat, idat, hdr): every table packed for the Numba op evaluator (estimator.kernels.packing)."""
        return pack(
            (
                self.gemm.arrays,
                self.context_attention.arrays,
                self.generation_attention.arrays,
                self.allreduce.arrays,
                self.compute_scale.arrays,
                self.scale_matrix.arrays,
                self.nccl.arrays,
                self.moe.arrays,
            )
        )

    def context_slice(self, key: tuple, lane_order: tuple[str, ...]) -> int:
        """Slice id of (fmha, kv, n_kv_lookup, head, window) by the lane walk; -1 when no lane has it."""
        return _lane_walk(self.context_attention.slices, key, lane_order, self.context_lanes)

    def generation_slice(self, key: tuple, lane_order: tuple[str, ...]) -> int:
        """Slice id of (kv, n_kv_lookup, head, window) by the lane walk; -1 when no lane has it."""
        return _lane_walk(self.generation_attention.slices, key, lane_order, self.generation_lanes)

    def nccl_max_gpus(self, dtype: str, operation: str) -> int | None:
        """Largest num_gpus collected for (dtype, operation), None when no curve has that pair."""
        collected = [n for d, o, n in self.nccl.curves if (d, o) == (dtype, operation)]
        return max(collected, default=None)

    def generation_sol_params(self, kv: str, n_kv_lookup: int, head: int, window: int) -> tuple:
        return F.generation_sol_params(self.sol_context, kv, n_kv_lookup, head, window)

    @functools.cached_property
    def sol_context(self) -> F.SolContext:
        return sol_context(self.spec)


def _lane_walk(slices: dict, key: tuple, lane_order: tuple[str, ...], table_lanes: tuple[str, ...]) -> int:
    """The first listed lane holding the whole slice key answers; then remaining lanes alphabetically."""
    rest = [lane for lane in table_lanes if lane not in lane_order]
    for lane in [*lane_order, *rest]:
        sid = slices.get((lane, *key))
        if sid is not None:
            return sid
    return -1


def sol_context(spec: SystemSpec) -> F.SolContext:
    tc = dict(spec.tc_flops)
    return F.SolContext(
        mem_bw=spec.mem_bw,
        sm_version=spec.sm_version or 0,
        gemm_profile={name: (p.bytes_per_element, tc.get(p.flops_key)) for name, p in QUANT_PROFILES["gemm"].items()},
        kv_bytes={name: p.bytes_per_element for name, p in QUANT_PROFILES["kv"].items()},
        bf16_flops=tc.get("bf16", float("nan")),
        fp8_flops=tc.get("fp8"),
    )


def _sources(system: str, backend: str, version: str) -> dict[str, list]:
    out = {attr: table_sources(system, backend, version, family, stem) for attr, family, stem in _TABLES}
    out["nccl"] = [lib for lib in (nccl_source(system), oneccl_source(system)) if lib is not None]
    return out


def _fingerprint(sources: dict[str, list], spec_path: Path) -> str:
    h = hashlib.sha256(f"format={FORMAT}".encode())
    h.update(spec_path.read_bytes())
    for attr in sorted(sources):
        for src in sources[attr]:
            h.update(f"{attr}|{src.path.name}|{src.kernel_sources}".encode())
            h.update(hashlib.sha256(src.path.read_bytes()).digest())
    return h.hexdigest()[:24]


def _build(system: str, backend: str, version: str, spec: SystemSpec, sources: dict[str, list]) -> dict:
    ctx = sol_context(spec)
    if not sources["gemm"]:
        raise PerfDataMissingError(f"no GEMM perf table for {system}/{backend}/{version}")
    built = {
        "gemm": F.build_gemm(sources["gemm"], ctx),
        "context_attention": F.build_context_attention(sources["context_attention"]),
        "generation_attention": F.build_generation_attention(sources["generation_attention"], ctx),
        "allreduce": F.build_custom_allreduce(sources["allreduce"]),
        "compute_scale": F.build_scale_grid(sources["compute_scale"]),
        "scale_matrix": F.build_scale_grid(sources["scale_matrix"]),
        "nccl": F.build_nccl(sources["nccl"]),
        "moe": F.build_moe(sources["moe"]),
    }
    built["context_lanes"] = tuple(sorted({k[0] for k in built["context_attention"].slices}))
    built["generation_lanes"] = tuple(sorted({k[0] for k in built["generation_attention"].slices}))
    return built


@memo()
def load_stack(system: str, backend: str | Backend, version: str | None = None) -> StackTables:
    """Tables of a stack (version: literal, slot alias or None for current), from the disk cache when warm.
    UnsafeCacheDirError when others can write the cache folder."""
    backend = Backend.parse(backend).value
    literal = resolve_version(system, backend, version)
    spec = load_system_spec(system)
    sources = _sources(system, backend, literal)
    label = f"{system}/{backend}/{literal}"
    path = _cache_path(system, backend, literal, sources)
    built = read(path, label) if path else None
    if built is None:
        built = _build(system, backend, literal, spec, sources)
        if path:
            _write_cache(path, label, built)
    return StackTables(system=system, backend=backend, version=literal, spec=spec, **built)


def _cache_path(system: str, backend: str, literal: str, sources: dict[str, list]) -> Path | None:
    """The stack's cache file, keyed by its sources; None when the cache folder cannot be created
    (that only costs the warm start)."""
    try:
        folder = table_cache_dir()
    except OSError:
        return None
    return folder / f"{system}__{backend}__{literal}__{_fingerprint(sources, systems_root() / f'{system}.yaml')}.tables"


def _write_cache(path: Path, label: str, built: dict) -> None:
    """Write (or replace a file that failed to load) atomically under a file lock, unless another
    process has meanwhile written one that loads."""
    try:
        with FileLock(str(path) + ".lock"):
            if read(path, label) is not None:
                return
            with atomic_path(path) as tmp:
                write(tmp, label, built)
    except (OSError, Uncacheable):
        return  # a read-only cache folder or an uncacheable value only costs the warm start
