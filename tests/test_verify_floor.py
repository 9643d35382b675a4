"""A verify is never cheaper than the decode it replaces, whatever table prices it.

A verify of k + 1 tokens per request reads every byte of KV and weights the decode step of the
same batch and context reads, and computes more. Its attention is priced from the decode rows
extrapolated in q (costs/calibrated.py), the decode's from those rows directly, so the two take
different roads through a profile's tables; past the measured grid they once parted (a verify at
8k context on A100 priced at half the decode's attention). These cases sweep batch and context
past the grids of six committed GPU profiles (seven cases), three engines and every attention kind they serve
(GQA, MHA, MLA, sliding + full with mixed head sizes).
"""
from __future__ import annotations

import contextlib
import io

import pytest

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.report import op_table

CASES = ["p3-eagle3-llama-8b-h100",            # h100-sxm-sglang, GQA, EAGLE-3 draft
         "p4-meta-mtp-7b",                     # a100-80g-sglang, MHA, parallel heads
         "d6-gemma-4-31b-dflash-vllm-h100",    # h100-sxm-vllm, sliding 256 + full 512 heads, block drafter
         "s2-qwen3-235b-a22b-eagle3-sglang-h200-gsm8k",  # h200-sglang, MoE
         "p2-deepseek-v3-sglang",              # h200-sglang, MLA + MoE, nextn
         "l2-deepseek-r1-b200-dynamo-trt-mtp",  # b200-trtllm, MLA + MoE (NVFP4), nextn
         "d5-qwen3-8b-dflash-sglang-b200-conc1"]          # b200-sglang, block of 16


@pytest.fixture(scope="module", params=CASES)
def priced(request):
    with contextlib.redirect_stderr(io.StringIO()):  # the cases' own warnings (engine rules) are not checked here
        s = sc.load(f"scenarios/published/{request.param}.yaml", [])[0]
    return build_pricer(s), DesignShape.of(s.speculative)


@pytest.mark.parametrize("batch", [1, 16, 256])
@pytest.mark.parametrize("context", [512, 16384, 131072])
def test_verify_costs_at_least_the_decode_of_the_same_batch_and_context(priced, batch, context):
    pricer, design = priced
    spec, plain = op_table(pricer, design, batch, context), op_table(pricer, DesignShape("none"), batch, context)
    verify, decode = spec[spec["pass"] == "verify:target"], plain[plain["pass"] == "decode:target"]
    assert len(verify) and len(decode)
    attention = [t[t.op == "attn.core"].time_ms.sum() for t in (verify, decode)]
    assert attention[0] >= attention[1] * (1 - 1e-9), attention
    assert verify.time_ms.sum() >= decode.time_ms.sum() * (1 - 1e-9)
