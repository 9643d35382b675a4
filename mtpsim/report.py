"""What `mtpsim cost` prints, as tables (DataFrames) notebooks and benchmarks reuse: one iteration
of a design priced pass by pass and op by op, beside plain decoding, the memory budget, and the
prefill of one prompt in the engine's chunks. The command itself (loading, warnings, printing) is
cost_command.py's.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs import Pricer, build_pricer
from mtpsim.costs.iteration import hiding_window, iteration_cost
from mtpsim.costs.ops import BatchLens
from mtpsim.costs.ragged import all_plain, pass_lens
from mtpsim.costs.streams import HIDDEN
from mtpsim.designs import BASELINE, DesignShape, iteration_passes, prefill_passes
from mtpsim.memory import memory_budget, pool_rule


def iteration_table(pricer: Pricer, design: DesignShape, batch: int, context: int, kept=None,
                    before_drafting: bool = False, label: str | None = None) -> pd.DataFrame:
    """One row per pass of one iteration at `batch` requests of `context` committed tokens; with
    `kept` (drafts each request keeps), the verify is ragged over them and, `before_drafting`
    (a depth controller), only requests above width 0 draft (costs/ragged.py)."""
    kv = np.full(batch, context)
    rows = []
    for shape in iteration_passes(design):
        lens = pass_lens(shape.kind, shape.tokens_per_request, kept, kv,
                         lambda q: BatchLens.uniform(q, kv, int(kv.sum()), int(kv.max())), before_drafting)
        if lens is None:
            continue
        cost = pricer.price_lens(replace(shape, ragged=True) if kept is not None and shape.kind == "verify" else shape,
                                 lens)
        rows.append({"design": label or design.design, "pass": f"{shape.kind}:{shape.part}", "kind": shape.kind,
                     "tokens": cost.tokens, **_pass_work(cost), "bound": cost.bound, "priced_by": "+".join(cost.sources)})
    return pd.DataFrame(rows)


def _pass_work(cost) -> dict:
    """A pass's time and work as the tables print them (ms, GB, GFLOP)."""
    return {"time_ms": cost.time_s * 1e3, "weight_GB": cost.weight_bytes / 1e9, "kv_GB": cost.kv_bytes / 1e9,
            "gflop": cost.flops / 1e9, "comm_ms": cost.comm_s * 1e3, "overhead_ms": cost.launch_s * 1e3}


def _op_rows(shape, cost) -> list[dict]:
    """One row per op of a priced pass: its count, time, bound and which model priced it."""
    return [{"pass": f"{shape.kind}:{shape.part}", "op": op.name, "family": op.family, "count": n,
             "time_ms": n * t.total_s * 1e3, "bound": _op_bound(t), "priced_by": t.source} for op, t, n in cost.ops]


def _by_op(rows: list[dict]) -> pd.DataFrame:
    """The op rows summed by pass, op, family, bound and source (counts add up)."""
    keys = ["pass", "op", "family", "bound", "priced_by"]
    return pd.DataFrame(rows).groupby(keys, sort=False, as_index=False).agg(count=("count", "sum"),
                                                                          time_ms=("time_ms", "sum"))


def op_table(pricer: Pricer, design: DesignShape, batch: int, context: int) -> pd.DataFrame:
    """One row per op kind of each pass: count per pass, time, bound and which model priced it."""
    kv = np.full(batch, context)
    return _by_op([row for shape in iteration_passes(design)
                   for row in _op_rows(shape, pricer.price(shape, np.full(batch, shape.tokens_per_request), kv,
                                                           keep_ops=True))])


def prefill_table(pricer: Pricer, design: DesignShape, prompt: int, chunk: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per prefill pass of one prompt of `prompt` tokens, the ops of those passes) as
    the engine prefills it: in chunks of at most `chunk` tokens (its prefill budget), each chunk
    after the ones before it in KV. A pass's row sums its chunks; its bound is its longest chunk's."""
    rows, ops = [], []
    for shape in prefill_passes(design):
        parts, done = [], 0
        while done < prompt:
            n = min(chunk, prompt - done)
            parts.append(pricer.price(shape, np.array([n]), np.array([done]), keep_ops=True))
            done += n
        works = [_pass_work(c) for c in parts]
        rows.append({"pass": f"{shape.kind}:{shape.part}", "tokens": prompt, "chunks": len(parts),
                     **{k: sum(w[k] for w in works) for k in works[0]},
                     "bound": max(parts, key=lambda c: c.time_s).bound,
                     "priced_by": "+".join(sorted({x for c in parts for x in c.sources}))})
        ops += [row for c in parts for row in _op_rows(shape, c)]  # an op's count adds up over the chunks
    return pd.DataFrame(rows), _by_op(ops)


def _op_bound(t) -> str:
    """What bounds an op's time; `hidden` for an op a side stream hides (costs/streams.py)."""
    if t.source.startswith(HIDDEN):
        return "hidden"
    return t.bound


def iteration_time_s(pricer: Pricer, design: DesignShape, table: pd.DataFrame, overlap: bool, batch: int) -> dict:
    """Iteration time = passes + the host time the overlap window does not hide (costs/iteration.py),
    of an iteration_table's passes."""
    window = hiding_window(design, pricer.host, overlap)
    cost = iteration_cost(table.kind, table.time_ms / 1e3, window, pricer.host_s(design.design, batch))
    return {"gpu_s": cost.gpu_s, "host_s": cost.host_s, "exposed_host_s": cost.exposed_host_s,
            "iteration_s": cost.iteration_s}


def memory_table(pricer: Pricer, designs: list[DesignShape], context: int, scenario) -> pd.DataFrame:
    """Per design: the GPU's capacity, the engine's fraction and its source, weights, KV budget."""
    rows = []
    for d in designs:
        m = memory_budget(pricer, d, pool_rule(scenario, d.design))
        rows.append({"design": d.design, **budget_columns(m), "target_weights_GB": m.target_weight_bytes / 1e9,
                     "draft_weights_GB": m.draft_weight_bytes / 1e9, "kv_budget_GB": m.kv_budget_bytes / 1e9,
                     "kv_bytes_per_token": m.kv_bytes_per_token, "draft_kv_bytes_per_token": m.draft_kv_bytes_per_token,
                     "reserved_tokens": m.reserved_tokens, "max_kv_tokens": m.max_kv_tokens,
                     f"max_requests@{context}": m.max_requests(context)})
    return pd.DataFrame(rows)


def budget_columns(m) -> dict:
    """How the engine sized a budget: the GPU's capacity, the fraction in force and its source."""
    return {"capacity_GB": m.capacity_bytes / 1e9, "mem_fraction": m.rule.fraction,
            "fraction_source": f"{m.rule.knob}: {m.rule.fraction_source}"}


def cost_report(scenario, batch: int, context: int, ops: bool = False) -> dict:
    """Tables for the scenario's design and for `none`, at one batch and context. Under a
    steps_by_batch policy the iteration is the policy's at this batch (the engine's
    `iteration_at`), while memory is sized for the most steps, as the run reserves it."""
    pricer = build_pricer(scenario)
    design = DesignShape.of(scenario.speculative)
    designs = [DesignShape(BASELINE)] + ([design] if design.design != BASELINE else [])
    policy = scenario.speculative.policy
    steps = design.steps if policy is None else policy.steps_for(batch)
    at_batch = design if steps == design.steps else design.with_steps(steps)  # as the engine's iteration_at
    priced = [DesignShape(BASELINE)] + ([at_batch] if at_batch.design != BASELINE else [])
    passes, totals = [], []
    for d, label, kept, before in _variants(scenario, priced, batch):
        table = iteration_table(pricer, d, batch, context, kept, before, label)
        passes.append(table.drop(columns="kind"))
        width = d.draft_tokens if kept is None else 1 + float(np.mean(kept))
        totals.append({"design": label, "verify_width": width,
                       **iteration_time_s(pricer, d, table, scenario.engine.overlap_schedule, batch)})
    report = {"passes": pd.concat(passes, ignore_index=True), "iterations": pd.DataFrame(totals),
              "memory": memory_table(pricer, designs, context, scenario)}
    if ops:  # the speculative iteration's, and the plain step it is weighed against (none: that step alone)
        report["ops"] = op_table(pricer, priced[-1], batch, context)
        if len(priced) > 1:
            report["plain_ops"] = op_table(pricer, priced[0], batch, context)
    return report


def _variants(scenario, designs: list[DesignShape], batch: int):
    """(design, label, kept drafts per request, kept before drafting) to price: each design at
    its full width, and the drafting design again at the widths its kept_length rule keeps in a
    typical iteration (acceptance.py kept_quantiles), labelled `<design> kept` (a depth
    controller whose requests all keep 0 runs the plain decode step, as the engine does)."""
    out = [(d, d.design, None, False) for d in designs]
    if designs[-1].design == BASELINE or scenario.acceptance.kept_length is None:
        return out
    d = designs[-1]
    profile = AcceptanceProfile.from_section(scenario.acceptance, d.steps, scenario.source, d.topk, d.draft_tokens)
    kept = profile.kept_quantiles(batch, d.steps)
    if all_plain(kept, profile.kept_before_drafting):
        return out + [(DesignShape(BASELINE), f"{d.design} kept", None, False)]
    return out + [(d, f"{d.design} kept", kept, profile.kept_before_drafting)]
