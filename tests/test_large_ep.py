"""Expert parallelism wider than a node: the MoE all-to-all a worker's role resolves (a disaggregated
prefill worker its context phase, a decode worker its generation phase; agg none, as the estimate
CLI), the next covered width where the tables skip the layout's own, the fused graph for the other
phase and where the resolved one has no data, and TensorRT-LLM's NVLink all-to-all within a rack.
Parity with the CLI's disagg estimate: parity/test_disagg_parity.py."""

from __future__ import annotations

import dataclasses

import pytest

from estimator.closedloop.runs import disagg_run
from estimator.deployment import Deployment, Role
from estimator.disagg import DisaggPoint
from estimator.errors import InvalidInputError
from estimator.perf.versions import resolve_version
from estimator.pricing import large_ep_note, make_pricer, reference
from estimator.scheduler.facts import deployment_facts

pytestmark = pytest.mark.reference


def dep(ep: int, system: str = "gb200", backend: str = "sglang", role: Role = Role.AGG) -> Deployment:
    """DeepSeek-V3 with attention DP = EP = ep (tp 1): gb200/gb300 hold 4 GPUs a node, b200 8."""
    return Deployment("deepseek-ai/DeepSeek-V3", system, backend, tp=1, attention_dp=ep, moe_tp=1, moe_ep=ep, role=role)


def context_ms(deployment: Deployment, tokens: int = 1024) -> dict[str, float]:
    return {p.name: p.latency_ms for p in make_pricer("reference", deployment).context_ops(1, tokens)}


def takes_large_ep(deployment: Deployment) -> bool:
    return reference.takes_large_ep(deployment, resolve_version(deployment.system, deployment.backend.value, deployment.version))


def test_a_prefill_worker_wider_than_a_node_prices_the_wide_ep_graph_and_an_agg_worker_the_fused_one():
    wide, fused = make_pricer("reference", dep(16, role=Role.PREFILL)), make_pricer("reference", dep(16))
    assert "context_moe_dispatch" in wide.context_names and "context_moe_dispatch" not in fused.context_names
    assert takes_large_ep(dep(16, role=Role.PREFILL)) and not takes_large_ep(dep(16))


def test_a_decode_worker_resolves_its_generation_phase_only():
    decode = make_pricer("reference", dep(32, role=Role.DECODE))
    assert decode.large_ep_phases == ("generation",) and "generation_moe_dispatch" in decode.generation_names
    assert "context_moe_dispatch" not in decode.context_names  # the context phase keeps the fused graph


def test_a_worker_within_one_node_shares_the_agg_pricer():
    assert make_pricer("reference", dep(8, "b200_sxm", role=Role.PREFILL)) is make_pricer("reference", dep(8, "b200_sxm"))


def test_a_width_the_compute_table_skips_is_priced_at_the_next_covered_width_with_the_same_tokens_per_rank():
    """SGLang's gb200 wide-EP context MoE table holds EP 2, 4, 16, ... and no 8, so the CLI refuses a
    DEP8 prefill worker; it is priced as the DEP16 one at the same tokens per rank, not on the fused graph."""
    from aiconfigurator.sdk.moe_comm_resolver import resolve_model_config_moe_comm
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError

    dep8 = dep(8, role=Role.PREFILL)
    with pytest.raises(PerfDataNotAvailableError, match="moe_ep=8"):
        resolve_model_config_moe_comm(reference._base_config(dep8), model_path=dep8.model, backend_name="sglang", required_phases=("context",),
                                      database=reference.reference_database("gb200", "sglang", "0.5.14"))  # fmt: skip
    assert context_ms(dep8) == context_ms(dep(16, role=Role.PREFILL))
    assert sum(context_ms(dep8).values()) < sum(context_ms(dep(8)).values())  # the fused DEP8 graph: 193 vs 142 ms
    ours, own = deployment_facts(dep8), deployment_facts(dep(8))  # its memory is its own: 8 ranks, the fused config
    assert dataclasses.replace(ours, kv_bytes_per_sequence=None) == dataclasses.replace(own, kv_bytes_per_sequence=None)
    assert ours.kv_bytes_per_sequence(4096) == own.kv_bytes_per_sequence(4096)


def test_an_sglang_moe_quant_the_wide_ep_tables_lack_is_priced_at_theirs_on_the_resolved_graph():
    """The SGLang wide-EP tables measure fp8_block only, so the CLI refuses an NVFP4 DEP32 decode worker; its recipes run
    DeepEP low-latency, so it is priced on the resolved graph with its MoE at fp8_block (an upper bound), not on the fused
    graph's all-gather (which prices the 256-a-rank step at 71 ms against 33); its other ops and memory stay its own. No
    other framework takes the substitution."""
    from estimator.deployment import QuantOverrides

    nvfp4 = QuantOverrides(gemm="nvfp4", moe="nvfp4", kvcache="fp8")
    decode = dataclasses.replace(dep(32, role=Role.DECODE), quant=nvfp4)
    version = resolve_version("gb200", "sglang", None)
    assert reference._resolves(decode, version) is False
    stand_in = reference.wide_ep_stand_in(decode, version)
    assert stand_in == dataclasses.replace(decode, quant=dataclasses.replace(nvfp4, moe="fp8_block")) and takes_large_ep(stand_in)
    ours, fused = make_pricer("reference", decode), make_pricer("reference", dataclasses.replace(decode, role=Role.AGG))
    assert "generation_moe_dispatch" in ours.generation_names and "generation_moe_dispatch" not in fused.generation_names
    assert sum(p.latency_ms for p in ours.generation_ops(256, 1536)) < 0.6 * sum(p.latency_ms for p in fused.generation_ops(256, 1536))
    assert large_ep_note(decode).endswith("its MoE priced at fp8_block (the wide-EP tables measure no nvfp4: an upper bound)")
    assert reference._wide_ep_quants(dataclasses.replace(decode, backend="trtllm")) == (nvfp4,)


def test_a_worker_prices_its_own_phase_on_the_resolved_graph_and_the_other_on_the_fused_one():
    """The CLI prices a decode worker's generation phase only; its context phase keeps the fused graph."""
    decode, agg = make_pricer("reference", dep(32, role=Role.DECODE)), make_pricer("reference", dep(32))
    assert decode.large_ep_phases == ("generation",)
    assert [p.latency_ms for p in decode.generation_ops(8, 2048)] != [p.latency_ms for p in agg.generation_ops(8, 2048)]
    assert [p.latency_ms for p in decode.context_ops(2, 1024)] == [p.latency_ms for p in agg.context_ops(2, 1024)]


def test_an_all_to_all_priced_from_one_node_s_data_across_infiniband_is_not_taken():
    """TensorRT-LLM h100 DEP16: the CLI resolves DeepEP low-latency from its one-node (EP 4) table; the
    two nodes are joined by InfiniBand (no NVLink rack tier), so the worker keeps the fused graph."""
    decode = dep(16, "h100_sxm", "trtllm", Role.DECODE)
    version = resolve_version("h100_sxm", "trtllm", None)
    assert reference._resolves(decode, version) and not takes_large_ep(decode)
    ours, agg = make_pricer("reference", decode), make_pricer("reference", dep(16, "h100_sxm", "trtllm"))
    assert [p.latency_ms for p in ours.generation_ops(8, 2048)] == [p.latency_ms for p in agg.generation_ops(8, 2048)]


@pytest.mark.parametrize(("backend", "cli_backend"), [("trtllm", "trtllm_deepep_ll"), ("vllm", "deepep_ll")])
def test_a_framework_running_its_own_all_to_all_keeps_the_fused_graph_where_the_cli_resolves_deepep(backend, cli_backend):
    """TensorRT-LLM takes its NVLink all-to-all on gb200/gb300 (the fused graph's TrtllmAlltoall
    dispatch); vLLM its --all2all-backend (default allgather_reducescatter). The CLI would resolve
    DeepEP low-latency for either decode worker."""
    from aiconfigurator.sdk.moe_comm_resolver import resolve_model_config_moe_comm

    decode = dep(16, backend=backend, role=Role.DECODE)
    version = resolve_version("gb200", backend, None)
    cli = resolve_model_config_moe_comm(reference._base_config(decode), model_path=decode.model, backend_name=backend,
                                        required_phases=("generation",), database=reference.reference_database("gb200", backend, version))  # fmt: skip
    assert cli == {"generation": cli_backend}
    assert reference.own_all_to_all(decode) and not takes_large_ep(decode)
    assert make_pricer("reference", decode).generation_names == make_pricer("reference", dep(16, backend=backend)).generation_names


def test_the_replay_prices_each_disagg_worker_for_its_role():
    run = disagg_run(dep(8), dep(32), DisaggPoint(1024, 256, 1, 1, 16, 1), concurrency=8)
    assert (run.prefill.role, run.decode.role) == (Role.PREFILL, Role.DECODE)


def test_an_unknown_role_is_refused():
    with pytest.raises(InvalidInputError, match="unknown worker role 'router'"):
        dataclasses.replace(dep(8), role="router")


def test_a_row_s_note_names_how_each_worker_s_all_to_all_is_priced():
    assert large_ep_note(dep(8, role=Role.PREFILL)) == "prefill worker: wide-EP all-to-all at EP 16 (the tables skip EP 8; same tokens per rank)"
    assert large_ep_note(dep(32, role=Role.DECODE)) == "decode worker: wide-EP all-to-all"
    assert "NVLink all-to-all" in large_ep_note(dep(16, backend="trtllm", role=Role.DECODE))
    assert "cover one node" in large_ep_note(dep(16, "h100_sxm", "trtllm", Role.DECODE))
    assert large_ep_note(dep(16)) == large_ep_note(dep(8, "b200_sxm", role=Role.PREFILL)) == ""  # agg; within one node


def test_the_estimate_command_names_each_worker_s_all_to_all_on_stderr():
    from estimator.api import estimate

    result = estimate(model_path="deepseek-ai/DeepSeek-V3", system="gb200", backend="sglang", estimate_mode="disagg", isl=1024, osl=64,
                      prefill_tp_size=1, prefill_attention_dp_size=8, prefill_moe_tp_size=1, prefill_moe_ep_size=8, prefill_batch_size=1,
                      prefill_num_workers=1, decode_tp_size=1, decode_attention_dp_size=32, decode_moe_tp_size=1, decode_moe_ep_size=32,
                      decode_batch_size=8, decode_num_workers=1)  # fmt: skip
    assert result.warnings == (
        "note: prefill worker: wide-EP all-to-all at EP 16 (the tables skip EP 8; same tokens per rank)",
        "note: decode worker: wide-EP all-to-all",
    )
