"""Two-batch overlap (TBO): a pass's MoE layers run as two micro-batches, one's expert dispatch
and combine hidden under the other's compute.

SGLang `--enable-two-batch-overlap` (server_args.py of v0.4.7, default off; two_batch_overlap.py,
operations_strategy.py), after DeepSeek's own inference system (github.com/deepseek-ai/profile-data):
the batch is cut in two (decode: the requests in halves, `compute_split_seq_index`; prefill: at half
the prompt tokens), and the sparse layers' ops are interleaved at yield points so that while one
micro-batch waits on DeepEP's dispatch or combine, the other computes. The dense layers before the
first MoE layer (`first_k_dense_replace`), the LM head and sampling run on the whole batch
(models/deepseek_v2.py `model_forward_maybe_tbo` over layers[first_k_dense_replace:]). LMSYS measured
+25.5% decode throughput at 256 tokens per GPU on 9x8 H100 and -27% at 32, and +27-35% in prefill
(lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md, "Ablation Study: Two-batch Overlap").

Priced from the op list: over the MoE layers, micro-batch x has compute C_x (every op of those
layers at its half of the tokens, the attention core over its half's KV) and dispatch + combine
M_x; with one compute stream and the communication running beside it, each micro-batch's wait on
its all-to-all is hidden up to the other's compute:

    moe_layers_tbo = C_a + C_b + max(0, M_a - C_b) + max(0, M_b - C_a)

and the pass takes the whole batch's time with its MoE layers replaced by that. Halving the
batch is not free: weight-bound GEMMs read their weights once per micro-batch, and small
batches fall in the slower rows of the measured tables; that is what makes TBO lose at small
batch. Applies to passes whose MoE layers run wide EP (DeepEP dispatch + combine,
costs/dp_attention.py) over at least two requests. Not modelled: SGLang's cap on DeepGEMM's SMs
in prefill while DeepEP runs (`deep_gemm_num_sms`), and any slowdown of kernels sharing the GPU.
Torch-free.
"""
from __future__ import annotations

from typing import NamedTuple

from mtpsim.costs import ops as O
from mtpsim.costs import part_ops
from mtpsim.costs.wide_ep import is_wide_ep_dispatch


class Region(NamedTuple):
    """A part's MoE layers at some tokens per GPU: the (op, time, count) rows of their token-count
    ops, those of their dispatch + combine alone, and the share of the part's attention layers
    they hold."""

    layers: tuple
    a2a: tuple
    share: float

    @property
    def a2a_s(self) -> float:
        return sum(n * t.total_s for _, t, n in self.a2a)


def region(pricer, part: str, tokens: int, graphs: bool) -> Region:
    """The MoE layers of `part` at `tokens` per GPU (Pricer.overlap_region_memo keeps these)."""
    groups = pricer.deployment.part(part)
    rows = tuple((op, pricer.costs.time(op, graphs), n)
                 for n, op in part_ops.layer_ops(pricer.deployment, groups, tokens, pricer.costs.has_glue, moe_only=True))
    moe = sum(n for n, ref in groups.groups if groups.spec.ffn_kinds[ref.ffn].kind == "moe")
    share = moe / max(sum(n for n, _ in groups.groups), 1)
    return Region(rows, tuple(r for r in rows if is_wide_ep_dispatch(r[0])), share)


def splits(pricer, shape, lens: O.BatchLens) -> bool:
    """Whether this pass runs as two micro-batches: the target's forward (SGLang's MTP layer runs
    its one layer outside `model_forward_maybe_tbo`) with MoE layers that run DeepEP's dispatch +
    combine, over at least two requests (one cannot be split)."""
    return shape.part == "target" and lens.batch >= 2 and pricer.overlap_region_memo("target", 2, False).a2a_s > 0


def halves(lens: O.BatchLens) -> tuple[O.BatchLens, O.BatchLens]:
    """The batch's requests cut in two, first half and second (SGLang: split_seq_index =
    requests // 2 in decode); each keeps the batch's offset."""
    q, kv = lens.requests()[0], lens.kv
    h = lens.batch // 2
    return (O.BatchLens.of(q[:h], kv[:h]).shifted(lens.offset),
            O.BatchLens.of(q[h:], kv[h:]).shifted(lens.offset))


def two_batch_cost(pricer, shape, lens: O.BatchLens, keep_ops: bool = False):
    """The PassCost of `shape` over `lens` under two-batch overlap (module docstring): the whole
    batch's pass with its MoE layers' work replaced by the two micro-batches', less the
    all-to-all time hidden under the other micro-batch's compute. `keep_ops` keeps the whole
    batch's ops (before the overlap)."""
    full = pricer.plain_pass(shape, lens, keep_ops)
    _, r_full, _ = _moe_layers(pricer, shape, full)
    (c_a, r_a, m_a), (c_b, r_b, m_b) = (_moe_layers(pricer, shape, pricer.plain_pass(shape, h)) for h in halves(lens))
    exposed = max(0.0, m_a - c_b) + max(0.0, m_b - c_a)
    w = _add(_add(full.work, r_full, -1.0), _add(r_a, r_b))
    w = w._replace(comm_s=w.comm_s - (m_a + m_b - exposed))  # the all-to-all time hidden
    return type(full.cost).of(shape.kind, shape.part, full.cost.tokens, w, full.cost.sources, full.cost.ops)


def _moe_layers(pricer, shape, priced) -> tuple[float, object, float]:
    """(compute seconds, Work, dispatch + combine seconds) of a priced pass's MoE layers: their
    token-count ops and their share of the attention cores."""
    r = pricer.overlap_region_memo(shape.part, priced.cost.tokens, priced.graphs)
    empty = type(priced.work)()  # passes.Work, named through the pass (passes.py imports this module)
    work = _add(empty.plus(r.layers), empty.plus(priced.cores), r.share)
    return work.time_s - r.a2a_s, work, r.a2a_s


def _add(a, b, scale: float = 1.0):
    """a + scale * b, field by field (Work's fields are all sums)."""
    return type(a)(*(x + scale * y for x, y in zip(a, b)))
