"""Timing ops: warm-up, rotated inputs, many repeats, the median.

CPU: each call timed with the host clock (torch CPU ops are synchronous), so a time includes
PyTorch's per-call dispatch, as a real pass pays it. Shared CPUs run in fast and slow spells
(a neighbour's memory traffic; here they last about half a second and move op times by 10-30%),
so `interleaved` spreads each op's repeats over several visits, each pass over the ops in a new
shuffled order, and takes the median of all of them: a spell then lands on a few of every op's
repeats rather than on all of a few ops' repeats. CUDA: CUDA events; ops shorter than
`GRAPH_BELOW_S` are captured R times in a CUDA graph and a replay's time is divided by R, so
the time is the kernel's own plus its in-graph gap, with the launch costs measured apart
(`launch_costs`). Ops that cannot be captured (MoE's host-side expert loop) are timed eagerly.
"""
from __future__ import annotations

import math
import random
import statistics
import time

import torch

from mtpsim.limits import MAX_VISITS

MAX_SETS = 512           # rotated input sets per op at most
GRAPH_BELOW_S = 1e-3     # CUDA: graph-capture ops shorter than this
TARGET_S = {"cpu": 0.02, "cuda": 0.01}  # time spent repeating one point, roughly
MIN_REPS, MAX_REPS = 7, 200
SLOW_S = 0.05            # ops slower than this get 3 repeats and one visit (their spread is small)
VISIT_MIN_REPS = 2       # repeats per visit at least
assert MAX_VISITS == MAX_REPS // VISIT_MIN_REPS  # cli.py bounds --visits where more only adds time


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
    """Median seconds of one `fn(set)` call over rotated sets, after warm-up (one visit)."""
    return statistics.median(samples_s(sets, fn, device, graphs))


def samples_s(sets: list, fn, device: str, graphs: bool = True, share: float = 1.0, first: bool = True) -> list[float]:
    """Seconds of `fn(set)` calls over rotated sets after warm-up (3 calls on an op's `first`
    visit, else 1): `share` of the op's repeat budget (TARGET_S, MIN_REPS..MAX_REPS), at least
    VISIT_MIN_REPS calls."""
    if device == "cuda":
        return _cuda(sets, fn, graphs, share)
    t0 = time.perf_counter()
    fn(sets[0])                       # warm-up, and an estimate for the repeat count
    estimate = time.perf_counter() - t0
    for s in sets[1:3] if estimate < SLOW_S and first else ():
        fn(s)
    times = []
    for i in range(_reps(estimate, "cpu", share)):
        s = sets[i % len(sets)]
        t0 = time.perf_counter_ns()
        fn(s)
        times.append(time.perf_counter_ns() - t0)
    return [t * 1e-9 for t in times]


def interleaved(count: int, visit, visits: int, seed: int = 0, progress=None) -> list[list[float]]:
    """Every op's timings from `visits` passes over ops 0..count-1, each pass in a new shuffled
    order. `visit(i, share, first) -> list of seconds` times op i with `share` of its repeat
    budget (`first`: its first visit);
    an op slower than SLOW_S on the first pass is not visited again (its 3 repeats are taken
    then). `progress(n)` is called as ops are timed (count * visits in all)."""
    samples: list[list[float]] = [[] for _ in range(count)]
    rng = random.Random(seed)
    for v in range(visits):
        order = list(range(count))
        rng.shuffle(order)
        for i in order:
            if v == 0 or (samples[i] and min(samples[i]) < SLOW_S):  # [] : left out on its first visit
                samples[i] += visit(i, 1.0 / visits, v == 0)
            if progress:
                progress(1)
    return samples


def _reps(estimate_s: float, device: str, share: float = 1.0) -> int:
    """Repeats filling `share` of TARGET_S (MIN_REPS..MAX_REPS in all, at least VISIT_MIN_REPS);
    3 for points slower than SLOW_S."""
    if estimate_s > SLOW_S:
        return 3
    total = min(MAX_REPS, max(MIN_REPS, TARGET_S[device] / max(estimate_s, 1e-7)))
    return max(VISIT_MIN_REPS, round(total * share))


def _cuda(sets: list, fn, graphs: bool, share: float = 1.0) -> list[float]:
    for s in sets[:3]:
        fn(s)
    torch.cuda.synchronize()
    est = _events(lambda: fn(sets[0]))
    if graphs and est < GRAPH_BELOW_S:
        try:
            return _graph(sets, fn, est, share)
        except RuntimeError:  # not capturable (a host sync inside): time it eagerly
            torch.cuda.synchronize()
            _release_generator()
    return [_events(lambda i=i: fn(sets[i % len(sets)])) for i in range(_reps(est, "cuda", share))]


def _release_generator() -> None:
    """A capture that failed never ran its epilogue, so the default CUDA generator still counts
    itself mid-capture and refuses every later random draw ("Offset increment outside graph
    capture"): give it a fresh state with the same seed."""
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    fresh = torch.Generator(device=gen.device)
    fresh.manual_seed(gen.initial_seed())
    gen.graphsafe_set_state(fresh.graphsafe_get_state())


def _events(run) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def _graph(sets: list, fn, est_s: float, share: float = 1.0) -> list[float]:
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
    return [_events(graph.replay) / calls for _ in range(_reps(est_s * calls, "cuda", share))]


def launch_costs(pool: Pool, device: str) -> dict:
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
    in_graph = statistics.median(_graph([(a, b)], lambda s: torch.add(s[0], s[1]), 1e-5))
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
