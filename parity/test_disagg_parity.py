"""Legacy single-point disagg parity: our legacy disagg row equals aiconfigurator 0.12.0's own
``DisaggInferenceSession.run_disagg`` row (the estimate CLI's model configs, 1.1 / 1.8 / 1.08
corrections, 0.9 / 0.92 rate matching, 3-decimal rounding before combining) at rel 1e-9, the OOM
verdict included, over models x systems x backends x workloads x worker shapes."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import pytest

from estimator.deployment import Deployment
from estimator.disagg import DISAGG_COLUMNS, DisaggPoint, run_disagg
from estimator.disagg.combine import ADDED_COLUMNS
from estimator.errors import EstimatorError
from estimator.perf.versions import resolve_version
from estimator.pricing import reference
from estimator.pricing.reference import _quiet_reference_logs, reference_database
from parity.agg_cases import MODELS
from parity.compare import compare_records, explain, failures
from parity.stacks import BACKENDS, SYSTEMS

REL_TOL = 1e-9
WORKLOADS = ((32768, 512), (4096, 64), (2048, 256), (8192, 1024), (1000, 2))  # (isl, osl)
SHAPES = ((1, 2, 16, 1), (2, 1, 64, 3), (4, 3, 8, 2), (1, 1, 256, 1), (8, 5, 1, 4))  # (p_bs, p_workers, d_bs, d_workers)
TPS = ((2, 2), (1, 4), (4, 1), (8, 8), (2, 1))  # (prefill tp, decode tp)
NEXTNS = (0, 0, 1, 0, 2, 0, 3)


@dataclasses.dataclass(frozen=True)
class DisaggCase:
    prefill: Deployment
    decode: Deployment
    point: DisaggPoint

    @property
    def id(self) -> str:
        p, d, x = self.prefill, self.decode, self.point
        memory = "".join(f"-{k}{v:g}" for k, v in self.memory_settings().items())
        return (
            f"{p.model.split('/')[1]}-{p.system}-{p.backend.value}-n{p.nextn}-p{x.prefill_workers}xtp{p.tp}b{x.prefill_batch_size}"
            f"-d{x.decode_workers}xtp{d.tp}b{x.decode_batch_size}-{x.isl}x{x.osl}-p{x.prefix}{memory}"
        )

    def memory_settings(self) -> dict:
        """The point's KV budget fractions and slot lengths that are set, under the reference's keyword names."""
        names = [f"{r}{k}" for k in ("free_gpu_memory_fraction", "max_seq_len") for r in ("", "prefill_", "decode_")]
        return {n: getattr(self.point, n) for n in names if getattr(self.point, n) is not None}


def _case(model: str, system: str, backend: str, i: int) -> DisaggCase:
    """The i-th point of a stack: parameters cycle at co-prime periods."""
    isl, osl = WORKLOADS[i % len(WORKLOADS)]
    p_bs, p_n, d_bs, d_n = SHAPES[(i + 1) % len(SHAPES)]
    p_tp, d_tp = TPS[(i + MODELS.index(model)) % len(TPS)]
    nextn = NEXTNS[i % len(NEXTNS)]
    prefix = (0, isl // 4, 0, isl // 2)[(i + 3) % 4]
    base = Deployment(model, system, backend, nextn=nextn)
    point = DisaggPoint(isl, osl, p_bs, p_n, d_bs, d_n, prefix, nextn_accepted=0.6 * nextn)
    return DisaggCase(dataclasses.replace(base, tp=p_tp), dataclasses.replace(base, tp=d_tp), point)


def full_cases(points_per_stack: int = 2) -> list[DisaggCase]:
    stacks = itertools.product(MODELS, SYSTEMS, BACKENDS)
    return [_case(m, s, b, i) for k, (m, s, b) in enumerate(stacks) for i in range(k, k + points_per_stack)]


def ci_cases() -> list[DisaggCase]:
    """Every model, system and backend at least once: the verified example's stack first."""
    stacks = [
        ("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang"), ("Qwen/Qwen3-32B-FP8", "h200_sxm", "vllm"),
        ("Qwen/Qwen3-32B-FP8", "h200_sxm", "trtllm"), ("meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm"),
        ("meta-llama/Meta-Llama-3.1-70B", "b200_sxm", "trtllm"), ("Qwen/Qwen3-32B", "h100_sxm", "sglang"),
    ]  # fmt: skip
    return [_case(m, s, b, i) for k, (m, s, b) in enumerate(stacks) for i in range(2 * k, 2 * k + 2)]


VERIFIED = DisaggCase(
    Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2),
    Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", "sglang", tp=2),
    DisaggPoint(32768, 512, 1, 2, 16, 1),
)  # legacy-semantics.md 3.2
_QWEN = {b: Deployment("Qwen/Qwen3-32B-FP8", "h200_sxm", b, tp=2) for b in ("sglang", "trtllm", "vllm")}
# per-role memory settings: KV slots per role (both fit, then the decode slot overflows), per-role KV budgets
MEMORY_CASES = [
    DisaggCase(_QWEN["sglang"], _QWEN["sglang"], DisaggPoint(4096, 512, 4, 1, 64, 1, max_seq_len=9000, prefill_max_seq_len=20000)),
    DisaggCase(_QWEN["trtllm"], _QWEN["trtllm"], DisaggPoint(4096, 512, 4, 1, 64, 1, decode_max_seq_len=20000)),
    DisaggCase(_QWEN["vllm"], _QWEN["vllm"], DisaggPoint(4096, 512, 4, 1, 64, 1, free_gpu_memory_fraction=0.9,
                                                          decode_free_gpu_memory_fraction=0.2)),
    DisaggCase(_QWEN["sglang"], _QWEN["sglang"], DisaggPoint(2048, 256, 2, 1, 32, 2, prefill_free_gpu_memory_fraction=0.05)),
]  # fmt: skip
# expert parallelism wider than a node (gb200: 4 GPUs a node): each role's all-to-all resolved, the WideEP op graph priced
_WIDE_EP = Deployment("deepseek-ai/DeepSeek-V3", "gb200", "sglang", tp=1, attention_dp=16, moe_tp=1, moe_ep=16)
WIDE_EP_CASE = DisaggCase(_WIDE_EP, dataclasses.replace(_WIDE_EP, attention_dp=32, moe_ep=32), DisaggPoint(2048, 256, 2, 1, 64, 1))
CI_CASES = [VERIFIED, *ci_cases(), *MEMORY_CASES]
FULL_CASES = [c for c in full_cases() if c.id not in {k.id for k in CI_CASES}]


@functools.lru_cache(maxsize=64)
def reference_config(deployment: Deployment, context_role: bool):
    """The estimate CLI's ModelConfig for one disagg role (api._run_disagg_estimate)."""
    _quiet_reference_logs()
    from aiconfigurator.cli.api import _apply_nextn, _build_model_config, _resolve_moe_parallelism
    from aiconfigurator.sdk.models import check_is_moe, resolve_context_fmha_by_data, resolve_nvfp4_for_system
    from aiconfigurator.sdk.moe_comm_resolver import resolve_model_config_moe_comm

    d, q = deployment, deployment.quant
    moe_tp, moe_ep = _resolve_moe_parallelism(d.tp, d.attention_dp, d.moe_tp, d.moe_ep, model_path=d.model)
    config = _build_model_config(d.tp, d.pp, d.attention_dp, moe_tp, moe_ep, q.gemm, q.kvcache, q.fmha, q.moe, q.comm,
                                 forward_model=None, enable_encoder_dp=True, attention_backend=None)  # fmt: skip
    _apply_nextn(config, d.nextn)
    if check_is_moe(d.model):  # each role's cross-node MoE all-to-all (L1959-1978)
        resolve_model_config_moe_comm(config, model_path=d.model, backend_name=d.backend.value, database=_database(d),
                                      required_phases=("context",) if context_role else ("generation",),
                                      fmha_quant_mode_explicit=q.fmha is not None, kvcache_quant_mode_explicit=q.kvcache is not None)  # fmt: skip
    if context_role and config.moe_comm_backend is None:  # a resolved large-EP tuple keeps its attention labels
        resolve_context_fmha_by_data(config, d.model, _database(d), d.backend.value, is_context_role=True)
    resolve_nvfp4_for_system(config, d.system, d.model, backend_name=d.backend.value)
    return config


def _database(deployment: Deployment):
    return reference_database(deployment.system, deployment.backend.value, resolve_version(deployment.system, deployment.backend.value, deployment.version))


def reference_disagg_row(case: DisaggCase) -> dict:
    """aiconfigurator's run_disagg row as the estimate CLI computes it, plus its OOM verdict."""
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.config import RuntimeConfig
    from aiconfigurator.sdk.inference_session import DisaggInferenceSession
    from aiconfigurator.sdk.speculative import SpeculativeDecodingProfile

    p, d, x = case.prefill, case.decode, case.point
    session = DisaggInferenceSession(_database(p), get_backend(p.backend.value), _database(d), get_backend(d.backend.value))
    session.set_latency_correction_scales(1.1, 1.08)
    summary = session.run_disagg(
        model_path=p.model, runtime_config=RuntimeConfig(isl=x.isl, osl=x.osl, prefix=x.prefix),
        prefill_model_config=reference_config(p, True), prefill_batch_size=x.prefill_batch_size,
        prefill_num_worker=x.prefill_workers, decode_model_config=reference_config(d, False),
        decode_batch_size=x.decode_batch_size, decode_num_worker=x.decode_workers,
        speculative_profile=SpeculativeDecodingProfile.from_inputs(p.nextn, x.nextn_accepted if p.nextn else None),
        **case.memory_settings(),
    )  # fmt: skip
    row = summary.get_result_dict()
    return {**{c: row[c] for c in DISAGG_COLUMNS if c in row}, "oom": bool(summary.check_oom())}


def _ours(case: DisaggCase, pricer: str):
    try:
        result = run_disagg(case.prefill, case.decode, case.point, "legacy", pricer)
    except EstimatorError as exc:
        return ValueError(str(exc))
    return {**{c: v for c, v in result.row.items() if c not in ADDED_COLUMNS}, "oom": result.oom}


def _theirs(case: DisaggCase):
    try:
        return reference_disagg_row(case)
    except ValueError as exc:
        return ValueError(str(exc))


def _diffs(case: DisaggCase, pricer: str = "native", perturb: dict | None = None):
    ours = _ours(case, pricer)
    if perturb and isinstance(ours, dict):
        ours = {**ours, **{k: ours[k] * f for k, f in perturb.items()}}
    return compare_records(case.id, _theirs(case), ours, REL_TOL)


def _assert_parity(case: DisaggCase, pricer: str = "native") -> None:
    diffs = _diffs(case, pricer)
    assert not failures(diffs), explain(diffs)


@pytest.mark.reference
@pytest.mark.parametrize("case", CI_CASES, ids=lambda c: c.id)
def test_legacy_disagg_row_equals_reference(case):
    _assert_parity(case)


@pytest.mark.reference
def test_legacy_disagg_row_equals_reference_with_reference_pricer():
    _assert_parity(CI_CASES[1], "reference")


@pytest.mark.reference
def test_legacy_disagg_row_equals_reference_on_expert_parallelism_wider_than_a_node():
    _assert_parity(WIDE_EP_CASE, "reference")


@pytest.mark.reference
def test_wide_ep_parity_fails_on_the_fused_moe_graph(monkeypatch, fresh_caches):
    monkeypatch.setattr(reference, "with_large_ep_moe", lambda config, *_: config)  # the fused graph, as before the resolution
    failing = {d.metric for d in failures(_diffs(WIDE_EP_CASE, "reference"))}
    assert {"ttft", "tpot"} <= failing


@pytest.mark.full
@pytest.mark.reference
@pytest.mark.parametrize("case", FULL_CASES, ids=lambda c: c.id)
def test_legacy_disagg_row_equals_reference_full(case):
    _assert_parity(case)


@pytest.mark.reference
@pytest.mark.parametrize("column", ("ttft", "tokens/s/gpu", "(d)memory", "(p)seq/s/worker"))
def test_disagg_parity_fails_on_a_perturbed_value(column):
    diffs = _diffs(VERIFIED, perturb={column: 1 + 1e-7})
    assert [d.metric for d in failures(diffs)] == [column]
