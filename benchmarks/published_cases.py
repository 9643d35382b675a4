"""The published cases benchmarks/published.py checks (shared/reference/published.md): each a
scenario in scenarios/published/, the column telling its points apart, and what its source
reported, cited in the scenario file's comments. Data only: the comparison lives in published.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """A published case: its scenario, the column telling its points apart, and what was reported.

    reported: key value -> speedup (or, for a metric that is not a speedup, the absolute figure);
    reported_al: key value -> accept length (absent = not stated); metric: the summary column that
    matches what the source measured (decode_speedup, decode_tps_per_gpu: `decode_rates`)."""

    id: str
    file: str
    key: str
    reported: dict
    reported_al: dict = field(default_factory=dict)
    metric: str = "speedup"
    unit: str = "batch"
    reported_none: float | None = None  # the source's plain-decode figure, a point of its own
    sets: tuple[str, ...] = ()  # overrides the source's run needs beyond its scenario file (`--set`)

    def point(self, value) -> str:
        """A point's label in the tables: the unit and the key's value (a number, or a name such as
        an engine version)."""
        return f"{self.unit} {value:g}" if isinstance(value, (int, float)) else f"{self.unit} {value}"


# D6: JarvisLabs, "Benchmarking Gemma 4 MTP vs DFlash on a Single H100" (2026-05-12): Gemma 4 on one
# H100 80GB, vLLM, SPEED-Bench qualitative; output tok/s at concurrency 1 and 16 of the plain target,
# Google's assistant (frozen_kv, 8 drafts) and z-lab's DFlash (block, 15 drafts). Accept lengths not
# stated: geometric through the reported position-1 rates (0.80 / 0.75) and 0.20 at position 8;
# lengths 256 in / 1,024 out assumed (scenario files d6-*)
D6_REPORTED = {("31b", "31B"): {"none": (40.3, 375), "mtp": (125.3, 953), "dflash": (122.1, 725)},
               ("26b-a4b", "26B-A4B"): {"none": (177.1, 975), "mtp": (264.2, 1808), "dflash": (306.4, 1957)}}


def d6_cases() -> list[Case]:
    """Each D6 arm's output tok/s and the speedups over the plain target the table implies, and the
    plain target's own tok/s (its `none` run, read from the MTP file with the drafter switched off)."""
    cases = []
    for (model, label), arms in D6_REPORTED.items():
        base = arms["none"]
        for arm, name in (("mtp", "MTP"), ("dflash", "DFlash")):
            file, (c1, c16) = f"d6-gemma-4-{model}-{arm}-vllm-h100.yaml", arms[arm]
            cases.append(Case("D6", file, "concurrency", {1: c1, 16: c16}, metric="tps", unit=f"{label} {name}, conc"))
            cases.append(Case("D6", file, "concurrency", {1: c1 / base[0], 16: c16 / base[1]},
                              unit=f"{label} {name}, conc"))
        cases.append(Case("D6", f"d6-gemma-4-{model}-mtp-vllm-h100.yaml", "concurrency", {1: base[0], 16: base[1]},
                          metric="tps", unit=f"{label} none, conc", sets=("speculative.design=none", "acceptance=null")))
    return cases


# S: SGLang SpecForge's SpecBundle dashboard (docs/spec_bundle/public/raw_data/data.json, SpecForge PR
# #382, 2025-12-23), H200 per its chart title, SGLang 0.5.6 (SpecForge's pin then), tp the smallest
# power of two that fits (scenario files s*-). Per (target, benchmark), the EAGLE-3 chain runs (steps,
# topk 1, steps + 1 draft tokens): (output tok/s with the draft, without it, accept length). The
# scenario file holds steps 3; steps 5 and 7 set the chain and its reported accept length (`--set`)
S_REPORTED = {
    ("S1", "llama-3.3-70b"): {
        "mtbench": {3: (1234.65, 540.46, 2.923), 5: (1377.81, 540.46, 3.532), 7: (1425.30, 540.46, 3.879)},
        "gsm8k": {3: (521.45, 453.22, 1.276), 5: (500.55, 453.22, 1.284), 7: (483.13, 453.22, 1.286)},
    },
    ("S2", "qwen3-235b-a22b"): {
        "mtbench": {3: (642.73, 529.90, 1.872), 5: (617.97, 529.90, 1.944), 7: (607.36, 529.90, 1.967)},
        "gsm8k": {3: (633.48, 469.13, 2.357), 5: (619.40, 469.13, 2.533), 7: (622.69, 469.13, 2.578)},
    },
    ("S3", "qwen3-30b-a3b"): {
        "mtbench": {3: (2048.69, 1341.35, 2.496), 5: (2086.12, 1341.35, 2.831), 7: (1998.16, 1341.35, 2.982)},
        "gsm8k": {3: (1488.36, 1071.29, 2.640), 5: (1499.62, 1071.29, 3.011), 7: (1438.40, 1071.29, 3.149)},
    },
    ("S4", "llama-3.1-8b"): {  # batch 1
        "mtbench": {3: (414.91, 189.98, 2.931), 5: (453.74, 189.98, 3.554), 7: (454.73, 189.98, 3.907)},
        "gsm8k": {3: (228.64, 181.81, 1.717), 5: (213.55, 181.81, 1.763), 7: (197.90, 181.81, 1.774)},
    },
    ("S5", "qwen3-next-80b-a3b"): {  # the FP8 release
        "mtbench": {3: (1095.51, 803.50, 2.581), 5: (1157.64, 803.50, 2.916), 7: (1127.44, 803.50, 3.048)},
        "gsm8k": {3: (683.88, 549.64, 3.134), 5: (753.24, 549.64, 3.904), 7: (771.15, 549.64, 4.346)},
    },
}


def s_cases() -> list[Case]:
    """Each SpecBundle chain point's speedup (with-draft over without-draft output tok/s) at its
    reported accept length: one case per point, its steps and accept length set over the file's."""
    cases = []
    for (sid, stem), benches in S_REPORTED.items():
        for bench, points in benches.items():
            file = f"{sid.lower()}-{stem}-eagle3-sglang-h200-{bench}.yaml"
            for steps, (spec, base, al) in points.items():
                cases.append(Case(sid, file, "steps", {steps: spec / base}, {steps: al}, unit=f"{bench}, steps",
                                  sets=(f"speculative.steps={steps}", f"acceptance.accept_length={al}")))
    return cases


# E: external speedups, independent public measurements of EAGLE-3 with both arms and the accept
# length stated, at more than one batch (scenario files e*-, each citing its source). Per file and
# draft shape: batch -> (output tok/s with the draft, without it, accept length, requests simulated).
# The file holds the first point; the others set their batch, requests, accept length and draft shape
# (`--set`), as s_cases does. E1: Dogacel/specdrift-gpt-oss-120b-eagle3's card (May 2026): gpt-oss-120b
# on 1x H100, SGLang spec v2, chain of 3. E2: SpecForge issue #339 (2025-12-01): Qwen3-30B-A3B on 2x
# H100, tp 2, chain of 3 and tree (3 steps, topk 3, 8 tokens). E3: AngelSlim issue #163 (2025-12-08):
# Qwen3-30B-A3B on 4x H100, tp 4, tree (4, 4, 16)
E_REPORTED = {
    ("E1", "e1-gpt-oss-120b-eagle3-sglang-h100.yaml", (3, 1, 4)): {
        1: (285, 212, 2.41, 16), 8: (1044, 795, 2.41, 160), 64: (2339, 1620, 2.43, 160)},
    ("E2", "e2-qwen3-30b-a3b-eagle3-sglang-2xh100.yaml", (3, 1, 4)): {
        1: (159.78, 222.47, 1.86, 8), 4: (447.90, 566.21, 1.86, 40)},
    ("E2", "e2-qwen3-30b-a3b-eagle3-sglang-2xh100.yaml", (3, 3, 8)): {
        1: (172.99, 222.47, 2.20, 8), 4: (426.46, 566.21, 2.27, 40)},
    ("E3", "e3-qwen3-30b-a3b-eagle3-tree-sglang-4xh100.yaml", (4, 4, 16)): {
        1: (185.64, 218.89, 2.542, 8), 4: (476.37, 507.49, 2.556, 32), 8: (673.14, 677.14, 2.578, 64),
        32: (927.11, 1128.30, 2.560, 160), 64: (1307.95, 1237.84, 2.553, 160)},
}
# A tree's accept length alone is read through mtpsim's one-parameter rank family (tree.py
# tree_rank_rows: rank j catches the target's token with r (1 - r)^j at every depth, r solved so that
# the tree model gives the reported length; mtpsim warns of the assumption). The verify tree's width is
# the configuration's (8 or 16 tokens) whatever the split, so the speedup depends on it only through
# the accept length.


def e_cases() -> list[Case]:
    """Each external point's speedup (with-draft over without-draft output tok/s) at its reported
    accept length: one case per point, its batch, request count, draft shape and acceptance set over
    the file's."""
    cases = []
    for (eid, file, (steps, topk, tokens)), points in E_REPORTED.items():
        label = f"chain {steps}" if topk == 1 else f"tree {steps}x{topk}/{tokens}"
        for batch, (spec, base, al, requests) in points.items():
            shape = (f"speculative.steps={steps}", f"speculative.topk={topk}",
                     f"speculative.draft_tokens={tokens}")
            accept = (f"acceptance.accept_length={al}", "acceptance.per_depth_topk=null")
            cases.append(Case(eid, file, "concurrency", {batch: spec / base}, {batch: al}, unit=f"{label}, batch",
                              sets=(*shape, *accept, f"workload.concurrency={batch}",
                                    f"workload.num_requests={requests}")))
    return cases


# G: a generalization check (2026-12-06, docs/accuracy.md's last section): public measurements of
# speculative speedup at several batch sizes, added after the model was built and not fitted to.
# All from "Speculative Decoding: Performance or Illusion?" (arXiv 2601.11580; project page
# specdecode-bench.github.io, index.md and its figures at commit 514270c6): speedup = token
# throughput with EAGLE-3 (3 drafts a step) over without, one H100, at batch 1 / 16 / 64 / 128.
# G1-G3: Llama-3.1-8B-Instruct under vLLM v0.10.1, Figure 1 (c) ShareGPT, (a) GSM8K, (b)
# CNN/DailyMail, read off the PNG (+-0.01); accept lengths derived from the authors' released
# per-position acceptance (SpecDecode-Bench/simulator data/llama3.1-8B/, at most 3 drafts a step).
# G4: Qwen3-8B under SGLang v0.5.9, Figure 2(a) GSM8K chain (batch 1: the page's text), accept
# length 2.25 (the page's text). G5: the same panel's EAGLE-3 tree of depth 3 and branching factor 4
# verifying 21 tokens (batch 1 and the accept length 2.92: the page's text; its acceptance by rank
# is assumed in the scenario file). Per file: accept length, {batch: speedup} (scenario files g*-)
G_REPORTED = {
    ("G1", "g1-llama-3.1-8b-eagle3-vllm-h100-sharegpt.yaml", "ShareGPT"): (2.25, {1: 1.71, 16: 1.68, 64: 1.55, 128: 1.30}),
    ("G2", "g2-llama-3.1-8b-eagle3-vllm-h100-gsm8k.yaml", "GSM8K"): (2.39, {1: 1.75, 16: 1.70, 64: 1.49, 128: 1.22}),
    ("G3", "g3-llama-3.1-8b-eagle3-vllm-h100-cnn.yaml", "CNN/DM"): (2.33, {1: 1.69, 16: 1.58, 64: 1.40, 128: 1.24}),
    ("G4", "g4-qwen3-8b-eagle3-sglang-h100-gsm8k.yaml", "GSM8K"): (2.25, {1: 1.65, 16: 1.59, 64: 1.31, 128: 1.22}),
    ("G5", "g5-qwen3-8b-eagle3-tree-sglang-h100-gsm8k.yaml", "GSM8K tree 3x4/21"):
        (2.92, {1: 1.85, 16: 1.34, 64: 0.585, 128: 0.558}),
}


def g_cases() -> list[Case]:
    """Each G file's speedups over its batch sweep (the file sweeps the batches), at its accept length."""
    return [Case(gid, file, "concurrency", points, dict.fromkeys(points, al), unit=f"{label}, batch")
            for (gid, file, label), (al, points) in G_REPORTED.items()]


CASES = [
    Case("P1", "p1-deepseek-v3-report.yaml", "concurrency", {1: 1.8}, {1: 1.875}),
    Case("P2", "p2-deepseek-v3-sglang.yaml", "concurrency", {1: 1.8, 32: 1.5}),
    Case("P3", "p3-eagle3-llama-8b-h100.yaml", "concurrency",
         dict(zip((1, 2, 4, 8, 16, 24, 32, 48, 56, 64), (2.36, 1.81, 1.82, 1.62, 1.48, 1.39, 1.32, 1.38, 1.34, 1.38))),
         dict.fromkeys((1, 2, 4, 8, 16, 24, 32, 48, 56, 64), 2.9)),
    Case("P4", "p4-meta-mtp-7b.yaml", "steps", {1: 1.85, 2: 2.54, 3: 3.05}, {1: 1.94, 2: 2.78, 3: 3.50},
         metric="per_user_speedup", unit="steps"),
    Case("P5", "p5-deepseek-r1-vllm.yaml", "rate_per_s", {1: 1.63, 2: 1.18, 4: 1.26, 6: 1.14, 8: 1.00},
         dict.fromkeys((1, 2, 4, 6, 8), 1.81), metric="per_user_speedup", unit="req/s"),
    # and the mean TPOTs the PR's table gives at 1 and 2 requests/s (the rows recovered: scenario
    # file), which show how much slower per token the measured build was than the simulated one
    Case("P5", "p5-deepseek-r1-vllm.yaml", "rate_per_s", {1: 0.03399, 2: 0.0488}, {1: 1.81, 2: 1.81},
         metric="tpot_mean_s", unit="req/s"),
    Case("P5", "p5-deepseek-r1-vllm.yaml", "rate_per_s", {1: 0.05547, 2: 0.05758}, metric="tpot_mean_s",
         unit="none, req/s", sets=("speculative.design=none", "acceptance=null")),
    Case("P6", "p6-kimi-k2.5-b200.yaml", "concurrency", {16: 0.92}, {16: 1.39}),
    Case("P7", "p7-qwen3-next-h100.yaml", "concurrency", {8: 0.92, 64: 0.68}, {8: 1.37, 64: 1.37}),
    # and the source's mean TPOTs, which show how far the simulated Qwen3.8-Flash-Next is from the measured one
    Case("P7", "p7-qwen3-next-h100.yaml", "concurrency", {8: 0.0143, 64: 0.0478}, {8: 1.37, 64: 1.37},
         metric="tpot_mean_s"),
    Case("P7", "p7-qwen3-next-h100.yaml", "concurrency", {8: 0.0108, 64: 0.0264}, metric="tpot_mean_s",
         unit="none, batch", sets=("speculative.design=none", "acceptance=null")),
    # decode nodes of a PD-disaggregated deployment: decode rates without the prefill
    Case("P8", "p8-deepseek-v3-lmsys-mtp.yaml", "steps", {2: 81.5 / 51.0, 3: 82.0 / 51.0}, {2: 2.18, 3: 2.44},
         metric="decode_speedup", unit="steps"),
    Case("P8", "p8-deepseek-v3-lmsys-mtp.yaml", "steps", {2: 81.5, 3: 82.0}, {2: 2.18, 3: 2.44},
         metric="decode_tps_per_gpu", unit="steps", reported_none=51.0),  # and its plain decode (run_case)
    Case("P9", "p9-mimo-v2-flash-sglang-dp2.yaml", "concurrency",
         dict(zip((1, 2, 4, 8, 16, 32, 64), (201, 349, 535, 819, 1168, 1618, 2816))),
         dict(zip((1, 2, 4, 8, 16, 32, 64), (3.01, 2.92, 2.93, 2.94, 2.94, 2.96, 2.93))), metric="tps"),
    # recent SGLang (v0.5.x) MTP on DeepSeek-R1, both arms' output tok/s and the speedup they imply.
    # P10: SGLang PR #10281 (2025-09-10), 8xB200 TP8, trtllm_mla, EAGLE 3 steps / topk 1, 1k/1k at
    # concurrency 1: 82.72 -> 151.53 tok/s at accept length 2.69 (release ~0.5.2 assumed: scenario file)
    Case("P10", "p10-deepseek-r1-b200-sglang-trtllm-mla.yaml", "concurrency", {1: 151.53 / 82.72}, {1: 2.69}),
    Case("P10", "p10-deepseek-r1-b200-sglang-trtllm-mla.yaml", "concurrency", {1: 151.53}, {1: 2.69},
         metric="tps", unit="MTP, conc"),
    Case("P10", "p10-deepseek-r1-b200-sglang-trtllm-mla.yaml", "concurrency", {1: 82.72}, metric="tps",
         unit="none, conc", sets=("speculative.design=none", "acceptance=null")),
    # P11: the same PR's MTP-on run at 256 requests of 1k/1k sent at once (measured concurrency 222):
    # 5,934.04 output tok/s at accept length 2.79; no MTP=off arm at that load
    Case("P11", "p11-deepseek-r1-b200-sglang-trtllm-mla-256.yaml", "concurrency", {256: 5934.04}, {256: 2.79},
         metric="tps", unit="MTP, conc"),
    # LMSYS's 96xH100 PD + large-EP deployment, each pool measured on its own as the source did:
    # decode 22,282 tok/s per node (8 GPUs) at batch 256 per GPU, prefill 57,674 / 54,543 / 50,302
    # input tok/s per node at 1K / 2K / 4K prompts
    Case("L1", "l1-deepseek-v3-lmsys-96xh100-decode.yaml", "concurrency", {18432: 22282 / 8},
         metric="decode_tps_per_gpu", unit="users"),
    # and without two-batch overlap: the blog's TBO ablation, 22,310 tok/s per node with TBO at 256
    # tokens per GPU, "a 25.5% speedup", so 22,310 / 1.255 per node without
    Case("L1", "l1-deepseek-v3-lmsys-96xh100-decode.yaml", "concurrency", {18432: 22310 / 1.255 / 8},
         metric="decode_tps_per_gpu", unit="users, no TBO,", sets=("engine.two_batch_overlap=false",)),
    Case("L1", "l1-deepseek-v3-lmsys-96xh100-prefill.yaml", "input_len",
         {1024: 57674 / 8, 2048: 54543 / 8, 4096: 50302 / 8}, metric="prefill_tps_per_gpu", unit="prompt"),
    # InferenceX's DeepSeek-R1 FP4 1k/1k, Dynamo + TensorRT-LLM with MTP, disaggregated, at
    # concurrency 180: GB200 NVL72 (1P TP4 + 1D EP32) beside B200 (1P TP4 + 40 GPUs EP8), input and
    # output tokens per GPU of both pools, and tok/s/user (1 / TPOT)
    Case("L2", "l2-deepseek-r1-gb200-nvl72-dynamo-trt-mtp.yaml", "concurrency", {180: 1149.1},
         metric="total_tps_per_gpu", unit="users"),
    Case("L2", "l2-deepseek-r1-gb200-nvl72-dynamo-trt-mtp.yaml", "concurrency", {180: 164.37},
         metric="interactivity", unit="users"),
    Case("L2", "l2-deepseek-r1-b200-dynamo-trt-mtp.yaml", "concurrency", {180: 897.9},
         metric="total_tps_per_gpu", unit="users"),
    Case("L2", "l2-deepseek-r1-b200-dynamo-trt-mtp.yaml", "concurrency", {180: 126.42},
         metric="interactivity", unit="users"),
    # block drafters: DSpark on DeepSeek-V4-Flash, SGLang PR #29538 (accept length not stated per run: 3.4 assumed)
    Case("D1", "d1-deepseek-v4-flash-dspark-sglang-8xb200.yaml", "concurrency", {1: 1.97}),
    Case("D2", "d2-deepseek-v4-flash-dspark-sglang-8xb200-1k1k.yaml", "concurrency", {1: 2.31}),
    # DFlash on one A800 (A100-80GB class), SGLang 0.5.13, batch 1, SGLang issue #29244: decode-log gen
    # throughput (decode only). Qwen3-8B 88 -> 162 tok/s at accept length 2.8; Qwen3-30B-A3B 146 -> 93
    # tok/s at ~2.0 (a slowdown). Drafter checkpoints and lengths not stated: block 16 assumed (scenario files)
    Case("D3", "d3-qwen3-8b-dflash-sglang-a800.yaml", "concurrency", {1: 162 / 88}, {1: 2.8},
         metric="decode_speedup", unit="users"),
    Case("D3", "d3-qwen3-8b-dflash-sglang-a800.yaml", "concurrency", {1: 162}, {1: 2.8},
         metric="decode_tps_per_gpu", unit="users", reported_none=88),
    Case("D4", "d4-qwen3-30b-a3b-dflash-sglang-a800.yaml", "concurrency", {1: 93 / 146}, {1: 2.0},
         metric="decode_speedup", unit="users"),
    Case("D4", "d4-qwen3-30b-a3b-dflash-sglang-a800.yaml", "concurrency", {1: 93}, {1: 2.0},
         metric="decode_tps_per_gpu", unit="users", reported_none=146),
    # DFlash on one B200, SGLang PR #23000: output tok/s of the GSM8K sweep at concurrency 1 and 32, the
    # DFlash worker before the PR (v1, host synced every iteration: 0.5.13's rules) and the PR's
    # overlapped worker (v2: 0.5.14's). Accept lengths as reported; lengths assumed (scenario files)
    Case("D5", "d5-qwen3-8b-dflash-sglang-b200-conc1.yaml", "version", {"0.5.13": 845.98, "0.5.14": 1161.88},
         {"0.5.13": 6.345, "0.5.14": 6.352}, metric="tps", unit="conc 1, SGLang"),
    Case("D5", "d5-qwen3-8b-dflash-sglang-b200-conc32.yaml", "version", {"0.5.13": 11405.85, "0.5.14": 15326.81},
         {"0.5.13": 6.487, "0.5.14": 6.482}, metric="tps", unit="conc 32, SGLang"),
    *d6_cases(),
    *s_cases(),
    *e_cases(),
    *g_cases(),
]
