"""Host time per iteration: what the decode loop spends outside its passes (acceptance,
rollback, emitted-token bookkeeping, the next drafts) per design and batch.

A calibration step that runs the verification loop: torchkit's `measure` (mtpsim/torchkit/measure.py),
the very loop `mtpsim verify` times, on models shrunk by the one shrink rule (mtpsim/shrink.py),
so the host time a profile carries is the host time verification pays.

Each design's loop runs on a tiny catalog model (1/16 width, 2 layers, 64-token prompts,
forced acceptance from a fixed profile); host time = iteration wall time - the timed passes,
the median over iterations. Written to meta.yaml `host_s` (design -> batch -> seconds); the
calibrated cost model's `host_s(design, batch)` reads it.
"""
from __future__ import annotations

import numpy as np
import torch

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.catalog import load_model
from mtpsim.schema import Verify
from mtpsim.shrink import shrink_assistant, shrink_model
from mtpsim.torchkit.measure import Setup, measure

# design -> (catalog model, assistant or None)
DESIGNS = {"none": ("deepseek-v3", None), "nextn": ("deepseek-v3", None),
           "multi_layer": ("mimo-v2-flash", None), "frozen_kv": ("gemma-4-e2b", "gemma-4-e2b-assistant")}
BATCHES = {"cpu": (1, 4, 16), "cuda": (1, 8, 64)}
STEPS, PROMPT, ITERATIONS, WARMUP = 3, 64, 20, 3


def host_times(device: str, dtype: str) -> dict:
    """{design: {batch: seconds}} measured on `device` in `dtype` ("fp32" | "bf16")."""
    verify = Verify(num_layers=2, hidden_scale=0.0625, num_experts=8)
    profile = AcceptanceProfile((0.8, 0.6, 0.4))
    out = {}
    for design, (name, assistant) in DESIGNS.items():
        model = shrink_model(load_model(name), verify, dtype)
        helper = shrink_assistant(load_model(assistant), model, verify, dtype) if assistant else None
        steps = STEPS if design != "none" else 0
        out[design] = {}
        for batch in BATCHES[device]:
            setup = Setup(model, helper, design, steps, [PROMPT] * batch, ITERATIONS, WARMUP,
                          profile=profile if steps else None, device=device, dtype=dtype)
            it = measure(setup).iterations
            host = it.iteration_s - it[["draft_s", "verify_s", "extend_s"]].sum(axis=1)
            out[design][batch] = float(f"{max(0.0, float(np.median(host))):.4g}")
    torch.manual_seed(0)
    return out
