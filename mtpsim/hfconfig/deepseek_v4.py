"""DeepSeek-V4 config.json (model_type deepseek_v4) -> its layout, following transformers'
configuration_deepseek_v4.py (DeepseekV4Config) and DeepSeek's reference inference/model.py.

- Attention: every layer is kind `compressed` (costs/compressed.py): compress_ratios[i] (the
  released list; or transformers' layer_types with compress_rates) picks sliding_attention (0,
  `swa`), compressed_sparse_attention (4, `csa`, with the lightning indexer: index_topk,
  index_n_heads, index_head_dim) or heavily_compressed_attention (128, `hca`); window
  sliding_window, q_lora_rank, head_dim (one K=V head), qk_rope_head_dim (else
  partial_rotary_factor x head_dim), o_groups / o_lora_rank, hc_mult / hc_sinkhorn_iters.
  The list goes on past num_hidden_layers for the MTP (or DSpark) layers.
- FFN: MoE in every layer (n_routed_experts, num_experts_per_tok, moe_intermediate_size,
  n_shared_experts); the first num_hash_layers (mlp_layer_types `hash_moe`) route by a token-id
  table and are written as ffn kind `hash_moe` with `routing: hash`: the router GEMM still runs
  (the reference Gate and SGLang's HashTopK score every expert for the weights), the top-k is a
  gather from the table, and the load follows the hash (uniform), not the routing skew.
- Dtypes: expert_dtype fp4 -> experts fp4; the KV cache FP8 (the reference quantises its non-rope
  dims); the rest as the generic reader gives them.
- A checkpoint that bundles a DSpark drafter (dspark_block_size / dspark_markov_rank /
  dspark_noise_token_id / dspark_target_layer_ids: SGLang dspark_config.py
  checkpoint_bundles_dspark_draft) has no serial MTP head: its mtp.* layers are DSpark stages
  (vLLM PR #46965, #52165), so no `mtp` is read and `block_draft` names the catalog drafter
  with the same taps and block, where there is one.
- Refused, one error naming the key: DeepSeek-V4.1's Engram tables (engram_layer_ids: hashed
  n-gram embeddings) and its cross-layer KV / index sharing (kv_source_layer_ids,
  index_source_layer_ids, candidate_source_layer_id), which no op prices. Engram's model code is
  public (SGLang v0.5.23 srt/layers/engram.py: per token and Engram layer, (max_ngram_size - 1) x
  engram_n_heads hash rows of engram_head_dim FP8 values plus block scales gathered from a table
  with engram_num_embeddings rows, sharded over the TP GPUs with an all-reduce by default, or read from host
  memory over the host link with SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE; then a wkv GEMM and a
  fused gate into the hyper-connection stream), but pricing it alone would not make V4.1
  readable: its layers also share KV and indexers across layers, which nothing here models.
"""
from __future__ import annotations

from typing import Any, get_args

from mtpsim.errors import first_repeat, short
from mtpsim.hfconfig.view import Config, Layout, kinds_of, moe_kind
from mtpsim.specs import Dtype

RATIO_KINDS = {0: "swa", 4: "csa", 128: "hca"}  # transformers _COMPRESS_RATIO_TO_LAYER_TYPE
LAYER_TYPES = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
UNPRICED = {
    "engram_layer_ids": "DeepSeek-V4.1's Engram tables (hashed n-gram embeddings engines shard over the GPUs "
                        "or keep in host memory)",
    "kv_source_layer_ids": "DeepSeek-V4.1's KV shared across layers",
    "index_source_layer_ids": "DeepSeek-V4.1's indexer shared across layers",
    "candidate_source_layer_id": "DeepSeek-V4.1's candidate blocks shared across layers",
}
DSPARK_KEYS = ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id", "dspark_target_layer_ids")


def deepseek_v4(c: Config) -> Layout:
    """The family reader (families.READERS['deepseek_v4'])."""
    for key, what in UNPRICED.items():
        if c.get(key) is not None:
            raise c.error(key, f"{what}: not modelled by mtpsim; write the spec as a catalog file without it to "
                          "approximate the model")
    n = c.int("num_hidden_layers", low=1)
    ratios = _ratios(c, n)
    heads, head_dim = c.int("num_attention_heads", low=1), c.int("head_dim", low=1)
    given = c.int("qk_rope_head_dim", None)  # 0 is a value given (and refused below), not the key left out
    rope = given if given is not None else int(head_dim * c.fraction("partial_rotary_factor", 64 / 512))
    if not 1 <= rope <= head_dim:
        key = "qk_rope_head_dim" if given is not None else "partial_rotary_factor"
        raise c.error(key, f"gives {rope} rotary dims of a {head_dim}-dim head (head_dim): expected 1..{head_dim}")
    base = {"kind": "compressed", "num_heads": heads, "num_kv_heads": c.int("num_key_value_heads", 1, low=1),
            "head_dim": head_dim, "qk_rope_head_dim": rope, "q_lora_rank": c.int("q_lora_rank", low=1)}
    shared = {"window": c.int("sliding_window", 128, low=1), "o_groups": c.int("o_groups", low=1),
              "o_lora_rank": c.int("o_lora_rank", low=1), "hc_mult": c.int("hc_mult", 4, low=1),
              "hc_sinkhorn_iters": c.int("hc_sinkhorn_iters", 20)}
    attention = {}
    for ratio in sorted(set(ratios)):
        spec = {"ratio": ratio, **shared}
        if ratio == 4:  # reference Attention: an Indexer only where compress_ratio == 4
            spec |= {k: c.int(k, low=1) for k in ("index_topk", "index_n_heads", "index_head_dim")}
        attention[RATIO_KINDS[ratio]] = base | {"compressed": spec}
    hashed = _hash_layers(c, n)
    width = c.int("moe_intermediate_size")
    moe = moe_kind(c.int("n_routed_experts", low=1), c.int("num_experts_per_tok", low=1), width,
               c.int("n_shared_experts", 0), width)
    ffns = {"moe": moe, "hash_moe": {**moe, "routing": "hash"}}
    return Layout(attention, ffns, lambda i: (RATIO_KINDS[ratios[i]], "hash_moe" if i < hashed else "moe")
                  if i < len(ratios) else None, "compress_ratios gives the MTP layers' attention past num_hidden_layers")


def _ratios(c: Config, n: int) -> list[int]:
    """Per-layer compress ratio: compress_ratios (released configs, MTP layers after the trunk),
    else layer_types with compress_rates (transformers' form, trunk only)."""
    if c.get("compress_ratios") is not None:
        ratios = c.list("compress_ratios", n, past=None)
        for i, r in enumerate(ratios):
            if type(r) is not int or r not in RATIO_KINDS:
                raise c.error(f"compress_ratios.{i}", f"{short(r)} is not one of 0, 4, 128 (sliding, compressed sparse, "
                              "heavily compressed attention)")
        return ratios
    rates = c.get("compress_rates", {})
    if not isinstance(rates, dict) or any(LAYER_TYPES.get(k) not in (None, v) for k, v in rates.items()):
        raise c.error("compress_rates", f"expected compressed_sparse_attention 4 and heavily_compressed_attention 128, "
                      f"got {short(rates)}")
    return [LAYER_TYPES[t] for t in kinds_of(c, "layer_types", c.list("layer_types", n), dict(zip(LAYER_TYPES, LAYER_TYPES)))]


def _hash_layers(c: Config, n: int) -> int:
    """How many leading layers route by hash: num_hash_layers, else mlp_layer_types' leading
    hash_moe run, else transformers' default 3."""
    if c.get("mlp_layer_types") is None:
        hashed = c.int("num_hash_layers", 3)
        if hashed > n:
            raise c.error("num_hash_layers", f"{hashed} hash-routed layers, but the model has {n} (num_hidden_layers)")
        return hashed
    kinds = kinds_of(c, "mlp_layer_types", c.list("mlp_layer_types", n), {"hash_moe": "hash_moe", "moe": "moe"})
    first = next((i for i, k in enumerate(kinds) if k != "hash_moe"), len(kinds))
    if "hash_moe" in kinds[first:]:
        raise c.error("mlp_layer_types", "hash_moe layers after a routed one are not modelled (a leading run is)")
    return first


def finish(text: Config, mapping: dict[str, Any], drafters: dict[str, Any]) -> dict[str, Any]:
    """A read V4 mapping with its FP4 experts and, for a DSpark-bundled checkpoint, no serial
    MTP and the matching catalog drafter (`drafters`: name -> ModelSpec of role block_draft)."""
    # the reference quantises the cache's non-rope dims to FP8 (QAT: act_quant on kv[..., :-rope]);
    # costs/compressed.py keeps the rope dims BF16
    dtypes = {**mapping["dtypes"], "kv_cache": "fp8"}
    expert = text.get("expert_dtype")
    if expert is not None:  # the 4-bit formats engines name by their scales (MXFP4, NVFP4) carry fp4's payload
        known = {**{d: d for d in get_args(Dtype)}, "mxfp4": "fp4", "nvfp4": "fp4",  # and torch_dtype's spellings
                 "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}
        if not isinstance(expert, str) or expert.lower() not in known:
            raise text.error("expert_dtype", f"expected one of {', '.join(known)}, got {short(expert)}")
        dtypes["experts"] = known[expert.lower()]
    mapping["dtypes"] = dtypes
    if not any(text.get(k) is not None for k in DSPARK_KEYS):
        return mapping
    mapping.pop("mtp", None)  # its mtp.* weights are DSpark stages, not a serial MTP head
    for part in ("attention", "ffn"):  # a kind only the stages used (Pro-DSpark's SWA: no trunk layer slides)
        used = {group[part] for group in mapping["layers"]}
        mapping[f"{part}_kinds"] = {k: v for k, v in mapping[f"{part}_kinds"].items() if k in used}
    taps = _dspark_taps(text)
    gamma = text.int("dspark_block_size", 5, low=1)
    markov = text.int("dspark_markov_rank", None, low=1)
    noise = text.int("dspark_noise_token_id", None)
    if noise is not None and noise >= mapping["vocab_size"]:
        raise text.error("dspark_noise_token_id", f"token {noise} is past the {mapping['vocab_size']}-token vocabulary "
                         "(vocab_size)")
    match = [name for name, d in drafters.items() if d.block.kind == "dspark" and d.block.target_layer_ids == taps
             and d.block.block_size == gamma + 1 and d.backbone_hidden_size == mapping["hidden_size"]
             and markov in (None, d.block.markov_rank)]
    return mapping | ({"block_draft": match[0]} if match else {})


def _dspark_taps(text: Config) -> list[int]:
    """dspark_target_layer_ids: distinct trunk layers (-1: the embedding output, as a block
    drafter's taps read: specs.BlockSpec), each named where it is not one."""
    taps, layers = text.list("dspark_target_layer_ids", 1, past=None), text.int("num_hidden_layers", low=1)
    for i, tap in enumerate(taps):
        if type(tap) is not int or not -1 <= tap < layers:
            raise text.error(f"dspark_target_layer_ids.{i}", f"{short(tap)} is not a layer of the trunk's {layers} "
                             f"(num_hidden_layers: 0..{layers - 1}, or -1 for the embedding output)")
    again = first_repeat(taps)
    if again is not None:
        raise text.error(f"dspark_target_layer_ids.{again}", f"layer {taps[again]} is tapped twice: each tap is one "
                         "target layer")
    return taps
