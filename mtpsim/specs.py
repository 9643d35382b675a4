"""The typed specs the catalog's YAML files describe: a model (its attention and FFN kinds,
layers, dtypes, draft layers), and the strict base the others share (an accelerator's spec is
hardware_spec.py's, a serving engine's engines.py's). Unknown keys
are errors, types are strict and floats finite; catalog.py finds and merges the files, this
module says what they may hold.
"""
from __future__ import annotations

from functools import cached_property
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.sections import Name

Dtype = Literal["fp32", "bf16", "fp16", "fp8", "fp4"]
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5}


# Size limits: past any real model (the largest catalogued: 128 heads, 61 layers, a 262k vocab, 1M context)
# by orders of magnitude, and small enough that expanding layers or pricing experts cannot hang or overflow
MAX_LAYERS = 4096          # per layer group, per model, MTP layers
MAX_WIDTH = 2**20          # hidden, FFN and head widths, low ranks
MAX_HEADS = 2**14
MAX_EXPERTS = 2**16
MAX_VOCAB = 2**24
MAX_CONTEXT = 2**26        # max_context and attention windows, in tokens


class Spec(BaseModel):
    """Base for catalog specs: unknown keys are errors, specs are immutable, types are strict
    (no `true` for 1, no "8" for 8) and floats finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class CompressedAttention(Spec):
    """DeepSeek-V4's hybrid attention (kind `compressed`; mtpsim/costs/compressed.py prices it):
    one shared K=V head of head_dim over a sliding window of the last `window` tokens plus, with
    `ratio` > 0, one compressed entry per `ratio` tokens (ratio 4: CSA, a lightning indexer of
    index_n_heads x index_head_dim keeps the index_topk best compressed entries per query;
    ratio 128: HCA, every compressed entry is attended); ratio 0: the window alone. The output
    projection is grouped low-rank (o_groups groups of o_lora_rank). hc_mult: the block's
    hyper-connection copies of the residual stream (1: none), priced with the attention."""

    ratio: int = Field(ge=0, le=MAX_CONTEXT)
    window: int = Field(gt=0, le=MAX_CONTEXT)
    o_groups: int = Field(gt=0, le=MAX_HEADS)
    o_lora_rank: int = Field(gt=0, le=MAX_WIDTH)
    index_topk: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    index_n_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)
    index_head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    hc_mult: int = Field(default=1, ge=1, le=64)
    hc_sinkhorn_iters: int = Field(default=0, ge=0, le=1000)

    @model_validator(mode="after")
    def _indexer(self) -> CompressedAttention:
        index = [self.index_topk, self.index_n_heads, self.index_head_dim]
        if any(v is not None for v in index) and (None in index or not self.ratio):
            raise ValueError("an indexer needs index_topk, index_n_heads and index_head_dim together, and ratio > 0")
        return self


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
    "gqa": _SHARED_ATTENTION | {"num_kv_heads", "head_dim", "v_head_dim", "window", "kv_source", "input_size"},
    # a window on mla: a drafter's rolling window over its own cache (DSpark)
    "mla": _SHARED_ATTENTION | {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                "index_topk", "index_n_heads", "index_head_dim", "window"},
    "linear": _SHARED_ATTENTION | {"num_kv_heads", "head_dim", "value_head_dim", "conv_kernel"},
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
        if self.kind == "compressed" and self.compressed is None:
            raise ValueError("`compressed` goes with attention kind compressed")
        if self.kind == "compressed":
            _compressed_fits(self)
        index = [self.index_topk, self.index_n_heads, self.index_head_dim]
        if any(v is not None for v in index) and any(v is None for v in index):
            raise ValueError("sparse attention needs index_topk, index_n_heads and index_head_dim together")
        return self

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
    """A layer as a pair of kinds named in the model's `attention_kinds` / `ffn_kinds`."""

    attention: str
    ffn: str


class LayerGroup(LayerRef):
    """`count` consecutive layers of one kind pair, in model order."""

    count: int = Field(gt=0, le=MAX_LAYERS)


class Dtypes(Spec):
    attention: Dtype = "bf16"
    dense_ffn: Dtype = "bf16"
    experts: Dtype = "bf16"
    mtp: Dtype = "bf16"
    lm_head: Dtype = "bf16"
    kv_cache: Dtype = "bf16"
    activations: Literal["fp32", "bf16", "fp16"] = "bf16"  # hidden states; small per-head matmuls


class LMHeadSpec(Spec):
    """`full`: T × d × V matmul. `centroid`: score num_centroids clusters, expand top_clusters."""

    kind: Literal["full", "centroid"] = "full"
    num_centroids: int | None = Field(default=None, gt=0, le=MAX_VOCAB)
    top_clusters: int | None = Field(default=None, gt=0, le=MAX_VOCAB)

    @model_validator(mode="after")
    def _fields_for_kind(self) -> LMHeadSpec:
        given = [f for f in ("num_centroids", "top_clusters") if getattr(self, f) is not None]
        if self.kind == "full" and given:
            raise ValueError(f"a full LM head does not take {', '.join(given)} (kind centroid does)")
        if self.kind == "centroid":
            if len(given) < 2:
                raise ValueError("a centroid LM head needs num_centroids and top_clusters")
            if self.top_clusters > self.num_centroids:
                raise ValueError(f"top_clusters {self.top_clusters} exceeds num_centroids {self.num_centroids}")
        return self


class MTPSpec(Spec):
    """The model's own draft layers (MTP modules, EAGLE-style head or parallel heads).

    Each layer takes concat(norm(hidden), norm(embedding)) through a 2h x h projection when
    `input_projection` is set, runs one decoder layer, and shares the target's LM head unless
    `vocab_size` gives it a head of its own (EAGLE-3's pruned vocabulary).
    """

    num_layers: int = Field(gt=0, le=MAX_LAYERS)
    layer: LayerRef
    input_projection: bool = True
    vocab_size: int | None = Field(default=None, gt=0, le=MAX_VOCAB)
    parallel: bool = False  # Meta-style heads over the trunk's last hidden, not chained


class BlockSpec(Spec):
    """How a block drafter (`role: block_draft`, design `block`) drafts: one forward denoises a
    block of `block_size` positions (the last emitted token as anchor + block_size - 1 masks, so
    at most block_size - 1 drafts), its queries reading the drafter's context KV, which holds
    the target's hidden states at `target_layer_ids` (0-based target layers, outputs fused by an
    fc of len(taps) x target width -> hidden) projected into K/V in every draft layer.

    kind: `dflash` (z-lab/dflash) or `dspark` (DeepSeek's, deepseek-ai/DeepSpec). built_for: the
    target catalog name the drafter was trained against (None: not checked). markov_rank: a
    low-rank Markov refinement head (DSpark), each position's logits corrected from the previous
    token through a rank-r projection; confidence_head: a per-position confidence score (d -> 1)
    that decides how much of the block goes to verification."""

    kind: Literal["dflash", "dspark"]
    block_size: int = Field(gt=1, le=65)
    target_layer_ids: list[Annotated[int, Field(ge=-1)]] = Field(min_length=1)  # -1: the embedding output
    built_for: str | None = None
    markov_rank: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    confidence_head: bool = False

    @model_validator(mode="after")
    def _heads_for_kind(self) -> BlockSpec:
        heads = self.markov_rank is not None or self.confidence_head
        if self.kind == "dflash" and heads:
            given = "markov_rank" if self.markov_rank is not None else "confidence_head"
            raise AtKey(given, "a DFlash drafter has no refinement heads (DSpark's Markov and confidence heads: "
                        "kind dspark)")
        if self.kind == "dspark" and not heads:
            raise AtKey("kind", "a DSpark drafter refines its block with a Markov head, a confidence head or both: "
                        "give markov_rank or confidence_head (without either it is kind dflash)")
        seen = set()
        for i, layer in enumerate(self.target_layer_ids):
            if layer in seen:
                raise AtKey(f"target_layer_ids.{i}", f"layer {layer} is tapped twice: each tap is one target layer")
            seen.add(layer)
        return self


ROLE_NAMES = {"target": "a target model", "draft": "a draft model", "assistant": "a frozen-KV assistant",
              "block_draft": "a block drafter"}
# the top-level fields a role never reads (`block` aside: only a block drafter takes it). A target
# serves its own embedding and head; a draft (EAGLE-3) fuses fused_target_layers and scores its
# own draft_vocab_size-token head; an assistant reads the target's KV; a block drafter taps
# block.target_layer_ids and borrows the target's embedding and LM head (costs/blocks.py).
_DRAFTS_UNREAD = ("mtp", "assistant", "block_draft", "tie_embeddings")
ROLE_UNREAD = {
    "target": ("backbone_hidden_size", "fused_target_layers", "draft_vocab_size"),
    "draft": _DRAFTS_UNREAD,
    "assistant": (*_DRAFTS_UNREAD, "fused_target_layers", "draft_vocab_size"),
    "block_draft": (*_DRAFTS_UNREAD, "fused_target_layers", "draft_vocab_size", "lm_head"),
}


class ModelSpec(Spec):
    """A target model, a frozen-KV assistant (`role: assistant`, for frozen_kv), an external draft
    model (`role: draft`, for nextn: its own layers and KV, fed the target's hidden states) or a
    block drafter (`role: block_draft`, for block: `block` says how it drafts)."""

    name: Name  # printed in every header: a one-line name
    role: Literal["target", "assistant", "draft", "block_draft"] = "target"
    hidden_size: int = Field(gt=0, le=MAX_WIDTH)
    vocab_size: int = Field(gt=0, le=MAX_VOCAB)
    # the longest sequence (prompt + output) the released model serves; None: not checked
    max_context: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    layers: list[LayerGroup] = Field(min_length=1)
    attention_kinds: dict[str, AttentionSpec]
    ffn_kinds: dict[str, FFNSpec]
    tie_embeddings: bool = False
    lm_head: LMHeadSpec = LMHeadSpec()
    dtypes: Dtypes = Dtypes()
    mtp: MTPSpec | None = None
    assistant: str | None = None            # default frozen_kv assistant (catalog name)
    block_draft: str | None = None          # default block drafter (catalog name, design block)
    block: BlockSpec | None = None          # block drafters: how one forward drafts a block
    backbone_hidden_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)  # assistants, drafts: target width
    # drafts: target layers whose hidden states an fc fuses (EAGLE-3: 3, low/mid/high; 3 x target
    # width -> hidden), and the pruned vocabulary its own LM head scores (vocab_size stays the
    # target's, which a d2t table maps the draft's tokens into)
    fused_target_layers: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
    draft_vocab_size: int | None = Field(default=None, gt=0, le=MAX_VOCAB)

    @model_validator(mode="after")
    def _refs_exist(self) -> ModelSpec:
        refs = [*self.layers] + ([self.mtp.layer] if self.mtp else [])
        for ref in refs:
            if ref.attention not in self.attention_kinds:
                raise ValueError(f"layer names unknown attention kind {ref.attention!r}")
            if ref.ffn not in self.ffn_kinds:
                raise ValueError(f"layer names unknown ffn kind {ref.ffn!r}")
        for key, kinds, used in (("attention_kinds", self.attention_kinds, {r.attention for r in refs}),
                                 ("ffn_kinds", self.ffn_kinds, {r.ffn for r in refs})):
            for name in kinds:
                if name not in used:  # it would steer the sharding checks and listings, priced nowhere
                    raise AtKey(f"{key}.{name}", "no layer uses this kind (layers and mtp.layer name the kinds a "
                                "model runs)")
        self._fields_for_role()
        if self.role != "target" and self.backbone_hidden_size is None:
            raise ValueError(f"{'an assistant' if self.role == 'assistant' else 'a draft'} needs backbone_hidden_size")
        if (self.role == "block_draft") != (self.block is not None):
            raise ValueError("a block drafter (role: block_draft) needs `block`, and only a block drafter takes it")
        if self.num_layers > MAX_LAYERS:
            raise ValueError(f"{self.num_layers:,} layers in all is over the limit of {MAX_LAYERS:,}")
        if self.lm_head.kind == "centroid" and self.lm_head.num_centroids > self.vocab_size:
            raise ValueError(f"lm_head.num_centroids {self.lm_head.num_centroids:,} exceeds vocab_size {self.vocab_size:,}")
        if self.mtp is not None and self.mtp.vocab_size is not None and self.mtp.vocab_size > self.vocab_size:
            # a draft head prunes the target's vocabulary; it never scores tokens the target lacks
            raise ValueError(f"mtp.vocab_size {self.mtp.vocab_size:,} exceeds vocab_size {self.vocab_size:,}")
        return self

    def _fields_for_role(self) -> None:
        """Refuse a field this role never reads (given a value other than its default), as
        _refuse_stray refuses another kind's fields: it would be ignored without a word."""
        for name in ROLE_UNREAD[self.role]:
            if getattr(self, name) != type(self).model_fields[name].default:
                raise AtKey(name, f"{ROLE_NAMES[self.role]} (role: {self.role}) does not take {name}: nothing reads it "
                            "for this role")
        if self.role != "assistant":
            for name, att in self.attention_kinds.items():
                if att.kv_source is not None:
                    raise AtKey(f"attention_kinds.{name}.kv_source", "only a frozen-KV assistant's query-only layers "
                                "read another model's KV (role: assistant)")

    @property
    def num_layers(self) -> int:
        return sum(g.count for g in self.layers)

    @property
    def has_experts(self) -> bool:
        """Whether any of its FFN kinds routes experts."""
        return any(f.kind == "moe" for f in self.ffn_kinds.values())

    @cached_property
    def expanded_layers(self) -> list[LayerRef]:
        """Every layer in model order."""
        return [LayerRef(attention=g.attention, ffn=g.ffn) for g in self.layers for _ in range(g.count)]

    def kv_source_layer(self, kv_source: str) -> int:
        """Index of this (target) model's layer whose KV a query-only assistant layer with
        `kv_source` reads: its last sliding or last full (global) GQA layer. ValueError when it
        has none."""
        sliding = kv_source == "target_last_sliding"
        for i in reversed(range(self.num_layers)):
            att = self.attention_kinds[self.expanded_layers[i].attention]
            if att.kind == "gqa" and (att.window is not None) == sliding:
                return i
        raise ValueError(f"target {self.name!r} has no {'sliding' if sliding else 'full'} GQA layer to read")

    def kv_source_kind(self, kv_source: str) -> AttentionSpec:
        """The attention kind of `kv_source_layer(kv_source)`."""
        return self.attention_kinds[self.expanded_layers[self.kv_source_layer(kv_source)].attention]

    def summary(self) -> str:
        """One line (`mtpsim models`): layers, width, experts, draft layers."""
        moe = [f for f in self.ffn_kinds.values() if f.kind == "moe"]
        experts = f"{moe[0].num_experts} experts top-{moe[0].top_k}" if moe else "dense"
        if self.role == "assistant":
            draft = f"frozen-KV assistant for width {self.backbone_hidden_size}"
        elif self.role == "block_draft":
            draft = f"{self.block.kind} block drafter (block {self.block.block_size}) for width {self.backbone_hidden_size}"
        elif self.role == "draft":
            draft = f"draft model (nextn) for width {self.backbone_hidden_size}" + \
                (f", own {self.draft_vocab_size}-token head" if self.draft_vocab_size else "")
        elif self.mtp is None:
            draft = f"no MTP (assistant: {self.assistant})" if self.assistant else "no MTP"
        else:
            n = self.mtp.num_layers
            draft = f"{n} parallel head{'s' * (n > 1)}" if self.mtp.parallel else f"MTP {n} layer{'s' * (n > 1)}"
        return f"{self.num_layers} layers, hidden {self.hidden_size}, {experts}, {draft}"
