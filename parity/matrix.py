"""The declarative shape matrix every parity, golden and invariant test is parametrized from.

hardware x model x backend x version x parallelism x workload. The full tier is the whole product;
the CI tier is a fixed, seeded, representative subset (every system, backend, model, tp and
workload appears at least once). Test ids read like
`h200_sxm-sglang-Qwen3-32B-FP8-tp2-isl4096-osl512-p1024-b16-Cdef-n0`.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

SYSTEMS = ("h200_sxm", "h100_sxm", "b200_sxm")
BACKENDS = ("trtllm", "vllm", "sglang")
MODELS = ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B", "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B")
TPS = (1, 2, 4, 8)
CI_SEED = 20261129
CI_SIZE = 36


@dataclass(frozen=True)
class Workload:
    isl: int  # prompt tokens, prefix included
    osl: int  # output tokens
    prefix: int  # cached prefix tokens, 0 <= prefix < isl
    batch: int  # concurrent requests per rank
    ctx_tokens: int | None  # per-step prefill budget; None = the semantics' default
    nextn: int = 0  # MTP draft depth
    nextn_accepted: float = 0.0  # accepted drafts per step, <= nextn

    @property
    def id(self) -> str:
        budget = "def" if self.ctx_tokens is None else str(self.ctx_tokens)
        spec = f"-n{self.nextn}" + (f"a{self.nextn_accepted:g}" if self.nextn else "")
        return f"isl{self.isl}-osl{self.osl}-p{self.prefix}-b{self.batch}-C{budget}{spec}"


WORKLOADS = (
    Workload(1024, 128, 0, 1, None),  # solo request
    Workload(4096, 512, 0, 16, None),  # typical chat point
    Workload(4096, 512, 1024, 16, None),  # prefix-cached
    Workload(8192, 1024, 0, 32, 2048),  # chunked prefill
    Workload(32768, 512, 0, 16, 16384),  # long context, verified reference point
    Workload(2048, 256, 512, 64, 65536),  # over-batch explicit budget
    Workload(4096, 1024, 0, 256, None),  # large batch
    Workload(8192, 1024, 0, 32, 8192, 2, 1.4),  # MTP
)


@dataclass(frozen=True)
class Shape:
    system: str
    backend: str
    model: str  # HF id of a bundled config
    tp: int
    workload: Workload
    version: str | None = None  # None = the backend's current slot
    pp: int = 1

    @property
    def family(self) -> str:
        """Golden-file family of the model: qwen3 | llama3."""
        return "qwen3" if "Qwen3" in self.model else "llama3"

    @property
    def id(self) -> str:
        model = self.model.split("/")[-1]
        version = f"-{self.version}" if self.version else ""
        return f"{self.system}-{self.backend}{version}-{model}-tp{self.tp}-{self.workload.id}"


def full_matrix() -> tuple[Shape, ...]:
    return tuple(Shape(system, backend, model, tp, w) for system, backend, model, tp, w in itertools.product(SYSTEMS, BACKENDS, MODELS, TPS, WORKLOADS))


def ci_matrix() -> tuple[Shape, ...]:
    """A seeded subset that still covers every system, backend, model, tp and workload."""
    full = full_matrix()
    rng = random.Random(CI_SEED)
    chosen: dict[str, Shape] = {}
    for w_index, w in enumerate(WORKLOADS):
        # round-robin the other axes so each value appears at least once
        system = SYSTEMS[w_index % len(SYSTEMS)]
        backend = BACKENDS[(w_index // len(SYSTEMS) + w_index) % len(BACKENDS)]
        model = MODELS[w_index % len(MODELS)]
        tp = TPS[(w_index + 1) % len(TPS)]
        shape = Shape(system, backend, model, tp, w)
        chosen[shape.id] = shape
    for shape in rng.sample(full, len(full)):
        if len(chosen) >= CI_SIZE:
            break
        chosen.setdefault(shape.id, shape)
    return tuple(sorted(chosen.values(), key=lambda s: s.id))


def shape_id(shape: Shape) -> str:
    return shape.id
