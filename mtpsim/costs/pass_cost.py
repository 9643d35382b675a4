"""What a priced pass comes to: `Work`, the seconds and work of some ops on one GPU, summed as
the Pricer (costs/passes.py) adds its ops, and `PassCost`, one pass's time with that breakdown.
"""
from __future__ import annotations

from typing import NamedTuple

from mtpsim.costs import ops as O
from mtpsim.costs.roofline import OpTime, bound_of


class Work(NamedTuple):
    """Seconds and work of some ops on one GPU. An op's roofline time counts as compute or memory,
    whichever bounds it; flops in FLOP, bytes in bytes. (A named tuple: every pass makes one, and
    a frozen dataclass costs a setattr per field; `+` adds, as below, rather than concatenating.)"""

    compute_s: float = 0.0
    memory_s: float = 0.0
    comm_s: float = 0.0
    launch_s: float = 0.0
    flops: float = 0.0
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    comm_bytes: float = 0.0

    @classmethod
    def of(cls, op: O.Op, t: OpTime, n: int = 1) -> Work:
        """n copies of one op priced at t."""
        compute, memory = (t.compute_s, 0.0) if t.compute_s >= t.memory_s else (0.0, t.memory_s)
        return cls(n * compute, n * memory, n * t.comm_s, n * t.launch_s, n * op.flops, n * op.weight_bytes,
                   n * op.kv_bytes, n * op.comm_bytes)

    def __add__(self, o: Work) -> Work:
        return Work(self.compute_s + o.compute_s, self.memory_s + o.memory_s, self.comm_s + o.comm_s,
                    self.launch_s + o.launch_s, self.flops + o.flops, self.weight_bytes + o.weight_bytes,
                    self.kv_bytes + o.kv_bytes, self.comm_bytes + o.comm_bytes)

    def plus(self, rows, launch_s: float = 0.0) -> Work:
        """This work, then each (op, time, n) row's (`Work.of`), then `launch_s` more: the
        same sums in the same order as adding them one by one, without a Work per row."""
        compute_s, memory_s, comm_s, over_s = self.compute_s, self.memory_s, self.comm_s, self.launch_s
        flops, weights, kv, comm_bytes = self.flops, self.weight_bytes, self.kv_bytes, self.comm_bytes
        for op, t, n in rows:
            if t.compute_s >= t.memory_s:  # the bound counts: compute or memory (adding n * 0.0 changes nothing)
                compute_s += n * t.compute_s
            else:
                memory_s += n * t.memory_s
            comm_s, over_s = comm_s + n * t.comm_s, over_s + n * t.launch_s
            flops, weights = flops + n * op.flops, weights + n * op.weight_bytes
            kv, comm_bytes = kv + n * op.kv_bytes, comm_bytes + n * op.comm_bytes
        return Work(compute_s, memory_s, comm_s, over_s + launch_s, flops, weights, kv, comm_bytes)

    @property
    def time_s(self) -> float:
        return self.compute_s + self.memory_s + self.comm_s + self.launch_s


class PassCost(NamedTuple):
    """Seconds and work of one pass on one GPU of a replica (a named tuple: one is made every
    pass, and a tuple is the cheapest immutable record to make)."""

    kind: str
    part: str
    tokens: int
    time_s: float
    compute_s: float
    memory_s: float
    comm_s: float
    launch_s: float
    flops: float
    weight_bytes: float
    kv_bytes: float
    comm_bytes: float
    sources: tuple[str, ...] = ()
    ops: tuple[tuple[O.Op, OpTime, int], ...] = ()

    @classmethod
    def of(cls, kind: str, part: str, tokens: int, w: Work, sources=(), ops=()) -> PassCost:
        return cls(kind, part, tokens, w.time_s, *w, sources, ops)  # Work's fields, in PassCost's order

    @property
    def bound(self) -> str:
        """What dominates: compute, memory, comm or overhead (roofline.bound_of)."""
        return bound_of(self.compute_s, self.memory_s, self.comm_s, self.launch_s)
