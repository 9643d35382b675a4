"""Launch options that express a chosen deployment in SGLang, vLLM and TensorRT-LLM, or why an
engine cannot run it.

Each engine's options as its server arguments name them:
- SGLang 0.5.12 (sglang.yaml's default), python/sglang/srt/server_args.py of the released wheel:
  --tp-size, --ep-size, --enable-dp-attention with --dp-size (attention groups; tp % dp == 0),
  --dp-size alone for replicas, --speculative-algorithm NEXTN (the model's own MTP layer) or
  EAGLE3 with --speculative-draft-model-path, --speculative-num-steps, --speculative-eagle-topk,
  --speculative-num-draft-tokens, --max-running-requests (under DP attention split over the groups).
- vLLM 0.22.0 (vllm.yaml's default), vllm/engine/arg_utils.py and vllm/config/speculative.py of the
  released wheel: --tensor-parallel-size, --data-parallel-size, --enable-expert-parallel, --max-num-seqs,
  --speculative-config {"method": "mtp" | "eagle3", "num_speculative_tokens": S}. Its MoE layers
  span all dp x tp GPUs (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make:
  tensor-sharded across them, or with --enable-expert-parallel experts split across them), so an
  ep strictly between 1 and the replica's GPUs has no vLLM form; its drafts are chains.
- TensorRT-LLM (trtllm.yaml names 1.3.0; read at NVIDIA/TensorRT-LLM commit 00209af1, not pinned to
  that release): trtllm-serve --tp_size, --ep_size, --max_batch_size, and --extra_llm_api_options
  YAML keys enable_attention_dp (attention DP over all tp GPUs: attention_dp 1 or tp only) and
  speculative_config {decoding_type: MTP, num_nextn_predict_layers: S}; chains only.
A replica count above one is that many servers behind a router, except SGLang's --dp-size where
no attention DP is in use.
"""
from __future__ import annotations

import json

import pandas as pd

from mtpsim.designs import BASELINE


def sglang(row: pd.Series, cap: int, external_draft: bool) -> str:
    parts = ["python -m sglang.launch_server --model-path MODEL", f"--tp-size {row.tp}"]
    if row.ep > 1:
        parts.append(f"--ep-size {row.ep}")
    if row.attention_dp > 1:
        parts.append(f"--enable-dp-attention --dp-size {row.attention_dp}")
    elif row.replicas > 1:
        parts.append(f"--dp-size {row.replicas}")
    if row.design == "nextn":
        algo = "EAGLE3 --speculative-draft-model-path DRAFT" if external_draft else "NEXTN"
        parts += [f"--speculative-algorithm {algo}", f"--speculative-num-steps {row.steps}",
                  f"--speculative-eagle-topk {row.topk}", f"--speculative-num-draft-tokens {row.draft_tokens}"]
    elif row.design != BASELINE:
        return f"SGLang: cannot run design {row.design} (no speculative algorithm of 0.5.12 maps to it here)"
    parts.append(f"--max-running-requests {cap}")
    text = " \\\n    ".join(parts)
    if row.replicas > 1 and row.attention_dp > 1:
        text = f"# {row.replicas} servers like this one, behind a router (e.g. sglang-router)\n" + text
    return text


def vllm(row: pd.Series, cap: int, external_draft: bool) -> str:
    if row.ep not in (1, row.tp):
        return f"vLLM: cannot run ep {row.ep} within {row.tp} GPUs (its experts span all of a server's GPUs or none)"
    if row.topk > 1:
        return "vLLM: cannot run a draft tree (topk > 1): its drafts are chains"
    parts = ["vllm serve MODEL", f"--tensor-parallel-size {row.tp // row.attention_dp}"]
    if row.attention_dp > 1:
        parts.append(f"--data-parallel-size {row.attention_dp}")
    if row.ep > 1:
        parts.append("--enable-expert-parallel")
    if row.design == "nextn":
        spec = {"method": "eagle3", "model": "DRAFT"} if external_draft else {"method": "mtp"}
        parts.append(f"--speculative-config '{json.dumps({**spec, 'num_speculative_tokens': int(row.steps)})}'")
    elif row.design != BASELINE:
        return f"vLLM: cannot run design {row.design} (no speculative method of 0.22.0 maps to it here)"
    parts.append(f"--max-num-seqs {cap}")
    text = " \\\n    ".join(parts)
    return (f"# {row.replicas} servers like this one, behind a router\n" + text) if row.replicas > 1 else text


def trtllm(row: pd.Series, cap: int, external_draft: bool) -> str:
    if row.attention_dp not in (1, row.tp):
        return f"TensorRT-LLM: cannot run attention_dp {row.attention_dp} of tp {row.tp} (attention DP spans all tp GPUs)"
    if row.topk > 1:
        return "TensorRT-LLM: cannot run a draft tree (topk > 1) with MTP"
    if row.design not in (BASELINE, "nextn") or (row.design == "nextn" and external_draft):
        return f"TensorRT-LLM: not expressed here for design {row.design}" + (" with an external draft" if external_draft else "")
    options = {"enable_attention_dp": bool(row.attention_dp > 1)}
    if row.design == "nextn":
        options["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": int(row.steps)}
    text = (f"trtllm-serve MODEL --tp_size {row.tp} --ep_size {row.ep} --max_batch_size {cap} "
            f"--extra_llm_api_options extra.yaml\n# extra.yaml: {json.dumps(options)}")
    return (f"# {row.replicas} servers like this one, behind a router\n" + text) if row.replicas > 1 else text


def launch_flags(row: pd.Series, cap: int, external_draft: bool = False) -> str:
    """The three engines' options for `row` (a frontier row), each under a header line. `cap` is
    each replica's running-request cap as simulated: SGLang takes the replica's (it divides it over
    its DP-attention ranks), vLLM's --max-num-seqs is per data-parallel rank, and TRT-LLM's
    --max_batch_size is given per attention-DP rank likewise (assumed, not read in its source)."""
    row = row.copy()
    row["draft_tokens"] = int(row.steps) + 1 if row.topk == 1 else int(row.get("draft_tokens", row.steps + 1))
    for c in ("tp", "ep", "attention_dp", "replicas", "steps", "topk"):
        row[c] = int(row[c])
    per_group = -(-cap // row.attention_dp)
    return "\n\n".join([f"[sglang 0.5.12]\n{sglang(row, cap, external_draft)}",
                        f"[vllm 0.22.0]\n{vllm(row, per_group, external_draft)}",
                        f"[trtllm 1.3.0]\n{trtllm(row, per_group, external_draft)}"])
