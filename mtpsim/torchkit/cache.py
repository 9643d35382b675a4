"""KV caches with per-request lengths, and where a pass's tokens sit.

A `Cache` belongs to one model part (the target, or one draft layer). Each of its layers keeps
  - KV in slots `position % capacity`: global layers have room for the whole sequence, sliding
    layers a ring of `window + max_pass_tokens` slots (a sliding window only ever needs that many,
    and a rejected write can only land on a slot whose old position has left every window);
  - or, for linear attention, a recurrent state per request plus the states after each token of
    the last pass, so that a rollback picks the state after the last kept token.
`lens[i]` is request i's committed length. A pass writes its tokens at `lens + 0..q-1`; rollback
is `commit(new_lens)`. Nothing beyond `lens` is ever read: every read is masked by position,
so KV a rejected draft wrote is dead the moment the length drops.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

NEVER = 1 << 40


class KVSlots:
    """K and V of one layer, `[B, heads, capacity, dim]` each (MLA: one latent tensor, no V)."""

    def __init__(self, batch: int, heads: int, capacity: int, k_dim: int, v_dim: int | None, dtype, device):
        self.capacity = capacity
        self.k = torch.zeros(batch, heads, capacity, k_dim, dtype=dtype, device=device)
        self.v = None if v_dim is None else torch.zeros(batch, heads, capacity, v_dim, dtype=dtype, device=device)

    @classmethod
    def of(cls, k: torch.Tensor, v: torch.Tensor | None) -> KVSlots:
        """Slots over existing tensors (calibration rotates them over preallocated inputs)."""
        out = object.__new__(cls)
        out.capacity, out.k, out.v = k.shape[2], k, v
        return out

    def view(self, b: int) -> KVSlots:
        out = object.__new__(KVSlots)
        out.capacity, out.k = self.capacity, self.k[b:b + 1]
        out.v = None if self.v is None else self.v[b:b + 1]
        return out

    def write(self, q_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor | None) -> None:
        """k, v: [B, q, heads, dim] for the tokens at q_pos [B, q]."""
        rows = torch.arange(q_pos.shape[0], device=q_pos.device)[:, None].expand_as(q_pos)
        slots = q_pos % self.capacity
        self.k[rows, :, slots] = k
        if v is not None:
            self.v[rows, :, slots] = v

    def poison(self, lens: np.ndarray, value: float) -> None:
        """Fill every slot not holding a committed position (tests: nothing may read them)."""
        for b, n in enumerate(lens):
            live = np.arange(max(0, n - self.capacity), n) % self.capacity
            dead = np.setdiff1d(np.arange(self.capacity), live)
            self.k[b, :, dead] = value
            if self.v is not None:
                self.v[b, :, dead] = value


class LinearState:
    """Gated DeltaNet state `[B, heads, dk, dv]` (fp32 or wider) and short-conv state `[B, channels, k-1]`."""

    def __init__(self, batch: int, heads: int, dk: int, dv: int, channels: int, kernel: int, device, dtype):
        self.state = torch.zeros(batch, heads, dk, dv, dtype=dtype, device=device)
        self.conv = torch.zeros(batch, channels, kernel - 1, dtype=dtype, device=device)
        self.pending: tuple[torch.Tensor, torch.Tensor] | None = None  # per-token states of the last pass

    def view(self, b: int) -> LinearState:
        out = object.__new__(LinearState)
        out.state, out.conv, out.pending = self.state[b:b + 1], self.conv[b:b + 1], None
        return out

    def keep(self, kept: torch.Tensor) -> None:
        """After a pass of q tokens keep the state after `kept[i]` of them (0 = as before the pass)."""
        if self.pending is None:
            return
        states, convs = self.pending  # [B, q+1, ...]: index 0 is the state before the pass
        rows = torch.arange(states.shape[0], device=states.device)
        self.state.copy_(states[rows, kept])
        self.conv.copy_(convs[rows, kept])
        self.pending = None

    def poison(self, lens: np.ndarray, value: float) -> None:
        pass  # no slots beyond the length: the state *is* the committed prefix


@dataclass
class Cache:
    """One model part's per-layer storage and committed lengths."""

    layers: list
    lens: np.ndarray
    pass_start: np.ndarray | None = None

    def view(self, b: int) -> Cache:
        return Cache([s.view(b) for s in self.layers], self.lens[b:b + 1].copy())

    def begin(self) -> None:
        """A pass starts at the committed lengths (linear layers keep per-token states from here)."""
        self.pass_start = self.lens.copy()

    def commit(self, new_lens: np.ndarray) -> None:
        """Set committed lengths (grow after a pass, or roll rejected tokens back)."""
        if self.pass_start is not None:
            kept = torch.as_tensor(np.clip(new_lens - self.pass_start, 0, None))
            for s in self.layers:
                if isinstance(s, LinearState):
                    s.keep(kept.to(s.state.device))
        self.lens = np.asarray(new_lens, dtype=np.int64).copy()
        self.pass_start = None

    def poison(self, value: float = float("nan")) -> None:
        for s in self.layers:
            s.poison(self.lens, value)


@dataclass
class Batch:
    """Where a pass's query tokens sit. q_pos [B, q] absolute positions; `limit` [B]: keys only at
    positions below it (query-only layers reading the target's committed KV), else None;
    `prefill`: one request attending to its own fresh prompt KV."""

    q_pos: torch.Tensor
    limit: torch.Tensor | None = None
    prefill: bool = False
    memo: dict = field(default_factory=dict)  # per-pass masks and rotary tables, shared by layers

    @classmethod
    def at(cls, start: np.ndarray, q: int, device, limit: np.ndarray | None = None, prefill: bool = False) -> Batch:
        pos = torch.as_tensor(start, device=device)[:, None] + torch.arange(q, device=device)
        lim = None if limit is None else torch.as_tensor(limit, device=device)
        return cls(pos, lim, prefill)

    def read_len(self, capacity: int) -> int:
        """Slots a pass needs to read: up to its furthest position (global caches), at most all."""
        return min(capacity, int(self.q_pos.max()) + 1)

    def mask(self, capacity: int, window: int | None, length: int) -> torch.Tensor:
        """[B, 1, q, length] bool: slot j holds position p = s - ((s - j) mod capacity) for a query
        at s (the newest position written there); visible if 0 <= p, inside the window, below limit."""
        key = (capacity, window, length)
        if key not in self.memo:
            s = self.q_pos[:, :, None]
            j = torch.arange(length, device=s.device)
            p = s - torch.remainder(s - j, capacity)
            ok = (p >= 0) & (p > s - (window or NEVER))
            if self.limit is not None:
                ok &= p < self.limit[:, None, None]
            self.memo[key] = ok[:, None]
        return self.memo[key]
