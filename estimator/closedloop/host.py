"""Host (CPU launch) time of an eager pass that prefills, per serving framework and model architecture.

A pass that prefills runs eagerly on SGLang (piecewise CUDA graphs off by default through 0.5.9 and
forced off for speculative decoding, attention DP and PD prefill) and on TensorRT-LLM (CUDA graphs
cover generation-only batches); its Python launch loop over the layers is host-bound for large
MoE models, so the pass lasts at least its host time. The published points (``HOST_POINTS``):

* a single request at concurrency 1 waits for nothing, so its median TTFT is one prefill pass's
  host time plus the request's fixed path (``EngineSettings.request_path_ms``, subtracted; the rest
  of the path, e.g. SGLang's, which is not published, stays in: an upper bound) plus any first-use
  compile its build pays inline, which the replay charges apart (``shape_compile_ms``, subtracted).
  A point measured with speculative decoding counts the draft layer its first pass also runs;
* or a forward call's host time measured directly.

Rule: per-layer cost = point / layers counted; a pass that prefills lasts at least that x the
layers the deployment's pass runs, its decoder layers and any draft-layer forwards of its speculative
decoding (draft_layer_runs), whatever its TP and GPU (each rank's process launches its own layers).
An architecture with its own point takes it: of two, the one whose speculative decoding matches the
deployment's (a speculative run's first pass also runs the draft's own extend forward, which counting
the draft as one more layer only approximates); another MoE architecture takes the framework's smallest
published MoE per-layer cost (a lower bound: the fewest kernels per layer measured); a dense
architecture takes none (no published point, fewer kernels per layer). vLLM takes none here: its
eager passes carry the reference's per-request dispatch overhead instead (runs.dispatch_overhead_ms),
which a launch whose every pass replays a CUDA graph does not pay (``every_pass_graphed``); nor does an SGLang
launch whose piecewise CUDA graphs (on by default from 0.5.10) hold every pass that prefills
(``sglang_graphs_every_prefill``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from estimator.caching import memo
from estimator.deployment import Backend, Deployment, Role
from estimator.models import model_architecture, model_traits
from estimator.scheduler.facts import deployment_facts
from estimator.settings import SGLANG_PIECEWISE_FROM, SGLANG_SHAPE_COMPILE_MS, TRTLLM_REQUEST_PATH_MS, EngineSettings, released_before

COOKBOOK = "sgl-project/sgl-cookbook @ 7b5bd9c"  # bench_serving output at concurrency 1, 10 prompts, random dataset


@dataclass(frozen=True)
class HostPoint:
    """One published measurement of an eager prefill pass's host time."""

    host_ms: float  # host time of one pass that prefills, ms (> 0)
    layers: int  # layers the pass ran: the model's decoder layers, plus the draft-layer forwards run in the same pass (>= 1)
    citation: str  # where it is published, and how host_ms follows from it
    speculative: bool = False  # the measured run decoded speculatively (its draft-layer forwards counted in layers)

    @property
    def per_layer_ms(self) -> float:
        return self.host_ms / self.layers


# (framework, HF architecture) -> its points, at most one with and one without speculative decoding
HOST_POINTS: Mapping[tuple[Backend, str], tuple[HostPoint, ...]] = MappingProxyType(
    {
        (Backend.SGLANG, "DeepseekV3ForCausalLM"): (
            HostPoint(
                140.76,
                61,
                (
                    f"{COOKBOOK} docs/autoregressive/DeepSeek/DeepSeek-R1.md L371-L396: DeepSeek-R1-0528 FP8, 8xB200 TP8, SGLang "
                    "0.5.6.post1, 610 input tokens, Median TTFT (ms): 140.76 (4,194 tokens: 154.96, L693-L718: host-bound)"
                ),
            ),
        ),
        (Backend.SGLANG, "KimiK25ForConditionalGeneration"): (
            HostPoint(
                154.24,
                61,
                (
                    f"{COOKBOOK} docs/autoregressive/Moonshotai/Kimi-K2.5.md L585-L611: Kimi-K2.5 INT4, 8xH200 TP8, SGLang 0.5.6.post2, "
                    "610 input tokens, Median TTFT (ms): 154.24"
                ),
            ),
        ),
        (Backend.SGLANG, "Qwen3_5MoeForConditionalGeneration"): (
            HostPoint(
                208.46 - SGLANG_SHAPE_COMPILE_MS,
                60 + 1,
                (
                    f"{COOKBOOK} docs/autoregressive/Qwen/Qwen3.5.md L756-L783: Qwen3.5-397B-A17B, 8xH200 TP8, SGLang main (Feb 2026), "
                    "NEXTN speculative decoding (its MTP layer extends in the prefill's pass), 610 input tokens, Median TTFT (ms): 208.46, "
                    "less the FLA l2norm compile that build pays inline for a prompt length new to the server (before PR 31558; nine of "
                    "the ten prompts, whose seed-1 lengths differ, the first being the warm-up's; SGLANG_SHAPE_COMPILE_MS, charged "
                    "apart by the replay: shape_compile_ms)"
                ),
                speculative=True,
            ),
        ),
        (Backend.SGLANG, "GlmMoeDsaForCausalLM"): (
            HostPoint(
                244.0,
                78,
                (
                    "BenHamm gist dcd09f595fef141567a39582f502cef4 (2026-02-13, 'GLM-5-FP8 Inference Benchmark: 8xB200 vs 8xH200'): "
                    "GLM-5-FP8, 8xB200 TP8, lmsysorg/sglang:glm5-blackwell, 'B200 baseline (no speculative decoding)', 'Random tokens, "
                    "1K input / 1K output' against the cookbook's run, one stream (output 48 tok/s at a 20.2 ms TPOT), TTFT median (ms): 244"
                ),
            ),
            HostPoint(
                282.34,
                78 + 1,
                (
                    f"{COOKBOOK} docs/autoregressive/GLM/GLM-5.md L440-L467: GLM-5-FP8, 8xH200 TP8, SGLang 947927bdb, EAGLE speculative "
                    "decoding (its MTP layer extends in the prefill's pass), 610 input tokens, Median TTFT (ms): 282.34"
                ),
                speculative=True,
            ),
        ),
        (Backend.SGLANG, "MiniMaxM2ForCausalLM"): (
            HostPoint(
                116.10,
                62,
                (
                    f"{COOKBOOK} docs/autoregressive/MiniMax/MiniMax-M2.5.md L425-L451: MiniMax-M2.5, 8xB200 TP8 EP8, SGLang 0.5.8, "
                    "609 input tokens, Median TTFT (ms): 116.10 (4,194 tokens: 126.76)"
                ),
            ),
        ),
        (Backend.SGLANG, "GptOssForCausalLM"): (
            HostPoint(
                31.79,
                36,
                (
                    f"{COOKBOOK} docs/autoregressive/OpenAI/GPT-OSS.md L445-L470: gpt-oss-120b, 8xB200 TP8, SGLang 0.5.6, ShareGPT "
                    "(332 input tokens on average), Median TTFT (ms): 31.79"
                ),
            ),
        ),
        (Backend.TRTLLM, "DeepseekV3ForCausalLM"): (
            HostPoint(
                124.11 - TRTLLM_REQUEST_PATH_MS,
                61,
                (
                    "NVIDIA/TensorRT-LLM issue 5929: DeepSeek-R1, TensorRT-LLM 0.21.0rc2, 1,600 input tokens, concurrency 1, p50 TTFT "
                    "at EP none / 4 / 8: FP8 on 8xH200 TP8 164.63 / 134.36 / 124.11 ms, FP4 on 8xB200 TP8 161.04 / 160.18 / 172.65 ms; "
                    "the least of the table (each is an upper bound on the host time, which does not depend on the GPU), less "
                    "trtllm-serve's request path"
                ),
            ),
        ),
        (Backend.TRTLLM, "GptOssForCausalLM"): (
            HostPoint(
                30.0,
                36,
                (
                    "ai-dynamo/aisimulate issue 277: GPT-OSS-120B, B200 TP2, TensorRT-LLM 1.3.0rc14, 886-token prefill + 3 decodes: "
                    "'complete forward CPU calls still average about 30 ms' while its MoE kernels take 7.49 ms"
                ),
            ),
        ),
    }
)


@dataclass(frozen=True)
class EagerCost:
    """The per-layer host cost a deployment's eager prefill passes take, and why."""

    per_layer_ms: float  # ms per layer the pass runs: decoder layers and draft-layer forwards (>= 0)
    source: str  # the point it comes from, or the rule that leaves it at 0


def eager_cost(backend: Backend, model: str, moe: bool, speculative: bool = False) -> EagerCost:
    """The published per-layer eager cost of an architecture on a framework for a deployment that decodes
    speculatively or not (module docstring's rule)."""
    architecture = model_architecture(model)
    own = HOST_POINTS.get((backend, architecture or ""), ())
    if own:
        point = next((p for p in own if p.speculative == speculative), own[0])
        return EagerCost(point.per_layer_ms, point.citation)
    if not moe:
        return EagerCost(0.0, f"{backend.value} {architecture}: no published point for a dense architecture")
    framework = [p for (b, _), points in HOST_POINTS.items() if b is backend for p in points]
    if not framework:
        return EagerCost(0.0, f"{backend.value} prefills under CUDA graphs")
    least = min(framework, key=lambda p: p.per_layer_ms)
    return EagerCost(least.per_layer_ms, f"{backend.value} {architecture}: no point of its own, the framework's least: {least.citation}")


def draft_layer_runs(deployment: Deployment) -> int:
    """Draft-layer forwards a speculative deployment's pass that prefills runs after its decoder layers (0 without
    speculative decoding): SGLang's EAGLE worker extends its one-layer draft (EAGLE, EAGLE3 and NEXTN/MTP chains) once
    over the prompt (sglang 0.5.9 srt/speculative/eagle_worker.py forward_batch_generation L290-L297:
    forward_target_extend, then forward_draft_extend); TensorRT-LLM's MTP worker runs its MTP layer nextn times in every
    forward, the context phase's included (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/mtp.py @ 000a01de
    MTPEagleWorker.forward: for i in range(self.mtp_num_modules)); the points count such forwards alike (HostPoint.layers)."""
    if deployment.nextn == 0:
        return 0
    return deployment.nextn if deployment.backend is Backend.TRTLLM else 1


@memo()
def prefill_floor_ms(deployment: Deployment, eager_layer_ms: float | None) -> float:
    """A pass that prefills lasts at least this long, ms: the layers it runs (decoder layers and its draft-layer
    forwards) x the per-layer cost (eager_layer_ms, EngineSettings'; None: the framework's published cost for the
    architecture and the deployment's speculative decoding, eager_cost)."""
    facts = deployment_facts(deployment)
    if eager_layer_ms is None:
        eager_layer_ms = eager_cost(deployment.backend, deployment.model, facts.num_experts > 0, deployment.nextn > 0).per_layer_ms
    return eager_layer_ms * (facts.num_layers + draft_layer_runs(deployment))


# vLLM V1 (cudagraph_mode FULL_AND_PIECEWISE, the default) replays a piecewise CUDA graph for a prefill or mixed pass
# whose token count is within the largest capture size and runs a larger one eagerly: vllm-project/vllm
# vllm/config/compilation.py @ 002284db CompilationConfig.cudagraph_mode ("FULL_AND_PIECEWISE mode: Capture full
# cudagraph for decode batches and piecewise cudagraph for prefill and mixed prefill-decode batches ... the default")
# and max_cudagraph_capture_size ("If not specified, max_cudagraph_capture_size is set to min(max_num_seqs*2, 512)");
# vllm/v1/cudagraph_dispatcher.py @ 009eec3 (mixed-mode keys at each capture size; no key: CUDAGraphMode.NONE).
VLLM_CUDAGRAPH_MAX_TOKENS = 512  # the default's cap, min(2 x max_num_seqs, 512)


def vllm_cudagraph_max_tokens(settings: EngineSettings) -> int:
    """The largest pass, in tokens, a vLLM launch replays as a CUDA graph: the launch's capture size, or vLLM's default
    min(2 x max_num_seqs, 512), 512 when max_num_seqs is unset (vLLM's own default is at least 256). Not followed: later
    releases scale the default by the speculative draft tokens + 1 (the release read has no such factor)."""
    if settings.cudagraph_max_tokens is not None:
        return settings.cudagraph_max_tokens
    seqs = settings.max_num_seqs
    return VLLM_CUDAGRAPH_MAX_TOKENS if seqs is None else min(2 * seqs, VLLM_CUDAGRAPH_MAX_TOKENS)


def every_pass_graphed(backend: Backend, settings: EngineSettings) -> bool:
    """True when a vLLM launch's step token budget fits in its CUDA-graph capture size, so every pass, prefills
    included, replays a graph; False otherwise and for the other engines (their eager passes: prefill_floor_ms)."""
    return backend is Backend.VLLM and settings.step_token_budget <= vllm_cudagraph_max_tokens(settings)


# SGLang's piecewise CUDA graphs (EngineSettings.piecewise_cuda_graph; sglang/srt/server_args.py 0.5.10.post1 L637,
# _handle_piecewise_cuda_graph L1078-L1140, piecewise_cuda_graph_max_tokens L1006-L1013; configs/model_config.py
# L188-L215, L1352-L1358): off for these architectures and for DeepSeek sparse attention (index_topk), for multimodal
# models, speculative decoding, attention DP, pipeline parallelism and PD disaggregation; their largest graphed pass is the
# chunked prefill size, 2,048 tokens for an MLA model.
SGLANG_PIECEWISE_OFF_ARCHITECTURES = frozenset(
    {"DeepseekV32ForCausalLM", "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM"}
)


def sglang_graphs_every_prefill(deployment: Deployment, settings: EngineSettings) -> bool:
    """True when an SGLang agg launch replays every pass that prefills as a piecewise CUDA graph, so none runs eagerly:
    its graphs on (settings.piecewise_cuda_graph; empty: from SGLANG_PIECEWISE_FROM, a release before it not), its model
    and layout graphed (SGLANG_PIECEWISE_OFF_ARCHITECTURES and the rules above) and no MLA model (whose passes above
    2,048 tokens run eagerly: its floor is kept). False for the other engines and roles."""
    if deployment.backend is not Backend.SGLANG or deployment.role is not Role.AGG:
        return False
    on = settings.piecewise_cuda_graph
    if not (on if on is not None else not released_before(deployment.version, SGLANG_PIECEWISE_FROM)):
        return False
    if deployment.nextn > 0 or deployment.attention_dp > 1 or deployment.pp > 1:
        return False
    traits = model_traits(deployment.model)
    return model_architecture(deployment.model) not in SGLANG_PIECEWISE_OFF_ARCHITECTURES and not (traits.multimodal or traits.sparse_indexer or traits.mla)
