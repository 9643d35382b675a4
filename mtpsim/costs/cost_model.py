"""What the Pricer asks of a cost model: the one interface roofline.py and calibrated.py both
give (and a test's constant model may give), declared rather than probed attribute by attribute.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mtpsim.costs.ops import AttentionKernel, BatchLens, CoreCounts, Op
    from mtpsim.costs.roofline import OpTime
    from mtpsim.engines import EngineSpec


class CorePricer(Protocol):
    """Prices one attention kernel's cores from the batch's lengths without building the Op
    (calibrated.py's, from a profile's attention table)."""

    def price(self, lens: BatchLens, tree_keys: float = 0.0) -> tuple[CoreCounts, OpTime] | None: ...


@runtime_checkable
class CostModel(Protocol):
    """Seconds of ops on one GPU of a given hardware, and of what a pass and an iteration cost
    around their ops.

    engine: the serving engine whose host figures it falls back on. has_glue: it prices a
    layer's glue (`layer.glue` ops: what a whole layer costs beyond its priced ops; only a
    profile with whole-layer timings fits one)."""

    name: str
    engine: EngineSpec
    has_glue: bool

    def time(self, op: Op, graphs: bool) -> OpTime:
        """One op's seconds, in a pass that replays a CUDA graph (`graphs`) or runs eagerly."""

    def core_pricer(self, kernel: AttentionKernel, graphs: bool) -> CorePricer | None:
        """A pricer for `kernel`'s cores without their Op, or None: each core's Op goes to `time`."""

    def frame_pricer(self, batch: int, q: float, d: int, graphs: bool):
        """A pricer of the pass frames of `batch` requests of q tokens, width d, from their longest
        KV without their Op (`times(kv_max)`: compute, memory, comm and launch seconds), or None."""

    def pass_launch_s(self, graphs: bool) -> float:
        """Fixed seconds of starting one pass (a graph replay's launch)."""

    def host_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration of `design` at `batch` requests, outside the passes."""
