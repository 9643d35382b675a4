"""Roofline cost model: datasheet ceilings, modest efficiencies, latency terms (DESIGN §4).

time(op) = max(flops / (peak * eff_f), bytes / (bw * eff_b)) + collective time + kernel overhead
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim.catalog import HardwareSpec
from mtpsim.costs.ops import Op


@dataclass(frozen=True)
class OpTime:
    """Seconds one op takes, split by what bounds it. `source` says who priced it."""

    compute_s: float
    memory_s: float
    comm_s: float
    overhead_s: float
    source: str = "roofline"

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.comm_s + self.overhead_s


class RooflineCosts:
    """Prices ops from a HardwareSpec. `cuda_graphs` picks the per-kernel launch cost."""

    name = "roofline"

    def __init__(self, hw: HardwareSpec):
        self.hw = hw

    def kernel_overhead_s(self, graphs: bool) -> float:
        return self.hw.graph_launch_overhead_s if graphs else self.hw.launch_overhead_s

    def pass_overhead_s(self, graphs: bool) -> float:
        """Fixed cost of starting one pass: a graph replay launch, or nothing extra when eager
        (eager kernels each pay their own launch)."""
        return self.hw.launch_overhead_s if graphs else 0.0

    def host_overhead_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration outside the passes (scheduling, sampling, acceptance,
        rollback, bookkeeping): the hardware catalog's figure, whatever the design and batch."""
        return self.hw.host_overhead_s

    def time(self, op: Op, graphs: bool) -> OpTime:
        return OpTime(self.compute_s(op), self.memory_s(op), self.comm_s(op),
                      op.kernels * self.kernel_overhead_s(graphs))

    def compute_s(self, op: Op) -> float:
        if not op.flops:
            return 0.0
        return op.flops / (self.hw.flops_per_s(op.dtype) * self.hw.efficiency_flops)

    def memory_s(self, op: Op) -> float:
        return op.bytes / (self.hw.memory_bandwidth_bytes_per_s * self.hw.efficiency_bandwidth)

    def comm_s(self, op: Op) -> float:
        """Alpha-beta: one small-message latency plus the ring's bytes over the link.
        All-reduce moves 2(r-1)/r of the buffer per GPU; all-to-all (r-1)/r."""
        if op.family not in ("allreduce", "alltoall"):
            return 0.0
        ranks = op.shape["ranks"]
        share = 2 * (ranks - 1) / ranks if op.family == "allreduce" else (ranks - 1) / ranks
        return self.hw.link_latency_s + share * op.comm_bytes / self.hw.link_bandwidth_bytes_per_s
