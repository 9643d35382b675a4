"""The typed spec of a model the catalog's YAML files describe: its layers (of the kinds
layer_specs.py defines) and sections (dtypes, LM head, own draft layers, a block drafter's
`block`, Engram tables: model_sections.py), which fields each role reads (target, draft,
assistant, block drafter), and what holds across them (layer references, shared compressed
entries, Engram layers, the replay tail). The strict base and
limits all specs share are spec_base.py's (an accelerator's spec is hardware_spec.py's, a serving
engine's engines.py's); catalog.py finds and merges the files, this module says what they may hold.
"""
from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field, model_validator

from mtpsim.errors import AtKey
from mtpsim.layer_specs import (  # noqa: F401 (the kinds, read from here too)
    ATTENTION_FIELDS,
    CSA2_RATIOS,
    FFN_FIELDS,
    AttentionSpec,
    CompressedAttention,
    FFNSpec,
    LayerGroup,
    LayerRef,
)
from mtpsim.model_sections import (  # noqa: F401 (the sections, read from here too)
    MAX_ENGRAM_ROWS,
    BlockSpec,
    Dtypes,
    EngramSpec,
    LMHeadSpec,
    MTPSpec,
)
from mtpsim.sections import CatalogName, Name
from mtpsim.spec_base import (  # noqa: F401 (the base and limits, read from here too)
    DTYPE_BYTES,
    MAX_CONTEXT,
    MAX_EXPERTS,
    MAX_HEADS,
    MAX_KINDS,
    MAX_LAYERS,
    MAX_VOCAB,
    MAX_WIDTH,
    Dtype,
    Spec,
)

DEEPSEEK_V4 = "DeepseekV4ForCausalLM"
# the model classes ModelSpec.architecture can name, which an engine rule may key on (engines.py)
Architecture = Literal["DeepseekV4ForCausalLM"]
# what an engine must have code for to serve a model (ModelSpec.served_as): its class, and for
# DeepSeek-V4.1 its CSA2 layers (compress ratios 1 and 2), which the engines serve through V4's
# class but added releases later (SGLang v0.5.21)
DEEPSEEK_V41 = "DeepSeek-V4.1"
ServedAs = Literal["DeepseekV4ForCausalLM", "DeepSeek-V4.1"]

ROLE_NAMES = {"target": "a target model", "draft": "a draft model", "assistant": "a frozen-KV assistant",
              "block_draft": "a block drafter"}
# the top-level fields a role never reads (`block` aside: only a block drafter takes it). A target
# serves its own embedding and head; a draft (EAGLE-3) fuses fused_target_layers and scores its
# own draft_vocab_size-token head; an assistant reads the target's KV; a block drafter taps
# block.target_layer_ids and borrows the target's embedding and LM head (costs/blocks.py).
_DRAFTS_UNREAD = ("mtp", "assistant", "block_draft", "tie_embeddings")
ROLE_UNREAD = {
    "target": ("backbone_hidden_size", "fused_target_layers", "draft_vocab_size", "trained_for"),
    "draft": _DRAFTS_UNREAD,
    "assistant": (*_DRAFTS_UNREAD, "fused_target_layers", "draft_vocab_size", "trained_for"),
    "block_draft": (*_DRAFTS_UNREAD, "fused_target_layers", "draft_vocab_size", "lm_head", "trained_for"),
}


class ModelSpec(Spec):
    """A target model, a frozen-KV assistant (`role: assistant`, for frozen_kv), an external draft
    model (`role: draft`, for nextn: its own layers and KV, fed the target's hidden states) or a
    block drafter (`role: block_draft`, for block: `block` says how it drafts)."""

    name: Name  # printed in every header: a one-line name
    # other names a scenario may give this catalog entry: checkpoints of the same architecture and
    # dtypes (deepseek-r1 is deepseek-v3's); catalog.py looks a name up among them only where no
    # entry's file has that name
    aliases: list[CatalogName] = Field(default=[], max_length=64)
    role: Literal["target", "assistant", "draft", "block_draft"] = "target"
    hidden_size: int = Field(gt=0, le=MAX_WIDTH)
    vocab_size: int = Field(gt=0, le=MAX_VOCAB)
    # the longest sequence (prompt + output) the released model serves; None: not checked
    max_context: int | None = Field(default=None, gt=0, le=MAX_CONTEXT)
    layers: list[LayerGroup] = Field(min_length=1)
    attention_kinds: dict[str, AttentionSpec] = Field(max_length=MAX_KINDS)
    ffn_kinds: dict[str, FFNSpec] = Field(max_length=MAX_KINDS)
    tie_embeddings: bool = False
    lm_head: LMHeadSpec = LMHeadSpec()
    dtypes: Dtypes = Dtypes()
    # bytes of block scales each 4-bit (`fp4`) weight is kept with in memory (the op tables and the
    # roofline count its half byte alone): 1/16 for NVFP4 (an FP8 scale per 16 values) and INT4 with
    # a BF16 scale per 32 (Kimi-K2.5), 1/32 for MXFP4 and DeepSeek-V4's FP4 (a UE8M0 scale per 32)
    fp4_scale_bytes: float = Field(default=1 / 16, ge=0, le=0.5)
    mtp: MTPSpec | None = None
    assistant: str | None = None            # default frozen_kv assistant (catalog name)
    block_draft: str | None = None          # default block drafter (catalog name, design block)
    block: BlockSpec | None = None          # block drafters: how one forward drafts a block
    engram: EngramSpec | None = None        # DeepSeek-V4.1's Engram tables (layers: engram: true)
    backbone_hidden_size: int | None = Field(default=None, gt=0, le=MAX_WIDTH)  # assistants, drafts: target width
    # drafts: target layers whose hidden states an fc fuses (EAGLE-3: 3, low/mid/high; 3 x target
    # width -> hidden), and the pruned vocabulary its own LM head scores (vocab_size stays the
    # target's, which a d2t table maps the draft's tokens into)
    fused_target_layers: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
    draft_vocab_size: int | None = Field(default=None, gt=0, le=MAX_VOCAB)
    # drafts: the targets (catalog names) on whose hidden states the head was trained; paired with
    # another, its widths may match while its acceptance is not the pair's (speculation_advice.py)
    trained_for: list[CatalogName] | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _refs_exist(self) -> ModelSpec:
        refs = [*self.layers] + ([self.mtp.layer] if self.mtp else [])
        where = [f"layers.{i}" for i in range(len(self.layers))] + (["mtp.layer"] if self.mtp else [])
        for at, ref in zip(where, refs):
            for part, kinds in (("attention", self.attention_kinds), ("ffn", self.ffn_kinds)):
                if getattr(ref, part) not in kinds:
                    known = f"the model's: {', '.join(kinds)}" if kinds else \
                        f"the model has none: give {part}_kinds beside layers re-laid over another entry"
                    raise AtKey(f"{at}.{part}", f"names unknown {part} kind {getattr(ref, part)!r} ({known})")
        for key, kinds, used in (("attention_kinds", self.attention_kinds, {r.attention for r in refs}),
                                 ("ffn_kinds", self.ffn_kinds, {r.ffn for r in refs})):
            for name in kinds:
                if name not in used:  # it would steer the sharding checks and listings, priced nowhere
                    raise AtKey(f"{key}.{name}", "no layer uses this kind (layers and mtp.layer name the kinds a "
                                "model runs)")
        self._fields_for_role()
        self._engram_layers()
        self._shared_compressed()
        self._one_residual_stream(refs)
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

    def _engram_layers(self) -> None:
        """The layers flagged `engram` are the tables' layers, one table each, and only a target's trunk has them."""
        flagged = sum(g.count for g in self.layers if g.engram)
        if self.mtp is not None and self.mtp.layer.engram:
            raise AtKey("mtp.layer.engram", "an MTP layer carries no Engram (engram: true goes on trunk layers)")
        if self.engram is None:
            if flagged:
                i = next(i for i, g in enumerate(self.layers) if g.engram)
                raise AtKey(f"layers.{i}.engram", "an Engram layer needs the model's `engram` (its tables' rows, "
                            "n_heads, max_ngram_size, head_dim)")
            return
        if self.role != "target":
            raise AtKey("engram", f"{ROLE_NAMES[self.role]} (role: {self.role}) has no Engram tables")
        if flagged != len(self.engram.rows):
            raise AtKey("engram.rows", f"{len(self.engram.rows)} tables, but {flagged} layers carry an Engram "
                        "(engram: true in layers): one table per Engram layer")

    def _one_residual_stream(self, refs: list) -> None:
        """Every layer keeps the same hyper-connection copies of the residual stream (hc_mult, or
        compressed.hc_mult): the copies are the model's, carried from layer to layer, and an
        Engram's wkv writes hc_mult + 1 of them (two kinds of 2 and 4 priced each layer as its own)."""
        first = refs[0].attention
        want = self.attention_kinds[first].hc_copies
        for ref in refs:
            att = self.attention_kinds[ref.attention]
            if att.hc_copies != want:
                key = "compressed.hc_mult" if att.compressed is not None else "hc_mult"
                raise AtKey(f"attention_kinds.{ref.attention}.{key}", f"{att.hc_copies} copies of the residual stream "
                            f"where kind {first!r} keeps {want}: hyper-connection copies are the model's, carried "
                            "from layer to layer")

    def _shared_compressed(self) -> None:
        """A layer that reads another's compressed entries (mode reindex or reuse) comes after a
        layer of its ratio that writes them (mode full), and one that reads chosen entries after
        an indexer of its ratio: DeepSeek-V4.1's kv_source and index_source layers come first."""
        owners, indexers = set(), set()
        for i, group in enumerate(self.layers):
            c = self.attention_kinds[group.attention].compressed
            if c is None or not c.ratio:
                continue
            if c.mode != "full" and c.ratio not in owners:
                raise AtKey(f"layers.{i}.attention", f"kind {group.attention!r} reads the compressed entries of an "
                            f"earlier layer of ratio {c.ratio} (mode {c.mode}), and no earlier layer writes them "
                            "(mode full)")
            if c.mode == "reuse" and c.index_topk is not None and c.ratio not in indexers:
                raise AtKey(f"layers.{i}.attention", f"kind {group.attention!r} reads the entries an earlier indexer "
                            f"of ratio {c.ratio} chose, and no earlier layer of that ratio runs an indexer")
            owners |= {c.ratio} if c.owns_entries else set()
            indexers |= {c.ratio} if c.runs_indexer else set()
        c = self.attention_kinds[self.mtp.layer.attention].compressed if self.mtp is not None else None
        if c is not None and c.mode != "full":  # the reader's kv sources are trunk layers; an MTP layer keeps its own
            raise AtKey("mtp.layer.attention", f"kind {self.mtp.layer.attention!r} (mode {c.mode}) reads another "
                        "layer's compressed entries, and only trunk layers share them (an MTP layer keeps its own: "
                        "mode full)")

    @property
    def num_layers(self) -> int:
        return sum(g.count for g in self.layers)

    @property
    def has_experts(self) -> bool:
        """Whether any of its FFN kinds routes experts."""
        return any(f.kind == "moe" for f in self.ffn_kinds.values())

    @property
    def architecture(self) -> str | None:
        """The engines' model class, where an engine rule keys on it (EngineSpec.for_model):
        DeepSeek-V4's, `DeepseekV4ForCausalLM`, for a model whose attention is all compressed (V4
        and V4.1: SGLang serves both through srt/models/deepseek_v4.py); else None."""
        kinds = self.attention_kinds.values()
        return DEEPSEEK_V4 if kinds and all(a.kind == "compressed" for a in kinds) else None

    @property
    def served_as(self) -> tuple[str, ...]:
        """What an engine needs code for to serve this model (engine lacks_architectures): its class
        (`architecture`), and DeepSeek-V4.1's CSA2 layers where it has them; () for the others."""
        if self.architecture is None:
            return ()
        csa2 = any(a.compressed is not None and a.compressed.csa2 for a in self.attention_kinds.values())
        return (self.architecture, DEEPSEEK_V41) if csa2 else (self.architecture,)

    @cached_property
    def expanded_layers(self) -> list[LayerRef]:
        """Every layer in model order."""
        return [LayerRef(attention=g.attention, ffn=g.ffn, engram=g.engram) for g in self.layers for _ in range(g.count)]

    @cached_property
    def replay_tail(self) -> tuple[int, int] | None:
        """(first layer, window) of the layers a prefill may run over each request's last `window`
        prompt tokens only: DeepSeek-V4.1's decoder, from its last layer that writes ratio-1/2
        compressed entries on, where every later layer reads them (ratios 0 and 1 only, no Engram
        at that source, which runs an indexer), as SGLang v0.5.23 checks before its decoder SWA
        bounded replay (models/deepseek_v4.py late_layer_start); None for any other model."""
        layers = [self.attention_kinds[ref.attention] for ref in self.expanded_layers]
        sources = [i for i, att in enumerate(layers) if att.compressed is not None and att.compressed.owns_entries
                   and att.compressed.csa2]
        if not sources:
            return None
        start, source = sources[-1], layers[sources[-1]].compressed
        later = {att.compressed.ratio if att.compressed else None for att in layers[start + 1:]}
        if not later <= {0, 1} or not source.runs_indexer or self.expanded_layers[start].engram:
            return None
        hashed = [i for i, ref in enumerate(self.expanded_layers) if self.ffn_kinds[ref.ffn].routing == "hash"]
        return None if hashed and max(hashed) >= start else (start, source.window)

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
            draft = (f"no MTP (assistant: {self.assistant})" if self.assistant else
                     f"no MTP (block drafter: {self.block_draft})" if self.block_draft else "no MTP")
        else:
            n = self.mtp.num_layers
            draft = f"{n} parallel head{'s' * (n > 1)}" if self.mtp.parallel else f"MTP {n} layer{'s' * (n > 1)}"
        # an entry copied under one of its aliases' names still lists it: harmless, and not shown
        others = [a for a in dict.fromkeys(self.aliases) if a != self.name]
        also = f" (also named {', '.join(others)})" if others else ""
        return f"{self.num_layers} layers, hidden {self.hidden_size}, {experts}, {draft}{also}"
