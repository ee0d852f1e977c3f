"""InferenceX agg launches whose MoE or attention layout the row's columns misstate: the script ran the experts
expert-parallel over its TP group while the row records MoE TP, ran them tensor-parallel while the row records the
config's EP, or chose EP and attention DP itself while the results recorded neither."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from measurements.recipes.models import DSR1_MODELS
from measurements.schema import Layout

KIMI_K25_MODELS = frozenset({"moonshotai/Kimi-K2.5"})
MINIMAX_M25_MODELS = frozenset({"MiniMaxAI/MiniMax-M2.5"})
IX = "SemiAnalysisAI/InferenceX "


@dataclass(frozen=True)
class LaunchedMoeLayout:
    """The MoE layout one InferenceX script launched over a date window, whatever its config's ep said."""

    engine: str
    models: frozenset[str]  # the sample's model ids
    precision: str  # the sample's precision label
    systems: frozenset[str]
    first: str  # ISO date the script began launching it (inclusive)
    until: str | None  # ISO date of the change that ended it (exclusive; None: through the sample)
    expert_parallel: bool  # True: MoE TP 1, EP tp; False: MoE TP tp, EP 1, no attention DP
    citation: str


LAUNCHED_MOE_LAYOUTS: tuple[LaunchedMoeLayout, ...] = (
    LaunchedMoeLayout(
        "sglang", DSR1_MODELS, "fp4", frozenset({"b200_sxm"}), "2025-09-21", None, True,
        IX + "benchmarks/dsr1_fp4_b200_docker.sh @ 27f29acbe (PR 35, 2025-09-21): --enable-ep-moe, which sglang 0.5.2-0.5.3rc0 "
        "server_args.py maps to ep_size = tp_size (0.5.3rc0 L434-L438); @ d8fe8f73e (PR 204, 2025-11-10): --ep-size $EP_SIZE with "
        ".github/configs/nvidia-master.yaml dsr1-fp4-b200-sglang { tp: 4, ep: 4 }, { tp: 8, ep: 8 }",
    ),
    LaunchedMoeLayout(
        "vllm", MINIMAX_M25_MODELS, "fp8", frozenset({"b200_sxm"}), "2026-03-11", "2026-04-03", True,
        IX + "benchmarks/single_node/minimaxm2.5_fp8_b200.sh @ f342df18e (PR 757, 2026-03-11) L30-L34: "
        "'if [ \"$EP_SIZE\" -ge 1 ]; then EP=\" --enable-expert-parallel\"', and EP_SIZE is at least 1 (utils/matrix_logic/"
        "generate_sweep_configs.py: ep defaults to 1), so every run ran expert parallel; -gt 1 from bddbf4031 (PR 947, 2026-04-03)",
    ),
    LaunchedMoeLayout(
        "vllm", MINIMAX_M25_MODELS, "fp8", frozenset({"h200_sxm"}), "2026-03-13", "2026-05-26", True,
        IX + "benchmarks/single_node/minimaxm2.5_fp8_h200.sh @ 5e2c705d3 (PR 869, 2026-03-13): 'if [ \"$EP_SIZE\" -ge 1 ]; then "
        "EP=\" --enable-expert-parallel\"' with EP_SIZE at least 1 (generate_sweep_configs.py: ep defaults to 1); -gt 1 from "
        "8014ee637 (PR 1354, 2026-05-26)",
    ),
    LaunchedMoeLayout(
        "vllm", KIMI_K25_MODELS, "fp4", frozenset({"b200_sxm"}), "2026-03-11", None, False,
        IX + "benchmarks/single_node/kimik2.5_fp4_b200.sh @ a58dedd5a (PR 862, 2026-03-11) to 6c3acebfa (PR 1047, 2026-04-20): "
        "vllm serve --tensor-parallel-size=$TP with neither --enable-expert-parallel nor --data-parallel-size, so the config's "
        "{ tp: 4, ep: 4 } ran the experts tensor parallel (the config reads { tp: 4, ep: 1 } from f34a83b25, 2026-04-20)",
    ),
)  # fmt: skip


# InferenceX's DeepSeek-R1 TRT-LLM scripts of 2025-10-29 to 2025-11-03 chose EP and attention DP themselves (the results
# recorded neither: utils/process_result.py @ e06929c70 L19-L29 writes hw, tp, conc, ...); PR 145 (17d5e204f, 2025-11-03)
# took them from the config.
TRTLLM_DSR1_SELF_CHOSEN = ("2025-10-29", "2025-11-03")  # (first, until) measured dates
TRTLLM_DSR1_SELF_CHOSEN_CITATION = (
    IX + "benchmarks/dsr1_fp8_h200_trt_slurm.sh and dsr1_fp8_b200_trt_slurm.sh @ e06929c70 L23-L39: EP_SIZE=$TP, attention DP "
    "above CONC 64 (H200; B200 1k/8k and 8k/1k) or 32 (H200 8k/1k; B200 1k/1k); dsr1_fp4_b200_trt_slurm.sh @ e06929c70 L23-L74: "
    "EP_SIZE=$TP above CONC 32 (TP 4), 8 (TP 8 1k/1k), 16 (TP 8 1k/8k), 32 (8k/1k), attention DP from CONC 256 (8k/1k: with EP)"
)


def _trtllm_dsr1_self_chosen(precision: str | None, system: str, tp: int, isl: int, osl: int, c: int) -> tuple[bool, bool] | None:
    """(expert parallel, attention DP) a DeepSeek-R1 TRT-LLM script of TRTLLM_DSR1_SELF_CHOSEN chose for a run of tp GPUs."""
    lengths = (isl, osl)
    if precision == "fp8" and system in ("h200_sxm", "b200_sxm"):
        above = {("h200_sxm", (8192, 1024)): 32, ("b200_sxm", (1024, 1024)): 32}.get((system, lengths), 64)
        return True, c > above
    if precision == "fp4" and system == "b200_sxm" and tp in (4, 8):
        if lengths == (8192, 1024):
            return c > 32, c > 32
        above = {(4, (1024, 1024)): 32, (4, (1024, 8192)): 32, (8, (1024, 1024)): 8, (8, (1024, 8192)): 16}.get((tp, lengths))
        return None if above is None else (c > above, c >= 256)
    return None


def launched_moe_layout(engine: str, model: str, precision: str | None, system: str, measured_date: str | None, layout: Layout,
                        isl: int, osl: int, concurrency: int | None) -> tuple[Layout, str] | None:  # fmt: skip
    """(layout, citation) an InferenceX agg launch ran where the row's columns state another MoE or attention layout
    (LAUNCHED_MOE_LAYOUTS, TRTLLM_DSR1_SELF_CHOSEN); None when no rule covers the run or the columns already agree. The
    run's GPUs (tp x attention DP) are kept; under attention DP the requests in flight spread over the ranks."""
    gpus = (layout.tp or 0) * (layout.attention_dp or 1)
    if gpus < 2 or measured_date is None:
        return None
    date, launched, citation = measured_date[:10], None, ""
    for rule in LAUNCHED_MOE_LAYOUTS:
        covered = rule.engine == engine and model in rule.models and precision == rule.precision and system in rule.systems
        if covered and rule.first <= date and (rule.until is None or date < rule.until):
            launched, citation = (False, rule.expert_parallel), rule.citation
            break
    first, until = TRTLLM_DSR1_SELF_CHOSEN
    if launched is None and engine == "trtllm" and model in DSR1_MODELS and first <= date < until and concurrency:
        chosen = _trtllm_dsr1_self_chosen(precision, system, gpus, isl, osl, concurrency)
        launched, citation = (None, "") if chosen is None else ((chosen[1], chosen[0]), TRTLLM_DSR1_SELF_CHOSEN_CITATION)
    if launched is None:
        return None
    dp_attention, expert_parallel = launched
    if dp_attention and (concurrency is None or concurrency % gpus):
        return None
    dp = gpus if dp_attention else 1
    run = dataclasses.replace(layout, tp=gpus // dp, attention_dp=dp, moe_tp=1 if expert_parallel else gpus, moe_ep=gpus if expert_parallel else 1,
                              batch_size=concurrency // dp if dp_attention else layout.batch_size)  # fmt: skip
    same = (run.tp, run.attention_dp or 1, run.moe_tp, run.moe_ep) == (layout.tp, layout.attention_dp or 1, layout.moe_tp, layout.moe_ep)
    return None if same else (run, citation)
