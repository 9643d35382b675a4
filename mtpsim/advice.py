"""Warnings for a scenario that is valid and runs, but asks something that cannot matter: a sweep
over or a --set into a section the command does not read, verify settings past the model, a
disaggregation setting nothing acts on, a shared prefix longer than the prompts or read by nothing,
a routing over one replica, outputs of one token; what a sweep's points say together is
advice_sweep.py's; the speculation checks are
speculation_advice.py's, the model's model_advice.py's, the load's workload_advice.py's, the
engine's and the cost model's engine_advice.py's, a mixing engine's token budget's
budget_advice.py's. This module runs them all at one
point (advise). Each is one stderr line (errors.warn); refusing would be too strict, since a sweep
or a shared file can make such a setting harmless.
"""
from __future__ import annotations

import math

from mtpsim import budget_advice, designs, engine_advice, model_advice, workload_advice
from mtpsim import speculation_advice as spec
from mtpsim.schema import Scenario


def advise(s: Scenario, skip: tuple = ()) -> None:
    """Warn about what in point `s` cannot matter; keys the sweep varies are left alone (a sweep
    over designs gives `none` a draft it ignores, as it must), but not the warnings of RUNS_OTHERWISE,
    which say the point runs otherwise than written. `skip`: checks the command makes moot
    (RUNNING_BATCH_CHECKS where `cost --batch` sets the batch itself)."""
    from mtpsim.errors import warn
    for check in CHECKS:
        for key, reason in check(s) if check not in skip else ():
            depends = (key, *DEPENDS.get(".".join(key.split(".")[:2]), ()))
            if check in RUNS_OTHERWISE or not any(within(swept, dep) for swept in s.point for dep in depends):
                warn(s.source, *swept_at(s, key, reason))


def swept_at(s: Scenario, key: str, reason: str) -> tuple[str, str]:
    """(key, reason) of a warning about point `s`'s `key` as said: where a sweep gives its value,
    at the sweep's entry (`sweep.acceptance.per_depth`), which names the --set that gave the sweep,
    not at a key the file does not hold."""
    swept = next((k for k in s.point if within(k, key)), None)
    return (key, reason) if swept is None else (f"sweep.{swept}", f"{key}: {reason}" if key != swept else reason)


# what else a warning's key depends on: a sweep over these makes the setting matter at other points
DEPENDS = {"speculative.draft": ("speculative.design",), "acceptance": ("speculative",),
           "speculative.draft_tokens": ("speculative.design",),
           "speculative.policy": ("workload", "engine", "speculative"),
           "cost.moe_skew": ("model",), "cost.routing_locality": ("model", "speculative"),
           "cost.moe_stream_overlap": ("model", "hardware", "engine", "parallel"),
           "acceptance.histogram": ("speculative",),
           "engine.two_batch_overlap": ("parallel", "disaggregation", "model"),
           "cost.ep_imbalance": ("parallel", "disaggregation", "model"),
           "workload.rate_per_s": ("workload.arrival",), "workload.trace": ("workload.arrival",),
           "workload.num_requests": ("workload.arrival",),
           "workload.concurrency": ("workload.arrival",), "acceptance.forced": ("speculative", "engine"),
           "engine.eplb": ("model",), "engine.mixed_batches": ("speculative", "engine"),
           "engine.dp_routing": ("parallel", "disaggregation"), "workload.shared_prefix": ("engine",),
           "engine.speculative_overlap": ("speculative", "engine"), "engine.prefix_cache": ("engine", "workload"),
           "engine.batch_wait": ("engine", "parallel", "disaggregation", "speculative"),
           "parallel.dp": ("workload", "parallel", "disaggregation"),
           "disaggregation.prefill": ("workload", "parallel", "disaggregation"),
           "disaggregation.decode": ("workload", "parallel", "disaggregation")}


def within(swept: str, key: str) -> bool:
    return swept == key or swept.startswith(key + ".") or key.startswith(swept + ".")


def problems(s: Scenario, skip: tuple = ()) -> list[tuple[str, str]]:
    """(key, reason) for each setting of point `s` that cannot matter, in the order the checks
    below list them (advise_sweep names the first a swept key makes), but those in `skip`."""
    return [found for check in CHECKS if check not in skip for found in check(s)]


def swept_search(s: Scenario) -> list[tuple[str, str]]:
    """A sweep over, or a --set inside, the search section, which only `mtpsim search` reads."""
    return _swept_section(s, "search")


def swept_verify(s: Scenario) -> list[tuple[str, str]]:
    """A sweep over, or a --set inside, the verify section, which builds `mtpsim verify`'s real
    loop and which no simulation reads (run, recommend, search, cost: `_verify_past_the_model`
    warns of the file's alone)."""
    return _swept_section(s, "verify")


def _swept_section(s: Scenario, section: str) -> list[tuple[str, str]]:
    """The first swept key inside `section`, which only `mtpsim <section>` reads; and the keys
    --set gave it (the section as a whole, or its first key the flag set): the command it was
    given to ignores them (a file's own section is for the command that reads it, and is quiet)."""
    from mtpsim.errors import set_by_flag
    from mtpsim.schema import SearchBounds, Verify  # the sections' schemas, as every scenario holds them
    said = f"only `mtpsim {section}` reads the {section} section"
    found = [(f"sweep.{k}", f"{said}: these points are the same run")
             for k in s.point if k == section or k.startswith(section + ".")][:1]
    keys = {"search": SearchBounds, "verify": Verify}[section].model_fields
    # a --set that drops the section (`search=null`, `verify=null`) leaves nothing of it to ignore
    held = getattr(s, section)
    given = [k for k in keys if set_by_flag(s.source, f"{section}.{k}")] if held is not None and held.model_fields_set \
        else []
    if given:
        found.append((section if len(given) == len(keys) else f"{section}.{given[0]}", f"{said}: it is ignored"))
    return found


def _verify_past_the_model(s: Scenario) -> list[tuple[str, str]]:
    """verify settings past what the model has to shrink (mtpsim/shrink.py): more layers or
    routed experts than it holds, a scale that takes every width to the floor."""
    from mtpsim.shrink import MIN_WIDTH
    model, v, found = s.specs.model, s.verify, []
    if "verify" not in s.model_fields_set:
        return found
    if v.num_layers > model.num_layers:
        found.append(("verify.num_layers", f"{v.num_layers} is more than model {model.name}'s "
                      f"{model.num_layers} layers: verify builds those {model.num_layers}"))
    built = [m for m in (model, s.specs.draft, s.specs.assistant) if m is not None]  # each shrunk by the cap
    experts = max((f.num_experts for m in built for f in m.ffn_kinds.values() if f.kind == "moe"), default=0)
    if "num_experts" in v.model_fields_set and v.num_experts > experts:
        found.append(("verify.num_experts", f"{v.num_experts} is more than the {experts} routed experts of model "
                      f"{model.name!r} (or its draft): verify builds those {experts}" if experts else
                      f"model {model.name!r} (and any draft) has no routed experts: the cap changes nothing"))
    widest = max(model.hidden_size, model.vocab_size)
    if widest * v.hidden_scale <= MIN_WIDTH:
        found.append(("verify.hidden_scale", f"{v.hidden_scale:g} takes every width of model {model.name!r} (its "
                      f"widest, {widest:,}, too) to the floor of {MIN_WIDTH}: any scale up to "
                      f"{MIN_WIDTH / widest:.3g} builds the same model"))
    return found


def _disaggregation_moot(s: Scenario) -> list[tuple[str, str]]:
    d, found = s.disaggregation, []
    if d is not None and d.kv_streaming and d.link == "free":
        found.append(("disaggregation.kv_streaming", "link free moves the KV at no cost: streaming it layer by "
                      "layer changes nothing"))
    if d is not None and "parallel" in s.model_fields_set:
        found.append(("parallel", "with disaggregation each pool gives its own layout (disaggregation.prefill / "
                      "decode): this one is not read"))
    return found


def _idle_pool_gpus(s: Scenario) -> list[tuple[str, str]]:
    """A deployment's GPUs past what its pools use: they serve nothing, and the per-GPU rates count
    the pools' GPUs only (bad-input campaign 32a: read as a bound and nowhere else, without a word)."""
    d = s.disaggregation
    used = d.prefill.gpus + d.decode.gpus if d is not None else 0
    if d is None or d.gpus is None or d.gpus <= used:
        return []
    return [("disaggregation.gpus", f"the prefill pool's {d.prefill.gpus} GPUs and the decode pool's "
             f"{d.decode.gpus} use {used} of the deployment's {d.gpus}: the other {d.gpus - used} serve nothing, "
             f"and per-GPU rates count the pools' {used}")]


def _prefix_past_the_prompts(s: Scenario) -> list[tuple[str, str]]:
    """A shared prefix longer than any prompt (it is cut to the prompt)."""
    w, load = s.workload, workload_advice.load_bounds(s)
    if w.shared_prefix is not None and w.shared_prefix.tokens > load.longest_input:
        return [("workload.shared_prefix.tokens", f"{w.shared_prefix.tokens} is longer than any prompt "
                 f"({load.longest_input} tokens at most{' in the trace' * load.from_trace}): the shared part "
                 "is cut to each prompt's length")]
    return []


def _past_their_reach(s: Scenario) -> list[tuple[str, str]]:
    """A kept-length curve that keeps no draft, a shared prefix nothing reads, a routing with one
    replica, outputs of one token, and a batch load whose concurrency is not its size (all
    num_requests arrive at t=0); a shared prefix or kept length deeper than what it serves is
    _prefix_past_the_prompts's and spec.kept_past_the_steps's (run before it)."""
    w, found, load = s.workload, [], workload_advice.load_bounds(s)
    kept = s.acceptance.kept_length
    if kept is not None and kept[0] >= 1 - 1e-9:
        cost = "runs plain decoding (a controller drafts nothing for a width-0 request)" \
            if s.acceptance.kept_by == "controller" else "pays for drafting"
        found.append(("acceptance.kept_length", "puts all its weight on 0 kept drafts: no draft is ever verified, "
                      f"so the design decodes one token per iteration and {cost}"))
    if w.shared_prefix is not None and w.shared_prefix.fraction == 0:
        found.append(("workload.shared_prefix.fraction", "0: no request opens with the shared prompt, so it changes "
                      "nothing"))
    elif w.shared_prefix is not None and s.engine.prefix_cache is not None and not s.engine.prefix_cache.enabled:
        found.append(("workload.shared_prefix", "engine.prefix_cache is off: every prompt is prefilled whole, so "
                      "the shared prompt changes nothing"))
    elif w.shared_prefix is not None and w.arrival != "trace" and w.shared_prefix.groups > 1:
        # requests that draw a group an earlier one drew: n - E[distinct groups] of n uniform draws
        n, groups = w.shared_prefix.fraction * load.requests, w.shared_prefix.groups
        repeats = n - groups * -math.expm1(n * math.log1p(-1.0 / groups))
        if repeats < 0.5:
            found.append(("workload.shared_prefix.groups", f"{groups:,} shared prompts drawn by the ~{n:,.0f} requests "
                          f"that open with one: {repeats:.2g} requests on average find theirs already cached, so the "
                          "shared prompt changes almost nothing"))
    routed, by = (s.parallel.dp, "dp") if s.disaggregation is None else \
        (s.disaggregation.prefill.replicas, "disaggregation.prefill.replicas")  # arrivals are routed to prefill
    if s.engine.dp_routing is not None and routed == 1:
        found.append(("engine.dp_routing", f"{by} is 1: one replica takes every request, so the routing changes "
                      "nothing"))
    if load.longest_output < 2 and designs.record(s.speculative.design).draft_part is not None:  # a prefill study is fine
        found.append((load.key("output_len"), f"{'the trace holds only ' * load.from_trace}requests of one output "
                      "token, which decode nothing after their prefill: TPOT, accept length and per-user speed have "
                      "no value, and a speedup compares prefills"))
    if w.arrival == "batch" and "concurrency" in w.model_fields_set and w.concurrency != w.num_requests:
        found.append(("workload.concurrency", f"arrival batch sends all {w.num_requests} requests at t=0, so `run` "
                      f"does not read concurrency {w.concurrency} (cost and verify take it as their batch; the results "
                      f"table's conc column is the {w.num_requests} sent at once)"))
    return found


# every check problems() runs, in the order its warnings print
CHECKS = (spec.ignored_by_design, spec.draft_of_another_target, spec.profile_of_another, spec.tree_read_from_length,
          spec.unreached_policy, engine_advice.skew_without_experts,
          workload_advice.reshaped_lengths, model_advice.no_context_limit, spec.deep_histogram, spec.dead_drafts,
          swept_search, swept_verify, engine_advice.no_wide_ep, engine_advice.idle_engine_settings,
          engine_advice.blocks_out_of_reach, budget_advice.budget_below_decode,
          budget_advice.whole_prompts_past_budget, budget_advice.prompts_past_whole_budget,
          engine_advice.cap_per_rank, model_advice.unread_dtypes,
          model_advice.windows_past_context, model_advice.fp4_kv_before_blackwell,
          workload_advice.trace_settings_unread, model_advice.past_any_model, model_advice.odd_widths,
          _verify_past_the_model, _disaggregation_moot, _idle_pool_gpus, workload_advice.unused_by_arrival,
          workload_advice.concurrency_unread, workload_advice.idle_replicas,
          _prefix_past_the_prompts, spec.kept_past_the_steps, _past_their_reach, spec.forced_past_its_range,
          engine_advice.engine_moot, engine_advice.stream_overlap_moot, budget_advice.batch_wait_moot,
          engine_advice.graph_lists_capture_none)

# checks whose every warning says the value is not read at all (a null, the default, is read no more)
UNREAD_CHECKS = (spec.ignored_by_design, workload_advice.trace_settings_unread, workload_advice.unused_by_arrival,
                 workload_advice.concurrency_unread)
# checks whose warnings say the point runs otherwise than written (its load against the engine's
# token budget, lengths that average other than their mean, drafts never accepted, a cap the
# ranks split, an FP4 cache kept as FP8, a forced acceptance the engine bends, passes no graph
# captures, a tree's acceptance split assumed, GPUs no pool uses), not that a setting goes unread:
# advise() says them at every point that has them, its keys swept or not (a sweep over the whole
# workload section hid the budget that keeps TensorRT-LLM to one 8k prompt at a time, which the
# run's own note then pointed to), and advise_sweep does not read them as a sign that the points are
# the same run
RUNS_OTHERWISE = (spec.draft_of_another_target, budget_advice.budget_below_decode, budget_advice.whole_prompts_past_budget,
                  budget_advice.prompts_past_whole_budget, workload_advice.reshaped_lengths, spec.dead_drafts,
                  engine_advice.cap_per_rank, model_advice.fp4_kv_before_blackwell, spec.forced_past_its_range,
                  engine_advice.graph_lists_capture_none, spec.tree_read_from_length, _idle_pool_gpus)
# checks that judge the batch a run's load keeps running (its users, its requests, the cap):
# `cost --batch` prices a batch of its own, which its header line describes
RUNNING_BATCH_CHECKS = (spec.unreached_policy, budget_advice.budget_below_decode, budget_advice.whole_prompts_past_budget)
# checks that judge the scenario's own steps, policy or users, which recommend and search do not
# run: they compare steps of their own (1..--max-steps, as the acceptance allows) at loads of their
# own, without the policy (the budget is judged at their points: budget_advice.budget_at_points)
GRID_CHECKS = (spec.unreached_policy, spec.kept_past_the_steps, spec.deep_histogram, budget_advice.budget_below_decode,
               budget_advice.whole_prompts_past_budget, workload_advice.concurrency_unread, workload_advice.idle_replicas)
