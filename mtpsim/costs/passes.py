"""Pricing a pass: a forward of one model part over a batch, as ops priced by a cost model.

`Pricer.price(shape, q_lens, kv_lens)` is the one public call: it returns a `PassCost` with the
time and a named breakdown (`price_lens` takes the batch as `BatchLens` sums, the engine's fast
path). Ops that depend only on token counts (GEMMs, experts, LM head, collectives) are built
once per token count and cached; the attention core is priced per call from the batch's KV sum
and longest KV (per-request lengths only under a sliding window), by the cost model's
`CorePricer` for its kernel where it has one (no Op built; calibrated.py), else as an Op.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import NamedTuple

import numpy as np

from mtpsim.costs import blocks, overlap
from mtpsim.costs import compressed as C
from mtpsim.costs import ops as O
from mtpsim.costs.layer import decoder_layer_ops
from mtpsim.costs.roofline import OpTime
from mtpsim.designs import PassShape  # noqa: F401 (priced here; costs re-exports it)
from mtpsim.specs import HardwareSpec, LayerRef, ModelSpec

BLOCK_PARTS = ("block", "block_context")  # a block drafter's forward; its context injection alone
# SGLang's default captured batch sizes (cuda_graph_bs), capped by max_graph_batch.
GRAPH_BUCKETS = (1, 2, 4, 8, 12, *range(16, 1025, 8))
ALL_EXPERTS_TOKENS = 1 << 30  # enough tokens that every expert is touched (weight_bytes)


class _LastCore(NamedTuple):
    """The attention core a kernel priced last: for these lengths, tree keys and graphs, (op, time)."""

    lens: O.BatchLens
    tree_keys: float
    graphs: bool
    priced: tuple


class Work(NamedTuple):
    """Seconds and work of some ops on one GPU. An op's roofline time counts as compute or memory,
    whichever bounds it; flops in FLOP, bytes in bytes. (A named tuple: every pass makes one, and
    a frozen dataclass costs a setattr per field; `+` adds, as below, rather than concatenating.)"""

    compute_s: float = 0.0
    memory_s: float = 0.0
    comm_s: float = 0.0
    overhead_s: float = 0.0
    flops: float = 0.0
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    comm_bytes: float = 0.0

    @classmethod
    def of(cls, op: O.Op, t: OpTime, n: int = 1) -> Work:
        """n copies of one op priced at t."""
        compute, memory = (t.compute_s, 0.0) if t.compute_s >= t.memory_s else (0.0, t.memory_s)
        return cls(n * compute, n * memory, n * t.comm_s, n * t.overhead_s, n * op.flops, n * op.weight_bytes,
                   n * op.kv_bytes, n * op.comm_bytes)

    def __add__(self, o: Work) -> Work:
        return Work(self.compute_s + o.compute_s, self.memory_s + o.memory_s, self.comm_s + o.comm_s,
                    self.overhead_s + o.overhead_s, self.flops + o.flops, self.weight_bytes + o.weight_bytes,
                    self.kv_bytes + o.kv_bytes, self.comm_bytes + o.comm_bytes)

    def plus(self, rows, overhead_s: float = 0.0) -> Work:
        """This work, then each (op, time, n) row's (`Work.of`), then `overhead_s` more: the
        same sums in the same order as adding them one by one, without a Work per row."""
        compute_s, memory_s, comm_s, over_s = self.compute_s, self.memory_s, self.comm_s, self.overhead_s
        flops, weights, kv, comm_bytes = self.flops, self.weight_bytes, self.kv_bytes, self.comm_bytes
        for op, t, n in rows:
            if t.compute_s >= t.memory_s:  # the bound counts: compute or memory (adding n * 0.0 changes nothing)
                compute_s += n * t.compute_s
            else:
                memory_s += n * t.memory_s
            comm_s, over_s = comm_s + n * t.comm_s, over_s + n * t.overhead_s
            flops, weights = flops + n * op.flops, weights + n * op.weight_bytes
            kv, comm_bytes = kv + n * op.kv_bytes, comm_bytes + n * op.comm_bytes
        return Work(compute_s, memory_s, comm_s, over_s + overhead_s, flops, weights, kv, comm_bytes)

    @property
    def time_s(self) -> float:
        return self.compute_s + self.memory_s + self.comm_s + self.overhead_s


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
    overhead_s: float
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
        """What dominates: compute, memory, comm or overhead."""
        terms = {"compute": self.compute_s, "memory": self.memory_s, "comm": self.comm_s,
                 "overhead": self.overhead_s}
        return max(terms, key=terms.get)


@dataclass(frozen=True)
class PartLayers:
    """A model part as (count, layer) groups plus its dtypes and flags."""

    groups: tuple[tuple[int, LayerRef], ...]
    spec: ModelSpec
    attn_dtype: str
    ffn_dtype: str
    expert_dtype: str
    query_only: bool = False


@dataclass(frozen=True)
class _Plan:
    """What a pass over a batch of one size costs whatever its KV (`Pricer.plan`): whether it
    replays a CUDA graph, its token rows, the token-count ops priced (`static_ops`: ops, their
    Work, sources), the KV compaction after it (a row or none), the pass overhead, the width
    its frame is priced at, and its attention kernels (kernel, layers, the cost model's
    `core_pricer` for it or None)."""

    graphs: bool
    tokens: int
    static: tuple
    work: Work
    sources: frozenset
    compact: tuple
    overhead_s: float
    hidden_size: int
    cores: tuple


class _Priced(NamedTuple):
    """A pass priced over the whole batch (`Pricer.plain_pass`): its PassCost, the same as Work,
    its attention cores' rows (the slowest group's) and whether it replayed a CUDA graph."""

    cost: PassCost
    work: Work
    cores: tuple
    graphs: bool


class Pricer:
    """Builds and prices passes for one scenario's model, draft and hardware.

    assistant: the frozen_kv assistant (part `assistant`); draft: an external draft model (role:
    draft) that part `mtp` runs instead of the model's own MTP layer."""

    def __init__(self, model: ModelSpec, hardware: HardwareSpec, costs, *, tp: int = 1, ep: int = 1,
                 assistant: ModelSpec | None = None, moe_skew: float = 0.0, cuda_graphs: bool = True,
                 max_graph_batch: int = 256, heads: int = 1, draft: ModelSpec | None = None,
                 attention_dp: int = 1, gpus_per_node: int | None = None, two_batch_overlap: bool = False,
                 ep_imbalance: float = 1.0):
        self.model, self.hw, self.costs, self.assistant, self.draft = model, hardware, costs, assistant, draft
        self.par = O.Parallel(tp, ep, attention_dp, gpus_per_node or hardware.gpus_per_node, ep_imbalance)
        self.skew, self.graphs, self.max_graph_batch = moe_skew, cuda_graphs, max_graph_batch
        self.heads = heads  # parallel_heads: how many heads run (one per step)
        self.act = model.dtypes.activations
        # memos, each named for what it keeps and wrapping the method of that name:
        self.static_ops_memo = lru_cache(maxsize=4096)(self._build_static)  # a part's KV-free ops per shape
        self.plan_memo = lru_cache(maxsize=4096)(self._build_plan)  # a pass's KV-free part, per batch size
        self.frame_memo = lru_cache(maxsize=4096)(self._frame)  # per batch size and longest KV (~3 MB at most)
        self.layers_memo = lru_cache(maxsize=8)(self._layers)  # a part's layer groups never change
        # two-batch overlap (costs/overlap.py): a part's MoE layers per tokens and graphs
        self.two_batch_overlap = two_batch_overlap
        self.overlap_region_memo = lru_cache(maxsize=1024)(partial(overlap.region, self))
        # kernel -> the last core it priced: an iteration's passes over the same batch lengths (one
        # BatchLens, immutable) repeat it (nextn's verify and extend, multi_layer's extends,
        # frozen_kv's drafts)
        self._last_cores: dict[O.AttentionKernel, _LastCore] = {}
        # vLLM V0's batch-expansion scorer: a verify window runs as that many single-token sequences
        self.expands_verify = getattr(costs.engine, "verify_scorer", "mqa") == "batch_expansion"

    # ------------------------------------------------------------------ public
    def price(self, shape: PassShape, q_lens: np.ndarray, kv_lens: np.ndarray, keep_ops: bool = False) -> PassCost:
        """Time of `shape` over a batch: request i adds q_lens[i] tokens after kv_lens[i] cached."""
        return self.price_lens(shape, O.BatchLens.of(q_lens, kv_lens), keep_ops)

    def price_lens(self, shape: PassShape, lens: O.BatchLens, keep_ops: bool = False) -> PassCost:
        """`price` for a batch given by its lengths' sums (`BatchLens`, before the pass's
        kv_offset): what the engine calls, O(1) in the batch size. Under two-batch overlap a
        pass with wide-EP MoE layers runs as two micro-batches (costs/overlap.py)."""
        if self.expands_verify and shape.kind == "verify":
            shape, lens = expanded_verify(shape, lens)
        if self.two_batch_overlap and overlap.splits(self, shape, lens):
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
            plan = self.plan_memo(shape, batch, int(whole.q_tokens) if shape.kind == "prefill" or shape.ragged else 0)
            dynamic = self._attention(shape, whole, plan, keep_ops)
        else:
            groups = self._groups(lens, shape.kv_offset)
            batch = max(g.batch for g in groups)
            plan = self.plan_memo(shape, batch, int(max(g.q_tokens for g in groups))
                             if shape.kind == "prefill" or shape.ragged else 0)
            # groups without requests run an idle batch: the same shapes, no attention to wait for
            dynamic = max((self._attention(shape, g, plan, keep_ops) for g in groups if g.batch),
                          key=lambda priced: sum(n * t.total_s for _, t, n in priced), default=[])
        cores = tuple(dynamic)
        dynamic += plan.compact
        dynamic.append(self.frame_memo(batch, whole.q_tokens / max(whole.batch, 1), whole.visible_max, plan.hidden_size,
                                  plan.graphs))
        work = plan.work.plus(dynamic, plan.overhead_s)
        sources = _pass_sources(plan.sources, tuple([t.source for _, t, _ in dynamic]))
        cost = PassCost.of(shape.kind, shape.part, plan.tokens, work, sources,
                           plan.static + tuple(dynamic) if keep_ops else ())
        return _Priced(cost, work, cores, plan.graphs)

    def _build_plan(self, shape: PassShape, batch: int, prefill_tokens: int = 0) -> _Plan:
        """A pass over `batch` requests (the largest group's under DP attention; a prefill's
        `prefill_tokens`: its largest group's query tokens), all but its attention and frame."""
        graphs = self.uses_graphs(shape, batch)
        rows = self.padded_batch(batch) if graphs else batch
        tokens = prefill_tokens if shape.kind == "prefill" or shape.ragged else rows * shape.tokens_per_request
        if shape.ragged:  # every query of a ragged verify scores its logits row
            logits = prefill_tokens
        else:
            logits = (batch if shape.kind == "prefill" else rows) * shape.logits_per_request
        context = prefill_tokens if shape.kind == "prefill" else rows * shape.context_per_request
        static, work, sources = self.static_ops_memo(shape.part, shape.layer, tokens, logits, graphs, shape.from_target,
                                                context)
        compact = ()
        if shape.compact_tokens:  # each GPU compacts its own group's accepted paths
            op = O.kv_copy(batch * shape.compact_tokens, self.kv_bytes_per_token(shape.part))
            compact = ((op, self.costs.time(op, False), 1),)  # eagle_info.py `verify`: eager, after the graph
        make = getattr(self.costs, "core_pricer", None)  # cost models without one price each core's Op
        cores = tuple((kernel, n, make(kernel, graphs) if make is not None and isinstance(kernel, O.AttentionKernel) else None)
                      for kernel, n in self._kernels(shape.part))
        return _Plan(graphs, tokens, static, work, sources, compact, self.costs.pass_overhead_s(graphs),
                     self.layers_memo(shape.part).spec.hidden_size, cores)

    def _attention(self, shape: PassShape, lens: O.BatchLens, plan: _Plan, keep_ops: bool = False) -> list:
        """The attention cores of a part's layers over `lens` (any set of requests: the whole
        batch, or one attention group of it) on one GPU of their group: the (op, time, layers)
        of each attention kind; `Work.of(*row)` is a row's work. A kernel's `CorePricer` prices
        its core without the Op (the row's op is then its `CoreCounts`), except with `keep_ops`
        or where the pricer declines; `costs.time` of the Op otherwise."""
        priced = []
        for kernel, count, pricer in plan.cores:
            if keep_ops:
                op = kernel.core(lens, shape.tree_keys)
                priced.append((op, self.costs.time(op, plan.graphs), count))
                continue
            last = self._last_cores.get(kernel)
            if last is not None and last.lens is lens and last.tree_keys == shape.tree_keys and last.graphs == plan.graphs:
                op, t = last.priced
            else:
                found = pricer.price(lens, shape.tree_keys) if pricer is not None else None
                if found is None:
                    op = kernel.core(lens, shape.tree_keys)
                    found = op, self.costs.time(op, plan.graphs)
                op, t = found
                self._last_cores[kernel] = _LastCore(lens, shape.tree_keys, plan.graphs, found)
            priced.append((op, t, count))
        return priced

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
        n = self.par.attention_dp
        q, kv = lens.requests()[0], lens.kv  # kv before any offset: each group is shifted once
        return [O.BatchLens.of(q[g::n], kv[g::n]).shifted(lens.offset + offset) for g in range(n)]

    def weight_bytes(self, part: str, shared_head: bool = True) -> float:
        """Weight bytes of a part on one GPU: its ops over enough tokens to touch every expert, fc
        over target layers included; without the target's LM head when `shared_head` is False and
        the part shares it."""
        ops = [op for op, _, n in self.static_ops_memo(part, 0, ALL_EXPERTS_TOKENS, 1, False, True, 1)[0] for _ in range(n)]
        drop = not shared_head and self.shares_target_head(part)
        return sum(op.weight_bytes for op in ops
                   if not (drop and op.family == "lm_head") and op.name not in blocks.REUSED_WEIGHT_OPS)

    def kv_bytes_per_token(self, part: str) -> float:
        """KV cache bytes one token holds over all of a part's layers on one GPU."""
        return sum(n * C.kv_bytes_per_token(att, kv_dtype, self.par.tp) for att, n, kv_dtype in self._attention_kinds(part))

    def shares_target_head(self, part: str) -> bool:
        """Whether a draft part's logits come from the target's LM head (weights counted once)."""
        if part in BLOCK_PARTS:  # a block drafter always borrows the target's head
            return True
        return part in ("mtp", "heads") and self.draft is None and self.model.mtp.vocab_size is None

    def uses_graphs(self, shape: PassShape, batch: int) -> bool:
        """Decode-shaped passes replay CUDA graphs up to max_graph_batch; prefill runs eagerly."""
        return self.graphs and shape.kind != "prefill" and batch <= self.max_graph_batch

    def host_overhead_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration of a replica running `batch` requests: under DP attention
        every attention group has a scheduler of its own (SGLang data_parallel_controller.py
        starts one per DP rank), and they work at once, each on its group's share."""
        return self.costs.host_overhead_s(design, self.group_batch(batch))

    def group_batch(self, batch: int) -> int:
        """The largest attention group's share of a batch (the whole batch without DP attention):
        the batch a pass's CUDA graph must hold."""
        return -(-batch // self.par.attention_dp)

    def padded_batch(self, batch: int) -> int:
        return next((b for b in GRAPH_BUCKETS if b >= batch and b <= self.max_graph_batch), batch)

    def _layers(self, part: str) -> PartLayers:
        m, dt = self.model, self.model.dtypes
        if part == "target":
            return _model_layers(m)
        if (part == "mtp" or part in BLOCK_PARTS) and self.draft is not None:
            return _model_layers(self.draft)
        if part in ("mtp", "heads"):
            n = 1 if part == "mtp" else self.heads
            return PartLayers(((n, m.mtp.layer),), m, dt.mtp, dt.mtp, dt.mtp)
        return _model_layers(self.assistant, query_only=True)

    # ------------------------------------------------------------------ building
    def _build_static(self, part: str, layer: int, tokens: int, logits: int, graphs: bool, from_target: bool = False,
                      context: int = 0):
        """Ops that depend on token counts only, priced once: (ops, their Work, sources).
        `context`: positions a block drafter injects into its context KV (`_block_edge_ops`)."""
        if part in BLOCK_PARTS:
            edge = self._block_edge_ops(part, tokens, logits, from_target, context)
        else:
            edge = [(op, 1) for op in self._edge_ops(part, tokens, logits, from_target)]
        ops = [(op, n) for n, op in self.layer_ops(part, tokens)] + edge
        priced = tuple((op, self.costs.time(op, graphs), n) for op, n in ops if op is not None)
        work = sum((Work.of(op, t, n) for op, t, n in priced), Work())
        return priced, work, frozenset(t.source for _, t, _ in priced)

    def layer_ops(self, part: str, tokens: int, moe_only: bool = False):
        """(count, op) per layer group: costs/layer.py's one list of a decoder layer's ops
        (`moe_only`: the groups whose FFN is experts alone)."""
        if part == "block_context":  # the context alone: no block runs through the layers
            return
        spec = self.layers_memo(part)
        glue = bool(getattr(self.costs, "glue", None))  # only a profile with whole-layer timings prices glue
        for count, ref in spec.groups:
            att, ffn = spec.spec.attention_kinds[ref.attention], spec.spec.ffn_kinds[ref.ffn]
            if moe_only and ffn.kind != "moe":
                continue
            layer = decoder_layer_ops(att, ffn, spec.spec.hidden_size, tokens, spec.attn_dtype, spec.ffn_dtype,
                                      spec.expert_dtype, self.par, spec.query_only, self.skew, self.act, glue)
            yield from ((count, op) for op in layer)

    def _edge_ops(self, part: str, tokens: int, logits: int, from_target: bool = False) -> list[O.Op | None]:
        """What a part runs outside its layers: input projections and the LM head."""
        # the head's vocabulary splits over the attention GPUs (all tp without DP attention)
        m, tp, dt, act = self.model, self.par.attention_tp, self.model.dtypes, self.act
        if part == "target":
            return O.lm_head_ops(m, logits, dt.lm_head, tp, act=act) + [_sample(m.lm_head, logits, m.vocab_size, tp, act)] \
                + self._mlp_sync()
        if part == "mtp" and self.draft is not None:
            return self._draft_edge_ops(tokens, logits, from_target)
        if part in ("mtp", "heads"):
            mtp, n = m.mtp, (1 if part == "mtp" else self.heads)
            proj = O.gemm("mtp.eh_proj", tokens, 2 * m.hidden_size, m.hidden_size, dt.mtp, act=act)
            head, vocab = (m.lm_head, m.vocab_size) if not mtp.vocab_size else (None, mtp.vocab_size)
            return ([proj] * n if mtp.input_projection else []) + \
                O.lm_head_ops(m, logits * n, dt.lm_head, tp, vocab=mtp.vocab_size, act=act) + \
                [_sample(head, logits * n, vocab, tp, act)]
        a = self.assistant
        return [O.gemm("assistant.pre_proj", tokens, 2 * a.backbone_hidden_size, a.hidden_size, a.dtypes.dense_ffn, act=act),
                O.gemm("assistant.post_proj", tokens, a.hidden_size, a.backbone_hidden_size, a.dtypes.dense_ffn, act=act),
                *O.lm_head_ops(a, logits, a.dtypes.lm_head, tp, act=act), _sample(a.lm_head, logits, a.vocab_size, tp, act)]

    def _draft_edge_ops(self, tokens: int, logits: int, from_target: bool) -> list[O.Op]:
        """An external draft (EAGLE-3): fed the target's hidden states, its fc fuses the target
        layers it reads (fused_target_layers x backbone width -> hidden); fed its own last hidden
        (the chained draft passes) it skips the fc. The embedding is the target's; the LM head is
        its own, over its pruned vocabulary (a d2t table maps the winners to target tokens)."""
        d, tp, act = self.draft, self.par.attention_tp, self.act
        fc = [O.gemm("draft.fc", tokens, d.fused_target_layers * d.backbone_hidden_size, d.hidden_size,
                     d.dtypes.dense_ffn, act=act)] if d.fused_target_layers and from_target else []
        vocab = d.draft_vocab_size or d.vocab_size
        return fc + O.lm_head_ops(d, logits, d.dtypes.lm_head, tp, vocab=vocab, act=act) + \
            [_sample(d.lm_head, logits, vocab, tp, act)]

    def _block_edge_ops(self, part: str, tokens: int, logits: int, from_target: bool, context: int) -> list:
        """(op, count) a block drafter runs beside its layers (costs/blocks.py): the context
        injection over `context` positions, then for part `block` the borrowed head over its
        draft positions. A block pass has k + 1 query positions and k logits rows per request,
        so its requests are tokens - logits and its draft positions logits / requests."""
        rows = blocks.context_ops(self.draft, context, from_target, self.par.attention_tp, self.act)
        if part == "block":
            requests = max(tokens - logits, 1)
            rows += blocks.head_ops(self.draft, self.model, requests, max(logits // requests, 1),
                                    self.par.attention_tp, self.act)
        return rows

    def _mlp_sync(self) -> list[O.Op]:
        """DP attention: the token-count sync once per target forward (one scheduler batch)."""
        par = self.par
        return [O.mlp_sync(par.tp, par.nodes(par.tp))] if par.attention_dp > 1 else []

    @lru_cache(maxsize=8)  # noqa: B019 -- a Pricer lives as long as its run; a part's kinds never change
    def _kernels(self, part: str) -> tuple[tuple[O.AttentionKernel, int], ...]:
        """(kernel, layer count) per attention kind of a part, on one GPU of an attention group;
        parts with the same attention kind share its kernel."""
        kernels = []
        for att, n, kv_dtype in self._attention_kinds(part):
            kernels.append((self._kernel(att, kv_dtype), n))
            if att.sparse:  # DSA: its indexer scores every cached token before the attention reads its top-k
                kernels.append((self._indexer(att), n))
        return tuple(kernels)

    @lru_cache(maxsize=16)  # noqa: B019 -- a Pricer lives as long as its run; a kind's kernel never changes
    def _indexer(self, att) -> O.IndexerKernel:
        return O.IndexerKernel(att, self.act)

    @lru_cache(maxsize=16)  # noqa: B019 -- a Pricer lives as long as its run; a kind's kernel never changes
    def _kernel(self, att, kv_dtype: str) -> O.AttentionKernel:
        if att.kind == "compressed":  # DeepSeek-V4's window + compressed entries (costs/compressed.py)
            return C.CompressedKernel(att, kv_dtype, self.par.attention_tp, self.act)
        return O.AttentionKernel(att, kv_dtype, self.par.attention_tp, self.act)

    @lru_cache(maxsize=8)  # noqa: B019 -- a Pricer lives as long as its run; a part's kinds never change
    def _attention_kinds(self, part: str):
        """(attention spec, layer count, kv dtype) per attention kind of a part."""
        if part == "block_context":  # injects context KV, reads none
            return ()
        spec = self.layers_memo(part)
        kv_dtype = self.model.dtypes.kv_cache
        counts = Counter()
        for count, ref in spec.groups:
            counts[ref.attention] += count
        return tuple((spec.spec.attention_kinds[name], n, kv_dtype) for name, n in counts.items())



def expanded_verify(shape: PassShape, lens: O.BatchLens) -> tuple[PassShape, O.BatchLens]:
    """A verify of N tokens per request as a batch-expansion scorer runs it (vLLM V0
    spec_decode/batch_expansion.py, BatchExpansionTop1Scorer): each request's window becomes N
    sequences of one query token, the j-th holding the request's KV plus its first j window
    tokens, so the pass is a decode over B * N sequences and each reads its request's whole KV
    (a ragged verify: over the sum of the requests' own widths)."""
    n = shape.tokens_per_request
    q, kv = lens.requests()
    if shape.ragged:  # request i's own q[i] sequences
        q = q.astype(np.int64)
        kv = np.repeat(kv + shape.kv_offset, q) + np.arange(int(q.sum())) - np.repeat(np.cumsum(q) - q, q)
    else:
        kv = np.repeat(kv + shape.kv_offset, n) + np.tile(np.arange(n), len(kv))
    one = replace(shape, tokens_per_request=1, logits_per_request=1, kv_offset=0, ragged=False)
    return one, O.BatchLens.uniform(1, kv, int(kv.sum()), int(kv.max(initial=0)))


@lru_cache(maxsize=1024)
def _pass_sources(static: frozenset, dynamic: tuple[str, ...]) -> tuple[str, ...]:
    """Who priced a pass's ops, sorted: its token-count ops' sources and its per-call ones'."""
    return tuple(sorted(static | frozenset(dynamic)))


def _model_layers(spec: ModelSpec, query_only: bool = False) -> PartLayers:
    """A whole model's layers as (count, layer) groups, with its own dtypes."""
    counts = Counter((g.attention, g.ffn) for g in spec.layers for _ in range(g.count))
    groups = tuple((n, LayerRef(attention=a, ffn=f)) for (a, f), n in counts.items())
    dt = spec.dtypes
    return PartLayers(groups, spec, dt.attention, dt.dense_ffn, dt.experts, query_only=query_only)


def _sample(head, rows: int, vocab: int, tp: int, act: str) -> O.Op:
    """Greedy sampling over a head's logits: the vocabulary (its tp shard), or the centroid head's
    expanded rows (top clusters x vocab / centroids)."""
    if head is not None and head.kind == "centroid":
        return O.greedy_sample(rows, head.top_clusters * math.ceil(vocab / head.num_centroids), act)
    return O.greedy_sample(rows, math.ceil(vocab / tp), act)

