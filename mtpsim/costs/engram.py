"""DeepSeek-V4.1's Engram (a model's `engram`, specs.EngramSpec) as the ops one GPU runs at a layer
that carries one, and the memory its tables take.

What SGLang v0.5.23 runs (srt/layers/engram.py `Engram.forward`, `EngramEmbedding`), by default:
- the tables' rows are sharded over the tensor-parallel GPUs in device memory; every GPU looks up
  every token's (max_ngram_size - 1) x n_heads hashed rows, reads the ones its shard owns (FP8
  values, one E8M0 scale per 32) and writes all of them dequantised to BF16, zeros for the rest;
- an all-reduce over the TP group reassembles the rows (`_reduce_owned_rows`); under DP attention
  the DP ranks' indices are gathered first (`_dp_sharded_lookup`): priced here as the all-reduce
  of every group's tokens;
- `wkv`, a replicated GEMM from the columns x head_dim rows to (hc_mult + 1) x hidden (one key per
  hyper-connection copy and a shared value; the checkpoint's FP8);
- `engram_gate`, one fused kernel: reads the hc_mult residual copies and the wkv output, writes
  the copies back.
The hashing of the n-grams (`EngramHasher`, once per forward for every Engram layer) is a few
integer ops per token and is not priced. Host-memory tables (SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE,
vLLM's engram cpu_offload) are not modelled: the tables are priced where the engines keep them by
default. Every op here but the GEMM and the all-reduce is priced by the roofline (family `engram`).
"""
from __future__ import annotations

from mtpsim.costs.comms import allreduce
from mtpsim.costs.op import ACT, Op, gemm
from mtpsim.specs import DTYPE_BYTES, EngramSpec

FAMILY = "engram"  # not a profile family: the roofline prices it


def engram_ops(engram: EngramSpec, d: int, hc_mult: int, tokens: int, dtype: str, tp: int, group_tokens: int,
               act: str = ACT, nodes: int = 1) -> list[Op]:
    """One Engram layer over `tokens` tokens on one of `tp` GPUs; `group_tokens`: the tokens the
    lookup's all-reduce carries (every attention group's under DP attention, else `tokens`)."""
    width = engram.columns * engram.head_dim
    size = DTYPE_BYTES[act]
    gather = Op("engram.gather", FAMILY, act_bytes=group_tokens * engram.columns * engram.row_bytes / tp
                + group_tokens * width * size, kernels=1, dtype=act,
                shape={"tokens": group_tokens, "columns": engram.columns, "ranks": tp})
    ops = [gather, allreduce(group_tokens, width, tp, act, nodes, name="comm.engram_allreduce"),
           gemm("engram.wkv", tokens, width, (hc_mult + 1) * d, dtype, act=act),
           Op("engram.gate", FAMILY, flops=tokens * 6.0 * hc_mult * d,
              act_bytes=tokens * (2 * hc_mult + hc_mult + 1) * d * size, kernels=1, dtype=act,
              shape={"tokens": tokens, "d": d, "hc": hc_mult})]
    return [op for op in ops if op is not None]


def table_bytes_per_gpu(engram: EngramSpec | None, tp: int) -> float:
    """The Engram tables' bytes on one GPU: their rows split over the TP group."""
    return 0.0 if engram is None else engram.table_bytes / tp
