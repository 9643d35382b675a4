"""Predicted vs logged KV capacity (tokens) of SGLang deployments: the check on memory.py's engine rule.

Run: .venv/bin/python benchmarks/kv_capacity.py    (a second)

SGLang prints `max_total_num_tokens=N` at startup: the tokens its KV pool holds per GPU group. Each
case below is a public deployment quoting that line with its launch settings (model, GPU, tp,
mem_fraction_static); the prediction is memory.py's rule for engine sglang (pool = fraction x
(driver capacity - startup) - weights, over the model's KV bytes per token), with the fraction as
launched. Nothing here is fitted to these cases. GPUs outside the catalog are given their
driver-reported capacity inline, with its source.
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
]


def predict(case: dict) -> int:
    s = sc.validate({"name": case["id"], "model": case["model"], "hardware": case["hardware"],
                     "parallel": {"tp": case["tp"]},
                     "engine": {"kind": "sglang", "mem_fraction": case["mem_fraction"]}})
    return memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s)).max_kv_tokens


def main() -> None:
    print(f"{'case':20s} {'logged':>9s} {'predicted':>9s} {'error':>7s}  source")
    within = 0
    for case in CASES:
        got = predict(case)
        err = got / case["logged"] - 1
        within += abs(err) <= 0.10
        print(f"{case['id']:20s} {case['logged']:9d} {got:9d} {err:+7.1%}  {case['url']}")
        print(f"{'':20s} {case['launch']}\n{'':20s} log: {case['log']}")
    print(f"\n{within} of {len(CASES)} within 10 %")


if __name__ == "__main__":
    main()
