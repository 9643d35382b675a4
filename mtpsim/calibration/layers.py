"""Whole decoder layers, timed as the verification mode runs them: torchkit's `DecoderLayer`
(mtpsim/torchkit/layers.py) with random weights, its KV slots and a `Batch` of B requests x q new
tokens after kv - q cached (visible kv; a query-only assistant layer reads kv cached tokens of
another layer's cache). The measured time against the sum of the layer's op predictions gives
the per-layer glue (views, transposes, cat, index building) no op prices.

The pass's mask and rotary tables are built once (the first, untimed call) and reused, as the
layers of one pass share them: they are per-pass work, not per-layer.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from mtpsim.calibration.kernels import MAX_PASS
from mtpsim.calibration.timing import MAX_SETS, Pool
from mtpsim.costs.layer import LAYER_KINDS, layer_spec
from mtpsim.torchkit.cache import Batch, KVSlots
from mtpsim.torchkit.layers import DecoderLayer


def layer_case(row: dict, pool: Pool):
    """Rotated (layer, storage, input) instances and a call running one layer forward."""
    d, att, ffn = layer_spec(row["layer"], row["scale"])
    query_only = LAYER_KINDS[row["layer"]][3]
    B, q, kv, dev = row["batch"], row["q"], row["kv"], pool.device
    if query_only:
        batch = Batch.at(np.full(B, kv), q, dev, limit=np.full(B, kv))
    else:
        batch = Batch.at(np.full(B, kv - q), q, dev)

    def make():
        with torch.device(dev):
            layer = DecoderLayer(att, ffn, d, query_only).to(pool.dtype).eval().requires_grad_(False)
        if query_only:  # the source layer's cache (frozen-KV assistants read the target's):
            vd = att.v_head_dim or att.head_dim  # a sliding source keeps a ring of window + MAX_PASS
            slots = min(kv + q, att.window + MAX_PASS) if att.window else kv + q
            storage = KVSlots(B, att.num_kv_heads, slots, att.head_dim, vd, pool.dtype, dev)
        else:
            storage = layer.new_storage(B, kv + MAX_PASS, MAX_PASS, pool.dtype, dev)
        tensors = [*layer.parameters(), storage.k] + ([storage.v] if storage.v is not None else [])
        return (layer, storage, pool.rand(B, q, d)), sum(t.numel() for t in tensors) * pool.element_bytes
    first, size = make()
    count = max(1, min(MAX_SETS, math.ceil(pool.rotate_bytes / max(size, 1))))
    sets = [first] + [make()[0] for _ in range(count - 1)]

    def run(s):
        with torch.inference_mode():
            return s[0](s[2], batch, s[1])
    return sets, run
