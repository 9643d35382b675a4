"""Gated DeltaNet layers priced from aiconfigurator's measured gdn_perf rows (`linear_state`):
a decode's conv update + fused recurrent kernel, a prefill's conv + chunked delta rule, a verify
from the decode rows at its work (one state written per token), and the roofline where no row
has the layer's heads."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.costs.ops import BatchLens
from mtpsim.designs import DesignShape, iteration_passes


def _scenario(model: str = "qwen3-next-80b-a3b", tp: int = 4, design: str = "nextn") -> sc.Scenario:
    spec = {"design": design, **({"steps": 3} if design != "none" else {})}
    return sc.validate({"name": "g", "model": model, "hardware": "h200", "parallel": {"tp": tp},
                        "speculative": spec, **({"acceptance": {"accept_length": 2.0}} if design != "none" else {}),
                        "workload": {"concurrency": 8, "num_requests": 8, "input_len": 512, "output_len": 8}})


def _state_op(s: sc.Scenario, batch: int, q: int):
    pricer = build_pricer(s)
    passes = iteration_passes(DesignShape.of(s.speculative))
    shape = next(p for p in passes if p.kind == ("decode" if q == 1 else "verify"))
    kvs = np.full(batch, 512)
    cost = pricer.price_lens(shape, BatchLens.uniform(q, kvs, int(kvs.sum()), 512), keep_ops=True)
    return next((op, t) for op, t, _ in cost.ops if op.name == "attn.linear_state")


def _rows():
    aic = pytest.importorskip("mtpsim.calibration.aic_rows")
    pytest.importorskip("aiconfigurator_core")
    import pandas as pd

    from mtpsim.calibration.aic_database import package_root
    raw = pd.read_parquet(package_root() / "data" / "h200_sxm" / "linear_attention" / "sglang" / "0.5.14" / "gdn_perf.parquet")
    return aic.gdn_rows(raw).set_index(["phase", "kv_heads", "heads", "batch", "q"]).sort_index().time_s


def test_a_decode_reads_the_two_measured_kernels():
    """Qwen3-Next at tp 4 holds 4 key and 8 value heads a GPU: Qwen3.5-35B-A3B's shard at tp 4 in
    the table. At batch 8 the layer's decode is its conv update plus its recurrent kernel."""
    op, t = _state_op(_scenario(design="none"), 8, 1)
    assert (op.shape["kv_heads"], op.shape["heads"]) == (4, 8)
    assert t.source == "calibrated"
    assert t.total_s - t.launch_s == pytest.approx(_rows()[("decode", 4, 8, 8, 1)], rel=1e-6)


def test_a_verify_costs_more_than_the_decode_of_its_batch_by_its_state_writes():
    """A verify of 4 tokens a request keeps 4 intermediate states: priced from the decode row at
    the same batch, its launch-bound floor (the layout's fastest decode) kept and the rest scaled
    by work, (1 + 4) / (1 + 1) state passes, and labelled so."""
    decode = _state_op(_scenario(design="none"), 8, 1)[1]
    _, verify = _state_op(_scenario(), 8, 4)
    assert verify.source == "roofline-scaled"
    floor = _rows().xs(("decode", 4, 8)).min()
    d, v = decode.total_s - decode.launch_s, verify.total_s - verify.launch_s
    assert d < v < 2.5 * d
    assert (v - floor) / (d - floor) == pytest.approx(2.5, rel=0.02)  # the conv state's share apart


def test_heads_no_row_has_are_scaled_from_the_nearest_measured_layout():
    """tp 1 keeps Qwen3-Next's 16 / 32 heads on one GPU: a layout the table has (Qwen3.5-35B-A3B at
    tp 1), so calibrated; tp 3 is not a sharding the model takes, so tp 8's 2 / 4 is checked too."""
    op, t = _state_op(_scenario(tp=1, design="none"), 8, 1)
    assert (op.shape["kv_heads"], op.shape["heads"], t.source) == (16, 32, "calibrated")
    op, t = _state_op(_scenario(tp=8, design="none"), 8, 1)
    assert (op.shape["kv_heads"], op.shape["heads"], t.source) == (2, 4, "calibrated")
