"""Where in a calibrated profile an op is looked up: its family, the table keys and fixed dims
that pick a table (`lookup_point`), the nearest measured config when its own was not
(`dims_match`, `dims_distance`), the stand-in tables a family without its own borrows
(`stand_in_tables`), and the reference shape of an extrapolation (`fewer_queries`).
calibrated.py prices the op from what these find.
"""
from __future__ import annotations

import math

from mtpsim.costs.op import MLA_ABSORB_MAX_Q, Op
from mtpsim.costs.profile import ANY, FAMILIES

COMM = ("allreduce", "alltoall", "collective")


def lookup_point(op: Op, kv_key: str = "kv_tokens"):
    """(family, keys, dims, axis values) of an op, or None when no profile family prices it.
    Attention's kv: the mean visible length (`kv_tokens`: the sum over requests, as a paged kernel
    reads) or the batch's longest (`kv_max`: a padded batch, as the verification loop reads)."""
    s = op.shape
    if op.family in ("gemm", "lm_head"):
        keys = (s["kind"],) if op.family == "lm_head" else ()
        return op.family, keys, {"dtype": s["dtype"]}, {"m": s["m"], "k": s["k"], "n": s["n"]}
    if op.family == "bmm":
        return "bmm", (), {"dtype": s["dtype"], "k": s["k"], "n": s["n"]}, {"m": s["m"], "heads": s["heads"]}
    if op.family == "attention":
        kind = "mla" if s["kind"] == "mla" else "frozen" if s["query_only"] else "swa" if s["window"] else "gqa"
        dims = {d: s[d] for d in FAMILIES["attention"].dims}
        kv = s["kv_max"] if kv_key == "kv_max" else s["kv_tokens"] / s["batch"]
        return "attention", (kind,), dims, {"batch": s["batch"], "q": s["q"], "kv": kv, "heads": s["heads"]}
    if op.family == "moe":
        return "moe", (), {d: s[d] for d in FAMILIES["moe"].dims}, {a: s[a] for a in FAMILIES["moe"].axes}
    if op.family == "allreduce":
        return "allreduce", (s["ranks"],), None, {"bytes": s["bytes"]}
    if op.family == "collective":  # NCCL reduce-scatter / all-gather (comms.attn_tp_scatter_gather)
        return "collective", (s["op"], s["ranks"]), None, {"bytes": s["bytes"]}
    if op.family == "alltoall":
        return "alltoall", (s["ranks"],), {"d": s["d"], "top_k": s["top_k"]}, {"tokens": s["tokens"]}
    if op.family in ("pass", "argmax"):
        return op.family, (), None, {a: s[a] for a in FAMILIES[op.family].axes}
    if op.family == "state" and s.get("kind") == "linear":  # Gated DeltaNet: a verify reads the decode rows
        phase = "prefill" if s["q"] > MLA_ABSORB_MAX_Q else "decode"
        return "linear_state", (phase,), {d: s[d] for d in FAMILIES["linear_state"].dims}, \
            {"batch": s["batch"], "q": s["q"]}
    if op.family == "hyper_connection" and "iters" in s:  # DeepSeek-V4's mHC (the gated residual's: the roofline)
        return "hyper_connection", (s["kind"],), {"d": s["d"], "hc": s["hc"], "iters": s["iters"]}, {"tokens": s["tokens"]}
    if op.family == "elementwise":  # looked up by element count, tokens x d, at the grid's width
        return "elementwise", (), None, {"elements": s["tokens"] * s["d"]}
    return None


def dims_match(table_dims: dict, dims: dict) -> bool:
    return all(v == ANY or v == dims[k] for k, v in table_dims.items())


def dims_distance(a: dict, b: dict) -> float:
    return sum(0.0 if a[k] == ANY else abs(math.log(a[k] / b[k])) if isinstance(a[k], (int, float))
               else float(a[k] != b[k]) for k in a)


def fewer_queries(op: Op, share: float) -> Op:
    """An attention op with `share` of its query tokens over the same KV: flops and query
    activations scale, the KV read does not (the reference shape of an extrapolation). Only
    its work is read, so the shape dict is shared rather than copied."""
    return Op(op.name, op.family, op.flops * share, op.weight_bytes, op.kv_bytes, op.act_bytes * share,
              op.comm_bytes, op.kernels, op.dtype, op.shape)


def stand_in_tables(tables: dict, family: str, keys: tuple) -> tuple[list, str]:
    """The tables for (family, keys) among a profile's `tables`, else a stand-in's and its label:
    GQA decode rows for query-only and sliding-window attention, GEMM rows for an LM head."""
    found = tables.get(family, {}).get(keys)
    if found:
        return found, ""
    if family == "attention" and keys[0] in ("frozen", "swa") and tables.get("attention", {}).get(("gqa",)):
        return tables["attention"][("gqa",)], ":gqa"
    if family == "lm_head" and "lm_head" not in tables and tables.get("gemm", {}).get(()):
        return tables["gemm"][()], ":gemm"
    return [], ""
