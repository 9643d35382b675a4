"""mtpsim's decode step op by op, beside aiconfigurator's breakdown of the same step.

Run: .venv/bin/python benchmarks/ops_vs_aiconfigurator.py [SCENARIO ...] [--batch 1 64] [--out PATH]
     (default: the absolute cases scenarios/published/a1..a10 and a B200 TensorRT-LLM FP8 TP8
     DeepSeek-R1 deployment built from A7 with engine trtllm; batches 1 and 64; writes
     benchmarks/ops_vs_aiconfigurator.md)

Both tools price GPU steps from the same aiconfigurator-core tables (mtpsim converts them into
profiles: mtpsim/calibration/aiconfigurator.py), so where both read the same rows a difference
means one of them composes the step wrongly. For each scenario and batch this prints, by role
(GEMMs by role, attention, MoE compute, dispatch/combine, all-reduce, embedding and LM head,
norms and small ops, host), milliseconds per step:

- mtpsim: `mtpsim.report.op_table` (what `mtpsim cost --ops` prints), plain decode, and the MTP
  iteration (SGLang-style nextn, 3 steps, top-1) pass by pass: draft, verify, extend;
- aiconfigurator (benchmarks/aic_breakdown.py): its model's generation op list (aiconfigurator_core/sdk/models/*.py
  `generation_ops`) evaluated leaf by leaf through its compiled engine
  (`aiconfigurator_core.sdk.engine._evaluate_single_op`, the engine's own single-op plumbing) at
  the decode shape `InferenceSession.run_static(mode="static_gen")` prices. Composite ops keep
  their semantics as two correction rows: `OverlapOp` (shared experts on a side stream: the step
  pays max(routed, shared)) and `FallbackOp` (a whole-module MLA table measured in place of its
  granular ops), so the roles sum to aiconfigurator's own step total, which is checked against its
  `generation_latency_dict`. With MTP aiconfigurator prices the same op list at verify width
  batch * (nextn + 1), every op scaled by (layers + nextn) / layers: the extra nextn "layers" are
  its drafts.

Every role that differs by more than 10% is looked up in EXPLANATIONS, keyed by (gpu, engine,
role) with "*" wildcards: "fixed in mtpsim", "aiconfigurator is wrong" (with the measured
end-to-end point that shows it) or "the engine runs another kernel here" (engine source cited).
Degrades to one line when aiconfigurator is not importable.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from aic_breakdown import aic_available, aic_roles  # noqa: E402  (a sibling script: the peer's side)
from ops_explanations import explain  # noqa: E402  (the explanation table, a sibling data module)

from mtpsim import scenario as sc  # noqa: E402
from mtpsim.costs import build_pricer  # noqa: E402
from mtpsim.designs import DesignShape  # noqa: E402
from mtpsim.report import op_table  # noqa: E402
from mtpsim.schema import mean_length  # noqa: E402

PUBLISHED = ROOT / "scenarios" / "published"
DEFAULT_OUT = ROOT / "benchmarks" / "ops_vs_aiconfigurator.md"
THRESHOLD = 0.10   # a role whose two times differ by more than this share of the larger needs an explanation
FLOOR_MS = 0.05    # ... and by more than this many ms a step (smaller gaps are noise at any share)
NEXTN = 3          # draft tokens per MTP iteration compared (SGLang's recommended DeepSeek flags, P2)
MTP = {"design": "nextn", "steps": NEXTN, "topk": 1}
# P2's acceptance (scenarios/published/p2-deepseek-v3-sglang.yaml); a step's price does not depend on it
ACCEPTANCE = "{per_depth: [0.87, 0.72, 0.62]}"
# A B200 TensorRT-LLM FP8 TP8 DeepSeek-R1 deployment: A7's (InferenceX dsr1-fp8-b200) with engine trtllm.
TRTLLM_B200 = ("B200 TRT-LLM FP8 TP8", PUBLISHED / "a7-deepseek-r1-b200-sglang-v0512-1k1k.yaml",
               ("engine={kind: trtllm}",))

ROLES = ("gemm.qkv_a", "gemm.q_b", "bmm.w_uk", "bmm.w_uv", "gemm.qkv", "gemm.o_proj", "gemm.dense_ffn",
         "gemm.router", "gemm.shared_experts", "gemm.mtp_eh_proj", "attention", "attention.module_vs_ops", "moe",
         "moe.shared_overlap", "dispatch_combine", "allreduce", "embed_lm_head", "norms_small", "hyper_connections",
         "engram", "glue", "host", "other")

# mtpsim op name -> role (mtpsim/costs/ops.py names)
MTPSIM_ROLES = {
    "attn.q_a_proj": "gemm.qkv_a", "attn.kv_a_proj": "gemm.qkv_a", "attn.qkv_a_proj": "gemm.qkv_a",
    "attn.q_b_proj": "gemm.q_b", "attn.w_uk": "bmm.w_uk", "attn.w_uv": "bmm.w_uv",
    "attn.q_proj": "gemm.qkv", "attn.qkv_proj": "gemm.qkv", "attn.in_proj": "gemm.qkv", "attn.o_proj": "gemm.o_proj",
    "ffn.gate_up": "gemm.dense_ffn", "ffn.down": "gemm.dense_ffn", "moe.router": "gemm.router",
    "moe.shared_gate_up": "gemm.shared_experts", "moe.shared_down": "gemm.shared_experts",
    "attn.core": "attention", "attn.linear_state": "attention", "moe.experts": "moe",
    "comm.dispatch_combine": "dispatch_combine", "comm.allreduce": "allreduce",
    "comm.mlp_sync": "allreduce", "lm_head": "embed_lm_head", "lm_head.centroids": "embed_lm_head",
    "lm_head.centroid_expand": "embed_lm_head", "mtp.eh_proj": "gemm.mtp_eh_proj",
    "pass.frame": "embed_lm_head", "sample.argmax": "norms_small",
    "norms+rope+act": "norms_small", "kv.compact": "norms_small", "layer.glue": "glue",
    # DeepSeek-V4's attention (costs/compressed.py): its projections by role; the compressor, the
    # indexer and the sparse core are its attention, as aiconfigurator's one module row times them
    "attn.wqkv_a": "gemm.qkv_a", "attn.wq_b": "gemm.q_b", "attn.wo_a": "gemm.o_proj", "attn.wo_b": "gemm.o_proj",
    "attn.compressor": "attention", "attn.indexer": "attention", "attn.indexer_q": "attention",
    "attn.indexer_k": "attention", "attn.indexer_qk": "attention", "attn.indexer_weights": "attention",
    "attn.indexer_wk": "attention", "attn.indexer_compressor": "attention", "attn.compressed_core": "attention",
    "hc.pre": "hyper_connections", "hc.post": "hyper_connections", "hc.down": "hyper_connections",
    "hc.up_mix": "hyper_connections", "engram.gate": "engram", "engram.gather": "engram",
    "engram.host_gather": "engram", "engram.wkv": "engram", "comm.engram_allreduce": "allreduce",
    "comm.dp_gather_scatter": "dispatch_combine",
}

# ----------------------------------------------------------------------------- mtpsim's side

def load_point(path: Path, sets: tuple[str, ...] = ()) -> sc.Scenario:
    """The first point of a scenario file (after `sets`)."""
    return sc.load(path, list(sets))[0]


def mtpsim_roles(s: sc.Scenario, batch: int, context: int, one_stream: sc.Scenario | None = None) -> tuple[pd.Series, float]:
    """(ms per step by role, passes' total ms) for scenario s's design at `batch` requests of
    `context` committed tokens; the host time the engine does not hide is the `host` role.
    `one_stream`: the same scenario without the engine's side-stream rules (costs/streams.py), so
    the shared experts show their whole time and what the side stream hides is its own row,
    `moe.shared_overlap`, as aiconfigurator's OverlapOp shows it."""
    from mtpsim.report import iteration_table, iteration_time_s
    pricer = build_pricer(s)
    design = DesignShape.of(s.speculative)
    ops = op_table(pricer, design, batch, context)
    roles = ops.assign(role=ops.op.map(MTPSIM_ROLES).fillna("other")).groupby("role").time_ms.sum()
    if one_stream is not None:
        whole = op_table(build_pricer(one_stream), design, batch, context)
        shared = whole[whole.op.map(MTPSIM_ROLES) == "gemm.shared_experts"].time_ms.sum()
        roles["moe.shared_overlap"] = roles.get("gemm.shared_experts", 0.0) - shared
        roles["gemm.shared_experts"] = shared
    table = iteration_table(pricer, design, batch, context)
    it = iteration_time_s(pricer, design, table, s.engine.overlap_schedule, batch)
    roles["host"] = it["exposed_host_s"] * 1e3
    return roles, ops


def mtpsim_passes(ops: pd.DataFrame) -> pd.Series:
    """ms per pass kind (draft, verify, extend, decode) of an op table."""
    return ops.assign(kind=ops["pass"].str.split(":").str[0]).groupby("kind").time_ms.sum()


# ----------------------------------------------------------------------------- the comparison

def compare(label: str, s: sc.Scenario, batch: int, context: int, mtp: bool,
            one_stream: sc.Scenario | None = None) -> tuple[pd.DataFrame, dict]:
    """One role table (mtpsim ms, aiconfigurator ms, difference, verdict) and its totals."""
    nextn = NEXTN if mtp else 0
    ours, ops = mtpsim_roles(s, batch, context, one_stream)
    theirs, theirs_total, leaf_sum = aic_roles(s, batch, context, nextn)
    gpu, engine = s.specs.hardware.name, s.specs.engine.name
    rows = []
    for role in ROLES:
        a, b = float(ours.get(role, 0.0)), float(theirs.get(role, 0.0))
        if not a and not b:
            continue
        gap = abs(a - b) / max(abs(a), abs(b))
        flagged = gap > THRESHOLD and abs(a - b) > FLOOR_MS
        e = explain(gpu, engine, role, s.specs.model.name, "mtp" if mtp else "decode") if flagged else None
        rows.append({"case": label, "batch": batch, "step": "mtp" if mtp else "decode", "role": role,
                     "mtpsim_ms": a, "aiconfigurator_ms": b, "diff_%": 100 * (a - b) / b if b else math.nan,
                     "verdict": (e.verdict if e else "unexplained") if flagged else "",
                     "why": e.why if e else "", "source": e.source if e else ""})
    info = {"mtpsim_ms": float(ours.sum()), "aiconfigurator_ms": theirs_total, "leaf_sum_ms": leaf_sum,
            "passes": mtpsim_passes(ops).to_dict()}
    return pd.DataFrame(rows), info


def mtp_split(info: dict, layers: int) -> str:
    """How aiconfigurator's MTP iteration compares with mtpsim's passes: its verify = the step
    scaled back to the target's layers, its drafts = the nextn extra layers' share."""
    total = info["aiconfigurator_ms"]
    verify, drafts = total * layers / (layers + NEXTN), total * NEXTN / (layers + NEXTN)
    ours = ", ".join(f"{k} {v:.2f}" for k, v in sorted(info["passes"].items()))
    return (f"MTP iteration (nextn {NEXTN}): aiconfigurator verify {verify:.2f} + drafts {drafts:.2f} ms "
            f"(all at verify width); mtpsim passes: {ours} ms")


def default_cases() -> list[tuple[str, Path, tuple[str, ...]]]:
    return [(p.name.split("-")[0].upper(), p, ()) for p in sorted(PUBLISHED.glob("a[0-9]*-*.yaml"))] + [TRTLLM_B200]


def mtp_setting(path: Path, sets: tuple[str, ...]) -> dict:
    """The MTP iteration compared: MTP (nextn, top-1 chain of NEXTN) with the scenario's own
    external draft where it drafts with one (an EAGLE-3 head), else the model's MTP layers."""
    try:
        spec = load_point(path, sets).speculative
    except Exception:  # the decode step's load reports it
        return MTP
    draft = spec.draft if spec.design == "nextn" and isinstance(spec.draft, str) else None
    return {**MTP, "draft": draft} if draft else MTP


def run(cases, batches: list[int], mtp: bool = True) -> tuple[pd.DataFrame, list[str]]:
    tables, notes = [], []
    for label, path, sets in cases:
        for step_mtp in ((False, True) if mtp else (False,)):
            extra = ((f"speculative={_yaml(mtp_setting(path, sets))}", f"acceptance={ACCEPTANCE}") if step_mtp
                     else ("speculative={design: none}",))
            try:
                s = load_point(path, sets + extra)
                one_stream = load_point(path, sets + extra + (f"engine.ignore_rules={stream_rules(s)}",))
            except Exception as exc:  # a scenario this comparison cannot express
                notes.append(f"{label}: {'mtp' if step_mtp else 'decode'}: not loadable: {exc}")
                continue
            context = int(mean_length(s.workload.input_len))
            for batch in batches:
                try:
                    table, info = compare(label, s, batch, context, step_mtp, one_stream)
                except Exception as exc:  # aiconfigurator cannot express it (model, dtype, shape)
                    notes.append(f"{label} batch {batch} {'mtp' if step_mtp else 'decode'}: skipped: "
                                 f"{type(exc).__name__}: {str(exc)[:160]}")
                    continue
                tables.append(table)
                head = (f"{label} ({s.specs.hardware.name} {s.specs.engine.name} tp{s.parallel.tp} ep{s.parallel.ep}) "
                        f"batch {batch} {'MTP' if step_mtp else 'decode'}: mtpsim {info['mtpsim_ms']:.2f} ms, "
                        f"aiconfigurator {info['aiconfigurator_ms']:.2f} ms (its leaves sum to {info['leaf_sum_ms']:.2f})")
                notes.append(head + (("; " + mtp_split(info, s.specs.model.num_layers)) if step_mtp else ""))
    return (pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()), notes


def stream_rules(s: sc.Scenario) -> list[str]:
    """The scenario's ignored rules plus its engine's side-stream rule in force (field
    shared_expert_stream; one rule a release: leaving out one that does not hold warns)."""
    from mtpsim import catalog, catalog_lookup
    from mtpsim.engine_releases import engine_rules
    name = s.specs.engine.name
    rules = engine_rules(catalog.engine_file(name), str(catalog_lookup.path_of("engines", name, "engines catalog", paths=False)))
    mine = [r.name for r in rules if r.field == "shared_expert_stream" and r.name in s.specs.engine.rules]
    return sorted(set(s.engine.ignore_rules or ()) | set(mine))


def _yaml(d: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"


def markdown(table: pd.DataFrame, notes: list[str]) -> str:
    """The tables and the explanations of flagged roles, as Markdown."""
    lines = ["# mtpsim vs aiconfigurator, op by op", "", "Written by benchmarks/ops_vs_aiconfigurator.py.", ""]
    lines += [f"- {n}" for n in notes] + [""]
    if table.empty:  # every step skipped (the notes say why): nothing to compare
        return "\n".join(lines + ["No step was priced by both tools."]) + "\n"
    shown = table.drop(columns=["why", "source"])
    lines += [shown.to_markdown(index=False, floatfmt=".3f") if _has_tabulate() else shown.to_string(index=False), ""]
    flagged = table[table.verdict != ""].drop_duplicates(["verdict", "why"])
    lines += ["## Why the flagged roles differ", ""]
    for _, r in flagged.iterrows():
        lines.append(f"- **{r.role}** ({r.verdict}): {r.why}. Source: {r.source}")
    return "\n".join(lines) + "\n"


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", help="scenario YAML files (default: a1..a7 and B200 TRT-LLM)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--no-mtp", action="store_true", help="plain decode only")
    ap.add_argument("--out", default=None, help=f"Markdown file to write ('' for none; default: {DEFAULT_OUT.name} "
                    "for the default cases, none for scenarios given, whose table it is not)")
    args = ap.parse_args(argv)
    if args.out is None:  # a user's own scenarios never replace the committed table of the default cases
        args.out = "" if args.scenarios else str(DEFAULT_OUT)
    why = aic_available()
    if why:
        print(why)
        return 0
    cases = [(Path(p).stem, Path(p), ()) for p in args.scenarios] or default_cases()
    table, notes = run(cases, args.batch, not args.no_mtp)
    print("\n".join(notes))
    if not table.empty:
        with pd.option_context("display.width", 250, "display.max_colwidth", 40):
            print(table.drop(columns=["why", "source"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.out:
        Path(args.out).write_text(markdown(table, notes))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
