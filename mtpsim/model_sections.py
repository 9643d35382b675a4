"""The sections of a model spec beside its layers (specs.py's ModelSpec holds them; the layer
kinds are layer_specs.py's): the dtypes of its parts, its LM head, its own draft layers (MTP), a
block drafter's `block`, and DeepSeek-V4.1's Engram tables. Each checks its own fields; what
holds across sections (roles, layer references, Engram layers) is ModelSpec's.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.layer_specs import LayerRef
from mtpsim.spec_base import MAX_HEADS, MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Dtype, Spec


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
    # the depth of the target it was trained against (a DFlash config's num_target_layers), for a
    # drafter read from a config.json, which names no catalog target; None: not checked
    target_num_layers: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
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
            if self.target_num_layers is not None and layer >= self.target_num_layers:
                raise AtKey(f"target_layer_ids.{i}", f"layer {layer} is past the {self.target_num_layers} layers of the "
                            "target it was trained against (target_num_layers)")
            if layer in seen:
                raise AtKey(f"target_layer_ids.{i}", f"layer {layer} is tapped twice: each tap is one target layer")
            seen.add(layer)
        return self


MAX_ENGRAM_ROWS = 2**40  # rows of one Engram table (V4.1-Flash's: 3.8e8)


class EngramSpec(Spec):
    """DeepSeek-V4.1's Engram: at each layer that carries one (`engram: true` in `layers`), every
    token gathers (max_ngram_size - 1) x n_heads hashed rows of head_dim values from that layer's
    table, a wkv GEMM maps them to (hc_mult + 1) x hidden, and a gate adds them to the residual
    copies (SGLang v0.5.23 srt/layers/engram.py `Engram`). rows: each Engram layer's table rows, in
    layer order. The tables are FP8 with one 1-byte (E8M0) scale per `scale_block` values (None:
    one global scale, Qwen4-Exp's FP8 PLE table); engines shard their rows over the tensor-parallel
    GPUs (costs/engram.py).

    Qwen4-Exp's PLE n-gram embedding (Qwen3.8-Flash-Next) does the same work per token: (ngram_size
    - 1) x heads_per_ngram hashed rows of ple_embed_dim / that many values, a kv_proj to (hc + 1) x
    hidden, a gate on the copies (vLLM v0.34.0 vllm/models/qwen4_exp/nvidia/ple_layer.py)."""

    rows: list[Annotated[int, Field(gt=0, le=MAX_ENGRAM_ROWS)]] = Field(min_length=1, max_length=MAX_LAYERS)
    n_heads: int = Field(gt=0, le=MAX_HEADS)
    max_ngram_size: int = Field(ge=2, le=64)
    head_dim: int = Field(gt=0, le=MAX_WIDTH)
    scale_block: int | None = Field(default=32, gt=0, le=MAX_WIDTH)

    @property
    def columns(self) -> int:
        """Hashed rows one token gathers per Engram layer: one per n-gram order past the unigram and head."""
        return (self.max_ngram_size - 1) * self.n_heads

    @property
    def row_bytes(self) -> float:
        """Bytes of one table row: FP8 values and their block scales (none with one global scale)."""
        return self.head_dim * (1 + (1 / self.scale_block if self.scale_block else 0))

    @property
    def table_bytes(self) -> float:
        """Every Engram table's bytes, over all GPUs."""
        return sum(self.rows) * self.row_bytes
