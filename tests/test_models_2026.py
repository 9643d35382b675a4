"""Today's MTP models (mtpsim/data/models/ deepseek-v3.2, glm-5, kimi-k2.5, qwen3.5-397b-a17b, minimax-m2.5): each released
config.json (written here from the copies aiconfigurator-core 0.12.0 vendors in
aiconfigurator_core/model_configs/, trimmed as tests/test_hfconfig.py trims) gives the catalog
entry; DeepSeek Sparse Attention is priced as an indexer over every cached token and MLA over the
top-k; an attention variant no op prices is one error naming its key."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim.costs import ops as O
from mtpsim.errors import ScenarioError
from tests.test_hfconfig import DEEPSEEK_V3, read, shape

DSA = {"index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128}
# deepseek-ai/DeepSeek-V3.2: DeepSeek-V3's fields, the indexer's, and its own architecture
DEEPSEEK_V32 = {**DEEPSEEK_V3, **DSA, "architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32"}
# zai-org/GLM-5
GLM_5 = {
    "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "dtype": "bfloat16", "first_k_dense_replace": 3,
    "hidden_size": 6144, "index_head_dim": 128, "index_n_heads": 32, "index_topk": 2048, "intermediate_size": 12288,
    "kv_lora_rank": 512, "max_position_embeddings": 202752, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_attention_heads": 64, "num_experts_per_tok": 8,
    "num_hidden_layers": 78, "num_key_value_heads": 64, "num_nextn_predict_layers": 1, "q_lora_rank": 2048,
    "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "tie_word_embeddings": False, "v_head_dim": 256,
    "vocab_size": 154880}
# moonshotai/Kimi-K2.5: the text decoder (vision tower left out); INT4 compressed-tensors experts
KIMI_K25 = {
    "architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "tie_word_embeddings": False,
    "text_config": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "dtype": "bfloat16",
        "first_k_dense_replace": 1, "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
        "max_position_embeddings": 262144, "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_routed_experts": 384,
        "n_shared_experts": 1, "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61,
        "num_key_value_heads": 64, "num_nextn_predict_layers": 0, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "quantization_config": {
            "quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                "num_bits": 4, "type": "int", "group_size": 32, "strategy": "group", "symmetric": True}}},
            "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", r"re:.*mlp\.(gate|up|gate_up|down)_proj.*"]},
        "tie_word_embeddings": False, "v_head_dim": 128, "vocab_size": 163840}}


# Qwen/Qwen3.5-397B-A17B: the text decoder
QWEN35_MOE = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe", "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_5_moe_text", "attn_output_gate": True, "dtype": "bfloat16", "full_attention_interval": 4,
        "head_dim": 256, "hidden_size": 4096,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 64, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
        "moe_intermediate_size": 1024, "mtp_num_hidden_layers": 1, "num_attention_heads": 32, "num_experts": 512,
        "num_experts_per_tok": 10, "num_hidden_layers": 60, "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 1024, "vocab_size": 248320}}
QWEN35_MOE["text_config"]["layer_types"] = (["linear_attention"] * 3 + ["full_attention"]) * 15
QWEN35_MTP = {"mtp": {"layer": {"attention": "full", "ffn": "moe"}}}  # SGLang qwen3_5_mtp.py: full attention, MoE


# MiniMaxAI/MiniMax-M2.5 (declares 3 MTP modules without their layers' kind)
MINIMAX_M25 = {
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "num_hidden_layers": 62, "hidden_size": 3072,
    "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 1536,
    "vocab_size": 200064, "num_experts_per_tok": 8, "num_local_experts": 256, "max_position_embeddings": 196608,
    "rotary_dim": 64, "tie_word_embeddings": False, "use_qk_norm": True, "use_mtp": True, "mtp_transformer_layers": 1,
    "num_mtp_modules": 3, "shared_intermediate_size": 0,
    "quantization_config": {"quant_method": "fp8", "fmt": "float8_e4m3fn", "weight_block_size": [128, 128]}}


def test_minimax_trunk_and_the_mtp_it_cannot_say(tmp_path):
    dtypes = {"dtypes": {"lm_head": "bf16", "kv_cache": "bf16"}}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, MINIMAX_M25, **dtypes)
    assert err.value.key == "model.mtp" and "num_mtp_modules 3" in err.value.reason
    spec = read(tmp_path, MINIMAX_M25, **dtypes, mtp={"layer": {"attention": "gqa", "ffn": "moe"}})
    assert shape(spec, skip=("mtp", "dtypes")) == shape(catalog.load_model("minimax-m2.5"), skip=("mtp", "dtypes"))
    assert spec.mtp.num_layers == 3 and catalog.load_model("minimax-m2.5").mtp is None


@pytest.mark.parametrize("name, config, overrides", [
    ("qwen3.5-397b-a17b", QWEN35_MOE, QWEN35_MTP),
    ("deepseek-v3.2", DEEPSEEK_V32, {}),
    ("glm-5", GLM_5, {}),
    # INT4 experts: the catalog's 4-bit stand-in; no MTP layers (their dtype, the scheme's, prices nothing)
    ("kimi-k2.5", KIMI_K25, {"dtypes": {"experts": "fp4", "mtp": "bf16"}}),
])
def test_the_released_config_gives_the_catalog_entry(tmp_path, name, config, overrides):
    assert shape(read(tmp_path, config, **overrides)) == shape(catalog.load_model(name))


def test_an_attention_kind_no_op_prices_is_one_error(tmp_path):
    # DeepSeek-V4's compressed sparse attention on an MLA config (model_type deepseek_v4 reads it:
    # tests/test_deepseek_v4.py)
    v4 = {**DEEPSEEK_V32, "compress_ratios": [0, 0, 4, 128], "o_lora_rank": 1024}
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, v4)
    assert err.value.key == "compress_ratios" and "does not price" in err.value.reason
    with pytest.raises(ScenarioError, match="index_n_heads"):  # half an indexer
        read(tmp_path, {k: v for k, v in DEEPSEEK_V32.items() if k != "index_n_heads"})


def _cores(kv: int, batch: int = 4):
    att = catalog.load_model("deepseek-v3.2").attention_kinds["mla"]
    dense = att.model_copy(update={"index_topk": None, "index_n_heads": None, "index_head_dim": None})
    lens = O.BatchLens.of(np.ones(batch), np.full(batch, kv))
    return att, O.AttentionKernel(att, "bf16", 8).core(lens), O.AttentionKernel(dense, "bf16", 8).core(lens), \
        O.IndexerKernel(att).core(lens)


def test_sparse_mla_reads_the_top_k_and_the_indexer_every_token():
    att, sparse, dense, indexer = _cores(kv=100_000)
    latent = (512 + 64) * 2
    index_key = 128 + 4  # FP8 key and one FP32 scale per 128 values
    assert O.kv_bytes_per_token(att, "bf16", 8) == latent + index_key
    assert sparse.kv_bytes == pytest.approx(4 * 2048 * (latent + index_key))  # each request its top 2048
    assert dense.kv_bytes == pytest.approx(4 * 100_001 * latent)
    assert sparse.flops == pytest.approx(dense.flops * 2048 / 100_001, rel=1e-6)
    assert indexer.flops == pytest.approx(2 * 4 * 100_001 * 64 * 128, rel=1e-6)
    assert indexer.kv_bytes == pytest.approx(4 * 100_001 * index_key)


def test_below_the_top_k_sparse_mla_is_dense_mla_plus_the_indexer():
    att, sparse, dense, _ = _cores(kv=1000)
    assert sparse.flops == pytest.approx(dense.flops)
    assert sparse.kv_bytes / dense.kv_bytes == pytest.approx(O.kv_bytes_per_token(att, "bf16", 8) / ((512 + 64) * 2))


def test_the_indexer_is_in_the_pass_and_says_who_priced_it():
    from mtpsim import scenario as sc
    from mtpsim.costs import build_pricer
    from mtpsim.designs import DesignShape, iteration_passes
    s = sc.validate({"name": "v32", "model": "deepseek-v3.2", "hardware": "h200", "parallel": {"tp": 8},
                     "speculative": {"design": "nextn", "steps": 1}, "acceptance": {"per_depth": [0.8]}})
    pricer = build_pricer(s)
    verify = [p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify"][0]
    cost = pricer.price(verify, np.full(8, 2), np.full(8, 50_000), keep_ops=True)
    rows = {op.name: t.source for op, t, _ in cost.ops}
    assert rows["attn.indexer"] == "roofline" and "attn.indexer_q" in rows


# openai/gpt-oss-120b (aiconfigurator-core 0.12.0's copy names no torch_dtype; MXFP4 experts)
GPT_OSS_120B = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "head_dim": 64, "hidden_size": 2880,
    "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "num_local_experts": 128, "sliding_window": 128, "tie_word_embeddings": False,
    "vocab_size": 201088, "quantization_config": {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                   "lm_head"], "quant_method": "mxfp4"}}
GPT_OSS_DTYPES = {"attention": "bf16", "dense_ffn": "bf16", "experts": "fp4", "mtp": "bf16", "lm_head": "bf16",
                  "kv_cache": "bf16"}


def test_gpt_oss_config_gives_the_catalog_entry(tmp_path, capsys):
    """The copy names no torch_dtype: transformers' default, float32, served in 16 bits (a warning;
    until 2026-12-07 model.dtypes was asked for). With its base dtype, the MXFP4 scheme gives the
    experts fp4 and leaves attention (and the router, embedding and LM head) as they are, as
    modules_to_not_convert says (the dtypes of parts it has none of, a dense FFN and MTP layers,
    are the scheme's: unpriced)."""
    from mtpsim import errors
    errors._warned.clear()  # the same warning of another test's s.yaml in this process would hide it
    entry = catalog.load_model("gpt-oss-120b")
    priced = ("attention", "experts", "lm_head", "kv_cache")
    for config in (GPT_OSS_120B, {**GPT_OSS_120B, "torch_dtype": "bfloat16"}):
        spec = read(tmp_path, config)
        assert shape(spec, skip=("dtypes",)) == shape(entry, skip=("dtypes",))
        assert {k: getattr(spec.dtypes, k) for k in priced} == {k: getattr(entry.dtypes, k) for k in priced}
    assert capsys.readouterr().err.count("gives no torch_dtype") == 1
    assert shape(read(tmp_path, GPT_OSS_120B, dtypes=GPT_OSS_DTYPES)) == shape(entry)


def test_gpt_oss_with_its_eagle3_head_prices_sliding_layers_capped_at_the_window():
    """The sliding layers read 128 cached tokens whatever the context; the full ones all of it."""
    from mtpsim import scenario as sc
    from mtpsim.costs import build_pricer
    from mtpsim.designs import DesignShape, iteration_passes
    s = sc.validate({"name": "oss", "model": "gpt-oss-120b", "hardware": "b200", "parallel": {"tp": 1},
                     "speculative": {"design": "nextn", "steps": 3, "draft": "eagle3-gpt-oss-120b"},
                     "acceptance": {"per_depth": [0.8, 0.7, 0.6]}})
    pricer = build_pricer(s)
    verify = [p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify"][0]
    cores = {}
    for kv in (4_000, 40_000):
        ops = pricer.price(verify, np.full(4, 4), np.full(4, kv), keep_ops=True).ops
        cores[kv] = [op.kv_bytes for op, _, _ in ops if op.family == "attention"]
    assert len(cores[4_000]) == 2  # one sliding, one full kind
    sliding, full = sorted(cores[4_000]), sorted(cores[40_000])
    assert sliding[0] == pytest.approx(full[0])  # the window's read does not grow
    assert full[1] == pytest.approx(sliding[1] * 40_004 / 4_004, rel=1e-3)
