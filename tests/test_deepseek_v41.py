"""DeepSeek-V4.1-Flash as a target: CSA2's compressed KV and indexers shared across layers (attention
modes full / reindex / reuse, costs/compressed.py), its FP4 latents, its Engram tables
(costs/engram.py) and its bundled DSpark drafter. The reader gives the catalog entry; the model
card's 890 bytes of KV per token and the checkpoint's per-layer parameter counts come out of the
specs; each mode prices what SGLang v0.5.23 runs; bad configs are one line naming the key."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.compressed import CompressedKernel, layer_kv, projections
from mtpsim.costs.engram import table_bytes_per_gpu
from mtpsim.costs.ops import BatchLens
from mtpsim.memory import part_kv
from mtpsim.specs import ModelSpec
from tests.test_bad_input import one_line_error, run

# the released config.json of DeepSeek-V4.1-Flash (revision dba1be0a40aa), the fields the reader
# reads; the sources are cited in mtpsim/data/models/deepseek-v4.1-flash.yaml
TEXT = {
    "model_type": "deepseek_v41_text", "vocab_size": 129280, "hidden_size": 5120, "num_hidden_layers": 40,
    "num_attention_heads": 64, "num_key_value_heads": 1, "head_dim": 512, "qk_rope_head_dim": 64, "q_lora_rank": 1280,
    "o_lora_rank": 1024, "o_groups": 8, "max_position_embeddings": 1048576, "n_routed_experts": 384,
    "n_shared_experts": 1, "num_experts_per_tok": 6, "moe_intermediate_size": 2304, "sliding_window": 128,
    "compress_ratios": [0, 0] + [2] * 18 + [1] * 20 + [0, 0, 0], "kv_source_layer_ids": [2, 8, 14, 20],
    "index_source_layer_ids": [2, 8, 14, 20, 24, 28, 32, 36], "index_n_heads": 32, "index_head_dim": 128,
    "index_topk": 512, "candidate_source_layer_id": 20, "candidate_topk_blocks": 2048, "candidate_block_size": 8,
    "hc_mult": 4, "hc_sinkhorn_iters": 20, "engram_layer_ids": [1, 14], "engram_num_embeddings": [384006168, 384016682],
    "engram_max_ngram_size": 4, "engram_vocab_size": 16000000, "engram_n_heads": 8, "engram_head_dim": 256,
    "num_nextn_predict_layers": 3, "dspark_block_size": 5, "dspark_noise_token_id": 128799,
    "dspark_target_layer_ids": [37, 38, 39], "dspark_markov_rank": 256, "dspark_n_routed_experts": 128,
    "dspark_num_experts_per_tok": 3, "tie_word_embeddings": False}
CONFIG = {"architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41", "dtype": "bfloat16",
          "quantization_config": {"quant_method": "fp8", "weight_block_size": [32, 32], "scale_fmt": "ue8m0",
                                  "expert_dtype": "fp4"},
          "text_config": TEXT, "vision_config": {"model_type": "deepseek_v41_vision", "num_hidden_layers": 32}}
MODEL = "deepseek-v4.1-flash"


def _config(text: dict | None = None, **top) -> dict:
    return {**CONFIG, **top, "text_config": text if text is not None else TEXT}


def _read(tmp_path, config: dict) -> dict:
    folder = tmp_path / "DeepSeek-V4.1-Flash"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return catalog.resolve("models", {"hf_config": str(folder / "config.json")}, "t", "model")


def _scenario(hardware: str = "b200", design: str = "none", concurrency: int = 1) -> sc.Scenario:
    return sc.validate({"name": "m", "model": MODEL, "hardware": hardware, "parallel": {"tp": 8},
                        "speculative": {"design": design, **({"steps": 5} if design == "block" else {})},
                        **({"acceptance": {"accept_length": 3.2}} if design != "none" else {}),
                        "workload": {"concurrency": concurrency, "num_requests": concurrency, "input_len": 1024,
                                     "output_len": 8}})


def _cost_warnings(tmp_path, capsys, about: str, model: str = MODEL, hardware: str = "b200", engine: str = "{}",
                   tp: int = 8) -> list[str]:
    """The warning lines naming `about` that `mtpsim cost` prints for a small plain-decoding scenario."""
    from mtpsim.cli import main
    path = tmp_path / "w.yaml"
    path.write_text(f"name: m\nmodel: {model}\nhardware: {hardware}\nparallel: {{tp: {tp}}}\nengine: {engine}\n"
                    "speculative: {design: none}\nworkload: {concurrency: 1, num_requests: 1, input_len: 64, "
                    "output_len: 4}\n")
    assert main(["cost", str(path)]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if about in line]


def _decode_ops(s: sc.Scenario, batch: int = 4, kv: int = 1024) -> tuple[list, object]:
    """(the (op, time, count) rows of one decode pass of `s`'s first design over `batch` requests of
    `kv` cached tokens, its pricer)."""
    from mtpsim.designs import DesignShape, iteration_passes
    pricer = build_pricer(s)
    shape = iteration_passes(DesignShape.of(s.speculative))[0]
    return pricer.price_lens(shape, BatchLens.uniform(1, np.full(batch, kv), batch * kv, kv), keep_ops=True).ops, pricer


def test_released_config_reads_as_the_catalog_entry(tmp_path):
    read = ModelSpec.model_validate(_read(tmp_path, _config()))
    agreeing = ModelSpec.model_validate(_read(tmp_path, _config({**TEXT, "expert_dtype": "mxfp4"})))
    assert agreeing.dtypes == read.dtypes  # the format said twice, the same way, is read once
    assert read.model_dump(exclude={"name"}) == catalog.load_model(MODEL).model_dump(exclude={"name"})
    assert read.block_draft == "dspark-deepseek-v4.1-flash" and read.mtp is None  # a DSpark-bundled checkpoint
    modes = [read.attention_kinds[layer.attention].compressed for layer in read.expanded_layers]
    assert [i for i, c in enumerate(modes) if c.owns_entries] == [2, 8, 14, 20]
    assert [i for i, c in enumerate(modes) if c.mode == "reindex"] == [24, 28, 32, 36]
    assert sum(c.mode == "reuse" for c in modes) == 30 and sum(c.ratio == 0 for c in modes) == 2
    assert [i for i, layer in enumerate(read.expanded_layers) if layer.engram] == [1, 14]
    assert {f.routing for f in read.ffn_kinds.values()} == {"topk"}  # V4.1 routes no layer by hash


def test_kv_is_the_model_cards_890_bytes_per_token_on_blackwell_and_fp8_before():
    """Four layers own compressed latents (2, 8, 14 at ratio 2; 20 at ratio 1): E2M1 + E4M3 per 16
    is 288 B an entry, the E2M1 + E8M0 per 32 index key 68 B; the other 34 compressed layers keep
    none. On Hopper the cache is FP8 (the V4 layout), which is said once."""
    for hardware, per_token in (("b200", 890.0), ("h200", 3 * (576 + 132) / 2 + (576 + 132))):
        pricer = build_pricer(_scenario(hardware))
        layers = part_kv(pricer.deployment, "target")
        assert sum(x.bytes_per_token for x in layers) == pytest.approx(per_token)
        assert sum(x.bytes_per_token > 0 for x in layers) == 4
    model = catalog.load_model(MODEL)
    assert layer_kv(model.attention_kinds["c1_reuse"], "fp4") == (0.0, 128 * 576)  # its own window ring only
    assert layer_kv(model.attention_kinds["c1"], "fp4") == (288 + 68, 128 * 576)    # ratio 1 pools no state
    assert layer_kv(model.attention_kinds["c2"], "fp4") == ((288 + 68) / 2, 128 * 576 + 2 * 2 * 512 * 4)


def test_fp4_kv_on_hopper_is_one_warning(tmp_path, capsys):
    err = _cost_warnings(tmp_path, capsys, "FP4 KV", hardware="h200")
    assert len(err) == 1 and "model:" in err[0] and "priced and sized as FP8" in err[0]


def test_per_layer_weights_match_the_checkpoints_parameter_counts():
    """At tp 1 and one byte a parameter: the attention of every layer 126,615,552 (wq_a, wq_b, wkv,
    wo_a, wo_b), a ratio-2 owner's compressor 2 x 512 x 5120 and a ratio-1 owner's 512 x 5120 (BF16),
    an indexer 1280 x 4096 + 5120 x 32 (its wq_b, weights_proj), an Engram wkv 6144 x 25600: the
    counts a read of the checkpoint's tensor headers gives (sources in the catalog entry)."""
    model = catalog.load_model(MODEL)

    def weights(kind: str) -> dict:
        ops = projections(model.attention_kinds[kind], 5120, 1, "fp8", 1)
        return {op.name: op.weight_bytes for op in ops if op.name.startswith("attn.")}
    base = {"attn.wqkv_a", "attn.wq_b", "attn.wo_a", "attn.wo_b"}
    reuse, c2, c1, reindex = (weights(k) for k in ("c2_reuse", "c2", "c1", "c1_reindex"))
    assert set(reuse) == base and sum(reuse.values()) == 126_615_552
    assert c2["attn.compressor"] == 2 * 2 * 512 * 5120 and c1["attn.compressor"] == 2 * 512 * 5120  # BF16 bytes
    assert set(reindex) == base | {"attn.indexer_q", "attn.indexer_weights"}  # no compressor, no keys of its own
    assert reindex["attn.indexer_q"] + reindex["attn.indexer_weights"] / 2 == 1280 * 4096 + 5120 * 32
    assert c1["attn.indexer_wk"] == 2 * 512 * 128
    assert model.engram.columns * model.engram.head_dim * 5 * 5120 == 157_286_400
    assert model.engram.table_bytes == pytest.approx((384006168 + 384016682) * 256 * (1 + 1 / 32))  # 202.76 GB
    assert table_bytes_per_gpu(model.engram, 8) == pytest.approx(model.engram.table_bytes / 8)


def _core(kind: str, context: int, kv_dtype: str = "fp4"):
    att = catalog.load_model(MODEL).attention_kinds[kind]
    return CompressedKernel(att, kv_dtype, 8).core(BatchLens.of(np.array([1]), np.array([context])))


@pytest.mark.parametrize("context", [4096, 100_000, 1_000_000])
def test_each_mode_scores_its_scope_and_reads_the_chosen_entries(context):
    """A full layer's indexer scans every entry, a reindex layer's only the 16,384 candidate
    positions, a reuse layer runs none; all three attend the window and the same top 512."""
    seen = context + 1
    full, reindex, reuse = (_core(k, context) for k in ("c1", "c1_reindex", "c1_reuse"))
    index = 32 * 128 * 2.0
    attention = 4.0 * (min(seen, 128) + min(seen, 512)) * 8 * 512  # 64 heads over tp 8
    assert reuse.flops == pytest.approx(attention)
    assert full.flops == pytest.approx(attention + index * seen)
    assert reindex.flops == pytest.approx(attention + index * min(seen, 2048 * 8))
    window, chosen = min(seen, 128) * 576, min(seen, 512) * 288
    assert reuse.kv_bytes == pytest.approx(window + chosen)
    assert reindex.kv_bytes == pytest.approx(window + chosen + min(seen, 16384) * 68)


def test_engram_layers_run_their_lookup_and_reuse_layers_run_no_compressor():
    counts = {}
    for op, _, n in _decode_ops(_scenario())[0]:
        counts[op.name] = counts.get(op.name, 0) + n
    assert counts["engram.wkv"] == counts["engram.gate"] == counts["comm.engram_allreduce"] == 2
    assert counts["attn.compressor"] == 4 and counts["attn.indexer_q"] == 8 and counts["attn.indexer_wk"] == 4
    assert counts["attn.wqkv_a"] == 40


def test_dspark_design_runs_with_the_bundled_drafter_and_v4_drafters_are_refused(tmp_path, capsys):
    s = _scenario(design="block", concurrency=4)
    assert s.specs.draft.name == "dspark-deepseek-v4.1-flash"
    text = (f"name: m\nmodel: {MODEL}\nhardware: b200\nparallel: {{tp: 8}}\n"
            "speculative: {design: block, steps: 5, draft: dspark-deepseek-v4-flash}\nacceptance: {accept_length: 3}\n"
            "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    one_line_error(capsys, run(tmp_path, text), "speculative.draft", "built for")


def _layers(swap: bool = False, engram: bool = True) -> list[dict]:
    """The catalog's layer groups; `swap`: the first reuse run before the layer that writes its
    entries; `engram`: keep the Engram flags."""
    groups = [g.model_dump(exclude_defaults=True) for g in catalog.load_model(MODEL).layers]
    if swap:
        groups[2], groups[3] = groups[3], groups[2]
    return [{k: v for k, v in g.items() if engram or k != "engram"} for g in groups]


@pytest.mark.parametrize("override,key,word", [
    ({"layers": _layers(swap=True)}, "model.layers.2.attention", "no earlier layer writes them"),
    ({"engram": {"rows": [10], "n_heads": 8, "max_ngram_size": 4, "head_dim": 256}}, "model.engram.rows",
     "2 layers carry"),
    ({"layers": _layers(engram=False)}, "model.engram.rows", "0 layers carry"),
], ids=["reuse-before-any-writer", "one-table-per-engram-layer", "tables-without-engram-layers"])
def test_catalog_specs_that_share_what_no_layer_keeps_are_one_line(tmp_path, capsys, override, key, word):
    model = json.dumps({"from": MODEL, **override})
    text = (f"name: m\nmodel: {model}\nhardware: b200\nparallel: {{tp: 8}}\nspeculative: {{design: none}}\n"
            "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    one_line_error(capsys, run(tmp_path, text), key, word)


@pytest.mark.parametrize("reason,compressed", [
    ("runs no indexer", {"mode": "reuse", "index_topk": 512, "index_n_heads": 32, "index_head_dim": 128}),
    ("mode: reindex", {"mode": "full", "candidate_pool": 16384}),
    ("needs ratio > 0", {"ratio": 0, "mode": "reuse"}),
    ("an indexer of its own", {"mode": "reindex", "index_topk": 512}),
    ("smaller than the index_topk", {"mode": "reindex", "index_topk": 512, "index_n_heads": 32, "index_head_dim": 128,
                                     "candidate_pool": 64}),
])
def test_compressed_modes_refuse_fields_they_do_not_take(reason, compressed):
    from mtpsim.specs import CompressedAttention
    base = {"ratio": 2, "window": 128, "o_groups": 8, "o_lora_rank": 1024}
    with pytest.raises(ValueError, match=reason):
        CompressedAttention.model_validate({**base, **compressed})


BAD = [  # (id, text_config changes, key, word)
    ("kv-source-on-a-window-layer", {"kv_source_layer_ids": [0, 8, 14, 20]}, "text_config.kv_source_layer_ids.0", "ratio 0"),
    ("no-kv-sources", {"kv_source_layer_ids": None}, "text_config.kv_source_layer_ids", "give them"),
    ("index-source-past-the-trunk", {"index_source_layer_ids": [2, 99]}, "text_config.index_source_layer_ids.1", "not a layer"),
    ("candidate-source-not-an-indexer", {"candidate_source_layer_id": 21}, "text_config.candidate_source_layer_id",
     "not an index source"),
    ("engram-layer-past-the-trunk", {"engram_layer_ids": [1, 40]}, "text_config.engram_layer_ids.1", "not a layer"),
    ("engram-rows-short", {"engram_num_embeddings": [384006168]}, "text_config.engram_num_embeddings", "at least 2"),
    ("engram-twice", {"engram_layer_ids": [14, 14]}, "text_config.engram_layer_ids.1", "named twice"),
    ("ratio-3", {"compress_ratios": [0, 0, 3] + [2] * 17 + [1] * 20}, "text_config.compress_ratios.2", "not one of"),
    ("reuse-before-any-source", {"kv_source_layer_ids": [8, 14, 20]}, "text_config.kv_source_layer_ids",
     "none comes before it"),
    ("pool-under-top-k", {"candidate_topk_blocks": 8}, "text_config.candidate_topk_blocks", "fewer than"),
    # the experts' format given twice, two ways (quantization_config says fp4)
    ("expert-dtype-twice-and-apart", {"expert_dtype": "fp8"}, "text_config.expert_dtype", "one format"),
]


@pytest.mark.parametrize("case,changes,key,word", BAD, ids=[b[0] for b in BAD])
def test_v41_bad_config_is_one_line(tmp_path, capsys, case, changes, key, word):
    text = {k: v for k, v in {**TEXT, **changes}.items() if v is not None}
    files = {"ckpt/config.json": json.dumps(_config(text))}
    scenario = ("name: m\nmodel: {hf_config: ckpt/config.json, name: v41}\nhardware: b200\nparallel: {tp: 8}\n"
                "speculative: {design: none}\nworkload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    line = one_line_error(capsys, run(tmp_path, scenario, files), key, word)
    assert "config.json" in line or "s.yaml" in line


# ----------------------------------------------------------------------------- prefill's replay tail

def _prefill(prompt: int, replay: bool | None = None, engine: str = "sglang", model: str = MODEL, requests: int = 1):
    """(seconds, ops) of one prefill pass of `requests` prompts of `prompt` tokens each."""
    from mtpsim.designs import PassShape
    s = sc.validate({"name": "m", "model": model, "hardware": "b200", "parallel": {"tp": 8},
                     "engine": {"kind": engine, **({"bounded_replay": replay} if replay is not None else {})},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": prompt, "output_len": 4}})
    pricer = build_pricer(s)
    shape = PassShape("prefill", "target", 0, 1)
    cost = pricer.price(shape, np.full(requests, prompt), np.zeros(requests, int), keep_ops=True)
    return cost.time_s, cost.ops


def test_replay_tail_is_v41s_decoder_from_its_last_kv_source():
    assert catalog.load_model(MODEL).replay_tail == (20, 128)
    assert catalog.load_model("deepseek-v4-flash").replay_tail is None  # V4 shares nothing across layers
    pricer = build_pricer(_scenario())
    part = pricer.deployment.part("target")
    assert sum(n for n, _ in part.tail) == 20 and part.tail_source.attention == "c1"
    assert pricer.deployment.host.engine.prefill_tail_replay  # SGLang's default
    assert not build_pricer(sc.validate({**_scenario().model_dump(exclude_unset=True), "engine": {"kind": "vllm"}}
                                        )).deployment.host.engine.prefill_tail_replay


@pytest.mark.parametrize("prompt", [64, 128])
def test_a_prompt_within_the_window_costs_the_same_with_the_replay(prompt):
    """The tail runs over each prompt's last 128 tokens: a prompt that short runs every layer whole."""
    assert _prefill(prompt, True)[0] == pytest.approx(_prefill(prompt, False)[0], rel=1e-12)


def test_a_long_prompt_runs_the_decoder_over_its_last_128_tokens():
    on, ops_on = _prefill(4096, True)
    off, _ = _prefill(4096, False)
    assert on < 0.8 * off  # 20 of 40 layers over 128 of 4,096 tokens
    cores = [op for op, _, n in ops_on if op.name == "attn.compressed_core"]
    assert sorted({op.shape["q"] for op in cores}) == [128.0, 4096.0]  # the tail's queries, the others'
    late = [op for op, _, n in ops_on if op.name == "attn.compressed_core" and op.shape["q"] == 128.0]
    assert all(op.shape["kv_tokens"] == 4096.0 for op in late)  # it attends the whole prompt before it
    rows = {}
    for op, _, n in ops_on:
        if op.name == "attn.compressor":
            rows[op.shape["m"]] = rows.get(op.shape["m"], 0) + n
    # the three ratio-2 sources over every token; layer 20 over its tail and, for the rest, the other rows
    assert rows == {4096: 3, 128: 1, 4096 - 128: 1}
    vllm = _prefill(4096, engine="vllm")[0]  # vLLM: no replay here unless the scenario asks
    assert vllm == pytest.approx(_prefill(4096, False, engine="vllm")[0], rel=1e-12)
    assert vllm > _prefill(4096, True, engine="vllm")[0]


def test_the_tail_cuts_each_request_and_not_the_batch():
    """Four prompts of 1,024 tokens: the tail runs 4 x 128 tokens, not 128."""
    _, ops = _prefill(1024, True, requests=4)
    m = {op.shape.get("m") for op, _, n in ops if op.name == "moe.router"}
    assert m == {4 * 1024, 4 * 128}


def test_the_tail_runs_each_prompts_own_last_128_tokens():
    """Prompts of 4,096 and 10 tokens: the tail runs 128 + 10 rows, not 2 x 128 (SGLang cuts each
    request's extend to its own last SWA_WINDOW tokens)."""
    from mtpsim.designs import PassShape
    pricer = build_pricer(_scenario())
    cost = pricer.price(PassShape("prefill", "target", 0, 1), np.array([4096, 10]), np.zeros(2, int), keep_ops=True)
    assert {op.shape.get("m") for op, _, n in cost.ops if op.name == "moe.router"} == {4106, 138}


def test_bounded_replay_on_a_model_without_a_tail_is_one_warning(tmp_path, capsys):
    err = _cost_warnings(tmp_path, capsys, "bounded_replay", model="deepseek-v4-flash", engine="{bounded_replay: false}")
    assert len(err) == 1 and "changes nothing" in err[0]


# ----------------------------------------------------------------------------- Engram tables in host memory

def _host_scenario(tables: str, hardware: str | dict = "b200") -> sc.Scenario:
    return sc.validate({"name": "m", "model": MODEL, "hardware": hardware, "parallel": {"tp": 4},
                        "engine": {"engram_tables": tables}, "speculative": {"design": "none"},
                        "workload": {"concurrency": 4, "num_requests": 4, "input_len": 1024, "output_len": 8}})


def _engram_rows(tables: str) -> dict:
    ops, pricer = _decode_ops(_host_scenario(tables))
    return {op.name: (op, t) for op, t, _ in ops if "engram" in op.name}, pricer


@pytest.mark.parametrize("tables", ["gpu", "host", "host_per_rank"])
def test_host_tables_leave_gpu_memory_and_cross_the_host_link(tables):
    """On the GPUs the tables are 202.8 GB over tp 4 of each GPU's weights; in host memory none.
    A shared host copy is read whole for each GPU's own tokens, with no all-reduce; per-rank host
    shards are read a quarter at a time and all-reduced, as the GPU shards are."""
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule
    rows, pricer = _engram_rows(tables)
    s = _host_scenario(tables)
    budget = memory_budget(pricer, DesignShape.of(s.speculative), pool_rule(s))
    gpu = memory_budget(build_pricer(_host_scenario("gpu")), DesignShape.of(s.speculative), pool_rule(s))
    table = catalog.load_model(MODEL).engram.table_bytes / 4
    assert gpu.target_weight_bytes - budget.target_weight_bytes == pytest.approx(0 if tables == "gpu" else table)
    per_token = 24 * 256 * (1 + 1 / 32)  # the rows one token gathers per Engram layer
    if tables == "gpu":
        assert set(rows) == {"engram.gather", "comm.engram_allreduce", "engram.wkv", "engram.gate"}
        return
    op, t = rows["engram.host_gather"]
    share = 1 if tables == "host" else 1 / 4
    assert op.family == "host_copy" and op.comm_bytes == pytest.approx(4 * per_token * share)
    assert t.comm_s == pytest.approx(op.comm_bytes / 64e9)  # B200's PCIe Gen5 x16, one way
    assert ("comm.engram_allreduce" in rows) == (tables == "host_per_rank")


def test_host_tables_need_a_host_link_and_a_model_with_tables(tmp_path, capsys):
    text = (f"name: m\nmodel: {MODEL}\nhardware: {{from: b200, host_link_bandwidth_bytes_per_s: null}}\n"
            "parallel: {tp: 4}\nengine: {engram_tables: host}\nspeculative: {design: none}\n"
            "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    one_line_error(capsys, run(tmp_path, text), "engine.engram_tables", "host_link_bandwidth_bytes_per_s")
    err = _cost_warnings(tmp_path, capsys, "engram_tables", model="deepseek-v4-flash",
                         engine="{engram_tables: host_per_rank}", tp=4)
    assert len(err) == 1 and "no Engram tables" in err[0]


def test_two_b200s_hold_v41_only_with_its_tables_in_host_memory(tmp_path, capsys):
    """The scenario's premise (scenarios/deepseek-v4.1-flash-engram-host.yaml): at tp 2 the tables
    on the GPUs leave no KV pool, and the engine would refuse to start."""
    text = (f"name: m\nmodel: {MODEL}\nhardware: b200\nparallel: {{tp: 2}}\nengine: {{engram_tables: gpu}}\n"
            "speculative: {design: none}\nworkload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    one_line_error(capsys, run(tmp_path, text), "parallel.tp", "engine.engram_tables: host")
    assert _host_scenario("host_per_rank").specs.model.engram is not None
