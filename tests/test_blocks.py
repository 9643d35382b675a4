"""The block design (designs.py `block`, costs/blocks.py): one drafter forward per iteration,
its memory, the k = 1 equivalence with nextn, and its bad input."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.ops import BatchLens
from mtpsim.designs import DesignShape, iteration_passes
from mtpsim.memory import memory_budget, pool_rule
from mtpsim.sim import simulate
from tests.test_bad_input import one_line_error, run

# DeepSeek-V3's own MTP layer (mtpsim/data/models/deepseek-v3.yaml `mtp`) written as a block
# drafter of one layer that taps the last target layer: the drafter of the k = 1 equivalence
MTP_AS_BLOCK = {
    "name": "v3-mtp-as-block", "role": "block_draft", "backbone_hidden_size": 7168, "hidden_size": 7168,
    "vocab_size": 129280, "layers": [{"count": 1, "attention": "mla", "ffn": "moe"}],
    "attention_kinds": {"mla": {"kind": "mla", "num_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
                                "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}},
    "ffn_kinds": {"moe": {"kind": "moe", "num_experts": 256, "top_k": 8, "expert_intermediate_size": 2048,
                          "num_shared_experts": 1, "shared_intermediate_size": 2048}},
    "dtypes": {"attention": "fp8", "dense_ffn": "fp8", "experts": "fp8", "mtp": "fp8", "lm_head": "bf16",
               "kv_cache": "bf16"},
    "block": {"kind": "dflash", "block_size": 16, "target_layer_ids": [60]},
}


def scenario(design: str, concurrency: int, steps: int = 1, draft: dict | None = None, cost: str = "auto", **over):
    spec = {"design": design, "steps": steps}
    if design == "block":
        spec["draft"] = copy.deepcopy(draft or MTP_AS_BLOCK)
    data = {"name": "b", "model": "deepseek-v3", "hardware": "h200", "parallel": {"tp": 8}, "speculative": spec,
            "acceptance": {"per_depth": [0.8] * steps}, "cost": {"model": cost},
            "workload": {"arrival": "closed", "concurrency": concurrency, "num_requests": 4 * concurrency,
                         "input_len": 1024, "output_len": 256},
            # v0.5.14: block drafters' v2 worker overlaps host work as nextn's does (before it SGLang runs
            # DFLASH without the overlap scheduler: engine rule block_and_frozen_kv_workers_sync)
            "engine": {"version": "0.5.14", "max_running_requests": 256}, **over}
    return sc.validate(data)


def iteration_s(s, kv: int = 1500) -> float:
    """GPU seconds of one decode iteration of the scenario's design over its concurrency."""
    pricer, d = build_pricer(s), DesignShape.of(s.speculative)
    kvs = np.full(s.workload.concurrency, kv)
    return sum(pricer.price_lens(p, BatchLens.uniform(p.tokens_per_request, kvs, int(kvs.sum()), kv)).time_s
               for p in iteration_passes(d))


# ----------------------------------------------------------------------------- k = 1 is nextn S = 1

@pytest.mark.parametrize("cost", ["roofline", "calibrated"])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_block_at_k1_costs_nextn_s1_iteration(cost, batch):
    """Both iterations are one target verify over 2 tokens per request and one forward of the
    same MTP layer over 2 tokens per request fed the target's hidden states. They differ only in
    what a block drafter does differently: its fc reads 1 tapped layer (7168 -> 7168) where
    nextn's eh_proj reads hidden ++ embedding (14336 -> 7168); it projects the 2 injected context
    positions' K/V (7168 -> 576, replicated); it scores 1 logits row per request, not 2; its 2
    queries see each other (bidirectional) where nextn's are causal; and it runs before verify
    instead of after. None of these is 1% of an iteration a 61-layer verify dominates."""
    block, nextn = iteration_s(scenario("block", batch, cost=cost)), iteration_s(scenario("nextn", batch, cost=cost))
    assert block == pytest.approx(nextn, rel=0.01)
    assert block != nextn  # the differences above are priced, not assumed away


@pytest.mark.parametrize("batch", [1, 16])
def test_block_at_k1_simulates_nextn_s1_tps(batch):
    """The same, end to end: same acceptance, same seed. Prefill differs (a block drafter only
    projects the prompt's context K/V; nextn runs its layer over the prompt), a share of the
    run that 256 output tokens after 1024 prompt tokens keep small."""
    block, nextn = (simulate(scenario(d, batch)).summary["tps"].iloc[0] for d in ("block", "nextn"))
    assert block == pytest.approx(nextn, rel=0.01)


def test_block_is_one_draft_forward_whatever_k():
    for k in (1, 4, 15):
        passes = iteration_passes(DesignShape("block", k, 1, k + 1))
        assert [(p.kind, p.part) for p in passes] == [("draft", "block"), ("verify", "target")]
        assert passes[0].tokens_per_request == k + 1 and passes[0].logits_per_request == k
        assert passes[0].context_per_request == k + 1
    # one forward of 15 drafts costs far less than nextn's 14 chained draft passes + extend
    block = iteration_s(scenario("block", 1, steps=15))
    nextn = iteration_s(scenario("nextn", 1, steps=15))
    assert block < nextn


# ----------------------------------------------------------------------------- memory

def _budget(s):
    pricer = build_pricer(s)
    return pricer, memory_budget(pricer, DesignShape.of(s.speculative), pool_rule(s))


def test_block_weights_count_fc_and_layers_not_the_borrowed_head():
    s_block, s_nextn = scenario("block", 1), scenario("nextn", 1)
    pricer, block = _budget(s_block)
    _, nextn = _budget(s_nextn)
    # the same layer; block's fc (7168 x 7168 fp8) is half nextn's eh_proj (14336 x 7168 fp8);
    # neither counts the shared LM head; the context K/V projection reuses the layer's weights
    fc_bytes, eh_bytes = 7168 * 7168 * 1.0, 2 * 7168 * 7168 * 1.0
    assert block.draft_weight_bytes == pytest.approx(nextn.draft_weight_bytes - eh_bytes + fc_bytes, rel=1e-9)
    assert block.draft_kv_bytes_per_token == pytest.approx(nextn.draft_kv_bytes_per_token)


def test_refinement_head_adds_its_weights_and_a_rolling_window_caps_draft_kv():
    draft = copy.deepcopy(MTP_AS_BLOCK)
    draft["block"].update(kind="dspark", markov_rank=256, confidence_head=True)
    draft["attention_kinds"]["mla"]["window"] = 128
    _, refined = _budget(scenario("block", 1, steps=3, draft=draft))
    _, plain = _budget(scenario("block", 1, steps=3))
    markov = 256 * -(-129280 // 8) * 1.0  # rank x vocab shard, fp8 (dense_ffn dtype)
    confidence = (7168 + 256) * 1 * 1.0  # hidden ++ the Markov features -> 1
    assert refined.draft_weight_bytes - plain.draft_weight_bytes == pytest.approx(markov + confidence, rel=1e-9)
    assert plain.request_bytes(100_000) - refined.request_bytes(100_000) == pytest.approx(
        plain.draft_kv_bytes_per_token * (100_000 + plain.reserved_tokens - 128))


def test_refinement_head_costs_time():
    draft = copy.deepcopy(MTP_AS_BLOCK)
    draft["block"].update(kind="dspark", markov_rank=256, confidence_head=True)
    assert iteration_s(scenario("block", 8, steps=7, draft=draft)) > iteration_s(scenario("block", 8, steps=7))


# ----------------------------------------------------------------------------- bad input

BLOCK_BASE = """\
name: p
model: deepseek-v3
hardware: h200
parallel: {tp: 8}
speculative: {design: block, steps: 3, draft: drafter.yaml}
acceptance: {per_depth: [0.8, 0.7, 0.6]}
workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}
"""


def _drafter(**block) -> str:
    import yaml
    d = copy.deepcopy(MTP_AS_BLOCK)
    d["block"].update(block)
    return yaml.safe_dump(d)


@pytest.mark.parametrize("case, text, drafter, key, word", [
    ("block-beyond-trained", BLOCK_BASE.replace("steps: 3", "steps: 16").replace("[0.8, 0.7, 0.6]", "[" + "0.8, " * 15 + "0.8]"),
     _drafter(), "speculative.steps", "trained for block_size 16"),
    ("taps-missing-layers", BLOCK_BASE, _drafter(target_layer_ids=[1, 30, 61, 70]),
     "speculative.draft.block.target_layer_ids", "[61, 70]"),
    ("dspark-wrong-target", BLOCK_BASE, _drafter(kind="dspark", confidence_head=True, built_for="deepseek-v4-flash"),
     "speculative.draft", "built for 'deepseek-v4-flash'"),
    ("not-a-block-drafter", BLOCK_BASE.replace("drafter.yaml", "eagle3-llama-3.1-8b"), None,
     "speculative.draft", "not a block drafter"),
    ("serial-mtp-on-block-checkpoint",
     BLOCK_BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, mtp: null, block_draft: drafter.yaml}")
     .replace("design: block, steps: 3, draft: drafter.yaml", "design: nextn, steps: 3"),
     _drafter(kind="dspark"), "speculative.design", "serial MTP path"),
    ("no-block-drafter", BLOCK_BASE.replace(", draft: drafter.yaml", ""), None, "speculative.draft", "block_draft"),
])
def test_block_bad_input_is_one_line(tmp_path, capsys, case, text, drafter, key, word):
    files = {"drafter.yaml": drafter} if drafter else {}
    one_line_error(capsys, run(tmp_path, text, files), key, word)


def test_a_block_drafter_of_linear_attention_is_refused(tmp_path, capsys):
    import yaml
    d = copy.deepcopy(MTP_AS_BLOCK)
    d["attention_kinds"]["mla"] = {"kind": "linear", "num_heads": 8, "num_kv_heads": 4, "head_dim": 64,
                                   "value_head_dim": 64}
    one_line_error(capsys, run(tmp_path, BLOCK_BASE, {"drafter.yaml": yaml.safe_dump(d)}), "speculative.draft",
                   "gqa or mla")


def test_block_spec_needs_block_and_only_block_drafters_take_it(tmp_path, capsys):
    import yaml
    d = copy.deepcopy(MTP_AS_BLOCK)
    del d["block"]
    line = one_line_error(capsys, run(tmp_path, BLOCK_BASE, {"drafter.yaml": yaml.safe_dump(d)}), "", "needs `block`")
    assert "drafter.yaml: " in line  # the drafter's own file is at fault, not the scenario naming it


# ----------------------------------------------------------------------------- the catalog's drafters

def test_catalog_block_drafters_fit_the_targets_they_were_built_for():
    from mtpsim import catalog, catalog_lookup
    drafters = [catalog.load_model(n) for n in catalog_lookup.names("models")]
    drafters = [d for d in drafters if d.role == "block_draft"]
    assert {d.block.kind for d in drafters} == {"dflash", "dspark"}
    for d in drafters:
        target = catalog.load_model(d.block.built_for)
        s = sc.validate({"name": "c", "model": target.name, "hardware": "b200",
                         "speculative": {"design": "block", "steps": d.block.block_size - 1, "draft": d.name},
                         "acceptance": {"accept_length": 2.0},
                         "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
        assert s.specs.draft.name == d.name


def test_a_target_names_its_default_block_drafter():
    s = sc.validate({"name": "c", "model": "qwen3-8b", "hardware": "b200", "speculative": {"design": "block", "steps": 7},
                     "acceptance": {"accept_length": 3.0},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
    assert s.specs.draft.name == "dflash-qwen3-8b-b16"


# ----------------------------------------------------------------------------- hf_config

QWEN3_8B_CONFIG = {  # config.json of Qwen/Qwen3-8B (the fields the reader reads)
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128, "hidden_size": 4096,
    "intermediate_size": 12288, "max_position_embeddings": 40960, "num_attention_heads": 32,
    "num_hidden_layers": 36, "num_key_value_heads": 8, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vocab_size": 151936}


def _write_config(folder, data):
    import json
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder / "config.json")


def test_hf_configs_of_a_target_and_its_block_drafters_read_as_the_catalog_entries(tmp_path):
    """DeepSpec's drafter config is the target's with its fields replaced (build_draft_config);
    z-lab's carries dflash_config. Read, they are the catalog's entries but for name and sources."""
    from mtpsim import catalog
    from mtpsim.specs import ModelSpec

    def read(name, data, **over):
        raw = catalog.resolve("models", {"hf_config": _write_config(tmp_path / name, data), **over}, "t", "model")
        return ModelSpec.model_validate(raw)

    def same(a, b):
        keep = {"name", "max_context", "block_draft"}
        assert a.model_dump(exclude=keep) == b.model_dump(exclude=keep)

    same(read("qwen3-8b", QWEN3_8B_CONFIG), catalog.load_model("qwen3-8b"))
    deepspec = {**QWEN3_8B_CONFIG, "architectures": ["Qwen3DSparkModel"], "num_hidden_layers": 5, "block_size": 7,
                "num_target_layers": 36, "layer_types": ["full_attention"] * 5, "target_layer_ids": [1, 9, 17, 25, 33],
                "markov_rank": 256, "enable_confidence_head": True, "confidence_head_with_markov": True}
    same(read("dspark", deepspec, block={"built_for": "qwen3-8b"}), catalog.load_model("dspark-qwen3-8b-block7"))
    dflash = {**deepspec, "markov_rank": 0, "enable_confidence_head": False}
    same(read("dflash7", dflash, block={"built_for": "qwen3-8b"}), catalog.load_model("dflash-qwen3-8b-block7"))
    zlab = {k: v for k, v in QWEN3_8B_CONFIG.items() if k != "architectures"}
    zlab |= {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "block_size": 16, "num_target_layers": 36}
    same(read("zlab", zlab, block={"built_for": "qwen3-8b"}), catalog.load_model("dflash-qwen3-8b-b16"))  # default taps


QWEN3_30B_A3B_CONFIG = {  # config.json of Qwen/Qwen3-30B-A3B (Qwen3MoeForCausalLM): the key numbers
    "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960}


def test_qwen3_30b_a3b_entry_matches_its_config():
    """No hf_config reader covers qwen3_moe yet: the entry is checked against the config's numbers."""
    from mtpsim import catalog
    c, m = QWEN3_30B_A3B_CONFIG, catalog.load_model("qwen3-30b-a3b")
    assert (m.hidden_size, m.num_layers, m.vocab_size, m.max_context) == (
        c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["max_position_embeddings"])
    assert {(layer.attention, layer.ffn) for layer in m.expanded_layers} == {("gqa", "moe")}
    att, moe = m.attention_kinds["gqa"], m.ffn_kinds["moe"]
    assert (att.num_heads, att.num_kv_heads, att.head_dim) == (
        c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"])
    assert (moe.num_experts, moe.top_k, moe.expert_intermediate_size, moe.num_shared_experts) == (
        c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"], 0)
    assert m.mtp is None and m.block_draft == "dflash-qwen3-30b-a3b-b16"


def test_the_qwen3_30b_a3b_drafter_reads_as_a_zlab_config_of_its_target(tmp_path):
    """A z-lab DFlashDraftModel config at the target's widths (5 layers, block 16, 48 target layers)
    reads as the catalog entry: the default taps build_target_layer_ids(48, 5) = [1, 12, 23, 34, 45]."""
    from mtpsim import catalog
    from mtpsim.specs import ModelSpec
    c = QWEN3_30B_A3B_CONFIG
    zlab = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": c["hidden_size"],
            "intermediate_size": c["intermediate_size"], "num_attention_heads": c["num_attention_heads"],
            "num_key_value_heads": c["num_key_value_heads"], "head_dim": c["head_dim"],
            "vocab_size": c["vocab_size"], "max_position_embeddings": c["max_position_embeddings"],
            "tie_word_embeddings": False, "torch_dtype": "bfloat16", "num_hidden_layers": 5, "block_size": 16,
            "num_target_layers": c["num_hidden_layers"]}
    raw = catalog.resolve("models", {"hf_config": _write_config(tmp_path / "zlab30", zlab),
                                     "block": {"built_for": "qwen3-30b-a3b"}}, "t", "model")
    keep = {"name", "max_context", "block_draft"}
    entry = catalog.load_model("dflash-qwen3-30b-a3b-b16")
    assert ModelSpec.model_validate(raw).model_dump(exclude=keep) == entry.model_dump(exclude=keep)
    assert entry.block.target_layer_ids == [1, 12, 23, 34, 45]


# z-lab/gemma-4-31B-it-DFlash config.json (DFlashDraftModel on model_type qwen3), the fields the
# reader reads; the Hugging Face page was not reachable here: mtpsim/data/models/dflash-gemma-4-31b.yaml
# cites the copies it was read in
GEMMA_4_31B_DFLASH_CONFIG = {
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "attention_bias": False, "block_size": 16,
    "dflash_config": {"mask_token_id": 4, "target_layer_ids": [1, 12, 23, 35, 46, 57]}, "dtype": "bfloat16",
    "final_logit_softcapping": 30.0, "head_dim": 128, "hidden_size": 5376, "intermediate_size": 10752,
    "layer_types": ["sliding_attention"] * 4 + ["full_attention"], "max_position_embeddings": 262144,
    "num_attention_heads": 64, "num_hidden_layers": 5, "num_key_value_heads": 8, "num_target_layers": 60,
    "rms_norm_eps": 1e-06, "sliding_window": 2048, "tie_word_embeddings": True, "use_sliding_window": True,
    "vocab_size": 262144, "rope_theta": 1000000}


def test_the_gemma_4_31b_pair_loads_and_the_drafter_taps_layers_the_target_has():
    """z-lab's Gemma 4 31B drafter: 5 layers and 6 taps (the fc is 6 x 5376 wide), all inside the
    target's 60 layers; block 16 (15 drafts); the target names it as its block drafter."""
    from mtpsim import catalog
    target, draft = catalog.load_model("gemma-4-31b"), catalog.load_model("dflash-gemma-4-31b")
    assert target.num_layers == 60 and target.block_draft == draft.name and target.mtp is None
    assert draft.role == "block_draft" and draft.block.built_for == target.name and draft.num_layers == 5
    assert draft.block.block_size == 16 and len(draft.block.target_layer_ids) == 6
    assert all(0 <= t < target.num_layers for t in draft.block.target_layer_ids)
    assert (draft.hidden_size, draft.backbone_hidden_size, draft.vocab_size) == (
        target.hidden_size, target.hidden_size, target.vocab_size)
    s = sc.validate({"name": "g", "model": "gemma-4-31b", "hardware": "h100-sxm",
                     "speculative": {"design": "block", "steps": 15}, "acceptance": {"accept_length": 3.0},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
    assert s.specs.draft.name == "dflash-gemma-4-31b"


# z-lab/gemma-4-26B-A4B-it-DFlash config.json, likewise (cited in dflash-gemma-4-26b-a4b.yaml)
GEMMA_4_26B_DFLASH_CONFIG = {
    **GEMMA_4_31B_DFLASH_CONFIG, "hidden_size": 2816, "intermediate_size": 5632, "num_attention_heads": 32,
    "num_target_layers": 30, "tie_word_embeddings": False, "max_window_layers": 5, "hidden_act": "silu",
    "dflash_config": {"mask_token_id": 4, "target_layer_ids": [1, 6, 11, 17, 22, 27]}}


@pytest.mark.parametrize("entry, target, config", [
    ("dflash-gemma-4-31b", "gemma-4-31b", GEMMA_4_31B_DFLASH_CONFIG),
    ("dflash-gemma-4-26b-a4b", "gemma-4-26b-a4b", GEMMA_4_26B_DFLASH_CONFIG)])
def test_the_gemma_4_drafters_read_as_their_zlab_configs(tmp_path, entry, target, config):
    """Each config.json read by hf_config is the catalog entry but for name and max_context: 4
    sliding-window (2048) layers and 1 full, 6 taps from dflash_config, all in the target's layers."""
    from mtpsim import catalog
    from mtpsim.specs import ModelSpec
    raw = catalog.resolve("models", {"hf_config": _write_config(tmp_path / entry, config),
                                     "block": {"built_for": target}}, "t", "model")
    keep = {"name", "max_context", "block_draft"}
    drafter = catalog.load_model(entry)
    assert ModelSpec.model_validate(raw).model_dump(exclude=keep) == drafter.model_dump(exclude=keep)
    assert catalog.load_model(target).block_draft == entry
    assert max(drafter.block.target_layer_ids) < config["num_target_layers"] == catalog.load_model(target).num_layers
