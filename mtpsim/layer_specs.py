"""The kinds a model's layers are made of: attention kinds (gqa, mla, linear, DeepSeek-V4's
compressed), FFN kinds (dense, moe), and the layer references that pair them. Each kind refuses
another kind's fields (`_refuse_stray`) and contradictions among its own; specs.py's ModelSpec
names them by key."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.spec_base import MAX_CONTEXT, MAX_EXPERTS, MAX_HEADS, MAX_LAYERS, MAX_WIDTH, Spec

# DeepSeek-V4.1's CSA2 compress ratios: compressed entries shared across layers (modes), no gate at
# ratio 1, index keys from the pooled latent, FP4-packable latents (costs/compressed.py)
CSA2_RATIOS = (1, 2)


class CompressedAttention(Spec):
    """DeepSeek-V4's hybrid attention (kind `compressed`; mtpsim/costs/compressed.py prices it):
    one shared K=V head of head_dim over a sliding window of the last `window` tokens plus, with
    `ratio` > 0, one compressed entry per `ratio` tokens (ratio 4: CSA, a lightning indexer of
    index_n_heads x index_head_dim keeps the index_topk best compressed entries per query;
    ratio 128: HCA, every compressed entry is attended); ratio 0: the window alone. The output
    projection is grouped low-rank (o_groups groups of o_lora_rank). hc_mult: the block's
    hyper-connection copies of the residual stream (1: none), priced with the attention.

    DeepSeek-V4.1's ratios 1 and 2 (CSA2) share compressed KV across layers (`mode`): a `full`
    layer owns its compressed entries (its compressor writes them) and, with an indexer, scores
    every one; a `reindex` layer owns none and its indexer rescores only a candidate pool of
    `candidate_pool` positions an earlier layer chose (every entry when None); a `reuse` layer
    owns none and runs no indexer, attending the index_topk entries the last indexer chose (SGLang
    v0.5.23 srt/layers/attention/dsv4/dsv41_sparse.py: "Only kv_source layers own compressed
    latents; later layers of the same ratio share that storage"). Every layer keeps its own window."""

    ratio: int = Field(ge=0, le=MAX_CONTEXT)
    window: int = Field(gt=0, le=MAX_CONTEXT)
    o_groups: int = Field(gt=0, le=MAX_HEADS)
    o_lora_rank: int = Field(gt=0, le=MAX_WIDTH)
    index_topk: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    index_n_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)
    index_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    hc_mult: int = Field(default=1, ge=1, le=64)
    hc_sinkhorn_iters: int = Field(default=0, ge=0, le=1000)
    mode: Literal["full", "reindex", "reuse"] = "full"
    candidate_pool: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)

    @model_validator(mode="after")
    def _indexer(self) -> CompressedAttention:
        heads = [self.index_n_heads, self.index_head_dim]
        if self.mode == "reindex" and self.index_n_heads is None:
            raise ValueError("a reindex layer rescores with an indexer of its own: give index_topk, index_n_heads "
                             "and index_head_dim")
        if self.mode == "reuse":  # it reads the entries an earlier indexer chose: a top-k, no heads of its own
            if any(v is not None for v in heads):
                raise ValueError("a reuse layer runs no indexer (index_n_heads and index_head_dim are an indexer's); "
                                 "index_topk alone says how many chosen entries it reads")
        elif any(v is not None for v in [self.index_topk, *heads]) and None in [self.index_topk, *heads]:
            raise ValueError("an indexer needs index_topk, index_n_heads and index_head_dim together")
        if self.index_topk is not None and not self.ratio:
            raise ValueError("index_topk picks compressed entries: it needs ratio > 0")
        if self.mode != "full" and not self.ratio:
            raise ValueError(f"a {self.mode} layer reads another layer's compressed entries: it needs ratio > 0")
        if self.candidate_pool is not None and self.mode != "reindex":
            raise ValueError("candidate_pool is the positions a reindex layer rescores (mode: reindex)")
        if self.candidate_pool is not None and self.candidate_pool < self.index_topk:
            raise ValueError(f"candidate_pool {self.candidate_pool} is smaller than the index_topk {self.index_topk} a "
                             "reindex layer keeps from it")
        return self

    @property
    def owns_entries(self) -> bool:
        """Whether this layer writes compressed entries of its own (and keeps a compressor)."""
        return self.ratio > 0 and self.mode == "full"

    @property
    def runs_indexer(self) -> bool:
        return self.index_n_heads is not None

    @property
    def csa2(self) -> bool:
        """Whether this is one of DeepSeek-V4.1's ratio-1/2 kinds (CSA2_RATIOS): its compressor has
        no gate at ratio 1 and no indexer compressor (index keys come from the pooled latent through
        a head_dim -> index_head_dim wk), and its latents pack into FP4 (SGLang v0.5.23
        srt/layers/attention/dsv4/dsv41_sparse.py DeepseekV41Compressor, DeepseekV41Indexer; ratios
        4 and 128 run V4's Compressor and C4Indexer)."""
        return self.ratio in CSA2_RATIOS


def _refuse_stray(spec: BaseModel, what: str, takes: set[str]) -> None:
    """A ValueError naming the fields `spec` gives a value other than their default that its kind
    does not read (`takes`): another kind's fields, which would be ignored without a word. Fields
    left at their default (None, or a copy that dumps every field) are not counted."""
    stray = sorted(name for name, field in type(spec).model_fields.items()
                   if name not in takes and getattr(spec, name) != field.default)
    if stray:
        raise ValueError(f"{what} kind {spec.kind!r} does not take {', '.join(stray)} "
                         f"(it takes {', '.join(sorted(takes - {'kind'}))})")


# the fields each attention kind reads (besides kind and num_heads): a field of another kind is refused
_SHARED_ATTENTION = {"kind", "num_heads"}
ATTENTION_FIELDS = {
    # an indexer on gqa: Qwen4-Exp's QSA (one index key per index_block tokens); hc_*: hyper-connections
    "gqa": _SHARED_ATTENTION | {"num_kv_heads", "head_dim", "v_head_dim", "window", "chunked", "kv_source", "input_size",
                                "index_topk", "index_n_heads", "index_head_dim", "index_block", "hc_mult",
                                "hc_lowrank"},
    # a window on mla: a drafter's rolling window over its own cache (DSpark)
    "mla": _SHARED_ATTENTION | {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                "index_topk", "index_n_heads", "index_head_dim", "window"},
    "linear": _SHARED_ATTENTION | {"num_kv_heads", "head_dim", "value_head_dim", "conv_kernel", "hc_mult", "hc_lowrank"},
    "compressed": _SHARED_ATTENTION | {"num_kv_heads", "head_dim", "q_lora_rank", "qk_rope_head_dim", "compressed"},
}


def _compressed_fits(att) -> None:
    """DeepSeek-V4's compressed attention, as its config and costs/compressed.py have it: one
    shared K=V head (num_kv_heads 1: a key more is not priced), rotary dims within that head, and
    output groups that split the query heads evenly (o_groups | num_heads)."""
    if att.num_kv_heads not in (None, 1):
        raise AtKey("num_kv_heads", f"{att.num_kv_heads}: compressed attention keeps one shared K=V head "
                    "(DeepSeek-V4 num_key_value_heads 1); more are not priced")
    if att.qk_rope_head_dim > att.head_dim:
        raise AtKey("qk_rope_head_dim", f"{att.qk_rope_head_dim} rotary dims of a {att.head_dim}-dim head: expected "
                    f"1..{att.head_dim}")
    groups = att.compressed.o_groups
    if groups > att.num_heads or att.num_heads % groups:
        raise AtKey("compressed.o_groups", f"{groups} output groups do not split {att.num_heads} query heads evenly")


class AttentionSpec(Spec):
    """One attention kind.

    kind: `gqa` (MHA is gqa with num_kv_heads == num_heads), `mla` (DeepSeek latent attention,
    absorbed at decode), `linear` (Gated DeltaNet style: a constant-size state per request).
    window: sliding-window length in tokens; None = global.
    kv_source: for query-only (frozen-KV assistant) layers, which target layer's KV they read.
    """

    kind: Literal["gqa", "mla", "linear", "compressed"]
    num_heads: int = Field(gt=0, le=MAX_HEADS)
    num_kv_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)
    head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    window: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    # chunked local attention (Llama 4): queries attend within blocks of `window` tokens, priced as a
    # window (exact within one chunk, an upper bound past it), while the KV stays whole: vLLM keeps every
    # token's KV for these layers (its hybrid KV cache manager is off for chunked local attention by
    # default, and always beside EAGLE: vllm/config/vllm.py, VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE)
    chunked: bool = False
    # MLA
    q_lora_rank: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    kv_lora_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    qk_nope_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    qk_rope_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    v_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    # linear attention (Gated DeltaNet): num_heads are value heads, num_kv_heads key heads
    value_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    conv_kernel: int = Field(default=4, gt=0, le=MAX_WIDTH)
    # frozen-KV assistant layers
    kv_source: Literal["target_last_sliding", "target_last_full"] | None = None
    # width the q/k/v projections read when it is not the hidden size (EAGLE-3's draft layer reads
    # embedding ++ hidden, 2 x hidden)
    input_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    compressed: CompressedAttention | None = None  # kind compressed (DeepSeek-V4)
    # DeepSeek sparse attention (DSA, DeepSeek-V3.2): a lightning indexer scores every cached token
    # (index_n_heads heads of index_head_dim over an FP8 key cache of its own), then MLA attends
    # only the index_topk best (costs/ops.py IndexerKernel)
    index_topk: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    index_n_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)
    index_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    # Qwen Sparse Attention (QSA, Qwen4-Exp: gqa with an indexer): the indexer keeps one key per
    # `index_block` tokens (mean-pooled, indexer_compress_ratio) and scores those, picking blocks;
    # index_topk stays the tokens attended (indexer_budget). None: one key per token (DSA)
    index_block: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    # hyper-connections of a gqa or linear layer (kind compressed keeps its own in `compressed`):
    # hc_mult copies of the residual stream; hc_lowrank: Qwen4-Exp's gated residual, whose mix is a
    # low-rank down (hc x hidden -> hc_lowrank + hc) and up (-> hc x hidden) pair of BF16 GEMMs at
    # each of the layer's two sites (costs/compressed.py hyper_connection_ops)
    hc_mult: int = Field(default=1, ge=1, le=64)
    hc_lowrank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)

    @model_validator(mode="after")
    def _fields_for_kind(self) -> AttentionSpec:
        need = {
            "gqa": ["num_kv_heads", "head_dim"],
            "mla": ["kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"],
            "linear": ["num_kv_heads", "head_dim", "value_head_dim"],
            "compressed": ["head_dim", "qk_rope_head_dim", "q_lora_rank", "compressed"],
        }[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"attention kind {self.kind!r} needs {', '.join(missing)}")
        _refuse_stray(self, "attention", ATTENTION_FIELDS[self.kind])
        if self.kind in ("gqa", "linear") and self.num_heads % self.num_kv_heads:
            # each KV head serves a whole group of query heads (transformers repeat_kv); in Gated
            # DeltaNet each key head a group of value heads (num_v_heads // num_k_heads)
            what = "query heads" if self.kind == "gqa" else "value heads (num_heads)"
            raise ValueError(f"num_heads {self.num_heads} is not a multiple of num_kv_heads {self.num_kv_heads} "
                             f"(each {'KV' if self.kind == 'gqa' else 'key'} head serves a group of {what})")
        if self.chunked and self.window is None:
            raise AtKey("chunked", "chunked attention attends within chunks of `window` tokens: give window")
        if self.kind == "compressed" and self.compressed is None:
            raise ValueError("`compressed` goes with attention kind compressed")
        if self.kind == "compressed":
            _compressed_fits(self)
        index = [self.index_topk, self.index_n_heads, self.index_head_dim]
        if any(v is not None for v in index) and any(v is None for v in index):
            raise ValueError("sparse attention needs index_topk, index_n_heads and index_head_dim together")
        if self.index_block is not None and self.index_topk is None:
            raise ValueError("index_block pools the keys an indexer scores: it needs index_topk, index_n_heads "
                             "and index_head_dim")
        if self.index_block is not None and self.index_topk % self.index_block:
            # QSA picks index_topk / index_block whole blocks (qwen3.8-flash-next: 2048 / 4 = 512 a query):
            # a block past index_topk is a fraction of one, a remainder tokens no block brings
            raise AtKey("index_block", f"{self.index_block} does not divide index_topk {self.index_topk}: the "
                        "indexer keeps index_topk / index_block whole blocks of tokens")
        if (self.hc_lowrank is not None) != (self.hc_mult > 1):
            raise ValueError("hc_mult > 1 and hc_lowrank go together: a gqa or linear layer's hyper-connections mix "
                             "through Qwen4-Exp's low-rank gated residual (DeepSeek-V4's Sinkhorn mix is kind "
                             "compressed's)")
        return self

    @property
    def hc_copies(self) -> int:
        """Hyper-connection copies of the residual stream at this layer (1: none), wherever the kind keeps them."""
        return self.compressed.hc_mult if self.compressed is not None else self.hc_mult

    @property
    def sparse(self) -> bool:
        """Whether an indexer picks the keys this attention reads (DSA)."""
        return self.index_topk is not None


FFN_FIELDS = {
    "dense": {"kind", "intermediate_size"},
    "moe": {"kind", "num_experts", "top_k", "expert_intermediate_size", "num_shared_experts",
            "shared_intermediate_size", "routing"},
}


class FFNSpec(Spec):
    """One FFN kind: `dense` (gated, 3 matrices) or `moe` (routed experts + shared experts)."""

    kind: Literal["dense", "moe"]
    intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    num_experts: int | None = Field(default=None, gt=0, le=MAX_EXPERTS)
    top_k: int | None = Field(default=None, gt=0, le=MAX_EXPERTS)
    expert_intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    num_shared_experts: int = Field(default=0, ge=0, le=MAX_EXPERTS)
    shared_intermediate_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    routing: Literal["topk", "hash"] = "topk"
    """MoE expert choice: `topk` of the router's scores, or `hash`, a token-id -> experts table
    (DeepSeek-V4's first layers): the router GEMM still runs (its scores weight the chosen experts),
    the top-k becomes a gather, and the load follows the hash, not the routing skew."""

    @model_validator(mode="after")
    def _fields_for_kind(self) -> FFNSpec:
        need = {"dense": ["intermediate_size"],
                "moe": ["num_experts", "top_k", "expert_intermediate_size"]}[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"ffn kind {self.kind!r} needs {', '.join(missing)}")
        _refuse_stray(self, "ffn", FFN_FIELDS[self.kind])
        if self.kind == "moe" and self.top_k > self.num_experts:
            raise ValueError("top_k exceeds num_experts")
        if self.shared_intermediate_size is not None and not self.num_shared_experts:
            raise ValueError("shared_intermediate_size sizes shared experts, and num_shared_experts is 0")
        return self


class LayerRef(Spec):
    """A layer as a pair of kinds named in the model's `attention_kinds` / `ffn_kinds`; `engram`:
    the layer also adds an Engram lookup to its residual stream (the model's `engram` says its
    tables, specs.EngramSpec)."""

    attention: str
    ffn: str
    engram: bool = False


def named_kind(ref: object, part: str) -> str | None:
    """The kind a raw layer reference (a mapping not yet read as a LayerRef) names for `part`
    (attention or ffn): its text, else None (a list or a mapping names no kind: LayerRef refuses it)."""
    value = ref.get(part) if isinstance(ref, dict) else None
    return value if isinstance(value, str) else None


class LayerGroup(LayerRef):
    """`count` consecutive layers of one kind pair, in model order."""

    count: int = Field(gt=0, le=MAX_LAYERS)
