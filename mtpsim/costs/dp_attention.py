"""DP attention with wide expert parallelism, as SGLang runs it (`--dp-size G --enable-dp-attention`).

A replica of `tp` GPUs holds `G = attention_dp` attention groups of `a = tp / G` GPUs each
(SGLang layers/dp_attention.py compute_dp_attention_world_info: attn_tp_size = tp_size // dp_size).
Each group serves its own requests and keeps their KV; its attention weights are replicated across
the groups and sharded over its `a` GPUs. The MoE layers span all `tp` GPUs. Per layer and GPU:

- attention over the group's tokens, heads / a, then the attention group's collectives: one
  all-reduce over the `a` attention GPUs where the MLP takes the group's full tokens; where it
  runs scattered (an MoE layer under wide EP, `scattered_mlp`) a reduce-scatter after attention
  and an all-gather before the next one, both through NCCL rather than SGLang's custom
  all-reduce kernel (comms.attn_tp_scatter_gather, with its sources): at decode sizes each costs
  a collective's latency, about twice the custom all-reduce's on H200 (aiconfigurator-core
  0.12.0 h200_sxm: NCCL 2.26.2 reduce-scatter / all-gather over 4 GPUs 7-8 us, SGLang's custom
  all-reduce 2.5-3.5 us);
- the MLP, one of SGLang's two layouts:
  * wide EP, `ep == tp` (`--moe-a2a-backend deepep`, which sets ep_size = tp_size in
    server_args.py; SGLang's recipes pair it with `--moe-dense-tp-size 1`): each GPU routes its
    own tokens (the group's, split over its `a` GPUs); dispatch and combine all-to-all over the
    `tp` ranks (layers/moe/token_dispatcher/deepep.py, low-latency kernels in decode); each GPU's
    E / ep experts see every group's routed tokens, the busiest GPU `par.ep_imbalance` times the
    mean (costs/wide_ep.py), and every GPU waits for it; shared experts and dense FFN layers are
    replicated and run on the GPU's own tokens;
  * gathered TP, `ep < tp` (no a2a backend): every group's tokens are all-gathered over the `tp`
    GPUs (dp_attention.py dp_gather, MAX_LEN padding under CUDA graphs: each group padded to the
    largest), the MLP runs tensor/expert-parallel on all of them and the output is
    reduce-scattered back (dp_reduce_scatter_tensor): the traffic of one all-reduce of the
    gathered tokens.
- the LM head per group, vocabulary over its `a` GPUs (`--enable-dp-lm-head`, which SGLang's
  DP-attention recipes set).

Every group runs the same shapes: SGLang pads each group to the largest group's batch (the CUDA
graph batch is the max of the gathered token counts; a group with no requests runs an idle batch,
scheduler_dp_attn_mixin.py get_idle_batch), so token-count ops are priced at the slowest group's
tokens; the attention core, which depends on each group's KV, is priced per group and the slowest
taken (passes.py). Torch-free.
"""
from __future__ import annotations

import math

from mtpsim.costs import comms
from mtpsim.costs import compressed as C
from mtpsim.costs import ops as O
from mtpsim.specs import AttentionSpec, FFNSpec


def wide_ep(par: O.Parallel) -> bool:
    """Whether the MLP runs wide EP (DeepEP all-to-all) rather than gathered TP."""
    return par.ep == par.tp


def scattered_mlp(ffn: FFNSpec, par: O.Parallel) -> bool:
    """Whether SGLang runs this layer's MLP on scattered tokens: an MoE layer under wide EP (an
    all-to-all backend), and no other (v0.5.12 layers/communicator.py `_compute_mlp_mode`: a sparse
    layer is SCATTERED when moe_a2a_backend is not none; a dense one only with
    --moe-dense-tp-size 1, which the MiMo-V2-Flash recipe does not set and mtpsim does not model)."""
    return wide_ep(par) and ffn.kind != "dense"


def dp_layer_ops(att: AttentionSpec, ffn: FFNSpec, d: int, tokens: int, attn_dtype: str, ffn_dtype: str,
                 expert_dtype: str, par: O.Parallel, query_only: bool = False, skew: float = 0.0,
                 act: str = O.ACT, glue: bool = False, fuse_shared: bool = False,
                 independent: float = 1.0) -> list[O.Op]:
    """One decoder layer on one GPU under DP attention; `tokens`: one group's tokens (every group
    is padded to the largest)."""
    a = par.attention_tp
    ops = C.attention_projections(att, d, tokens, attn_dtype, O.Parallel(a), query_only, act)
    if scattered_mlp(ffn, par):  # reduce-scatter after attention, all-gather before the next one (NCCL)
        ops += comms.attn_tp_scatter_gather(tokens, d, a, act, nodes=par.nodes(a))
    else:
        ops.append(O.allreduce(tokens, d, a, act, nodes=par.nodes(a)))
    ops += mlp_ops(ffn, d, tokens, ffn_dtype, expert_dtype, par, skew, act, fuse_shared, independent)
    ops.append(O.layer_elementwise(tokens, d, act))
    if glue:
        ops.append(O.layer_glue(O.layer_kind(att, ffn, query_only), tokens, d))
    return [op for op in ops if op is not None]


def mlp_ops(ffn: FFNSpec, d: int, tokens: int, dtype: str, expert_dtype: str, par: O.Parallel,
            skew: float = 0.0, act: str = O.ACT, fuse_shared: bool = False,
            independent: float = 1.0) -> list[O.Op | None]:
    """The MLP of one layer on one GPU: wide EP or gathered TP (module docstring)."""
    everyone = par.attention_dp * tokens  # tokens of all groups, padding included
    if not wide_ep(par):
        gather = O.allreduce(everyone, d, par.tp, act, nodes=par.nodes(par.tp), name="comm.dp_gather_scatter")
        return [gather, *O.ffn_ops(ffn, d, everyone, dtype, expert_dtype, O.Parallel(par.tp, par.ep), skew, act,
                                   fuse_shared, independent)]
    own = math.ceil(tokens / par.attention_tp)  # scattered over the group's attention GPUs
    if ffn.kind == "dense":
        return O.ffn_ops(ffn, d, own, dtype, expert_dtype, O.Parallel(), skew, act)
    # every rank waits for the busiest: its experts and its all-to-all at its routed tokens (a
    # figure measured or given, else uniform routing's busiest rank at this pass's tokens)
    hot = par.ep_imbalance if par.ep_imbalance is not None else O.routed_imbalance(everyone, ffn.top_k, ffn.num_experts, par.ep)
    experts = O.moe_experts(ffn, d, math.ceil(everyone * hot), expert_dtype, O.Parallel(par.tp, par.ep), skew, act,
                            independent=independent, busiest=False)
    experts.shape.update(wide_ep=True, ep=par.ep)  # one GPU's DeepEP grouped GEMM (costs/wide_ep.py)
    ops = [O.gemm("moe.router", own, d, ffn.num_experts, act, kernels=2, act=act), experts,
           O.dispatch_combine(math.ceil(own * hot), ffn.top_k, d, par.tp, act, nodes=par.nodes(par.tp))]
    if ops[-1] is not None:
        ops[-1].shape["wide_ep"] = True  # DeepEP's kernels (costs/wide_ep.py)
    if ffn.num_shared_experts:
        inter = ffn.num_shared_experts * (ffn.shared_intermediate_size or ffn.expert_intermediate_size)
        ops += [O.gemm("moe.shared_gate_up", own, d, 2 * inter, expert_dtype, act=act),
                O.gemm("moe.shared_down", own, inter, d, expert_dtype, act=act)]
    return ops
