"""All perf tables of one (system, backend, version) stack, built once and cached on disk.

The first load reads parquet and builds the arrays; the arrays are then saved under the cache
directory keyed by a hash of every source file's bytes, so a warm load is one np.load.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from estimator.caching import memo
from estimator.deployment import Backend
from estimator.errors import PerfDataMissingError
from estimator.kernels.packing import pack
from estimator.perf import families as F
from estimator.perf.paths import systems_root
from estimator.perf.sources import nccl_source, oneccl_source, table_sources
from estimator.perf.system_spec import QUANT_PROFILES, SystemSpec, load_system_spec
from estimator.perf.tables import Curves, Grid2, Grid3
from estimator.perf.versions import resolve_version

CACHE_FORMAT = 3  # bump when the built layout changes

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


def cache_dir() -> Path:
    """Where built tables live: $ESTIMATOR_CACHE_DIR, else ~/.cache/llm-serving-estimator."""
    root = os.environ.get("ESTIMATOR_CACHE_DIR") or Path.home() / ".cache" / "llm-serving-estimator"
    return Path(root) / "tables"


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
    h = hashlib.sha256(f"format={CACHE_FORMAT}".encode())
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
    """Tables of a stack (version: literal, slot alias or None for current), from the disk cache when warm."""
    backend = Backend.parse(backend).value
    literal = resolve_version(system, backend, version)
    spec = load_system_spec(system)
    sources = _sources(system, backend, literal)
    key = _fingerprint(sources, systems_root() / f"{system}.yaml")
    path = cache_dir() / f"{system}__{backend}__{literal}__{key}.pkl"
    built = _read_cache(path)
    if built is None:
        built = _build(system, backend, literal, spec, sources)
        _write_cache(path, built)
    return StackTables(system=system, backend=backend, version=literal, spec=spec, **built)


def _read_cache(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError):
        return None


def _write_cache(path: Path, built: dict) -> None:
    """Atomic write under a file lock, so concurrent workers never read a partial file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if path.exists():
                return
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "wb") as f:
                pickle.dump(built, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
    except OSError:
        return  # a read-only cache dir only costs the warm start
