"""The strict base every catalog spec shares (specs.py's model, layer_specs.py's kinds,
hardware_spec.py's GPU, engines.py's engine) and the size limits they hold: unknown keys are
errors, types are strict and floats finite."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mtpsim.sections import Frozen

Dtype = Literal["fp32", "bf16", "fp16", "fp8", "fp4"]
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5}


# Size limits: past any real model (the largest catalogued: 128 heads, 61 layers, a 262k vocab, 1M context)
# by orders of magnitude, and small enough that expanding layers or pricing experts cannot hang or overflow
MAX_LAYERS = 4096          # per layer group, per model, MTP layers
MAX_WIDTH = 2**20          # hidden, FFN and head widths, low ranks
MAX_HEADS = 2**14
MAX_EXPERTS = 2**16
MAX_VOCAB = 2**24
MAX_CONTEXT = 2**26        # max_context and attention windows, in tokens
MAX_KINDS = 64             # attention kinds, FFN kinds: each is priced on its own, every iteration


class Spec(Frozen, BaseModel):
    """Base for catalog specs: unknown keys are errors, specs are immutable, types are strict
    (no `true` for 1, no "8" for 8) and floats finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
