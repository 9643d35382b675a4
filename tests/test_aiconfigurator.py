"""The aiconfigurator converter on small fixture tables written here (no network, no package):
units, foreign rows, per-GPU sharding, version back-fill; and the converted profile in the
calibrated cost model: measured communication, extrapolated verify attention, stand-ins."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytest.importorskip("pyarrow")

from mtpsim.calibration import aic_dtypes, aic_sources  # noqa: E402
from mtpsim.calibration import aiconfigurator as A  # noqa: E402
from mtpsim.catalog import load_hardware  # noqa: E402
from mtpsim.cli import main  # noqa: E402
from mtpsim.costs import ops as O  # noqa: E402
from mtpsim.costs.calibrated import CalibratedCosts  # noqa: E402
from mtpsim.specs import AttentionSpec, FFNSpec  # noqa: E402

DEVICE, SYSTEM = "NVIDIA H200", "h200_sxm"


def _write(root: Path, family: str, backend: str, version: str, file: str, rows: list[dict], framework="SGLang",
           device=DEVICE, row_version=None):
    folder = root / "data" / SYSTEM / family / backend / version
    folder.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    df.insert(0, "framework", framework)
    df.insert(1, "version", row_version or version)
    df.insert(2, "device", device)
    df.to_parquet(folder / file)


def _gemm(m, n, k, ms, dtype="bfloat16", kernel="torch"):
    return dict(op_name="gemm", kernel_source=kernel, gemm_dtype=dtype, m=m, n=n, k=k, latency=ms)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("aic") / "systems"
    (root / "data" / SYSTEM).mkdir(parents=True)
    (root / "query_versions.yaml").write_text(yaml.safe_dump({"defaults": {"sglang": {"current": "0.5.14"}}}))
    gemm = [_gemm(m, n, k, 0.01 + 1e-6 * m * n * k / 1e6) for m in (1, 4, 16) for n in (1024, 2048) for k in (1024, 7168)]
    gemm.append(_gemm(1, 1024, 1024, 0.005, kernel="faster"))             # two kernels: the fastest wins
    gemm.append(_gemm(1, 1024, 1024, 0.001, dtype="fp8"))                  # per-tensor fp8: block rows exist
    gemm += [_gemm(m, 1024, 1024, 0.004, dtype="fp8_block") for m in (1, 4)]
    _write(root, "gemm", "sglang", "0.5.14", "gemm_perf.parquet", gemm)
    # a foreign row in the same folder: another device's
    _write(root, "gemm", "sglang", "0.5.14", "gemm_perf.parquet", gemm + [{**_gemm(1, 1024, 1024, 9.0)}])
    df = pd.read_parquet(root / "data" / SYSTEM / "gemm/sglang/0.5.14/gemm_perf.parquet")
    df.loc[len(df) - 1, "device"] = "NVIDIA H100 80GB HBM3"
    df.to_parquet(root / "data" / SYSTEM / "gemm/sglang/0.5.14/gemm_perf.parquet")
    att = [dict(op_name="generation_attention", kernel_source="fa3", batch_size=b, isl=1, num_heads=h, num_key_value_heads=1,
                head_dim=128, beam_width=1, attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=s, window_size=0,
                latency=0.01 + 1e-6 * b * s) for b in (1, 8) for h in (8, 16) for s in (127, 1023)]
    _write(root, "attention", "sglang", "0.5.14", "generation_attention_perf.parquet", att)
    mla = [dict(op_name="mla_generation", kernel_source="fa", mla_dtype="bfloat16", kv_cache_dtype="bfloat16",
                num_heads=16, batch_size=b, isl=1, tp_size=8, step=s, latency=0.02 + 2e-6 * b * s)
           for b in (1, 8, 64) for s in (127, 1023, 8191)]
    _write(root, "mla", "sglang", "0.5.14", "generation_mla_perf.parquet", mla)
    moe = [dict(op_name="moe", kernel_source="triton", moe_dtype="fp8_block", num_tokens=t, hidden_size=7168,
                inter_size=2048, topk=8, num_experts=256, moe_tp_size=8, moe_ep_size=1, distribution=dist,
                latency=0.01 + 0.004 * min(256, 8 * t)) for t in (1, 4, 16) for dist in ("balanced", "power_law_1.2")]
    _write(root, "moe", "sglang", "0.5.14", "moe_perf.parquet", moe)
    ar = [dict(op_name="all_reduce", kernel_source="custom", allreduce_dtype="bfloat16", num_gpus=8, message_size=n,
               latency=0.012 + n * 1e-9, backend=b) for n in (1024, 65536, 1048576) for b in ("sglang_graph", "sglang_eager")]
    # only an older version holds the all-reduce table: it is back-filled, and says so
    _write(root, "comm", "sglang", "0.5.10", "custom_allreduce_perf.parquet", ar)
    _write(root, "comm", "sglang", "0.5.16", "custom_allreduce_perf.parquet",  # a newer one is never used
           [{**r, "latency": 99.0} for r in ar])
    a2a = [dict(op_name="ll", kernel_source="deepep", node_num=1, hidden_size=7168, num_token=t, num_topk=8, num_experts=256,
                combine_avg_t_us=20.0 + t, combine_bandwidth_gbps=1.0, dispatch_avg_t_us=10.0 + t,
                dispatch_bandwidth_gbps=1.0) for t in (1, 8, 64)]
    _write(root, "comm", "sglang", "0.5.12", "wideep_deepep_ll_perf.parquet", a2a, framework="sglang")
    return root


@pytest.fixture(scope="module")
def profile(root, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out") / "h200-sglang"
    A.convert(SYSTEM, "sglang", None, out, root=root, progress=lambda *_: None)
    return out


def _family(profile: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(profile / f"{name}.csv.gz")


def test_units_kernels_and_foreign_rows(profile):
    g = _family(profile, "gemm")
    one = g[(g.dtype == "bf16") & (g.m == 1) & (g.n == 1024) & (g.k == 1024)]
    assert len(one) == 1 and one.time_s.iloc[0] == pytest.approx(0.005e-3, rel=1e-5)  # ms -> s, fastest kernel, no 9 ms row
    fp8 = g[g.dtype == "fp8"]
    assert len(fp8) == 2 and fp8.time_s.min() == pytest.approx(0.004e-3, rel=1e-5)  # block-scaled, not per-tensor
    a2a = _family(profile, "alltoall")
    assert a2a[a2a.tokens == 8].time_s.iloc[0] == pytest.approx(46e-6)      # microseconds: dispatch 18 + combine 28
    ar = _family(profile, "allreduce")
    row = ar[ar.bytes == 2 * 65536]                                         # elements of bf16 -> bytes
    assert len(row) == 1 and row.time_s.iloc[0] == pytest.approx((0.012 + 65536e-9) * 1e-3, rel=1e-5)


def test_sharding_and_routing(profile):
    moe = _family(profile, "moe")
    assert set(moe.inter) == {256} and set(moe.num_experts) == {256}        # inter 2048 over moe tp 8
    assert len(moe) == 3                                                    # balanced routing only
    assert moe[moe.tokens == 1].touched.iloc[0] == pytest.approx(8.0)
    att = _family(profile, "attention")
    mla = att[att.kind == "mla"]
    assert set(mla.kv) == {128, 1024, 8192} and set(mla.heads) == {16}      # step + the new token


def test_implausibly_slow_low_precision_rows_are_passed_over():
    """Decode-sized fp8 GEMMs 10x slower than bf16 cannot be the serving kernel: the next
    candidate (per-tensor fp8) is used, and the reason recorded."""
    rows = [_gemm(m, n, 1024, 0.01) for m in (1, 16) for n in (1024, 2048)]
    rows += [_gemm(m, n, 1024, 0.1, dtype="fp8_block") for m in (1, 16) for n in (1024, 2048)]
    rows += [_gemm(m, n, 1024, 0.008, dtype="fp8") for m in (1, 16) for n in (1024, 2048)]
    chosen, passed = aic_dtypes.choose_dtypes(pd.DataFrame(rows), aic_dtypes.GEMM_RULE)
    assert chosen == {"bf16": "bfloat16", "fp8": "fp8"} and "10.0x" in passed["fp8_block"]


def test_meta_records_versions_rows_and_attribution(profile):
    meta = yaml.safe_load((profile / "meta.yaml").read_text())
    assert meta["device"] == "h200" and meta["source"]["backend"] == "sglang"
    assert "Apache-2.0" in meta["source"]["attribution"]
    ar = meta["families"]["allreduce"]["sources"][0]
    assert ar["framework_version"] == "0.5.10" and ar["rows"] == 3          # back-filled, graph rows only
    gemm = meta["families"]["gemm"]["sources"][0]
    assert gemm["foreign_rows_dropped"] == 1 and gemm["dtypes"] == {"bf16": "bfloat16", "fp8": "fp8_block"}


@pytest.fixture(scope="module")
def costs(profile) -> CalibratedCosts:
    return CalibratedCosts.from_profile(profile, load_hardware("h200"))


def test_measured_communication_is_used(costs):
    op = O.allreduce(32, 1024, 8)  # 65536 bytes
    t = costs.time(op, graphs=True)
    assert t.source == "calibrated" and t.comm_s == pytest.approx((0.012 + 32768e-9) * 1e-3, rel=0.05)
    assert t.comm_s != pytest.approx(costs.roofline.time(op, True).comm_s, rel=0.05)
    assert costs.time(O.allreduce(32, 1024, 4), True).source == "roofline"  # no 4-rank table
    a2a = costs.time(O.dispatch_combine(8, 8, 7168, 8), True)
    assert a2a.source == "calibrated" and a2a.comm_s == pytest.approx(46e-6)


MLA = AttentionSpec(kind="mla", num_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                    qk_rope_head_dim=64, v_head_dim=128)


def test_verify_attention_is_extrapolated_and_labelled(costs):
    decode = O.attention_core(MLA, np.ones(8, int), np.full(8, 1023), "bf16", tp=8)
    verify = O.attention_core(MLA, np.full(8, 4), np.full(8, 1020), "bf16", tp=8)
    t1, t4 = costs.time(decode, True), costs.time(verify, True)
    assert t1.source == "calibrated" and t4.source == "extrapolated"
    assert t4.total_s >= t1.total_s                                         # more work, never less time


def test_stand_ins_are_labelled(costs):
    frozen = AttentionSpec(kind="gqa", num_heads=16, num_kv_heads=1, head_dim=128, kv_source="target_last_full")
    op = O.attention_core(frozen, np.ones(8, int), np.full(8, 1023), "bf16", tp=1)
    assert costs.time(op, True).source == "calibrated:gqa"
    head = O.lm_head_ops(_tiny_model(), 4, "bf16", 1)[0]
    assert costs.time(head, True).source.endswith(":gemm")
    assert costs.time(O.layer_elementwise(4, 1024), True).source == "roofline"  # launch figures, not zero
    elementwise = O.layer_elementwise(4, 1024)
    assert costs.time(elementwise, True).total_s == costs.roofline.time(elementwise, True).total_s > 0  # its price, unchanged


def test_moe_priced_at_its_measured_shape(costs):
    ffn = FFNSpec(kind="moe", num_experts=256, top_k=8, expert_intermediate_size=2048)
    timed = O.moe_experts(ffn, 7168, 4, "fp8", O.Parallel(tp=8, ep=1), touched=32)  # round-robin: 4 x 8 experts
    t = costs.time(timed, True)
    assert t.source == "calibrated" and t.total_s == pytest.approx(0.138e-3, rel=1e-6)
    # random routing touches fewer (31.2 expected): the timed row's time, moved to that op's work
    random = O.moe_experts(ffn, 7168, 4, "fp8", O.Parallel(tp=8, ep=1))
    r = costs.time(random, True)
    assert r.source == "calibrated-scaled" and r.total_s <= t.total_s


def test_balanced_rows_are_labelled_with_the_experts_the_kernel_touched():
    """aiconfigurator's balanced_logits is round-robin: min(E, T * k) distinct experts."""
    from mtpsim.calibration.aic_rows import balanced_touched
    assert [balanced_touched(256, 8, t) for t in (1, 4, 31, 32, 64)] == [8, 32, 248, 256, 256]


def test_cli_refuses_an_existing_folder_and_needs_out(profile, capsys, monkeypatch):
    assert main(["calibrate", "--from", "aiconfigurator", "--out", str(profile)]) == 2
    assert "a profile is already there; set MTPSIM_CALIBRATE_REPLACE=1 to replace it" in capsys.readouterr().err
    assert main(["calibrate", "--from", "aiconfigurator"]) == 2
    # as the device path does (limits.md), MTPSIM_CALIBRATE_REPLACE=1 lets it replace a profile: the
    # next check, an unknown --system, is what stops it now (it ignored the variable before)
    monkeypatch.setenv("MTPSIM_CALIBRATE_REPLACE", "1")
    capsys.readouterr()
    assert main(["calibrate", "--from", "aiconfigurator", "--out", str(profile), "--system", "nope"]) == 2
    assert "--system: nope: unknown system" in capsys.readouterr().err


def _tiny_model():
    from mtpsim.catalog import load_model
    return load_model("deepseek-v3")


def test_trtllm_block_fp8_moe_on_sm100_reads_the_kernel_the_engine_runs(tmp_path):
    """TensorRT-LLM's table times block-FP8 experts on B200 with DEEPGEMM only; the engine serves
    them with its TRTLLM backend, whose trtllm-gen kernels SGLang's table times (aic_kernels.py).
    The converted profile prices those, meta.yaml says so, and per-tensor/NVFP4 rows are untouched."""
    root = tmp_path / "systems"
    (root / "data" / "b200_sxm").mkdir(parents=True)
    (root / "query_versions.yaml").write_text(yaml.safe_dump(
        {"defaults": {"sglang": {"current": "0.5.14"}, "trtllm": {"current": "1.3.0rc20"}}}))

    def write(backend, version, file, rows, framework):
        folder = root / "data" / "b200_sxm" / file.split("/")[0] / backend / version
        folder.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).assign(framework=framework, version=version, device="NVIDIA B200").to_parquet(
            folder / file.split("/")[1])

    def moe(kernel, dtype, ms):
        return [dict(op_name="moe", kernel_source=kernel, moe_dtype=dtype, num_tokens=t, hidden_size=7168, inter_size=2048,
                     topk=8, num_experts=256, moe_tp_size=8, moe_ep_size=1, distribution="balanced", latency=ms * t)
                for t in (1, 4, 16)]

    write("trtllm", "1.3.0rc20", "gemm/gemm_perf.parquet",
          [_gemm(m, 1024, 1024, 0.01, dtype="bfloat16") for m in (1, 4)], "TRTLLM")
    write("trtllm", "1.3.0rc20", "attention/generation_attention_perf.parquet",
          [dict(op_name="generation_attention", kernel_source="trtllm", batch_size=1, isl=1, num_heads=8, num_key_value_heads=1,
                head_dim=128, beam_width=1, attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=127, window_size=0,
                latency=0.01)], "TRTLLM")
    write("trtllm", "1.3.0rc20", "moe/moe_perf.parquet",
          moe("deepgemm", "fp8_block", 0.3) + moe("moe_torch_flow_cutlass", "bfloat16", 0.5), "TRTLLM")
    write("sglang", "0.5.14", "moe/moe_perf.parquet",
          moe("sglang_flashinfer_trtllm_moe", "fp8_block", 0.1) + moe("sglang_fused_moe_triton", "fp8_block", 0.05), "SGLang")
    out = tmp_path / "b200-trtllm"
    A.convert("b200_sxm", "trtllm", None, out, root=root, progress=lambda *_: None)
    rows = pd.read_csv(out / "moe.csv.gz")
    fp8 = rows[rows.dtype == "fp8"].sort_values("tokens")
    assert fp8.time_s.tolist() == pytest.approx([1e-4 * t for t in (1, 4, 16)])  # trtllm-gen's, not DEEPGEMM's nor triton's
    bf16 = rows[rows.dtype == "bf16"].sort_values("tokens")
    assert bf16.time_s.tolist() == pytest.approx([5e-4 * t for t in (1, 4, 16)])
    (moe_source,) = yaml.safe_load((out / "meta.yaml").read_text())["families"]["moe"]["sources"]
    (borrowed,) = moe_source["borrowed"]
    assert borrowed["table"] == "moe/sglang/0.5.14/moe_perf.parquet"
    assert borrowed["kernel_source"] == "sglang_flashinfer_trtllm_moe" and borrowed["replaces"] == ["deepgemm"]
    assert moe_source["rows_read"] == 6  # the engine's own table, before the borrow

    # SGLang's own profile of the same GPU borrows nothing
    write("sglang", "0.5.14", "gemm/gemm_perf.parquet", [_gemm(m, 1024, 1024, 0.01) for m in (1, 4)], "SGLang")
    write("sglang", "0.5.14", "attention/generation_attention_perf.parquet",
          [dict(op_name="generation_attention", kernel_source="fa", batch_size=1, isl=1, num_heads=8, num_key_value_heads=1,
                head_dim=128, beam_width=1, attn_dtype="bfloat16", kv_cache_dtype="bfloat16", step=127, window_size=0,
                latency=0.01)], "SGLang")
    out = tmp_path / "b200-sglang"
    A.convert("b200_sxm", "sglang", None, out, root=root, progress=lambda *_: None)
    assert "borrowed" not in yaml.safe_load((out / "meta.yaml").read_text())["families"]["moe"]["sources"][0]
    assert pd.read_csv(out / "moe.csv.gz").sort_values("tokens").time_s.tolist() == pytest.approx([5e-5 * t for t in (1, 4, 16)])


def test_mla_bmm_rows_keep_each_dtype_s_fastest_kernel_by_tokens_and_heads():
    """aiconfigurator's mla_bmm table becomes the bmm family: W_UK (pre) as 128 x 512 per head,
    W_UV (post) as 512 x 128, milliseconds to seconds, the fastest kernel per dtype and shape."""
    from mtpsim.calibration.aic_rows import bmm_rows
    rows = [dict(op_name=op, kernel_source=kernel, bmm_dtype=dtype, num_tokens=m, num_heads=h, latency=ms)
            for op in ("mla_gen_pre", "mla_gen_post") for m in (1, 64) for h in (16, 32)
            for kernel, dtype, ms in (("torch_bmm", "bfloat16", 0.004), ("slow_bmm", "bfloat16", 0.02),
                                      ("bmm_fp8", "fp8", 0.0077), ("int8_bmm", "int8", 0.001))]
    out = bmm_rows(pd.DataFrame(rows))
    assert set(zip(out.k, out.n)) == {(128, 512), (512, 128)} and set(out.dtype) == {"bf16", "fp8"}
    assert len(out) == 2 * 2 * 2 * 2  # op x tokens x heads x dtype: one row each, int8 dropped
    assert np.allclose(out[out.dtype == "bf16"].time_s, 4e-6) and np.allclose(out[out.dtype == "fp8"].time_s, 7.7e-6)
    one = out[(out.dtype == "bf16") & (out.k == 128) & (out.m == 64) & (out.heads == 16)].iloc[0]
    op = O.bmm("b", 64, 16, 128, 512, "bf16")
    assert (one.flops, one.bytes) == (op.flops, op.bytes)


def test_deepep_rows_go_to_sglang_profiles_only(monkeypatch):
    """The multi-node DeepEP rows time SGLang's DeepEP: a TensorRT-LLM or vLLM profile does not
    take them (their wide EP keeps its own all-to-all pricing); NCCL collectives go to every one."""
    monkeypatch.setattr(aic_sources, "deepep_rows", lambda data, device: "deepep")
    monkeypatch.setattr(aic_sources, "nccl_rows", lambda root, system, device: "nccl")
    for backend, families in (("sglang", ["alltoall_wide_ep", "collective"]), ("trtllm", ["collective"]),
                              ("vllm", ["collective"])):
        assert list(aic_sources.system_wide_tables(Path("r"), Path("d"), SYSTEM, backend)) == families


@pytest.mark.parametrize("name", ["h200-sglang", "b200-trtllm"])
def test_a_committed_profile_is_what_the_converter_writes_today(tmp_path, name):
    """The committed profiles are the converter's output on the pinned database, file for file
    (meta.yaml but its date): a converter change reconverts them, so no profile keeps an older
    converter's families or rows. Needs the database itself, which the dev extra installs (CI runs it)."""
    pytest.importorskip("aiconfigurator_core")
    import gzip

    from mtpsim.costs.profile import PROFILES_DIR
    committed = PROFILES_DIR / name
    meta = yaml.safe_load((committed / "meta.yaml").read_text())
    # the dev extra pins the release the profiles came from: another one installed is a pin and a
    # profile that disagree (fix the pin or reconvert), not a reason to pass without checking
    assert meta["source"]["package_version"] == A.installed_version(), \
        f"aiconfigurator-core {A.installed_version()} installed, profiles converted from {meta['source']['package_version']}"
    out = tmp_path / name
    A.convert(meta["source"]["system"], meta["source"]["backend"], None, out, progress=lambda *_: None)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in committed.iterdir())
    tables = sorted(committed.glob("*.csv.gz"))
    assert tables, "no tables to compare: the loop below would check nothing"
    for table in tables:
        assert gzip.decompress((out / table.name).read_bytes()) == gzip.decompress(table.read_bytes()), table.name
    fresh = yaml.safe_load((out / "meta.yaml").read_text())
    assert {**fresh, "date": None} == {**meta, "date": None}


def test_triton_block_fp8_moe_rows_come_from_the_archived_0_5_10_table(tmp_path):
    """moe_triton: SGLang's Triton fused-MoE runner on block-FP8 experts, from the 0.5.10 table of
    an older systems folder (--archive; aiconfigurator-core 0.12.0 ships no such table), by moe's
    rules; other kernels and dtypes in that table are not taken, nor a newer or older version's.
    Without --archive the family is left out and the profile is what it was."""
    import hashlib

    def write(root, version, rows, file="moe/moe_perf.parquet"):
        folder = root / "data" / "b200_sxm" / file.split("/")[0] / "sglang" / version
        folder.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).assign(framework="SGLang", version=version, device="NVIDIA B200").to_parquet(
            folder / file.split("/")[1])
        return folder / file.split("/")[1]

    def moe(kernel, dtype, ms):
        return [dict(op_name="moe", kernel_source=kernel, moe_dtype=dtype, num_tokens=t, hidden_size=7168, inter_size=2048,
                     topk=8, num_experts=256, moe_tp_size=8, moe_ep_size=1, distribution=dist, latency=ms * t)
                for t in (1, 4, 16) for dist in ("balanced", "power_law_1.2")]

    root = tmp_path / "systems"
    (root / "data" / "b200_sxm").mkdir(parents=True)
    (root / "query_versions.yaml").write_text(yaml.safe_dump({"defaults": {"sglang": {"current": "0.5.14"}}}))
    write(root, "0.5.14", [_gemm(m, 1024, 1024, 0.01) for m in (1, 4)], "gemm/gemm_perf.parquet")
    write(root, "0.5.14", [dict(op_name="generation_attention", kernel_source="fa", batch_size=1, isl=1, num_heads=8,
                                num_key_value_heads=1, head_dim=128, beam_width=1, attn_dtype="bfloat16",
                                kv_cache_dtype="bfloat16", step=127, window_size=0, latency=0.01)],
          "attention/generation_attention_perf.parquet")
    write(root, "0.5.14", moe("sglang_flashinfer_trtllm_moe", "fp8_block", 0.1)
          + moe("sglang_fused_moe_triton", "fp8_block", 0.9))
    archive = tmp_path / "old" / "systems"
    table = write(archive, "0.5.10", moe("sglang_flashinfer_trtllm_moe", "fp8_block", 0.05)
                  + moe("sglang_fused_moe_triton", "fp8_block", 0.3) + moe("sglang_fused_moe_triton", "bfloat16", 0.4))
    write(archive, "0.5.9", moe("sglang_fused_moe_triton", "fp8_block", 7.0))
    write(archive, "0.5.14", moe("sglang_fused_moe_triton", "fp8_block", 8.0))

    out = tmp_path / "with"
    A.convert("b200_sxm", "sglang", None, out, root=root, archive=archive, progress=lambda *_: None)
    rows = pd.read_csv(out / "moe_triton.csv.gz").sort_values("tokens")
    assert set(rows.dtype) == {"fp8"} and rows.time_s.tolist() == pytest.approx([3e-4 * t for t in (1, 4, 16)])
    assert rows.touched.tolist() == [8, 32, 128]  # balanced rows, as `moe`'s
    # `moe` is the installed package's table, fastest kernel per shape, untouched by the archive
    assert pd.read_csv(out / "moe.csv.gz").sort_values("tokens").time_s.tolist() == pytest.approx([1e-4 * t for t in (1, 4, 16)])
    (record,) = yaml.safe_load((out / "meta.yaml").read_text())["families"]["moe_triton"]["sources"]
    assert record["table"] == "moe/sglang/0.5.10/moe_perf.parquet" and record["kernel_source"] == "sglang_fused_moe_triton"
    assert record["sha256"] == hashlib.sha256(table.read_bytes()).hexdigest() and record["dtypes"] == {"fp8": "fp8_block"}

    plain = tmp_path / "without"
    A.convert("b200_sxm", "sglang", None, plain, root=root, progress=lambda *_: None)
    assert not (plain / "moe_triton.csv.gz").exists()
    assert "moe_triton" not in yaml.safe_load((plain / "meta.yaml").read_text())["families"]
    assert (plain / "moe.csv.gz").read_bytes() == (out / "moe.csv.gz").read_bytes()
