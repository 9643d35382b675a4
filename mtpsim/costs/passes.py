"""Pricing a pass: a forward of one model part over a batch, as ops priced by a cost model.

`Pricer.price(shape, q_lens, kv_lens)` is the one public call: it returns a `PassCost` with the
time and a named breakdown. Ops that depend only on token counts (GEMMs, experts, LM head,
collectives) are built once per token count and cached; the attention core is priced per call
from the per-request KV lengths.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from mtpsim.catalog import HardwareSpec, LayerRef, ModelSpec
from mtpsim.costs import ops as O
from mtpsim.costs.layer import decoder_layer_ops
from mtpsim.costs.roofline import OpTime

# SGLang's default captured batch sizes (cuda_graph_bs), capped by max_graph_batch.
GRAPH_BUCKETS = (1, 2, 4, 8, 12, *range(16, 1025, 8))


@dataclass(frozen=True)
class PassShape:
    """One pass as the design describes it (DESIGN §3).

    kind: decode | draft | verify | extend | prefill. part: target | mtp | assistant | heads.
    tokens_per_request: query tokens per request; logits_per_request: LM-head rows per request;
    layer: which MTP layer (multi_layer); kv_offset: tokens this pass sees beyond the committed KV.
    """

    kind: str
    part: str
    tokens_per_request: int
    logits_per_request: int
    layer: int = 0
    kv_offset: int = 0


@dataclass(frozen=True)
class PassCost:
    """Seconds and work of one pass on one GPU of a replica."""

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
    ops: tuple[tuple[O.Op, OpTime, int], ...] = field(default=(), repr=False)

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


class Pricer:
    """Builds and prices passes for one scenario's model, draft and hardware."""

    def __init__(self, model: ModelSpec, hardware: HardwareSpec, costs, *, tp: int = 1, ep: int = 1,
                 assistant: ModelSpec | None = None, moe_skew: float = 0.0, cuda_graphs: bool = True,
                 max_graph_batch: int = 256, heads: int = 1):
        self.model, self.hw, self.costs, self.assistant = model, hardware, costs, assistant
        self.par = O.Parallel(tp, ep)
        self.skew, self.graphs, self.max_graph_batch = moe_skew, cuda_graphs, max_graph_batch
        self.heads = heads  # parallel_heads: how many heads run (one per step)
        self.act = model.dtypes.activations
        self.static_ops = lru_cache(maxsize=4096)(self._build_static)
        self.layers = lru_cache(maxsize=8)(self._layers)  # a part's layer groups never change

    # ------------------------------------------------------------------ public
    def price(self, shape: PassShape, q_lens: np.ndarray, kv_lens: np.ndarray, keep_ops: bool = False) -> PassCost:
        """Time of `shape` over a batch: request i adds q_lens[i] tokens after kv_lens[i] cached."""
        batch = len(q_lens)
        graphs = self.uses_graphs(shape, batch)
        rows = self.padded_batch(batch) if graphs else batch
        tokens = int(q_lens.sum()) if shape.kind == "prefill" else rows * shape.tokens_per_request
        logits = (batch if shape.kind == "prefill" else rows) * shape.logits_per_request
        static, totals, sources = self.static_ops(shape.part, shape.layer, tokens, logits, graphs)
        totals, sources, dynamic = totals.copy(), set(sources), []
        for att, count, kv_dtype in self._attention_kinds(shape.part):
            op = O.attention_core(att, q_lens, kv_lens + shape.kv_offset, kv_dtype, self.par.tp, self.act)
            t = self.costs.time(op, graphs)
            totals += _vector(op, t, count)
            sources.add(t.source)
            dynamic.append((op, t, count))
        frame = O.pass_frame(batch, int(q_lens.sum()) / max(batch, 1), float((kv_lens + shape.kv_offset + q_lens).max(initial=0)),
                             self.layers(shape.part).spec.hidden_size)
        t = self.costs.time(frame, graphs)
        totals += _vector(frame, t, 1)
        sources.add(t.source)
        dynamic.append((frame, t, 1))
        totals[3] += self.costs.pass_overhead_s(graphs)
        compute, memory, comm, overhead, flops, wbytes, kvbytes, cbytes = totals.tolist()
        return PassCost(shape.kind, shape.part, tokens, compute + memory + comm + overhead, compute, memory,
                        comm, overhead, flops, wbytes, kvbytes, cbytes, tuple(sorted(sources)),
                        static + tuple(dynamic) if keep_ops else ())

    def uses_graphs(self, shape: PassShape, batch: int) -> bool:
        """Decode-shaped passes replay CUDA graphs up to max_graph_batch; prefill runs eagerly."""
        return self.graphs and shape.kind != "prefill" and batch <= self.max_graph_batch

    def padded_batch(self, batch: int) -> int:
        return next((b for b in GRAPH_BUCKETS if b >= batch and b <= self.max_graph_batch), batch)

    def _layers(self, part: str) -> PartLayers:
        m, dt = self.model, self.model.dtypes
        if part == "target":
            counts = Counter((g.attention, g.ffn) for g in m.layers for _ in range(g.count))
            groups = tuple((n, LayerRef(attention=a, ffn=f)) for (a, f), n in counts.items())
            return PartLayers(groups, m, dt.attention, dt.dense_ffn, dt.experts)
        if part in ("mtp", "heads"):
            n = 1 if part == "mtp" else self.heads
            return PartLayers(((n, m.mtp.layer),), m, dt.mtp, dt.mtp, dt.mtp)
        a = self.assistant
        counts = Counter((g.attention, g.ffn) for g in a.layers for _ in range(g.count))
        groups = tuple((n, LayerRef(attention=x, ffn=f)) for (x, f), n in counts.items())
        return PartLayers(groups, a, a.dtypes.attention, a.dtypes.dense_ffn, a.dtypes.experts, query_only=True)

    # ------------------------------------------------------------------ building
    def _build_static(self, part: str, layer: int, tokens: int, logits: int, graphs: bool):
        """Ops that depend on token counts only, priced once: (ops, summed vector, sources)."""
        ops = [(op, n) for n, op in self._layer_ops(part, tokens)] + [(op, 1) for op in self._edge_ops(part, tokens, logits)]
        priced = tuple((op, self.costs.time(op, graphs), n) for op, n in ops if op is not None)
        totals = sum((_vector(op, t, n) for op, t, n in priced), np.zeros(8))
        return priced, totals, frozenset(t.source for _, t, _ in priced)

    def _layer_ops(self, part: str, tokens: int):
        """(count, op) per layer group: costs/layer.py's one list of a decoder layer's ops."""
        spec = self.layers(part)
        glue = bool(getattr(self.costs, "glue", None))  # only a profile with whole-layer timings prices glue
        for count, ref in spec.groups:
            att, ffn = spec.spec.attention_kinds[ref.attention], spec.spec.ffn_kinds[ref.ffn]
            layer = decoder_layer_ops(att, ffn, spec.spec.hidden_size, tokens, spec.attn_dtype, spec.ffn_dtype,
                                      spec.expert_dtype, self.par, spec.query_only, self.skew, self.act, glue)
            yield from ((count, op) for op in layer)

    def _edge_ops(self, part: str, tokens: int, logits: int) -> list[O.Op | None]:
        """What a part runs outside its layers: input projections and the LM head."""
        m, tp, dt, act = self.model, self.par.tp, self.model.dtypes, self.act
        if part == "target":
            return O.lm_head_ops(m, logits, dt.lm_head, tp, act=act) + [_sample(m.lm_head, logits, m.vocab_size, tp, act)]
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

    @lru_cache(maxsize=8)
    def _attention_kinds(self, part: str):
        """(attention spec, layer count, kv dtype) per attention kind of a part."""
        spec = self.layers(part)
        kv_dtype = self.model.dtypes.kv_cache
        counts = Counter()
        for count, ref in spec.groups:
            counts[ref.attention] += count
        return tuple((spec.spec.attention_kinds[name], n, kv_dtype) for name, n in counts.items())



def _sample(head, rows: int, vocab: int, tp: int, act: str) -> O.Op:
    """Greedy sampling over a head's logits: the vocabulary (its tp shard), or the centroid head's
    expanded rows (top clusters x vocab / centroids)."""
    if head is not None and head.kind == "centroid":
        return O.greedy_sample(rows, head.top_clusters * math.ceil(vocab / head.num_centroids), act)
    return O.greedy_sample(rows, math.ceil(vocab / tp), act)


def _vector(op: O.Op, t: OpTime, n: int) -> np.ndarray:
    """n copies of an op as [compute, memory, comm, overhead, flops, weight, kv, comm bytes]; an op's
    roofline time counts as compute or memory, whichever bounds it."""
    bound = (t.compute_s, 0.0) if t.compute_s >= t.memory_s else (0.0, t.memory_s)
    return n * np.array([*bound, t.comm_s, t.overhead_s, op.flops, op.weight_bytes, op.kv_bytes, op.comm_bytes])
