"""MoE experts priced from the measured tables where the op's routing or config was not timed
(costs/calibrated.py `_table`, tables.along_work): more tokens never cost less, and a model whose
expert count no table holds reads the config timed at its own top-k and width.

Campaign 30 found both: DeepSeek-V3's 3-token verify on H200 (SGLang) priced its experts below its
2-token verify's (a whole 2-step iteration cheaper than a 1-step one), and Step-3.5-Flash's 288
experts top-8 on H200 read a 256-expert top-22 config timed at a fifth of the bandwidth, its
experts 4x what vLLM's tables give the same op."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape, iteration_passes


def _pricer(model, engine="sglang", tp=8, design="nextn", steps=1, ep=1):
    s = sc.validate({"name": "m", "model": model, "hardware": "h200", "parallel": {"tp": tp, "ep": ep},
                     "engine": {"kind": engine},
                     "speculative": {"design": design, "steps": steps} if design != "none" else {"design": "none"},
                     "acceptance": {"per_depth": [0.8] * steps} if design != "none" else {}})
    return s, build_pricer(s)


def _experts_ms(pricer, shape, tokens: int, kv: int = 2048) -> tuple[float, str]:
    cost = pricer.price(shape, np.full(1, tokens), np.full(1, kv), keep_ops=True)
    rows = [(t.total_s, t.source) for op, t, _ in cost.ops if op.name == "moe.experts"]
    return rows[0][0] * 1e3, rows[0][1]


@pytest.mark.parametrize("model, engine, ep", [("deepseek-v3", "sglang", 1), ("deepseek-v3.2", "sglang", 1),
                                               ("mimo-v2-flash", "sglang", 1),
                                               # EP8: the busiest rank's share of 3 tokens outruns the 4-token row
                                               ("deepseek-v3", "vllm", 8)])
def test_a_verify_of_more_tokens_never_prices_its_experts_cheaper(model, engine, ep):
    times = []
    for steps in range(1, 7):  # a verify of steps + 1 tokens
        s, pricer = _pricer(model, engine, steps=steps, ep=ep)
        verify = [p for p in iteration_passes(DesignShape.of(s.speculative)) if p.kind == "verify"][0]
        times.append(_experts_ms(pricer, verify, steps + 1)[0])
    assert all(b >= a * (1 - 1e-9) for a, b in zip(times, times[1:])), times


def test_a_config_no_table_holds_reads_the_one_timed_at_its_top_k_and_width():
    """Step-3.5-Flash (288 experts, top-8, 4096 wide; no profile times 288): its experts on one
    H200 under SGLang cost within 1.5x of vLLM's tables for the same op, at one request and 64."""
    for batch in (1, 64):
        times = []
        for engine in ("sglang", "vllm"):
            s, pricer = _pricer("step-3.5-flash", engine, tp=8, design="none")
            decode = iteration_passes(DesignShape.of(s.speculative))[0]
            cost = pricer.price(decode, np.full(batch, 1), np.full(batch, 2048), keep_ops=True)
            times.append(sum(t.total_s for op, t, _ in cost.ops if op.name == "moe.experts"))
        assert 1 / 1.5 < times[0] / times[1] < 1.5, (batch, times)


def test_a_config_timed_far_below_its_neighbours_is_not_the_one_read():
    """h200-trtllm's BF16 experts at 256 x 256 ran at 0.56 TB/s beside configs at 2-4 TB/s:
    Step-3.5-Flash (288 experts) read it as its nearest and priced its experts at 4x their bytes at
    the GPU's peak. Of the three nearest configs the middling-speed one is read: within 1.5x of the
    roofline's experts, at 16 requests and 64."""
    for batch in (16, 64):
        times = []
        for model in ("calibrated", "roofline"):
            s = sc.validate({"name": "m", "model": "step-3.5-flash", "hardware": "h200", "parallel": {"tp": 4},
                             "engine": {"kind": "trtllm"}, "speculative": {"design": "none"},
                             "cost": {"model": model}})
            decode = iteration_passes(DesignShape.of(s.speculative))[0]
            cost = build_pricer(s).price(decode, np.full(batch, 1), np.full(batch, 1024), keep_ops=True)
            times.append(sum(t.total_s for op, t, _ in cost.ops if op.name == "moe.experts"))
        assert times[0] < 1.5 * times[1], (batch, times)
