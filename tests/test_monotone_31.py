"""Campaign 31 (b): a physical-monotonicity audit of the cost model over the whole catalog (28
targets x 11 GPUs x 3 engines x tp 1-8, ep = tp for MoE; 420k passes priced over batch, context
and verify width). No op was priced faster than its bytes or flops at the GPU's peak. Fixed here,
each a pass that more work made cheaper:

- a MoE table's outlier row (b200-vllm, gpt-oss-120b's experts at 4 tokens: 1,647 us between 69
  and 142) survived the spike check, the table being timed along a diagonal with no grid
  neighbours, and the running maximum carried it: decode 9x slow from batch 4 on
  (table_build._despike_diagonal);
- `tables.along_work` read a 64-token decode's experts off compute-bound rows of thousands of
  tokens where its bytes outran the decode rows: Step-3.5-Flash's experts at 64 tokens cost 3x
  their 128-token time (the curve is now the bracketing token counts' rows);
- an extrapolated verify of another config's attention table (Gemma 4's 512-wide global heads on
  A100's 128-wide rows) scaled from the op's own work, not the cell's: a 2-token verify cost 41%
  less than the decode.

Left alone, as the audit's report gives them: attention of another config scaled point by point
along the context can fall a few percent as the context grows (the fixed work of the op's own
shape shrinking the ratio); b200-vllm's fp8 GEMM rows at m = 1 (~25 us, about half of them) lift
every decode GEMM ~2.5x over h200's through the running maximum (measured data, kept); gb300's
8-rank all-reduce at 27-29 us (NVL72 trays hold 4 GPUs: tp 8 crosses trays) against gb200's
roofline, which has no 8-rank rows.
"""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape, iteration_passes


def _scenario(model, hardware, engine, tp, design="none", steps=1, ep=1, draft=None):
    spec = {"design": design, "steps": steps} if design != "none" else {"design": "none"}
    if draft:
        spec["draft"] = draft
    return sc.validate({"name": "m", "model": model, "hardware": hardware, "engine": {"kind": engine},
                        "parallel": {"tp": tp, "ep": ep}, "speculative": spec,
                        "acceptance": {"per_depth": [0.8] * steps} if design != "none" else {}})


def _pass_ms(s, kind: str, batch: int, q: int, kv: int) -> float:
    shape = next(p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == kind)
    return build_pricer(s).price(shape, np.full(batch, q), np.full(batch, kv)).time_s * 1e3


@pytest.mark.parametrize("model, hardware, engine, tp", [
    ("gpt-oss-120b", "b200", "vllm", 4),           # the outlier row
    ("step-3.5-flash", "b300", "sglang", 4),       # the compute-bound rows
    ("deepseek-v3", "h200", "sglang", 8),
])
def test_a_decode_of_a_larger_batch_never_costs_less(model, hardware, engine, tp):
    s = _scenario(model, hardware, engine, tp)
    times = [_pass_ms(s, "decode", b, 1, 2048) for b in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert all(b >= a * (1 - 1e-6) for a, b in zip(times, times[1:])), times


@pytest.mark.parametrize("model, tp", [("gemma-4-31b", 1), ("gemma-4-26b-a4b", 1)])
def test_a_verify_of_another_configs_table_costs_no_less_than_its_decode(model, tp):
    s = _scenario(model, "a100-80g", "sglang", tp, "frozen_kv", draft=f"{model}-assistant")
    decode = _pass_ms(_scenario(model, "a100-80g", "sglang", tp), "decode", 16, 1, 2048)
    verify = _pass_ms(s, "verify", 16, 2, 2048)
    assert verify >= decode, (verify, decode)
