"""`mtpsim cost`: the first point's iteration priced pass by pass (report.py's tables), with what
`mtpsim run` would do otherwise with that batch and context (queue past the running cap, refuse a
request its KV pool cannot hold), and with `--prompt` the prefill of one prompt in the engine's
chunks."""
from __future__ import annotations

import pandas as pd

from mtpsim import scenario as sc
from mtpsim import sweep
from mtpsim.advice import RUNNING_BATCH_CHECKS, advise, swept_at
from mtpsim.advice_sweep import advise_sweep
from mtpsim.budget_advice import batch_past_budget, past_whole_budget
from mtpsim.catalog import engine_file_label
from mtpsim.costs import Pricer, build_pricer
from mtpsim.designs import DesignShape
from mtpsim.errors import ScenarioError, holding, warn
from mtpsim.memory import memory_budget, pool_rule, prefill_chunk_tokens
from mtpsim.overrides import REPLACED, flags_over_sets
from mtpsim.pools import pool_scenario
from mtpsim.report import cost_report, prefill_table
from mtpsim.tracefiles import mean_lengths
from mtpsim.workload_advice import concurrency_unread

# chunks of one prompt `cost --prompt` prices, one after another: the engines' smallest default
# chunk (2048) cuts the flag's longest prompt (2**24) into 8192; a chunk of 1 token made a
# 100,000-token prompt 100,000 pricings of each pass (30 s) and the flag's longest hours
MAX_PREFILL_CHUNKS = 10_000


def cost_command(path: str, sets: list[str], batch: int | None, context: int | None, ops: bool,
                 prompt: int | None = None) -> int:
    """`mtpsim cost`: the first point's report at `batch` requests (default workload.concurrency)
    of `context` committed tokens (default the mean prompt), printed table by table; `prompt`:
    also the prefill of one prompt of that many tokens (on the prefill pool's layout where the
    scenario disaggregates)."""
    if batch is not None:  # the flag's batch replaces the workload's users
        flags_over_sets(sets, {"workload.concurrency": (f"--batch {batch}", REPLACED)})
    # the loader's warnings wait for cost's own checks (a --prompt past the chunk limit): bad input is one line
    with holding():
        points = sc.load(path, sets, advise_points=False)
        # the batch priced is the flag's, not the one the load would keep running; without the flag it
        # is workload.concurrency, under any arrival
        skip = (*(RUNNING_BATCH_CHECKS if batch is not None else ()), concurrency_unread)
        for p in points:
            advise(p, skip=skip)
        advise_sweep(points, skip=skip)
        s = points[0]
        if s.seeds > 1:  # run's replicates, as verify says of them: cost draws nothing
            warn(s.source, *swept_at(s, "seeds", f"cost prices one iteration, drawing nothing: the {s.seeds} replicates "
                                     "seeds asks for are `mtpsim run`'s"))
        if "seed" in s.model_fields_set:  # the lengths and acceptance draws it seeds are run's
            warn(s.source, *swept_at(s, "seed", "cost prices one iteration, drawing nothing: the seed is `mtpsim run`'s"))
        # what leaves no KV pool when the batch is the load's: the decode pool, a fraction the file
        # gives, else the layout (`mtpsim run` refuses it at the pool or engine.mem_fraction: memory.check_fits)
        room = "disaggregation.decode" if s.disaggregation is not None else \
            "engine.mem_fraction" if s.engine.mem_fraction is not None else "parallel"
        prefilling = s if s.disaggregation is None else pool_scenario(s, "prefill")  # where a prompt is prefilled
        if s.disaggregation is not None:  # an iteration is the decode pool's: TPOT is set there
            print("(disaggregated: pricing the decode pool's iteration on its own layout"
                  f"{', and a prompt on the prefill pool' if prompt is not None else ''})")
            s = pool_scenario(s, "decode")
        # the flag's batch is one replica's; the load's users are spread over the dp replicas as `run`
        # spreads them, each pricing its share (all of them on one replica was an iteration no GPU runs)
        asked, users = batch, s.workload.concurrency
        if asked is None and _sent_at_once(s.workload):
            users = s.workload.num_requests
            print(f"(arrival batch: pricing the {users} requests it sends at once as the batch)")
        batch = -(-users // s.parallel.dp) if asked is None else asked
        if batch != users and asked is None:
            print(f"(dp {s.parallel.dp}: `mtpsim run` spreads workload.concurrency {users} over the replicas, so an "
                  f"iteration is priced at a replica's {batch})")
        context = _context_of(s, context)
        for flag, tokens in (("--context", context), ("--prompt", prompt)):
            _past_max_context(s, flag, tokens)
        chunk = _prefill_chunks(prefilling, prompt) if prompt is not None else None
    sweep.left_out(points, "cost")
    if s.speculative.policy is not None:
        print(f"(steps_by_batch: at batch {batch} an iteration runs {s.speculative.policy.steps_for(batch)} steps; "
              f"memory is sized for speculative.steps {s.speculative.steps})")
    report = cost_report(s, batch, context, ops=ops)
    _batch_warnings(s, report["memory"].set_index("design"), batch, asked, context, room)
    past = batch_past_budget(points[0], batch) if asked is not None else None  # the load's: run's warning, above
    if past is not None:
        warn("--batch", "", past)
    _print_report(s, report, batch, context, ops)
    if prompt is not None:
        _print_prefill(prefilling, s, prompt, chunk, ops)
    return 0


def _sent_at_once(w) -> bool:
    """A batch load that gives no concurrency: its batch is the num_requests it sends at t=0, not
    concurrency's default 1 (a concurrency it gives is cost's and verify's batch, as under any arrival)."""
    return w.arrival == "batch" and "concurrency" not in w.model_fields_set


def _context_of(s, context: int | None) -> int:
    """The committed KV length priced: the flag's, else the replayed prompts' mean (a trace), else
    the mean input_len."""
    return mean_lengths(s.workload)[0] if context is None else context


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


def _prompt_fits(prefilling, pricer: Pricer, design: DesignShape, prompt: int, chunk: int, pool: str) -> None:
    """Warn where not one request of `prompt` tokens fits the KV pool that prefills it (`pool`:
    which, where the scenario disaggregates), as _batch_warnings does of --context: `mtpsim run`
    refuses such a request, as the engine would. A prompt past max_context is warned of already."""
    limit = prefilling.specs.model.max_context
    if limit is not None and prompt > limit:
        return
    engine = prefilling.specs.engine
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
    # whose batch it is: the flag's, a batch load's requests, else the users
    asked_at = ("--batch", "") if asked is not None else \
        (s.source, "workload.num_requests" if _sent_at_once(s.workload) else "workload.concurrency")
    # the cap `run` holds: SGLang's grows with the KV pool (engines.RunningCap), so its floor
    # (2048) was said where a short-context model's pool admits 4096
    # (no pool: `run` refuses it, and the warning below says so; the cap is then its floor)
    pool = int(memory.max_kv_tokens[s.speculative.design]) or None
    cap = s.specs.engine.max_running(s.speculative.design, s.engine.max_running_requests, s.specs.hardware,
                                     pool, s.specs.model.max_context)
    replica = "a replica " if asked is None and s.parallel.dp > 1 else ""  # `batch` is a replica's share of the users
    if batch > cap:  # as `mtpsim run` caps it (bound_by "cap" in its table)
        rule = s.specs.engine.cap_origin(s.speculative.design, s.engine.max_running_requests is not None,
                                         s.specs.model.architecture, engine_file_label(s.specs.engine.name))
        warn(*asked_at, f"{batch} requests {replica}is past the running-request cap of "
             f"{cap}, set by {rule}: `mtpsim run` runs at most {cap} at once and queues the rest; priced as asked")
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
        warn(*asked_at, f"{batch} requests {replica}of {context} tokens{group} do not fit in memory ({fits.idxmin()}: at "
             f"most {int(fits.min())}): priced as asked, though the engine would not run them at once")


def _print_report(s, report: dict, batch: int, context: int, ops: bool) -> None:
    print(f"{s.name}: {s.describe_model()} on {s.describe_layout()}, "
          f"batch {batch}, context {context}, engine {s.specs.engine.label}, priced by {s.specs.priced_by}\n")
    _print("Passes of one iteration (per GPU)", report["passes"])
    _print("Iteration", report["iterations"].assign(**{
        c: report["iterations"][c] * 1e3 for c in ("gpu_s", "host_s", "exposed_host_s", "iteration_s")
    }).rename(columns=lambda c: c.replace("_s", "_ms")))
    _print("Memory budget per GPU", report["memory"])
    if ops:
        if "plain_ops" in report:  # the baseline's ops beside the iteration's, as the passes above are
            _print("Ops of one plain decode step, the baseline (per GPU; count = layers x ops per layer)",
                   report["plain_ops"])
        _print(f"Ops of one {s.speculative.design} iteration (per GPU; count = layers x ops per layer)", report["ops"])


def _print_prefill(prefilling, s, prompt: int, chunk: int, ops: bool) -> None:
    """The prefill of one prompt on `prefilling` (the scenario, or its prefill pool: `s` is the
    one the iteration was priced on), in its engine's chunks of `chunk` tokens."""
    pricer, design = build_pricer(prefilling), DesignShape.of(prefilling.speculative)
    _prompt_fits(prefilling, pricer, design, prompt, chunk, "" if prefilling is s else "prefill GPUs' ")
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
