"""The one home of the overlap rule: an iteration takes its passes back to back plus the host
time the overlap window does not hide. The window is the pass kinds during which the engine's
host prepares the next iteration (designs.overlap_window, from the engine's `hides`); the
simulator's decode and prefill iterations and the `cost` report all price an iteration here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from mtpsim.designs import DesignShape, overlap_window

if TYPE_CHECKING:
    from mtpsim.costs.host import HostModel

PREFILL_WINDOW = ("prefill",)  # a prompt chunk's host work hides behind its prefill, under overlap


class IterationCost(NamedTuple):
    """Seconds of one iteration: `gpu_s` its passes back to back, `host_s` the engine's host
    work, `hidden_s` the GPU time of the passes that hide host work, `exposed_host_s` the host
    time left over, which the iteration waits for."""

    gpu_s: float
    host_s: float
    hidden_s: float
    exposed_host_s: float

    @property
    def iteration_s(self) -> float:
        return self.gpu_s + self.exposed_host_s


def iteration_cost(kinds: Sequence[str], times_s: Sequence[float], window: Sequence[str], host_s: float) -> IterationCost:
    """Passes of `kinds` taking `times_s` (in order), the kinds in `window` hiding host time,
    and `host_s` of host work: exposed host time = max(0, host - hidden)."""
    gpu_s = hidden_s = 0.0
    for kind, t in zip(kinds, times_s):
        gpu_s += t
        if kind in window:
            hidden_s += t
    return IterationCost(gpu_s, host_s, hidden_s, max(0.0, host_s - hidden_s))


def hiding_window(design: DesignShape, host: HostModel, overlap: bool) -> tuple[str, ...]:
    """The pass kinds of a decode iteration of `design` that hide host time: the engine's overlap
    window for it (designs.overlap_window), none without the overlap scheduler."""
    return overlap_window(design, host.engine) if overlap else ()
