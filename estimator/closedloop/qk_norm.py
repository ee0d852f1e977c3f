"""Cross-head q/k RMSNorm under tensor parallelism: the all-reduces MiniMax-M2's attention runs in every layer.

MiniMax-M2 normalizes q and k over all attention heads at once (config ``qk_norm_type`` "per_layer"),
so under attention tensor parallelism every rank all-reduces its per-token sums of squares across
the TP group before it applies the norm, in every decoder layer of every forward pass:

- vLLM: 2 through 0.13 (``q_norm``, ``k_norm``: ``MiniMaxText01RMSNormTP``), 1 from 0.14.0 (``forward_qk``,
  PR 31493). Read in the PyPI wheels 0.11.2 and 0.13.0, then 0.14.0 and 0.15.1-0.19.0
  (``vllm/model_executor/models/minimax_m2.py``, ``vllm/model_executor/layers/mamba/linear_attn.py``).
- SGLang: 2 through 0.5.7 (``MiniMaxM2RMSNormTP`` per tensor), 1 from 0.5.8 (``forward_qk``, PR 14416). Read in
  the wheels 0.5.6 and 0.5.7, then 0.5.8.post1, 0.5.9 and 0.5.10.post1 (``sglang/srt/models/minimax_m2.py``).
- TensorRT-LLM: not replayed (its MiniMax-M2 code was not read).

vLLM's opt-in ``fuse_minimax_qk_norm`` compile pass (2026-04, after 0.19.0) folds the norm into one
kernel; no InferenceX launch of the sample's runs sets it. AIConfigurator 0.12.0 prices MiniMax-M2
with its generic MoE graph (``sdk/models/moe.py``), which has no such op, so the closed-loop replay
adds it (EngineSettings.qk_norm_allreduces gives the engine's count) at the system's measured
custom all-reduce latency for the message: 2 fp32 per token when q and k reduce together, 1 fp32
per token each otherwise. A message below the smallest one the table measured is priced at that
smallest one: the table is flat there (B200 vLLM, 2 GPUs: 6.6 us from 128 to 32,768 elements), the
all-reduce's launch and synchronization floor, which a smaller message does not undercut.
"""

from __future__ import annotations

import numpy as np

from estimator.caching import memo
from estimator.deployment import Deployment
from estimator.models import model_architecture
from estimator.models.ops import CustomAllReduce
from estimator.perf.stack import load_stack
from estimator.perf.versions import resolve_version
from estimator.pricing.native import NativePricer
from estimator.scheduler.facts import deployment_facts

CROSS_HEAD_QK_NORM_ARCHITECTURES = frozenset({"MiniMaxM2ForCausalLM"})  # q/k RMSNorm over every attention head
SUM_SQUARES_BYTES = 2 * 4  # per token: q's and k's sums of squares, fp32
HALF_BYTES = 2  # the all-reduce table's message unit (elements of a half-precision tensor)


def cross_head_qk_norm(deployment: Deployment) -> bool:
    """Whether the deployment's attention all-reduces a q/k norm across ranks: a MiniMax-M2 model under attention TP > 1."""
    return deployment.tp > 1 and model_architecture(deployment.model) in CROSS_HEAD_QK_NORM_ARCHITECTURES


def qk_norm_ms(deployment: Deployment, allreduces: int, tokens: np.ndarray) -> np.ndarray:
    """The q/k norm all-reduces of one forward pass over `tokens` tokens (float64 array, each >= 1), ms:
    decoder layers x allreduces x one all-reduce of the pass's sums of squares split over them;
    zeros where the deployment runs none (cross_head_qk_norm) or allreduces is 0."""
    tokens = np.asarray(tokens, dtype=np.float64)
    if allreduces < 1 or not cross_head_qk_norm(deployment):
        return np.zeros(len(tokens))
    pricer, smallest = _allreduce(deployment, deployment_facts(deployment).num_layers * allreduces)
    message = np.maximum(tokens * (SUM_SQUARES_BYTES / allreduces / HALF_BYTES), smallest)  # half elements
    shapes = np.column_stack((message, np.ones(len(message))))
    return pricer.generation_many(shapes)[:, 0]


@memo()
def _allreduce(deployment: Deployment, scale: float) -> tuple[NativePricer, float]:
    """A pricer of `scale` all-reduces of a message of x half elements at shape (x, 1), and the smallest
    message the system's custom all-reduce table measured for the deployment's TP group."""
    backend = deployment.backend.value
    tables = load_stack(deployment.system, backend, resolve_version(deployment.system, backend, deployment.version))
    ops = [CustomAllReduce("qk_norm_allreduce", scale, hidden_size=1, tp_size=deployment.tp)]
    pricer = NativePricer(tables, ops, ops)
    c_off, sizes, _ = tables.allreduce.arrays
    curve = tables.allreduce.curves.get(min(deployment.tp, tables.spec.num_gpus_per_node), -1)
    return pricer, float(sizes[c_off[curve]]) if curve >= 0 else 1.0
