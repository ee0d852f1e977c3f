"""The parallel layout an agg run ran with, where its recorded columns contradict it.

Some sample rows record a GPU count the run cannot have had: InferenceX ids name the run's GPUs N
and MoE EP M (``..._tp8_ep8_<n>``) while the columns give N x N GPUs (tp 64 for an 8-GPU
``tp8_ep8`` run), and some ids name nothing but their columns give N x N GPUs beyond an SXM node.
And some InferenceX database rows record a config { tp: N, ep: M } as more GPUs (tp N x M, or attention DP M
with MoE EP N x M) where the script launched N GPUs with MoE EP M (`CONFIG_RUNS`, by the row's config id).
`run_layout` reads such a row as the N-GPU run (see measurements/README.md, "Layout of the run").
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.perf import load_system_spec
from measurements.schema import Layout

ID_LAYOUT = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+|none)(?:_0)?_")  # InferenceX ids: ..._tp8_ep8_<n>, ..._tp8_0_ep8_0_<n>
CONFIG_ID = re.compile(r"_cfg(\d+)$")  # InferenceX database rows: ..._c<conc>_cfg<config id>


@dataclass(frozen=True)
class NamedRun:
    """The GPUs and MoE EP a run's id or its system names."""

    gpus: int  # GPUs of the run (>= 1)
    ep: int | None  # MoE expert-parallel size (>= 1, divides gpus); None: the id names no EP (dense)
    source: str  # what names them, for the row's note
    attention_dp: bool | None = None  # attention DP over the GPUs (True) or TP (False); None: as the columns say (tp 1, DP > 1)


IX = "SemiAnalysisAI/InferenceX "
_MINIMAX_TP_EP = (
    "minimaxm2.5-{fp4,fp8}-{b200,b300}-vllm { tp: 2, ep: 2 } (.github/configs/nvidia-master.yaml @ bddbf4031, "
    "77b259a5e, 8c3eb5b86), launched TP 2 with --enable-expert-parallel"
)
_MINIMAX_DP_EP = (
    "minimaxm2.5-fp4-{b200,b300}-vllm { tp: 2, ep: 2, dp-attn: true } (nvidia-master.yaml @ 77b259a5e, 8c3eb5b86), "
    "launched --tensor-parallel-size=1 --data-parallel-size=$TP --enable-expert-parallel"
)
# InferenceX database config ids -> the run their config launched: the database writes { tp: 2, ep: 2 } as tp 2, attention
# DP 2, MoE EP 4 (vLLM) or tp 4, MoE TP 2 x EP 2 (SGLang); its csv exports name the same measurements tp2_ep2 (7 twins).
CONFIG_RUNS: Mapping[int, NamedRun] = MappingProxyType({
    736: NamedRun(2, 2, IX + "config 736: qwen3.5-fp4-b300-sglang { tp: 2, ep: 2 } (nvidia-master.yaml @ e8924a6a4), launched "
                        "--tensor-parallel-size=$TP --ep-size $EP_SIZE (benchmarks/single_node/qwen3.5_fp4_b300.sh @ 8acbd08b7 L66)", False),
    **{cid: NamedRun(2, 2, f"{IX}config {cid}: {_MINIMAX_TP_EP} (minimaxm2.5_fp4_b200.sh @ 49db20088 L28-34, minimaxm2.5_fp8_b200.sh "
                           "@ bddbf4031 L29-33, minimaxm2.5_fp4_b300.sh @ dd9c285b3 L32-38; the FP8 scripts have no dp-attn branch, "
                           "minimaxm2.5_fp8_b300.sh @ 77b259a5e L33-37)", False) for cid in (690, 706, 726, 735, 827)},
    **{cid: NamedRun(2, 2, f"{IX}config {cid}: {_MINIMAX_DP_EP} (minimaxm2.5_fp4_b200.sh @ 8c3eb5b86 L30-36, minimaxm2.5_fp4_b300.sh "
                           "@ 77b259a5e L34-40)", True) for cid in (707, 727)},
})  # fmt: skip


def run_layout(row_id: str, system: str, layout: Layout, concurrency: int | None) -> tuple[Layout, str] | None:
    """(layout, note) for an agg run whose columns give another GPU count (tp x attention DP, pp 1)
    than its id names (or than the N x N node bound gives, for an id naming none); None when they
    agree, nothing names the run, or the run's DP ranks cannot share its requests evenly.

    The run's layout: attention DP over the N GPUs when the columns have tp 1 and attention DP > 1,
    else TP N; MoE EP M and MoE TP N/M (dense runs keep the recorded MoE cells); the requests in
    flight (the client's concurrency, else batch per rank x the columns' DP) spread over the DP ranks."""
    if layout.tp is None or (layout.pp or 1) != 1:
        return None
    recorded_dp = layout.attention_dp or 1
    recorded_gpus = layout.tp * recorded_dp
    match, config = ID_LAYOUT.search(row_id), CONFIG_ID.search(row_id)
    named = id_named_run(match) if match else CONFIG_RUNS.get(int(config.group(1))) if config else None
    named = named or (None if match else node_bound_run(system, recorded_gpus))
    if named is None or named.gpus == recorded_gpus:
        return None
    as_dp = named.attention_dp if named.attention_dp is not None else layout.tp == 1 and recorded_dp > 1
    dp = named.gpus if as_dp else 1
    in_flight = concurrency or (layout.batch_size * recorded_dp if layout.batch_size is not None else None)
    if in_flight is not None and in_flight % dp:
        return None
    batch = in_flight // dp if in_flight is not None else None
    moe = {} if named.ep is None else {"moe_tp": named.gpus // named.ep, "moe_ep": named.ep}
    run = dataclasses.replace(layout, batch_size=batch, tp=named.gpus // dp, attention_dp=dp, **moe)
    moe_note = "" if named.ep is None else f", MoE tp {run.moe_tp} ep {run.moe_ep}"
    recorded_moe = "" if named.ep is None else f", MoE tp {layout.moe_tp} ep {layout.moe_ep}"
    return run, (
        f"layout from {named.source}: tp {run.tp}, attention DP {dp}{moe_note}, batch {batch}; the columns say tp {layout.tp}, "
        f"attention DP {recorded_dp}{recorded_moe}, batch {layout.batch_size} ({recorded_gpus} GPUs)"
    )


def id_named_run(match: re.Match) -> NamedRun | None:
    """The run an ID_LAYOUT match names; None when its sizes are not a layout (0, or EP not dividing the GPUs)."""
    gpus, ep = int(match.group(1)), None if match.group(2) == "none" else int(match.group(2))
    if gpus < 1 or (ep is not None and (ep < 1 or gpus % ep)):
        return None
    return NamedRun(gpus, ep, f"the row id ({match.group(0).strip('_')})")


def node_bound_run(system: str, recorded_gpus: int) -> NamedRun | None:
    """N GPUs with MoE EP N when recorded_gpus = N x N exceeds the node of a system without a rack tier."""
    spec = load_system_spec(system)
    n = math.isqrt(recorded_gpus)
    if spec.num_gpus_per_rack is not None or recorded_gpus <= spec.num_gpus_per_node or n * n != recorded_gpus:
        return None
    return NamedRun(n, n, f"the columns' {recorded_gpus} = {n} x {n} GPUs on {spec.num_gpus_per_node}-GPU {system} nodes")
