"""One GPU's routed experts under wide expert parallelism (DeepEP), priced by its own shape.

Under wide EP (`dp_attention.wide_ep`: ep == tp, SGLang's `--moe-a2a-backend deepep`, formerly
`--enable-deepep-moe`) each GPU receives only the routed copies meant for its experts and runs one
grouped GEMM over them, so its work is set by its experts and the tokens each of them gets:
E / ep experts, T * k / E tokens each (T: the tokens of all ranks together). The generic MoE
table cannot price that: its rows at E / ep experts were timed through the gathered-TP kernel,
which walks every token of the batch whatever it routes to (aiconfigurator-core 0.12.0,
h100_sxm sglang 0.5.14 `moe_perf`: 4 experts per GPU at 16,384 tokens take 9.9 ms, 18 TFLOP/s).
A profile's `moe_wide_ep` rows (calibration/aic_rows.py `wide_ep_moe_rows`) are SGLang's DeepEP
expert kernels timed by aiconfigurator's collectors, keyed by that per-GPU shape, by mode:

- `ll`: DeepEP low-latency dispatch feeds DeepGEMM's masked grouped GEMM, the CUDA-graph
  capturable pair SGLang runs in decode;
- `normal`: normal dispatch feeds the contiguous grouped GEMM, which cannot be captured, run in
  prefill (LMSYS, "Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism
  on 96 H100 GPUs", 2025-05-05, lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md,
  "Expert Parallelism with DeepEP" and "DeepGEMM Integration": normal mode is not CUDA-graph
  compatible, low-latency mode is).

The mode is read off the pass: one in CUDA graphs runs `ll`, an eager one `normal`. That is
SGLang's `auto` mode (low latency unless the batch extends, i.e. prefills) except for a decode
batch above the largest captured graph, which SGLang still runs in low latency and this prices
as normal. A point between the measured ones is interpolated (`calibrated`), another expert
width or dtype scales the nearest config's time by roofline work (`calibrated-scaled`), a point
outside the grid the nearest cell's (`roofline-scaled`), as calibrated.py does for every family;
the source carries `:deepep-ll` or `:deepep-normal`. A profile without the rows (every engine but
SGLang, older conversions) prices the op as before.

Expert load is not uniform: every rank waits for the busiest, so the experts and the all-to-all
are priced at its routed tokens, `ep_imbalance` times the mean (dp_attention.mlp_ops), from a
published measurement unless the scenario gives one (`ep_imbalance`, below); where neither
applies, the busiest rank under uniform random routing, which at a few tokens a rank is well
above the mean (ffn.py `routed_imbalance`). Torch-free.
"""
from __future__ import annotations

import math

from mtpsim.costs import dp_attention
from mtpsim.costs.ops import Op, Parallel
from mtpsim.costs.tables import interpolate, nearest_cell, scaled

FAMILY = "moe_wide_ep"

# The busiest EP rank's routed tokens over the mean, DeepSeek-R1 with EP32 on 32 GB200 GPUs over a
# machine-translation dataset, averaged over layers and iterations: imbalance ratio (max - mean) /
# mean 1.564 without EPLB, 0.109 with EPLB's 288 slots (9 per rank), 0.115 with 8 per rank at EP36
# (TensorRT-LLM docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md,
# "E2E evaluation", Table 1). EPLB there was fitted on the data it ran on, as LMSYS's was.
NO_EPLB_IMBALANCE = 2.564
EPLB_IMBALANCE = 1.109
MEASURED_RANKS = 32  # the narrowest EP the figure was measured at; below it no figure: uniform


def ep_imbalance(given: float | None, eplb: bool, par: Parallel) -> float | None:
    """Max / mean routed tokens per EP rank for layout `par`: `given` (cost.ep_imbalance) when
    set; else, for wide EP over at least MEASURED_RANKS ranks, the figure above with or without
    EPLB (engine.eplb); else None: no published figure for narrower EP, and the busiest rank is
    uniform routing's own (ffn.py `routed_imbalance`, by the pass's tokens)."""
    if given is not None:
        return given
    if par.attention_dp == 1 or not dp_attention.wide_ep(par) or par.ep < MEASURED_RANKS:
        return None
    return EPLB_IMBALANCE if eplb else NO_EPLB_IMBALANCE


def wide_ep_time(costs, op: Op, graphs: bool) -> tuple[float, str] | None:
    """(seconds, source) of a wide-EP op (experts, or dispatch + combine) from the profile's DeepEP
    rows; None for any other op, or where the rows do not answer (the caller prices it as before)."""
    if is_wide_ep_experts(op):
        return wide_ep_moe_time(costs, op, graphs)
    if is_wide_ep_dispatch(op):
        return dispatch_combine_time(costs, op, graphs)
    return None


def is_wide_ep_experts(op: Op) -> bool:
    """Whether `op` is one GPU's routed experts under wide EP (dp_attention.mlp_ops marks it)."""
    return op.family == "moe" and bool(op.shape.get("wide_ep"))


def per_gpu_shape(op: Op) -> dict:
    """The axes a `moe_wide_ep` row is keyed by: experts on this GPU, routed tokens per expert."""
    s = op.shape
    experts = s["num_experts"]  # already E / ep (ops.moe_experts)
    return {"experts": experts, "tokens_per_expert": s["tokens"] * s["top_k"] / (experts * s["ep"])}


def wide_ep_moe_time(costs, op: Op, graphs: bool) -> tuple[float, str] | None:
    """(seconds, source) of a wide-EP experts op from the profile's DeepEP rows, never below the
    op's bytes at the best measured stream (as CalibratedCosts.predict); None without rows."""
    if FAMILY not in costs.tables:
        return None
    mode = "ll" if graphs else "normal"
    s = op.shape
    table, exact, _ = costs._table(FAMILY, (mode,), {"dtype": s["dtype"], "inter": s["inter"], "d": s["d"]})
    if table is None:
        return None
    x, work = per_gpu_shape(op), costs.work_s(op)
    hit = interpolate(table, x)
    if hit is not None and exact and hit.measured:
        t, kind = math.exp(hit.log_t), "calibrated"
    else:
        log_t, log_w = hit[:2] if hit is not None else nearest_cell(table, x)
        t = scaled(table, math.exp(log_t), math.exp(log_w), work)
        kind = "calibrated-scaled" if hit is not None else "roofline-scaled"
    label = f":deepep-{mode}"
    floor = op.bytes / costs.peak_bytes if costs.stream_floor else 0.0
    return (floor, kind + "-floored" + label) if t < floor else (t, kind + label)


# ----------------------------------------------------------------------------- dispatch + combine

A2A_FAMILY = "alltoall_wide_ep"


def is_wide_ep_dispatch(op: Op) -> bool:
    """Whether `op` is DeepEP's dispatch + combine of a wide-EP layer (dp_attention.mlp_ops marks it)."""
    return op.family == "alltoall" and bool(op.shape.get("wide_ep"))


def dispatch_combine_time(costs, op: Op, graphs: bool) -> tuple[float, str] | None:
    """(seconds, source) of DeepEP's dispatch + combine from the profile's `alltoall_wide_ep`
    rows (calibration/aic_deepep.py: DeepEP unit timings over 1-8 nodes of 8 GPUs), in the
    pass's mode (`ll` in CUDA graphs, else `normal`, as for the experts). Used where those rows
    answer for the op's mode: every low-latency op across nodes, every normal-mode op (one
    node's low-latency rows stay with the `alltoall` family of the current release). A rank
    count not timed takes the nearest one timed (in log ranks; the source says `-ranksN`):
    DeepEP's time per rank is set by the tokens it sends and receives over its own NVLink and
    NIC, and the share of them that crosses nodes, (n - 1) / n of n nodes, moves little past
    2 nodes (7/8 at 8 nodes, 8/9 at 9). Tokens beyond the grid scale by bytes from the nearest
    timed count (`roofline-scaled`). None where the rows do not answer."""
    mode = "ll" if graphs else "normal"
    s = op.shape
    by_ranks = {keys[1]: keys for keys in costs.tables.get(A2A_FAMILY, {}) if keys[0] == mode}
    if not by_ranks or (mode == "ll" and s.get("nodes", 1) == 1):
        return None
    ranks = min(by_ranks, key=lambda r: (abs(math.log(r / s["ranks"])), -r))
    table, exact, _ = costs._table(A2A_FAMILY, by_ranks[ranks], {"d": s["d"], "top_k": s["top_k"]})
    if table is None:
        return None
    x = {"tokens": s["tokens"]}
    hit = interpolate(table, x)
    if hit is not None and exact:
        t, kind = math.exp(hit.log_t), "calibrated"
    else:
        log_t, log_w = hit[:2] if hit is not None else nearest_cell(table, x)
        t = scaled(table, math.exp(log_t), math.exp(log_w), op.comm_bytes / costs.peak_bytes)
        kind = "calibrated-scaled" if hit is not None else "roofline-scaled"
    return t, f"{kind}:deepep-{mode}" + ("" if ranks == s["ranks"] else f"-ranks{ranks}")
