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
- DeepSeek-V4.1 (model_type deepseek_v41, its text_config read): compress ratios 1 and 2 (CSA2,
  kinds `c1`, `c2`) whose entries only the kv_source_layer_ids layers write (mode full) and whose
  indexers run only in index_source_layer_ids (a non-writer's rescores the candidate pool of
  candidate_topk_blocks x candidate_block_size positions when the candidate source comes first:
  mode reindex); the rest reuse both (mode reuse), as SGLang v0.5.23 builds them
  (`_csa2_modes`); the KV cache FP4 (the latents' E2M1 packing); no hash-routed layers unless the
  config says so; engram_layer_ids -> `engram` and those layers flagged (`_engram`). The vision
  tower is not read.
"""
from __future__ import annotations

from typing import Any, get_args

from mtpsim.errors import short
from mtpsim.hfconfig.view import Config, Layout, kinds_of, layer_runs, moe_kind
from mtpsim.spec_base import MAX_CONTEXT
from mtpsim.specs import CSA2_RATIOS, MAX_ENGRAM_ROWS, Dtype
from mtpsim.textnumbers import first_repeat

RATIO_KINDS = {0: "swa", 4: "csa", 128: "hca", 1: "c1", 2: "c2"}  # transformers _COMPRESS_RATIO_TO_LAYER_TYPE; V4.1's CSA2
LAYER_TYPES = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
DSPARK_KEYS = ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id", "dspark_target_layer_ids")
ENGRAM_KEYS = ("engram_num_embeddings", "engram_n_heads", "engram_max_ngram_size", "engram_head_dim")


def deepseek_v4(c: Config) -> Layout:
    """The family reader (families.READERS['deepseek_v4'], ['deepseek_v41'])."""
    n = c.int("num_hidden_layers", low=1)
    ratios = _ratios(c, n)
    for i in range(n, len(ratios)):  # CSA2 shares entries only trunk layers write (kv_source_layer_ids < n)
        if ratios[i] in CSA2_RATIOS:
            raise c.error(f"compress_ratios.{i}", f"ratio {ratios[i]} past the trunk's {n} layers (num_hidden_layers): "
                          "an MTP or DSpark layer's CSA2 would share the entries of a kv source, and only trunk layers "
                          "are kv sources (kv_source_layer_ids); not modelled")
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
    index = {k: c.int(k, low=1) for k in ("index_topk", "index_n_heads", "index_head_dim")} if 4 in ratios else {}
    modes = _csa2_modes(c, n, ratios)
    attention, names = {}, []
    for i, ratio in enumerate(ratios):
        spec = {"ratio": ratio, **shared, **(index if ratio == 4 else {}), **modes.get(i, {})}
        name = stem = RATIO_KINDS[ratio] + ("" if spec.get("mode", "full") == "full" else f"_{spec['mode']}")
        for k in range(2, n + 2):  # layers of one ratio and mode that differ (an indexer, a pool) get their own kind
            if attention.get(name, {}).get("compressed", spec) == spec:
                break
            name = f"{stem}_{k}"
        attention[name] = base | {"compressed": spec}
        names.append(name)
    hashed = _hash_layers(c, n, 0 if _is_v41(c) else 3)
    width = c.int("moe_intermediate_size")
    moe = moe_kind(c.int("n_routed_experts", low=1), c.int("num_experts_per_tok", low=1), width,
               c.int("n_shared_experts", 0), width)
    ffns = {"moe": moe, "hash_moe": {**moe, "routing": "hash"}}
    return Layout(attention, ffns, lambda i: (names[i], "hash_moe" if i < hashed else "moe")
                  if i < len(ratios) else None, "compress_ratios gives the MTP layers' attention past num_hidden_layers")


def _csa2_modes(c: Config, n: int, ratios: list[int]) -> dict[int, dict[str, Any]]:
    """DeepSeek-V4.1's ratio-1/2 layers (CSA2), by layer index: which write compressed entries
    (kv_source_layer_ids: mode full), which score with an indexer of their own
    (index_source_layer_ids: a full layer's indexer scans every entry; a reindex layer's rescores
    the candidate_topk_blocks x candidate_block_size positions the candidate_source_layer_id
    layer chose, when that layer comes before it) and which reuse both (mode reuse, reading the
    index_topk entries the last indexer chose), as SGLang v0.5.23 builds them
    (srt/models/deepseek_v4.py MqaAttention: DeepseekV41Compressor where layer_id in
    kv_source_layer_ids, DeepseekV41Indexer where in index_source_layer_ids;
    dsv41_sparse.py: uses_candidates = 0 <= candidate_source_layer_id < layer_id)."""
    low = [i for i in range(n) if ratios[i] in CSA2_RATIOS]
    sources = _layer_ids(c, "kv_source_layer_ids", n, ratios)
    indexers = _layer_ids(c, "index_source_layer_ids", n, ratios)
    if not low:
        return {}
    if not sources:
        raise c.error("kv_source_layer_ids", f"layers {low[0]}.. have compress ratio 1 or 2 (DeepSeek-V4.1's CSA2), "
                      "whose compressed entries only the kv_source_layer_ids layers write: give them")
    candidate = c.int("candidate_source_layer_id", -1, low=-1)
    if candidate >= 0 and candidate not in indexers:
        raise c.error("candidate_source_layer_id", f"layer {candidate} is not an index source (index_source_layer_ids): "
                      "only an indexer chooses candidate blocks")
    pool = {}
    if candidate >= 0:
        blocks, size = c.int("candidate_topk_blocks", low=1), c.int("candidate_block_size", low=1)
        if blocks * size > MAX_CONTEXT:
            raise c.error("candidate_topk_blocks", f"{blocks} blocks of {size} positions (candidate_block_size) is a "
                          f"candidate pool past {MAX_CONTEXT:,} positions, the longest context modelled")
        pool = {"candidate_pool": blocks * size}
    index = {k: c.int(k, low=1) for k in ("index_topk", "index_n_heads", "index_head_dim")} if indexers else {}
    if pool and index and pool["candidate_pool"] < index["index_topk"]:
        raise c.error("candidate_topk_blocks", f"{blocks} blocks of {size} positions hold {pool['candidate_pool']}, fewer "
                      f"than the index_topk {index['index_topk']} a reindex layer keeps from them")
    modes, indexed, written = {}, False, set()
    for i in low:
        if i not in sources and ratios[i] not in written:
            raise c.error("kv_source_layer_ids", f"layer {i} (compress ratio {ratios[i]}) reads the compressed entries "
                          f"of an earlier kv source of its ratio, and none comes before it: the first ratio-{ratios[i]} "
                          "layer writes them")
        written |= {ratios[i]} if i in sources else set()
        if i in sources:
            modes[i] = index if i in indexers else {}
        elif i in indexers:
            modes[i] = {"mode": "reindex", **index, **(pool if 0 <= candidate < i else {})}
        else:  # the entries the last indexer chose, or every entry where none came before
            modes[i] = {"mode": "reuse", **({"index_topk": index["index_topk"]} if indexed else {})}
        indexed |= i in indexers
    return modes


def _layer_ids(c: Config, key: str, n: int, ratios: list[int]) -> list[int]:
    """A V4.1 list of trunk layers of compress ratio 1 or 2, each named where it is not one."""
    ids = c.get(key, [])
    if not isinstance(ids, list):
        raise c.error(key, f"expected a list of layer indices, got {short(ids)}")
    for j, i in enumerate(ids):
        if type(i) is not int or not 0 <= i < n or ratios[i] not in CSA2_RATIOS:
            what = (f"layer {i} has compress ratio {ratios[i]}" if type(i) is int and 0 <= i < n
                    else f"{short(i)} is not a layer of the trunk's {n} (num_hidden_layers)")
            raise c.error(f"{key}.{j}", f"{what}: only ratio-1/2 layers (DeepSeek-V4.1's CSA2) share compressed "
                          "entries")
    again = first_repeat(ids)
    if again is not None:
        raise c.error(f"{key}.{again}", f"layer {ids[again]} is named twice")
    return ids


def _ratios(c: Config, n: int) -> list[int]:
    """Per-layer compress ratio: compress_ratios (released configs, MTP layers after the trunk),
    else layer_types with compress_rates (transformers' form, trunk only)."""
    rates = c.get("compress_rates", {})
    if not isinstance(rates, dict) or any(LAYER_TYPES.get(k) not in (None, v) for k, v in rates.items()):
        raise c.error("compress_rates", f"expected compressed_sparse_attention 4 and heavily_compressed_attention 128, "
                      f"got {short(rates)}")
    if c.get("compress_ratios") is not None:
        # the MTP (or DSpark) layers' ratios follow the trunk's; an entry past those is read by nothing
        # (warned of, and not built into a kind)
        mtp = c.int("num_nextn_predict_layers", 0)
        ratios = c.list("compress_ratios", n, past=mtp)[:n + mtp]
        for i, r in enumerate(ratios):
            if type(r) is not int or r not in RATIO_KINDS:
                raise c.error(f"compress_ratios.{i}", f"{short(r)} is not one of 0, 1, 2, 4, 128 (sliding, V4.1's "
                              "compressed sparse at ratio 1 or 2, compressed sparse, heavily compressed attention)")
        if c.get("layer_types") is not None:  # both forms given: read one, so they must say the same
            named = kinds_of(c, "layer_types", c.list("layer_types", n), dict(zip(LAYER_TYPES, LAYER_TYPES)))
            odd = next((i for i, (t, r) in enumerate(zip(named, ratios)) if _family(LAYER_TYPES[t]) != _family(r)), None)
            if odd is not None:
                raise c.error(f"layer_types.{odd}", f"{named[odd]} disagrees with compress_ratios.{odd} ({ratios[odd]}), "
                              "which mtpsim reads: give one of the two, or make them agree")
        return ratios
    return [LAYER_TYPES[t] for t in kinds_of(c, "layer_types", c.list("layer_types", n), dict(zip(LAYER_TYPES, LAYER_TYPES)))]


def _family(ratio: int) -> int:
    """A compress ratio's kind of attention: 0 sliding, 4 compressed sparse (V4.1's ratios 1 and 2
    too), 128 heavily compressed, as layer_types names them."""
    return 4 if ratio in (1, 2, 4) else ratio


def _is_v41(c: Config) -> bool:
    """A DeepSeek-V4.1 text config: its model_type, or the cross-layer sharing only V4.1 has."""
    return str(c.get("model_type", "")).startswith("deepseek_v41") or c.get("kv_source_layer_ids") is not None


def _hash_layers(c: Config, n: int, default: int) -> int:
    """How many leading layers route by hash: num_hash_layers, else mlp_layer_types' leading
    hash_moe run, else `default`: transformers' V4 default 3; V4.1's config class (SGLang v0.5.23
    configs/deepseek_v41.py, a DeepseekV3Config) has none, and its model reads num_hash_layers
    with a default of 0 (models/deepseek_v4.py)."""
    if c.get("mlp_layer_types") is None:
        hashed = c.int("num_hash_layers", default)
        if hashed > n:
            raise c.error("num_hash_layers", f"{hashed} hash-routed layers, but the model has {n} (num_hidden_layers)")
        return hashed
    kinds = kinds_of(c, "mlp_layer_types", c.list("mlp_layer_types", n), {"hash_moe": "hash_moe", "moe": "moe"})
    first = next((i for i, k in enumerate(kinds) if k != "hash_moe"), len(kinds))
    if "hash_moe" in kinds[first:]:
        raise c.error("mlp_layer_types", "hash_moe layers after a routed one are not modelled (a leading run is)")
    return first


def finish(top: Config, text: Config, mapping: dict[str, Any], drafters: dict[str, Any]) -> dict[str, Any]:
    """A read V4 mapping with its FP4 experts, V4.1's FP4 latents and Engram tables and, for a
    DSpark-bundled checkpoint, no serial MTP and the matching catalog drafter (`drafters`: name
    -> ModelSpec of role block_draft)."""
    # V4: the reference quantises the cache's non-rope dims to FP8 (QAT: act_quant on kv[..., :-rope]);
    # costs/compressed.py keeps the rope dims BF16. V4.1: its ratio-1/2 latents are E2M1 with E4M3
    # scales per 16 (tech report 2.4.4; SGLang v0.5.23 resolve_compressed_kv_layout packs them as FP4)
    low = any(k["compressed"]["ratio"] in CSA2_RATIOS for k in mapping["attention_kinds"].values())
    dtypes = {**mapping["dtypes"], "kv_cache": "fp4" if low else "fp8"}
    expert, written = _expert_dtype(top, text)
    if expert is not None:
        dtypes["experts"] = expert
    if dtypes.get("experts") == "fp4":  # the reference's FP4 blocks: a UE8M0 scale per 32 values (MXFP4's), unless NVFP4 is named
        mapping["fp4_scale_bytes"] = 1 / 16 if written == "nvfp4" else 1 / 32
    _engram(text, mapping)
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


def _expert_dtype(top: Config, text: Config) -> tuple[str | None, str | None]:
    """The experts' dtype and the name it was written as: `expert_dtype` in the text config (V4) or
    in quantization_config (V4.1), each a dtype or a 4-bit format engines name by its scales
    (MXFP4, NVFP4: fp4's payload); two that disagree are one error, not a silent pick."""
    known = {**{d: d for d in get_args(Dtype)}, "mxfp4": "fp4", "nvfp4": "fp4",  # and torch_dtype's spellings
             "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}
    quant = top.get("quantization_config")
    given = [(text, "expert_dtype", text.get("expert_dtype")),
             (top, "quantization_config.expert_dtype", quant.get("expert_dtype") if isinstance(quant, dict) else None)]
    found = []
    for where, key, value in given:
        if value is None:
            continue
        if not isinstance(value, str) or value.lower() not in known:
            raise where.error(key, f"expected one of {', '.join(known)}, got {short(value)}")
        found.append((value.lower(), key, known[value.lower()]))
    if len(found) == 2 and found[0][2] != found[1][2]:
        raise text.error("expert_dtype", f"{found[0][2]} here, and {found[1][2]} at quantization_config.expert_dtype: "
                         "the experts have one format")
    return (found[0][2], found[0][0]) if found else (None, None)


def _engram(text: Config, mapping: dict[str, Any]) -> None:
    """engram_layer_ids (DeepSeek-V4.1) -> `engram` (specs.EngramSpec: one table per listed layer,
    engram_num_embeddings rows each) and those trunk layers flagged `engram`."""
    ids = text.get("engram_layer_ids")
    if ids is None or ids == []:  # not `not ids`: a 0, false, "" or {} is a wrong type, said below
        return
    n = text.int("num_hidden_layers", low=1)
    if not isinstance(ids, list):
        raise text.error("engram_layer_ids", f"expected a list of layer indices, got {short(ids)}")
    for j, i in enumerate(ids):
        if type(i) is not int or not 0 <= i < n:
            raise text.error(f"engram_layer_ids.{j}", f"{short(i)} is not a layer of the trunk's {n} (num_hidden_layers)")
    again = first_repeat(ids)
    if again is not None:
        raise text.error(f"engram_layer_ids.{again}", f"layer {ids[again]} is named twice")
    rows = text.list("engram_num_embeddings", len(ids), past=0)
    for j, r in enumerate(rows):
        if type(r) is not int or not 1 <= r <= MAX_ENGRAM_ROWS:
            raise text.error(f"engram_num_embeddings.{j}", f"{short(r)} is not a row count (1..{MAX_ENGRAM_ROWS:,})")
    mapping["engram"] = {"rows": [rows[ids.index(i)] for i in sorted(ids)], "n_heads": text.int("engram_n_heads", low=1),
                         "max_ngram_size": text.int("engram_max_ngram_size", low=2),
                         "head_dim": text.int("engram_head_dim", low=1)}
    layers = [{"attention": g["attention"], "ffn": g["ffn"]} for g in mapping["layers"] for _ in range(g["count"])]
    mapping["layers"] = layer_runs([layer | ({"engram": True} if i in ids else {}) for i, layer in enumerate(layers)])


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
