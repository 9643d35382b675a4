"""Pricing a pass: a forward of one model part over a batch, as ops priced by a cost model.

`Pricer.price(shape, q_lens, kv_lens)` is the one public call: it returns a `PassCost` with the
time and a named breakdown (`price_lens` takes the batch as `BatchLens` sums, the engine's fast
path). Ops that depend only on token counts (GEMMs, experts, LM head, collectives) are built
once per token count and cached; the attention core is priced per call from the batch's KV sum
and longest KV (per-request lengths only under a sliding window), by the cost model's
`CorePricer` for its kernel where it has one (no Op built; core_pricer.py), else as an Op.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import NamedTuple

import numpy as np

from mtpsim.costs import compressed as C
from mtpsim.costs import ops as O
from mtpsim.costs import overlap, part_ops, streams
from mtpsim.costs.batch_expansion import expanded_verify
from mtpsim.costs.cost_model import CostModel
from mtpsim.costs.deployment import Deployment, deploy
from mtpsim.costs.pass_cost import PassCost, Work
from mtpsim.designs import PassShape  # noqa: F401 (priced here; costs re-exports it)

__all__ = ["PassCost", "PassShape", "Pricer", "Work"]

class _LastCore(NamedTuple):
    """The attention core a kernel priced last: for these lengths, tree keys and graphs, (op, time)."""

    lens: O.BatchLens
    tree_keys: float
    graphs: bool
    priced: tuple


@dataclass(frozen=True)
class _Plan:
    """What a pass over a batch of one size costs whatever its KV (`Pricer.plan_memo`): whether it
    replays a CUDA graph, its token rows, the token-count ops priced (`static_ops`: ops, their
    Work, sources), the KV compaction after it (a row or none), the pass's launch cost, the width
    its frame is priced at, and its attention kernels (kernel, layers, the cost model's
    `core_pricer` for it or None)."""

    graphs: bool
    tokens: int
    static: tuple
    work: Work
    sources: frozenset
    compact: tuple
    launch_s: float
    hidden_size: int
    cores: tuple
    # a prefill's replay tail (ModelPart.tail): its layers' cores, priced over each request's last
    # `tail_window` query tokens (none elsewhere)
    tail_cores: tuple = ()
    tail_window: int = 0


class _Priced(NamedTuple):
    """A pass priced over the whole batch (`Pricer.plain_pass`): its PassCost, the same as Work,
    its attention cores' rows (the slowest group's) and whether it replayed a CUDA graph."""

    cost: PassCost
    work: Work
    cores: tuple
    graphs: bool


class Pricer:
    """Builds and prices passes of one deployment's parts (costs/deployment.py) with a cost model."""

    def __init__(self, deployment: Deployment, costs: CostModel):
        self.deployment, self.costs = deployment, costs
        self.par, self.host = deployment.parallel, deployment.host
        # memos, each named for what it keeps and wrapping the method of that name:
        self.static_ops_memo = lru_cache(maxsize=4096)(self._build_static)  # a part's KV-free ops per shape
        self.plan_memo = lru_cache(maxsize=4096)(self._build_plan)  # a pass's KV-free part, per batch size
        self.frame_memo = lru_cache(maxsize=4096)(self._frame)  # per batch size and longest KV (~3 MB at most)
        # two-batch overlap (costs/overlap.py): a part's MoE layers per tokens and graphs
        self.overlap_region_memo = lru_cache(maxsize=1024)(partial(overlap.region, self))
        # kernel -> the last core it priced: an iteration's passes over the same batch lengths (one
        # BatchLens, immutable) repeat it (nextn's verify and extend, multi_layer's extends,
        # frozen_kv's drafts)
        self._last_cores: dict[O.AttentionKernel, _LastCore] = {}

    @classmethod
    def of(cls, model, hardware, costs: CostModel, **layout) -> Pricer:
        """A Pricer for a deployment given by its pieces (`deployment.deploy`'s keywords), not a
        scenario: the tests and benchmarks that vary one piece."""
        return cls(deploy(model, hardware, costs.engine, **layout), costs)

    # ------------------------------------------------------------------ public
    def price(self, shape: PassShape, q_lens: np.ndarray, kv_lens: np.ndarray, keep_ops: bool = False) -> PassCost:
        """Time of `shape` over a batch: request i adds q_lens[i] tokens after kv_lens[i] cached."""
        return self.price_lens(shape, O.BatchLens.of(q_lens, kv_lens), keep_ops)

    def price_lens(self, shape: PassShape, lens: O.BatchLens, keep_ops: bool = False) -> PassCost:
        """`price` for a batch given by its lengths' sums (`BatchLens`, before the pass's
        kv_offset): what the engine calls, O(1) in the batch size. Under two-batch overlap a
        pass with wide-EP MoE layers runs as two micro-batches (costs/overlap.py)."""
        if self.host.expands_verify and shape.kind == "verify":
            shape, lens = expanded_verify(shape, lens)
        if self.host.two_batch_overlap and overlap.splits(self, shape, lens):
            return overlap.two_batch_cost(self, shape, lens, keep_ops)
        return self.plain_pass(shape, lens, keep_ops).cost

    def plain_pass(self, shape: PassShape, lens: O.BatchLens, keep_ops: bool = False) -> _Priced:
        """One pass over the whole batch, no micro-batches. Under DP attention the batch is split
        over the attention groups (`_groups`); every group runs the largest group's shapes and
        the pass waits for the slowest group's attention. What does not depend on the KV is the
        pass's `_Plan`, built once per batch size; the attention cores and the frame are priced
        per call."""
        whole = lens.shifted(shape.kv_offset)
        if self.par.attention_dp == 1:  # one attention group: the whole batch
            batch = whole.batch
            plan = self.plan_memo(shape, batch, int(whole.q_tokens) if shape.by_total else 0,
                                  self._tail_tokens(shape, [whole]))
            dynamic = self._attention(shape, whole, plan, keep_ops)
        else:
            groups = self._groups(lens, shape.kv_offset)
            batch = max(g.batch for g in groups)
            plan = self.plan_memo(shape, batch, int(max(g.q_tokens for g in groups)) if shape.by_total else 0,
                                  self._tail_tokens(shape, groups))
            # groups without requests run an idle batch: the same shapes, no attention to wait for
            dynamic = max((self._attention(shape, g, plan, keep_ops) for g in groups if g.batch),
                          key=lambda priced: sum(n * t.total_s for _, t, n in priced), default=[])
        cores = tuple(dynamic)
        dynamic += plan.compact
        dynamic.append(self.frame_memo(batch, whole.q_tokens / max(whole.batch, 1), whole.visible_max, plan.hidden_size,
                                  plan.graphs))
        work = plan.work.plus(dynamic, plan.launch_s)
        sources = _pass_sources(plan.sources, tuple([t.source for _, t, _ in dynamic]))
        cost = PassCost.of(shape.kind, shape.part, plan.tokens, work, sources,
                           plan.static + tuple(dynamic) if keep_ops else ())
        return _Priced(cost, work, cores, plan.graphs)

    def _tail_tokens(self, shape: PassShape, groups: list[O.BatchLens]) -> int | None:
        """A prefill's replay-tail tokens (ModelPart.tail, where the engine replays it): each
        request's last `tail_window` query tokens, summed, in its largest attention group; None
        for any other pass."""
        if shape.kind != "prefill" or not self.host.engine.prefill_tail_replay:
            return None
        record = self.deployment.part(shape.part)
        if not record.tail:
            return None
        return max(int(np.minimum(g.requests()[0], record.tail_window).sum()) for g in groups)

    def _build_plan(self, shape: PassShape, batch: int, prefill_tokens: int = 0, tail_tokens: int | None = None) -> _Plan:
        """A pass over `batch` requests (the largest group's under DP attention; a prefill's
        `prefill_tokens`: its largest group's query tokens; `tail_tokens`: its replay tail's,
        `_tail_tokens`), all but its attention and frame."""
        graphs = self.uses_graphs(shape, batch)
        rows = self.host.padded_batch(batch, shape.tokens_per_request, shape.kind) if graphs else batch
        tokens = prefill_tokens if shape.by_total else rows * shape.tokens_per_request
        if shape.ragged:  # every query of a ragged verify scores its logits row
            logits = prefill_tokens
        else:
            logits = (batch if shape.kind == "prefill" else rows) * shape.logits_per_request
        context = prefill_tokens if shape.kind == "prefill" else rows * shape.context_per_request
        # a decode-shaped pass brings each request's tokens in a row (cost.routing_locality)
        per_request = 1 if shape.by_total else shape.tokens_per_request
        record = self.deployment.part(shape.part)
        replays = tail_tokens is not None
        static, work, sources = self.static_ops_memo(shape.part, shape.layer, tokens, logits, graphs, shape.from_target,
                                                context, per_request, tail_tokens)
        compact = ()
        if shape.compact_tokens:  # each GPU compacts its own group's accepted paths
            op = O.kv_copy(batch * shape.compact_tokens, self.deployment.kv_bytes_per_token(shape.part))
            compact = ((op, self.costs.time(op, False), 1),)  # eagle_info.py `verify`: eager, after the graph
        # an indexer kernel's cores are always priced as Ops
        def priced(kernels):
            return tuple((kernel, n, self.costs.core_pricer(kernel, graphs) if isinstance(kernel, O.AttentionKernel)
                          else None) for kernel, n in kernels if n)
        decode_path = shape.kind != "prefill"  # verify, draft, extend: the engines' decode path (AttentionKernel)
        kernels = self._kernels(shape.part, decode_path=decode_path)
        tail = self._kernels(shape.part, tail=True, decode_path=decode_path) if replays else ()
        if tail:  # the tail's layers leave the whole-prompt cores
            left = dict(tail)
            kernels = [(kernel, n - left.get(kernel, 0)) for kernel, n in kernels]
        return _Plan(graphs, tokens, static, work, sources, compact, self.costs.pass_launch_s(graphs),
                     record.spec.hidden_size, priced(kernels), priced(tail), record.tail_window if replays else 0)

    def _attention(self, shape: PassShape, lens: O.BatchLens, plan: _Plan, keep_ops: bool = False) -> list:
        """The attention cores of a part's layers over `lens` (any set of requests: the whole
        batch, or one attention group of it) on one GPU of their group: the (op, time, layers)
        of each attention kind; `Work.of(*row)` is a row's work. A kernel's `CorePricer` prices
        its core without the Op (the row's op is then its `CoreCounts`), except with `keep_ops`
        or where the pricer declines; `costs.time` of the Op otherwise."""
        priced = []
        runs = ((plan.cores, lens), (plan.tail_cores, _last_tokens(lens, plan.tail_window))) if plan.tail_cores else \
            ((plan.cores, lens),)
        for cores, over in runs:
            for kernel, count, pricer in cores:
                if keep_ops:
                    op = kernel.core(over, shape.tree_keys)
                    priced.append((op, self.costs.time(op, plan.graphs), count))
                else:
                    priced.append((*self.core(kernel, pricer, over, shape.tree_keys, plan.graphs), count))
        return priced

    def core(self, kernel: O.AttentionKernel, pricer, lens: O.BatchLens, tree_keys: float, graphs: bool) -> tuple:
        """(op, time) of `kernel`'s core over `lens` as `_attention` prices it (by `pricer`, its
        CorePricer or None), the last one each kernel priced kept (`_last_cores`)."""
        last = self._last_cores.get(kernel)
        if last is not None and last.lens is lens and last.tree_keys == tree_keys and last.graphs == graphs:
            return last.priced
        found = pricer.price(lens, tree_keys) if pricer is not None else None
        if found is None:
            op = kernel.core(lens, tree_keys)
            found = op, self.costs.time(op, graphs)
        self._last_cores[kernel] = _LastCore(lens, tree_keys, graphs, found)
        return found

    def _frame(self, batch: int, q: float, kv_max: float, hidden_size: int, graphs: bool) -> tuple:
        """The pass frame's priced row (`pass_frame`, the batch's longest visible KV: a length
        that recurs pass after pass, so `frame` keeps the rows it priced)."""
        frame = O.pass_frame(batch, q, kv_max, hidden_size)
        return frame, self.costs.time(frame, graphs), 1

    def _groups(self, lens: O.BatchLens, offset: int) -> list[O.BatchLens]:
        """The batch's requests split over the attention groups, each `offset` tokens further:
        request i to group i mod G, so group sizes differ by at most one, as SGLang's round-robin
        dispatch by arrival keeps them while requests retire in arrival order
        (managers/data_parallel_controller.py). Only under DP attention: with one group
        `price_lens` prices the whole batch directly."""
        q, kv = lens.requests()[0], lens.kv  # kv before any offset: each group is shifted once
        return [g.shifted(lens.offset + offset) for g in O.BatchLens.split(q, kv, self.par.attention_dp)]

    def weight_bytes(self, part: str, shared_head: bool = True, resident: bool = False) -> float:
        """Weight bytes of a part on one GPU (part_ops.weight_bytes; `resident`: as memory holds them)."""
        return part_ops.weight_bytes(self.deployment, part, shared_head, resident)

    def kv_bytes_per_token(self, part: str) -> float:
        return self.deployment.kv_bytes_per_token(part)

    def uses_graphs(self, shape: PassShape, batch: int) -> bool:
        """Whether the pass replays a CUDA graph (host.HostModel.uses_graphs)."""
        return self.host.uses_graphs(shape.kind, batch, shape.tokens_per_request)

    def host_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration of a replica running `batch` requests: under DP attention
        every attention group has a scheduler of its own (SGLang data_parallel_controller.py
        starts one per DP rank), and they work at once, each on its group's share."""
        return self.costs.host_s(design, self.group_batch(batch))

    def group_batch(self, batch: int) -> int:
        """The largest attention group's share of a batch (the whole batch without DP attention)."""
        return self.deployment.group_batch(batch)

    # ------------------------------------------------------------------ building
    def _build_static(self, part: str, layer: int, tokens: int, logits: int, graphs: bool, from_target: bool = False,
                      context: int = 0, per_request: int = 1, tail_tokens: int | None = None):
        """Ops that depend on token counts only, priced once: (ops, their Work, sources).
        `context`: positions a block drafter injects into its context KV (costs/edges.py `block`);
        `per_request`: consecutive tokens each request brings (the routing locality's unit)."""
        record = self.deployment.part(part)
        edge = record.edge(self.deployment, record, tokens, logits, from_target, context)
        priced = []
        for count, att, layer in part_ops.layer_groups(self.deployment, record, tokens, self.costs.has_glue,
                                                       per_request=per_request, tail_tokens=tail_tokens):  # streams.py
            rows = [(op, self.costs.time(op, graphs), count) for op in layer if op is not None]
            priced += streams.hide(rows, self.deployment.stream_regions(att, tokens, graphs))
        priced = tuple(priced) + tuple((op, self.costs.time(op, graphs), n) for op, n in edge if op is not None)
        work = sum((Work.of(op, t, n) for op, t, n in priced), Work())
        return priced, work, frozenset(t.source for _, t, _ in priced)

    @lru_cache(maxsize=8)  # noqa: B019 -- a Pricer lives as long as its run; a part's kinds never change
    def _kernels(self, part: str, tail: bool = False, decode_path: bool = False) -> tuple[tuple[O.AttentionKernel, int], ...]:
        """(kernel, layer count) per attention kind of a part, on one GPU of an attention group;
        parts with the same attention kind share its kernel. `tail`: of its replay tail's layers
        only; `decode_path`: the kernels of a pass the engine runs on its decode path
        (AttentionKernel)."""
        record = self.deployment.part(part)
        kinds = record.tail_attention if tail else record.attention
        kernels = []
        for att, n in kinds:
            kernels.append((self._kernel(att, self.deployment.kv_dtype, decode_path), n))
            if att.sparse:  # DSA: its indexer scores every cached token before the attention reads its top-k
                kernels.append((self._indexer(att), n))
        return tuple(kernels)

    @lru_cache(maxsize=16)  # noqa: B019 -- a Pricer lives as long as its run; a kind's kernel never changes
    def _indexer(self, att) -> O.IndexerKernel:
        return O.IndexerKernel(att, self.deployment.act)

    @lru_cache(maxsize=16)  # noqa: B019 -- a Pricer lives as long as its run; a kind's kernel never changes
    def _kernel(self, att, kv_dtype: str, decode_path: bool = False) -> O.AttentionKernel:
        if att.kind == "compressed":  # DeepSeek-V4's window + compressed entries (costs/compressed.py)
            return C.CompressedKernel(att, kv_dtype, self.par.attention_tp, self.deployment.act,
                                      self.deployment.host.engine.compressed_query_heads)
        return O.AttentionKernel(att, kv_dtype, self.par.attention_tp, self.deployment.act, decode_path)


@lru_cache(maxsize=1024)
def _pass_sources(static: frozenset, dynamic: tuple[str, ...]) -> tuple[str, ...]:
    """Who priced a pass's ops, sorted: its token-count ops' sources and its per-call ones'."""
    return tuple(sorted(static | frozenset(dynamic)))


def _last_tokens(lens: O.BatchLens, window: int) -> O.BatchLens:
    """`lens` with each request's queries cut to its last `window` (the earlier ones cached
    before them): what a prefill's replay tail attends from."""
    if not window:
        return lens
    q, kv = lens.requests()
    kept = np.minimum(q, window)
    return O.BatchLens.of(kept, kv + (q - kept))
