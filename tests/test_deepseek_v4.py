"""DeepSeek-V4 as a target (attention kind `compressed`, costs/compressed.py; hfconfig/deepseek_v4.py)
and its DSpark drafter: the reader gives the catalog entry, the compressed core reads what its
window, ratio and top-k allow, memory keeps entries per token and windows per request, and the
bad inputs are one line naming the key."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.compressed import CompressedKernel, entry_bytes, index_entry_bytes, kv_bytes_per_token, layer_kv, state_bytes
from mtpsim.costs.ops import BatchLens
from mtpsim.memory import part_kv
from mtpsim.specs import ModelSpec
from tests.test_bad_input import one_line_error, run

# the released config.json of DeepSeek-V4-Flash (the fields the reader reads; the sources are
# cited in mtpsim/data/models/deepseek-v4-flash.yaml)
FLASH = {
    "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "hc_mult": 4, "hc_sinkhorn_iters": 20,
    "head_dim": 512, "hidden_size": 4096, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 512,
    "max_position_embeddings": 1048576, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_attention_heads": 64, "num_experts_per_tok": 6, "num_hidden_layers": 43, "num_hash_layers": 3,
    "num_key_value_heads": 1, "num_nextn_predict_layers": 1, "o_groups": 8, "o_lora_rank": 1024, "q_lora_rank": 1024,
    "qk_rope_head_dim": 64, "sliding_window": 128, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vocab_size": 129280, "expert_dtype": "fp4", "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0]}
# the DSpark-bundled checkpoint (DeepSeek-V4-Flash-DSpark / -0731): three DSpark stages after the trunk
DSPARK = {**FLASH, "num_nextn_predict_layers": 3, "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0, 0, 0],
          "dspark_block_size": 5, "dspark_markov_rank": 256, "dspark_target_layer_ids": [40, 41, 42],
          "dspark_noise_token_id": 128799}


def _config(tmp_path, name: str, data: dict) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder / "config.json")


def _read(tmp_path, name: str, data: dict) -> dict:
    return catalog.resolve("models", {"hf_config": _config(tmp_path, name, data)}, "t", "model")


def test_flash_config_reads_as_the_catalog_entry(tmp_path):
    read = ModelSpec.model_validate(_read(tmp_path, "flash", FLASH))
    keep = {"name", "block_draft"}
    assert read.model_dump(exclude=keep) == catalog.load_model("deepseek-v4-flash").model_dump(exclude=keep)
    kinds = [layer.attention for layer in read.expanded_layers]
    assert (kinds.count("swa"), kinds.count("csa"), kinds.count("hca")) == (2, 21, 20)
    assert [layer.ffn for layer in read.expanded_layers[:4]] == ["hash_moe"] * 3 + ["moe"]
    assert read.ffn_kinds["hash_moe"].routing == "hash" and read.ffn_kinds["moe"].routing == "topk"


@pytest.mark.parametrize("tokens", [1, 6, 64])
def test_hash_layers_keep_the_router_and_balance_by_hash(tokens):
    """A hash layer runs the router GEMM (its scores weight the hashed experts) and touches the
    experts a uniform spread would, whatever the routing skew; a top-k layer follows the skew."""
    from mtpsim.costs.ops import Parallel, experts_touched, ffn_ops
    model = catalog.load_model("deepseek-v4-flash")
    par = Parallel(tp=8, ep=1)
    hashed, routed = (ffn_ops(model.ffn_kinds[k], model.hidden_size, tokens, "fp8", "fp4", par, skew=0.5)
                      for k in ("hash_moe", "moe"))
    assert [op.name for op in hashed] == [op.name for op in routed] and hashed[0].name == "moe.router"
    by_hash, skewed = (next(op.shape["touched"] for op in ops if op.name == "moe.experts") for ops in (hashed, routed))
    assert by_hash == pytest.approx(experts_touched(256, 6, tokens, 0.0))
    assert skewed == pytest.approx(experts_touched(256, 6, tokens, 0.5))
    if tokens > 1:
        assert skewed < by_hash


def test_a_dspark_bundled_checkpoint_has_no_serial_mtp_and_names_its_drafter(tmp_path):
    raw = _read(tmp_path, "bundled", DSPARK)
    assert "mtp" not in raw and raw["block_draft"] == "dspark-deepseek-v4-flash"
    drafter = catalog.load_model("dspark-deepseek-v4-flash")
    assert drafter.block.block_size == DSPARK["dspark_block_size"] + 1  # gamma drafts + the anchor
    assert drafter.block.target_layer_ids == DSPARK["dspark_target_layer_ids"]


def _scenario(model, design: str, steps: int, **over) -> str:
    return (f"name: v4\nmodel: {model}\nhardware: b200\nparallel: {{tp: 8}}\n"
            f"speculative: {{design: {design}, steps: {steps}}}\nacceptance: {{accept_length: 1.5}}\n"
            "workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n"
            + "".join(f"{k}: {v}\n" for k, v in over.items()))


BAD = [  # (id, config.json or None for the catalog model, scenario keys, key, word)
    ("serial-mtp-on-dspark", DSPARK, {}, "speculative.design", "serial MTP"),
    ("engram-without-tables", {**FLASH, "engram_layer_ids": [0]}, {}, "engram_num_embeddings", "at least 1"),
    ("kv-sharing-on-v4-ratios", {**FLASH, "kv_source_layer_ids": [2, 5]}, {}, "kv_source_layer_ids.0", "ratio 4"),
    ("ratio", {**FLASH, "compress_ratios": [0, 0, 4, 128, 4, 8] + [4] * 38}, {}, "compress_ratios.5",
     "not one of"),
]


@pytest.mark.parametrize("case,config,over,key,word", BAD, ids=[b[0] for b in BAD])
def test_v4_bad_input_is_one_line(tmp_path, capsys, case, config, over, key, word):
    files = {"ckpt/config.json": json.dumps(config)}
    text = _scenario("{hf_config: ckpt/config.json, name: deepseek-v4-flash}", "nextn", 1, **over)
    line = one_line_error(capsys, run(tmp_path, text, files), key, word)
    assert "config.json" in line or "s.yaml" in line


def test_dspark_drafter_on_another_target_and_groups_past_tp_are_refused(tmp_path, capsys):
    text = _scenario("qwen3-8b", "block", 5).replace("parallel: {tp: 8}", "parallel: {tp: 1}")
    text = text.replace("steps: 5}", "steps: 5, draft: dspark-deepseek-v4-flash}")
    one_line_error(capsys, run(tmp_path, text), "speculative.draft", "built for")
    text = _scenario("deepseek-v4-flash", "nextn", 1).replace("tp: 8", "tp: 16")
    one_line_error(capsys, run(tmp_path, text), "parallel.tp", "o_groups")


# ----------------------------------------------------------------------------- pricing

def _kernel(name: str) -> CompressedKernel:
    return CompressedKernel(catalog.load_model("deepseek-v4-flash").attention_kinds[name], "fp8", 8)


def _core_bytes(name: str, context: int) -> float:
    return _kernel(name).core(BatchLens.of(np.array([1]), np.array([context]))).kv_bytes


@pytest.mark.parametrize("context", [100, 4000, 100_000])
def test_each_compressed_kind_reads_its_window_and_chosen_entries(context):
    """One decode query: the window (at most 128 tokens), then HCA every 1/128 entry, CSA the top
    512 of its 1/4 entries (and the indexer's keys of all of them); plus the compressor's state."""
    seen, k = context + 1, _kernel("csa")
    entry, index = k.entry, index_entry_bytes(k.att)
    state = {}  # per new token: its row of the state written, and a 1/ratio share of pooling the whole state
    for name, rows in (("csa", 2 * 4), ("hca", 128)):
        att = _kernel(name).att
        state[att.compressed.ratio] = state_bytes(att, 512) * (1 / rows + 1 / att.compressed.ratio)
    assert _core_bytes("swa", context) == pytest.approx(min(seen, 128) * entry)
    assert _core_bytes("hca", context) == pytest.approx((min(seen, 128) + seen // 128) * entry + state[128])
    csa = (min(seen, 128) + min(seen // 4, 512)) * entry + (seen // 4) * index + state[4]
    assert _core_bytes("csa", context) == pytest.approx(csa)


def test_the_indexer_scores_every_entry_and_attention_reads_top_k():
    """Past 4 x index_topk tokens a CSA layer's attention flops stop growing; the indexer's go on."""
    k = _kernel("csa")
    at = [k.core(BatchLens.of(np.array([1]), np.array([n]))) for n in (4096, 65536)]
    indexer = [2.0 * ((n + 1) // 4) * 64 * 128 for n in (4096, 65536)]
    attention = [op.flops - i for op, i in zip(at, indexer)]
    assert attention[0] == pytest.approx(attention[1])
    assert at[1].flops > at[0].flops


def test_memory_keeps_entries_per_token_and_windows_per_request():
    model = catalog.load_model("deepseek-v4-flash")
    csa, hca, swa = (model.attention_kinds[k] for k in ("csa", "hca", "swa"))
    entry = entry_bytes(csa, "fp8")
    assert entry == 448 + 2 * 64  # FP8 non-rope dims, BF16 rope
    assert kv_bytes_per_token(hca, "fp8", 8) == pytest.approx(entry / 128)
    assert kv_bytes_per_token(csa, "fp8", 8) == pytest.approx((entry + 132) / 4)
    assert layer_kv(swa, "fp8") == (0.0, 128 * entry)
    s = sc.validate({"name": "m", "model": "deepseek-v4-flash", "hardware": "b200", "parallel": {"tp": 8},
                     "speculative": {"design": "block", "steps": 5}, "acceptance": {"accept_length": 3.0},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
    pricer = build_pricer(s)
    target, draft = part_kv(pricer.deployment, "target"), part_kv(pricer.deployment, "block")
    assert len(target) == 43 and len(draft) == 3
    assert all(x.bytes_per_token == 0 and x.state_bytes == 128 * entry for x in draft)  # the rolling window
    per_token = sum(x.bytes_per_token for x in target)
    assert per_token == pytest.approx(21 * (entry + 132) / 4 + 20 * entry / 128)


def test_every_v4_op_is_priced_by_the_roofline_or_a_table_that_has_it():
    """The compressed core is roofline-priced (no profile holds it); the mHC kernels read the
    profile's measured hyper_connection rows (aiconfigurator's mhc_module_perf)."""
    s = sc.validate({"name": "m", "model": "deepseek-v4-flash", "hardware": "b200", "parallel": {"tp": 8},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 4, "num_requests": 4, "input_len": 1024, "output_len": 8}})
    pricer = build_pricer(s)
    from mtpsim.designs import DesignShape, iteration_passes
    shape = iteration_passes(DesignShape.of(s.speculative))[0]
    kvs = np.full(4, 1024)
    cost = pricer.price_lens(shape, BatchLens.uniform(1, kvs, int(kvs.sum()), 1024), keep_ops=True)
    by_name = {op.name: t.source for op, t, _ in cost.ops}
    assert by_name["attn.compressed_core"] == "roofline" and by_name["hc.pre"] == by_name["hc.post"] == "calibrated"
    assert {"attn.wqkv_a", "attn.wo_a", "attn.indexer_q", "moe.experts"} <= set(by_name)


def test_pro_written_as_transformers_layer_types_reads_as_the_catalog_entry(tmp_path):
    """V4-Pro in transformers' form (layer_types, compress_rates; its documented default order)."""
    types = ["heavily_compressed_attention"] * 2 + ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
                                                    for i in range(59)]
    pro = {k: v for k, v in FLASH.items() if k != "compress_ratios"}
    pro |= {"hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128, "q_lora_rank": 1536,
            "o_groups": 16, "moe_intermediate_size": 3072, "n_routed_experts": 384, "index_topk": 1024,
            "layer_types": types, "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
            "num_nextn_predict_layers": 0}
    read = ModelSpec.model_validate(_read(tmp_path, "pro", pro))
    catalog_pro = catalog.load_model("deepseek-v4-pro")
    assert read.expanded_layers == catalog_pro.expanded_layers
    assert read.attention_kinds == {k: v for k, v in catalog_pro.attention_kinds.items() if k != "swa"}
    assert read.ffn_kinds == catalog_pro.ffn_kinds and read.dtypes == catalog_pro.dtypes


def test_verify_refuses_compressed_attention_in_one_line(tmp_path, capsys):
    pytest.importorskip("torch")
    text = _scenario("deepseek-v4-flash", "nextn", 1).replace("hardware: b200", "hardware: cpu")
    text = text.replace("parallel: {tp: 8}\n", "") + "verify: {num_layers: 2, hidden_scale: 0.0625, num_experts: 8}\n"
    argv = run(tmp_path, text)
    argv[0] = "verify"
    one_line_error(capsys, argv, "model", "compressed attention")


def test_side_streams_price_a_region_at_its_longest_chain():
    """costs/streams.py: of a region's chains the longest sets its time; ops off it are priced 0."""
    from mtpsim.costs.ops import Op
    from mtpsim.costs.roofline import OpTime
    from mtpsim.costs.streams import ATTENTION_CHAINS, MOE_CHAINS, hide
    times = {"attn.wqkv_a": 3.0, "attn.wq_b": 2.0, "attn.compressor": 4.0, "attn.indexer_q": 5.0,
             "attn.indexer_weights": 1.0, "attn.indexer_compressor": 6.0, "moe.shared_gate_up": 2.0,
             "moe.shared_down": 1.0, "moe.router": 1.0, "moe.experts": 1.5, "comm.allreduce": 7.0}
    rows = [(Op(n, "gemm"), OpTime(0.0, t, 0.0, 0.0, "calibrated"), 1) for n, t in times.items()]
    kept = {op.name: t.total_s for op, t, _ in hide(rows, ((ATTENTION_CHAINS, 1.0), (MOE_CHAINS, 1.0)))}
    # attention: wqkv_a + indexer_q = 8 beats 6, 5, 4 and 1 + 5; MoE: shared 3 beats routed 2.5
    assert {n for n, t in kept.items() if t} == {"attn.wqkv_a", "attn.indexer_q", "moe.shared_gate_up",
                                                  "moe.shared_down", "comm.allreduce"}
    assert sum(kept.values()) == 3.0 + 5.0 + 3.0 + 7.0
    # an HCA layer has no indexer: its chains drop out, the compressor still runs beside the q path
    hca = [r for r in rows if "indexer" not in r[0].name]
    kept = {op.name: t.total_s for op, t, _ in hide(hca, ((ATTENTION_CHAINS, 1.0),))}
    assert kept["attn.compressor"] == 0 and kept["attn.wq_b"] == 2.0


@pytest.mark.parametrize("engine, tokens, graphs, overlap, hidden", [
    ("sglang", 1, True, 1, {"attn", "moe"}), ("sglang", 256, True, 1, {"moe"}), ("sglang", 1, False, 1, set()),
    ("vllm", 1, True, 1, set()), ("sglang", 1, True, 0, {"attn"})])
def test_sglang_runs_v4_side_streams_only_in_graphs_and_below_its_token_limit(engine, tokens, graphs, overlap, hidden):
    """SGLang v0.5.14's DeepSeek-V4 layer: the attention's side streams up to 128 tokens on
    Blackwell, the shared expert beside the routed ones in any captured pass (hidden at
    cost.moe_stream_overlap 1; by default the two take turns); another engine (no such rule
    here) and eager passes hide nothing."""
    s = sc.validate({"name": "m", "model": "deepseek-v4-flash", "hardware": "b200", "parallel": {"tp": 8},
                     "engine": {"kind": engine}, "speculative": {"design": "none"},
                     "cost": {"moe_stream_overlap": overlap},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 1024, "output_len": 8}})
    pricer = build_pricer(s)
    rows = pricer._build_static("target", 0, tokens, 1, graphs)[0]
    regions = {op.name.split(".")[0] for op, t, _ in rows if t.source.startswith("hidden:")}
    assert regions == hidden
    assert all(t.total_s == 0 for _, t, _ in rows if t.source.startswith("hidden:"))


# DeepSeek-V4-Pro-DSpark's config.json (the fields the reader reads): the target's figures as
# mtpsim/data/models/deepseek-v4-pro.yaml cites them, the DSpark keys and compress_ratios as
# dspark-deepseek-v4-pro.yaml cites them (its trunk order is not the catalog's; see deepseek-v4-pro.yaml)
PRO_DSPARK = {
    **FLASH, "hidden_size": 7168, "num_attention_heads": 128, "q_lora_rank": 1536, "o_groups": 16, "index_topk": 1024,
    "moe_intermediate_size": 3072, "n_routed_experts": 384, "num_hidden_layers": 61,
    "compress_ratios": [128, 128] + [4, 128] * 29 + [4] + [0, 0, 0],
    "dspark_block_size": 5, "dspark_markov_rank": 512, "dspark_target_layer_ids": [58, 59, 60],
    "dspark_noise_token_id": 128799}


def test_the_pro_dspark_checkpoint_names_its_drafter_which_fits_pro(tmp_path):
    raw = _read(tmp_path, "pro-dspark", PRO_DSPARK)
    assert "mtp" not in raw and raw["block_draft"] == "dspark-deepseek-v4-pro"
    target, drafter = catalog.load_model("deepseek-v4-pro"), catalog.load_model("dspark-deepseek-v4-pro")
    assert target.block_draft == drafter.name and drafter.block.built_for == target.name
    assert drafter.block.block_size == PRO_DSPARK["dspark_block_size"] + 1
    assert drafter.block.markov_rank == PRO_DSPARK["dspark_markov_rank"] and drafter.num_layers == 3
    assert all(t < target.num_layers for t in drafter.block.target_layer_ids)
    read = ModelSpec.model_validate(raw)
    assert (read.hidden_size, read.num_layers) == (target.hidden_size, target.num_layers)
    # the stages are the target's sliding kind and its routed MoE (the assumption the entry states)
    assert drafter.attention_kinds["swa"] == target.attention_kinds["swa"]
    assert drafter.ffn_kinds["moe"] == target.ffn_kinds["moe"]


def _flash_decode_ops():
    """V4-Flash's plain decode step on 8xB200 (SGLang's profile), one request at 64 tokens, its ops kept."""
    from mtpsim.designs import DesignShape, iteration_passes
    s = sc.validate({"name": "m", "model": "deepseek-v4-flash", "hardware": "b200", "parallel": {"tp": 8},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
    shape = iteration_passes(DesignShape.of(s.speculative))[0]
    return build_pricer(s).price_lens(shape, BatchLens.uniform(1, np.full(1, 64), 64, 64), keep_ops=True)


def test_mhc_kernels_are_priced_per_site_from_the_measured_rows():
    """aiconfigurator times one decoder layer's two mHC sites together (num_sites 2): a site is
    half a row. At DeepSeek-V4-Flash's width on B200 (SGLang 0.5.14's TileLang kernels), one token:
    pre 18.9 / 2 us, post 8.4 / 2 us, where the roofline gave a launch's 1.5 us to each."""
    pytest.importorskip("aiconfigurator_core")
    import pandas as pd

    from mtpsim.calibration.aic_database import package_root
    from mtpsim.calibration.aic_rows import mhc_rows
    raw = pd.read_parquet(package_root() / "data" / "b200_sxm" / "mhc" / "sglang" / "0.5.14" / "mhc_module_perf.parquet")
    rows = mhc_rows(raw).set_index(["kind", "d", "tokens"])
    assert rows.time_s[("pre", 4096, 1)] == pytest.approx(0.0189e-3 / 2)
    assert rows.time_s[("post", 4096, 1)] == pytest.approx(0.0084e-3 / 2)
    cost = _flash_decode_ops()
    times, calls = {}, {"hc.pre": 0, "hc.post": 0}
    for op, t, n in cost.ops:
        if op.name in calls:
            times[op.name], calls[op.name] = (t.total_s - t.launch_s, n), calls[op.name] + n
    # every site's kernel at its measured row (one token), its launch apart
    assert times["hc.pre"][0] == pytest.approx(rows.time_s[("pre", 4096, 1)], rel=1e-6)
    assert times["hc.post"][0] == pytest.approx(rows.time_s[("post", 4096, 1)], rel=1e-6)
    assert calls["hc.pre"] == calls["hc.post"] == 2 * 43  # two sites a layer


@pytest.mark.parametrize("heads, tp, padding, run", [
    (64, 8, "to_64", 64), (64, 1, "to_64", 64), (128, 4, "to_64", 64), (128, 2, "to_64", 64),
    (128, 1, "to_64", 128), (128, 4, "all_heads", 128), (64, 8, "all_heads", 64), (64, 8, "per_rank", 8),
    (128, 4, "per_rank", 32),
])
def test_flashmla_runs_padded_query_heads(heads, tp, padding, run):
    """SGLang pads a rank's V4 query heads for FlashMLA's sparse kernels (h_q 64 or 128 only): to
    64 where they fit from v0.5.14, to every head before (srt/models/deepseek_v4.py)."""
    from mtpsim.costs.compressed import query_heads
    assert query_heads(heads, tp, padding) == run


@pytest.mark.parametrize("kind, version, heads", [("sglang", "0.5.16", 64), ("sglang", "0.5.13", 64),
                                                   ("vllm", None, 8)])
def test_the_engine_rule_sets_the_kernels_heads(kind, version, heads):
    s = sc.validate({"name": "m", "model": "deepseek-v4-flash", "hardware": "b200", "parallel": {"tp": 8},
                     "engine": {"kind": kind, **({"version": version} if version else {})},
                     "speculative": {"design": "none"},
                     "workload": {"concurrency": 1, "num_requests": 1, "input_len": 64, "output_len": 8}})
    kernel = build_pricer(s)._kernel(s.specs.model.attention_kinds["csa"], "fp8")
    assert kernel.heads == heads


def test_mxfp4_experts_read_their_measured_rows_where_nvfp4_has_none():
    """aiconfigurator times SGLang's MXFP4 experts (flashinfer_mxfp4, MXFP8 activations) at
    DeepSeek-V4's shapes on B200 and NVFP4 at others': a shape NVFP4 lacks takes the MXFP4 rows
    (aic_dtypes.filled_dtypes), so V4-Flash's experts are calibrated, not scaled from another model."""
    import pandas as pd

    from mtpsim.calibration.aic_dtypes import MOE_RULE, DtypeRule, filled_dtypes
    df = pd.DataFrame({"moe_dtype": ["nvfp4", "w4a8_mxfp4_mxfp8", "w4a8_mxfp4_mxfp8", "bfloat16", "bfloat16"],
                       "num_tokens": [1] * 5, "hidden_size": [7168, 4096, 7168, 4096, 7168], "inter_size": [2048] * 5,
                       "topk": [8, 6, 8, 6, 8], "num_experts": [256] * 5, "moe_tp_size": [1] * 5, "moe_ep_size": [1] * 5,
                       "latency": [0.05, 0.04, 0.06, 0.08, 0.1]})
    assert filled_dtypes(df, MOE_RULE) == {"fp4": {"w4a8_mxfp4_mxfp8": [(4096, 2048, 6, 256)]}}  # not where nvfp4 has rows
    assert filled_dtypes(df, DtypeRule(MOE_RULE.column, MOE_RULE.mapping, MOE_RULE.shape, MOE_RULE.tokens)) == {}
    # per-tensor FP8 rows never fill a shape block-FP8 rows lack (another path for the same checkpoints)
    fp8 = df.assign(moe_dtype=df.moe_dtype.replace({"nvfp4": "fp8_block", "w4a8_mxfp4_mxfp8": "fp8"}))
    assert filled_dtypes(fp8, MOE_RULE) == {}
    cost = _flash_decode_ops()
    assert {t.source for op, t, _ in cost.ops if op.name == "moe.experts"} == {"calibrated"}
