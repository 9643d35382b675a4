"""The fast path of a calibrated profile's attention pricing: one attention kernel's cores priced
over a pass's KV lengths without building an Op (costs/passes.py calls it every pass), the same
floats in the same order as CalibratedCosts.time (calibrated.py) of `kernel.core(lens)`; the
pass frame likewise (`FramePricer`, for pass_timer.py); and the step all take last, a measured
time split into compute, memory and launch (`split_time`).
"""
from __future__ import annotations

import math
from functools import lru_cache

from mtpsim.costs.ops import AttentionKernel, BatchLens, CoreCounts, frame_bytes
from mtpsim.costs.roofline import OpTime
from mtpsim.costs.tables import Table, kv_slice, read_slice, scaled, slice_floor


class CorePricer:
    """`CalibratedCosts.time` (`costs`: the CalibratedCosts it prices for) of one attention
    kernel's cores, for passes with or without graphs, without an Op: every pass prices its
    attention over a new KV length, and what does not depend on the KV (the table, the labels,
    the rates, each batch and query length's slice along kv) is looked up once. `price` works the
    same floats in the same order as `time` of `kernel.core(lens, tree_keys)`: _lookup, predict,
    then time's split."""

    def __init__(self, costs, kernel: AttentionKernel, table: Table, exact: bool, stand_in: str,
                 flop_rate: float, byte_rate: float, graphs: bool, prefill: bool = False):
        self.kernel, self.table, self.exact = kernel, table, exact
        # the profile has a prefill table for this kind: prefill-sized cores (the kernel's own
        # threshold: none on the decode path, AttentionKernel) are priced from it
        # (CalibratedCosts._prefill), so `price` hands them back
        self.prefill_q = kernel.prefill_q if prefill else math.inf
        self.flop_rate, self.byte_rate = flop_rate, byte_rate
        self.peak_flops, self.peak_bytes, self.stream_floor = costs.peak_flops, costs.peak_bytes, costs.stream_floor
        self.kv_max = costs.kv_key == "kv_max"
        self.q_measured = table.grid["q"][0][-1]
        self.kv_axis = table.grid["kv"]
        over = costs.launch
        self.call_s = 1 * over["call_s"] if over["included_in_op_times"] else None  # a core is one kernel
        self.kernel_s = 1 * costs.kernel_launch_s(graphs)
        # (source, source when floored) per way the table prices
        self.labels = {kind: (kind + stand_in, kind + "-floored" + stand_in)
                       for kind in ("calibrated", "calibrated-scaled", "extrapolated")}
        self.slice = lru_cache(maxsize=1024)(self._slice)

    def _slice(self, batch: int, q: float):
        """(the table's kv slice at batch, q and the kernel's heads, or at the largest measured q
        when q is beyond it; the share of q that q is, or None when q was measured)."""
        share = None
        if q > self.q_measured * (1 + 1e-9):  # more query tokens than measured (verify): extrapolated
            q, share = self.q_measured, self.q_measured / q
        return kv_slice(self.table, {"batch": batch, "q": q, "heads": self.kernel.heads}), share

    def price(self, lens: BatchLens, tree_keys: float = 0.0) -> tuple[CoreCounts, OpTime] | None:
        """(the core's counts, its time) over `lens`; None where time would take the nearest
        measured cell (outside the grid or at a gap) or read the prefill rows (prefill-sized
        queries): the caller prices the Op."""
        batch = lens.batch
        if lens.q_tokens > self.prefill_q * batch:
            return None
        counts = self.kernel.counts(lens, tree_keys)
        parts = self.split(self.slice(batch, lens.q_tokens / max(batch, 1)), batch, *counts)
        if parts is None:
            return None
        compute, memory, launch, source = parts
        return CoreCounts(counts[0], counts[1]), OpTime(compute, memory, 0.0, launch, source)

    def split(self, sliced: tuple, batch: int, flops: float, kv_bytes: float, act_bytes: float, kv_tokens: float,
              kv_max: float) -> tuple[float, float, float, str] | None:
        """The core's time from its `counts` over `batch` requests, at the `slice` of its batch and
        query length (`sliced`), as the compute, memory and launch seconds of its OpTime (no comm)
        and its source, plain values (a pass timer adds them: costs/pass_timer.py); None where
        `price` gives None."""
        piece, share = sliced
        hit = read_slice(self.kv_axis, piece, kv_max if self.kv_max else kv_tokens / batch)
        if hit is None:
            return None
        log_t, log_w, measured = hit
        op_bytes = kv_bytes + act_bytes  # Op.bytes: weight bytes (none), KV, activations
        if share is not None:  # fewer_queries' work: flops and activations scale with q, the KV read not
            # (another config's cell: its own work, as calibrated.py's extrapolated lookup)
            work_ref = max(flops * share / self.peak_flops, (kv_bytes + act_bytes * share) / self.peak_bytes) \
                if self.exact else math.exp(log_w)
            t, kind = scaled(self.table, math.exp(log_t), work_ref, self.work(flops, op_bytes), slice_floor(piece)), \
                "extrapolated"
        elif self.exact and measured:
            t, kind = math.exp(log_t), "calibrated"
        else:
            t, kind = scaled(self.table, math.exp(log_t), math.exp(log_w), self.work(flops, op_bytes)), \
                "calibrated-scaled"
        floor = op_bytes / self.peak_bytes if self.stream_floor else 0.0
        source, floored = self.labels[kind]
        if t < floor:
            t, source = floor, floored
        fixed = min(t, self.call_s) if self.call_s is not None else 0.0
        compute, memory = split_rest(t - fixed, flops / self.flop_rate if flops else 0.0, op_bytes / self.byte_rate)
        return compute, memory, fixed + self.kernel_s, source

    def work(self, flops: float, op_bytes: float) -> float:
        """The core's roofline work (CalibratedCosts.work_s of its Op): what a scaled time scales by."""
        return max(flops / self.peak_flops, op_bytes / self.peak_bytes)


class FramePricer:
    """`CalibratedCosts.time` of the pass frame (ops.pass_frame) of one batch, q, width and
    graphs at a longest KV `kv_max`, without an Op: the same floats in the same order (_lookup,
    predict, then time's split). What does not depend on kv_max (the table, its slice along kv,
    the frame's rates, launch and dispatch seconds) is worked out once."""

    def __init__(self, costs, probe, table: Table, piece, exact: bool, graphs: bool):
        self.table, self.piece, self.exact, self.kv_axis = table, piece, exact, table.grid["kv"]
        self.fixed_bytes, self.per_kv = frame_bytes(probe.shape["batch"], probe.shape["q"], probe.shape["d"])
        self.peak_bytes, self.stream_floor = costs.peak_bytes, costs.stream_floor
        self.call_s = probe.kernels * costs.launch["call_s"] if costs.launch["included_in_op_times"] else None
        self.launch_s = probe.kernels * costs.kernel_launch_s(graphs)
        self.compute_s = costs.roofline.compute_s(probe)  # no flops: 0.0
        self.byte_rate = costs.roofline.rates(probe)[1]

    def times(self, kv_max: float) -> tuple[float, float, float, float] | None:
        """The frame's (compute, memory, comm, launch) seconds at kv_max; None where time would
        take the nearest measured cell (outside the grid or at a gap: the caller prices the Op)."""
        hit = read_slice(self.kv_axis, self.piece, kv_max)
        if hit is None:
            return None
        op_bytes = self.fixed_bytes + self.per_kv * kv_max  # a frame has activation bytes only, and no flops
        log_t, log_w, measured = hit
        if self.exact and measured:
            t = math.exp(log_t)
        else:
            t = scaled(self.table, math.exp(log_t), math.exp(log_w), op_bytes / self.peak_bytes)  # its work: bytes alone
        floor = op_bytes / self.peak_bytes if self.stream_floor else 0.0
        if t < floor:
            t = floor
        fixed = min(t, self.call_s) if self.call_s is not None else 0.0
        compute, memory = split_rest(t - fixed, self.compute_s, op_bytes / self.byte_rate)
        return compute, memory, 0.0, fixed + self.launch_s


def split_time(t: float, fixed: float, compute: float, memory: float, launch: float, source: str) -> OpTime:
    """A measured op time `t` as an OpTime: `fixed` seconds of it are per-call dispatch (CPU
    dispatch measured inside the time), the rest counts as compute or memory (`split_rest`);
    `launch` is launch cost the measurement left out (kernel launches outside a graph)."""
    return OpTime(*split_rest(t - fixed, compute, memory), 0.0, fixed + launch, source)


def split_rest(rest: float, compute: float, memory: float) -> tuple[float, float]:
    """(compute, memory) seconds of a measured time's `rest`: it counts as compute or memory,
    whichever the roofline (`compute`, `memory`: its roofline times) says bounds the op, capped
    at the other's roofline time."""
    return (rest, min(rest, memory)) if compute >= memory else (min(rest, compute), rest)
