"""GPT-OSS's MXFP4 experts under SGLang on Hopper are priced with the kernel SGLang serves them
with (triton_kernels' matmul_ogs, its `triton_kernel` runner), timed in vLLM's table on the same
GPU, and only at GPT-OSS's shapes and ep 1 (mtpsim/calibration/aic_kernels.py, issue 19)."""
from __future__ import annotations

import pandas as pd
import pytest
import yaml

pytest.importorskip("pyarrow")

from mtpsim.calibration import aiconfigurator as A  # noqa: E402
from tests.test_aiconfigurator import _gemm  # noqa: E402

OAI = "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic"
TOKENS = (1, 8, 64)


def _database(tmp_path, system: str, device: str):
    root = tmp_path / "systems"
    (root / "data" / system).mkdir(parents=True)
    (root / "query_versions.yaml").write_text(yaml.safe_dump(
        {"defaults": {"sglang": {"current": "0.5.14"}, "vllm": {"current": "0.24.0"}}}))

    def write(backend, version, file, rows, framework):
        folder = root / "data" / system / file.split("/")[0] / backend / version
        folder.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).assign(framework=framework, version=version, device=device).to_parquet(
            folder / file.split("/")[1])

    def moe(kernel, ms, hidden=2880, experts=128, topk=4, inter=2880, ep=1):
        return [dict(op_name="moe", kernel_source=kernel, moe_dtype="w4a16_mxfp4", num_tokens=t, hidden_size=hidden,
                     inter_size=inter, topk=topk, num_experts=experts, moe_tp_size=1, moe_ep_size=ep,
                     distribution="balanced", latency=ms * t) for t in TOKENS]

    gpt_oss_sglang = moe("sglang_fused_moe_triton", 0.3) + moe("sglang_fused_moe_triton", 0.25, ep=2)
    other_model = moe("sglang_fused_moe_triton", 0.4, hidden=7168, experts=384, topk=6, inter=3072)
    write("sglang", "0.5.14", "moe/moe_perf.parquet", gpt_oss_sglang + other_model, "SGLang")
    write("vllm", "0.24.0", "moe/moe_perf.parquet",
          moe(OAI, 0.1) + moe(OAI, 0.05, ep=2) + moe(OAI, 0.01, hidden=7168, experts=384, topk=6, inter=3072, ep=4),
          "VLLM")
    write("sglang", "0.5.14", "gemm/gemm_perf.parquet", [_gemm(m, 1024, 1024, 0.01) for m in (1, 4)], "SGLang")
    write("sglang", "0.5.14", "attention/generation_attention_perf.parquet",
          [dict(op_name="generation_attention", kernel_source="fa3", batch_size=1, isl=1, num_heads=8,
                num_key_value_heads=1, head_dim=128, beam_width=1, attn_dtype="bfloat16", kv_cache_dtype="bfloat16",
                step=127, window_size=0, latency=0.01)], "SGLang")
    return root


def _fp4(out, **shape) -> list[float]:
    rows = pd.read_csv(out / "moe.csv.gz")
    rows = rows[rows.dtype == "fp4"]
    for column, value in shape.items():
        rows = rows[rows[column] == value]
    return rows.sort_values("tokens").time_s.tolist()


def test_sglang_on_hopper_prices_gpt_oss_experts_with_triton_kernels_at_ep_1_only(tmp_path):
    """At GPT-OSS's shape and ep 1 the profile holds vLLM's triton_kernels rows; at ep 2 (where SGLang
    refuses its triton_kernel runner) and at another model's shape it keeps SGLang's own Triton rows,
    and vLLM's rows of that other shape are not taken."""
    root = _database(tmp_path, "h100_sxm", "NVIDIA H100 80GB HBM3")
    out = tmp_path / "h100-sglang"
    A.convert("h100_sxm", "sglang", None, out, root=root, progress=lambda *_: None)
    assert _fp4(out, d=2880, num_experts=128) == pytest.approx([1e-4 * t for t in TOKENS])
    assert _fp4(out, d=2880, num_experts=64) == pytest.approx([2.5e-4 * t for t in TOKENS])  # ep 2: 64 per rank
    assert _fp4(out, d=7168) == pytest.approx([4e-4 * t for t in TOKENS])
    (source,) = yaml.safe_load((out / "meta.yaml").read_text())["families"]["moe"]["sources"]
    (borrowed,) = source["borrowed"]
    assert borrowed["kernel_source"] == OAI and borrowed["table"] == "moe/vllm/0.24.0/moe_perf.parquet"
    assert borrowed["rows"] == len(TOKENS) and borrowed["only_where"] == {"moe_ep_size": 1}


def test_sglang_on_blackwell_keeps_its_own_mxfp4_rows(tmp_path):
    """On sm100 SGLang runs FlashInfer's MXFP4 MoE, which its own table times: nothing is borrowed."""
    root = _database(tmp_path, "b200_sxm", "NVIDIA B200")
    out = tmp_path / "b200-sglang"
    A.convert("b200_sxm", "sglang", None, out, root=root, progress=lambda *_: None)
    assert _fp4(out, d=2880, num_experts=128) == pytest.approx([3e-4 * t for t in TOKENS])
    assert "borrowed" not in yaml.safe_load((out / "meta.yaml").read_text())["families"]["moe"]["sources"][0]
