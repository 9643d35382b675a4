"""Roofline cost model: datasheet ceilings, modest efficiencies, latency terms.

time(op) = max(flops / (peak * eff_f), bytes / (bw * eff_b)) + collective time + kernel launch cost

Hardware whose catalog entry sets `latency_floors: true` (the GPUs) prices GEMMs, LM heads,
attention, MoE experts and collectives with the floors fitted on measured GPU tables
(costs/floors.py, mtpsim/data/latency_floors.yaml), per op group:

    kernel op:   floor_s + per_item_s * items + max(flops / (peak * eff_flops), bytes / (bw * eff_bandwidth))
    collective:  alpha_s + alpha_per_doubling_s * log2(ranks / 2) + share * bytes / (link_bw * eff_link)

The fitted floor is an in-graph kernel time (what the measured tables hold), so such an op pays no
per-kernel launch inside a CUDA graph, and (launch - graph launch) per kernel when eager. Other ops
(norms, sampling, linear-attention state, ...) and hardware without floors (cpu) keep the plain form.
A collective wider than the fitted tables measured (floors.FITTED_MAX_RANKS), or one that crosses
nodes (the NVLink domain) onto the network, is labelled `extrapolated`.
"""
from __future__ import annotations

from typing import NamedTuple

from mtpsim.catalog import load_engine
from mtpsim.costs import floors as F
from mtpsim.costs.op import HOST_COPY
from mtpsim.costs.ops import Op, frame_bytes, pass_frame
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError
from mtpsim.hardware_spec import HardwareSpec


class OpTime(NamedTuple):
    """Seconds one op takes, split by what bounds it. `source` says who priced it. (A named
    tuple: the attention core's is made every pass, and a tuple is the cheapest record to make.)"""

    compute_s: float
    memory_s: float
    comm_s: float
    launch_s: float
    source: str = "roofline"

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.comm_s + self.launch_s

    @property
    def bound(self) -> str:
        return bound_of(self.compute_s, self.memory_s, self.comm_s, self.launch_s)


def bound_of(compute_s: float, memory_s: float, comm_s: float, launch_s: float) -> str:
    """What dominates a time: compute, memory, comm or overhead (the launch cost, under the label
    `mtpsim cost` prints); the first of them on a tie."""
    terms = {"compute": compute_s, "memory": memory_s, "comm": comm_s, "overhead": launch_s}
    return max(terms, key=terms.get)


class RooflineCosts:
    """Prices ops from a HardwareSpec. `cuda_graphs` picks the per-kernel launch cost."""

    name = "roofline"
    has_glue = False  # layer glue is fitted on a profile's whole-layer timings (calibrated.py)

    def __init__(self, hw: HardwareSpec, engine: EngineSpec | None = None):
        self.hw = hw
        self.engine = engine or load_engine("sglang")
        self.floors = F.committed_floors() if hw.latency_floors else None
        self._groups: dict = {}  # (family, dtype, kind) -> (floor params or None, flop/s, byte/s)

    def kernel_launch_s(self, graphs: bool) -> float:
        return self.hw.graph_launch_overhead_s if graphs else self.hw.launch_overhead_s

    def pass_launch_s(self, graphs: bool) -> float:
        """Fixed cost of starting one pass: a graph replay launch, or nothing extra when eager
        (eager kernels each pay their own launch)."""
        return self.hw.launch_overhead_s if graphs else 0.0

    def host_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration outside the passes (scheduling, sampling, acceptance,
        rollback, bookkeeping): the serving engine's figure (mtpsim/data/engines/)."""
        return self.engine.host_s(design, batch)

    def core_pricer(self, kernel, graphs: bool) -> None:
        """No pricer without the Op: every attention core goes to `time` (cost_model.CostModel)."""
        return None

    def frame_pricer(self, batch: int, q: float, d: int, graphs: bool) -> RooflineFrame:
        """`time` of the pass frames of `batch` requests of q tokens and width d by their longest KV."""
        return RooflineFrame(self, pass_frame(batch, q, 0.0, d), graphs)

    def floor_params(self, op: Op) -> dict | None:
        """The fitted floor group pricing `op`, or None (no floors on this hardware, or a family
        the fit does not cover)."""
        return self._group(op)[0]

    def rates(self, op: Op) -> tuple[float, float]:
        """(flop/s, byte/s) `op` runs at: the datasheet peaks times its floor group's fitted
        efficiencies, else the hardware's (`compute_s` = flops / the first, `memory_s` = bytes /
        the second)."""
        _, flop_rate, byte_rate = self._group(op)
        return flop_rate, byte_rate

    def _group(self, op: Op) -> tuple:
        """(floor params, flop/s, byte/s) of op's (family, dtype, kind), worked out once."""
        key = (op.family, op.dtype, op.shape.get("kind"))
        found = self._groups.get(key)
        if found is None:
            p = self.floors.params(*key) if self.floors is not None else None
            eff_flops = p["eff_flops"] if p is not None and "eff_flops" in p else self.hw.efficiency_flops
            eff_bytes = p["eff_bandwidth"] if p is not None and "eff_bandwidth" in p else self.hw.efficiency_bandwidth
            try:
                flop_rate = self.hw.flops_per_s(op.dtype) * eff_flops
            except ScenarioError:  # a dtype without a usable peak: an error only once it has flops to price
                flop_rate = None
            found = self._groups[key] = (p, flop_rate, self.hw.memory_bandwidth_bytes_per_s * eff_bytes)
        return found

    def floor_s(self, op: Op) -> float:
        """The fitted latency floor of a kernel op (its fixed and per-item seconds); 0 without one."""
        p = self.floor_params(op)
        if p is None or op.family in F.COLLECTIVES:
            return 0.0
        return p["floor_s"] + p.get(F.ITEM_KEY, 0.0) * float(F.items(op.family, op.shape, op.flops))

    def time(self, op: Op, graphs: bool) -> OpTime:
        if self.floor_params(op) is None:
            return OpTime(self.compute_s(op), self.memory_s(op), self.comm_s(op),
                          op.kernels * self.kernel_launch_s(graphs))
        launch = 0.0 if graphs else op.kernels * max(0.0, self.hw.launch_overhead_s - self.hw.graph_launch_overhead_s)
        if op.family in F.COLLECTIVES:
            return OpTime(0.0, 0.0, self.comm_s(op), launch, F.collective_source(op.shape))
        return OpTime(self.compute_s(op), self.memory_s(op), 0.0, self.floor_s(op) + launch)

    def compute_s(self, op: Op) -> float:
        if not op.flops:
            return 0.0
        flop_rate = self._group(op)[1]
        if flop_rate is None:
            self.hw.flops_per_s(op.dtype)  # raises the ScenarioError naming the missing peak
        return op.flops / flop_rate

    def memory_s(self, op: Op) -> float:
        return op.bytes / self._group(op)[2]

    def comm_s(self, op: Op) -> float:
        """Alpha-beta: one small-message latency plus the ring's bytes over the link.
        All-reduce moves 2(r-1)/r of the buffer per GPU; all-to-all (r-1)/r. With fitted floors
        the latency grows per doubling of the ranks and the link runs at its fitted fraction."""
        if op.family == HOST_COPY:  # host memory to this GPU over its host link (costs/engram.py)
            return op.comm_bytes / self.hw.host_link_bandwidth_bytes_per_s
        if op.family not in F.COLLECTIVES:
            return 0.0
        ranks, nodes = op.shape["ranks"], op.shape.get("nodes", 1)
        if nodes > 1:
            return self._internode_s(op, ranks, nodes)
        return self._intranode_s(op, op.comm_bytes, ranks)

    def _intranode_s(self, op: Op, comm_bytes: float, ranks: int) -> float:
        link_s = float(F.share(op.family, ranks)) * comm_bytes / self.hw.link_bandwidth_bytes_per_s
        p = self.floor_params(op)
        if p is None:
            return self.hw.link_latency_s + link_s
        return float(F.predict(p, 0.0, link_s, ranks))

    def _internode_s(self, op: Op, ranks: int, nodes: int) -> float:
        """A collective over `ranks` GPUs on `nodes` nodes of g = ranks / nodes: a leg inside each
        node over NVLink plus a leg over each GPU's own network link, added (the network leg
        dominates). All-reduce, hierarchical: reduce-scatter and all-gather inside the node
        (2(g-1)/g of the buffer), an all-reduce of the GPU's 1/g shard across nodes
        (2(n-1)/n of it). All-to-all: (g-1)/r of the buffer goes to peers on the node, (r-g)/r
        over the network."""
        g, hw, b = ranks // nodes, self.hw, op.comm_bytes
        if op.family == "allreduce":
            intra, inter = b, 2 * (nodes - 1) / nodes * b / g
        else:
            intra, inter = b * g / ranks, b * (ranks - g) / ranks
        leg = self._intranode_s(op, intra, g) if g > 1 else 0.0
        return leg + hw.internode_latency_s + inter / hw.internode_bandwidth_bytes_per_s


class RooflineFrame:
    """`RooflineCosts.time` of one batch, q, width and graphs' pass frame (ops.pass_frame) at a
    longest KV, without an Op: the same floats. Only its memory seconds (its bytes over its
    group's rate) depend on the KV: a frame has no flops, no collective, and no per-item floor
    (floors.items is 0 for it), so the rest is the probe's."""

    def __init__(self, costs: RooflineCosts, probe: Op, graphs: bool):
        t = costs.time(probe, graphs)
        self.compute_s, self.comm_s, self.launch_s = t.compute_s, t.comm_s, t.launch_s
        self.byte_rate = costs._group(probe)[2]
        self.fixed_bytes, self.per_kv = frame_bytes(probe.shape["batch"], probe.shape["q"], probe.shape["d"])

    def times(self, kv_max: float) -> tuple[float, float, float, float]:
        """(compute, memory, comm, launch) seconds at kv_max."""
        return self.compute_s, (self.fixed_bytes + self.per_kv * kv_max) / self.byte_rate, self.comm_s, self.launch_s
