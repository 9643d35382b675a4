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
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

SM100 = ("b200_sxm", "gb200", "b300_sxm", "gb300")


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


BORROWS = (
    Borrow("trtllm", SM100, "moe", "moe_perf.parquet", "fp8_block", ("deepgemm",), "sglang",
           "sglang_flashinfer_trtllm_moe",
           "TensorRT-LLM serves block-FP8 MoE on sm100 with its TRTLLM backend (trtllm-gen kernels; "
           "NVIDIA's DeepSeek-R1-0528 B200 recipes and InferenceX set moe_config.backend TRTLLM); its "
           "table times only DEEPGEMM there, SGLang's table times the same trtllm-gen kernels through "
           "FlashInfer (mtpsim/calibration/aic_kernels.py)"),
)


def borrows_for(backend: str, system: str, folder: str, file: str) -> list[Borrow]:
    return [b for b in BORROWS if b.backend == backend and system in b.systems and b.folder == folder and b.file == file]


def apply(own: pd.DataFrame, borrowed: pd.DataFrame, rule: Borrow) -> pd.DataFrame:
    """`own` without the replaced kernels at the rule's dtype, plus the borrowed kernel's rows."""
    drop = (own.moe_dtype == rule.dtype) & own.kernel_source.isin(rule.replaces)
    take = borrowed[(borrowed.moe_dtype == rule.dtype) & (borrowed.kernel_source == rule.kernel)]
    if take.empty:
        return own
    return pd.concat([own[~drop], take], ignore_index=True)


def record(rule: Borrow, table: Path, rows: int) -> dict:
    """meta.yaml's account of one borrow."""
    return {"table": str(table), "kernel_source": rule.kernel, "dtype": rule.dtype,
            "replaces": list(rule.replaces), "rows": rows, "why": rule.why}
