"""A decoder layer as the ops the simulator prices, and the whole layers a profile times.

`decoder_layer_ops` is the one list of what a decoder layer runs (attention projections, FFN or
experts, norms + RoPE + activation, the tensor- and expert-parallel collectives, the glue a
calibrated profile fits). The pricer (passes.py) builds every layer group of a pass from it; the
attention core is not in its list there, because it depends on each request's KV and is priced
per call. A whole-layer row of a profile (one KV length for the whole batch) passes its core in.

Whole layers (a profile's `layers.csv`): each row names a `layer` kind of LAYER_KINDS
(a catalog model's layer), a width `scale`, batch, q and kv. The layer is that catalog layer
shrunk by the one shrink rule (mtpsim/shrink.py), as the verification mode shrinks models, and
`mtpsim calibrate` times torchkit's `DecoderLayer` built from the same spec. The calibrated model
fits the layer glue from the rows at every width but HELDOUT_SCALE (`fit_glue`, below).
Torch-free: the cost model, the calibration grid and the benchmark all read it.
"""
from __future__ import annotations

import numpy as np

from mtpsim.catalog import load_model
from mtpsim.costs import compressed as C
from mtpsim.costs import ops as O
from mtpsim.costs.dp_attention import dp_layer_ops
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.specs import AttentionSpec, FFNSpec

# layer kind -> (catalog model, attention kind, ffn kind, query_only)
LAYER_KINDS = {
    "mla_moe": ("deepseek-v3", "mla", "moe", False),
    "gqa_dense": ("llama-3.1-8b", "gqa", "dense", False),
    "swa_dense": ("mimo-v2-flash", "swa", "dense", False),
    "assistant": ("gemma-4-e2b-assistant", "sliding", "dense", True),
}
HELDOUT_SCALE = 0.125  # whole layers at this width never train the glue fit (calibration_fit reports them)
MAX_EXPERTS = 8        # routed experts a whole layer keeps


def decoder_layer_ops(att: AttentionSpec, ffn: FFNSpec, d: int, tokens: int, attn_dtype: str, ffn_dtype: str,
                      expert_dtype: str, par: O.Parallel, query_only: bool = False, skew: float = 0.0,
                      act: str = O.ACT, glue: bool = False, core: O.Op | None = None,
                      fuse_shared: bool = False, independent: float = 1.0) -> list[O.Op]:
    """The ops of one decoder layer over `tokens` tokens on one GPU, in order: attention
    projections, `core` (the attention core, when the caller has one KV shape for the batch),
    FFN or router + experts + shared experts, the elementwise work, the two tp all-reduces,
    the layer glue (`glue`: only a profile with whole-layer timings prices it). Collectives a
    single GPU does not run are left out. Under DP attention (`par.attention_dp` > 1) the layer is
    costs/dp_attention.py's. `fuse_shared`: the engine fuses shared experts into the routed-expert
    kernel where the FFN allows (ops.ffn_ops). `independent`: the share of the tokens whose
    expert picks are independent draws (ffn.py `shared_routing`).
    Expert parallelism without DP attention moves no tokens: after the attention all-reduce every
    rank holds every token, runs its own experts over the ones routed to them, and the MoE output
    joins the layer's second all-reduce. No engine runs a dispatch + combine there: TensorRT-LLM's
    fused MoE enables its all-to-all only with enable_attention_dp (_torch/modules/fused_moe
    enable_alltoall), vLLM's FusedMoEParallelConfig.use_all2all_kernels needs dp_size > 1, and
    SGLang without --moe-a2a-backend runs the StandardDispatcher, which only masks non-local
    experts (v0.5.13 srt/layers/moe/token_dispatcher/standard.py)."""
    if par.attention_dp > 1:
        return dp_layer_ops(att, ffn, d, tokens, attn_dtype, ffn_dtype, expert_dtype, par, query_only, skew, act, glue,
                            fuse_shared, independent)
    ops = C.attention_projections(att, d, tokens, attn_dtype, par, query_only, act)
    ops += [core] if core is not None else []
    ops += O.ffn_ops(ffn, d, tokens, ffn_dtype, expert_dtype, par, skew, act, fuse_shared, independent)
    nodes = par.nodes(par.tp)
    ops += [O.layer_elementwise(tokens, d, act), O.allreduce(tokens, d, par.tp, act, nodes),
            O.allreduce(tokens, d, par.tp, act, nodes)]
    if glue:
        ops.append(O.layer_glue(O.layer_kind(att, ffn, query_only), tokens, d))
    return [op for op in ops if op is not None]


def layer_spec(kind: str, scale: float, max_experts: int = MAX_EXPERTS) -> tuple[int, AttentionSpec, FFNSpec]:
    """(hidden, attention, ffn) of a LAYER_KINDS layer shrunk as the verification mode shrinks it
    (mtpsim/shrink.py `shrink_layer`, the one rule) at width `scale`, experts capped at `max_experts`."""
    from mtpsim.shrink import shrink_layer  # on first use: only a profile's layer rows (layers.csv) read it
    model, att_name, ffn_name, _ = LAYER_KINDS[kind]
    return shrink_layer(load_model(model), att_name, ffn_name, scale, max_experts)


def whole_layer_ops(row: dict, dtype: str, glue: bool = True) -> list[O.Op]:
    """The ops the simulator prices for one whole-layer row (layer, scale, batch, q, kv) at tp 1,
    everything in the profile's `dtype`: B requests x q new tokens after kv - q cached (`glue`:
    with the layer's glue op, which a calibrated profile fits from these rows)."""
    d, att, ffn = layer_spec(row["layer"], row["scale"])
    B, q, kv = row["batch"], row["q"], row["kv"]
    core = O.attention_core(att, np.full(B, q), np.full(B, kv - q), dtype, 1, act=dtype)
    return decoder_layer_ops(att, ffn, d, B * q, dtype, dtype, dtype, O.Parallel(), LAYER_KINDS[row["layer"]][3],
                             act=dtype, glue=glue, core=core)


def fit_glue(costs, layers: pd.DataFrame) -> dict:
    """layer kind -> (a_s, b_s) for a calibrated cost model `costs` (calibrated.py, which prices
    the ops): glue = a + b * tokens * d, the fixed calls a layer makes plus the activations its
    views, transposes and copies move, fitted to measured layer - the sum of its priced ops over
    the training layers (every width but HELDOUT_SCALE), least squares on the relative error (so
    the widest layers' op errors do not swamp the narrow ones), a, b >= 0."""
    dtype, rows = costs.meta["dtype"], []
    for r in layers[~np.isclose(layers["scale"], HELDOUT_SCALE)].to_dict("records"):
        ops = sum(costs.time(op, graphs=False).total_s for op in whole_layer_ops(r, dtype, glue=False))
        rows.append({"layer": r["layer"], "x": r["batch"] * r["q"] * r["d"], "t": r["time_s"], "ops": ops})
    fits = {}
    for kind, g in pd.DataFrame(rows, columns=["layer", "x", "t", "ops"]).groupby("layer"):
        t = g.t.to_numpy()
        design = np.stack([np.ones(len(g)), g.x.to_numpy(float)], 1) / t[:, None]
        (a, b), *_ = np.linalg.lstsq(design, (t - g.ops.to_numpy()) / t, rcond=None)
        fits[kind] = (max(float(a), 0.0), max(float(b), 0.0))
    return fits
