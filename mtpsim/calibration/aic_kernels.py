"""Which kernel an engine runs where its own aiconfigurator table times another one.

aiconfigurator-core collects each engine's tables with the kernels its collectors call, and
those are not always the kernels the engine serves with. Where the kernel an engine really runs
for a (GPU, dtype) was measured on the same GPU under another engine's table, the converter
takes those rows in place of the ones the engine does not run, and meta.yaml names the table,
the kernel and the reason (`Borrow.record`).

One rule today, for the MoE experts of block-FP8 checkpoints (DeepSeek-V3/R1, Qwen3 FP8) under
TensorRT-LLM on Blackwell (sm100: B200, GB200, B300, GB300):
- What TensorRT-LLM's table has: `moe_perf.parquet` (1.3.0rc20) times block-FP8 experts with
  one kernel source only, `deepgemm` (the DEEPGEMM MoE backend).
- What the engine serves with: the `TRTLLM` MoE backend (TRTLLMGenFusedMoE, the trtllm-gen
  kernels). NVIDIA's own recipe database for DeepSeek-R1-0528 FP8 on B200 sets
  `moe_config.backend: TRTLLM` (NVIDIA/TensorRT-LLM
  examples/configs/database/deepseek-ai/DeepSeek-R1-0528/B200/1k1k_tp8_conc4.yaml and its
  siblings), and so does InferenceX's harness for every TP run
  (SemiAnalysisAI/InferenceX 843c6254, benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200_trt.sh
  `MOE_BACKEND="TRTLLM"`; DEEPGEMM only with DP-attention, dsr1_fp8_b200_trt_mtp.sh).
- Where that kernel was measured: SGLang on sm100 runs the same trtllm-gen kernels through
  FlashInfer (`flashinfer_trtllm` MoE runner: `trtllm_fp8_block_scale_moe`), and SGLang's table
  on the same GPU times them as `sglang_flashinfer_trtllm_moe`.
- A check that the two tables time the trtllm-gen kernels alike: for NVFP4, which TensorRT-LLM's
  own table does time with those kernels (`moe_torch_flow_min_latency`), its rows and SGLang's
  `sglang_flashinfer_trtllm_moe` rows over the 13,851 shapes both hold differ by a median ratio
  of 1.02 (b200_sxm, aiconfigurator-core 0.12.0). DEEPGEMM's block-FP8 rows at DeepSeek's
  shape, TP8, take 2.7-3.2x the trtllm-gen ones at 1-64 tokens: what made mtpsim price an R1
  FP8 decode step on B200 at 13.9 ms under TensorRT-LLM against 9.6 ms under SGLang (issue 19).

And one for GPT-OSS's MXFP4 experts under SGLang on Hopper (sm90: H100, H200):
- What SGLang's table has: `moe_perf.parquet` (0.5.14) times `w4a16_mxfp4` experts on sm90 with
  `sglang_fused_moe_triton` (and Marlin), the runner aiconfigurator's collector takes for sm90
  (collector/cases/base_ops/moe.yaml `w4a16_mxfp4: {90: triton}`).
- What the engine serves with: for GptOssForCausalLM with moe_runner_backend "auto", ep_size 1, no
  --quantization and the triton_kernels package importable, SGLang sets moe_runner_backend
  "triton_kernel": OpenAI's triton_kernels (matmul_ogs) MXFP4 MoE (sglang 0.5.2 and 0.5.13
  srt/server_args.py _handle_model_specific_adjustments, read in the released wheels; 0.5.19
  srt/arg_groups/model_overrides/gpt_oss.py _gpt_oss_overrides, "Detected GPT-OSS model, enabling
  triton_kernels MOE kernel."); with ep_size > 1 triton_kernel is refused ("Triton kernel MoE is
  only supported when ep_size == 1") and the Triton runner's rows stay.
- Where that kernel was measured: vLLM's table on the same GPU times GPT-OSS's MXFP4 experts with
  the same triton_kernels library (`vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic`,
  vLLM 0.24.0), at GPT-OSS's shapes only (hidden 2880, 128 or 32 experts, top 4): the rule takes
  them at ep 1 and replaces SGLang's rows at those shapes only, so other MXFP4 experts (DeepSeek-V4's,
  at their own shapes) keep SGLang's rows.
- An end-to-end check (scenarios/published/e1-*, a model card's SGLang spec-v2 run of gpt-oss-120b
  on one H100): plain decode 212 / 795 / 1,620 tok/s at batch 1 / 8 / 64, where the Triton
  runner's rows priced 170 / 366 / 770 (its experts 0.58 ms a layer at 8 tokens, the
  triton_kernels rows 0.20 ms).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

SM100 = ("b200_sxm", "gb200", "b300_sxm", "gb300")
SM90 = ("h100_sxm", "h200_sxm")


@dataclass(frozen=True)
class Borrow:
    """Rows of `kernel` at database dtype `dtype`, from `from_backend`'s `file` on the same
    system, in place of `backend`'s own rows of kernels `replaces` at that dtype."""

    backend: str
    systems: tuple[str, ...]
    folder: str
    file: str
    dtype: str
    replaces: tuple[str, ...]
    from_backend: str
    kernel: str
    why: str
    # the borrowed rows taken only where these columns hold these values (the engine runs the
    # kernel only there), and the own rows replaced only at the borrowed rows' values of `per_shape`
    # (the shapes the other table times); () for both: every row of the dtype
    only_where: tuple[tuple[str, object], ...] = ()
    per_shape: tuple[str, ...] = ()


BORROWS = (
    Borrow("trtllm", SM100, "moe", "moe_perf.parquet", "fp8_block", ("deepgemm",), "sglang",
           "sglang_flashinfer_trtllm_moe",
           "TensorRT-LLM serves block-FP8 MoE on sm100 with its TRTLLM backend (trtllm-gen kernels; "
           "NVIDIA's DeepSeek-R1-0528 B200 recipes and InferenceX set moe_config.backend TRTLLM); its "
           "table times only DEEPGEMM there, SGLang's table times the same trtllm-gen kernels through "
           "FlashInfer (mtpsim/calibration/aic_kernels.py)"),
    Borrow("sglang", SM90, "moe", "moe_perf.parquet", "w4a16_mxfp4",
           ("sglang_fused_moe_triton", "sglang_marlin_moe_situ_as_silu"), "vllm",
           "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic",
           "SGLang serves GPT-OSS's MXFP4 experts on sm90 with its triton_kernel runner (OpenAI's "
           "triton_kernels matmul_ogs) at ep 1 (server_args.py / model_overrides/gpt_oss.py); its table "
           "times the Triton fused-MoE runner there, vLLM's table times triton_kernels' MXFP4 experts "
           "at GPT-OSS's shapes (mtpsim/calibration/aic_kernels.py)",
           only_where=(("moe_ep_size", 1),),
           per_shape=("hidden_size", "num_experts", "topk", "moe_ep_size")),
)


def borrows_for(backend: str, system: str, folder: str, file: str) -> list[Borrow]:
    return [b for b in BORROWS if b.backend == backend and system in b.systems and b.folder == folder and b.file == file]


def apply(own: pd.DataFrame, borrowed: pd.DataFrame, rule: Borrow) -> pd.DataFrame:
    """`own` without the replaced kernels at the rule's dtype (at the borrowed shapes where the rule
    says `per_shape`), plus the borrowed kernel's rows (where `only_where` holds)."""
    take = borrowed[(borrowed.moe_dtype == rule.dtype) & (borrowed.kernel_source == rule.kernel)]
    for column, value in rule.only_where:
        take = take[take[column] == value]
    if take.empty:
        return own
    drop = (own.moe_dtype == rule.dtype) & own.kernel_source.isin(rule.replaces)
    if rule.per_shape:
        shapes = pd.MultiIndex.from_frame(take[list(rule.per_shape)].drop_duplicates())
        drop &= pd.MultiIndex.from_frame(own[list(rule.per_shape)]).isin(shapes)
    return pd.concat([own[~drop], take], ignore_index=True)


def record(rule: Borrow, table: Path, rows: int) -> dict:
    """meta.yaml's account of one borrow."""
    return {"table": str(table), "kernel_source": rule.kernel, "dtype": rule.dtype,
            "replaces": list(rule.replaces), "rows": rows, "why": rule.why,
            **({"only_where": dict(rule.only_where)} if rule.only_where else {}),
            **({"at_its_shapes": list(rule.per_shape)} if rule.per_shape else {})}
