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


@pytest.mark.parametrize("case", ["p2-deepseek-v3-sglang", "l2-deepseek-r1-b200-dynamo-trt-mtp",   # MLA
                                  "p3-eagle3-llama-8b-h100", "s2-qwen3-235b-a22b-eagle3-sglang-h200-gsm8k"])  # GQA
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_a_verify_past_64_queries_a_request_stays_on_the_decode_path(case, batch):
    """A tree verify of 65 tokens a request costs at least one of 64: the engines run verify
    passes on their decode path however long (AttentionKernel `decode_path`). Past 64 queries a
    request the cores were once priced as a prompt's: MLA unabsorbed from the prefill rows, 2.7x
    cheaper than at 64 on H200 (DeepSeek-V3, batch 4, 2k context), GQA 2-7% cheaper."""
    with contextlib.redirect_stderr(io.StringIO()):
        s = sc.load(f"scenarios/published/{case}.yaml", [])[0]
    pricer = build_pricer(s)
    widths = []
    for draft_tokens in (64, 65):  # verify width = draft tokens: a tree of topk 8 over 8 steps and more
        t = op_table(pricer, DesignShape("nextn", 8, 8, draft_tokens), batch, 2000)
        verify = t[t["pass"] == "verify:target"]
        widths.append((verify[verify.op == "attn.core"].time_ms.sum(), verify.time_ms.sum()))
    (core_64, pass_64), (core_65, pass_65) = widths
    assert core_65 >= core_64 * (1 - 1e-9), widths
    assert pass_65 >= pass_64 * (1 - 1e-9), widths
