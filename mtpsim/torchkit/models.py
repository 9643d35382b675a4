"""Target and drafts built from catalog specs with random weights.

- `Target`: embedding, the spec's layers in order, final norm, LM head.
- `MTPLayer`: one draft layer of `nextn` / `multi_layer` / `parallel_heads`: norms of the token
  embedding and of the incoming hidden, the 2h -> h projection (when the spec has one), one
  decoder layer with its own KV, the shared head (or its own, for a pruned draft vocabulary).
- `Assistant`: a frozen-KV drafter: concat(target-width hidden, target token embedding) -> pre
  projection, query-only layers reading the target's last sliding / full layer KV, a post
  projection back to the target width (the next step's carry), its own head (full or centroid).
- `BlockDrafter`: a block drafter (design block): an fc fusing the target's tapped hidden
  states, injected as K/V into every draft layer's cache (`inject`), and one bidirectional
  forward of its layers over a block [root, masks...] reading that cache (`forward`), through
  the target's head (borrowed, like the embedding).
Every `forward` returns (hidden, greedy tokens); `rows` picks which rows get logits.
"""
from __future__ import annotations

import torch
from torch import nn

from mtpsim.designs import record
from mtpsim.specs import LMHeadSpec, ModelSpec
from mtpsim.torchkit.cache import Batch, Cache
from mtpsim.torchkit.layers import DecoderLayer, linear, make_head


def _select(x: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """rows: None = every row; else [B] index of the one row per request that gets logits."""
    if rows is None:
        return x
    return x[torch.arange(x.shape[0], device=x.device), rows][:, None]


class Target(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        d = spec.hidden_size
        self.embed = nn.Embedding(spec.vocab_size, d)
        self.layers = nn.ModuleList(DecoderLayer(spec.attention_kinds[r.attention], spec.ffn_kinds[r.ffn], d)
                                    for r in spec.expanded_layers)
        self.norm = nn.RMSNorm(d)
        self.head = make_head(d, spec.vocab_size, spec.lm_head)
        self.taps: list[int] = []  # layers whose outputs `tapped` keeps (a block drafter's context)
        self.tapped: torch.Tensor | None = None

    def new_cache(self, batch: int, capacity: int, max_pass: int) -> Cache:
        p = next(self.parameters())
        return Cache([layer.new_storage(batch, capacity, max_pass, p.dtype, p.device) for layer in self.layers],
                     torch.zeros(batch, dtype=torch.int64).numpy())

    def forward(self, tokens: torch.Tensor, batch: Batch, cache: Cache, rows=None):
        cache.begin()
        x, outs = self.embed(tokens), []
        for layer, storage in zip(self.layers, cache.layers):
            x = layer(x, batch, storage)
            outs.append(x)
        if self.taps:  # -1: the embedding output
            self.tapped = torch.cat([outs[i] if i >= 0 else self.embed(tokens) for i in self.taps], -1)
        return x, self.head(self.norm(_select(x, rows)))


class MTPLayer(nn.Module):
    def __init__(self, spec: ModelSpec, target: Target):
        super().__init__()
        mtp, d = spec.mtp, spec.hidden_size
        self.embed = target.embed  # shared embedding (not a parameter of its own)
        self.project = mtp.input_projection
        if self.project:
            self.enorm, self.hnorm, self.eh_proj = nn.RMSNorm(d), nn.RMSNorm(d), linear(2 * d, d)
        self.layer = DecoderLayer(spec.attention_kinds[mtp.layer.attention], spec.ffn_kinds[mtp.layer.ffn], d)
        self.norm = nn.RMSNorm(d)
        self.head = make_head(d, mtp.vocab_size, LMHeadSpec()) if mtp.vocab_size else target.head

    def new_cache(self, batch: int, capacity: int, max_pass: int) -> Cache:
        p = self.norm.weight
        return Cache([self.layer.new_storage(batch, capacity, max_pass, p.dtype, p.device)],
                     torch.zeros(batch, dtype=torch.int64).numpy())

    def forward(self, hidden: torch.Tensor, tokens: torch.Tensor, batch: Batch, cache: Cache, rows=None):
        cache.begin()
        x = hidden
        if self.project:
            x = self.eh_proj(torch.cat([self.enorm(self.embed(tokens)), self.hnorm(hidden)], -1))
        x = self.layer(x, batch, cache.layers[0])
        return x, self.head(self.norm(_select(x, rows)))


class Assistant(nn.Module):
    def __init__(self, spec: ModelSpec, target_spec: ModelSpec, target: Target):
        super().__init__()
        d, backbone = spec.hidden_size, spec.backbone_hidden_size
        self.embed = target.embed
        self.pre_proj, self.post_proj = linear(2 * backbone, d), linear(d, backbone)
        self.layers = nn.ModuleList(DecoderLayer(spec.attention_kinds[r.attention], spec.ffn_kinds[r.ffn], d,
                                                 query_only=True) for r in spec.expanded_layers)
        self.sources = [target_spec.kv_source_layer(spec.attention_kinds[r.attention].kv_source)
                        for r in spec.expanded_layers]
        self.norm = nn.RMSNorm(d)
        self.head = make_head(d, spec.vocab_size, spec.lm_head)

    def forward(self, carry: torch.Tensor, tokens: torch.Tensor, batch: Batch, target_cache: Cache):
        """carry [B, 1, target width]: the last target hidden, or the previous step's carry."""
        x = self.pre_proj(torch.cat([carry, self.embed(tokens)], -1))
        for layer, source in zip(self.layers, self.sources):
            x = layer(x, batch, target_cache.layers[source])
        return self.post_proj(x), self.head(self.norm(x))


class BlockDrafter(nn.Module):
    def __init__(self, spec: ModelSpec, target: Target):
        super().__init__()
        d = spec.hidden_size
        self.embed, self.head = target.embed, target.head  # borrowed from the target
        self.taps = list(spec.block.target_layer_ids)
        target.taps = self.taps
        self.fc, self.hidden_norm = linear(len(self.taps) * spec.backbone_hidden_size, d), nn.RMSNorm(d)
        self.layers = nn.ModuleList(DecoderLayer(spec.attention_kinds[r.attention], spec.ffn_kinds[r.ffn], d)
                                    for r in spec.expanded_layers)
        self.norm = nn.RMSNorm(d)

    def new_cache(self, batch: int, capacity: int, max_pass: int) -> Cache:
        p = self.norm.weight
        return Cache([layer.new_storage(batch, capacity, max_pass, p.dtype, p.device) for layer in self.layers],
                     torch.zeros(batch, dtype=torch.int64).numpy())

    def inject(self, tapped: torch.Tensor, batch: Batch, cache: Cache) -> None:
        """The target's tapped hidden states [B, c, taps x width] at batch's positions, fused and
        written as K/V into every draft layer's cache (the caller commits the lengths)."""
        x = self.hidden_norm(self.fc(tapped))
        for layer, kv in zip(self.layers, cache.layers):
            layer.attn.write_context(x, batch, kv)

    def forward(self, tokens: torch.Tensor, batch: Batch, cache: Cache):
        """The block [B, q] (root, then masks) at batch's positions: every query reads the cached
        context and the whole block (bidirectional); greedy tokens for positions 1..q-1."""
        x = self.embed(tokens)
        for layer, kv in zip(self.layers, cache.layers):
            x = x + layer.attn.block(layer.attn_norm(x), batch, kv)
            x = x + layer.ffn(layer.ffn_norm(x))
        return x, self.head(self.norm(x[:, 1:]))


def build(model: ModelSpec, design: str, steps: int, assistant: ModelSpec | None, dtype, device, seed: int = 0):
    """(target, drafts): the design record's draft_layers(steps) copies of its layer part, an
    MTPLayer (one for nextn, `steps` for multi_layer and parallel_heads), an Assistant
    (frozen_kv) or a BlockDrafter (block: `assistant` is then the block drafter's spec); [] for
    none."""
    rec = record(design)
    torch.manual_seed(seed)
    with torch.device(device):
        target = Target(model)
        make = {"mtp": lambda: MTPLayer(model, target), "assistant": lambda: Assistant(assistant, model, target),
                "block": lambda: BlockDrafter(assistant, target)}
        drafts = [make[rec.layer_part]() for _ in range(rec.draft_layers(steps))] if rec.layer_part else []
    modules = [target, *drafts]
    for m in modules:
        m.to(dtype).eval().requires_grad_(False)
    return target, drafts
