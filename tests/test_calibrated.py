"""The calibrated cost model: profile loading and validation, interpolation, held-out shapes.

No torch: profiles here are synthetic (time = floor + roofline work, on a small grid) or the
committed CPU profile.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mtpsim.calibration.grid import Config, op_of
from mtpsim.catalog import load_hardware
from mtpsim.costs import ops as O
from mtpsim.costs.calibrated import CalibratedCosts
from mtpsim.costs.layer import whole_layer_ops
from mtpsim.costs.profile import MEASURED_BY_CALIBRATE as FAMILIES
from mtpsim.costs.profile import PROFILES_DIR, profile_families
from mtpsim.errors import ScenarioError

COMMITTED = PROFILES_DIR / "cpu"
FLOOR_S, FLOPS, BYTES = 5e-6, 5e10, 5e9
CONFIGS = [
    Config("gemm", {}, {"dtype": "fp32"}, dict(m=(1, 4, 16, 64), k=(64, 256), n=(64, 256))),
    Config("lm_head", {"kind": "full"}, {"dtype": "fp32"}, dict(m=(1, 8), k=(128, 256), n=(1024, 4096))),
    Config("lm_head", {"kind": "expand"}, {"dtype": "fp32"}, dict(m=(1, 8), k=(128, 256), n=(256, 1024))),
    Config("attention", {"kind": "gqa"}, {"kv_heads": 1, "head_dim": 128, "v_head_dim": 128},
           dict(batch=(1, 4), q=(1, 4), kv=(64, 256, 1024), heads=(1, 4))),
    Config("prefill_attention", {"kind": "gqa"}, {"kv_heads": 1, "head_dim": 128, "v_head_dim": 128},
           dict(batch=(1, 4), q=(128, 512), heads=(1, 4))),
    Config("moe", {}, {"dtype": "fp32", "inter": 128, "num_experts": 8},
           dict(tokens=(1, 4, 16), touched=(1, 2, 4, 8), top_k=(1, 2), d=(128, 256))),
    Config("elementwise", {}, {"d": 256}, dict(tokens=(1, 16, 256))),
    Config("pass", {}, {"d": 256}, dict(batch=(1, 4), q=(1, 4), kv=(64, 1024))),
    Config("argmax", {}, {}, dict(m=(1, 16), n=(1024, 8192))),
]
HW = load_hardware("cpu")


def synthetic_time(op) -> float:
    return FLOOR_S + max(op.flops / FLOPS, op.bytes / BYTES)


def write_profile(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for family in FAMILIES:
        rows = []
        for c in (c for c in CONFIGS if c.family == family):
            for p in c.points():
                if family == "moe" and not p["top_k"] <= p["touched"] <= p["tokens"] * p["top_k"]:
                    continue
                op = op_of(family, p, "fp32")
                rows.append({**p, "flops": op.flops, "bytes": op.bytes, "time_s": synthetic_time(op)})
        pd.DataFrame(rows).to_csv(folder / f"{family}.csv", index=False)
        counts[family] = len(rows)
    meta = {"device": "cpu", "device_name": "synthetic", "torch": "none", "dtype": "fp32", "date": "2026-01-01",
            "threads": 1, "ceilings": {"copy_bytes_per_s": BYTES, "matmul_flops_per_s": FLOPS},
            "launch": {"call_s": FLOOR_S, "included_in_op_times": True}, "families": counts}
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta))
    return folder


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    return write_profile(tmp_path_factory.mktemp("profile"))


@pytest.fixture(scope="module")
def costs(profile) -> CalibratedCosts:
    return CalibratedCosts.from_profile(profile, HW)


# ----------------------------------------------------------------------------- loading

def test_good_profile_loads(costs):
    assert costs.name == "calibrated"
    assert costs.kernel_launch_s(True) == costs.kernel_launch_s(False) == 0.0  # dispatch is in the times
    assert costs.pass_launch_s(True) == 0.0


@pytest.mark.parametrize("family", list(FAMILIES))
def test_missing_family_file_is_named(profile, tmp_path, family):
    broken = shutil.copytree(profile, tmp_path / "p")
    (broken / f"{family}.csv").unlink()
    with pytest.raises(ScenarioError) as err:
        CalibratedCosts.from_profile(broken, HW)
    assert err.value.where.endswith(f"{family}.csv") and "missing" in err.value.reason


@pytest.mark.parametrize("family,column", [("gemm", "n"), ("attention", "kv"), ("attention", "head_dim"),
                                           ("moe", "touched"), ("lm_head", "kind"), ("gemm", "time_s")])
def test_missing_column_is_named(profile, tmp_path, family, column):
    broken = shutil.copytree(profile, tmp_path / "p")
    path = broken / f"{family}.csv"
    pd.read_csv(path).drop(columns=[column]).to_csv(path, index=False)
    with pytest.raises(ScenarioError) as err:
        CalibratedCosts.from_profile(broken, HW)
    assert (err.value.where, err.value.key) == (str(path), column)


@pytest.mark.parametrize("value", ["", "fast", 0, -1e-6])
def test_bad_time_is_an_error_never_a_zero(profile, tmp_path, value):
    broken = shutil.copytree(profile, tmp_path / "p")
    path = broken / "gemm.csv"
    df = pd.read_csv(path).astype({"time_s": object})
    df.loc[3, "time_s"] = value
    df.to_csv(path, index=False)
    with pytest.raises(ScenarioError) as err:
        CalibratedCosts.from_profile(broken, HW)
    assert err.value.key == "time_s" and "row 5" in err.value.reason


@pytest.mark.parametrize("key", ["device", "ceilings", "launch"])
def test_missing_meta_key_is_named(profile, tmp_path, key):
    broken = shutil.copytree(profile, tmp_path / "p")
    meta = yaml.safe_load((broken / "meta.yaml").read_text())
    del meta[key]
    (broken / "meta.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(ScenarioError) as err:
        CalibratedCosts.from_profile(broken, HW)
    assert err.value.key == key


def test_missing_folder_or_meta(tmp_path, profile):
    with pytest.raises(ScenarioError):
        CalibratedCosts.from_profile(tmp_path / "nowhere", HW)
    broken = shutil.copytree(profile, tmp_path / "p")
    (broken / "meta.yaml").unlink()
    with pytest.raises(ScenarioError, match="missing profile file"):
        CalibratedCosts.from_profile(broken, HW)


# ----------------------------------------------------------------------------- interpolation

@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.family}-{c.keys}")
def test_exact_at_grid_points(costs, config):
    for p in config.points():
        if config.family == "moe" and not p["top_k"] <= p["touched"] <= p["tokens"] * p["top_k"]:
            continue
        op = op_of(config.family, p, "fp32")
        t = costs.time(op, graphs=True)
        assert t.source == "calibrated"
        assert t.total_s == pytest.approx(synthetic_time(op), rel=1e-9)


def test_monotone_in_tokens_between_grid_points(costs):
    times = [costs.time(O.gemm("g", m, 100, 200, "fp32", act="fp32"), False).total_s for m in range(1, 65)]
    assert all(b >= a for a, b in zip(times, times[1:]))


def test_monotone_in_kv_between_grid_points(costs):
    p = dict(kind="gqa", kv_heads=1, head_dim=128, v_head_dim=128, batch=3, q=2, heads=2)
    times = [costs.time(op_of("attention", {**p, "kv": kv}, "fp32"), False).total_s for kv in range(64, 1025, 7)]
    assert all(b >= a for a, b in zip(times, times[1:]))


def test_noisy_profile_is_made_monotone(profile, tmp_path):
    noisy = shutil.copytree(profile, tmp_path / "p")
    df = pd.read_csv(noisy / "gemm.csv")
    df.loc[(df.m == 16) & (df.k == 64) & (df.n == 64), "time_s"] = 1e-7  # faster than m = 4: noise
    df.to_csv(noisy / "gemm.csv", index=False)
    c = CalibratedCosts.from_profile(noisy, HW)
    times = [c.time(O.gemm("g", m, 64, 64, "fp32", act="fp32"), False).total_s for m in (1, 4, 8, 16, 32, 64)]
    assert all(b >= a for a, b in zip(times, times[1:]))


def _attention_with(profile: Path, folder: Path, slow: dict, factor: float) -> CalibratedCosts:
    """The synthetic profile with the attention rows at `slow`'s cells (batch, kv -> every q
    and heads) `factor` times slower."""
    copy = shutil.copytree(profile, folder)
    df = pd.read_csv(copy / "attention.csv")
    for batch, kv in slow:
        df.loc[(df.batch == batch) & (df.kv == kv), "time_s"] *= factor
    df.to_csv(copy / "attention.csv", index=False)
    return CalibratedCosts.from_profile(copy, HW)


ATT = dict(kind="gqa", kv_heads=1, head_dim=128, v_head_dim=128, q=1, heads=1)


def test_an_isolated_slow_row_is_an_outlier_not_carried_to_larger_shapes(profile, tmp_path, costs):
    """One measured cell 50x its neighbours along batch and kv (the committed h200-trtllm MLA table
    holds one 160x: 2.2 ms between two of 14 us) is an outlier: the running maximum once carried it
    to every larger batch and KV, so DeepSeek's decode attention on H200 under TensorRT-LLM cost
    135 ms a step at batch 32. It now takes its slower neighbour's time, and the shapes beyond
    read their own rows."""
    c = _attention_with(profile, tmp_path / "p", {(1, 256)}, 50.0)
    for batch, kv in ((1, 64), (1, 1024), (4, 256), (4, 1024)):  # the rows beyond and beside it, as measured
        op = op_of("attention", {**ATT, "batch": batch, "kv": kv}, "fp32")
        assert c.time(op, False).total_s == pytest.approx(costs.time(op, False).total_s, rel=1e-9), (batch, kv)
    # the outlier itself: between its neighbours along kv, log-linear in kv (its own 50x gone),
    # and no longer labelled a measurement
    at = [c.time(op_of("attention", {**ATT, "batch": 1, "kv": kv}, "fp32"), False) for kv in (64, 256, 1024)]
    assert at[0].total_s < at[1].total_s < at[2].total_s
    assert at[1].total_s == pytest.approx((at[0].total_s * at[2].total_s) ** 0.5, rel=1e-9)
    assert (at[0].source, at[1].source, at[2].source) == ("calibrated", "calibrated-scaled", "calibrated")


def test_a_slow_step_stands(profile, tmp_path, costs):
    """Two slow cells in a row along kv are a step (a kernel that slows from there on), not an
    outlier: the data stands, and the running maximum carries the step on."""
    c = _attention_with(profile, tmp_path / "p", {(1, 256), (1, 1024)}, 50.0)
    for kv in (256, 1024):
        op = op_of("attention", {**ATT, "batch": 1, "kv": kv}, "fp32")
        assert c.time(op, False).total_s == pytest.approx(50 * synthetic_time(op), rel=1e-6)
    later = op_of("attention", {**ATT, "batch": 4, "kv": 1024}, "fp32")
    assert c.time(later, False).total_s >= 50 * synthetic_time(op_of("attention", {**ATT, "batch": 1, "kv": 1024},
                                                                     "fp32")) * (1 - 1e-9)


def test_the_committed_tables_read_no_outlier_at_larger_shapes():
    """DeepSeek-V3's decode attention at TP8 (16 heads, BF16 MLA cache) on H200 under TensorRT-LLM
    at batch 32-128 and 1.5k context: its rows around there are 14-160 us a layer; with the
    outlier at batch 32 carried on, 2.2 ms."""
    c = CalibratedCosts.from_profile(PROFILES_DIR / "h200-trtllm", load_hardware("h200"))
    mla = dict(kind="mla", kv_heads=1, head_dim=576, v_head_dim=512, kv_dtype="bf16", q=1, heads=16)
    for batch in (32, 64, 128):
        t = c.time(op_of("attention", {**mla, "batch": batch, "kv": 1500}, "bf16"), False).total_s
        assert 10e-6 < t < 200e-6, (batch, t)


def test_an_all_reduce_outlier_is_not_carried_to_larger_messages():
    """h100-sxm-sglang times an all-reduce over 8 GPUs at 3-5 us from 256 B to 64 KB, but 38 us at
    1 KB: carried on, every TP8 all-reduce on H100 under SGLang took 38 us or more, and
    DeepSeek-V3's decode step at batch 1 (122 of them) 12.6 ms instead of 8.5."""
    c = CalibratedCosts.from_profile(PROFILES_DIR / "h100-sxm-sglang", load_hardware("h100-sxm"))
    for tokens in (1, 4, 16):  # DeepSeek-V3's hidden state in BF16: 14 KB a token
        t = c.time(O.allreduce(tokens, 7168, 8), True).total_s
        assert t < 10e-6, (tokens, t)


def test_more_experts_than_the_tokens_were_timed_touching_reads_those_experts_timed(profile, tmp_path):
    """A table of balanced routings times each token count at one touched count (here touched =
    tokens at top_k 1). The busiest EP rank at one token can touch 4 experts, a cell no row timed:
    it takes the 4 experts timed at 4 tokens (the same weights, a little more compute), not the
    1 expert timed at 1 token scaled up by work, which in this synthetic profile left the time
    at one expert's."""
    balanced = shutil.copytree(profile, tmp_path / "p")
    df = pd.read_csv(balanced / "moe.csv")
    df = df[df.touched == np.minimum(df.tokens * df.top_k, df.num_experts)]
    df.to_csv(balanced / "moe.csv", index=False)
    meta = yaml.safe_load((balanced / "meta.yaml").read_text())
    meta["families"]["moe"] = len(df)
    (balanced / "meta.yaml").write_text(yaml.safe_dump(meta))
    c = CalibratedCosts.from_profile(balanced, HW)
    point = dict(tokens=1, touched=4, top_k=1, d=256, inter=128, num_experts=8, dtype="fp32")
    op = op_of("moe", point, "fp32")
    t = c.time(op, False)
    assert t.source == "calibrated-scaled"  # a filled cell, moved to the op's own work
    assert t.total_s == pytest.approx(synthetic_time(op), rel=0.03)
    one = op_of("moe", {**point, "touched": 1}, "fp32")
    assert t.total_s > 2 * (c.time(one, False).total_s - FLOOR_S)


def test_sources_outside_the_grid(costs):
    assert costs.time(O.gemm("g", 4096, 256, 256, "fp32", act="fp32"), False).source == "roofline-scaled"
    assert costs.time(O.gemm("g", 4, 100, 100, "bf16", act="fp32"), False).source == "calibrated-scaled"
    assert costs.time(O.allreduce(16, 256, 2), False).source == "roofline"
    big = O.gemm("g", 4096, 256, 256, "fp32", act="fp32")
    edge = O.gemm("g", 64, 256, 256, "fp32", act="fp32")
    # beyond the grid: the edge's time scaled by the work ratio (affine above the floor)
    assert costs.time(big, False).total_s == pytest.approx(
        FLOOR_S + (synthetic_time(edge) - FLOOR_S) * max(big.flops / FLOPS, big.bytes / BYTES)
        / max(edge.flops / FLOPS, edge.bytes / BYTES), rel=0.03)  # floor: the fastest measured time


def test_past_the_grid_time_is_continuous_and_monotone(profile, tmp_path):
    """Past the grid an op is scaled by work from the grid's nearest edge, interpolated there.
    On a GPU whose attention streams KV better at larger batches (here twice as slow at batch 1
    as at 4), a decode past the kv axis still costs more at each larger batch: the nearest
    measured cell jumped from batch 1's row to batch 4's between batch 2 and 3, and the time
    fell with it."""
    slow = shutil.copytree(profile, tmp_path / "p")
    df = pd.read_csv(slow / "attention.csv")
    df.loc[df.batch == 1, "time_s"] = FLOOR_S + 2 * (df.time_s - FLOOR_S)
    df.to_csv(slow / "attention.csv", index=False)
    c = CalibratedCosts.from_profile(slow, HW)

    def decode(batch, kv):
        return c.time(op_of("attention", dict(kind="gqa", kv_heads=1, head_dim=128, v_head_dim=128,
                                              batch=batch, q=1, kv=kv, heads=4), "fp32"), False).total_s
    for kv in (2048, 4096, 32768):
        times = [decode(b, kv) for b in (1, 2, 3, 4)]
        assert times == sorted(times), kv
    # at batch 4, past the kv axis only: the synthetic time itself (only the KV is scaled)
    op = op_of("attention", dict(kind="gqa", kv_heads=1, head_dim=128, v_head_dim=128, batch=4, q=1, kv=4096,
                                 heads=4), "fp32")
    assert c.time(op, False).total_s == pytest.approx(synthetic_time(op), rel=0.03)


@pytest.mark.parametrize("batch,kv", [(4, 4096), (1, 16384), (16, 256), (16, 8192)])
def test_a_verify_past_the_grid_is_priced_from_the_cell_it_reads(costs, batch, kv):
    """More query tokens than measured (q 8 > 4) at a batch or KV past the grid: the nearest
    cell's time scaled by the op's work over that cell's, as a decode there is, so never below the
    decode of the same batch and KV (scaling by the op's own work at the measured q priced the
    cell's KV as the op's: at 4x the grid's KV such a verify cost about a quarter of the decode)."""
    shape = dict(kind="gqa", kv_heads=1, head_dim=128, v_head_dim=128, batch=batch, kv=kv, heads=4)
    verify, decode = op_of("attention", {**shape, "q": 8}, "fp32"), op_of("attention", {**shape, "q": 1}, "fp32")
    t, t_decode = costs.time(verify, False), costs.time(decode, False)
    assert t.source == "extrapolated" and t_decode.source == "roofline-scaled"
    # both scaled affinely from that cell: above its floor in the ratio of their works
    work = costs.work_s(verify) / costs.work_s(decode)
    assert t_decode.total_s <= t.total_s <= t_decode.total_s * work
    # near the synthetic time: the affine floor is the config's fastest row, not FLOOR_S, which
    # leaves a few percent at 16x a cell's work
    assert t.total_s == pytest.approx(synthetic_time(verify), rel=0.1)


def test_other_head_widths_scale_with_work(costs):
    p = dict(kind="gqa", kv_heads=2, head_dim=64, v_head_dim=64, batch=4, q=1, kv=1024, heads=4)
    op = op_of("attention", p, "fp32")
    t = costs.time(op, False)
    assert t.source == "calibrated-scaled"
    assert t.total_s == pytest.approx(synthetic_time(op), rel=0.02)


def test_elementwise_looks_up_by_elements(costs):
    a = costs.time(op_of("elementwise", {"tokens": 32, "d": 128}, "fp32"), False)
    b = costs.time(op_of("elementwise", {"tokens": 16, "d": 256}, "fp32"), False)
    assert a.source == "calibrated" and a.total_s == pytest.approx(b.total_s)


def _profile_with_bmm(profile: Path, folder: Path, times: dict) -> CalibratedCosts:
    """The synthetic profile plus a bmm table of one config (fp32, 64 x 128 per head), `times`:
    {(m, heads): seconds}; listed in meta.yaml's families, as a converted profile lists them."""
    out = shutil.copytree(profile, folder)
    rows = []
    for (m, heads), t in times.items():
        op = op_of("bmm", dict(m=m, heads=heads, k=64, n=128, dtype="fp32"), "fp32")
        rows.append(dict(dtype="fp32", k=64, n=128, m=m, heads=heads, flops=op.flops, bytes=op.bytes, time_s=t))
    pd.DataFrame(rows).to_csv(out / "bmm.csv", index=False)
    meta = yaml.safe_load((out / "meta.yaml").read_text())
    meta["families"] = {f: {} for f in (*FAMILIES, "bmm")}
    (out / "meta.yaml").write_text(yaml.safe_dump(meta))
    return CalibratedCosts.from_profile(out, HW)


def test_a_bmm_is_priced_from_its_own_rows_and_else_as_its_gemm(profile, tmp_path, costs):
    op = O.bmm("attn.w_uk", 4, 8, 64, 128, "fp32", act="fp32")
    # no bmm table: exactly the one GEMM of the same flops and weights, labelled as that stand-in
    gemm = O.as_gemm(op)
    assert (gemm.flops, gemm.weight_bytes) == (op.flops, op.weight_bytes)
    stand_in, plain = costs.time(op, False), costs.time(gemm, False)
    assert stand_in.total_s == plain.total_s and stand_in.source == plain.source + ":gemm"
    # with one: the measured row at a grid point, whatever the GEMM rows say
    times = {(m, h): 3e-6 + 1e-8 * m * h for m in (1, 4, 16) for h in (8, 16)}
    own = _profile_with_bmm(profile, tmp_path / "p", times).time(op, False)
    assert own.source == "calibrated" and own.total_s == pytest.approx(times[(4, 8)])


def test_a_slow_bmm_row_is_not_carried_to_larger_token_counts(profile, tmp_path):
    """bmm tables take the lower envelope along tokens: a slow row reads as the fastest at its
    count or beyond (a running maximum would lift every larger count to it instead)."""
    times = {(m, h): 4e-6 for m in (1, 2, 4, 8, 16, 32) for h in (8, 16)}
    times[(4, 8)] = 9e-6  # one slow measurement
    c = _profile_with_bmm(profile, tmp_path / "p", times)
    priced = [c.time(O.bmm("b", m, 8, 64, 128, "fp32", act="fp32"), False).total_s for m in (1, 2, 4, 8, 16, 32)]
    assert priced == pytest.approx([4e-6] * 6)


# ----------------------------------------------------------------------------- the committed profile

def test_the_cpu_profile_is_committed():
    """The two tests below read it; they skipped when it was missing, so losing it passed."""
    assert (COMMITTED / "meta.yaml").is_file() and (COMMITTED / "layers.csv").is_file()


def test_committed_profile_predicts_held_out_shapes():
    """Shapes measured between the grid's values, never used by the model."""
    costs = CalibratedCosts.from_profile(COMMITTED, HW)
    errors = []
    # the families it was calibrated with (2026-12-04: before prefill_attention was measured)
    for family in profile_families(yaml.safe_load((COMMITTED / "meta.yaml").read_text())):
        for r in pd.read_csv(COMMITTED / "holdout" / f"{family}.csv").to_dict("records"):
            t = costs.time(op_of(family, r, "fp32"), False)
            errors.append(abs(t.total_s / r["time_s"] - 1))
    # the target, 0.10 (was asserted at 0.20 under a stale "reaches 0.15": the committed files
    # are fixed, so the median is a deterministic 0.038 today and a model change that doubled it passed)
    assert len(errors) > 100 and np.median(errors) <= 0.10


def test_committed_profile_prices_whole_layers():
    costs = CalibratedCosts.from_profile(COMMITTED, HW)
    layers = pd.read_csv(COMMITTED / "layers.csv").to_dict("records")
    errors = [abs(sum(costs.time(op, False).total_s for op in whole_layer_ops(r, "fp32")) / r["time_s"] - 1) for r in layers]
    # the target, 0.15 (was 0.30 under a stale "reaches 0.22"; 0.069 today, deterministic:
    # the profile and the layer timings are committed files)
    assert len(errors) > 100 and np.median(errors) <= 0.15




# ----------------------------------------------------------------------------- host time, glue, padded kv

def test_host_time_from_meta_else_hardware(profile, tmp_path):
    costs = CalibratedCosts.from_profile(profile, HW)
    engine = costs.engine
    assert costs.host_s("nextn", 4) == engine.host_s("nextn", 4)  # not measured: the engine's
    folder = shutil.copytree(profile, tmp_path / "p")
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    meta["host_s"] = {"nextn": {1: 1e-4, 16: 4e-4}}
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta))
    costs = CalibratedCosts.from_profile(folder, HW)
    assert costs.host_s("nextn", 1) == pytest.approx(1e-4)
    assert costs.host_s("nextn", 8.5) == pytest.approx(2.5e-4)
    assert costs.host_s("nextn", 64) == pytest.approx(4e-4)   # flat beyond the measured
    assert costs.host_s("none", 4) == engine.host_s("none", 4)


def test_layer_glue_is_the_fitted_residual(profile, tmp_path):
    folder = shutil.copytree(profile, tmp_path / "p")
    rows = [dict(layer="gqa_dense", scale=s, batch=b, q=1, kv=256, d=256) for s in (0.0625, 0.125) for b in (1, 4)]
    bare = CalibratedCosts.from_profile(folder, HW)
    for r in rows:  # measured = ops + 1e-4 s of glue per layer, whatever the tokens
        r["time_s"] = sum(bare.time(op, False).total_s for op in whole_layer_ops(r, "fp32", glue=False)) + 1e-4
    pd.DataFrame(rows).to_csv(folder / "layers.csv", index=False)
    costs = CalibratedCosts.from_profile(folder, HW)
    glue = O.layer_glue("gqa_dense", 2, 256)
    assert costs.time(glue, False).total_s == pytest.approx(1e-4, rel=1e-6)
    assert costs.time(O.layer_glue("gqa_moe", 2, 256), False).total_s == pytest.approx(1e-4, rel=1e-6)  # same attention
    assert costs.roofline.time(glue, False).total_s == 0.0


def test_padded_attention_reads_the_longest(profile, tmp_path):
    folder = shutil.copytree(profile, tmp_path / "p")
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    meta["attention_kv"] = "batch_max"
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta))
    padded, paged = CalibratedCosts.from_profile(folder, HW), CalibratedCosts.from_profile(profile, HW)
    att = op_of("attention", dict(kind="gqa", batch=4, q=1, kv=256, heads=4, kv_heads=1, head_dim=128,
                                  v_head_dim=128), "fp32").shape
    spec = O.AttentionSpec(kind="gqa", num_heads=4, num_kv_heads=1, head_dim=128)
    op = O.attention_core(spec, np.ones(4, int), np.array([63, 63, 63, 1023]), "fp32", 1, "fp32")
    assert att["kind"] == "gqa"
    assert padded.time(op, False).total_s > paged.time(op, False).total_s


def test_a_row_faster_than_the_measured_stream_is_floored(profile, tmp_path):
    """On a GPU a table row cannot move its op's bytes faster than the best measured stream (meta
    ceilings.copy_bytes_per_s); such a row did less work than its label says, and the op is priced
    at its bytes over that ceiling instead, labelled `-floored`. Rows within physics are untouched,
    and a CPU profile is not floored (its small rows run from cache, as verification does)."""
    fast = shutil.copytree(profile, tmp_path / "p")
    df = pd.read_csv(fast / "moe.csv")
    df["time_s"] /= 100  # every MoE row 100x faster than the synthetic GPU can stream
    df.to_csv(fast / "moe.csv", index=False)
    cpu = CalibratedCosts.from_profile(fast, HW)  # a CPU profile: small rows run from cache, no floor
    meta = yaml.safe_load((fast / "meta.yaml").read_text())
    (fast / "meta.yaml").write_text(yaml.safe_dump({**meta, "device": "h200"}))
    c = CalibratedCosts.from_profile(fast, HW)
    op = op_of("moe", {"dtype": "fp32", "inter": 128, "num_experts": 8, "tokens": 16, "touched": 8,
                       "top_k": 2, "d": 256}, "fp32")
    t = c.time(op, graphs=True)
    assert t.source == "calibrated-floored"
    assert cpu.time(op, graphs=True).source == "calibrated" and cpu.time(op, graphs=True).total_s < t.total_s
    assert t.total_s == pytest.approx(op.bytes / BYTES, rel=1e-12)
    gemm = O.gemm("g", 16, 256, 256, "fp32", act="fp32")
    assert c.time(gemm, graphs=True).source == "calibrated"
    assert c.time(gemm, graphs=True).total_s == pytest.approx(synthetic_time(gemm), rel=1e-9)


def test_a_verify_with_no_context_costs_no_more_than_with_some(tmp_path, capsys):
    """Extrapolated verify attention (more queries than the profile's decode rows) scaled the
    launch latency of its batch and heads with the queries: DeepSeek-V3's nextn verify on B200
    (batch 8, tp 8) cost 1.37 ms of attention at no context, 0.82 ms at 500 tokens and 1.04 ms at
    1,000. The latency above the config's fastest call is now the slice's own floor (tables.py
    slice_floor), which the queries do not scale."""
    from mtpsim import cli
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: v\nmodel: deepseek-v3\nhardware: b200\nparallel: {tp: 8}\n"
                        "speculative: {design: nextn, steps: 3}\nacceptance: {per_depth: [0.8, 0.7, 0.6]}\n"
                        "workload: {concurrency: 8, num_requests: 16, input_len: 512, output_len: 64}\n")

    def verify_attention_ms(context: int) -> float:
        assert cli.main(["cost", str(scenario), "--batch", "8", "--context", str(context), "--ops"]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:2] == ["verify:target", "attn.core"])
        return float(row.split()[-1])

    at = {c: verify_attention_ms(c) for c in (0, 100, 500, 1000, 4000, 16000)}
    assert at[0] <= min(at.values()), at
    assert at[500] < at[1000] < at[4000] < at[16000], at
