"""The op record every cost path shares: `Op` (what one GPU computes and moves for one op, with
the shape a calibrated profile looks it up by), `Parallel` (a replica's sharding), `gemm`, the
building block of every other op, and `bmm`, a batched matmul of one weight per head. ops.py,
ffn.py and comms.py build ops from these.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from mtpsim.specs import DTYPE_BYTES

ACT = "bf16"  # default activation dtype: activations move, and small per-head matmuls compute, in it
MLA_ABSORB_MAX_Q = 64  # query tokens per request up to which MLA runs absorbed (decode, verify)


@dataclass(frozen=True)
class Op:
    """One op on one GPU. `shape` holds the lookup keys for a calibrated profile."""

    name: str
    # gemm | bmm | attention | moe | lm_head | allreduce | alltoall | state | copy | elementwise | pass | argmax | glue
    family: str
    flops: float = 0.0
    weight_bytes: float = 0.0
    kv_bytes: float = 0.0
    act_bytes: float = 0.0
    comm_bytes: float = 0.0
    kernels: int = 1
    dtype: str = "bf16"
    shape: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.act_bytes


HOST_COPY = "host_copy"  # the family of an op that reads host memory over the GPU's host link (its comm_bytes)


@dataclass(frozen=True)
class Parallel:
    """A replica's sharding: tp GPUs, ep expert groups, attention_dp attention groups (DP
    attention), on nodes of gpus_per_node GPUs; ep_imbalance: the busiest EP rank's routed tokens
    over the mean under wide EP, a figure measured or given (costs/wide_ep.py `ep_imbalance`), or
    None where none applies: then uniform routing's own, which depends on the pass's tokens
    (ffn.py `routed_imbalance`)."""

    tp: int = 1
    ep: int = 1
    attention_dp: int = 1
    gpus_per_node: int = 8
    ep_imbalance: float | None = None

    @property
    def expert_shard(self) -> int:
        """GPUs one expert is split over."""
        return self.tp // self.ep

    @property
    def attention_tp(self) -> int:
        """GPUs one attention group's heads are split over."""
        return self.tp // self.attention_dp

    def nodes(self, ranks: int) -> int:
        """Nodes a collective over `ranks` consecutive GPUs spans."""
        return max(1, math.ceil(ranks / self.gpus_per_node))


def gemm(name: str, m: int, k: int, n: int, dtype: str, *, family: str = "gemm", kernels: int = 1,
         act: str = ACT) -> Op:
    """`m` tokens through a `k x n` weight: 2mkn flops; weights once plus activations in and out."""
    w = DTYPE_BYTES[dtype]
    return Op(name, family, flops=2.0 * m * k * n, weight_bytes=k * n * w,
              act_bytes=(m * k + m * n) * DTYPE_BYTES[act], kernels=kernels, dtype=dtype,
              shape={"m": m, "k": k, "n": n, "dtype": dtype})


def bmm(name: str, m: int, heads: int, k: int, n: int, dtype: str, *, act: str = ACT) -> Op:
    """A batched matmul: the same `m` tokens through one `k x n` weight per head (MLA's absorbed
    W_UK and W_UV, which engines run as torch.bmm or a bmm kernel, not as one GEMM): 2 m heads k n
    flops; the heads' weights once, each head's k-wide input and n-wide output per token."""
    return Op(name, "bmm", flops=2.0 * m * heads * k * n, weight_bytes=heads * k * n * DTYPE_BYTES[dtype],
              act_bytes=m * heads * (k + n) * DTYPE_BYTES[act], kernels=1, dtype=dtype,
              shape={"m": m, "heads": heads, "k": k, "n": n, "dtype": dtype, "act": act})


def as_gemm(op: Op) -> Op:
    """A batched matmul (`bmm`) as the one GEMM of the same flops and weights that stands in for
    it where a profile has no batched-matmul table: `m` tokens through a (heads x k) x n weight."""
    s = op.shape
    return gemm(op.name, s["m"], s["heads"] * s["k"], s["n"], s["dtype"], act=s["act"])
