"""InferenceX agg launches whose MoE layout the row's columns misstate: the script ran the experts expert-parallel over
its TP group while the row records MoE TP, or ran them tensor-parallel while the row records the config's EP."""

from __future__ import annotations

from dataclasses import dataclass

from measurements.recipes.models import DSR1_MODELS

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


def launched_moe_layout(engine: str, model: str, precision: str | None, system: str, measured_date: str | None, tp: int | None,
                        attention_dp: int | None, moe_tp: int | None, moe_ep: int | None) -> tuple[int, int, int, str] | None:  # fmt: skip
    """(attention DP, MoE TP, MoE EP, citation) an InferenceX agg launch ran where the row's columns state another MoE
    layout (LAUNCHED_MOE_LAYOUTS); None when no rule covers the run or the columns already agree."""
    if tp is None or tp < 2 or measured_date is None:
        return None
    date = measured_date[:10]
    for rule in LAUNCHED_MOE_LAYOUTS:
        if rule.engine != engine or model not in rule.models or precision != rule.precision or system not in rule.systems:
            continue
        if date < rule.first or (rule.until is not None and date >= rule.until):
            continue
        launched = (1, 1, tp) if rule.expert_parallel else (1, tp, 1)
        return None if (attention_dp or 1, moe_tp, moe_ep) == launched else (*launched, rule.citation)
    return None
