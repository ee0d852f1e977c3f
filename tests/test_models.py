"""Native model configs, quant inference and dense op lists vs the aiconfigurator-core 0.12.0 reference.

The reference side builds models with ``get_model`` and serializes them with ``build_engine_spec_json``
(h200_sxm databases, one per backend, loaded once). The "CLI" variants also run the estimate path's
``resolve_context_fmha_by_data`` and ``resolve_nvfp4_for_system`` before ``get_model``; natively the
same decisions come from the context-attention parquet's (attn_dtype, kv_cache_dtype) pairs.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import shutil
from pathlib import Path

import pytest

from estimator.deployment import Deployment, QuantOverrides
from estimator.errors import (
    EstimatorError,
    InvalidInputError,
    UnknownModelError,
    UnsupportedModelError,
)
from estimator.models import (
    build_dense_ops,
    infer_quant,
    native_families,
    resolve_model_config,
    weight_bytes,
)
from estimator.models.config import bundled_model_configs_dir
from estimator.models.ops import ops_spec

reference = pytest.mark.reference

SYSTEM = "h200_sxm"
SYSTEM_HAS_FP4 = False  # h200 is sm_90: no native FP4 tensor cores
BACKENDS = ("trtllm", "vllm", "sglang")
MODELS = (
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-32B-FP8",
    "Qwen/Qwen3-32B-FP8-Static-PerTensor",
    "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B",
    "nvidia/Llama-3.1-70B-Instruct-FP8",
    "XiaomiMiMo/MiMo-7B-Base",
)
PHASES = ("context", "generation")
ATTENTION_TAGS = {"ContextAttention": "context", "GenerationAttention": "generation"}


# --------------------------------------------------------------------------------------------------
# Reference side (imported lazily; cached per process)
# --------------------------------------------------------------------------------------------------


@functools.cache
def ref_database(backend: str):
    """(literal version, loaded reference perf database) of SYSTEM/backend."""
    from aiconfigurator_core.sdk import engine

    version = engine._literal_backend_version(SYSTEM, backend, None, None, None)
    return version, engine._maybe_load_database(SYSTEM, backend, version, None)


@functools.cache
def ref_build(
    model: str,
    backend: str,
    tp: int = 1,
    pp: int = 1,
    nextn: int = 0,
    attention_dp: int = 1,
    overrides: QuantOverrides = QuantOverrides(),
    cli: bool = False,
) -> dict:
    """The reference's OpSpec lists ("context"/"generation"), quant mode names and weight bytes."""
    from aiconfigurator_core.sdk import engine
    from aiconfigurator_core.sdk.config_builders import apply_nextn, build_model_config
    from aiconfigurator_core.sdk.models import get_model, resolve_context_fmha_by_data, resolve_nvfp4_for_system

    version, db = ref_database(backend)
    mc = build_model_config(
        tp_size=tp,
        pp_size=pp,
        attention_dp_size=attention_dp,
        moe_tp_size=1,
        moe_ep_size=1,
        gemm_quant_mode=overrides.gemm,
        kvcache_quant_mode=overrides.kvcache,
        fmha_quant_mode=overrides.fmha,
        moe_quant_mode=overrides.moe,
        comm_quant_mode=overrides.comm,
    )
    apply_nextn(mc, nextn)
    if cli:
        resolve_context_fmha_by_data(mc, model, db, backend, is_context_role=True)
        resolve_nvfp4_for_system(mc, SYSTEM, model, backend_name=backend)
    built = get_model(model, mc, backend)
    spec = json.loads(
        engine.build_engine_spec_json(
            built,
            model_path=model,
            system=SYSTEM,
            backend=backend,
            backend_version=version,
            kv_block_size=None,
            systems_path=None,
            nextn=nextn,
            database=db,
        )
    )
    quant = {
        "gemm": mc.gemm_quant_mode.name,
        "moe": mc.moe_quant_mode.name,
        "kvcache": mc.kvcache_quant_mode.name,
        "fmha": mc.fmha_quant_mode.name,
        "comm": mc.comm_quant_mode.name,
    }
    weights = float(sum(op.get_weights() for op in built.context_ops))
    return {"context": spec["context_ops"], "generation": spec["generation_ops"], "quant": quant, "weights": weights}


@functools.cache
def parquet_fmha_kv_pairs(backend: str) -> frozenset[tuple[str, str]]:
    """(attn_dtype, kv_cache_dtype) pairs of SYSTEM/backend's context-attention table, read from the parquet."""
    import pyarrow.parquet as pq

    version, _ = ref_database(backend)
    path = bundled_model_configs_dir().parent / "systems/data" / SYSTEM / "attention" / backend / version
    table = pq.read_table(path / "context_attention_perf.parquet", columns=["attn_dtype", "kv_cache_dtype"])
    return frozenset(zip(table.column("attn_dtype").to_pylist(), table.column("kv_cache_dtype").to_pylist()))


def reference_fmha_kv_pairs(backend: str) -> frozenset[tuple[str, str]]:
    """The (fmha, kv) pairs the reference resolver sees in its loaded context-attention table."""
    db = ref_database(backend)[1]
    db.supported_quant_mode.get("context_attention")  # triggers the lazy table load, as the resolver does
    data = db._context_attention_data
    lanes = list(data.values()) if isinstance(next(iter(data)), str) else [data]
    return frozenset((fmha.name, kv.name) for lane in lanes for fmha in lane for kv in lane[fmha])


def lane_orders(ref: dict) -> dict[str, tuple[str, ...]]:
    """The attention lane order of each phase in a reference build."""
    orders = {}
    for phase in PHASES:
        for op in ref[phase]:
            ((tag, body),) = op.items()
            if tag in ATTENTION_TAGS:
                orders[ATTENTION_TAGS[tag]] = tuple(body["lane_order"])
    return orders


# --------------------------------------------------------------------------------------------------
# Native side and comparison
# --------------------------------------------------------------------------------------------------


def native_build(
    model: str,
    backend: str,
    tp: int = 1,
    pp: int = 1,
    nextn: int = 0,
    attention_dp: int = 1,
    overrides: QuantOverrides = QuantOverrides(),
    cli: bool = False,
    lanes: dict[str, tuple[str, ...]] | None = None,
) -> dict:
    """The native build in the same shape as ref_build (OpSpec lists, quant names, weight bytes)."""
    cfg = resolve_model_config(model)
    deployment = Deployment(model, SYSTEM, backend, tp=tp, pp=pp, attention_dp=attention_dp, nextn=nextn, quant=overrides)
    pairs = parquet_fmha_kv_pairs(backend) if cli else None
    quant = infer_quant(cfg, backend, overrides, pairs, native_fp4=SYSTEM_HAS_FP4 if cli else True)
    phases = build_dense_ops(cfg, deployment, quant, lanes)
    return {
        "context": ops_spec(phases.context),
        "generation": ops_spec(phases.generation),
        "quant": dataclasses.asdict(quant),
        "weights": weight_bytes(cfg, deployment, quant),
    }


def spec_mismatches(native: list[dict], ref: list[dict]) -> list[str]:
    """Every difference between two OpSpec lists: length, and per position the tag, the field names
    and every field value and JSON type (so 64 vs 64.0 or 1 vs True is a difference)."""
    problems = [f"length {len(native)} != {len(ref)}"] if len(native) != len(ref) else []
    for index, (ours, theirs) in enumerate(zip(native, ref)):
        ((our_tag, our_body),) = ours.items()
        ((their_tag, their_body),) = theirs.items()
        where = f"#{index} {their_body.get('name')}"
        if our_tag != their_tag:
            problems.append(f"{where}: tag {our_tag} != {their_tag}")
            continue
        if our_body.keys() != their_body.keys():
            problems.append(f"{where}: fields {sorted(our_body)} != {sorted(their_body)}")
        for key in sorted(our_body.keys() & their_body.keys()):
            ours_value, theirs_value = our_body[key], their_body[key]
            if ours_value != theirs_value or type(ours_value) is not type(theirs_value):
                problems.append(f"{where}: {key} {ours_value!r} != {theirs_value!r}")
    return problems


def build_mismatches(native: dict, ref: dict) -> list[str]:
    """All differences between a native and a reference build (both phases, quant, weights)."""
    problems = [f"{phase} {p}" for phase in PHASES for p in spec_mismatches(native[phase], ref[phase])]
    if native["quant"] != ref["quant"]:
        problems.append(f"quant {native['quant']} != {ref['quant']}")
    if native["weights"] != ref["weights"]:
        problems.append(f"weights {native['weights']} != {ref['weights']}")
    return problems


def short(model: str) -> str:
    """Readable test id of a model id or path."""
    return model.rsplit("/", 1)[-1]


# --------------------------------------------------------------------------------------------------
# Op-list parity: models x backends x tp x pp x nextn
# --------------------------------------------------------------------------------------------------

GRID = [
    pytest.param(model, backend, tp, pp, nextn, id=f"{short(model)}-{backend}-tp{tp}-pp{pp}-mtp{nextn}")
    for model in MODELS
    for backend in BACKENDS
    for tp in (1, 2, 4, 8)
    for pp in (1, 2)
    for nextn in (0, 2)
]


@reference
@pytest.mark.parametrize(("model", "backend", "tp", "pp", "nextn"), GRID)
def test_dense_ops_match_reference(model: str, backend: str, tp: int, pp: int, nextn: int) -> None:
    ref = ref_build(model, backend, tp, pp, nextn)
    native = native_build(model, backend, tp, pp, nextn, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []


OTHER_BUNDLED_DENSE = ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-8B", "meta-llama/Meta-Llama-3.1-405B")


@reference
@pytest.mark.parametrize("nextn", [0, 1], ids=["mtp0", "mtp1"])
@pytest.mark.parametrize("tp", [1, 8], ids=["tp1", "tp8"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", OTHER_BUNDLED_DENSE, ids=short)
def test_other_bundled_dense_models_match_reference(model: str, backend: str, tp: int, nextn: int) -> None:
    ref = ref_build(model, backend, tp, 1, nextn)
    native = native_build(model, backend, tp, 1, nextn, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []


@reference
@pytest.mark.parametrize("model", ["Qwen/Qwen3-32B-FP8", "meta-llama/Meta-Llama-3.1-8B"], ids=short)
def test_attention_dp_matches_reference(model: str) -> None:
    ref = ref_build(model, "sglang", tp=2, attention_dp=4)
    native = native_build(model, "sglang", tp=2, attention_dp=4, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []


@reference
def test_default_lane_order_is_default() -> None:
    ref = ref_build("Qwen/Qwen3-32B", "trtllm")
    assert lane_orders(ref) == {"context": ("default",), "generation": ("default",)}
    assert build_mismatches(native_build("Qwen/Qwen3-32B", "trtllm"), ref) == []


# --------------------------------------------------------------------------------------------------
# The comparison can fail
# --------------------------------------------------------------------------------------------------


def _bump_gemm_n(ops: list[dict]) -> None:
    ops[2]["Gemm"]["n"] += 1


def _swap_ops(ops: list[dict]) -> None:
    ops[0], ops[1] = ops[1], ops[0]


def _drop_last(ops: list[dict]) -> None:
    ops.pop()


def _flip_qk_norm(ops: list[dict]) -> None:
    ops[3]["ContextAttention"]["use_qk_norm"] = not ops[3]["ContextAttention"]["use_qk_norm"]


def _reorder_lanes(ops: list[dict]) -> None:
    ops[3]["ContextAttention"]["lane_order"] = list(reversed(ops[3]["ContextAttention"]["lane_order"]))


def _extra_field(ops: list[dict]) -> None:
    ops[0]["Embedding"]["extra"] = 1


def _int_for_bool(ops: list[dict]) -> None:
    ops[4]["Gemm"]["low_precision_input"] = 1


@reference
@pytest.mark.parametrize("perturb", [_bump_gemm_n, _swap_ops, _drop_last, _flip_qk_norm, _reorder_lanes, _extra_field, _int_for_bool])
def test_comparison_flags_perturbed_reference(perturb) -> None:
    ref = ref_build("Qwen/Qwen3-32B-FP8", "sglang", 2, 2, 2)
    native = native_build("Qwen/Qwen3-32B-FP8", "sglang", 2, 2, 2, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []
    perturbed = copy.deepcopy(ref)
    perturb(perturbed["context"])
    assert build_mismatches(native, perturbed) != []


@reference
@pytest.mark.parametrize(
    "field_change",
    [{"scale_factor": 63.0}, {"name": "context_qkv"}, {"quant_mode": "fp8"}, {"k": 5121}],
    ids=lambda change: next(iter(change)),
)
def test_comparison_flags_perturbed_native_op(field_change: dict) -> None:
    ref = ref_build("Qwen/Qwen3-32B-FP8", "sglang", 2)
    cfg = resolve_model_config("Qwen/Qwen3-32B-FP8")
    deployment = Deployment("Qwen/Qwen3-32B-FP8", SYSTEM, "sglang", tp=2)
    quant = infer_quant(cfg, "sglang")
    context = list(build_dense_ops(cfg, deployment, quant, lane_orders(ref)).context)
    assert spec_mismatches(ops_spec(context), ref["context"]) == []
    context[2] = dataclasses.replace(context[2], **field_change)
    assert spec_mismatches(ops_spec(context), ref["context"]) != []


@reference
def test_comparison_flags_quant_and_weights() -> None:
    ref = ref_build("Qwen/Qwen3-32B-FP8", "vllm")
    native = native_build("Qwen/Qwen3-32B-FP8", "vllm", lanes=lane_orders(ref))
    assert build_mismatches({**native, "quant": {**native["quant"], "fmha": "fp8"}}, ref) != []
    assert build_mismatches({**native, "weights": native["weights"] + 1}, ref) != []


# --------------------------------------------------------------------------------------------------
# Quant inference: the CLI estimate path (data-driven FMHA check, nvfp4 on h200) and overrides
# --------------------------------------------------------------------------------------------------


@reference
@pytest.mark.parametrize("backend", BACKENDS)
def test_parquet_pairs_are_what_the_reference_sees(backend: str) -> None:
    assert parquet_fmha_kv_pairs(backend) == reference_fmha_kv_pairs(backend)


@reference
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", MODELS, ids=short)
def test_cli_quant_matches_reference(model: str, backend: str) -> None:
    ref = ref_build(model, backend, tp=2, cli=True)
    native = native_build(model, backend, tp=2, cli=True, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []


@pytest.mark.parametrize(
    ("model", "backend", "expected"),
    [
        ("Qwen/Qwen3-32B", "sglang", ("bfloat16", "bfloat16", "bfloat16")),
        ("Qwen/Qwen3-32B-FP8", "sglang", ("fp8_block", "fp8", "fp8")),
        ("Qwen/Qwen3-32B-FP8", "vllm", ("fp8_block", "fp8", "bfloat16")),
        ("Qwen/Qwen3-32B-FP8-Static-PerTensor", "trtllm", ("fp8_static", "fp8", "fp8")),
        ("nvidia/Llama-3.1-70B-Instruct-FP8", "sglang", ("fp8_static", "fp8", "fp8")),
    ],
    ids=lambda value: short(value) if isinstance(value, str) else None,
)
def test_documented_quant_modes(model: str, backend: str, expected: tuple[str, str, str]) -> None:
    quant = infer_quant(resolve_model_config(model), backend)
    assert (quant.gemm, quant.kvcache, quant.fmha) == expected


def test_data_check_downgrades_inferred_fp8_fmha() -> None:
    cfg = resolve_model_config("Qwen/Qwen3-32B-FP8")
    bf16_only = frozenset({("bfloat16", "bfloat16"), ("bfloat16", "fp8")})
    assert infer_quant(cfg, "sglang", QuantOverrides(), bf16_only).fmha == "bfloat16"
    assert infer_quant(cfg, "sglang", QuantOverrides(), bf16_only | {("fp8", "fp8")}).fmha == "fp8"
    assert infer_quant(cfg, "sglang", QuantOverrides(), frozenset()).fmha == "fp8"
    with pytest.raises(EstimatorError, match="fmha quant mode fp8"):
        infer_quant(cfg, "sglang", QuantOverrides(fmha="fp8"), bf16_only)


OVERRIDE_CASES = [
    ("Qwen/Qwen3-32B", "sglang", QuantOverrides(gemm="fp8_block")),
    ("Qwen/Qwen3-32B", "vllm", QuantOverrides(kvcache="fp8")),
    ("Qwen/Qwen3-32B-FP8", "sglang", QuantOverrides(kvcache="bfloat16")),
    ("Qwen/Qwen3-32B-FP8", "vllm", QuantOverrides(fmha="fp8")),
    ("Qwen/Qwen3-32B-FP8", "vllm", QuantOverrides(fmha="bfloat16", comm="fp8")),
    ("meta-llama/Meta-Llama-3.1-8B", "trtllm", QuantOverrides(fmha="fp8")),
    ("nvidia/Llama-3.1-70B-Instruct-FP8", "trtllm", QuantOverrides(gemm="nvfp4", moe="nvfp4")),
    ("XiaomiMiMo/MiMo-7B-Base", "sglang", QuantOverrides(gemm="int4_wo", kvcache="int8")),
]

# Explicit fp8 FMHA on vLLM: the table has no fp8 slice, so the CLI path refuses it.
REFUSED_OVERRIDE = ("Qwen/Qwen3-32B-FP8", "vllm", QuantOverrides(fmha="fp8"))


def _override_id(case: tuple) -> str:
    model, backend, overrides = case
    set_fields = "+".join(f"{k}={v}" for k, v in dataclasses.asdict(overrides).items() if v)
    return f"{short(model)}-{backend}-{set_fields}"


@reference
@pytest.mark.parametrize("cli", [False, True], ids=["get_model", "cli"])
@pytest.mark.parametrize("case", OVERRIDE_CASES, ids=_override_id)
def test_overrides_match_reference(case: tuple, cli: bool) -> None:
    model, backend, overrides = case
    refused = assert_same_outcome(model, backend, overrides, cli)
    assert refused == (cli and case == REFUSED_OVERRIDE)


def assert_same_outcome(model: str, backend: str, overrides: QuantOverrides, cli: bool) -> bool:
    """Native and reference both build identical lists (returns False), or both refuse (returns True)."""
    try:
        ref = ref_build(model, backend, tp=2, overrides=overrides, cli=cli)
    except (ValueError, AttributeError):  # the reference refuses (AttributeError: a missing enum member)
        with pytest.raises(EstimatorError):
            native_build(model, backend, tp=2, overrides=overrides, cli=cli)
        return True
    native = native_build(model, backend, tp=2, overrides=overrides, cli=cli, lanes=lane_orders(ref))
    assert build_mismatches(native, ref) == []
    return False


def test_unknown_override_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="fp9"):
        infer_quant(resolve_model_config("Qwen/Qwen3-32B"), "sglang", QuantOverrides(gemm="fp9"))


# --------------------------------------------------------------------------------------------------
# Synthetic checkpoints given as directories (quantization formats, architecture variants, quirks)
# --------------------------------------------------------------------------------------------------


def _qc(**fields: object) -> dict:
    """config.json edits that set its quantization_config."""
    return {"quantization_config": fields}


def _ct(weights: dict, **fields: object) -> dict:
    """config.json edits for a one-group compressed-tensors checkpoint."""
    return _qc(quant_method="compressed-tensors", config_groups={"group_0": {"weights": weights}}, **fields)


_FP8_WEIGHTS = {"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": False}
_MIXED_LAYERS = {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}, "model.layers.1.q_proj": "NVFP4"}
_MXFP8_GROUP = {"weights": {"num_bits": 8, "type": "float", "group_size": 32}, "targets": ["Linear"]}
LLAMA_8B, LLAMA_70B, QWEN_32B, MIMO = (
    "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B",
    "Qwen/Qwen3-32B",
    "XiaomiMiMo/MiMo-7B-Base",
)
# case -> (bundled base model, config.json edits (None deletes a key), hf_quant_config "quantization" or None)
SYNTHETIC = {
    "modelopt-nvfp4": (LLAMA_8B, {}, {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}),
    "modelopt-mixed-fp8": (
        LLAMA_8B,
        {},
        {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "quantized_layers": _MIXED_LAYERS},
    ),
    "mixed-groups-mxfp8": (QWEN_32B, _qc(quant_method="mixed-precision", config_groups={"g": _MXFP8_GROUP}), None),
    "ct-fp8-dynamic": (
        LLAMA_70B,
        _qc(
            quant_method="compressed-tensors",
            config_groups={"group_0": {"weights": _FP8_WEIGHTS, "input_activations": {"dynamic": True}}},
            ignore=["lm_head"],
            kv_cache_scheme={"type": "float", "num_bits": 8},
        ),
        None,
    ),
    "ct-fp8-block-attn-ignored": (
        QWEN_32B,
        _ct({**_FP8_WEIGHTS, "strategy": "block"}, ignore=["lm_head", "re:.*self_attn.*"]),
        None,
    ),
    "ct-w4a16": (LLAMA_8B, _ct({"num_bits": 4, "type": "int"}), None),
    "ct-int8-unbuildable": (LLAMA_8B, _ct({"num_bits": 8, "type": "int"}), None),
    "fp8-dynamic": (MIMO, _qc(quant_method="fp8", activation_scheme="dynamic"), None),
    "fp8-static-kv-bf16": (MIMO, _qc(quant_method="fp8", activation_scheme="static", kv_cache_dtype="bf16"), None),
    "kv-fp8-only": (QWEN_32B, _qc(kv_cache_quant_algo="e4m3"), None),
    "top-level-quant-algo": (QWEN_32B, {"quant_algo": "fp8"}, None),
    "awq-unsupported": (QWEN_32B, _qc(quant_method="awq"), None),
    "qwen2-architecture": (QWEN_32B, {"architectures": ["Qwen2ForCausalLM"]}, None),
    "no-kv-heads-quirk": (LLAMA_8B, {"num_key_value_heads": None}, None),
    "no-head-dim": ("Qwen/Qwen3-32B-FP8", {"head_dim": None, "hidden_size": 6144}, None),
}


REFUSED_SUFFIXES = ("-unsupported", "-unbuildable")  # cases both builders must refuse


@pytest.fixture(scope="module")
def synthetic_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One model directory per SYNTHETIC case: a bundled config.json with edits, plus hf_quant_config.json."""
    dirs = {}
    for name, (base, edits, hf_quantization) in SYNTHETIC.items():
        directory = tmp_path_factory.mktemp(name)
        raw = json.loads(_bundled_config(base).read_text())
        raw.update(edits)
        raw = {key: value for key, value in raw.items() if value is not None}
        (directory / "config.json").write_text(json.dumps(raw))
        if hf_quantization is not None:
            (directory / "hf_quant_config.json").write_text(json.dumps({"quantization": hf_quantization}))
        dirs[name] = str(directory)
    return dirs


def _bundled_config(model: str) -> Path:
    return bundled_model_configs_dir() / f"{model.replace('/', '--')}_config.json"


@reference
@pytest.mark.parametrize("cli", [False, True], ids=["get_model", "cli"])
@pytest.mark.parametrize("backend", ["trtllm", "vllm"])
@pytest.mark.parametrize("case", list(SYNTHETIC))
def test_synthetic_checkpoint_matches_reference(synthetic_dirs: dict, case: str, backend: str, cli: bool) -> None:
    refused = assert_same_outcome(synthetic_dirs[case], backend, QuantOverrides(), cli)
    assert refused == case.endswith(REFUSED_SUFFIXES)


# --------------------------------------------------------------------------------------------------
# Model resolution and errors
# --------------------------------------------------------------------------------------------------


def test_native_families() -> None:
    assert native_families() == ("LlamaForCausalLM", "MiMoForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")


@pytest.mark.parametrize(
    ("model", "architecture", "qk_norm"),
    [
        ("Qwen/Qwen3-32B", "Qwen3ForCausalLM", True),
        ("meta-llama/Meta-Llama-3.1-8B", "LlamaForCausalLM", False),
        ("XiaomiMiMo/MiMo-7B-Base", "MiMoForCausalLM", False),
    ],
    ids=lambda value: short(value) if isinstance(value, str) else None,
)
def test_family_and_qk_norm(model: str, architecture: str, qk_norm: bool) -> None:
    cfg = resolve_model_config(model)
    assert (cfg.architecture, cfg.family, cfg.use_qk_norm) == (architecture, "LLAMA", qk_norm)


def test_unknown_model_names_the_id() -> None:
    with pytest.raises(UnknownModelError, match="acme/NoSuchModel-7B"):
        resolve_model_config("acme/NoSuchModel-7B")


def test_directory_without_config_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(UnknownModelError, match="config.json"):
        resolve_model_config(str(tmp_path))


@pytest.mark.parametrize(
    ("model", "architecture"),
    [("deepseek-ai/DeepSeek-V3", "DeepseekV3ForCausalLM"), ("Qwen/Qwen3-30B-A3B", "Qwen3MoeForCausalLM")],
    ids=["DeepSeek-V3", "Qwen3-30B-A3B"],
)
def test_non_dense_architecture_is_unsupported(model: str, architecture: str) -> None:
    with pytest.raises(UnsupportedModelError, match=architecture):
        resolve_model_config(model)


def test_config_json_path(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    shutil.copy(_bundled_config("Qwen/Qwen3-32B-FP8"), path)
    by_path = resolve_model_config(str(path))
    assert by_path == dataclasses.replace(resolve_model_config("Qwen/Qwen3-32B-FP8"), model=str(path))


def test_config_file_path_reads_companion_quant_file(tmp_path: Path) -> None:
    model = "nvidia/Llama-3.1-70B-Instruct-FP8"
    config = _bundled_config(model)
    quant = config.with_name(config.name.replace("_config.json", "_hf_quant_config.json"))
    for source in (config, quant):
        shutil.copy(source, tmp_path / source.name)
    cfg = resolve_model_config(str(tmp_path / config.name))
    assert (cfg.quant.quant_algo, cfg.quant.kv_cache_algo) == ("fp8", "fp8")
    assert infer_quant(cfg, "trtllm") == infer_quant(resolve_model_config(model), "trtllm")


def test_tp_must_divide_heads() -> None:
    cfg = resolve_model_config("Qwen/Qwen3-32B")
    deployment = Deployment("Qwen/Qwen3-32B", SYSTEM, "sglang", tp=3)
    with pytest.raises(InvalidInputError, match="tp 3"):
        build_dense_ops(cfg, deployment, infer_quant(cfg, "sglang"))
