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
In host memory (`engine.engram_tables`; SGLang SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE, `_HostTable`):
- `host`, SGLang's default layout `shared`: one copy for all ranks; every GPU gathers its own
  tokens' rows straight from it over its host link (`engram_gather` on the registered host
  pointer) and needs no all-reduce;
- `host_per_rank`: each rank's shard in host memory, read and reassembled as on the GPU.
The host link's bandwidth is the hardware's `host_link_bandwidth_bytes_per_s`; the latency of
reading scattered rows over it is not measured here, so the gather is priced at that bandwidth
(an optimistic bound). The hashing of the n-grams (`EngramHasher`, once per forward for every
Engram layer) is a few integer ops per token and is not priced. Every op here but the GEMM, the
all-reduce and the host read is priced by the roofline (family `engram`).
"""
from __future__ import annotations

from mtpsim.costs.comms import allreduce
from mtpsim.costs.op import ACT, HOST_COPY, Op, gemm
from mtpsim.specs import DTYPE_BYTES, EngramSpec

FAMILY = "engram"  # not a profile family: the roofline prices it


def engram_ops(engram: EngramSpec, d: int, hc_mult: int, tokens: int, dtype: str, tp: int, group_tokens: int,
               act: str = ACT, nodes: int = 1, tables: str = "gpu") -> list[Op]:
    """One Engram layer over `tokens` tokens on one of `tp` GPUs; `group_tokens`: the tokens the
    lookup's all-reduce carries (every attention group's under DP attention, else `tokens`);
    `tables`: where the tables live (gpu, host, host_per_rank)."""
    width = engram.columns * engram.head_dim
    size = DTYPE_BYTES[act]
    if tables == "host":  # one shared host copy: this GPU's own tokens, every row over the host link
        rows, reduce = tokens * engram.columns * engram.row_bytes, None
        written = tokens * width * size
    else:
        rows = group_tokens * engram.columns * engram.row_bytes / tp
        reduce = allreduce(group_tokens, width, tp, act, nodes, name="comm.engram_allreduce")
        written = group_tokens * width * size
    shape = {"tokens": tokens if tables == "host" else group_tokens, "columns": engram.columns, "ranks": tp}
    gather = (Op("engram.host_gather", HOST_COPY, comm_bytes=rows, act_bytes=written, kernels=1, dtype=act, shape=shape)
              if tables != "gpu" else Op("engram.gather", FAMILY, act_bytes=rows + written, kernels=1, dtype=act, shape=shape))
    ops = [gather, reduce, gemm("engram.wkv", tokens, width, (hc_mult + 1) * d, dtype, act=act),
           Op("engram.gate", FAMILY, flops=tokens * 6.0 * hc_mult * d,
              act_bytes=tokens * (2 * hc_mult + hc_mult + 1) * d * size, kernels=1, dtype=act,
              shape={"tokens": tokens, "d": d, "hc": hc_mult})]
    return [op for op in ops if op is not None]


def table_bytes_per_gpu(engram: EngramSpec | None, tp: int, tables: str = "gpu") -> float:
    """The Engram tables' bytes on one GPU: their rows split over the TP group, none in host memory."""
    return 0.0 if engram is None or tables != "gpu" else engram.table_bytes / tp
