"""One reader per Hugging Face architecture family: a config.json view -> the attention and FFN
kinds it describes and the pair of kinds at each layer index, following the family's modelling
code (cited in each reader; view.py reads the config and builds the kinds). Kinds are named
`gqa` / `mla` (one attention kind), `full`, `sliding`, `linear` (hybrids); `dense`, `dense_wide`,
`moe`, `moe_wide`.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from mtpsim.errors import short, warn
from mtpsim.hfconfig.view import Config, Layout, Pair, dense_kind, gqa_kind, head_dim_of, kinds_of, moe_kind

# config keys of attention variants past MLA and DSA that no op prices: each names what it is
UNPRICED_ATTENTION = {
    # DeepSeek-V4's, priced under model_type deepseek_v4 (hfconfig/deepseek_v4.py), not inside MLA
    "compress_ratios": "DeepSeek-V4's compressed sparse attention (KV compressed per layer by these ratios)",
    "o_lora_rank": "DeepSeek-V4's grouped low-rank output projection",
    "index_topk_freq": "an indexer shared over several layers (GLM-5.1 and later IndexShare)",
    "indexer_types": "per-layer full or shared indexers (GLM-5.1 and later IndexShare)",
}


def deepseek(c: Config) -> Layout:
    """DeepSeek-V2/V3/V3.2, Kimi-K2 and GLM-5 (transformers deepseek_v3 / deepseek_v32 / glm_moe_dsa,
    vLLM deepseek_v2.py): MLA everywhere; layer i is MoE when n_routed_experts is set, i >=
    first_k_dense_replace and i % moe_layer_freq == 0, with n_shared_experts shared experts
    moe_intermediate_size wide. The MTP modules are decoder layers built at index
    num_hidden_layers + k (vLLM deepseek_mtp.py), so the same rule gives their FFN. index_topk,
    index_n_heads and index_head_dim (DeepSeek-V3.2, GLM-5) make the MLA sparse (DSA: an indexer,
    then MLA over the top-k cached tokens; costs/ops.py). An attention variant no op prices
    (UNPRICED_ATTENTION) is an error naming its key."""
    for key, what in UNPRICED_ATTENTION.items():
        if c.get(key) is not None:
            raise c.error(key, f"{what}: an attention kind mtpsim does not price; write the spec as a catalog "
                          "file with an attention kind it does (mla, gqa, linear) to approximate it")
    mla = {"kind": "mla", "num_heads": c.int("num_attention_heads", low=1), "q_lora_rank": c.int("q_lora_rank", None),
           **{k: c.int(k) for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")}}
    if c.get("index_topk") is not None:
        mla |= {k: c.int(k, low=1) for k in ("index_topk", "index_n_heads", "index_head_dim")}
    experts, first, freq = c.int("n_routed_experts", 0), c.int("first_k_dense_replace", 0), c.int("moe_layer_freq", 1, low=1)
    ffns = {"dense": dense_kind(c.int("intermediate_size"))}
    if experts:
        width = c.int("moe_intermediate_size")
        ffns["moe"] = moe_kind(experts, c.int("num_experts_per_tok"), width, c.int("n_shared_experts", 0), width)
    return Layout({"mla": {k: v for k, v in mla.items() if v is not None}}, ffns,
                  lambda i: ("mla", "moe" if experts and i >= first and i % freq == 0 else "dense"))


def glm4_moe(c: Config) -> Layout:
    """GLM-4.5 / 4.6 (transformers glm4_moe): GQA everywhere (head_dim given: 96 x 128 is wider
    than hidden); MoE from layer first_k_dense_replace on, with n_shared_experts shared experts.
    The MTP layer is built at index num_hidden_layers (vLLM glm4_moe_mtp.py), so it is MoE too."""
    heads, first = c.int("num_attention_heads", low=1), c.int("first_k_dense_replace", 0)
    width = c.int("moe_intermediate_size")
    ffns = {"dense": dense_kind(c.int("intermediate_size")),
            "moe": moe_kind(c.int("n_routed_experts", low=1), c.int("num_experts_per_tok"), width,
                        c.int("n_shared_experts", 0), width)}
    attention = gqa_kind(heads, c.int("num_key_value_heads", heads), head_dim_of(c, heads))
    return Layout({"gqa": attention}, ffns, lambda i: ("gqa", "moe" if i >= first else "dense"))


def qwen3_next(c: Config) -> Layout:
    """Qwen3-Next (transformers qwen3_next): layer_types, else full attention every
    full_attention_interval-th layer and Gated DeltaNet (`linear`: value heads, key heads) in the
    rest; layer i is MoE when num_experts > 0, i is not in mlp_only_layers and (i + 1) %
    decoder_sparse_step == 0, with one shared expert shared_expert_intermediate_size wide. The
    released config declares no MTP layer, and vLLM's qwen3_next_mtp.py builds it as a full-attention
    MoE layer whatever the pattern says. Qwen3.5's text configs (qwen3_5_moe_text, and the dense
    qwen3_5_text of Qwen3.5-27B / Qwen3.6-27B: no experts, every FFN intermediate_size wide) are the
    same layout with mtp_num_hidden_layers MTP layers, which SGLang's qwen3_5_mtp.py builds as the
    family's own decoder on the same config cut to one layer with full_attention_interval = 1: full
    attention, and the FFN the layer rule gives layer 0 (MoE in the MoE releases, dense in the
    dense ones). The rule gives every MTP layer that pair."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    interval = c.int("full_attention_interval", 4, low=1)
    default = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    names = {"full_attention": "full", "linear_attention": "linear"}
    kinds = kinds_of(c, "layer_types", c.list("layer_types", n, default), names)
    linear = {"kind": "linear", "num_heads": c.int("linear_num_value_heads"), "num_kv_heads": c.int("linear_num_key_heads"),
              "head_dim": c.int("linear_key_head_dim"), "value_head_dim": c.int("linear_value_head_dim"),
              "conv_kernel": c.int("linear_conv_kernel_dim", 4, low=1)}
    shared = c.int("shared_expert_intermediate_size", 0)
    ffns, ffn = _qwen_sparse_ffns(c, n, int(shared > 0), shared)

    def pair(i: int) -> Pair:  # an MTP layer (i >= n): its one-layer decoder's layer 0, full attention
        return (kinds[i], ffn(i)) if i < n else ("full", ffn(0))
    attention = {"full": gqa_kind(heads, c.int("num_key_value_heads", heads), head_dim_of(c, heads)), "linear": linear}
    return Layout(attention, ffns, pair)


def qwen3_moe(c: Config) -> Layout:
    """Qwen3 MoE (transformers qwen3_moe v4.57 Qwen3MoeDecoderLayer; the text decoder of Qwen3-VL MoE,
    qwen3_vl_moe_text, is the same): GQA, head_dim hidden_size / num_attention_heads unless given
    (Qwen3MoeConfig sets no default; the releases give 128), every layer windowed by sliding_window
    when use_sliding_window (Qwen3MoeAttention reads the one window for all layers; false in the
    releases). Layer i is MoE when num_experts > 0, i is not in mlp_only_layers and (i + 1) %
    decoder_sparse_step == 0: num_experts routed experts moe_intermediate_size wide, top
    num_experts_per_tok, no shared expert; else a dense MLP intermediate_size wide. No MTP layers."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    window = c.int("sliding_window", low=1) if c.bool("use_sliding_window", False) else None
    attention = {"gqa": gqa_kind(heads, c.int("num_key_value_heads", heads), head_dim_of(c, heads), window)}
    ffns, ffn = _qwen_sparse_ffns(c, n)
    return Layout(attention, ffns, lambda i: ("gqa", ffn(i)) if i < n else None)


def _qwen_sparse_ffns(c: Config, n: int, shared: int = 0, shared_width: int = 0):
    """The Qwen MoE families' FFN rule (Qwen3MoeDecoderLayer, Qwen3NextDecoderLayer): layer i is MoE
    when num_experts > 0, i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0, else a
    dense MLP intermediate_size wide. Returns the kinds (a dense one only where some layer has one:
    Qwen3.5 MoE gives no intermediate_size) and the rule, layer index -> kind name."""
    experts, step = c.int("num_experts", 0), c.int("decoder_sparse_step", 1, low=1)
    dense_only = _layer_set(c, "mlp_only_layers", n)

    def ffn(i: int) -> str:
        return "moe" if experts and i not in dense_only and (i + 1) % step == 0 else "dense"
    ffns = {"dense": dense_kind(c.int("intermediate_size"))} if any(ffn(i) == "dense" for i in range(n)) else {}
    if experts:
        ffns["moe"] = moe_kind(experts, c.int("num_experts_per_tok"), c.int("moe_intermediate_size"), shared,
                               shared_width or None)
    return ffns, ffn


def mixtral(c: Config) -> Layout:
    """Mixtral (transformers mixtral v4.57 MixtralDecoderLayer): GQA, head_dim hidden_size /
    num_attention_heads unless given, every layer windowed by sliding_window when it is set (null
    in the released 8x7B and 8x22B configs); every FFN is MoE, num_local_experts experts
    intermediate_size wide, top num_experts_per_tok, no shared expert. No MTP layers."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    attention = gqa_kind(heads, c.int("num_key_value_heads", heads), head_dim_of(c, heads),
                         c.int("sliding_window", None, low=1))
    moe = moe_kind(c.int("num_local_experts", low=1), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Layout({"gqa": attention}, {"moe": moe}, lambda i: ("gqa", "moe") if i < n else None)


def mimo_v2_flash(c: Config) -> Layout:
    """MiMo-V2-Flash (XiaomiMiMo/MiMo-V2-Flash remote code; transformers mimo_v2_flash and its
    config converter): hybrid_layer_pattern (1 = sliding window, 0 = full) or layer_types picks
    each layer's attention: full layers num_attention_heads / num_key_value_heads / head_dim
    (Q/K) / v_head_dim, sliding ones the swa_* fields, window sliding_window (or
    sliding_window_size); moe_layer_freq (1 = MoE) or mlp_layer_types (`sparse`) picks the FFN,
    with n_shared_experts (null in the release) shared experts moe_intermediate_size wide as in
    DeepSeek. Those lists stop at num_hidden_layers: the MTP layers' kind is not in the config."""
    n = c.int("num_hidden_layers", low=1)
    if c.get("hybrid_layer_pattern") is not None:
        kinds = kinds_of(c, "hybrid_layer_pattern", c.list("hybrid_layer_pattern", n), {0: "full", 1: "sliding"})
    else:
        kinds = kinds_of(c, "layer_types", c.list("layer_types", n), {"full_attention": "full", "sliding_attention": "sliding"})
    if c.get("moe_layer_freq") is not None:
        ffn = kinds_of(c, "moe_layer_freq", c.list("moe_layer_freq", n), {0: "dense", 1: "moe"})
    else:
        ffn = kinds_of(c, "mlp_layer_types", c.list("mlp_layer_types", n), {"dense": "dense", "sparse": "moe"})
    attention = {"full": gqa_kind(c.int("num_attention_heads", low=1), c.int("num_key_value_heads"), c.int("head_dim"),
                              v_head_dim=c.int("v_head_dim", None, low=1))}
    if "sliding" in kinds:
        window_key = "sliding_window" if c.get("sliding_window") is not None else "sliding_window_size"
        head_dim, window = c.int("swa_head_dim"), c.int(window_key, low=1)
        other = c.get("sliding_window_size")
        if window_key == "sliding_window" and other is not None and other != window:  # which one an engine reads sets it
            raise c.error("sliding_window_size", f"{short(other)} tokens, and sliding_window {window}: the two keys "
                          "give one window, so keep one (or make them agree)")
        attention["sliding"] = gqa_kind(c.int("swa_num_attention_heads", low=1), c.int("swa_num_key_value_heads"), head_dim,
                                    window, c.int("swa_v_head_dim", None, low=1))
    width, shared = c.int("moe_intermediate_size"), c.int("n_shared_experts", 0)
    ffns = {"dense": dense_kind(c.int("intermediate_size")),
            "moe": moe_kind(c.int("n_routed_experts", low=1), c.int("num_experts_per_tok"), width, shared, width)}
    return Layout(attention, ffns, lambda i: (kinds[i], ffn[i]) if i < n else None,
                  "the MiMo-V2-Flash report (arXiv 2601.02780 §2.3) gives {attention: sliding, ffn: dense}")


def gemma4(c: Config) -> Layout:
    """Gemma 4's text decoder (transformers gemma4: Gemma4TextAttention, Gemma4TextMLP): layer_types
    name each layer sliding_attention (head_dim, num_key_value_heads, window sliding_window) or
    full_attention (global_head_dim; num_global_key_value_heads when attention_k_eq_v, else
    num_key_value_heads). The MLP is intermediate_size wide, doubled on the last
    num_kv_shared_layers layers when use_double_wide_mlp. With enable_moe_block every layer also
    routes top_k_experts of num_experts (moe_intermediate_size wide) beside that MLP, which is
    written as one shared expert. Not expressible: per-layer embeddings, KV sharing (the shared
    layers write no KV), soft-capping. Gemma 4 has no MTP layers (its drafter is an assistant)."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    kinds = kinds_of(c, "layer_types", c.list("layer_types", n), {"sliding_attention": "sliding", "full_attention": "full"})
    kv, head_dim = c.int("num_key_value_heads", heads), head_dim_of(c, heads)
    full_kv = c.int("num_global_key_value_heads") if c.bool("attention_k_eq_v", False) else kv
    attention = {"sliding": gqa_kind(heads, kv, head_dim, c.int("sliding_window", low=1)),
                 "full": gqa_kind(heads, full_kv, c.int("global_head_dim", None, low=1) or head_dim)}
    first_shared = n - c.int("num_kv_shared_layers", 0)
    if first_shared < 0:
        raise c.error("num_kv_shared_layers", f"{n - first_shared} layers share KV, more than the {n} there are")
    double = c.bool("use_double_wide_mlp", False)
    wide = [double and i >= first_shared > 0 for i in range(n)]
    width = c.int("intermediate_size")
    if c.bool("enable_moe_block", False):
        experts = (c.int("num_experts", low=1), c.int("top_k_experts"), c.int("moe_intermediate_size"))
        ffns = {"moe": moe_kind(*experts, 1, width), "moe_wide": moe_kind(*experts, 1, 2 * width)}
        names = ("moe", "moe_wide")
    else:
        ffns, names = {"dense": dense_kind(width), "dense_wide": dense_kind(2 * width)}, ("dense", "dense_wide")
    return Layout(attention, ffns, lambda i: (kinds[i], names[wide[i]]) if i < n else None, tie_default=True)


def dense_gqa(c: Config, head_dim_default: int | None = None) -> Layout:
    """Llama, Qwen2 and MiMo-7B (transformers llama / qwen2; MiMo's remote code subclasses
    Qwen2): GQA and a dense MLP in every layer, head_dim defaulting to hidden_size /
    num_attention_heads. Qwen2 with use_sliding_window slides sliding_window from layer
    max_window_layers on (layer_types when given). MiMo-7B's MTP layers are Qwen2 decoder layers
    on the same config (vLLM mimo_mtp.py), so the rule gives their kind."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    kv, head_dim = c.int("num_key_value_heads", heads), head_dim_of(c, heads, head_dim_default)
    if c.get("layer_types") is not None:
        mtp = c.int("num_nextn_predict_layers", 0)  # MiMo-7B: its MTP layers' kinds follow the trunk's
        kinds = kinds_of(c, "layer_types", c.list("layer_types", n, past=mtp),
                         {"full_attention": "gqa", "sliding_attention": "sliding"})
        sliding = "sliding" in kinds
        kind_at = lambda i: kinds[i] if i < len(kinds) else None
    else:
        sliding = c.bool("use_sliding_window", False)
        first = c.int("max_window_layers", 0) if sliding else 0
        kind_at = lambda i: "sliding" if sliding and i >= first else "gqa"
    attention = {"gqa": gqa_kind(heads, kv, head_dim)}
    if sliding:
        attention["sliding"] = gqa_kind(heads, kv, head_dim, c.int("sliding_window", low=1))
    return Layout(attention, {"dense": dense_kind(c.int("intermediate_size"))},
                  lambda i: (kind_at(i), "dense") if kind_at(i) else None)


def step3p5(c: Config) -> Layout:
    """Step 3.5 Flash (stepfun-ai/Step-3.5-Flash remote code; vLLM and llama.cpp step3p5):
    layer_types name each layer's attention and go on past num_hidden_layers for the MTP layers:
    full_attention num_attention_heads / num_attention_groups (KV heads) / head_dim,
    sliding_attention the same from attention_other_setting (the full ones where it gives none),
    window sliding_window. Layers in moe_layers_enum are MoE (moe_num_experts, moe_top_k,
    moe_intermediate_size, one shared expert share_expert_dim wide), the rest dense; the MTP
    layers are not in it, so dense."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    kinds = kinds_of(c, "layer_types", c.list("layer_types", n, past=c.int("num_nextn_predict_layers", 0)),
                     {"full_attention": "full", "sliding_attention": "sliding"})
    kv, head_dim = c.int("num_attention_groups", heads), head_dim_of(c, heads)
    other = c.sub("attention_other_setting") if c.get("attention_other_setting") is not None else Config({}, c.path)
    attention = {"full": gqa_kind(heads, kv, head_dim),
                 "sliding": gqa_kind(other.int("num_attention_heads", heads, low=1), other.int("num_attention_groups", kv),
                                 other.int("head_dim", head_dim), c.int("sliding_window", low=1))}
    moe_layers = _layer_set(c, "moe_layers_enum", n)
    shared = c.int("share_expert_dim", 0)
    ffns = {"dense": dense_kind(c.int("intermediate_size"))}
    if moe_layers:
        ffns["moe"] = moe_kind(c.int("moe_num_experts", low=1), c.int("moe_top_k"), c.int("moe_intermediate_size"),
                           int(shared > 0), shared)
    return Layout(attention, ffns, lambda i: (kinds[i], "moe" if i in moe_layers else "dense") if i < len(kinds) else None)


def minimax_m2(c: Config) -> Layout:
    """MiniMax-M2 / M2.5 (MiniMaxAI remote code modeling_minimax_m2.py; vLLM minimax_m2.py): GQA
    (num_attention_heads, num_key_value_heads, head_dim) and a MoE FFN in every layer,
    num_local_experts routed experts intermediate_size wide, top num_experts_per_tok, a shared
    expert only when shared_intermediate_size > 0. The config declares num_mtp_modules MTP
    modules (use_mtp) without their layers' kind: the per-layer rule does not reach them."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    shared = c.int("shared_intermediate_size", 0)
    moe = moe_kind(c.int("num_local_experts", low=1), c.int("num_experts_per_tok"), c.int("intermediate_size"),
               int(shared > 0), shared or None)
    attention = gqa_kind(heads, c.int("num_key_value_heads", heads), head_dim_of(c, heads))
    return Layout({"gqa": attention}, {"moe": moe}, lambda i: ("gqa", "moe") if i < n else None,
                  "config.json does not describe MiniMax-M2's MTP modules")


def gpt_oss(c: Config) -> Layout:
    """gpt-oss (transformers gpt_oss, GptOssForCausalLM): layer_types alternates sliding-window
    (sliding_window tokens) and full GQA attention, both num_attention_heads / num_key_value_heads
    / head_dim; every FFN is MoE, num_local_experts routed experts intermediate_size wide, top
    num_experts_per_tok, no shared expert. The per-head attention sinks are one learned logit
    each in the softmax's denominator: no KV and O(heads) flops, so no op of their own."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    kinds = kinds_of(c, "layer_types", c.list("layer_types", n), {"full_attention": "full", "sliding_attention": "sliding"})
    kv, head_dim = c.int("num_key_value_heads", heads), head_dim_of(c, heads)
    attention = {"full": gqa_kind(heads, kv, head_dim)}
    if "sliding" in kinds:
        attention["sliding"] = gqa_kind(heads, kv, head_dim, c.int("sliding_window", low=1))
    moe = moe_kind(c.int("num_local_experts", low=1), c.int("num_experts_per_tok"), c.int("intermediate_size"))
    return Layout(attention, {"moe": moe}, lambda i: (kinds[i], "moe") if i < n else None)


def llama4(c: Config) -> Layout:
    """Llama 4 Scout / Maverick's text decoder (transformers llama4 v4.57: Llama4TextConfig,
    Llama4TextDecoderLayer, Llama4TextMoe): GQA in every layer. layer_types names each layer
    chunked_attention or full_attention; without it, no_rope_layers does (1: RoPE, chunked; 0:
    NoPE, full), and without that every no_rope_layer_interval-th layer (4) is full. Chunked layers
    attend within blocks of attention_chunk_size tokens, priced as a window of the chunk: exact
    while a request's context fits one chunk, past it an upper bound on the keys read (a chunk
    reads only its own; said in a warning); their KV is kept whole (`chunked`: vLLM turns its
    hybrid KV cache manager off for chunked local attention by default and beside EAGLE). Layer i
    is MoE when it is in moe_layers (default every interleave_moe_layer_step-th, from step - 1):
    num_local_experts routed experts intermediate_size wide, top num_experts_per_tok, beside one
    shared expert of the same width (Llama4TextMoe.shared_expert); the others a dense MLP
    intermediate_size_mlp wide. No MTP layers."""
    n, heads = c.int("num_hidden_layers", low=1), c.int("num_attention_heads", low=1)
    if c.get("layer_types") is not None:
        kinds = kinds_of(c, "layer_types", c.list("layer_types", n),
                         {"chunked_attention": "chunked", "full_attention": "full"})
    elif c.get("no_rope_layers"):  # transformers reads [] as unset too
        kinds = kinds_of(c, "no_rope_layers", c.list("no_rope_layers", n), {1: "chunked", 0: "full"})
    else:
        interval = c.int("no_rope_layer_interval", 4, low=1)
        kinds = ["chunked" if (i + 1) % interval else "full" for i in range(n)]
    kv, head_dim = c.int("num_key_value_heads", heads), head_dim_of(c, heads)
    attention = {"full": gqa_kind(heads, kv, head_dim)}
    if "chunked" in kinds:
        chunk = c.int("attention_chunk_size", 8192, low=1)
        attention["chunked"] = gqa_kind(heads, kv, head_dim, chunk) | {"chunked": True}
        warn(c.path, f"{c.prefix}attention_chunk_size", f"{kinds.count('chunked')} of {n} layers attend within chunks "
             f"of {chunk} tokens, priced as a sliding window of {chunk}: exact while a request's context fits one "
             "chunk, past it an upper bound on the keys they read (a chunk reads only its own tokens); their KV is "
             "kept whole, as vLLM keeps it by default")
    step = c.int("interleave_moe_layer_step", 1, low=1)
    moe_layers = _layer_set(c, "moe_layers", n) if c.get("moe_layers") is not None else set(range(step - 1, n, step))
    ffns = {}  # moe_layers [] (or a step past the layers) is an all-dense model, as transformers builds it
    if moe_layers:
        width = c.int("intermediate_size")
        ffns["moe"] = moe_kind(c.int("num_local_experts", low=1), c.int("num_experts_per_tok"), width, 1, width)
    if len(moe_layers) < n:
        ffns["dense"] = dense_kind(c.int("intermediate_size_mlp", 16384))
    return Layout(attention, ffns, lambda i: (kinds[i], "moe" if i in moe_layers else "dense") if i < n else None)


def _layer_set(c: Config, key: str, n: int) -> set[int]:
    """Layer indices written "3,4,5" or [3, 4, 5], each one of the n layers."""
    value = c.get(key, [])
    try:
        items = value.split(",") if isinstance(value, str) else list(value)
        # a list holds JSON integers (int() would read 1.5 as layer 1 and true as layer 1)
        if not isinstance(value, str) and any(type(v) is not int for v in items):
            raise ValueError
        # a string's items in ASCII decimal only (int() would read "1_0" as 10 and an Arabic-Indic digit)
        if isinstance(value, str) and not all(re.fullmatch(r"\s*-?[0-9]+\s*", v) or not v.strip() for v in items):
            raise ValueError
        found = {int(v) for v in items if str(v).strip()}
    except (TypeError, ValueError):
        raise c.error(key, f"expected layer indices (\"3,4,5\" or a list of integers), got {short(value)}") from None
    outside = sorted(i for i in found if not 0 <= i < n)
    if outside:
        raise c.error(key, f"layer {outside[0]} is not one of the {n} layers (0..{n - 1})")
    return found


READERS: dict[str, Callable[[Config], Layout]] = {
    "deepseek_v2": deepseek, "deepseek_v3": deepseek, "deepseek_v32": deepseek, "deepseek_v4": deepseek,
    "kimi_k2": deepseek, "kimi_k25": deepseek, "glm_moe_dsa": deepseek, "glm4_moe": glm4_moe, "qwen3_next": qwen3_next,
    "qwen3_5_moe": qwen3_next, "qwen3_5_moe_text": qwen3_next, "qwen3_5": qwen3_next, "qwen3_5_text": qwen3_next,
    "qwen3_moe": qwen3_moe, "qwen3_vl_moe": qwen3_moe, "qwen3_vl_moe_text": qwen3_moe, "mixtral": mixtral,
    "minimax_m2": minimax_m2,
    "mimo_v2_flash": mimo_v2_flash, "gemma4": gemma4, "gemma4_text": gemma4, "llama": dense_gqa, "qwen2": dense_gqa,
    "mimo": dense_gqa, "step3p5": step3p5, "gpt_oss": gpt_oss, "llama4": llama4, "llama4_text": llama4}
def qwen3(c: Config) -> Layout:
    """Qwen3 dense (transformers qwen3): qwen2's layout, but a config without head_dim has
    Qwen3Config's 128, not hidden_size / heads (a Qwen3-32B shape without it was priced at 80-wide
    heads: 61 GB of weights for 65.5); QK-norm is elementwise."""
    return dense_gqa(c, head_dim_default=128)


READERS["qwen3"] = READERS["qwen3_vl"] = READERS["qwen3_vl_text"] = qwen3  # Qwen3-VL's text decoder is Qwen3's
ARCHITECTURES = {
    "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3", "Glm4MoeForCausalLM": "glm4_moe",
    "DeepseekV32ForCausalLM": "deepseek_v32", "GlmMoeDsaForCausalLM": "glm_moe_dsa", "MiniMaxM2ForCausalLM": "minimax_m2",
    "Qwen3NextForCausalLM": "qwen3_next", "MiMoV2FlashForCausalLM": "mimo_v2_flash",
    "Gemma4ForConditionalGeneration": "gemma4", "Gemma4ForCausalLM": "gemma4_text", "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2", "MiMoForCausalLM": "mimo", "Step3p5ForCausalLM": "step3p5",
    "GptOssForCausalLM": "gpt_oss", "Qwen3MoeForCausalLM": "qwen3_moe", "MixtralForCausalLM": "mixtral",
    "Qwen3_5ForConditionalGeneration": "qwen3_5", "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3VLForConditionalGeneration": "qwen3_vl", "Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
    "Llama4ForConditionalGeneration": "llama4", "Llama4ForCausalLM": "llama4_text"}
# the block drafters (hfconfig/blocks.py) are Qwen3 decoder layers
ARCHITECTURES |= {"Qwen3ForCausalLM": "qwen3", "DFlashDraftModel": "qwen3", "Qwen3DSparkModel": "qwen3"}
