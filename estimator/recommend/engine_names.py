"""Option names each engine version accepts, derived from the engine's public source (cited per list).

Only names are kept (no code). How each list was derived:

* SGLang 0.5.14 (``python -m sglang.launch_server``): sgl-project/sglang ``python/sglang/srt/server_args.py`` at tag
  v0.5.14 (the PyPI wheel sglang-0.5.14, whose scm_version.json names tag 0.5.14; file sha256 e1eebd7f...48b8):
  ``--`` plus every annotated ``ServerArgs`` field name with ``_`` as ``-`` (how ``add_cli_args_from_dataclass``
  derives the flags), every ``Arg(aliases=[...])`` alias, and the literal flags of ``add_cli_args``.
* vLLM 0.24.0 (``vllm serve``): vllm-project/vllm ``vllm/engine/arg_utils.py`` at v0.24.0, commit ee0da84ab (the
  wheel's ``vllm/_version.py``; file sha256 f1a32e22...a719): the literal flags of ``EngineArgs.add_cli_args``;
  the keys of ``--compilation-config`` and ``--kv-transfer-config`` are the fields of ``CompilationConfig``
  (``vllm/config/compilation.py``, sha256 1eab1063...c110) and ``KVTransferConfig`` (``vllm/config/kv_transfer.py``,
  sha256 64bde412...e4be).
* TensorRT-LLM (``trtllm-serve --extra_llm_api_options``): NVIDIA/TensorRT-LLM ``tensorrt_llm/llmapi/llm_args.py`` at
  commit 0004396720054fd8e205cbf616f21f0b57c6b412, the nearest snapshot reachable here (1.3.0rc20 itself is
  neither in the source index nor on the package index): only the fields a launch file here sets, each read in
  that file (``BaseLlmArgs``: tensor_parallel_size .. speculative_config around offset 212,000-222,000;
  ``TorchLlmArgs``: cuda_graph_config, disable_overlap_scheduler, print_iter_log, stream_interval around
  240,000-258,000; ``KvCacheConfig`` around 181,000; ``CacheTransceiverConfig`` around 204,500;
  ``BaseCudaGraphConfig`` around 9,000). The ``--extra_llm_api_options`` flag is named in ``KvCacheConfig.dtype``'s
  description. Every one of these fields is also in the versioned 1.3.0rc17 and 1.3.0rc24 API reference.
* Benchmark clients: ``vllm bench serve`` (vllm 0.24.0 ``vllm/benchmarks/serve.py`` ``add_cli_args``, sha256
  b09e85ee...77b7, and ``vllm/benchmarks/datasets/datasets.py``, sha256 4aebfc9a...11b4) and SGLang's
  ``python -m sglang.bench_serving`` (sglang 0.5.14 ``python/sglang/bench_serving.py``, sha256 1e3aae49...fe36):
  the literal flags of their parsers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class OptionNames:
    """The option names one engine (or client) version accepts."""

    engine: str  # e.g. "sglang"
    version: str  # the engine version the names were derived for
    citation: str  # repository, path and commit or tag
    names: frozenset[str]  # top-level names: CLI flags ("--tp-size") or config keys ("max_batch_size")
    nested: Mapping[str, frozenset[str]] = field(default_factory=dict)  # a name whose value is a mapping -> its keys


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SGLANG = OptionNames(
    "sglang",
    "0.5.14",
    "sgl-project/sglang python/sglang/srt/server_args.py@v0.5.14",
    _names("""
--abort-on-priority-when-disabled --admin-api-key --allow-auto-truncate --api-key --asr-max-buffer-seconds
--asr-max-concurrent-sessions --attention-backend --attention-context-parallel-size --attn-cp-size
--base-gpu-id --batch-notify-size --bucket-e2e-request-latency --bucket-inter-token-latency
--bucket-time-to-first-token --chat-template --checkpoint-engine-wait-weights-before-ready
--chunked-prefill-size --collect-tokens-histogram --completion-template --config
--constrained-json-disable-any-whitespace --constrained-json-whitespace-pattern --context-length --cp-strategy
--cpu-offload-gb --crash-dump-folder --cuda-graph-backend-decode --cuda-graph-backend-prefill --cuda-graph-bs
--cuda-graph-bs-decode --cuda-graph-bs-prefill --cuda-graph-config --cuda-graph-max-bs
--cuda-graph-max-bs-decode --cuda-graph-max-bs-prefill --cuda-graph-tc-compiler --custom-sigquit-handler
--custom-weight-loader --data-parallel-size --debug-cuda-graph --debug-tensor-dump-input-file
--debug-tensor-dump-layers --debug-tensor-dump-output-folder --decode-attention-backend --decode-log-interval
--decrypted-config-file --decrypted-draft-config-file --deepep-config --deepep-dispatcher-output-dtype
--deepep-mode --default-priority-value --delete-ckpt-after-loading --detokenizer-worker-num --device
--disable-attn-tp-gather --disable-chunked-prefix-cache --disable-cuda-graph --disable-cuda-graph-padding
--disable-custom-all-reduce --disable-decode-cuda-graph --disable-fast-image-processor
--disable-flashinfer-autotune --disable-flashinfer-cutlass-moe-fp4-allgather --disable-hybrid-swa-memory
--disable-outlines-disk-cache --disable-overlap-schedule --disable-piecewise-cuda-graph
--disable-prefill-cuda-graph --disable-priority-preemption --disable-radix-cache
--disable-shared-experts-fusion --disable-tokenizer-batch-decode --disaggregation-bootstrap-port
--disaggregation-decode-enable-offload-kvcache --disaggregation-decode-enable-radix-cache
--disaggregation-decode-extra-slots --disaggregation-decode-polling-interval --disaggregation-ib-device
--disaggregation-mode --disaggregation-transfer-backend --dist-init-addr --dist-timeout --dllm-algorithm
--dllm-algorithm-config --download-dir --dp-size --dsa-decode-backend --dsa-prefill-backend
--dsa-prefill-cp-mode --dsa-topk-backend --dtype --dynamic-batch-tokenizer-batch-size
--dynamic-batch-tokenizer-batch-timeout --elastic-ep-backend --elastic-ep-rejoin
--enable-adaptive-dispatch-to-encoder --enable-aiter-allreduce-fusion --enable-attn-tp-input-scattered
--enable-breakable-cuda-graph --enable-broadcast-mm-inputs-process --enable-cache-report --enable-cudagraph-gc
--enable-custom-logit-processor --enable-deepep-waterfill --enable-deepseek-v4-fp4-indexer
--enable-deterministic-inference --enable-dp-attention --enable-dp-attention-local-control-broadcast
--enable-dp-lm-head --enable-draft-weights-cpu-backup --enable-dsa-prefill-context-parallel
--enable-dynamic-batch-tokenizer --enable-dynamic-chunking --enable-elastic-expert-backup --enable-eplb
--enable-expert-distribution-metrics --enable-flashinfer-allreduce-fusion --enable-forward-pass-metrics
--enable-fp32-lm-head --enable-fused-moe-sum-all-reduce --enable-fused-qk-norm-rope
--enable-hierarchical-cache --enable-hisparse --enable-http2 --enable-int8-mamba-checkpoint
--enable-layerwise-nvtx-marker --enable-lmcache --enable-lora --enable-lora-overlap-loading
--enable-memory-saver --enable-metrics --enable-metrics-for-all-schedulers --enable-mfu-metrics --enable-mis
--enable-mixed-chunk --enable-mm-global-cache --enable-mscclpp --enable-multi-layer-eagle --enable-multimodal
--enable-nccl-nvls --enable-nsa-prefill-context-parallel --enable-p2p-check --enable-pdmux
--enable-precise-embedding-interpolation --enable-prefill-context-parallel --enable-prefill-cp
--enable-prefill-delayer --enable-prefix-mm-cache --enable-priority-scheduling --enable-profile-cuda-graph
--enable-quant-communications --enable-request-time-stats-logging --enable-return-hidden-states
--enable-return-indexer-topk --enable-return-routed-experts --enable-single-batch-overlap --enable-ssl-refresh
--enable-streaming-session --enable-strict-thinking --enable-symm-mem --enable-tokenizer-batch-encode
--enable-torch-compile --enable-torch-compile-debug-mode --enable-torch-symm-mem --enable-trace
--enable-two-batch-overlap --enable-weights-cpu-backup --encoder-bootstrap-port --encoder-only
--encoder-register-urls --encoder-transfer-backend --encoder-urls
--enforce-disable-flashinfer-allreduce-fusion --enforce-piecewise-cuda-graph --enforce-shared-experts-fusion
--engine-info-bootstrap-port --ep --ep-dispatch-algorithm --ep-num-redundant-experts --ep-size
--eplb-algorithm --eplb-min-rebalancing-utilization-threshold --eplb-rebalance-layers-per-chunk
--eplb-rebalance-num-iterations --expert-distribution-recorder-buffer-size --expert-distribution-recorder-mode
--expert-parallel-size --experts-shared-outer-loras --export-metrics-to-file --export-metrics-to-file-dir
--extra-metric-labels --fastapi-root-path --file-storage-path --flashinfer-allreduce-fusion-backend
--flashinfer-mla-disable-ragged --flashinfer-mxfp4-moe-precision --forward-hooks
--forward-pass-metrics-ipc-name --forward-pass-metrics-worker-id --fp4-gemm-runner-backend
--fp8-gemm-runner-backend --gc-threshold --gc-warning-threshold-secs --generation-tokens-buckets --gpu-id-step
--grammar-backend --grpc-http-sidecar-port --grpc-mode --hf-chat-template-name --hicache-io-backend
--hicache-mem-layout --hicache-ratio --hicache-size --hicache-storage-backend
--hicache-storage-backend-extra-config --hicache-storage-prefetch-policy --hicache-write-policy
--hierarchical-sparse-attention-extra-config --hisparse-config --host --incremental-streaming-output
--init-expert-location --int8-mamba-ckpt-size --is-embedding --json-model-override-args
--keep-mm-feature-on-device --kt-cpuinfer --kt-max-deferred-experts-per-token --kt-method --kt-num-gpu-experts
--kt-threadpool-count --kt-weight-path --kv-cache-dtype --kv-canary --kv-canary-real-data
--kv-canary-sweep-interval --kv-events-config --language-only --limit-mm-data-per-request
--linear-attn-backend --linear-attn-decode-backend --linear-attn-prefill-backend --lmcache-config-file
--load-balance-method --load-format --load-snapshot-publish-interval --log-level --log-level-http
--log-requests --log-requests-format --log-requests-level --log-requests-target --lora-backend
--lora-drain-wait-threshold --lora-eviction-policy --lora-paths --lora-strict-loading --lora-target-modules
--lora-use-virtual-experts --mamba-backend --mamba-full-memory-ratio --mamba-radix-cache-strategy
--mamba-scheduler-strategy --mamba-ssm-dtype --mamba-track-interval --max-loaded-loras --max-lora-chunk-size
--max-lora-rank --max-loras-per-batch --max-mamba-cache-size --max-prefill-tokens --max-queued-requests
--max-running-requests --max-total-tokens --mem-fraction-static --mm-attention-backend --mm-enable-dp-encoder
--mm-process-config --model --model-checksum --model-config-parser --model-impl --model-loader-extra-config
--model-path --modelexpress-config --modelopt-checkpoint-restore-path --modelopt-checkpoint-save-path
--modelopt-export-path --modelopt-quant --moe-a2a-backend --moe-data-parallel-size --moe-dense-tp-size
--moe-dp-size --moe-runner-backend --mooncake-ib-device --msprobe-dump-config --nccl-init-addr --nccl-port
--nnodes --node-rank --nsa-decode-backend --nsa-prefill-backend --nsa-prefill-cp-mode
--num-continuous-decode-steps --num-reserved-decode-tokens --numa-node --offload-group-size --offload-mode
--offload-num-in-group --offload-prefetch-step --optimistic-prefill-retries --otlp-traces-endpoint --page-size
--pdmux-config-path --piecewise-cuda-graph-compiler --piecewise-cuda-graph-max-tokens
--piecewise-cuda-graph-tokens --pipeline-parallel-size --port --pp-async-batch-depth --pp-max-micro-batch-size
--pp-size --pre-warm-nccl --preferred-sampling-params --prefill-attention-backend --prefill-cp-mode
--prefill-delayer-forward-passes-buckets --prefill-delayer-max-delay-ms --prefill-delayer-max-delay-passes
--prefill-delayer-queue-min-ratio --prefill-delayer-token-usage-low-watermark
--prefill-delayer-wait-seconds-buckets --prefill-max-requests --prefill-only-disable-kv-cache
--prefill-round-robin-balance --priority-scheduling-preemption-threshold --prompt-tokens-buckets
--quantization --quantization-param-path --quantize-and-serve --radix-cache-backend --radix-eviction-policy
--random-seed --reasoning-parser --remote-instance-weight-loader-backend
--remote-instance-weight-loader-seed-instance-ip --remote-instance-weight-loader-seed-instance-service-port
--remote-instance-weight-loader-send-weights-group-ports
--remote-instance-weight-loader-start-seed-via-transfer-engine --revision --rl-on-policy-target
--rl-quant-profile --sampling-backend --sampling-defaults --schedule-conservativeness
--schedule-low-priority-values-first --schedule-policy --scheduler-recv-interval --served-model-name
--show-time-cost --skip-server-warmup --skip-tokenizer-init --sleep-on-idle --sm-group-num
--soft-watchdog-timeout --speculative-accept-threshold-acc --speculative-accept-threshold-single
--speculative-adaptive --speculative-adaptive-config --speculative-algorithm --speculative-attention-mode
--speculative-dflash-block-size --speculative-dflash-draft-window-size --speculative-draft-attention-backend
--speculative-draft-load-format --speculative-draft-model --speculative-draft-model-path
--speculative-draft-model-quantization --speculative-draft-model-revision --speculative-draft-window-size
--speculative-eagle-topk --speculative-moe-a2a-backend --speculative-moe-runner-backend
--speculative-ngram-capacity --speculative-ngram-external-corpus-max-tokens
--speculative-ngram-external-corpus-path --speculative-ngram-external-sam-budget
--speculative-ngram-match-type --speculative-ngram-max-bfs-breadth --speculative-ngram-max-trie-depth
--speculative-ngram-min-bfs-breadth --speculative-num-draft-tokens --speculative-num-steps
--speculative-skip-dp-mlp-sync --speculative-token-map --speculative-use-rejection-sampling --ssl-ca-certs
--ssl-certfile --ssl-keyfile --ssl-keyfile-password --stat-loggers --stream-interval --stream-output
--stream-response-default-include-usage --strip-thinking-cache --swa-full-tokens-ratio
--tbo-token-distribution-threshold --tensor-parallel-size --tokenizer-backend
--tokenizer-metrics-allowed-custom-labels --tokenizer-metrics-custom-labels-header --tokenizer-mode
--tokenizer-path --tokenizer-worker-num --tool-call-parser --tool-server --torch-compile-max-bs
--torchao-config --tp-size --trace-modules --triton-attention-num-kv-splits --triton-attention-reduce-in-fp32
--triton-attention-split-tile-size --trust-remote-code --use-ray --uvicorn-access-log-exclude-prefixes
--warmups --watchdog-timeout --weight-loader-disable-mmap --weight-loader-drop-cache-after-load
--weight-loader-prefetch-checkpoints --weight-loader-prefetch-num-threads --weight-version
"""),
)

VLLM = OptionNames(
    "vllm",
    "0.24.0",
    "vllm-project/vllm vllm/engine/arg_utils.py@ee0da84ab (v0.24.0)",
    _names("""
--additional-config --aggregate-engine-logging --all2all-backend --allow-deprecated-quantization
--allowed-local-media-path --allowed-media-domains --async-scheduling --attention-backend --attention-config
--block-size --calculate-kv-scales --code-revision --collect-detailed-traces --compilation-config
--config-format --convert --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds --cpu-offload-gb
--cpu-offload-params --cudagraph-capture-sizes --cudagraph-metrics --data-parallel-address
--data-parallel-backend --data-parallel-external-lb --data-parallel-hybrid-lb
--data-parallel-multi-port-external-lb --data-parallel-rank --data-parallel-rpc-port --data-parallel-size
--data-parallel-size-local --data-parallel-start-rank --dbo-decode-token-threshold
--dbo-prefill-token-threshold --dcp-comm-backend --dcp-kv-cache-interleave-size --decode-context-parallel-size
--default-mm-loras --device-ids --diffusion-config --disable-cascade-attn --disable-chunked-mm-input
--disable-custom-all-reduce --disable-hybrid-kv-cache-manager --disable-log-stats
--disable-nccl-for-dp-synchronization --disable-sliding-window --distributed-executor-backend
--distributed-timeout-seconds --download-dir --dtype --ec-transfer-config --enable-chunked-prefill
--enable-cumem-allocator --enable-dbo --enable-elastic-ep --enable-ep-weight-filter --enable-eplb
--enable-expert-parallel --enable-flashinfer-autotune --enable-layerwise-nvtx-tracing --enable-log-requests
--enable-logging-iteration-details --enable-lora --enable-mamba-cache-stochastic-rounding --enable-mfu-metrics
--enable-mixed-moe-lora-format --enable-mm-embeds --enable-prefix-caching --enable-prompt-embeds
--enable-return-routed-experts --enable-sleep-mode --enable-tower-connector-lora --enforce-eager --eplb-config
--expert-placement-strategy --fail-on-environ-validation --fully-sharded-loras --gdn-prefill-backend
--generation-config --gpu-memory-utilization --hf-config-path --hf-overrides --hf-token --ignore-patterns
--interleave-mm-strings --io-processor-plugin --ir-op-priority --jit-monitor-verbose --kernel-config
--kv-cache-dtype --kv-cache-dtype-skip-layers --kv-cache-memory-bytes --kv-cache-metrics
--kv-cache-metrics-sample --kv-events-config --kv-offloading-backend --kv-offloading-size
--kv-sharing-fast-prefill --kv-transfer-config --language-model-only --limit-mm-per-prompt --linear-backend
--load-format --logits-processors --logprobs-mode --long-prefill-token-threshold --lora-dtype
--lora-target-modules --mamba-backend --mamba-block-size --mamba-cache-dtype --mamba-cache-mode
--mamba-cache-philox-rounds --mamba-ssm-cache-dtype --master-addr --master-port --max-cpu-loras
--max-cudagraph-capture-size --max-logprobs --max-long-partial-prefills --max-lora-rank --max-loras
--max-model-len --max-num-batched-tokens --max-num-partial-prefills --max-num-seqs
--max-parallel-loading-workers --media-io-kwargs --mm-encoder-attn-backend --mm-encoder-attn-dtype
--mm-encoder-fp8-scale-path --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path
--mm-encoder-only --mm-encoder-tp-mode --mm-processor-cache-gb --mm-processor-cache-type --mm-processor-kwargs
--mm-shm-cache-max-object-size-mb --mm-tensor-ipc --model --model-impl --model-loader-extra-config
--moe-backend --nnodes --node-rank --num-gpu-blocks-override --numa-bind --numa-bind-cpus --numa-bind-nodes
--offload-backend --offload-group-size --offload-num-in-group --offload-params --offload-prefetch-step
--optimization-level --otlp-traces-endpoint --override-attention-dtype --override-generation-config
--performance-mode --pipeline-parallel-size --pooler-config --prefill-context-parallel-size
--prefill-schedule-interval --prefix-caching-hash-algo --profiler-config --pt-load-map-location --quantization
--quantization-config --ray-workers-use-nsight --reasoning-config --reasoning-parser --reasoning-parser-plugin
--renderer-num-workers --revision --runner --safetensors-load-strategy --safetensors-prefetch-block-size
--safetensors-prefetch-num-threads --scheduler-cls --scheduler-reserve-full-isl --scheduling-policy --seed
--served-model-name --show-hidden-metrics-for-version --shutdown-timeout --skip-mm-profiling
--skip-tokenizer-init --spec-method --spec-model --spec-tokens --specialize-active-lora --speculative-config
--stream-interval --structured-outputs-config --tensor-parallel-size --tokenizer --tokenizer-mode
--tokenizer-revision --trust-remote-code --ubatch-size --use-fp64-gumbel --use-tqdm-on-load
--video-pruning-rate --watermark --weight-transfer-config --worker-cls --worker-extension-cls
"""),
    MappingProxyType(
        {
            "--compilation-config": _names("""
backend cache_dir compilation_time compile_cache_save_format compile_mm_encoder compile_ranges_endpoints
compile_sizes cudagraph_capture_sizes cudagraph_copy_inputs cudagraph_mm_encoder cudagraph_mode
cudagraph_num_of_warmups cudagraph_specialize_lora custom_ops debug_dump_path disabled_custom_ops
dynamic_shapes_config enabled_custom_ops encoder_compilation_time encoder_cudagraph_max_frames_per_batch
encoder_cudagraph_max_vision_items_per_batch encoder_cudagraph_token_budgets fast_moe_cold_start
inductor_compile_config inductor_passes ir_enable_torch_wrap local_cache_dir max_cudagraph_capture_size mode
pass_config splitting_ops static_all_moe_layers static_forward_context traced_files
use_inductor_graph_partition
"""),
            "--kv-transfer-config": _names("""
enable_permute_local_kv engine_id kv_buffer_device kv_buffer_size kv_connector kv_connector_extra_config
kv_connector_module_path kv_ip kv_load_failure_policy kv_parallel_size kv_port kv_rank kv_role
"""),
        }
    ),
)

TRTLLM = OptionNames(
    "trtllm",
    "1.3.0rc20",
    "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py@0004396720054fd8e205cbf616f21f0b57c6b412",
    _names("""
tensor_parallel_size pipeline_parallel_size moe_tensor_parallel_size moe_expert_parallel_size enable_attention_dp
kv_cache_config enable_chunked_prefill cache_transceiver_config max_batch_size max_num_tokens max_seq_len
cuda_graph_config disable_overlap_scheduler print_iter_log stream_interval
"""),
    MappingProxyType(
        {
            "kv_cache_config": _names("enable_block_reuse free_gpu_memory_fraction dtype max_tokens tokens_per_block"),
            "cuda_graph_config": _names("batch_sizes max_batch_size enable_padding"),
            "cache_transceiver_config": _names("backend max_tokens_in_buffer"),
        }
    ),
)
TRTLLM_SERVE = OptionNames("trtllm-serve", "1.3.0rc20", TRTLLM.citation, _names("--extra_llm_api_options"))
# the Slurm launch of a multi-node trtllm-serve (TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst, "across
# two nodes with Slurm": srun -N 2 --ntasks 16 --ntasks-per-node=8 --mpi=pmix ... trtllm-llmapi-launch trtllm-serve ...)
SRUN = OptionNames("srun", "slurm", "NVIDIA/TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst", _names("-N --ntasks --ntasks-per-node --mpi"))

VLLM_BENCH = OptionNames(
    "vllm bench serve",
    "0.24.0",
    "vllm-project/vllm vllm/benchmarks/serve.py@ee0da84ab (v0.24.0)",
    _names("""
--append-result --asr-max-audio-len-sec --asr-min-audio-len-sec --backend --base-url --bfcl-categories
--blazedit-max-distance --blazedit-min-distance --burstiness --chat-template-kwargs
--custom-ensure-client-side-data --custom-output-len --dataset-name --dataset-path --disable-shuffle
--disable-tqdm --enable-multimodal-chat --endpoint --extra-body --frequency-penalty --goodput --header
--hf-name --hf-output-len --hf-split --hf-subset --host --ignore-eos --input-len --insecure --label --logprobs
--lora-assignment --lora-modules --max-concurrency --metadata --metric-percentiles --min-p --model
--no-oversample --no-reranker --no-stream --num-prompts --num-warmups --output-len --percentile-metrics
--plot-dataset-stats --plot-timeline --port --prefix-repetition-num-prefixes --prefix-repetition-output-len
--prefix-repetition-prefix-len --prefix-repetition-suffix-len --presence-penalty --profile --ramp-up-end-rps
--ramp-up-start-rps --ramp-up-strategy --random-batch-size --random-input-len
--random-mm-base-items-per-request --random-mm-bucket-config --random-mm-limit-mm-per-prompt
--random-mm-num-mm-items-range-ratio --random-output-len --random-prefix-len --random-range-ratio
--ready-check-timeout-sec --repetition-penalty --request-id-prefix --request-rate --result-dir
--result-filename --save-detailed --save-result --seed --self-timed --served-model-name --sharegpt-output-len
--skip-chat-template --skip-tokenizer-init --sonnet-input-len --sonnet-output-len --sonnet-prefix-len
--spec-bench-category --spec-bench-output-len --speed-bench-category --speed-bench-dataset-subset
--speed-bench-output-len --temperature --timed-trace-chunk-hash-size --timed-trace-label-hash-ids
--timed-trace-label-input-length --timed-trace-label-output-length --timed-trace-label-timestamp
--timed-trace-sec-multiplier --timeline-itl-thresholds --tokenizer --tokenizer-mode --top-k --top-p
--trust-remote-code --use-beam-search
"""),
)

SGLANG_BENCH = OptionNames(
    "sglang.bench_serving",
    "0.5.14",
    "sgl-project/sglang python/sglang/bench_serving.py@v0.5.14",
    _names("""
--apply-chat-template --backend --base-url --cache-report --dataset-name --dataset-path --disable-ignore-eos
--disable-stream --disable-tqdm --extra-request-body --fake-prefill --flush-cache --gsp-fast-prepare
--gsp-group-distribution --gsp-num-groups --gsp-num-turns --gsp-ordered --gsp-output-len
--gsp-prompts-per-group --gsp-question-len --gsp-range-ratio --gsp-send-routing-key --gsp-system-prompt-len
--gsp-zipf-alpha --header --host --image-content --image-count --image-format --image-resolution
--logprob-start-len --lora-name --lora-request-distribution --lora-zipf-alpha --max-concurrency --model
--mooncake-num-rounds --mooncake-slowdown-factor --mooncake-workload --num-prompts --output-details
--output-file --pd-separated --plot-throughput --port --print-requests --profile --profile-activities
--profile-by-stage --profile-decode-url --profile-num-steps --profile-output-dir --profile-prefill-url
--profile-prefix --profile-stages --profile-start-step --profile-steps --prompt-suffix --random-image-count
--random-input-len --random-output-len --random-range-ratio --ready-check-timeout-sec --request-rate
--return-logprob --return-routed-experts --seed --served-model-name --sharegpt-context-len
--sharegpt-output-len --speed-bench-category --speed-bench-output-len --tag --temperature --token-ids-logprob
--tokenize-prompt --tokenizer --top-logprobs-num --top-p --use-trace-timestamps --warmup-requests
"""),
)
