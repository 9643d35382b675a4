"""Prefill attention from the measured context-attention tables (family prefill_attention).

aiconfigurator's database times prefill attention (context FMHA, MLA run unabsorbed) in its
context_attention / context_mla tables; the converter used to read only the decode tables, and a
prompt's attention was extrapolated from q = 1 rows: 4x the measured time of an R1 prompt of 7,400
tokens on B200 under TensorRT-LLM (67 ms over 61 layers against 17 ms). These tests read the
committed B200 TensorRT-LLM profile.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mtpsim.calibration.aic_rows import context_mla_rows
from mtpsim.catalog import load_hardware, load_model
from mtpsim.costs import ops as O
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.op import MLA_ABSORB_MAX_Q
from mtpsim.costs.profile import PROFILES_DIR

PROFILE = PROFILES_DIR / "b200-trtllm"
MLA = load_model("deepseek-v3").attention_kinds["mla"]  # 128 heads: 16 a GPU at tp 8


@pytest.fixture(scope="module")
def costs():
    return CalibratedCosts.from_profile(PROFILE, load_hardware("b200"))


def core(q: int, cached: int = 0, batch: int = 1):
    return O.attention_core(MLA, np.full(batch, q), np.full(batch, cached), "fp8", tp=8)


def row(batch: int, q: int) -> float:
    df = pd.read_csv(PROFILE / "prefill_attention.csv.gz")
    hit = df[(df.kind == "mla") & (df.kv_dtype == "fp8") & (df.heads == 16) & (df.batch == batch) & (df.q == q)]
    return float(hit.time_s.iloc[0])


def test_a_fresh_prompt_at_a_measured_length_is_the_measured_time(costs):
    t = costs.time(core(4096), graphs=False)
    assert t.source == "calibrated"
    assert t.total_s == pytest.approx(row(1, 4096) + costs.kernel_launch_s(False), rel=1e-6)


def test_a_chunk_after_cached_tokens_scales_by_its_work(costs):
    """A second chunk of 4096 after 4096 cached: each query sees 4096 more keys, so it does ~3x
    the first chunk's work (pairs 4096 x (4096 + 2048.5) against 4096 x 2048.5)."""
    fresh, second = (costs.time(core(4096, cached), graphs=False) for cached in (0, 4096))
    assert second.source == "calibrated-scaled"
    assert 2.0 < second.total_s / fresh.total_s < 3.2


def test_prefill_sized_cores_read_the_prefill_rows_and_verify_sized_ones_do_not(costs):
    """Past MLA_ABSORB_MAX_Q query tokens a request the context kernel's rows price the core; a
    verify's few tokens over the cache keep the decode rows (extrapolated past q = 1)."""
    assert costs.time(core(4, cached=2000), graphs=True).source == "extrapolated"
    long = costs.time(core(7400), graphs=False)
    assert long.source == "calibrated"  # interpolated between the 6144 and 8192 rows
    assert row(1, 6144) < long.total_s < row(1, 8192) + 1e-5
    # without the family (a profile converted before it), the decode rows extrapolated: ~4x
    before = CalibratedCosts({k: v for k, v in costs.tables.items() if k != "prefill_attention"}, costs.meta,
                             costs.hw)
    old = before.time(core(7400), graphs=False)
    assert old.source == "extrapolated" and 3 < old.total_s / long.total_s < 6


def test_the_fast_path_hands_prefill_cores_back_and_prices_decode_as_time(costs):
    kernel = O.AttentionKernel(MLA, "fp8", 8)
    pricer = costs.core_pricer(kernel, graphs=False)
    prefill = O.BatchLens.of(np.array([MLA_ABSORB_MAX_Q + 1]), np.array([0]))
    assert pricer.price(prefill) is None
    decode = O.BatchLens.of(np.full(4, 1), np.full(4, 1500))
    _, fast = pricer.price(decode)
    assert fast.total_s == pytest.approx(costs.time(kernel.core(decode), graphs=False).total_s, rel=1e-12)


def test_the_converter_keeps_bf16_attention_and_a_row_per_shape():
    """context_mla_rows: BF16 attention rows only (FP8 context attention is another kernel), one
    row per (KV dtype, batch, heads, isl), the fastest, with the flops of a fresh unabsorbed prefill."""
    raw = pd.DataFrame({"kv_cache_dtype": ["fp8", "fp8", "fp8", "bfloat16"], "mla_dtype": ["bfloat16"] * 2 + ["fp8", "bfloat16"],
                        "batch_size": [1, 1, 1, 1], "num_heads": [16] * 4, "isl": [4096, 4096, 4096, 1],
                        "latency": [0.2, 0.13, 0.05, 0.01], "kernel_source": ["a", "b", "c", "d"]})
    rows = context_mla_rows(raw)
    assert len(rows) == 1 and rows.time_s.iloc[0] == pytest.approx(0.13e-3)
    pairs = 4096 * 4097 / 2
    assert rows.flops.iloc[0] == pytest.approx(2 * pairs * 16 * (128 + 64 + 128))


def test_converted_profiles_say_which_prompts_their_rows_price():
    """meta.yaml's not_measured line says what prices prefill-sized attention, as the converter
    writes it: a database without a context MLA table (vLLM, SGLang on A100) gives GQA rows only."""
    from pathlib import Path

    import yaml

    from mtpsim.calibration.aiconfigurator import _prefill_rows_read
    said = {}
    for path in sorted((Path(__file__).resolve().parent.parent / "mtpsim/data/profiles").glob("*/meta.yaml")):
        meta = yaml.safe_load(path.read_text())
        if meta.get("source", {}).get("from") != "aiconfigurator":
            continue
        line = meta["not_measured"]["verify attention (q > 1 per request)"]
        assert line.endswith(_prefill_rows_read(meta["families"])), path
        said[path.parent.name] = "GQA only" in line
    assert said["h200-vllm"] and said["a100-80g-sglang"] and not said["h200-sglang"] and not said["b200-trtllm"]
