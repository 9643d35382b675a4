"""Catalog entries added from public copies of their configs (llama-3.3-70b, llama-3.1-70b,
qwen3-235b-a22b, qwen3-32b, deepseek-r1-distill-llama-8b and the EAGLE-3 drafts): each weighs what its model card says, the
released config.json read through `hf_config` gives the entry, and each draft pairs with its
target in a nextn scenario."""
from __future__ import annotations

import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.memory import memory_budget, pool_rule
from tests.test_hfconfig import read, shape


def _budget(model: str, draft: str | None = None):
    spec = {"design": "nextn", "steps": 3, "draft": draft} if draft else {"design": "none"}
    s = sc.validate({"name": "w", "model": model, "hardware": "h200", "parallel": {"tp": 1}, "speculative": spec,
                     "acceptance": {"per_depth": [0.8, 0.7, 0.6]} if draft else {}})
    return memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s))


# (entry, parameters the model card gives, in billions): each card's "Number of Parameters" or
# the size it names the model by
CARDS = [
    ("llama-3.3-70b", 70.0),      # meta-llama/Llama-3.3-70B-Instruct model card: 70B
    ("llama-3.1-70b", 70.0),      # meta-llama/Llama-3.1-70B model card: 70B
    ("qwen3-235b-a22b", 235.0),   # Qwen/Qwen3-235B-A22B model card: 235B in total, 22B activated
    ("qwen3-32b", 32.8),          # Qwen/Qwen3-32B model card: 32.8B (31.2B non-embedding)
    ("deepseek-r1-distill-llama-8b", 8.0),  # deepseek-ai/DeepSeek-R1 model card's distill table: 8B
]


@pytest.mark.parametrize("name, card_b", CARDS)
def test_the_entry_weighs_what_its_card_says(name, card_b):
    params_b = _budget(name).target_weight_bytes / 2 / 1e9  # BF16: 2 bytes a parameter, embedding included
    assert params_b == pytest.approx(card_b, rel=0.02)


@pytest.mark.parametrize("draft, target, params_b", [
    ("eagle3-llama-3.3-70b-specforge", "llama-3.3-70b", 1.40),      # the sums in each entry's comment
    ("eagle3-qwen3-235b-a22b-specforge", "qwen3-235b-a22b", 0.59),
    ("eagle3-qwen3-32b-specforge", "qwen3-32b", 0.73),
    ("eagle3-qwen3-30b-a3b-specforge", "qwen3-30b-a3b", 0.18),
    ("eagle3-qwen3-next-80b-a3b-specforge", "qwen3-next-80b-a3b", 0.21),
])
def test_each_draft_pairs_with_its_target(draft, target, params_b):
    d, t = catalog.load_model(draft), catalog.load_model(target)
    assert d.role == "draft" and d.backbone_hidden_size == t.hidden_size and d.vocab_size == t.vocab_size
    assert d.max_context == t.max_context
    assert _budget(target, draft).draft_weight_bytes / 2 / 1e9 == pytest.approx(params_b, abs=0.01)


# meta-llama/Llama-3.1-70B's config.json as aiconfigurator-core vendors it
# (model_configs/meta-llama--Meta-Llama-3.1-70B_config.json), trimmed as tests/test_hfconfig.py trims
LLAMA_31_70B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
    "max_position_embeddings": 131072, "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256}
# Qwen/Qwen3-32B's (model_configs/Qwen--Qwen3-32B_config.json), trimmed the same way
QWEN3_32B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128, "hidden_size": 5120,
    "intermediate_size": 25600, "max_position_embeddings": 40960, "num_attention_heads": 64, "num_hidden_layers": 64,
    "num_key_value_heads": 8, "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_sliding_window": False, "vocab_size": 151936}


@pytest.mark.parametrize("name, config", [
    ("llama-3.1-70b", LLAMA_31_70B),
    ("llama-3.3-70b", LLAMA_31_70B),  # the same architecture and sizes (its entry's sources)
    ("qwen3-32b", QWEN3_32B),
])
def test_the_released_config_gives_the_catalog_entry(tmp_path, name, config):
    assert shape(read(tmp_path, config)) == shape(catalog.load_model(name))


def test_the_r1_distill_is_llama_3_1_8b_in_shape():
    """deepseek-r1-distill-llama-8b's sources give Llama-3.1-8B's sizes: the two entries price alike."""
    assert shape(catalog.load_model("deepseek-r1-distill-llama-8b")) == shape(catalog.load_model("llama-3.1-8b"))
