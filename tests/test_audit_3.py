"""Mutation audit 3: the DeepSeek-V4.1 code of d5a843d..0335b72 (CSA2 modes, FP4 latents, Engram
tables on GPU or host, the prefill replay tail, their specs, checks and config reader).

139 hand-made semantic mutations (a comparison flipped, a term dropped, min/max swapped, a constant
changed, a condition removed, a mode swapped), each run alone against test_deepseek_v41.py,
test_deepseek_v4.py, test_bad_input_16.py and test_models_2026.py (plus test_bad_input_8.py for the
reader), then reverted:
- costs/compressed.py: 34 (8 survived);
- costs/engram.py and EngramSpec's columns/row_bytes: 17 (10 survived);
- costs/passes.py's replay tail and deployment.py's _with_tail: 24 (9 survived);
- specs.py (_engram_layers, _shared_compressed, replay_tail) and layer_specs.py
  (CompressedAttention._indexer, owns_entries / runs_indexer / csa2): 31 (16 survived);
- hardware_spec.stored_kv, roofline's host_copy branch, checks._check_host_link,
  hfconfig/deepseek_v4.py (_csa2_modes, _engram, _hash_layers' default, finish's fp4): 25 (9 survived);
- a second round (deployment.kv_dtype, _layer's Engram call and its nodes/tables, the reader's group
  merge, EngramSpec's table_bytes / max_ngram_size bound, _whole's engram key): 8 (2 survived).

The tests below kill every survivor that a user could see (each names its mutation ids):
C1 an fp4 cache packed V4's ratio-4/128 entries; C8 a reuse layer's index keys from index_topk;
C17 a ratio-2 reuse/reindex layer kept a compressor state; C22 indexer wk per token, not per entry;
C27 a reuse core moved state rows; E2/E3/E5/E6/E8/E14/E15 the Engram lookup's bytes and all-reduce
under DP attention (only tokens == group_tokens was tested); E9-E11 wkv's and the gate's sizes;
P1 a verify pass replaying the tail; P6/P8 zero-count rows in a replayed prefill's ops; P9 a kind
both before and in the tail (V4.1's own kinds are never split); P12 the source's extra wk rows;
P14/P15 Engram under DP attention and hc_mult; P16 the tail's core counts; S1/S3/S4 Engram flags on
an MTP layer, a drafter, a model without tables; S5 a reindex layer before any writer; S6 (stricter
reuse check); S12-S16 each condition of replay_tail; L3 heads without index_topk; L4 index_topk at
ratio 0; H3/H4 stored_kv for BF16 on Hopper and for GPUs without a compute capability; K1/K2 the
host-link check for host_per_rank and for models without tables; F2 V4.1 recognised by its sharing
keys; F4/F13 reindex layers before the candidate source (and their distinct kinds); F5 reuse after a
source that is no indexer; F9 engram rows given out of layer order; X3 the Engram all-reduce's nodes;
X7 max_ngram_size 1.

Equivalent survivors (no observable change, no test): C13 state_per_token's `if r` -> `if r > 1`
(state_bytes is 0 at ratio 1); C15 layer_kv's keys without `if runs_indexer` (index_entry_bytes is 0
then); C34 runs_indexer spelled as index_topk and index_n_heads given (the validator ties them);
P19 _last_tokens without its window-0 guard (only called with a tail's window); S7 / S8 the owners' /
indexers' sets grown by any layer of the ratio (a non-owner, or a reuse layer with index_topk, is only
reached once its ratio is already in the set); S19 ratio-0 layers walked by _shared_compressed (mode
full, no indexer: nothing to check or add); L12 csa2 true at ratio 0 (no entries, no indexer there).
No mutation revealed a bug in the code."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.compressed import entry_bytes, index_entry_bytes, layer_kv, projections
from mtpsim.costs.engram import engram_ops
from mtpsim.specs import ModelSpec
from tests.test_bad_input import one_line_error, run
from tests.test_deepseek_v41 import MODEL, TEXT, _config, _core, _cost_warnings, _decode_ops, _read

# ----------------------------------------------------------------------------- compressed.py

def test_fp4_cache_packs_only_csa2_latents_and_v4_layers_keep_the_fp8_layout():
    """C1: an fp4 cache packs V4.1's ratio-1/2 latents only; a V4 ratio-4 or ratio-128 layer (its
    index keys too) keeps the FP8 layout it has under an fp8 cache."""
    v4 = catalog.load_model("deepseek-v4-flash").attention_kinds
    for kind in ("csa", "hca"):
        assert entry_bytes(v4[kind], "fp4") == entry_bytes(v4[kind], "fp8") == 448 + 64 * 2
        assert layer_kv(v4[kind], "fp4") == layer_kv(v4[kind], "fp8")
    assert index_entry_bytes(v4["csa"], "fp4") == 128 + 4


def test_layers_that_share_entries_keep_no_state_and_no_keys():
    """C8, C17: a ratio-2 reuse or reindex layer writes no entries, so it keeps no compressor state
    (ratio 2 pools one); a reuse layer has no index keys of its own."""
    kinds = catalog.load_model(MODEL).attention_kinds
    assert layer_kv(kinds["c2_reuse"], "fp4") == (0.0, 128 * 576)
    reindex = [k for k, a in kinds.items() if a.compressed.ratio == 2 and a.compressed.mode == "reindex"]
    for kind in reindex:
        assert layer_kv(kinds[kind], "fp4") == (0.0, 128 * 576)
    assert index_entry_bytes(kinds["c2_reuse"], "fp4") == index_entry_bytes(kinds["c1_reuse"], "fp8") == 0.0


def test_index_keys_come_from_each_pooled_latent():
    """C22: a ratio-2 owner's indexer wk runs once per new entry (one per two tokens), not per token."""
    att = catalog.load_model(MODEL).attention_kinds["c2"]
    ops = {op.name: op for op in projections(att, 5120, 4096, "fp8", 8)}
    assert ops["attn.indexer_wk"].flops == pytest.approx(2.0 * 2048 * 512 * 128)
    assert ops["attn.compressor"].flops == pytest.approx(2.0 * 4096 * 5120 * 2 * 512)


def test_a_ratio_2_reuse_layer_moves_no_compressor_state():
    """C27: a reuse layer reads the window and the chosen entries only, in one kernel; the ratio-2
    owner also writes its state rows and pools them."""
    reuse, full = _core("c2_reuse", 4096), _core("c2", 4096)
    assert reuse.kernels == 1
    assert reuse.kv_bytes == pytest.approx(128 * 576 + 512 * 288)
    state = 2 * 2 * 512 * 4.0
    assert full.kv_bytes == pytest.approx(128 * 576 + 512 * 288 + 2048 * 68 + state * (1 / 2 + 1 / 2))


# ----------------------------------------------------------------------------- engram.py

def _engram(tables: str, tokens: int = 4, group_tokens: int = 16, tp: int = 4) -> dict:
    model = catalog.load_model(MODEL)
    return {op.name: op for op in engram_ops(model.engram, 5120, 4, tokens, "fp8", tp, group_tokens, tables=tables)}


def test_engram_ops_under_dp_attention_move_what_each_layout_reads():
    """E2-E8, E14, E15: with 4 tokens here and 16 over the DP groups, GPU and per-rank host shards
    read a quarter of every group's rows and all-reduce every group's tokens; a shared host copy
    reads this GPU's own tokens' rows whole and writes them once, with no all-reduce."""
    model = catalog.load_model(MODEL)
    e = model.engram
    rows, width = e.columns * e.row_bytes, e.columns * e.head_dim
    gpu, host, per_rank = _engram("gpu"), _engram("host"), _engram("host_per_rank")
    assert gpu["engram.gather"].act_bytes == pytest.approx(16 * rows / 4 + 16 * width * 2)
    assert gpu["engram.gather"].shape["tokens"] == 16
    assert gpu["comm.engram_allreduce"].comm_bytes == per_rank["comm.engram_allreduce"].comm_bytes == 16 * width * 2
    assert per_rank["engram.host_gather"].comm_bytes == pytest.approx(16 * rows / 4)
    assert per_rank["engram.host_gather"].act_bytes == 16 * width * 2
    assert host["engram.host_gather"].comm_bytes == pytest.approx(4 * rows)
    assert host["engram.host_gather"].act_bytes == 4 * width * 2
    assert host["engram.host_gather"].shape["tokens"] == 4 and "comm.engram_allreduce" not in host


def test_engram_wkv_and_gate_are_per_local_token():
    """E9-E11: wkv maps the gathered columns to hc_mult + 1 hidden vectors (a key per residual copy
    and a shared value); the gate reads the copies and wkv's output and writes the copies back."""
    ops, d, hc = _engram("gpu"), 5120, 4
    width = catalog.load_model(MODEL).engram.columns * 256
    assert ops["engram.wkv"].weight_bytes == width * (hc + 1) * d  # FP8: a byte a weight
    assert ops["engram.wkv"].flops == pytest.approx(2.0 * 4 * width * (hc + 1) * d)
    assert ops["engram.gate"].flops == 4 * 6.0 * hc * d
    assert ops["engram.gate"].act_bytes == 4 * (3 * hc + 1) * d * 2


# ----------------------------------------------------------------------------- passes.py: the replay tail

def _pass(shape, q: int, kv: int, replay: bool, requests: int = 1, model: str | dict = MODEL):
    s = sc.validate({"name": "m", "model": model, "hardware": "b200", "parallel": {"tp": 8},
                     "engine": {"kind": "sglang", "bounded_replay": replay}, "speculative": {"design": "none"},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 1024, "output_len": 4}})
    return build_pricer(s).price(shape, np.full(requests, q), np.full(requests, kv), keep_ops=True)


def test_only_a_prefill_replays_its_tail():
    """P1: a verify of 256 tokens a request is no prefill: every layer runs over all 256 whether
    bounded_replay is on or not."""
    from mtpsim.designs import PassShape
    shape = PassShape("verify", "target", 256, 256)
    on, off = _pass(shape, 256, 4096, True), _pass(shape, 256, 4096, False)
    assert on.time_s == pytest.approx(off.time_s, rel=1e-12)
    assert {op.shape["m"] for op, _, _ in on.ops if op.name == "moe.router"} == {256}


def test_a_replayed_prefill_lists_no_empty_rows():
    """P6: the source's kind has no whole-prompt layer left once the tail takes it: no row of count 0."""
    from mtpsim.designs import PassShape
    cost = _pass(PassShape("prefill", "target", 0, 1), 4096, 0, True)
    assert all(n > 0 for _, _, n in cost.ops)


def test_a_prefill_replay_runs_half_of_v41s_layers_over_the_tail():
    """P8, P9, P12, P16: of 40 layers, 20 run over the whole prompt and 20 over its last 128 tokens
    (the tail's cores counted once each); index keys come from every new latent: the ratio-2
    sources' 2,048 a prompt and layer 20's split over its tail and the rows before it."""
    from mtpsim.designs import PassShape
    cost = _pass(PassShape("prefill", "target", 0, 1), 4096, 0, True)

    def counts(name: str, key: str) -> dict:
        found = {}
        for op, _, n in cost.ops:
            if op.name == name:
                found[op.shape[key]] = found.get(op.shape[key], 0) + n
        return found
    assert counts("moe.router", "m") == {4096: 20, 128: 20}
    assert counts("attn.compressed_core", "q") == {4096.0: 20, 128.0: 20}
    assert counts("attn.indexer_wk", "m") == {2048: 3, 128: 1, 4096 - 128: 1}


def test_a_kind_both_before_and_in_the_tail_splits_its_layers():
    """P9: with a sliding-window layer appended after the last, the non-Engram window kind has one
    layer before the tail (layer 0) and one in it: one of each, not two over the whole prompt."""
    from mtpsim.designs import PassShape
    layers = [g.model_dump(exclude_defaults=True) for g in catalog.load_model(MODEL).layers]
    model = {"from": MODEL, "layers": layers + [{"count": 1, "attention": "swa", "ffn": "moe"}]}
    cost = _pass(PassShape("prefill", "target", 0, 1), 4096, 0, True, model=model)
    m = {}
    for op, _, n in cost.ops:
        if op.name == "moe.router":
            m[op.shape["m"]] = m.get(op.shape["m"], 0) + n
    assert m == {4096: 20, 128: 21}


def test_engram_under_dp_attention_reassembles_every_groups_tokens():
    """P14, P15: under DP attention the lookup's all-reduce carries every attention group's tokens,
    and wkv maps to hc_mult + 1 (the model's 4 + 1) hidden vectors."""
    s = sc.validate({"name": "m", "model": MODEL, "hardware": "b200", "parallel": {"tp": 8, "attention_dp": 8},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 8, "num_requests": 8, "input_len": 1024, "output_len": 8}})
    ops = {op.name: op for op, _, _ in _decode_ops(s, batch=1)[0]}
    width = catalog.load_model(MODEL).engram.columns * 256
    tokens = ops["engram.wkv"].shape["m"]
    assert ops["comm.engram_allreduce"].comm_bytes == 8 * tokens * width * 2
    assert ops["engram.wkv"].weight_bytes == width * 5 * 5120


# ----------------------------------------------------------------------------- specs.py, layer_specs.py

def _v41(change) -> ModelSpec:
    """The catalog's V4.1 as a dict, `change`d in place, validated."""
    d = catalog.load_model(MODEL).model_dump(exclude_defaults=True)
    change(d)
    return ModelSpec.model_validate(d)


def test_engram_flags_belong_to_a_targets_trunk_with_tables():
    """S1, S3, S4: an MTP layer carries no Engram, a drafter has no tables, and a flagged layer
    needs the model's tables."""
    v4 = catalog.load_model("deepseek-v4-flash").model_dump(exclude_defaults=True)
    mtp = {**v4, "mtp": {**v4["mtp"], "layer": {**v4["mtp"]["layer"], "engram": True}}}
    with pytest.raises(ValueError, match="an MTP layer carries no Engram"):
        ModelSpec.model_validate(mtp)
    flagged = {**v4, "layers": [{**v4["layers"][0], "count": 1, "engram": True}] + v4["layers"]}
    flagged["layers"][1] = {**flagged["layers"][1], "count": flagged["layers"][1]["count"] - 1}
    with pytest.raises(ValueError, match="needs the model's `engram`"):
        ModelSpec.model_validate(flagged)
    drafter = catalog.load_model("dspark-deepseek-v4.1-flash").model_dump(exclude_defaults=True)
    drafter["engram"] = catalog.load_model(MODEL).engram.model_dump()
    with pytest.raises(ValueError, match="has no Engram tables"):
        ModelSpec.model_validate(drafter)


def test_a_reindex_before_any_writer_and_a_chosen_read_before_any_indexer_are_refused():
    """S5, S6: a reindex layer needs an earlier full layer of its ratio; a reuse layer that reads
    chosen entries needs an earlier indexer of its ratio."""
    def reindex_first(d):  # layer 20 rescores, layer 21 writes
        d["layers"].insert(8, {"count": 1, "attention": "c1_reindex", "ffn": "moe"})
    with pytest.raises(ValueError, match="no earlier layer writes them"):
        _v41(reindex_first)

    def no_ratio_2_indexer(d):
        for k in ("index_topk", "index_n_heads", "index_head_dim"):
            d["attention_kinds"]["c2"]["compressed"].pop(k)
    with pytest.raises(ValueError, match="no earlier layer of that ratio runs an indexer"):
        _v41(no_ratio_2_indexer)


def test_replay_tail_needs_what_sglangs_asserts_need():
    """S12-S15: no tail when a ratio-2 layer follows the last source, when that source runs no
    indexer or carries an Engram, or when a hash-routed layer reaches it."""
    def late_ratio_2(d):
        d["layers"].append({"count": 1, "attention": "c2_reuse", "ffn": "moe"})

    def source_without_indexer(d):
        for k in ("index_topk", "index_n_heads", "index_head_dim"):
            d["attention_kinds"]["c1"]["compressed"].pop(k)
        d["attention_kinds"]["c1_reuse"]["compressed"].pop("index_topk")

    def source_with_engram(d):
        d["layers"][8]["engram"] = True
        d["engram"]["rows"].append(1000)

    def hashed_to_the_source(d):
        d["ffn_kinds"]["hash_moe"] = {**d["ffn_kinds"]["moe"], "routing": "hash"}
        for g in d["layers"][:9]:
            g["ffn"] = "hash_moe"
    for change in (late_ratio_2, source_without_indexer, source_with_engram, hashed_to_the_source):
        assert _v41(change).replay_tail is None, change.__name__

    def hashed_before_the_source(d):
        hashed_to_the_source(d)
        d["layers"][8]["ffn"] = "moe"
    assert _v41(hashed_before_the_source).replay_tail == (20, 128)


def test_an_indexer_without_its_top_k_is_refused():
    """L3: index_n_heads and index_head_dim without index_topk is no indexer (it picks nothing)."""
    from mtpsim.specs import CompressedAttention
    with pytest.raises(ValueError, match="together"):
        CompressedAttention.model_validate({"ratio": 2, "window": 128, "o_groups": 8, "o_lora_rank": 1024,
                                            "index_n_heads": 32, "index_head_dim": 128})


def test_index_topk_on_a_window_only_layer_is_refused():
    """L4: a whole indexer on a ratio-0 layer has no compressed entries to pick."""
    from mtpsim.specs import CompressedAttention
    with pytest.raises(ValueError, match="needs ratio > 0"):
        CompressedAttention.model_validate({"ratio": 0, "window": 128, "o_groups": 8, "o_lora_rank": 1024,
                                            "index_topk": 512, "index_n_heads": 32, "index_head_dim": 128})


# ----------------------------------------------------------------------------- hardware, checks

def test_only_an_fp4_cache_is_kept_as_fp8_and_only_before_blackwell():
    """H3, H4: Hopper keeps a BF16 cache BF16 and an FP4 one as FP8; a GPU without a CUDA compute
    capability (MI355X) keeps what the model says."""
    h200, mi355x, b200 = (catalog.load_hardware(n) for n in ("h200", "mi355x", "b200"))
    assert h200.stored_kv("bf16") == "bf16" and h200.stored_kv("fp4") == "fp8"
    assert mi355x.compute_capability is None and mi355x.stored_kv("fp4") == "fp4"
    assert b200.stored_kv("fp4") == "fp4"


def test_per_rank_host_tables_need_a_host_link_too(tmp_path, capsys):
    """K1: host_per_rank shards are read over the host link as the shared copy is."""
    text = (f"name: m\nmodel: {MODEL}\nhardware: {{from: b200, host_link_bandwidth_bytes_per_s: null}}\n"
            "parallel: {tp: 4}\nengine: {engram_tables: host_per_rank}\nspeculative: {design: none}\n"
            "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    one_line_error(capsys, run(tmp_path, text), "engine.engram_tables", "host_link_bandwidth_bytes_per_s")


def test_host_tables_without_a_host_link_are_fine_for_a_model_without_tables(tmp_path, capsys):
    """K2: the host-link check asks only where there are Engram tables to read (V4 has none)."""
    err = _cost_warnings(tmp_path, capsys, "engram_tables", model="deepseek-v4-flash", tp=4,
                         hardware="{from: b200, host_link_bandwidth_bytes_per_s: null}", engine="{engram_tables: host}")
    assert len(err) == 1 and "no Engram tables" in err[0]


# ----------------------------------------------------------------------------- hfconfig/deepseek_v4.py

def test_a_config_with_v41_sharing_keys_routes_no_layer_by_hash(tmp_path):
    """F2: the cross-layer sharing keys say V4.1 whatever the model_type: no hash-routed layers by default."""
    text = {**TEXT, "model_type": "deepseek_v4"}
    read = ModelSpec.model_validate(_read(tmp_path, _config(text, model_type="deepseek_v4")))
    assert {f.routing for f in read.ffn_kinds.values()} == {"topk"}


def test_a_reindex_layer_before_the_candidate_source_rescores_every_entry(tmp_path):
    """F4: with candidate_source_layer_id 28, layer 24's indexer has no candidates yet (SGLang:
    uses_candidates = 0 <= candidate_source_layer_id < layer_id); 32 and 36 rescore the pool."""
    read = ModelSpec.model_validate(_read(tmp_path, _config({**TEXT, "candidate_source_layer_id": 28})))
    pools = {i: read.attention_kinds[read.expanded_layers[i].attention].compressed.candidate_pool
             for i in (24, 28, 32, 36)}
    assert pools == {24: None, 28: None, 32: 2048 * 8, 36: 2048 * 8}


def test_a_reuse_layer_after_a_source_without_an_indexer_reads_every_entry(tmp_path):
    """F5: with layer 2 a kv source but no index source, layers 3-7 have no chosen entries to read
    (no index_topk: every entry); layers 9-13, after the indexer at 8, read its top 512."""
    read = ModelSpec.model_validate(_read(tmp_path, _config(
        {**TEXT, "index_source_layer_ids": [8, 14, 20, 24, 28, 32, 36]})))
    topk = {i: read.attention_kinds[read.expanded_layers[i].attention].compressed.index_topk for i in (2, 3, 9)}
    assert topk == {2: None, 3: None, 9: 512}


def test_engram_rows_follow_the_layers_not_the_listing(tmp_path):
    """F9: engram_layer_ids in any order: each table's rows go with its layer (layer order in the spec)."""
    text = {**TEXT, "engram_layer_ids": [14, 1], "engram_num_embeddings": [384016682, 384006168]}
    read = ModelSpec.model_validate(_read(tmp_path, _config(text)))
    assert read.engram.rows == [384006168, 384016682]


def test_engram_all_reduce_spans_the_nodes_the_tp_group_spans():
    """X3: at tp 8 on nodes of 4 B200s the lookup's all-reduce crosses the network, as the
    attention's does."""
    s = sc.validate({"name": "m", "model": MODEL, "hardware": {"from": "b200", "gpus_per_node": 4},
                     "parallel": {"tp": 8},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 1024, "output_len": 8}})
    ops = {op.name: op for op, _, _ in _decode_ops(s, batch=1)[0]}
    assert ops["comm.engram_allreduce"].shape.get("nodes") == ops["comm.allreduce"].shape.get("nodes") == 2


def test_an_engram_of_unigrams_only_is_refused():
    """X7: max_ngram_size 1 gathers no rows (columns: one per n-gram order past the unigram)."""
    from mtpsim.specs import EngramSpec
    with pytest.raises(ValueError, match="max_ngram_size"):
        EngramSpec.model_validate({"rows": [10], "n_heads": 8, "max_ngram_size": 1, "head_dim": 256})
