"""Reading Hugging Face config.json files (mtpsim/hfconfig): each released config below gives the
committed catalog entry of its model, what the config cannot say is a one-line error naming the
key to give, and a scenario with `model: {hf_config: ./config.json}` runs end to end.

The configs are written here from the public config.json of each repository (fields that do not
shape the model, such as rope and token ids, trimmed; multimodal towers left out)."""
from __future__ import annotations

import json

import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.cli import main
from mtpsim.errors import ScenarioError
from mtpsim.specs import ModelSpec
from tests.conftest import BASE, ROOT

FP8_BLOCK = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}

# deepseek-ai/DeepSeek-V3, config.json
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "first_k_dense_replace": 3,
    "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8,
    "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "quantization_config": FP8_BLOCK,
    "rms_norm_eps": 1e-06, "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
    "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
    "v_head_dim": 128, "vocab_size": 129280}

# zai-org/GLM-4.5, config.json
GLM_45 = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 5120, "partial_rotary_factor": 0.5, "intermediate_size": 12288,
    "max_position_embeddings": 131072, "moe_intermediate_size": 1536, "norm_topk_prob": True,
    "num_attention_heads": 96, "n_group": 1, "topk_group": 1, "n_routed_experts": 160, "n_shared_experts": 1,
    "routed_scaling_factor": 2.5, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_hidden_layers": 92,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
    "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_qk_norm": True,
    "vocab_size": 151552}

# Qwen/Qwen3-Next-80B-A3B-Instruct, config.json (declares no MTP layer: vLLM assumes one)
QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "decoder_sparse_step": 1,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
    "mlp_only_layers": [], "moe_intermediate_size": 512, "norm_topk_prob": True, "num_attention_heads": 16,
    "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_theta": 10000000,
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_sliding_window": False, "vocab_size": 151936}

# XiaomiMiMo/MiMo-V2-Flash, config.json (hub format: hybrid_layer_pattern 0 = full, 1 = sliding)
MIMO_V2_FLASH = {
    "architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "hidden_size": 4096,
    "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128,
    "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8, "swa_head_dim": 192, "swa_v_head_dim": 128,
    "sliding_window": 128, "sliding_window_size": 128, "add_swa_attention_sink_bias": True,
    "hybrid_layer_pattern": [0, 1, 1, 1, 1] + [0, 1, 1, 1, 1, 1] * 7 + [0],
    "intermediate_size": 16384, "moe_intermediate_size": 2048, "moe_layer_freq": [0] + [1] * 47,
    "n_routed_experts": 256, "n_shared_experts": None, "num_experts_per_tok": 8, "scoring_func": "sigmoid",
    "topk_method": "noaux_tc", "partial_rotary_factor": 0.334, "rope_theta": 5000000, "swa_rope_theta": 10000,
    "max_position_embeddings": 262144, "num_nextn_predict_layers": 3, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "quantization_config": FP8_BLOCK, "vocab_size": 152576}

# google/gemma-4-E2B-it, config.json (text_config; vision and audio towers left out)
GEMMA_4_E2B = {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "tie_word_embeddings": True,
    "dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma4_text", "hidden_size": 1536, "num_hidden_layers": 35, "intermediate_size": 6144,
        "num_attention_heads": 8, "head_dim": 256, "global_head_dim": 512, "num_key_value_heads": 1,
        "num_global_key_value_heads": None, "attention_k_eq_v": False, "num_kv_shared_layers": 20,
        "use_double_wide_mlp": True, "enable_moe_block": False, "hidden_size_per_layer_input": 256,
        "vocab_size": 262144, "vocab_size_per_layer_input": 262144, "sliding_window": 512,
        "max_position_embeddings": 131072, "final_logit_softcapping": 30.0, "tie_word_embeddings": True,
        "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7, "dtype": "bfloat16"}}

# google/gemma-4-26B-A4B-it, config.json (text_config)
GEMMA_4_26B = {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma4_text", "hidden_size": 2816, "num_hidden_layers": 30, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 256, "num_global_key_value_heads": 2, "global_head_dim": 512,
        "attention_k_eq_v": True, "sliding_window": 1024, "enable_moe_block": True, "intermediate_size": 2112,
        "num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704, "vocab_size": 262144,
        "tie_word_embeddings": True, "num_kv_shared_layers": 0, "hidden_size_per_layer_input": 0,
        "max_position_embeddings": 262144, "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5}}

# google/gemma-4-31B-it, config.json (text_config; vision tower left out). The Hugging Face page was
# not reachable here: these are the values of the copies of that config in public engine tests
# (see mtpsim/data/models/gemma-4-31b.yaml)
GEMMA_4_31B = {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "tie_word_embeddings": True,
    "text_config": {
        "model_type": "gemma4_text", "hidden_size": 5376, "num_hidden_layers": 60, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 256, "num_global_key_value_heads": 4, "global_head_dim": 512,
        "attention_k_eq_v": True, "sliding_window": 1024, "enable_moe_block": False, "intermediate_size": 21504,
        "use_double_wide_mlp": False, "vocab_size": 262144, "tie_word_embeddings": True, "num_kv_shared_layers": 0,
        "hidden_size_per_layer_input": 0, "max_position_embeddings": 262144, "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh", "dtype": "bfloat16",
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 10}}

# meta-llama/Llama-3.1-8B-Instruct, config.json
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False, "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": False,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256}

# XiaomiMiMo/MiMo-7B-RL, config.json (MiMoForCausalLM, a Qwen2 config)
MIMO_7B = {
    "architectures": ["MiMoForCausalLM"], "model_type": "mimo", "attention_bias": True, "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 32768, "max_window_layers": 36,
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "num_nextn_predict_layers": 1,
    "rope_theta": 640000, "sliding_window": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_sliding_window": False, "vocab_size": 151680}

# stepfun-ai/Step-3.5-Flash, config.json: the fields the catalog entry cites (layer_types has 45 + 3 MTP entries)
STEP_35_FLASH = {
    "architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5", "hidden_size": 4096, "num_hidden_layers": 45,
    "num_attention_heads": 64, "num_attention_groups": 8, "head_dim": 128,
    "attention_other_setting": {"num_attention_heads": 96, "num_attention_groups": 8}, "sliding_window": 512,
    "layer_types": ["full_attention" if i % 4 == 0 and i < 45 else "sliding_attention" for i in range(48)],
    "intermediate_size": 11264, "moe_layers_enum": ",".join(str(i) for i in range(3, 45)), "moe_num_experts": 288,
    "moe_top_k": 8, "moe_intermediate_size": 1280, "share_expert_dim": 1280, "vocab_size": 128896,
    "tie_word_embeddings": False, "num_nextn_predict_layers": 3, "torch_dtype": "bfloat16"}


# The configs below are the released config.json files as aiconfigurator-core 0.12.0 vendors them
# (aiconfigurator_core/model_configs/<org>--<name>_config.json), trimmed as above.
# Qwen/Qwen3-30B-A3B and Qwen/Qwen3-235B-A22B (Qwen3MoeForCausalLM)
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "decoder_sparse_step": 1, "head_dim": 128,
    "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48,
    "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32,
    "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_sliding_window": False,
    "vocab_size": 151936}
QWEN3_235B_A22B = {**QWEN3_30B_A3B, "hidden_size": 4096, "intermediate_size": 12288, "max_window_layers": 94,
                   "moe_intermediate_size": 1536, "num_attention_heads": 64, "num_hidden_layers": 94}

# Qwen/Qwen3.5-397B-A17B (text_config; vision tower left out; layer_types is 15 x (3 linear, 1 full))
QWEN35_LAYER_TYPES = ["linear_attention"] * 3 + ["full_attention"]
QWEN35_397B = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe", "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_5_moe_text", "attn_output_gate": True, "dtype": "bfloat16", "full_attention_interval": 4,
        "head_dim": 256, "hidden_size": 4096, "layer_types": QWEN35_LAYER_TYPES * 15, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 64,
        "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
        "moe_intermediate_size": 1024, "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False,
        "num_attention_heads": 32, "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 60,
        "num_key_value_heads": 2, "shared_expert_intermediate_size": 1024, "vocab_size": 248320}}

# Qwen/Qwen3.5-27B: the dense member (no experts; 16 x (3 linear, 1 full))
QWEN35_27B = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_5_text", "attn_output_gate": True, "dtype": "bfloat16", "full_attention_interval": 4,
        "head_dim": 256, "hidden_size": 5120, "intermediate_size": 17408, "layer_types": QWEN35_LAYER_TYPES * 16,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 48, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
        "mlp_only_layers": [], "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False,
        "num_attention_heads": 24, "num_hidden_layers": 64, "num_key_value_heads": 4, "vocab_size": 248320}}

# mistralai/Mixtral-8x7B-v0.1
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "sliding_window": None, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "vocab_size": 32000}

# meta-llama/Llama-4-Scout-17B-16E-Instruct and -Maverick-17B-128E-Instruct (text_config; the vision
# tower is not read)
LLAMA4_SCOUT_TEXT = {
    "model_type": "llama4_text", "attention_chunk_size": 8192, "head_dim": 128, "hidden_size": 5120,
    "interleave_moe_layer_step": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 10485760, "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
    "num_key_value_heads": 8, "num_local_experts": 16, "torch_dtype": "bfloat16", "vocab_size": 202048,
    "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
LLAMA4_SCOUT = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
                "text_config": LLAMA4_SCOUT_TEXT, "vision_config": {"hidden_size": 1408}}
LLAMA4_MAVERICK = {**LLAMA4_SCOUT, "text_config": {
    **LLAMA4_SCOUT_TEXT, "interleave_moe_layer_step": 2, "num_local_experts": 128, "max_position_embeddings": 1048576,
    "rope_scaling": None}}


def read(tmp_path, config, file="config.json", **overrides) -> ModelSpec:
    path = tmp_path / file
    path.write_text(json.dumps(config) if isinstance(config, dict) else config)
    return ModelSpec.model_validate(catalog.resolve("models", {"hf_config": str(path), **overrides}, "s.yaml", "model"))


def shape(spec: ModelSpec, skip: tuple[str, ...] = ()) -> dict:
    """What a spec prices, independent of the names it gives its kinds."""
    def kinds(ref):
        return spec.attention_kinds[ref.attention].model_dump(), spec.ffn_kinds[ref.ffn].model_dump()
    out = {"hidden_size": spec.hidden_size, "vocab_size": spec.vocab_size, "max_context": spec.max_context,
           "tie_embeddings": spec.tie_embeddings, "lm_head": spec.lm_head.model_dump(), "dtypes": spec.dtypes.model_dump(),
           "layers": [kinds(ref) for ref in spec.expanded_layers],
           "mtp": spec.mtp and {**spec.mtp.model_dump(exclude={"layer"}), "layer": kinds(spec.mtp.layer)}}
    return {k: v for k, v in out.items() if k not in skip}


# Where the catalog entry says more than the config: the overrides a scenario would give, and the
# fields left out of the comparison, each with the reason.
CASES = {
    "deepseek-v3": (DEEPSEEK_V3, {}, ()),
    "glm-4.5": (GLM_45, {}, ()),
    # the released config declares no MTP layer; the catalog follows vLLM / SGLang's one full-attention MoE layer
    "qwen3-next-80b-a3b": (QWEN3_NEXT, {"mtp": {"num_layers": 1, "layer": {"attention": "full", "ffn": "moe"}}}, ()),
    # the config counts 3 MTP layers but no list reaches them; the catalog follows the report (SWA + dense)
    "mimo-v2-flash": (MIMO_V2_FLASH, {"mtp": {"layer": {"attention": "sliding", "ffn": "dense"}}}, ()),
    # the catalog pairs it with its assistant, which config.json does not name (a scenario's speculative.draft)
    "gemma-4-e2b": (GEMMA_4_E2B, {}, ()),
    "gemma-4-26b-a4b": (GEMMA_4_26B, {}, ()),
    "gemma-4-31b": (GEMMA_4_31B, {}, ()),
    # the catalog's mtp is the EAGLE-3 head trained for it, a separate checkpoint
    "llama-3.1-8b": (LLAMA_31_8B, {}, ("mtp",)),
    # the release lists one MTP layer; the catalog models the 3 the report uses at inference
    "mimo-7b": (MIMO_7B, {"mtp": {"num_layers": 3}}, ()),
    # the catalog's max_context comes from the README (256K), not from these fields
    "step-3.5-flash": (STEP_35_FLASH, {}, ("max_context",)),
    "qwen3-30b-a3b": (QWEN3_30B_A3B, {}, ()),
    "qwen3-235b-a22b": (QWEN3_235B_A22B, {}, ()),
    "qwen3.5-397b-a17b": (QWEN35_397B, {}, ()),
}


@pytest.mark.parametrize("name", CASES)
def test_the_released_config_gives_the_catalog_entry(tmp_path, name):
    config, overrides, skip = CASES[name]
    assert shape(read(tmp_path, config, **overrides), skip) == shape(catalog.load_model(name), skip)


def test_the_config_alone_says_what_it_says_about_mtp(tmp_path):
    assert read(tmp_path, QWEN3_NEXT).mtp is None and read(tmp_path, LLAMA_31_8B).mtp is None
    assert read(tmp_path, GEMMA_4_E2B).mtp is None
    mimo = read(tmp_path, MIMO_7B).mtp
    assert (mimo.num_layers, mimo.layer.attention, mimo.layer.ffn) == (1, "gqa", "dense")
    step = read(tmp_path, STEP_35_FLASH)
    assert step.attention_kinds[step.mtp.layer.attention].window == 512 and step.mtp.layer.ffn == "dense"


def params(spec: ModelSpec) -> float:
    """The weights the memory budget holds for the target on one GPU, in billions of 2-byte
    parameters (a bf16 spec): the passes' weights and the embedding table (memory.memory_budget)."""
    from mtpsim.costs.deployment import deploy
    from mtpsim.costs.part_ops import weight_bytes
    dep = deploy(spec, catalog.load_hardware("h200"), catalog.load_engine("sglang"))
    embedding = 0 if spec.tie_embeddings else spec.vocab_size * spec.hidden_size * 2
    return (weight_bytes(dep, "target") + embedding) / 2 / 1e9


def test_families_without_a_catalog_entry_read_as_their_modelling_code_builds_them(tmp_path):
    # Mixtral-8x7B: 46.7B parameters (the model card); every layer MoE, 8 experts, top 2
    mixtral = read(tmp_path, MIXTRAL_8X7B)
    assert [(g.count, g.ffn) for g in mixtral.layers] == [(32, "moe")] and mixtral.mtp is None
    assert mixtral.ffn_kinds["moe"].top_k == 2 and abs(params(mixtral) - 46.7) < 0.1
    # Qwen3.5-27B: dense FFNs, the Qwen3.5 hybrid attention, and one MTP layer SGLang's qwen3_5_mtp.py
    # builds as full attention with the layer rule's FFN at layer 0 (dense here, MoE in the 397B)
    dense = read(tmp_path, QWEN35_27B)
    assert set(dense.ffn_kinds) == {"dense"} and [g.attention for g in dense.layers[:2]] == ["linear", "full"]
    assert (dense.mtp.num_layers, dense.mtp.layer.attention, dense.mtp.layer.ffn) == (1, "full", "dense")
    assert 26 < params(dense) < 27.5  # 27B with a 0.4B vision tower and the output gate, neither priced
    moe = read(tmp_path, QWEN35_397B)
    assert (moe.mtp.layer.attention, moe.mtp.layer.ffn) == ("full", "moe")
    # a Qwen3 MoE with dense layers between (decoder_sparse_step 2) and a window on every layer
    mixed = read(tmp_path, {**QWEN3_30B_A3B, "decoder_sparse_step": 2, "use_sliding_window": True, "sliding_window": 4096})
    assert [g.ffn for g in mixed.layers[:2]] == ["dense", "moe"] and mixed.ffn_kinds["dense"].intermediate_size == 6144
    assert all(mixed.attention_kinds[g.attention].window == 4096 for g in mixed.layers)
    # Qwen3-VL MoE's text decoder is Qwen3 MoE's
    vl = read(tmp_path, {"architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe",
                         "text_config": {**QWEN3_30B_A3B, "model_type": "qwen3_vl_moe_text"}})
    assert shape(vl) == shape(read(tmp_path, QWEN3_30B_A3B))


def test_llama4_reads_chunked_and_full_layers_and_its_interleaved_experts(tmp_path, capsys):
    """transformers llama4 v4.57: every 4th layer (NoPE) attends globally, the rest in chunks of
    8,192 tokens (priced as a window, said in a warning); Maverick interleaves dense and MoE
    layers (interleave_moe_layer_step 2), every MoE with one shared expert of the experts' width."""
    scout = read(tmp_path, LLAMA4_SCOUT)
    kinds = [scout.attention_kinds[r.attention] for r in scout.expanded_layers]
    assert [k.window for k in kinds[:8]] == [8192, 8192, 8192, None] * 2 and len(kinds) == 48
    assert {r.ffn for r in scout.expanded_layers} == {"moe"} and scout.mtp is None
    moe = scout.ffn_kinds["moe"]
    assert (moe.num_experts, moe.top_k, moe.expert_intermediate_size, moe.num_shared_experts) == (16, 1, 8192, 1)
    assert abs(params(scout) - 107.8) < 0.2  # the card's 109B counts the vision tower too
    assert "36 of 48 layers attend within chunks of 8192 tokens" in capsys.readouterr().err
    maverick = read(tmp_path, LLAMA4_MAVERICK)
    assert [r.ffn for r in maverick.expanded_layers[:4]] == ["dense", "moe", "dense", "moe"]
    assert maverick.ffn_kinds["dense"].intermediate_size == 16384 and maverick.max_context == 1048576
    assert abs(params(maverick) - 400.8) < 0.3  # the card: 400B
    # a config that names its layers says so in its own words, and moe_layers lists them outright
    named = read(tmp_path, {**LLAMA4_SCOUT, "text_config": {
        **LLAMA4_SCOUT_TEXT, "layer_types": ["full_attention"] * 48, "moe_layers": [0, 47]}})
    assert {named.attention_kinds[r.attention].window for r in named.expanded_layers} == {None}
    assert [r.ffn for r in named.expanded_layers].count("moe") == 2
    err = error(tmp_path, {**LLAMA4_SCOUT, "text_config": {**LLAMA4_SCOUT_TEXT, "no_rope_layers": [2] * 48}})
    assert err.key == "text_config.no_rope_layers.0" and "2 is not one of 1, 0" in err.reason, err


def test_kind_names_and_the_folder_name(tmp_path):
    (tmp_path / "DeepSeek-V3").mkdir()
    spec = read(tmp_path, DEEPSEEK_V3, file="DeepSeek-V3/config.json")
    assert spec.name == "DeepSeek-V3" and set(spec.attention_kinds) == {"mla"} and set(spec.ffn_kinds) == {"dense", "moe"}
    qwen = read(tmp_path, QWEN3_NEXT, file="qwen.json")
    assert qwen.name == "qwen" and set(qwen.ffn_kinds) == {"moe"}  # the unused dense kind is dropped
    assert read(tmp_path, QWEN3_NEXT, name="mine").name == "mine"


def test_overrides_merge_on_top(tmp_path):
    spec = read(tmp_path, DEEPSEEK_V3, file="x.json", dtypes={"experts": "fp4"}, mtp={"num_layers": 2})
    assert (spec.dtypes.experts, spec.dtypes.attention, spec.dtypes.lm_head) == ("fp4", "fp8", "bf16")
    assert spec.mtp.num_layers == 2 and spec.mtp.layer.ffn == "moe" and spec.name == "x"
    assert read(tmp_path, DEEPSEEK_V3, mtp=None).mtp is None


def test_qwen2_sliding_window_and_fp16(tmp_path):
    config = {**MIMO_7B, "model_type": "qwen2", "use_sliding_window": True, "max_window_layers": 28,
              "sliding_window": 4096, "torch_dtype": "float16", "num_nextn_predict_layers": 0}
    spec = read(tmp_path, config)
    assert [(g.count, spec.attention_kinds[g.attention].window) for g in spec.layers] == [(28, None), (8, 4096)]
    assert spec.dtypes.attention == spec.dtypes.kv_cache == spec.dtypes.activations == "fp16" and spec.mtp is None


def test_architectures_picks_the_reader_when_model_type_is_unknown(tmp_path):
    spec = read(tmp_path, {**LLAMA_31_8B, "model_type": "my_llama"})
    assert spec.num_layers == 32


# -------------------------------------------------------------------------------------- errors
def error(tmp_path, config, **overrides) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config, **overrides)
    assert "\n" not in err.value.message
    return err.value


def test_an_unknown_model_type_names_the_supported_ones(tmp_path):
    err = error(tmp_path, {"model_type": "foo", "architectures": ["FooForCausalLM"], "hidden_size": 8})
    assert err.where == "s.yaml" and err.key == "model.hf_config"
    assert "model_type 'foo' is not supported" in err.reason and "deepseek_v3" in err.reason and "gemma4" in err.reason


def test_an_mtp_layer_the_config_cannot_place_asks_for_model_mtp(tmp_path):
    err = error(tmp_path, MIMO_V2_FLASH)
    assert err.key == "model.mtp" and "num_nextn_predict_layers 3" in err.reason and "give model.mtp" in err.reason
    # a Qwen3-Next config that counts an MTP layer: the family's rule places it (full attention, MoE)
    spec = read(tmp_path, {**QWEN3_NEXT, "num_nextn_predict_layers": 1})
    assert (spec.mtp.num_layers, spec.mtp.layer.attention, spec.mtp.layer.ffn) == (1, "full", "moe")


def test_a_config_without_a_dtype_is_read_as_float32_served_in_16_bits(tmp_path, capsys):
    """transformers' default (and vLLM's reading of a missing torch_dtype) is float32, which the
    engines serve in 16 bits: openai/gpt-oss-120b's config.json gives none, and was refused until
    2026-12-07 (a check of new published cases could not read it)."""
    from mtpsim import errors
    errors._warned.clear()  # the same warning of another test's s.yaml in this process would hide it
    bare = {k: v for k, v in LLAMA_31_8B.items() if k != "torch_dtype"}
    dtypes = read(tmp_path, bare).dtypes
    assert (dtypes.attention, dtypes.kv_cache, dtypes.lm_head) == ("bf16", "bf16", "bf16")
    assert "gives no torch_dtype (transformers' default: float32)" in capsys.readouterr().err
    assert read(tmp_path, bare, dtypes={"attention": "fp8"}).dtypes.attention == "fp8"
    assert "torch_dtype" not in capsys.readouterr().err  # the scenario's dtypes say it: no warning


def test_dtypes_the_config_cannot_give_ask_for_model_dtypes(tmp_path):
    err = error(tmp_path, {**LLAMA_31_8B, "quantization_config": {"quant_method": "awq", "bits": 4}})
    assert err.key == "model.dtypes" and "quant_method 'awq'" in err.reason
    assert error(tmp_path, {**LLAMA_31_8B, "torch_dtype": "int8"}).key == "model.dtypes"


@pytest.mark.parametrize("text, key, reason", [
    ('{"model_type": "llama",', "line 1", "not valid JSON"),
    ('{"model_type": "llama", "model_type": "qwen2"}', "", "duplicate key 'model_type'"),
    ('{"model_type": "llama", "hidden_size": NaN}', "", "NaN is not a number"),
    ('[1, 2]', "", "must hold a JSON object"),
    ("", "line 1", "not valid JSON"),
    ("[" * 100_000, "", "not readable JSON"),
])
def test_malformed_json_is_one_line_naming_the_file(tmp_path, text, key, reason):
    err = error(tmp_path, text)
    assert err.where == str(tmp_path / "config.json") and err.key == key and reason in err.reason


def test_unreadable_files_are_one_line(tmp_path):
    (tmp_path / "bin.json").write_bytes(b'{"a": "\0"}')
    (tmp_path / "latin.json").write_bytes('{"a": "\xe9"}'.encode("latin-1"))
    (tmp_path / "huge.json").write_text(" " * (5 * 2**20) + "{}")
    for name, reason in (("bin.json", "binary"), ("latin.json", "not UTF-8"), ("huge.json", "over the")):
        with pytest.raises(ScenarioError, match=reason):
            catalog.resolve("models", {"hf_config": str(tmp_path / name)}, "s.yaml", "model")
    with pytest.raises(ScenarioError) as err:
        catalog.resolve("models", {"hf_config": str(tmp_path / "nowhere.json")}, "s.yaml", "model")
    assert err.value.key == "model.hf_config" and "no such file" in err.value.reason
    with pytest.raises(ScenarioError, match="one source"):
        catalog.resolve("models", {"hf_config": "x.json", "from": "deepseek-v3"}, "s.yaml", "model")


@pytest.mark.parametrize("config, key, reason", [
    ({**DEEPSEEK_V3, "hidden_size": "7168"}, "hidden_size", "expected an integer 0..67,108,864, got '7168'"),
    ({k: v for k, v in DEEPSEEK_V3.items() if k != "kv_lora_rank"}, "kv_lora_rank", "missing"),
    ({**GEMMA_4_E2B, "text_config": {**GEMMA_4_E2B["text_config"], "head_dim": True}}, "text_config.head_dim", "got True"),
    ({**GEMMA_4_E2B, "text_config": {**GEMMA_4_E2B["text_config"], "layer_types": ["full_attention"]}},
     "text_config.layer_types", "at least 35 entries"),
    ({**MIMO_V2_FLASH, "hybrid_layer_pattern": [2] * 48}, "hybrid_layer_pattern.0", "not one of 0, 1"),
    ({**QWEN3_NEXT, "decoder_sparse_step": 0}, "decoder_sparse_step", "integer 1..67,108,864, got 0"),
    ({**STEP_35_FLASH, "moe_layers_enum": "3,x"}, "moe_layers_enum", "layer indices"),
    # a layer rule past the layers: each used to give a silently dense (or otherwise wrong) model
    ({**STEP_35_FLASH, "moe_layers_enum": "-5"}, "moe_layers_enum", "layer -5 is not one of the 45 layers"),
    ({**STEP_35_FLASH, "moe_layers_enum": "0,1,9999"}, "moe_layers_enum", "layer 9999"),
    ({**QWEN3_NEXT, "mlp_only_layers": [0, 1, 999]}, "mlp_only_layers", "layer 999"),
    ({**DEEPSEEK_V3, "first_k_dense_replace": 100}, "num_hidden_layers", "none of its 61 layers is MoE"),
    ({**DEEPSEEK_V3, "moe_layer_freq": 100}, "num_hidden_layers", "none of its 61 layers is MoE"),
    ({**MIMO_V2_FLASH, "sliding_window": 0}, "sliding_window", "got 0"),
    ({**GEMMA_4_E2B, "text_config": {**GEMMA_4_E2B["text_config"], "num_kv_shared_layers": 100}},
     "text_config.num_kv_shared_layers", "more than the 35 there are"),
])
def test_a_bad_field_names_its_key_in_the_config(tmp_path, config, key, reason):
    err = error(tmp_path, config)
    assert err.where == str(tmp_path / "config.json") and err.key == key and reason in err.reason


# ---------------------------------------------------------------------------------- end to end
def test_a_scenario_with_hf_config_beside_it_prices_like_the_catalog_entry(tmp_path, monkeypatch, write_scenario, capsys):
    (tmp_path / "config.json").write_text(json.dumps(DEEPSEEK_V3))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # ./config.json is found beside the scenario, not from the current folder
    outputs = []
    for model in ({"hf_config": "./config.json"}, "deepseek-v3"):
        assert main(["cost", str(write_scenario({**BASE, "model": model})), "--batch", "8"]) == 0
        outputs.append(capsys.readouterr().out.splitlines())
    assert "verify:target" in "\n".join(outputs[0]) and outputs[0][1:] == outputs[1][1:]
    point = sc.load(write_scenario({**BASE, "model": {"hf_config": "./config.json"}}),
                    ["model.dtypes.experts=fp4"])[0]
    assert point.specs.model.dtypes.experts == "fp4" and point.specs.model.name == tmp_path.name


def test_readme_states_what_a_qwen3_next_config_gets(tmp_path, write_scenario):
    """README's hf_config paragraph quotes the error a released Qwen3-Next config.json gets under
    nextn, and the override that mends it runs."""
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_NEXT))
    data = {**BASE, "parallel": {"tp": 1}, "model": {"hf_config": str(tmp_path / "config.json")}}
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario(data))
    readme = (ROOT / "README.md").read_text()
    assert err.value.key == "speculative.draft" and "has neither: give speculative.draft, or model.mtp" in err.value.reason
    assert "has neither: give speculative.draft, or model.mtp" in readme
    data["model"]["mtp"] = {"num_layers": 1, "layer": {"attention": "full", "ffn": "moe"}}
    assert sc.load(write_scenario(data))[0].specs.model.mtp.num_layers == 1


# ------------------------------------------------------------------------------- quantization
# NVIDIA's ModelOpt NVFP4 export of a DeepSeek-V3 (nvidia/DeepSeek-V3.1-NVFP4 as aiconfigurator-core
# 0.12.0 vendors it): config.json names no quantization; hf_quant_config.json beside it does,
# leaving out four of MLA's five projections in every layer, the MTP layer and the LM head
NVFP4_DEEPSEEK = {"producer": {"name": "modelopt"}, "quantization": {
    "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
    "exclude_modules": ["lm_head", "model.layers.61*"] + [
        f"model.layers.{i}.self_attn.{m}" for i in range(61)
        for m in ("kv_a_proj_with_mqa", "kv_b_proj", "q_a_proj", "q_b_proj")]}}


def test_a_modelopt_nvfp4_export_reads_its_hf_quant_config(tmp_path, capsys):
    """The sibling file gives the dtypes nvidia/DeepSeek-R1-FP4's deployment uses (scenarios/published/
    a3-deepseek-r1-b200-trtllm.yaml: BF16 attention and MTP, NVFP4 dense FFN and experts), and the
    attention's split (o_proj is NVFP4) is said."""
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(NVFP4_DEEPSEEK))
    config = {k: v for k, v in DEEPSEEK_V3.items() if k != "quantization_config"}
    dtypes = read(tmp_path, config).dtypes
    a3 = sc.load(ROOT / "scenarios/published/a3-deepseek-r1-b200-trtllm.yaml")[0].specs.model.dtypes
    assert dtypes.model_dump(exclude={"kv_cache"}) == a3.model_dump(exclude={"kv_cache"})
    assert (dtypes.attention, dtypes.experts, dtypes.mtp) == ("bf16", "fp4", "bf16")
    err = capsys.readouterr().err
    assert "attention weights of mixed dtypes (244 of 305 bf16, 61 of 305 fp4): priced bf16" in err
    # without the sibling the checkpoint is BF16 throughout
    (tmp_path / "hf_quant_config.json").unlink()
    assert read(tmp_path, config).dtypes.experts == "bf16"


@pytest.mark.parametrize("quant, want", [
    # ModelOpt in config.json (nvidia/GLM-5-NVFP4 style): wildcards leave the dense first layers
    # and every attention in BF16
    ({"quant_method": "modelopt", "quant_algo": "NVFP4",
      "ignore": ["lm_head", "model.layers.0*", "model.layers.1.*", "model.layers.2.*", "*self_attn*"]},
     {"attention": "bf16", "dense_ffn": "bf16", "experts": "fp4"}),
    # compressed-tensors INT4 experts (moonshotai/Kimi-K2.5): regular expressions leave the rest
    ({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int"}}},
      "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", r"re:.*mlp\.(gate|up|gate_up|down)_proj.*"]},
     {"attention": "bf16", "dense_ffn": "bf16", "experts": "fp4"}),
    # ModelOpt MIXED_PRECISION: FP8 attention projections, NVFP4 experts, the rest as stored
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"*self_attn*": {"quant_algo": "FP8"}, "*mlp.experts*": {"quant_algo": "NVFP4"}}},
     {"attention": "fp8", "dense_ffn": "bf16", "experts": "fp4"}),
    # block FP8 (the existing path): every linear part
    (FP8_BLOCK, {"attention": "fp8", "dense_ffn": "fp8", "experts": "fp8"}),
])
def test_quantization_configs_reach_the_parts_their_exclusions_leave(tmp_path, quant, want):
    dtypes = read(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant}).dtypes
    assert {k: getattr(dtypes, k) for k in want} == want and (dtypes.lm_head, dtypes.kv_cache) == ("bf16", "bf16")


def test_gemma4_moe_names_its_experts_apart_from_its_mlp(tmp_path):
    """nvidia/Gemma-4-26B-A4B-NVFP4 leaves every layer's `mlp` (the dense MLP beside the experts) in
    BF16; the routed experts (`experts.*`, not under `mlp`) are NVFP4."""
    quant = {"quant_method": "modelopt", "quant_algo": "NVFP4",
             "ignore": ["lm_head"] + [f"model.language_model.layers.{i}.{m}*" for i in range(30)
                                      for m in ("mlp", "router", "self_attn")]}
    config = {**GEMMA_4_26B, "quantization_config": quant}
    assert (read(tmp_path, config).dtypes.attention, read(tmp_path, config).dtypes.experts) == ("bf16", "fp4")


@pytest.mark.parametrize("quant, said", [
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "quant_algo 'W4A8_AWQ', which is not read"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"],
                                                                    "weights": {"num_bits": 8, "type": "int"}}}},
     "weights (8, 'int') (num_bits, type), which are not read"),
    ({"quant_method": "gptq", "bits": 4}, "quant_method 'gptq', which is not read"),
])
def test_a_quantization_not_read_asks_for_model_dtypes(tmp_path, quant, said):
    err = error(tmp_path, {**LLAMA_31_8B, "quantization_config": quant})
    assert err.key == "model.dtypes" and said in err.reason, err.reason
    # every weight the model has must be given (campaign 34: a partial model.dtypes priced the rest bf16)
    spec = read(tmp_path, {**LLAMA_31_8B, "quantization_config": quant}, dtypes={"attention": "fp8", "dense_ffn": "fp4"})
    assert (spec.dtypes.attention, spec.dtypes.dense_ffn) == ("fp8", "fp4")
    err = error(tmp_path, {**LLAMA_31_8B, "quantization_config": quant}, dtypes={"attention": "fp8"})
    assert err.key == "model.dtypes" and err.reason.endswith("give model.dtypes for dense_ffn (it gives attention only)")


def test_a_float32_checkpoint_is_served_in_16_bits(tmp_path, capsys):
    """Campaign 30: a float32 config.json was priced with FP32 weights and KV (2x the memory and
    time the engines' `--dtype auto` serves it at)."""
    from mtpsim import errors
    errors._warned.clear()  # the same warning of another test's s.yaml in this process would hide it
    dtypes = read(tmp_path, {**LLAMA_31_8B, "torch_dtype": "float32"}).dtypes
    assert (dtypes.attention, dtypes.kv_cache, dtypes.lm_head) == ("bf16", "bf16", "bf16")
    assert "says float32" in capsys.readouterr().err
    assert read(tmp_path, {**LLAMA_31_8B, "torch_dtype": "float32"}, dtypes={"kv_cache": "fp32"}).dtypes.kv_cache == "fp32"


@pytest.mark.parametrize("rope, context", [
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131072),  # Qwen3's YaRN recipe
    ({"type": "linear", "factor": 2.0}, 262144),
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 131072),  # Llama 3.1: as given
    (None, 131072),
])
def test_rope_scaling_lengthens_the_context_as_the_engines_derive_it(tmp_path, rope, context):
    assert read(tmp_path, {**LLAMA_31_8B, "rope_scaling": rope}).max_context == context


def test_a_prompt_past_max_context_names_the_override(tmp_path, write_scenario):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_31_8B, "max_position_embeddings": 4096,
                                                      "rope_scaling": None}))
    data = {**BASE, "parallel": {"tp": 1}, "speculative": {"design": "none"}, "acceptance": {},
            "model": {"hf_config": str(tmp_path / "config.json")},
            "workload": {"concurrency": 1, "num_requests": 1, "input_len": 6000, "output_len": 8}}
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario(data))
    assert err.value.key == "workload.input_len" and "model.max_context" in err.value.reason


def test_a_scheme_says_what_its_4_bit_scales_weigh(tmp_path):
    """Block-scale bytes a 4-bit weight is held with (ModelSpec.fp4_scale_bytes): MXFP4's E8M0 per 32
    values, NVFP4's FP8 per 16, INT4's BF16 per group."""
    mxfp4 = {"quant_method": "mxfp4", "modules_to_not_convert": ["*self_attn*"]}
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*self_attn*"]}
    int4 = {"quant_method": "compressed-tensors", "ignore": ["re:.*self_attn.*"], "config_groups": {
        "g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 32}}}}
    for quant, scale in ((mxfp4, 1 / 32), (nvfp4, 1 / 16), (int4, 2 / 32), (FP8_BLOCK, 1 / 16)):
        spec = read(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant})
        assert spec.fp4_scale_bytes == pytest.approx(scale), quant


@pytest.mark.parametrize("quant, key, said", [
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, "quantization_config.quantized_layers",
     "MIXED_PRECISION needs a map"),
    ({"quant_method": "modelopt", "quant_algo": ["NVFP4"]}, "quantization_config.quant_algo", "expected a name"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": "lm_head"}, "quantization_config.ignore",
     "expected a list"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["re:(?i)ATTN", "re:("]},
     "quantization_config.ignore.1", "not a regular expression"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": [r"re:(\w+\.?)+X"]},
     "quantization_config.ignore.0", "exponential time"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": 5, "weights": {"num_bits": 4,
                                                                                              "type": "int"}}}},
     "quantization_config.config_groups.g.targets", "expected a list"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {
        "num_bits": [4], "type": "int"}}}}, "quantization_config.config_groups.g.weights", "num_bits"),
])
def test_a_quantization_written_wrong_names_its_key_in_the_config(tmp_path, quant, key, said):
    """Campaign 31: a `re:` with an inline flag, two `re:` naming one group, `targets: 5` and lists
    where names go were tracebacks; a backtracking `re:` hung the read."""
    err = error(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant}, dtypes={"attention": "bf16"})
    assert err.where.endswith("config.json") and err.key == key and said in err.reason, (err.key, err.reason)


def test_an_inline_flag_and_a_repeated_group_name_are_read(tmp_path):
    quant = {"quant_method": "modelopt", "quant_algo": "NVFP4",
             "ignore": ["re:(?i).*SELF_ATTN.*", "re:(?P<x>lm_head)", "re:(?P<x>embed_tokens)"]}
    dtypes = read(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant}).dtypes
    assert (dtypes.attention, dtypes.experts) == ("bf16", "fp4")


def test_compressed_tensors_linear_beside_other_targets_keeps_every_linear_layer(tmp_path):
    quant = {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear", "re:.*mlp.experts.*"], "weights": {"num_bits": 8, "type": "float"}}}}
    dtypes = read(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant}).dtypes
    assert (dtypes.attention, dtypes.experts) == ("fp8", "fp8")


def test_a_long_per_module_map_reads_quickly(tmp_path):
    """A per-expert MIXED_PRECISION map of DeepSeek-V3's size (45k entries) took 40 s a read: the
    exact names are looked up, not matched one by one (benchmarks/ time it; here, that it reads)."""
    layers = {f"model.layers.{i}.mlp.experts.{e}.{m}": {"quant_algo": "NVFP4"}
              for i in range(3, 61) for e in range(256) for m in ("gate_proj", "up_proj", "down_proj")}
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers}
    dtypes = read(tmp_path, {**DEEPSEEK_V3, "quantization_config": quant}).dtypes
    assert (dtypes.attention, dtypes.experts) == ("bf16", "fp4")


def test_rope_parameters_scale_the_context_as_rope_scaling_does(tmp_path):
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 262144, "rope_theta": 1e7}
    config = {**QWEN35_27B, "text_config": {**QWEN35_27B["text_config"], "rope_parameters": rope}}
    assert read(tmp_path, config).max_context == 1048576
    assert error(tmp_path, {**LLAMA_31_8B, "rope_scaling": {"rope_type": "dynamic", "factor": 1e6}}).key == \
        "rope_scaling.factor"
