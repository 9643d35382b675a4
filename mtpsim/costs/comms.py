"""Collective ops per GPU: tensor-parallel all-reduce, expert-parallel dispatch + combine (DeepEP,
under DP attention: without it no engine moves tokens between EP ranks, costs/layer.py) and DP
attention's token-count sync (ops.py re-exports them).
"""
from __future__ import annotations

from mtpsim.costs.op import ACT, Op
from mtpsim.specs import DTYPE_BYTES


def allreduce(tokens: int, d: int, tp: int, act: str = ACT, nodes: int = 1, name: str = "comm.allreduce") -> Op | None:
    """Tensor-parallel all-reduce of a tokens x d activation (one per attention, one per FFN).
    `nodes` > 1: the ranks span nodes (the shape says so; roofline.py prices the network leg)."""
    if tp == 1:
        return None
    size = tokens * d * DTYPE_BYTES[act]
    return Op(name, "allreduce", comm_bytes=size, shape={"bytes": size, "ranks": tp, **_spans(nodes)})


def dispatch_combine(tokens_per_rank: int, top_k: int, d: int, ranks: int, act: str = ACT, nodes: int = 1) -> Op | None:
    """Wide-EP dispatch + combine (DeepEP, DP attention): each rank sends its own tokens' routed
    copies to the experts' ranks and takes the outputs back, 2 * tokens * top_k * d activations
    (the bytes measured DeepEP low-latency tables record for `tokens` per rank)."""
    if ranks == 1:
        return None
    size = 2 * tokens_per_rank * top_k * d * DTYPE_BYTES[act]
    return Op("comm.dispatch_combine", "alltoall", comm_bytes=size, kernels=2,
              shape={"bytes": size, "ranks": ranks, "tokens": tokens_per_rank, "top_k": top_k, "d": d, **_spans(nodes)})


def attn_tp_scatter_gather(tokens: int, d: int, a: int, act: str = ACT, nodes: int = 1) -> list[Op]:
    """The attention group's two collectives of a layer whose MLP runs scattered (DP attention
    with an all-to-all MoE backend): the attention output reduce-scattered over the group's `a`
    GPUs, and the next layer's input all-gathered back (SGLang v0.5.12 layers/communicator.py:
    `_compute_mlp_mode` is SCATTERED when moe_a2a_backend is not none,
    `_scatter_hidden_states_and_residual` calls attn_tp_reduce_scatter_tensor, and a SCATTERED
    layer input is gathered to TP_ATTN_FULL by attn_tp_all_gather_into_tensor). Both run NCCL
    (distributed/parallel_state.py GroupCoordinator reduce_scatter_tensor / all_gather_into_tensor:
    pynccl or torch.distributed), not the custom all-reduce kernel a single all-reduce would use.
    Each moves the group's tokens x d activations (`bytes`: the full buffer, as NCCL's tables
    key it)."""
    if a == 1:
        return []
    size = tokens * d * DTYPE_BYTES[act]
    return [Op(f"comm.attn_{kind}", "collective", comm_bytes=size,
               shape={"op": kind, "bytes": size, "ranks": a, **_spans(nodes)})
            for kind in ("reduce_scatter", "all_gather")]


def mlp_sync(ranks: int, nodes: int = 1) -> Op | None:
    """DP attention's per-batch sync of token counts: every rank all-gathers a few int64s
    (SGLang scheduler_dp_attn_mixin.py prepare_mlp_sync_batch_raw: MLPSyncBatchInfo, 6 per rank,
    over the tp group's NCCL group when overlap scheduling is off, else its gloo CPU group).
    Priced as a collective of that many bytes: a latency term."""
    size = 6 * 8 * ranks
    return Op("comm.mlp_sync", "allreduce", comm_bytes=size, shape={"bytes": size, "ranks": ranks, **_spans(nodes)})


def _spans(nodes: int) -> dict:
    """The `nodes` shape key of a collective that crosses nodes (absent within one node)."""
    return {"nodes": nodes} if nodes > 1 else {}
