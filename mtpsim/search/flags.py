"""Launch options that express a chosen deployment in SGLang, vLLM and TensorRT-LLM, or why an
engine cannot run it.

Each engine's options as its server arguments name them:
- SGLang 0.5.12 (sglang.yaml's default), python/sglang/srt/server_args.py of the released wheel
  (`pip download --no-deps sglang==0.5.12`): --tp-size, --ep-size, --enable-dp-attention with
  --dp-size (attention groups; tp % dp == 0), --dp-size alone for replicas, --max-running-requests
  (under DP attention split over the groups). Speculative algorithms (--speculative-algorithm,
  "Builtins: EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH"):
  - nextn: NEXTN (the model's own MTP layer, one layer reused per step), or EAGLE3 with
    --speculative-draft-model-path for an external draft; --speculative-num-steps,
    --speculative-eagle-topk, --speculative-num-draft-tokens.
  - multi_layer: EAGLE with --enable-multi-layer-eagle (one MTP layer per step; server_args turns
    it on itself for MiMoV2 and Step3p5 under EAGLE, in _handle_model_specific_adjustments, which
    runs before NEXTN is renamed EAGLE, so the flag is given).
  - frozen_kv: NEXTN with --speculative-draft-model-path naming a Gemma4AssistantForCausalLM, which
    _resolve_speculative_algorithm_alias promotes to FROZEN_KV_MTP (EAGLE3 is refused for it);
    topk > 1 needs the triton draft attention backend (speculative/frozen_kv_mtp_worker.py).
  - block (DFlash): DFLASH with --speculative-draft-model-path and --speculative-dflash-block-size
    (the verify window, = --speculative-num-draft-tokens; steps and topk forced to 1); refused
    with DP attention. No DSpark algorithm: a DSpark drafter cannot run; the output says how
    0.5.23 runs it (srt/arg_groups/fields/spec.py: "Builtins: ... DFLASH, DSPARK, UNO",
    --speculative-dspark-block-size "Draft block size gamma (number of proposed draft tokens)").
  - parallel_heads: no algorithm (no Medusa-style heads in 0.5.12).
- vLLM 0.22.0 (vllm.yaml's default), vllm/engine/arg_utils.py and vllm/config/speculative.py of the
  released wheel: --tensor-parallel-size, --data-parallel-size, --enable-expert-parallel,
  --max-num-seqs, --speculative-config {"method": ..., "num_speculative_tokens": S}. Its MoE layers
  span all dp x tp GPUs (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make:
  tensor-sharded across them, or with --enable-expert-parallel experts split across them), so an
  ep strictly between 1 and the replica's GPUs has no vLLM form; its drafts are chains. Methods:
  - nextn: "mtp" (own layer) or "eagle3" with "model"; an MTP model runs layer
    spec_step_idx % n_predict at each step (model_executor/models/deepseek_mtp.py,
    mimo_v2_mtp.py), so a model of several MTP layers cannot reuse one (that is multi_layer).
  - multi_layer: "mtp", S at most the model's layers (n_predict).
  - frozen_kv: "mtp" with "model" the assistant: hf_config_override maps model_type
    gemma4_assistant to gemma4_mtp (v1/spec_decode/gemma4.py shares the target's KV).
  - block (DFlash): "dflash" with "model" (DFlashModelTypes); no DSpark method: the output says how
    0.25.0 runs it ("dspark", its drafter read from the target checkpoint: vllm/config/speculative.py
    DSparkModelTypes, "DeepSeek DSpark can ship the weights inside the target checkpoint").
  - parallel_heads: "medusa" needs a Medusa checkpoint (model_type medusa), not these heads.
- TensorRT-LLM (trtllm.yaml names 1.3.0; tensorrt_llm/llmapi/llm_args.py read at NVIDIA/TensorRT-LLM
  commit fcd3f31682808ae56118ae43c1d7864a3a945e6f, not pinned to that release): trtllm-serve
  --tp_size, --ep_size, --max_batch_size, and --extra_llm_api_options YAML keys enable_attention_dp
  (attention DP over all tp GPUs: attention_dp 1 or tp only) and speculative_config:
  - nextn: {decoding_type: MTP, num_nextn_predict_layers: S} on a one-layer MTP checkpoint (the
    EAGLE-style MTP_EAGLE_ONE_MODEL mode); on a checkpoint of several layers MTPDecodingConfig's
    spec_dec_mode is vanilla MTP, one layer per step, so one layer reused has no form there; an
    external draft is {decoding_type: Eagle3, max_draft_len: S, speculative_model: DRAFT}.
  - multi_layer: MTP with use_mtp_vanilla: true ("sequential MTP layers").
  - frozen_kv, block, parallel_heads: no decoding type at that commit (Eagle, Eagle3, MTP, NGram,
    Draft_Target, PARD, User_Provided, AUTO, SaveState).
  Chains only (topk 1).
A replica count above one is that many servers behind a router, except SGLang's --dp-size where
no attention DP is in use. A disaggregated deployment (search/disagg.py) is each pool's servers,
SGLang's with --disaggregation-mode prefill | decode (server_args.py; the KV moves over its
--disaggregation-transfer-backend, mooncake by default); vLLM's --kv-transfer-config connector and
TensorRT-LLM's disaggregated serving setup are named, not generated.
"""
from __future__ import annotations

import json
import re

import pandas as pd

from mtpsim.designs import BASELINE
from mtpsim.engine_forms import ENGINE_LABEL, Drafter, cannot_launch


def _sglang_spec(row: pd.Series, d: Drafter) -> list[str] | str:
    steps = [f"--speculative-num-steps {row.steps}", f"--speculative-eagle-topk {row.topk}",
             f"--speculative-num-draft-tokens {row.draft_tokens}"]
    if row.design == "nextn":
        algo = "EAGLE3 --speculative-draft-model-path DRAFT" if d.external else "NEXTN"
        return [f"--speculative-algorithm {algo}", *steps]
    if row.design == "multi_layer":
        return ["--speculative-algorithm EAGLE --enable-multi-layer-eagle", *steps]
    if row.design == "frozen_kv":
        triton = ["--speculative-draft-attention-backend triton"] if row.topk > 1 else []
        return ["--speculative-algorithm NEXTN --speculative-draft-model-path ASSISTANT", *steps, *triton]
    if row.design == "block":
        if d.block_kind == "dspark":  # its form from 0.5.23 (srt/arg_groups/fields/spec.py), beside 0.5.12's refusal
            return (f"SGLang: cannot run a dspark block drafter in 0.5.12 (its algorithms have DFLASH only); 0.5.23 "
                    f"has speculative algorithm DSPARK, dspark block size {row.steps}, for a checkpoint's bundled drafter")
        if d.block_kind != "dflash":
            return f"SGLang: cannot run a {d.block_kind} block drafter (0.5.12's algorithms have DFLASH only)"
        return ["--speculative-algorithm DFLASH --speculative-draft-model-path DRAFT",
                f"--speculative-dflash-block-size {row.steps + 1}"]
    return f"SGLang: cannot run design {row.design} (no speculative algorithm of 0.5.12 maps to it)"


def _cannot(kind: str, row: pd.Series, drafter: Drafter) -> str | None:
    """engine_forms.cannot_launch's reason for the row under engine `kind`, or None."""
    found = cannot_launch(kind, row.design, row.topk, row.tp, row.ep, row.attention_dp, drafter)
    return None if found is None else f"{ENGINE_LABEL[kind]}: {found[1]}"


def sglang(row: pd.Series, cap: int, drafter: Drafter) -> str:
    cannot = _cannot("sglang", row, drafter)
    if cannot is not None:
        return cannot
    parts = ["python -m sglang.launch_server --model-path MODEL", f"--tp-size {row.tp}"]
    if row.ep > 1:
        parts.append(f"--ep-size {row.ep}")
    if row.attention_dp > 1:
        parts.append(f"--enable-dp-attention --dp-size {row.attention_dp}")
    elif row.replicas > 1:
        parts.append(f"--dp-size {row.replicas}")
    if row.design != BASELINE:
        spec = _sglang_spec(row, drafter)
        if isinstance(spec, str):
            return spec
        parts += spec
    parts.append(f"--max-running-requests {cap}")
    text = " \\\n    ".join(parts)
    if row.replicas > 1 and row.attention_dp > 1:
        text = f"# {row.replicas} servers like this one, behind a router (e.g. sglang-router)\n" + text
    return text


def _vllm_spec(row: pd.Series, d: Drafter) -> dict | str:
    if row.design == "nextn":
        return {"method": "eagle3", "model": "DRAFT"} if d.external else {"method": "mtp"}
    if row.design == "multi_layer":
        return {"method": "mtp"}
    if row.design == "frozen_kv":
        return {"method": "mtp", "model": "ASSISTANT"}
    if row.design == "block":
        if d.block_kind == "dspark":  # its form from 0.25.0 (vllm/config/speculative.py), beside 0.22.0's refusal
            return ("vLLM: cannot run a dspark block drafter in 0.22.0 (its block method is dflash only); 0.25.0 has "
                    f"speculative method dspark, num_speculative_tokens {int(row.steps)}, for a checkpoint's bundled drafter")
        if d.block_kind != "dflash":
            return f"vLLM: cannot run a {d.block_kind} block drafter (0.22.0's block method is dflash only)"
        return {"method": "dflash", "model": "DRAFT"}
    return f"vLLM: cannot run design {row.design} (its medusa method needs a Medusa checkpoint, not these heads)"


def vllm(row: pd.Series, cap: int, drafter: Drafter) -> str:
    cannot = _cannot("vllm", row, drafter)
    if cannot is not None:
        return cannot
    parts = ["vllm serve MODEL", f"--tensor-parallel-size {row.tp // row.attention_dp}"]
    if row.attention_dp > 1:
        parts.append(f"--data-parallel-size {row.attention_dp}")
    if row.ep > 1:
        parts.append("--enable-expert-parallel")
    if row.design != BASELINE:
        spec = _vllm_spec(row, drafter)
        if isinstance(spec, str):
            return spec
        parts.append(f"--speculative-config '{json.dumps({**spec, 'num_speculative_tokens': int(row.steps)})}'")
    parts.append(f"--max-num-seqs {cap}")
    text = " \\\n    ".join(parts)
    return (f"# {row.replicas} servers like this one, behind a router\n" + text) if row.replicas > 1 else text


def _trtllm_spec(row: pd.Series, d: Drafter) -> dict | str:
    if row.design == "nextn":
        if d.external:
            return {"decoding_type": "Eagle3", "max_draft_len": int(row.steps), "speculative_model": "DRAFT"}
        return {"decoding_type": "MTP", "num_nextn_predict_layers": int(row.steps)}
    if row.design == "multi_layer":
        return {"decoding_type": "MTP", "num_nextn_predict_layers": int(row.steps), "use_mtp_vanilla": True}
    return f"TensorRT-LLM: cannot run design {row.design} (no decoding type for it in llm_args.py at the commit read)"


def trtllm(row: pd.Series, cap: int, drafter: Drafter) -> str:
    cannot = _cannot("trtllm", row, drafter)
    if cannot is not None:
        return cannot
    options = {"enable_attention_dp": bool(row.attention_dp > 1)}
    if row.design != BASELINE:
        spec = _trtllm_spec(row, drafter)
        if isinstance(spec, str):
            return spec
        options["speculative_config"] = spec
    text = (f"trtllm-serve MODEL --tp_size {row.tp} --ep_size {row.ep} --max_batch_size {cap} "
            f"--extra_llm_api_options extra.yaml\n# extra.yaml: {json.dumps(options)}")
    return (f"# {row.replicas} servers like this one, behind a router\n" + text) if row.replicas > 1 else text


POOLS = re.compile(r"^(\d+)P\(tp(\d+) ep(\d+) adp(\d+)\) (\d+)D\(tp(\d+) ep(\d+) adp(\d+)\)$")


def disaggregated_flags(row: pd.Series, cap: int, drafter: Drafter, pools: re.Match) -> str:
    """Each pool's servers as launch_flags gives them, SGLang's in its disaggregation mode."""
    n = [int(g) for g in pools.groups()]
    out = [f"# disaggregated: {n[0]} prefill and {n[4]} decode servers; the KV moves from one to the other "
           "(vLLM: add a --kv-transfer-config connector; TensorRT-LLM: its disaggregated serving setup)"]
    for role, (replicas, tp, ep, adp) in (("prefill", n[:4]), ("decode", n[4:])):
        pool = row.copy()
        pool["layout"], pool["replicas"], pool["tp"], pool["ep"], pool["attention_dp"] = role, replicas, tp, ep, adp
        text = launch_flags(pool, cap, drafter).replace("--model-path MODEL", f"--model-path MODEL --disaggregation-mode {role}")
        out.append(f"## {role} pool: {replicas} x (tp {tp}, ep {ep}, attention_dp {adp})\n\n{text}")
    return "\n\n".join(out)


def launch_flags(row: pd.Series, cap: int, drafter: Drafter | bool = False) -> str:
    """The three engines' options for `row` (a frontier row), each under a header line. `cap` is
    each replica's running-request cap as simulated: SGLang takes the replica's (it divides it over
    its DP-attention ranks), vLLM's --max-num-seqs is per data-parallel rank, and TRT-LLM's
    --max_batch_size is given per attention-DP rank likewise (assumed, not read in its source).
    `drafter`: Drafter.of(the chosen point), or True for an external draft of nextn."""
    drafter = drafter if isinstance(drafter, Drafter) else Drafter(external=bool(drafter))
    pools = POOLS.match(str(row.get("layout", "")))
    if pools:
        return disaggregated_flags(row, cap, drafter, pools)
    row = row.copy()
    row["draft_tokens"] = int(row.steps) + 1 if row.topk == 1 else int(row.get("draft_tokens", row.steps + 1))
    for c in ("tp", "ep", "attention_dp", "replicas", "steps", "topk"):
        row[c] = int(row[c])
    per_group = -(-cap // row.attention_dp)
    return "\n\n".join([f"[sglang 0.5.12]\n{sglang(row, cap, drafter)}",
                        f"[vllm 0.22.0]\n{vllm(row, per_group, drafter)}",
                        f"[trtllm 1.3.0]\n{trtllm(row, per_group, drafter)}"])
