"""Predicted vs logged KV capacity (tokens) of SGLang and vLLM deployments: the check on memory.py's engine rules.

Run: .venv/bin/python benchmarks/kv_capacity.py    (a second)

SGLang prints `max_total_num_tokens=N` (or "KV Cache is allocated. #tokens: N") at startup: the
tokens its KV pool holds per GPU group; vLLM prints "GPU KV cache size: N tokens". Each case below is
a public deployment quoting that line with its launch settings (model, GPU, tp, the memory knob);
the prediction is memory.py's rule for that engine (SGLang: pool = fraction x (driver capacity -
startup) - weights; vLLM: fraction x capacity - weights - activation peak - graphs; over the model's
KV bytes per token), with the fraction as launched. Nothing here is fitted to these cases. GPUs
and models outside the catalog are given inline, with their sources.
"""
from __future__ import annotations

import mtpsim.scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape
from mtpsim.memory import memory_budget, pool_rule

MIB = 2**20
# H20 96 GB: nvidia-smi "NVIDIA H20 ... 4MiB /  97871MiB" (quoted in public GitHub files); the
# rest of its figures do not matter here (capacity only)
H20 = {"from": "h100-sxm", "name": "h20", "memory_capacity_bytes": 97871 * MIB}

# Qwen3-235B-A22B-FP8 (config.json of Qwen/Qwen3-235B-A22B on Hugging Face: hidden_size 4096,
# num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4, head_dim 128, num_experts
# 128, num_experts_per_tok 8, moe_intermediate_size 1536, mlp_only_layers [], vocab_size 151936,
# tie_word_embeddings false, max_position_embeddings 40960). The -FP8 checkpoint quantises the
# linear layers (128x128 blocks), keeps embedding, LM head and KV in bf16.
QWEN3_235B_FP8 = {
    "name": "qwen3-235b-a22b-fp8", "hidden_size": 4096, "vocab_size": 151936, "max_context": 40960,
    "layers": [{"count": 94, "attention": "gqa", "ffn": "moe"}],
    "attention_kinds": {"gqa": {"kind": "gqa", "num_heads": 64, "num_kv_heads": 4, "head_dim": 128}},
    "ffn_kinds": {"moe": {"kind": "moe", "num_experts": 128, "top_k": 8, "expert_intermediate_size": 1536}},
    "dtypes": {"attention": "fp8", "dense_ffn": "fp8", "experts": "fp8", "lm_head": "bf16", "kv_cache": "bf16"},
}

CASES = [
    {"id": "dsr1-16xh20-tp16",
     "url": "https://github.com/sgl-project/sglang/blob/main/docs/references/deploy_on_k8s.md",
     "launch": "DeepSeek-R1 (FP8), 2 nodes x 8 H20, --tp 16 --mem-fraction-static 0.93",
     "log": "[2025-02-17 05:27:24 TP0] max_total_num_tokens=712400, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=50, context_len=163840",
     "model": "deepseek-v3", "hardware": H20, "tp": 16, "mem_fraction": 0.93, "logged": 712400},
    {"id": "dsv3-8xh200-tp8",
     "url": "https://github.com/sgl-project/sglang/issues/3196",
     "launch": "DeepSeek-V3 (FP8), 8 x H200 (nvidia-smi 143771MiB), --tp 8, no --mem-fraction-static "
               "seen in the thread: SGLang v0.4.x's default for tp 8, 0.81 (assumed)",
     "log": "[2025-01-29 19:50:52 TP0] max_total_num_tokens=480406, chunked_prefill_size=8192, ...",
     "model": "deepseek-v3", "hardware": "h200", "tp": 8, "mem_fraction": 0.81, "logged": 480406},
    {"id": "qwen3-235b-4xh100-tp4",
     "url": "https://github.com/vllm-project/vllm/issues/21348",
     "launch": "Qwen3-235B-A22B-FP8, 4 x H100, --tp 4 --mem-fraction-static 0.93",
     "log": "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB",
     "model": QWEN3_235B_FP8, "hardware": "h100-sxm", "tp": 4, "mem_fraction": 0.93, "logged": 367404},
    {"id": "qwen3-235b-4xh100-vllm",
     "url": "https://github.com/vllm-project/vllm/issues/21348",
     "launch": "Qwen3-235B-A22B-FP8, 4 x H100, vllm serve --tensor-parallel-size 4 (default "
               "gpu_memory_utilization 0.9; July 2025, a v0.9/v0.10 release)",
     "log": "Available KV cache memory: 8.11 GiB / GPU KV cache size: 178,880 tokens",
     # the default of its release, as launched: 0.9 until v0.20.0 (engines/vllm.yaml utilization_092)
     "model": QWEN3_235B_FP8, "hardware": "h100-sxm", "tp": 4, "engine": "vllm", "mem_fraction": 0.9,
     "logged": 178880},
    # V0 (worker.py) prints the pool in GiB, not tokens: 53.29 GiB over Llama-3-8B's 131,072 bytes a
    # token (32 layers x 8 KV heads x 128 x K and V x 2 bytes), in whole 16-token blocks, is 436,544
    # tokens. Llama-3.1-8B (the catalog entry) has the same layers, heads and vocabulary.
    {"id": "llama3-8b-1xh100-vllm",
     "url": "https://github.com/vllm-project/vllm/pull/10511",
     "launch": "Meta-Llama-3-8B (BF16), 1 x H100 80GB, vllm serve with defaults (gpu_memory_utilization "
               "0.90; December 2024, v0.6.x, the V0 engine)",
     "log": "total_gpu_memory 79.22GiB ... model weights take 14.96GiB, non_torch_memory 1.79GiB, PyTorch "
            "activation peak memory 1.26GiB, available_kv_cache_memory 53.29GiB",
     # 0.90: EngineArgs' default in the v0.6.4 to v0.6.6 wheels (vllm/engine/arg_utils.py), as launched
     "model": "llama-3.1-8b", "hardware": "h100-sxm", "tp": 1, "engine": "vllm", "mem_fraction": 0.9,
     "logged": 436544},
]


def predict(case: dict) -> int:
    s = sc.validate({"name": case["id"], "model": case["model"], "hardware": case["hardware"],
                     "parallel": {"tp": case["tp"]},
                     "engine": {"kind": case.get("engine", "sglang"), "mem_fraction": case.get("mem_fraction")}})
    return memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s)).max_kv_tokens


def main() -> None:
    print(f"{'case':24s} {'engine':7s} {'logged':>9s} {'predicted':>9s} {'error':>7s}  source")
    within: dict[str, list[bool]] = {}
    for case in CASES:
        got = predict(case)
        err = got / case["logged"] - 1
        engine = case.get("engine", "sglang")
        within.setdefault(engine, []).append(abs(err) <= 0.10)
        print(f"{case['id']:24s} {engine:7s} {case['logged']:9d} {got:9d} {err:+7.1%}  {case['url']}")
        print(f"{'':24s} {case['launch']}\n{'':24s} log: {case['log']}")
    print()
    for engine, hits in within.items():
        print(f"{engine}: {sum(hits)} of {len(hits)} logged deployments within 10 %")


if __name__ == "__main__":
    main()
