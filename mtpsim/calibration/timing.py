"""Timing one op: warm-up, rotated inputs, many repeats, the median.

CPU: each call timed with the host clock (torch CPU ops are synchronous), so a time includes
PyTorch's per-call dispatch, as a real pass pays it. CUDA: CUDA events; ops shorter than
`GRAPH_BELOW_S` are captured R times in a CUDA graph and a replay's time is divided by R, so
the time is the kernel's own plus its in-graph gap, with the launch overheads measured apart
(`overheads`). Ops that cannot be captured (MoE's host-side expert loop) are timed eagerly.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

MAX_SETS = 512           # rotated input sets per op at most
GRAPH_BELOW_S = 1e-3     # CUDA: graph-capture ops shorter than this
TARGET_S = {"cpu": 0.02, "cuda": 0.01}  # time spent repeating one point, roughly
MIN_REPS, MAX_REPS = 7, 200


class Pool:
    """Random inputs sliced from one buffer, so building thousands of points costs no fills.

    `sets(make)` calls `make` until the sets together exceed `rotate_bytes`: consecutive calls
    then read data that the previous calls pushed out of the cache level named in meta.yaml."""

    def __init__(self, device: str, dtype: torch.dtype, pool_bytes: int, rotate_bytes: int, seed: int = 0):
        torch.manual_seed(seed)
        self.device, self.dtype, self.rotate_bytes = device, dtype, rotate_bytes
        self.element_bytes = torch.tensor([], dtype=dtype).element_size()
        self.buf = torch.randn(pool_bytes // self.element_bytes, device=device).to(dtype)
        self.offset = 0
        self.align = max(1, 64 // self.element_bytes)

    def rand(self, *shape: int) -> torch.Tensor:
        n = math.prod(shape)
        if n > self.buf.numel():
            return torch.randn(*shape, device=self.device).to(self.dtype)
        if self.offset + n > self.buf.numel():
            self.offset = 0
        out = self.buf[self.offset:self.offset + n].view(*shape)
        self.offset += -(-n // self.align) * self.align  # next tensor 64-byte aligned, as torch allocates
        return out

    def sets(self, make) -> list:
        first = make()
        size = sum(t.numel() for t in (first.values() if isinstance(first, dict) else first)) * self.element_bytes
        count = max(1, min(MAX_SETS, math.ceil(self.rotate_bytes / max(size, 1))))
        return [first] + [make() for _ in range(count - 1)]


def median_time_s(sets: list, fn, device: str, graphs: bool = True) -> float:
    """Median seconds of one `fn(set)` call over rotated sets, after warm-up."""
    if device == "cuda":
        return _cuda(sets, fn, graphs)
    t0 = time.perf_counter()
    fn(sets[0])                       # warm-up, and an estimate for the repeat count
    estimate = time.perf_counter() - t0
    for s in sets[1:3] if estimate < 0.05 else ():
        fn(s)
    reps = _reps(estimate, "cpu")
    times = []
    for i in range(reps):
        s = sets[i % len(sets)]
        t0 = time.perf_counter_ns()
        fn(s)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) * 1e-9


def _reps(estimate_s: float, device: str) -> int:
    """Repeats filling TARGET_S, 7..200; 3 for points slower than 0.05 s (their spread is small)."""
    if estimate_s > 0.05:
        return 3
    return int(min(MAX_REPS, max(MIN_REPS, TARGET_S[device] / max(estimate_s, 1e-7))))


def _cuda(sets: list, fn, graphs: bool) -> float:
    for s in sets[:3]:
        fn(s)
    torch.cuda.synchronize()
    est = _events(lambda: fn(sets[0]))
    if graphs and est < GRAPH_BELOW_S:
        try:
            return _graph(sets, fn, est)
        except RuntimeError:  # not capturable (a host sync inside): time it eagerly
            torch.cuda.synchronize()
    times = [_events(lambda i=i: fn(sets[i % len(sets)])) for i in range(_reps(est, "cuda"))]
    return statistics.median(times)


def _events(run) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def _graph(sets: list, fn, est_s: float) -> float:
    """R calls over the rotated sets in one graph; replay time / R, median of replays."""
    calls = max(len(sets), min(200, math.ceil(2e-3 / max(est_s, 1e-6))))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in sets[:3]:
            fn(s)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(sets[i % len(sets)])
    graph.replay()
    times = [_events(graph.replay) / calls for _ in range(_reps(est_s * calls, "cuda"))]
    return statistics.median(times)


def overheads(pool: Pool, device: str) -> dict:
    """Per-call costs outside an op's own work. CPU: the dispatch floor of one torch call
    (already inside every measured op time). CUDA: eager launch per kernel, per-kernel cost
    inside a graph, and launching one graph replay."""
    a, b = pool.rand(1), pool.rand(1)
    if device == "cpu":
        return {"call_s": median_time_s([(a, b)], lambda s: torch.add(s[0], s[1]), "cpu")}
    n = 1000
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        torch.add(a, b)
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) / n
    in_graph = _graph([(a, b)], lambda s: torch.add(s[0], s[1]), 1e-5)
    one = torch.cuda.CUDAGraph()
    with torch.cuda.graph(one):
        torch.add(a, b)
    replays = []
    for _ in range(200):
        t0 = time.perf_counter()
        one.replay()
        torch.cuda.synchronize()
        replays.append(time.perf_counter() - t0)
    return {"call_s": eager, "launch_s": eager, "graph_kernel_s": in_graph,
            "graph_replay_s": statistics.median(replays)}
