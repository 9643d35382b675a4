"""aiconfigurator-core tables -> mtpsim profile rows, one builder per op family.

Each builder takes one measured table (already filtered to its framework, version and device
by aic_sources.py) and returns the rows of an mtpsim family CSV (costs/profile.py), every
row built as the simulator's own `Op` (calibration/grid.py `op_of`, costs/ops.py), so flops and
bytes are the ones the cost model prices with. Conventions, applied here and nowhere else:
- Units: `latency` is milliseconds in every table except the all-to-all ones, which are
  microseconds (`*_us` columns, and `latency` in `moe_a2a`). time_s is seconds.
- Sizes are per GPU. GEMM m/n/k are the shapes one GPU runs; attention `num_heads` and
  `num_key_value_heads` are the heads on one GPU (MLA rows name the model's tp beside them);
  MoE rows name the model's expert width and count with `moe_tp_size` / `moe_ep_size`, which
  become the per-GPU `inter` = inter_size / moe_tp and `num_experts` = num_experts / moe_ep.
- Attention rows are decode rows: one query token per request (`isl` 1) after `step` cached
  tokens, so the visible KV is step + 1 (capped by `window_size` when it is set).
- A comm `message_size` counts elements of `allreduce_dtype` (bf16: 2 bytes each).
- Dtypes: bfloat16 -> bf16; block-scaled fp8 (`fp8_block`, what DeepSeek-V3 and Qwen3 FP8
  checkpoints use) -> fp8, per-tensor fp8 only where no block rows exist; nvfp4 -> fp4, else
  the 4-bit MoE kernels the database has (mxfp4 weights with 8- or 16-bit activations, int4
  weights), and those fill the MoE shapes nvfp4 has no rows at (aic_dtypes.py `filled_dtypes`: DeepSeek-V4's
  MXFP4 experts, Kimi's INT4 ones, timed with the kernels their checkpoints run).
  A candidate whose decode-sized rows are implausibly slow against bf16 is passed over for the
  next one, and meta.yaml says so (aic_dtypes.py `choose_dtypes`).
- Kernel sources: where a table holds several kernels for one shape (triton vs fa3, marlin vs
  cutlass) the fastest is kept, as an engine's dispatch picks it.
- MoE: `balanced` routing only (`cost.moe_skew` models skew). aiconfigurator's balanced
  routing is round-robin, not random (collector/case_generator.py `balanced_logits`: token i
  takes experts i + j * ceil(E / k)), so a row's kernel touched min(E, T * k) distinct experts,
  and its `touched` column says so. The simulator's random routing touches fewer at mid batch
  (E * (1 - (1 - k/E)^T)); the cost model moves such a lookup to its own work from the
  nearest touched count timed (tables.Hit.measured).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from mtpsim.calibration.aic_dtypes import GEMM_RULE, MOE_RULE, pick_dtypes
from mtpsim.costs import ops as O
from mtpsim.costs.attention_core import linear_core
from mtpsim.costs.compressed import hc_post, mhc_pre
from mtpsim.specs import AttentionSpec, FFNSpec

# mtpsim dtype -> the database's dtypes for it, best first
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
ACT = "bf16"  # activations: every table here runs bf16 activations


def _fastest(df: pd.DataFrame, shape: list[str], time: str = "latency") -> pd.DataFrame:
    """One row per shape: the fastest kernel's."""
    return df.loc[df.groupby(shape, sort=False)[time].idxmin()].reset_index(drop=True)


# ----------------------------------------------------------------------------- families

def gemm_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = _fastest(pick_dtypes(df, GEMM_RULE), ["dtype", "m", "n", "k"])
    ops = [O.gemm("gemm", m, k, n, dt, act=ACT) for dt, m, k, n in zip(df.dtype, df.m, df.k, df.n)]
    return _rows(df[["dtype", "m", "k", "n"]], ops, df.latency * 1e-3)


# aiconfigurator's MLA bmm ops at DeepSeek's geometry (qk_nope 128, kv_lora 512, v_head 128), per head:
# mla_gen_pre q_nope -> latent (W_UK), mla_gen_post latent -> v (W_UV); (k, n) of each head's weight
MLA_BMM = {"mla_gen_pre": (128, 512), "mla_gen_post": (512, 128)}
BMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}


def bmm_rows(df: pd.DataFrame) -> pd.DataFrame:
    """MLA's absorbed per-head matmuls by weight dtype, tokens and heads per GPU: the fastest
    kernel per shape (SGLang: torch.bmm for BF16, sgl_kernel bmm_fp8 for FP8; vLLM torch.bmm;
    TensorRT-LLM its bmm_out and FP8 kernels)."""
    df = df[df.op_name.isin(list(MLA_BMM)) & df.bmm_dtype.isin(list(BMM_DTYPES))]
    df = _fastest(df.assign(dtype=df.bmm_dtype.map(BMM_DTYPES)), ["dtype", "op_name", "num_tokens", "num_heads"])
    k, n = (df.op_name.map({o: shape[i] for o, shape in MLA_BMM.items()}) for i in (0, 1))
    cols = pd.DataFrame({"dtype": df.dtype, "k": k, "n": n, "m": df.num_tokens, "heads": df.num_heads})
    ops = [O.bmm("bmm", int(m), int(h), int(kk), int(nn), dt, act=ACT)
           for dt, kk, nn, m, h in zip(cols.dtype, cols.k, cols.n, cols.m, cols.heads)]
    return _rows(cols, ops, df.latency * 1e-3)


def attention_rows(df: pd.DataFrame) -> pd.DataFrame:
    """GQA (window 0) and sliding-window rows; the visible KV of a windowed row is capped by it."""
    if "window_size" not in df.columns:  # older tables measured global attention only
        df = df.assign(window_size=0)
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.isl == 1)].assign(kv_dtype=lambda d: d.kv_cache_dtype.map(KV_DTYPES))
    df = df.assign(kind=np.where(df.window_size > 0, "swa", "gqa"),
                   kv=np.where(df.window_size > 0, np.minimum(df.step + 1, df.window_size), df.step + 1))
    shape = ["kind", "num_key_value_heads", "head_dim", "kv_dtype", "batch_size", "num_heads", "kv"]
    df = _fastest(df[df.num_heads % df.num_key_value_heads == 0], shape)
    points = [dict(kind=k, kv_heads=kvh, head_dim=hd, v_head_dim=hd, kv_dtype=kd, batch=b, q=1, kv=kv, heads=h)
              for k, kvh, hd, kd, b, h, kv in zip(*(df[c] for c in shape))]
    return _point_rows(points, df.latency * 1e-3)


def mla_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepSeek-geometry MLA decode (kv_lora 512 + rope 64, absorbed): heads per GPU."""
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.isl == 1)].assign(kv_dtype=lambda d: d.kv_cache_dtype.map(KV_DTYPES))
    df = _fastest(df.assign(kv=df.step + 1), ["kv_dtype", "batch_size", "num_heads", "kv"])
    points = [dict(kind="mla", kv_heads=1, head_dim=576, v_head_dim=512, kv_dtype=kd, batch=b, q=1, kv=kv, heads=h)
              for kd, b, h, kv in zip(df.kv_dtype, df.batch_size, df.num_heads, df.kv)]
    return _point_rows(points, df.latency * 1e-3)


def context_attention_rows(df: pd.DataFrame) -> pd.DataFrame:
    """GQA prefill rows (window 0, BF16 attention): batch requests of isl prompt tokens each from an
    empty cache, per GPU heads; the fastest kernel per shape."""
    if "window_size" not in df.columns:
        df = df.assign(window_size=0)
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.window_size == 0) & (df.isl > 1)
            & (df.attn_dtype == "bfloat16") & (df.num_heads % df.num_key_value_heads == 0)]
    df = df.assign(kv_dtype=df.kv_cache_dtype.map(KV_DTYPES))
    shape = ["num_key_value_heads", "head_dim", "kv_dtype", "batch_size", "num_heads", "isl"]
    df = _fastest(df, shape)
    points = [dict(kind="gqa", kv_heads=kvh, head_dim=hd, v_head_dim=hd, kv_dtype=kd, batch=b, q=q, kv=q, heads=h)
              for kvh, hd, kd, b, h, q in zip(*(df[c] for c in shape))]
    return _context_rows(points, df.latency * 1e-3)


def context_mla_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepSeek-geometry MLA prefill rows (run unabsorbed: the latent expanded to per-head K and V,
    qk 128 + 64, v 128), BF16 attention; heads per GPU."""
    df = df[df.kv_cache_dtype.isin(list(KV_DTYPES)) & (df.isl > 1) & (df.mla_dtype == "bfloat16")]
    df = _fastest(df.assign(kv_dtype=df.kv_cache_dtype.map(KV_DTYPES)), ["kv_dtype", "batch_size", "num_heads", "isl"])
    points = [dict(kind="mla", kv_heads=1, head_dim=576, v_head_dim=512, kv_dtype=kd, batch=b, q=q, kv=q, heads=h)
              for kd, b, h, q in zip(df.kv_dtype, df.batch_size, df.num_heads, df.isl)]
    return _context_rows(points, df.latency * 1e-3)


def _context_rows(points: list[dict], seconds: pd.Series) -> pd.DataFrame:
    """Prefill points as the simulator prices them (q prompt tokens, the visible KV q: an empty
    cache), without the kv column the prefill_attention family does not key on."""
    return _point_rows(points, seconds).drop(columns="kv")


def moe_rows(df: pd.DataFrame) -> pd.DataFrame:
    df = pick_dtypes(balanced(df), MOE_RULE)
    df = df[(df.inter_size % df.moe_tp_size == 0) & (df.num_experts % df.moe_ep_size == 0)]
    shape = ["dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"]
    df = _fastest(df, shape)
    ops = []
    for dt, t, d, inter, k, e, mtp, mep in zip(*(df[c] for c in shape)):
        ffn = FFNSpec(kind="moe", num_experts=int(e), top_k=int(k), expert_intermediate_size=int(inter))
        ops.append(O.moe_experts(ffn, int(d), int(t), dt, O.Parallel(tp=int(mtp * mep), ep=int(mep)), act=ACT,
                                 touched=balanced_touched(int(e), int(k), int(t))))
    cols = pd.DataFrame([{a: op.shape[a] for a in ("dtype", "inter", "num_experts", "tokens", "touched", "top_k", "d")}
                         for op in ops])
    return _rows(cols, ops, df.latency * 1e-3).groupby(list(cols.columns), as_index=False).median()


def wide_ep_moe_rows(df: pd.DataFrame, mode: str) -> pd.DataFrame:
    """SGLang's wide-EP expert compute under DeepEP (`wideep_generation_moe_perf`: the masked
    grouped GEMM that pairs with low-latency dispatch, `mode` "ll"; `wideep_context_moe_perf`:
    the contiguous one after normal dispatch, "normal"), uniform routing only. Its `num_tokens`
    are the tokens of all EP ranks together (aiconfigurator's MoEExpertCompute scales a rank's
    tokens by attention_dp_size before the lookup), so a row is one GPU's work: num_experts /
    moe_ep_size experts, each with num_tokens * topk / num_experts tokens. Keyed by that per-GPU
    shape, a row prices any wide-EP layout with as many experts per GPU and tokens per expert
    (288 physical experts over 72 ranks reads the 256 / 64 rows)."""
    df = pick_dtypes(df[df.distribution == "uniform"], MOE_RULE)
    df = df[(df.moe_tp_size == 1) & (df.num_experts % df.moe_ep_size == 0)]
    shape = ["dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size"]
    df = _fastest(df, shape)
    ops = [O.moe_experts(FFNSpec(kind="moe", num_experts=int(e), top_k=int(k), expert_intermediate_size=int(inter)),
                         int(d), int(t), dt, O.Parallel(tp=int(ep), ep=int(ep)), act=ACT, busiest=False)
           for dt, t, d, inter, k, e, ep in zip(*(df[c] for c in shape))]  # the row's own GPU, not a busiest rank
    cols = pd.DataFrame({"mode": mode, "dtype": df.dtype, "inter": df.inter_size, "d": df.hidden_size,
                         "experts": df.num_experts // df.moe_ep_size,
                         "tokens_per_expert": df.num_tokens * df.topk / df.num_experts})
    return _rows(cols, ops, df.latency * 1e-3).groupby(list(cols.columns), as_index=False).median()


def gdn_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Gated DeltaNet's kernels of one layer on one GPU (aiconfigurator's `gdn_perf`, Qwen3.5's
    shapes by heads per GPU), summed per shape: a decode (`generation`: causal_conv1d_update and the
    fused recurrent packed decode, one token a request) or a prefill (`context`: causal_conv1d_fn
    and the chunked delta rule over seq_len prompt tokens a request, the engine's own kernel: SGLang's
    Triton chunk_gated_delta_rule, vLLM's FlashInfer one). A shape where one of the two kernels
    has no row is left out; models of one head layout share rows (their median)."""
    df = df.assign(phase=df.phase.map({"generation": "decode", "context": "prefill"}),
                   q=df.seq_len.where(df.phase == "context", 1))
    shape = ["phase", "batch_size", "q", "num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim", "d_conv"]
    per_kernel = df.groupby([*shape, "kernel_source"], as_index=False).latency.median()
    summed = per_kernel.groupby(shape, as_index=False).agg(latency=("latency", "sum"), kernels=("latency", "size"))
    summed = summed[summed.kernels == 2].reset_index(drop=True)
    ops = [linear_core(AttentionSpec(kind="linear", num_heads=int(v), num_kv_heads=int(k), head_dim=int(dk),
                                     value_head_dim=int(dv), conv_kernel=int(conv)), int(b), int(b) * int(q), 1)
           for b, q, k, v, dk, dv, conv in zip(summed.batch_size, summed.q, summed.num_k_heads, summed.num_v_heads,
                                               summed.head_k_dim, summed.head_v_dim, summed.d_conv)]
    cols = pd.DataFrame({"phase": summed.phase, "kv_heads": summed.num_k_heads, "heads": summed.num_v_heads,
                         "head_dim": summed.head_k_dim, "v_head_dim": summed.head_v_dim, "batch": summed.batch_size,
                         "q": summed.q})
    return _rows(cols, ops, summed.latency * 1e-3)


def mhc_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepSeek-V4's mHC pre and post kernels (`mhc_module_perf`: the engine's own, SGLang's and
    vLLM's TileLang mhc_pre / mhc_post, TensorRT-LLM's autotuned mHC module), per site. A row
    times one decoder layer's `num_sites` sites (before attention, before the FFN) run back to
    back, under CUDA graphs (collector/*/collect_mhc_module.py), so a site is latency / num_sites.
    The fastest kernel per shape (TensorRT-LLM's FMA or DeepGEMM pre tactic, as its autotuner
    picks)."""
    df = _fastest(df, ["op_name", "num_tokens", "hidden_size", "hc_mult", "sinkhorn_iters", "num_sites"])
    ops = [mhc_pre(int(hc), int(d), int(t), int(it)) if kind == "pre" else hc_post(int(hc), int(d), int(t), ACT, int(it))
           for kind, t, d, hc, it in zip(df.op_name, df.num_tokens, df.hidden_size, df.hc_mult, df.sinkhorn_iters)]
    cols = pd.DataFrame({"kind": df.op_name, "d": df.hidden_size, "hc": df.hc_mult, "iters": df.sinkhorn_iters,
                         "tokens": df.num_tokens})
    return _rows(cols, ops, df.latency * 1e-3 / df.num_sites)


def balanced_touched(num_experts: int, top_k: int, tokens: int) -> int:
    """Distinct experts aiconfigurator's round-robin `balanced_logits` routes `tokens` tokens to."""
    return min(num_experts, tokens * top_k)


def balanced(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.distribution == "balanced"]


def allreduce_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Custom all-reduce under CUDA-graph capture where the table times both (decode runs in graphs)."""
    if "backend" in df.columns and df.backend.str.endswith("graph").any():
        df = df[df.backend.str.endswith("graph")]
    width = df.allreduce_dtype.map({"bfloat16": 2, "float16": 2, "half": 2, "float32": 4})
    df = df.assign(ranks=df.num_gpus, bytes=df.message_size * width).dropna(subset=["bytes"])
    df = _fastest(df, ["ranks", "bytes"])
    return pd.DataFrame({"ranks": df.ranks, "bytes": df.bytes, "flops": 0.0, "time_s": df.latency * 1e-3})


def alltoall_rows(df: pd.DataFrame) -> pd.DataFrame:
    """DeepEP low-latency dispatch + combine (the decode kernels), microseconds, by tokens per rank.
    SGLang's table has both phases per row; vLLM's and TRT-LLM's `moe_a2a` one row per phase."""
    if "dispatch_avg_t_us" in df.columns:
        df = df.assign(ranks=8 * df.node_num, d=df.hidden_size, top_k=df.num_topk, tokens=df.num_token,
                       t_us=df.dispatch_avg_t_us + df.combine_avg_t_us)
    else:
        df = df[df.comm_backend.str.endswith("deepep_ll")]
        if "comm_dtype" in df.columns and (df.comm_dtype == "bfloat16").any():
            df = df[df.comm_dtype == "bfloat16"]
        shape = ["ep_size", "hidden_size", "topk", "num_experts", "num_tokens", "phase"]
        phases = df.groupby(shape, as_index=False).latency.min()
        wide = phases.pivot_table(index=["ep_size", "hidden_size", "topk", "num_experts", "num_tokens"],
                                  columns="phase", values="latency").dropna().reset_index()
        df = wide.assign(ranks=wide.ep_size, d=wide.hidden_size, top_k=wide.topk, tokens=wide.num_tokens,
                         t_us=wide["dispatch"] + wide["combine"])
    out = df.groupby(["ranks", "d", "top_k", "tokens"], as_index=False).t_us.median()
    size = 2 * out.tokens * out.top_k * out.d * 2.0  # bf16, each routed copy once each way
    return pd.DataFrame({"ranks": out.ranks, "d": out.d, "top_k": out.top_k, "tokens": out.tokens,
                         "flops": 0.0, "bytes": size, "time_s": out.t_us * 1e-6})


def _rows(cols: pd.DataFrame, ops, seconds: pd.Series) -> pd.DataFrame:
    return cols.reset_index(drop=True).assign(flops=[op.flops for op in ops], bytes=[op.bytes for op in ops],
                                              time_s=seconds.to_numpy())


def _point_rows(points: list[dict], seconds: pd.Series) -> pd.DataFrame:
    from mtpsim.calibration.grid import op_of
    ops = [op_of("attention", p, ACT) for p in points]
    df = pd.DataFrame(points).assign(flops=[op.flops for op in ops], bytes=[op.bytes for op in ops],
                                     time_s=seconds.to_numpy())
    # windowed rows whose visible KV is capped repeat a shape: their median
    return df.groupby([c for c in df.columns if c not in ("flops", "bytes", "time_s")], as_index=False).median()
