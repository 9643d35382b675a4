"""Memory budget per GPU (DESIGN §3, KV reservation): weights of target and draft, KV bytes per
token of each, and how many requests fit.

Full-attention layers cost KV bytes per token; sliding-window layers per token up to the window;
linear-attention layers a constant state per request. Draft KV: `nextn` one MTP layer,
`multi_layer` and `parallel_heads` one per step, `frozen_kv` none.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.costs import ops as O
from mtpsim.costs.passes import Pricer
from mtpsim.designs import DesignShape

ALL_EXPERTS_TOKENS = 1 << 30  # enough tokens that every expert is touched


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
    hw, model = pricer.hw, pricer.model
    embedding = 0.0 if model.tie_embeddings else model.vocab_size * model.hidden_size * 2 / pricer.par.tp
    target_w = part_weight_bytes(pricer, "target") + embedding
    draft_w, draft_kv = 0.0, ()
    if design.design in ("nextn", "multi_layer", "parallel_heads"):
        layers = 1 if design.design == "nextn" else design.steps
        per_layer = part_weight_bytes(pricer, "mtp", with_shared_head=False)
        draft_w = layers * per_layer
        draft_kv = part_kv(pricer, "mtp") * layers
    elif design.design == "frozen_kv":
        draft_w = part_weight_bytes(pricer, "assistant")
    budget = hw.memory_capacity_bytes * hw.usable_memory_fraction - target_w - draft_w
    return MemoryBudget(hw.memory_capacity_bytes, target_w, draft_w, max(budget, 0.0),
                        part_kv(pricer, "target"), draft_kv, design.reserved_tokens)


def part_weight_bytes(pricer: Pricer, part: str, with_shared_head: bool = True) -> float:
    """Weight bytes of a part on one GPU: its ops over enough tokens to touch every expert."""
    ops = [op for op, _, n in pricer.static_ops(part, 0, ALL_EXPERTS_TOKENS, 1, False)[0] for _ in range(n)]
    shared_head = part == "mtp" and pricer.model.mtp.vocab_size is None
    return sum(op.weight_bytes for op in ops
               if with_shared_head or not (shared_head and op.family == "lm_head"))


def part_kv(pricer: Pricer, part: str) -> tuple[LayerKV, ...]:
    """One LayerKV per layer of a part that keeps KV or state of its own."""
    spec = pricer.layers(part)
    kv_dtype, tp = pricer.model.dtypes.kv_cache, pricer.par.tp
    out = []
    for count, ref in spec.groups:
        att = spec.spec.attention_kinds[ref.attention]
        if att.kind == "linear":
            out += [LayerKV(0.0, 0, O.linear_state_bytes(att, tp))] * count
        else:
            out += [LayerKV(O.kv_bytes_per_token(att, kv_dtype, tp), att.window or 0, 0.0)] * count
    return tuple(out)
