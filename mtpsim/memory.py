"""Memory budget per GPU (DESIGN §3, KV reservation): weights of target and draft, KV bytes per
token of each, and how many requests fit.

Full-attention layers cost KV bytes per token; sliding-window layers per token up to the window;
linear-attention layers a constant state per request. Which draft layers hold weights and KV is
each design's record (designs.py): `nextn` one MTP layer (or its external draft), `multi_layer`
and `parallel_heads` one per step, `frozen_kv` the assistant's weights and no KV.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.costs import ops as O
from mtpsim.costs.passes import Pricer
from mtpsim.designs import DesignShape


@dataclass(frozen=True)
class LayerKV:
    """KV cost of one layer on one GPU: bytes per token, its window (0 = global), state per request."""

    bytes_per_token: float
    window: int
    state_bytes: float

    def request_bytes(self, tokens: int) -> float:
        kept = min(tokens, self.window) if self.window else tokens
        return self.bytes_per_token * kept + self.state_bytes


@dataclass(frozen=True)
class MemoryBudget:
    """Per-GPU memory: weights, the KV budget left, and per-token / per-request KV."""

    capacity_bytes: float
    target_weight_bytes: float
    draft_weight_bytes: float
    kv_budget_bytes: float
    target_kv: tuple[LayerKV, ...]
    draft_kv: tuple[LayerKV, ...]
    reserved_tokens: int
    groups: int = 1  # DP attention groups in a replica, each with its own KV pool of kv_budget_bytes

    @property
    def replica_kv_budget_bytes(self) -> float:
        """KV bytes per GPU summed over a replica's attention groups: each group's GPUs hold only
        its own requests' KV, so a replica admits `groups` times one GPU's budget (pooled: the
        round-robin split keeps the groups' loads equal)."""
        return self.kv_budget_bytes * self.groups

    @property
    def kv_bytes_per_token(self) -> float:
        """Bytes per token of the global (unbounded) layers, target + draft."""
        return sum(x.bytes_per_token for x in self.target_kv + self.draft_kv if not x.window)

    @property
    def draft_kv_bytes_per_token(self) -> float:
        return sum(x.bytes_per_token for x in self.draft_kv)

    @property
    def max_kv_tokens(self) -> int:
        """Tokens the KV budget holds in the global layers (windowed layers and states aside)."""
        per = self.kv_bytes_per_token
        return int(self.kv_budget_bytes // per) if per else 0

    def request_bytes(self, length: int) -> float:
        """KV bytes one running request of `length` committed tokens holds, reservation included."""
        tokens = length + self.reserved_tokens
        return sum(x.request_bytes(tokens) for x in self.target_kv + self.draft_kv)

    def max_requests(self, length: int) -> int:
        """Concurrent requests of `length` tokens the KV budget admits."""
        return max(0, int(self.kv_budget_bytes // self.request_bytes(length)))


def memory_budget(pricer: Pricer, design: DesignShape) -> MemoryBudget:
    """Per-GPU budget for a design: the design's record says how many draft layers hold weights
    (and KV), and of which part; the pricer says what a part's weights weigh."""
    hw, model, rec = pricer.hw, pricer.model, design.record
    # the embedding splits like the LM head: over the attention GPUs (all tp without DP attention)
    embedding = 0.0 if model.tie_embeddings else model.vocab_size * model.hidden_size * 2 / pricer.par.attention_tp
    target_w = pricer.weight_bytes("target") + embedding
    draft_w, draft_kv = 0.0, ()
    if rec.layer_part is not None:
        layers = rec.draft_layers(design.steps)
        draft_w = layers * pricer.weight_bytes(rec.layer_part, shared_head=False)
        draft_kv = part_kv(pricer, rec.layer_part) * layers if rec.has_draft_kv else ()
    budget = hw.memory_capacity_bytes * hw.usable_memory_fraction - target_w - draft_w
    return MemoryBudget(hw.memory_capacity_bytes, target_w, draft_w, max(budget, 0.0),
                        part_kv(pricer, "target"), draft_kv, design.reserved_tokens, pricer.par.attention_dp)


def part_kv(pricer: Pricer, part: str) -> tuple[LayerKV, ...]:
    """One LayerKV per layer of a part that keeps KV or state of its own, on one GPU of an
    attention group (KV heads split over its attention_tp GPUs)."""
    spec = pricer.layers(part)
    kv_dtype, tp = pricer.model.dtypes.kv_cache, pricer.par.attention_tp
    out = []
    for count, ref in spec.groups:
        att = spec.spec.attention_kinds[ref.attention]
        if att.kind == "linear":
            out += [LayerKV(0.0, 0, O.linear_state_bytes(att, tp))] * count
        else:
            out += [LayerKV(O.kv_bytes_per_token(att, kv_dtype, tp), att.window or 0, 0.0)] * count
    return tuple(out)
