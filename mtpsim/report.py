"""`mtpsim cost`: one iteration of a design priced pass by pass, beside plain decoding, with the
memory budget. Returns tables (DataFrames) so the CLI prints them and notebooks reuse them.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from mtpsim import scenario as sc
from mtpsim import sweep
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.advice import RUNNING_BATCH_CHECKS, advise, advise_sweep
from mtpsim.budget_advice import past_whole_budget
from mtpsim.costs import Pricer, build_pricer
from mtpsim.costs.iteration import hiding_window, iteration_cost
from mtpsim.costs.ops import BatchLens
from mtpsim.costs.ragged import all_plain, pass_lens
from mtpsim.costs.streams import HIDDEN
from mtpsim.designs import BASELINE, DesignShape, iteration_passes, prefill_passes
from mtpsim.errors import ScenarioError, warn
from mtpsim.memory import memory_budget, pool_rule, prefill_chunk_tokens
from mtpsim.pools import pool_scenario
from mtpsim.schema import mean_length
from mtpsim.tracefiles import scan


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


# chunks of one prompt `cost --prompt` prices, one after another: the engines' smallest default
# chunk (2048) cuts the flag's longest prompt (2**24) into 8192; a chunk of 1 token made a
# 100,000-token prompt 100,000 pricings of each pass (30 s) and the flag's longest hours
MAX_PREFILL_CHUNKS = 10_000


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
    if ops:
        report["ops"] = op_table(pricer, priced[-1], batch, context)
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


def cost_command(path: str, sets: list[str], batch: int | None, context: int | None, ops: bool,
                 prompt: int | None = None) -> int:
    """`mtpsim cost`: the first point's report at `batch` requests (default workload.concurrency)
    of `context` committed tokens (default the mean prompt), printed table by table; `prompt`:
    also the prefill of one prompt of that many tokens (on the prefill pool's layout where the
    scenario disaggregates)."""
    points = sc.load(path, sets, advise_points=batch is None)
    if batch is not None:  # the batch priced is the flag's, not the one the load would keep running
        for p in points:
            advise(p, skip=RUNNING_BATCH_CHECKS)
        advise_sweep(points, skip=RUNNING_BATCH_CHECKS)
    s = points[0]
    # what leaves no KV pool when the batch is the load's: the decode pool, a fraction the file
    # gives, else the layout (`mtpsim run` refuses it at the pool or engine.mem_fraction: memory.check_fits)
    room = "disaggregation.decode" if s.disaggregation is not None else \
        "engine.mem_fraction" if s.engine.mem_fraction is not None else "parallel"
    prefilling = s if s.disaggregation is None else pool_scenario(s, "prefill")  # where a prompt is prefilled
    if s.disaggregation is not None:  # an iteration is the decode pool's: TPOT is set there
        print("(disaggregated: pricing the decode pool's iteration on its own layout"
              f"{', and a prompt on the prefill pool' if prompt is not None else ''})")
        s = pool_scenario(s, "decode")
    asked, batch = batch, s.workload.concurrency if batch is None else batch
    context = _context_of(s, context)
    for flag, tokens in (("--context", context), ("--prompt", prompt)):
        _past_max_context(s, flag, tokens)
    if prompt is not None:
        _prefill_chunks(prefilling, prompt)
    sweep.left_out(points, "cost")
    if s.speculative.policy is not None:
        print(f"(steps_by_batch: at batch {batch} an iteration runs {s.speculative.policy.steps_for(batch)} steps; "
              f"memory is sized for speculative.steps {s.speculative.steps})")
    report = cost_report(s, batch, context, ops=ops)
    _batch_warnings(s, report["memory"].set_index("design"), batch, asked, context, room)
    _print_report(s, report, batch, context, ops)
    if prompt is not None:
        _print_prefill(prefilling, s, prompt, ops)
    return 0


def _context_of(s, context: int | None) -> int:
    """The committed KV length priced: the flag's, else the replayed prompts' mean (a trace), else
    the mean input_len."""
    if context is None and s.workload.arrival == "trace":  # the replayed prompts', not the unused input_len
        context = round(scan(s.workload.trace).mean_input_len)
    return mean_length(s.workload.input_len) if context is None else context


def _past_max_context(s, flag: str, tokens: int | None) -> None:
    """Warn where `tokens` is past the context window of a model that reads the sequence: the
    target, and a draft or assistant (whose passes cost prices too), as `run` refuses such a
    request (checks.py _check_context)."""
    for spec in filter(None, (s.specs.model, s.specs.draft, s.specs.assistant)):
        limit = spec.max_context
        if tokens is not None and limit is not None and tokens > limit:
            what = f"model {spec.name!r}" if spec is s.specs.model else f"the draft {spec.name!r} (speculative.draft)"
            warn(flag, "", f"{tokens} is past the max_context {limit} of {what}: priced as asked, though no request "
                 "that long can run")
            return


def _prefill_chunks(prefilling, prompt: int) -> int:
    """The prefill chunk `prompt` is priced in (prefill_chunk_tokens), or a ScenarioError where
    that makes more than MAX_PREFILL_CHUNKS chunks, each priced in turn: at the scenario's
    engine.chunked_prefill_tokens where it gives the chunk, else at the flag."""
    chunk = prefill_chunk_tokens(prefilling)
    chunks = -(-prompt // chunk)
    if chunks > MAX_PREFILL_CHUNKS:
        limit = f"each priced in turn, and cost prices at most {MAX_PREFILL_CHUNKS:,}"
        if prefilling.engine.chunked_prefill_tokens is not None:
            raise ScenarioError(prefilling.source, "engine.chunked_prefill_tokens", f"chunks of {chunk} tokens cut "
                                f"--prompt {prompt} into {chunks:,}, {limit}: give a larger chunk or a shorter prompt")
        raise ScenarioError("--prompt", "", f"{prompt} tokens in {prefilling.specs.engine.name}'s default chunks of "
                            f"{chunk} on {prefilling.specs.hardware.name} are {chunks:,} chunks, {limit}")
    return chunk


def _prompt_fits(prefilling, pricer: Pricer, design: DesignShape, prompt: int, pool: str) -> None:
    """Warn where not one request of `prompt` tokens fits the KV pool that prefills it (`pool`:
    which, where the scenario disaggregates), as _batch_warnings does of --context: `mtpsim run`
    refuses such a request, as the engine would. A prompt past max_context is warned of already."""
    limit = prefilling.specs.model.max_context
    if limit is not None and prompt > limit:
        return
    engine, chunk = prefilling.specs.engine, prefill_chunk_tokens(prefilling)
    if not engine.mixed_batches.split_prompts and prompt > chunk:
        warn("--prompt", "", f"{prompt} tokens {past_whole_budget(engine.name, prompt, chunk)}")
    m = memory_budget(pricer, design, pool_rule(prefilling))
    if m.max_requests(prompt) == 0:
        warn("--prompt", "", f"{prompt} tokens do not fit the {pool}KV pool ({m.kv_budget_bytes / 1e9:.2f} GB per GPU, "
             f"{m.max_kv_tokens} tokens): priced as asked, though `mtpsim run` refuses a request that long, "
             "as the engine would")


def _batch_warnings(s, memory: pd.DataFrame, batch: int, asked: int | None, context: int, room: str) -> None:
    """What `mtpsim run` would do otherwise with this batch: queue past the running-request cap,
    or refuse (or not run at once) requests its KV pool cannot hold."""
    asked_at = ("--batch", "") if asked is not None else (s.source, "workload.concurrency")  # whose batch it is
    # the cap `run` holds: SGLang's grows with the KV pool (engines.RunningCap), so its floor
    # (2048) was said where a short-context model's pool admits 4096
    # (no pool: `run` refuses it, and the warning below says so; the cap is then its floor)
    pool = int(memory.max_kv_tokens[s.speculative.design]) or None
    cap = s.specs.engine.max_running(s.speculative.design, s.engine.max_running_requests, s.specs.hardware,
                                     pool, s.specs.model.max_context)
    share = batch if asked is not None else -(-batch // s.parallel.dp)  # `run` spreads the users over dp replicas
    if share > cap:  # as `mtpsim run` caps it (bound_by "cap" in its table)
        rule = "engine.max_running_requests" if s.engine.max_running_requests is not None else f"{s.specs.engine.name}'s default"
        warn(*asked_at, f"{share} requests {'a replica ' if share != batch else ''}is past the running-request cap of "
             f"{cap} ({rule}): `mtpsim run` runs at most {cap} at once and queues the rest; priced as asked")
    fits = memory[f"max_requests@{context}"]  # memory_table's column
    limit = s.specs.model.max_context
    if limit is not None and context > limit:  # warned already; then nothing fits anyway
        return
    per_pool = -(-batch // s.parallel.attention_dp)  # under DP attention each group's GPUs hold its own requests' KV
    if fits.min() == 0:
        whose = asked_at if asked is not None else (s.source, room)
        warn(*whose, f"not one request of {context} tokens fits in memory ({fits.idxmin()}: "
             f"{memory.kv_budget_GB[fits.idxmin()]:.2f} GB of KV pool per GPU): priced as "
             "asked, though `mtpsim run` refuses this deployment, as the engine would")
    elif fits.min() < per_pool:
        group = f" ({per_pool} per attention-DP group)" if s.parallel.attention_dp > 1 else ""
        warn(*asked_at, f"{batch} requests of {context} tokens{group} do not fit in memory ({fits.idxmin()}: at "
             f"most {int(fits.min())}): priced as asked, though the engine would not run them at once")


def _print_report(s, report: dict, batch: int, context: int, ops: bool) -> None:
    print(f"{s.name}: {s.specs.model.name} on {s.describe_layout()}, "
          f"batch {batch}, context {context}, engine {s.specs.engine.name}, priced by {s.specs.pricing}\n")
    _print("Passes of one iteration (per GPU)", report["passes"])
    _print("Iteration", report["iterations"].assign(**{
        c: report["iterations"][c] * 1e3 for c in ("gpu_s", "host_s", "exposed_host_s", "iteration_s")
    }).rename(columns=lambda c: c.replace("_s", "_ms")))
    _print("Memory budget per GPU", report["memory"])
    if ops:
        _print(f"Ops of one {s.speculative.design} iteration (per GPU; count = layers x ops per layer)", report["ops"])


def _print_prefill(prefilling, s, prompt: int, ops: bool) -> None:
    """The prefill of one prompt on `prefilling` (the scenario, or its prefill pool: `s` is the
    one the iteration was priced on), in its engine's chunks."""
    chunk = _prefill_chunks(prefilling, prompt)
    pricer, design = build_pricer(prefilling), DesignShape.of(prefilling.speculative)
    _prompt_fits(prefilling, pricer, design, prompt, "" if prefilling is s else "prefill GPUs' ")
    passes, prefill_ops = prefill_table(pricer, design, prompt, chunk)
    where = "" if prefilling is s else f" on the prefill pool ({prefilling.describe_layout()})"
    _print(f"Prefill of one {prompt}-token prompt{where} (per GPU; chunks of at most {chunk} tokens, "
           f"each after the ones before it)", passes)
    if ops:
        _print("Ops of that prefill (per GPU; count = layers x ops per layer x chunks)", prefill_ops)


def _print(title: str, df) -> None:
    print(f"== {title}")
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", lambda x: f"{x:.4g}"):
        print(df.to_string(index=False))
    print()
