"""FFN ops: a dense gated FFN, or MoE's router, routed experts and shared experts, per GPU
(ops.py re-exports them; its units hold here).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from mtpsim.costs.op import ACT, Op, Parallel, gemm
from mtpsim.specs import DTYPE_BYTES, FFNSpec, ModelSpec


def experts_touched(num_experts: int, top_k: int, tokens: int, skew: float = 0.0) -> float:
    """Expected distinct experts hit by `tokens` tokens, each routed to `top_k` of them.

    Uniform routing: E * (1 - (1 - k/E)^T). `skew` in [0, 1) concentrates routing on a hot
    subset of E * (1 - skew) experts (at least top_k), which lowers the count at mid batch."""
    hot = max(float(top_k), num_experts * (1.0 - skew))
    return hot * (1.0 - (1.0 - top_k / hot) ** tokens)


def busiest_rank(draws: int, p: float, ranks: int) -> float:
    """Expected maximum over `ranks` ranks of a Binomial(draws, p) count each: what the busiest
    of `ranks` expert-parallel ranks holds when each rank's count is `draws` independent chances
    of probability `p` (its E / ranks experts, each touched with probability p; or its experts'
    routed copies, tokens x E / ranks chances of k / E: `routed_imbalance`). Every rank waits for the busiest at the
    combine, so that rank's load sets the layer's time. Exact (sum over x of 1 - F(x)^ranks,
    ranks taken independent, which a Monte Carlo of DeepSeek-V3's top-8 of 256 over 8 ranks
    matches to 1%: 2.54 experts at one token against a mean of 1); `draws * p` for one rank."""
    if ranks <= 1 or draws <= 0 or p <= 0.0:
        return draws * max(p, 0.0)
    p = round(p, 9)  # a cache key: equal shares from other float paths land on one entry
    if p >= 1.0:
        return float(draws)
    return _busiest(int(draws), p, int(ranks))


@lru_cache(maxsize=8192)
def _busiest(n: int, p: float, ranks: int) -> float:
    # the sum over x of P(max > x) = 1 - F(x)^ranks, over the counts within 12 standard deviations
    # of the mean (the terms below are 1 and above 0 to double precision)
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    lo, hi = max(0, math.floor(mean - 12 * sd)), min(n, math.ceil(mean + 12 * sd) + 1)
    x = np.arange(lo, hi + 1)
    log_pmf = (math.lgamma(n + 1) - _lgamma(x + 1) - _lgamma(n - x + 1)
               + x * math.log(p) + (n - x) * math.log1p(-p))
    cdf = np.minimum(np.cumsum(np.exp(log_pmf)), 1.0)
    return float(lo + np.sum(1.0 - cdf[x < n] ** ranks))


_lgamma = np.vectorize(math.lgamma, otypes=[float])


def routed_imbalance(tokens: float, top_k: int, num_experts: int, ranks: int) -> float:
    """The busiest of `ranks` EP ranks' routed copies over the mean when `tokens` tokens each pick
    `top_k` of `num_experts` experts uniformly at random: each of a rank's E / ranks experts gets
    a Binomial(tokens, k / E) share, so the rank's copies are Binomial(tokens * E / ranks, k / E).
    1 for one rank or no tokens, falling toward 1 as the tokens grow (DeepSeek-V3 over 8 ranks:
    2.54 at one token, 1.18 at 64, 1.06 at 512)."""
    t = int(round(tokens))
    if ranks <= 1 or t <= 0:
        return 1.0
    return busiest_rank(t * (num_experts // ranks), top_k / num_experts, ranks) / (t * top_k / ranks)


def shared_routing(locality: float, per_request: int) -> float:
    """The share of a pass's tokens whose expert picks count as independent when each request
    brings `per_request` consecutive tokens and each token shares `locality` of its experts with
    the one before it (`cost.routing_locality`): 1 + (q - 1)(1 - locality) draws per request of
    q tokens, so a request touches what that many independent tokens would. 1.0 (every token
    independent) at locality 0 or one token per request."""
    if not locality or per_request <= 1:
        return 1.0
    return (1.0 + (per_request - 1) * (1.0 - locality)) / per_request


def ffn_ops(ffn: FFNSpec, d: int, tokens: int, dtype: str, expert_dtype: str, par: Parallel,
            skew: float = 0.0, act: str = ACT, fuse_shared: bool = False, independent: float = 1.0) -> list[Op]:
    """Dense gated FFN (gate, up, down), or MoE: router + routed experts + shared experts.
    `fuse_shared`: the engine runs the shared experts inside the routed-expert kernel (see
    `fusable_shared_experts`), so they are extra always-hit experts of that kernel, not GEMMs."""
    if ffn.kind == "dense":
        inter = ffn.intermediate_size // par.tp
        return [gemm("ffn.gate_up", tokens, d, 2 * inter, dtype, act=act),
                gemm("ffn.down", tokens, inter, d, dtype, act=act)]
    fused = ffn.num_shared_experts if fuse_shared and fusable_shared_experts(ffn, par) else 0
    # the router GEMM, then its top-k, or for hash routing the table gather that replaces it (SGLang
    # v0.5.16 layers/moe/hash_topk.py HashTopK: router_logits in, topk_ids = tid2eid[input_ids]);
    # a hash spreads tokens over the experts by id, whatever the gate's skew
    ops = [gemm("moe.router", tokens, d, ffn.num_experts, act, kernels=2, act=act)]
    hashed = ffn.routing == "hash"  # a hash routes by token id: a request's tokens share nothing by it
    ops.append(moe_experts(ffn, d, tokens, expert_dtype, par, 0.0 if hashed else skew, act, fused_shared=fused,
                           independent=1.0 if hashed else independent))
    if ffn.num_shared_experts and not fused:
        inter = ffn.num_shared_experts * (ffn.shared_intermediate_size or ffn.expert_intermediate_size) // par.tp
        ops += [gemm("moe.shared_gate_up", tokens, d, 2 * inter, expert_dtype, act=act),
                gemm("moe.shared_down", tokens, inter, d, expert_dtype, act=act)]
    return ops


def fusable_shared_experts(ffn: FFNSpec, par: Parallel) -> bool:
    """Whether SGLang can fuse this FFN's shared expert into its routed-expert kernel
    (`determine_num_fused_shared_experts`, srt/models/deepseek_v2.py, v0.4.7 to v0.5.12): 256
    routed experts, top-8 routing and one shared expert as wide as a routed one, without expert
    parallelism (on NVIDIA GPUs). The model must be DeepSeek-V3's architecture too
    (`deepseek_v3_architecture`)."""
    return (ffn.kind == "moe" and ffn.num_experts == 256 and ffn.top_k == 8 and ffn.num_shared_experts == 1
            and ffn.routing == "topk" and ffn.shared_intermediate_size in (None, ffn.expert_intermediate_size)
            and par.ep == 1)


def deepseek_v3_architecture(model: ModelSpec) -> bool:
    """SGLang's fusion checks `architectures[0] == "DeepseekV3ForCausalLM"`: MLA without V3.2's
    sparse indexer (DeepseekV32ForCausalLM fails the check) and no other attention kind."""
    kinds = model.attention_kinds.values()
    return bool(kinds) and all(a.kind == "mla" and a.index_topk is None for a in kinds)


def deepseek_family(model: ModelSpec) -> bool:
    """Models the engines run through their DeepSeek MoE code (SGLang srt/models/deepseek_v2.py
    DeepseekV2MoE, which deepseek_v4.py reuses; TensorRT-LLM _torch/models/modeling_deepseekv3.py):
    MLA attention throughout, V3.2's sparse indexer included (DeepSeek-V2/V3/V3.2, Kimi-K2), or
    DeepSeek-V4's compressed attention (TensorRT-LLM's V4 code not read: taken to run its V3 MoE)."""
    kinds = model.attention_kinds.values()
    return bool(kinds) and (all(a.kind == "mla" for a in kinds) or all(a.kind == "compressed" for a in kinds))


def moe_experts(ffn: FFNSpec, d: int, tokens: int, dtype: str, par: Parallel, skew: float = 0.0,
                act: str = ACT, touched: float | None = None, fused_shared: int = 0, independent: float = 1.0,
                busiest: bool = True) -> Op:
    """Routed experts on one GPU: its ep group holds E/ep experts, each split over tp/ep GPUs.

    Bytes are the touched experts' weights (gate, up, down); flops 2 * T * k * 3 * d * d_expert
    spread evenly over the replica's tp GPUs. `touched`: the distinct experts the replica's
    tokens hit, when known (a timed kernel's routing); else the expectation under routing skew.
    `fused_shared`: shared experts run in the same kernel as extra experts every token picks
    (SGLang's fusion: top_k + 1 over E + 1 experts), so they add to the touched experts and to
    each token's routed copies; the table is read at the routed experts' config.
    `independent`: the share of the tokens whose expert picks count as independent draws
    (`shared_routing`); below 1 a request's consecutive tokens reuse experts, so fewer are touched
    (the flops do not change).
    `busiest`: under expert parallelism the layer waits for the busiest of the ep groups, so the
    bytes are that group's touched experts (`busiest_rank`: at one token of DeepSeek-V3 over 8
    groups, 2.54 experts against a mean of 1), not the mean E / ep share; False where the caller
    already prices the busiest rank (wide EP's tokens times `Parallel.ep_imbalance`)."""
    e, k, inter = ffn.num_experts, ffn.top_k, ffn.expert_intermediate_size
    if touched is None:
        touched = experts_touched(e, k, tokens if independent == 1.0 else tokens * independent, skew)
        # the busiest of the ep groups: its E / ep experts each touched with the share of all touched
        touched = (busiest_rank(e // par.ep, touched / e, par.ep) if busiest else touched / par.ep) + fused_shared
    else:  # a timed kernel's own routing, one group's share of it
        touched = touched / par.ep + fused_shared
    copies = k + fused_shared
    per_expert = 3 * d * inter * DTYPE_BYTES[dtype] / par.expert_shard
    return Op("moe.experts", "moe", flops=2.0 * tokens * copies * 3 * d * inter / par.tp,
              weight_bytes=touched * per_expert,
              # hidden states in and out once; each routed copy's intermediate written and read
              act_bytes=(2 * tokens * d + 2 * tokens * copies * inter / par.expert_shard) * DTYPE_BYTES[act] / par.ep,
              kernels=4, dtype=dtype,
              shape={"tokens": tokens, "num_experts": e // par.ep, "top_k": k, "d": d,
                     "inter": inter // par.expert_shard, "touched": touched, "dtype": dtype})
