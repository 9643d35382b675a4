"""The calibration grid: which shapes `mtpsim calibrate` times, per op family and device.

Every measured row is built as the simulator's own `Op` (mtpsim/costs/ops.py), so its flops and
bytes columns are the ones the cost model prices with; the torch side (kernels.py) runs the
same shape. Torch-free: the benchmark, the converter and the tests read it. Whole layers: which
ones are timed is decided here (`layer_grid`); what a layer row is, and its ops, in
mtpsim/costs/layer.py, where the cost model reads them.

Axes are log-spaced; the calibrated model interpolates between them (costs/calibrated.py).
A cell whose roofline estimate exceeds `max_point_s` is skipped (compute-bound GEMMs that big
are priced by the roofline scaled by the nearest measured efficiency). The grid is a product
over the axes of each *config* (the dims that are not axes: head widths, KV heads, expert
width), one config per line below.

CPU: sized for the verification mode (catalog models shrunk to hidden 128..1024, 1-4 layers,
<= 8 experts, batch 1..16, 1..8 query tokens, KV 64..4096, fp32). CUDA: the catalog's shapes
at tp 1..8, token counts 1..8192, KV up to 128k, bf16.
"""
from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from mtpsim.costs import ops as O
from mtpsim.costs.layer import LAYER_KINDS
from mtpsim.specs import AttentionSpec, FFNSpec

P2 = lambda lo, hi: tuple(2 ** i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1))  # noqa: E731
P4 = lambda lo, hi: P2(lo, hi)[::2]  # noqa: E731  (every other power of two, from lo)


@dataclass(frozen=True)
class Config:
    """One family table: fixed `keys` and `dims`, a product over `axes` (name -> values)."""

    family: str
    keys: dict
    dims: dict
    axes: dict

    def points(self):
        names = list(self.axes)
        for values in itertools.product(*self.axes.values()):
            yield {**self.keys, **self.dims, **dict(zip(names, values))}


DTYPE = {"cpu": "fp32", "cuda": "bf16"}  # what each device's profile is measured in


def grid(device: str, quick: bool) -> list[Config]:
    """The configs to time on `device` ("cpu" | "cuda"); `quick` thins every axis."""
    g = _cuda_grid() if device == "cuda" else _cpu_grid()
    return [_thin(c) for c in g] if quick else g


def _cpu_grid() -> list[Config]:
    dt = "fp32"
    tokens, kv = P2(1, 8192), P2(64, 4096)
    att = dict(batch=P2(1, 16), q=P2(1, 8), kv=kv, heads=P2(1, 16))
    return [
        Config("gemm", {}, {"dtype": dt}, dict(m=tokens, k=P2(16, 4096), n=P2(8, 16384))),
        Config("lm_head", {"kind": "full"}, {"dtype": dt}, dict(m=P2(1, 256), k=P2(128, 1024), n=P2(1024, 131072))),
        Config("lm_head", {"kind": "expand"}, {"dtype": dt}, dict(m=P2(1, 64), k=P2(16, 512), n=P2(256, 4096))),
        # head widths of the catalog's attention kinds (SDPA takes another path when K and V
        # widths differ, so each geometry is measured rather than scaled)
        *[Config("attention", {"kind": "gqa"}, {"kv_heads": kvh, "head_dim": hd, "v_head_dim": vd},
                 {**att, "heads": P2(kvh, 16)}) for kvh, hd, vd in ((1, 128, 128), (2, 128, 128), (1, 192, 128), (1, 256, 256))],
        *[Config("attention", {"kind": "swa"}, {"kv_heads": 1, "head_dim": hd, "v_head_dim": vd}, {**att, "kv": P2(64, 1024)})
          for hd, vd in ((128, 128), (192, 128), (256, 256))],
        *[Config("attention", {"kind": "frozen"}, {"kv_heads": 1, "head_dim": hd, "v_head_dim": hd}, att) for hd in (256, 512)],
        *[Config("attention", {"kind": "mla"}, {"kv_heads": 1, "head_dim": 64 + lora, "v_head_dim": lora}, att)
          for lora in (32, 64)],  # DeepSeek-V3 shrunk 1/16 and 1/8: kv_lora 32, 64; rope 64
        # prompts from an empty cache (the loop's prefill: q tokens a request over q slots)
        Config("prefill_attention", {"kind": "gqa"}, {"kv_heads": 2, "head_dim": 128, "v_head_dim": 128},
               dict(batch=P2(1, 4), q=P2(128, 1024), heads=P2(2, 16))),
        *[Config("prefill_attention", {"kind": "mla"}, {"kv_heads": 1, "head_dim": 64 + lora, "v_head_dim": lora},
                 dict(batch=P2(1, 4), q=P2(128, 1024), heads=P2(1, 16))) for lora in (32, 64)],
        Config("moe", {}, {"dtype": dt, "inter": 128, "num_experts": 8},
               dict(tokens=P2(1, 512), touched=P2(1, 8), top_k=P2(1, 8), d=P2(128, 1024))),
        Config("elementwise", {}, {"d": 256}, dict(tokens=P2(1, 8192))),
        Config("pass", {}, {"d": 256}, dict(batch=P2(1, 16), q=P2(1, 8), kv=P4(64, 4096))),
        Config("argmax", {}, {}, dict(m=P2(1, 256), n=P2(1024, 131072))),
    ]


def _cuda_grid() -> list[Config]:
    """Coarser (4x steps on the long axes) so the whole grid runs in about 5 minutes on an H200."""
    dt = "bf16"
    tokens = P2(1, 8192)
    att = dict(batch=P4(1, 256), q=P2(1, 8), kv=P4(128, 131072), heads=(8, 32, 128))
    return [
        Config("gemm", {}, {"dtype": dt}, dict(m=tokens, k=P4(256, 16384) + (32768,), n=P4(256, 65536))),
        Config("lm_head", {"kind": "full"}, {"dtype": dt}, dict(m=P4(1, 4096), k=(1024, 4096, 8192), n=P4(16384, 262144))),
        Config("lm_head", {"kind": "expand"}, {"dtype": dt}, dict(m=P4(1, 1024), k=(256, 1024, 2048), n=(1024, 4096, 8192))),
        Config("attention", {"kind": "gqa"}, {"kv_heads": 8, "head_dim": 128, "v_head_dim": 128}, att),
        Config("attention", {"kind": "swa"}, {"kv_heads": 8, "head_dim": 128, "v_head_dim": 128}, {**att, "kv": P2(128, 2048)}),
        Config("attention", {"kind": "frozen"}, {"kv_heads": 1, "head_dim": 256, "v_head_dim": 256},
               {**att, "heads": (2, 4, 16)}),
        Config("attention", {"kind": "mla"}, {"kv_heads": 1, "head_dim": 576, "v_head_dim": 512},
               {**att, "heads": (16, 64, 128)}),
        Config("prefill_attention", {"kind": "gqa"}, {"kv_heads": 8, "head_dim": 128, "v_head_dim": 128},
               dict(batch=(1, 4, 16), q=P4(128, 8192), heads=(8, 32))),
        Config("prefill_attention", {"kind": "mla"}, {"kv_heads": 1, "head_dim": 576, "v_head_dim": 512},
               dict(batch=(1, 4, 16), q=P4(128, 8192), heads=(16, 64, 128))),
        Config("moe", {}, {"dtype": dt, "inter": 2048, "num_experts": 256},
               dict(tokens=P4(1, 4096), touched=P4(1, 256), top_k=(8,), d=(7168,))),
        Config("elementwise", {}, {"d": 4096}, dict(tokens=tokens)),
        Config("pass", {}, {"d": 4096}, dict(batch=P4(1, 256), q=P2(1, 8), kv=P4(128, 131072))),
        Config("argmax", {}, {}, dict(m=P4(1, 4096), n=P4(16384, 262144))),
    ]


def _thin(c: Config) -> Config:
    """Every other value of each axis, ends kept: the --quick grid."""
    def thin(v):
        return tuple(sorted(set(v[::2]) | {v[-1]})) if len(v) > 2 else v
    return Config(c.family, c.keys, c.dims, {a: thin(v) for a, v in c.axes.items()})


def holdout(c: Config, count: int, seed: int = 0) -> list[dict]:
    """Shapes between the grid's values (log-uniform, rounded), to test interpolation on."""
    rng = np.random.default_rng(seed + zlib.crc32(f"{c.family}{sorted(c.keys.items())}{sorted(c.dims.items())}".encode()))
    points = []
    for _ in range(count):
        p = {**c.keys, **c.dims}
        for a, v in c.axes.items():
            p[a] = int(round(math.exp(rng.uniform(math.log(v[0]), math.log(v[-1]))))) if len(v) > 1 else v[0]
        for a in ("k", "n", "d"):  # model widths are multiples of 8 (the verification mode rounds so)
            if a in c.axes and p[a] >= 16:
                p[a] = p[a] // 8 * 8
        if "kv_heads" in p:  # query heads come in whole groups per KV head
            p["heads"] = max(p["kv_heads"], p["heads"] // p["kv_heads"] * p["kv_heads"])
        points.append(p)
    return points


# ----------------------------------------------------------------------------- ops per point

def op_of(family: str, p: dict, dtype: str) -> O.Op:
    """The simulator's op for one grid point (its flops and bytes go into the profile).
    `dtype` is the profile's: the KV cache's and the activations' as measured."""
    if family in ("gemm", "lm_head"):
        op = O.gemm(family, p["m"], p["k"], p["n"], p["dtype"], family=family, act=dtype)
        return op if family == "gemm" else _with(op, kind=p["kind"])
    if family == "bmm":
        return O.bmm(family, p["m"], p["heads"], p["k"], p["n"], p["dtype"], act=dtype)
    if family == "prefill_attention":  # a prompt of q tokens from an empty cache: the visible KV is q
        return op_of("attention", {**p, "kv": p["q"]}, dtype)
    if family == "attention":  # the KV cache in the point's kv_dtype where it names one
        kv_dtype = p.get("kv_dtype", dtype) if p.get("kv_dtype", "*") != "*" else dtype
        return O.attention_core(attention_spec(p), np.full(p["batch"], p["q"]),
                                np.full(p["batch"], p["kv"] - p["q"]), kv_dtype, tp=1, act=dtype)
    if family == "moe":
        ffn = FFNSpec(kind="moe", num_experts=p["num_experts"], top_k=p["top_k"], expert_intermediate_size=p["inter"])
        op = O.moe_experts(ffn, p["d"], p["tokens"], p["dtype"], O.Parallel(), act=dtype)
        per_expert = op.weight_bytes / op.shape["touched"]
        return O.Op(op.name, "moe", flops=op.flops, weight_bytes=per_expert * p["touched"], act_bytes=op.act_bytes,
                    kernels=op.kernels, dtype=op.dtype, shape={**op.shape, "touched": p["touched"]})
    if family == "elementwise":
        return O.layer_elementwise(p["tokens"], p["d"], dtype)
    if family == "pass":
        return O.pass_frame(p["batch"], p["q"], p["kv"], p["d"])
    if family == "argmax":
        return O.greedy_sample(p["m"], p["n"], dtype)
    raise ValueError(family)


def attention_spec(p: dict) -> AttentionSpec:
    """An AttentionSpec with a grid point's widths. kinds: gqa, swa (window = the visible kv),
    frozen (query-only over another layer's cache), mla (absorbed: head_dim = latent + rope)."""
    if p["kind"] == "mla":
        return AttentionSpec(kind="mla", num_heads=p["heads"], kv_lora_rank=p["v_head_dim"],
                             qk_nope_head_dim=128, qk_rope_head_dim=p["head_dim"] - p["v_head_dim"],
                             v_head_dim=128)
    return AttentionSpec(kind="gqa", num_heads=p["heads"], num_kv_heads=p["kv_heads"], head_dim=p["head_dim"],
                         v_head_dim=p["v_head_dim"], window=p["kv"] if p["kind"] == "swa" else None,
                         kv_source="target_last_full" if p["kind"] == "frozen" else None)


def _with(op: O.Op, **shape) -> O.Op:
    return O.Op(op.name, op.family, op.flops, op.weight_bytes, op.kv_bytes, op.act_bytes, op.comm_bytes,
                op.kernels, op.dtype, {**op.shape, **shape})


# ----------------------------------------------------------------------------- whole layers

def layer_grid(device: str, quick: bool) -> list[dict]:
    """Whole layers to time: kind (costs/layer.py LAYER_KINDS) x width scale x batch x query
    tokens x KV length."""
    if device == "cuda":
        axes = dict(scale=(1.0,), batch=(1, 8, 64), q=(1, 4), kv=(1024, 8192))
    else:
        axes = dict(scale=(0.0625, 0.125, 0.25), batch=(1, 4, 16), q=(1, 4), kv=(256, 2048))
    if quick:
        axes = {a: v[:1] + v[-1:] if len(v) > 1 else v for a, v in axes.items()}
    return [dict(layer=kind, **dict(zip(axes, vals))) for kind in LAYER_KINDS for vals in itertools.product(*axes.values())]
