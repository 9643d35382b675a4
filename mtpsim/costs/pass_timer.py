"""A pass's seconds, as the simulator's decode loop needs them: `PassTimer` times one pass shape
over batches of one size from their lengths, with the same floats in the same order as
`Pricer.plain_pass(shape, lens).cost.time_s` (tests/test_fast_paths.py pins it), and none of
the breakdown a PassCost carries (work, sources), which the loop never reads.

What a pass over `batch` requests costs whatever their KV is the pass's plan (passes.py `_Plan`:
its token-count ops summed, its compaction and launch); per call only the attention cores (by
each kernel's `CorePricer` at the batch's slice of its table, else the pricer's `core`) and the
pass frame (the cost model's `frame_pricer`, else `frame_memo`) are priced, and their seconds
added to the plan's in `Work.plus`'s order. Only where `plain_pass` is all that `price_lens` does (`applies`).
"""
from __future__ import annotations

from mtpsim.costs.ops import BatchLens

FRAMES_KEPT = 4096  # a timer's priced frames, by longest KV (a few thousand lengths recur; cleared past this)


class PassTimer:
    """`Pricer.plain_pass(shape, lens).cost.time_s` for the uniform lengths (`BatchLens.uniform`
    of the shape's tokens per request) of `batch` requests."""

    __slots__ = ("batch", "q", "offset", "tree_keys", "graphs", "cores", "layers", "fixed_rows", "plan_s", "launch_s",
                 "hidden_size", "core", "frame", "frames", "by_sums", "frame_pricer")

    def __init__(self, pricer, shape, batch: int):
        plan = pricer.plan_memo(shape, batch, 0)
        self.batch, self.q = batch, float(batch * shape.tokens_per_request) / max(batch, 1)  # as the lens' sums give it
        self.offset, self.tree_keys, self.graphs = shape.kv_offset, shape.tree_keys, plan.graphs
        # (kernel, layers, its core pricer or None, that pricer's slice of its table at this batch and q)
        self.cores = tuple((kernel, n, found, found.slice(batch, self.q) if found is not None else None)
                           for kernel, n, found in plan.cores)
        self.layers = tuple(n for _, n, _ in plan.cores)  # each core's count in the pass
        # (n, (compute, memory, comm, launch)) of the rows priced once (the compaction), added after the cores
        self.fixed_rows = tuple((n, (t.compute_s, t.memory_s, t.comm_s, t.launch_s)) for _, t, n in plan.compact)
        work = plan.work  # the token-count ops' seconds, where every pass's sums start
        self.plan_s = (work.compute_s, work.memory_s, work.comm_s, work.launch_s)
        self.launch_s, self.hidden_size = plan.launch_s, plan.hidden_size
        self.core, self.frame = pricer.core, pricer.frame_memo
        self.frames: dict[float, tuple] = {}  # the pass frame's row by the batch's longest visible KV
        # the frame's times by its longest KV without an Op (a profile's pass table, else the
        # roofline's bytes); None (a cost model without one, or off its grid): `frame`
        self.frame_pricer = pricer.costs.frame_pricer(batch, self.q, plan.hidden_size, plan.graphs)
        # whether the seconds read the lengths' sums alone (BatchLens' scalars), not each request's
        # (a sliding window's or a sparse top-k's cap, the pricer's other roads): IterationTiming's memo
        self.by_sums = all(found is not None and not kernel.sparse for kernel, _, found in plan.cores)

    @staticmethod
    def applies(pricer, shape) -> bool:
        """Whether `price_lens` of `shape` is `plain_pass` over the whole batch at its plan for the
        batch size: one attention group, no batch-expanded verify, no two-batch overlap, and a
        decode-shaped pass (a prefill's or a ragged verify's plan also depends on its tokens)."""
        host = pricer.host
        return pricer.par.attention_dp == 1 and not (host.expands_verify and shape.kind == "verify") \
            and not host.two_batch_overlap and shape.kind != "prefill" and not shape.ragged

    def seconds(self, lens: BatchLens) -> float:
        """The pass's seconds over `lens`."""
        whole = lens.shifted(self.offset)
        return self.total(whole, self.core_times(whole))

    def core_times(self, whole: BatchLens) -> list:
        """Each attention core's (compute, memory, comm, launch) seconds over `whole`, the batch's
        lengths as the pass sees them (shifted by its offset), once (not times its layers): by its
        CorePricer's `split`, else priced by the pricer's `core`."""
        times = []
        for kernel, _, pricer, sliced in self.cores:
            parts = pricer.split(sliced, whole.batch, *kernel.counts(whole, self.tree_keys)) if pricer is not None else None
            if parts is not None:
                times.append((parts[0], parts[1], 0.0, parts[2]))
            else:
                t = self.core(kernel, pricer, whole, self.tree_keys, self.graphs)[1]
                times.append((t.compute_s, t.memory_s, t.comm_s, t.launch_s))
        return times

    def shares_cores(self, other: PassTimer) -> bool:
        """Whether `other`'s core times over a batch are this pass's too: the same kernels, seen
        from the same lengths, mask and graphs (nextn's verify and extend)."""
        return (self.q, self.offset, self.tree_keys, self.graphs) == (other.q, other.offset, other.tree_keys, other.graphs) \
            and [c[0] for c in self.cores] == [c[0] for c in other.cores]

    def total(self, whole: BatchLens, core_times: list) -> float:
        """The pass's seconds given its cores' times over `whole` (another pass's when it
        `shares_cores`), each times its layers here: Work.plus's sums of the compute,
        memory, comm and launch seconds over the cores, the fixed rows and the frame, in its
        order, then Work.time_s's."""
        frame = self.frames.get(whole.visible_max)
        if frame is None:
            if len(self.frames) >= FRAMES_KEPT:
                self.frames.clear()
            frame = self.frame_pricer.times(whole.visible_max) if self.frame_pricer is not None else None
            if frame is None:
                t = self.frame(whole.batch, self.q, whole.visible_max, self.hidden_size, self.graphs)[1]
                frame = (t.compute_s, t.memory_s, t.comm_s, t.launch_s)
            self.frames[whole.visible_max] = frame
        compute, memory, comm, launch = self.plan_s
        rows = (*zip(self.layers, core_times), *self.fixed_rows) if self.fixed_rows else zip(self.layers, core_times)
        for n, (c, m, co, la) in rows:
            if c >= m:
                compute += n * c
            else:
                memory += n * m
            comm, launch = comm + n * co, launch + n * la
        c, m, co, la = frame  # the frame's row, once: 1 * x is x
        if c >= m:
            compute += c
        else:
            memory += m
        return compute + memory + (comm + co) + (launch + la + self.launch_s)
