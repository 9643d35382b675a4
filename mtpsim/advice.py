"""Warnings for a scenario that is valid and runs, but asks something that cannot matter: a
draft or an acceptance profile for a design that drafts nothing, policy entries no batch reaches, a
routing skew, EPLB or two-batch overlap without (wide-EP) experts, a histogram or kept-length curve
that does not fit the steps it serves, a policy that never drafts, a shared prefix longer than the
prompts, engine settings their mechanism never reaches (a graph limit without graphs, a budget the
batch outgrows), a forced acceptance its engine clamps, a profile under the roofline; the model
checks are model_advice.py's, the load's workload_advice.py's. Each is one stderr line
(errors.warn); refusing would be too strict, since a sweep or a shared file can make such a
setting harmless.
"""
from __future__ import annotations

from mtpsim import designs, model_advice, workload_advice
from mtpsim.acceptance_schema import ACCEPTANCE_FORMS
from mtpsim.cache_settings import block_tokens_of, cache_enabled, trace_blocks
from mtpsim.schema import Scenario


def advise(s: Scenario, skip: tuple = ()) -> None:
    """Warn about what in point `s` cannot matter; keys the sweep varies are left alone (a sweep
    over designs gives `none` a draft it ignores, as it must). `skip`: checks the command makes
    moot (RUNNING_BATCH_CHECKS where `cost --batch` sets the batch itself)."""
    from mtpsim.errors import warn
    for key, reason in problems(s, skip):
        depends = (key, *DEPENDS.get(".".join(key.split(".")[:2]), ()))
        if not any(_within(swept, dep) for swept in s.point for dep in depends):
            warn(s.source, key, reason)


def advise_sweep(points: list[Scenario], skip: tuple = ()) -> None:
    """A swept key that no point reads (the same warning at every point, which advise() leaves
    alone because the key is swept; or a value no point reads, null at the others: the default,
    which is no more read), or that changes no simulation (question, name): one warning that
    the sweep's points are the same run."""
    from mtpsim.errors import warn
    if len(points) < 2:
        return
    found = [problems(s, skip) for s in points]
    for swept in points[0].point:
        if swept in ("question", "name"):
            warn(points[0].source, f"sweep.{swept}", f"the {swept} is printed, not simulated: these points are the "
                 "same run")
            continue
        first = next(((k, r) for k, r in found[0] if _within(swept, k)), None)
        if first is not None and all(any(_within(swept, k) for k, _ in at) for at in found[1:]):
            warn(points[0].source, f"sweep.{swept}", f"{first[0]}: {first[1]} at every point: these points are the same run")
        elif first is None:
            _unread_or_null(points, swept, skip)


def _unread_or_null(points: list[Scenario], swept: str, skip: tuple) -> None:
    """A swept key null at some points and, at every other, named by a check whose warnings say
    the value is not read (UNREAD_CHECKS): its default is no more read than its values, so the
    points are the same run (`workload.rate_per_s: [null, 5]` under a closed loop)."""
    from mtpsim.errors import warn
    unread = [[found for check in UNREAD_CHECKS if check not in skip for found in check(s)
               if _within(swept, found[0])] for s in points]
    null = [s.point[swept] is None for s in points]
    said = next((at[0] for at in unread if at), None)
    if said is not None and any(null) and all(at or blank for at, blank in zip(unread, null)):
        warn(points[0].source, f"sweep.{swept}", f"{said[0]}: {said[1]} where it is set, and null elsewhere: these "
             "points are the same run")


# what else a warning's key depends on: a sweep over these makes the setting matter at other points
DEPENDS = {"speculative.draft": ("speculative.design",), "acceptance": ("speculative",),
           "speculative.policy": ("workload", "engine", "speculative"),
           "cost.moe_skew": ("model",), "cost.moe_stream_overlap": ("model", "hardware", "engine", "parallel"),
           "acceptance.histogram": ("speculative",),
           "engine.two_batch_overlap": ("parallel", "disaggregation", "model"),
           "cost.ep_imbalance": ("parallel", "disaggregation", "model"),
           "workload.rate_per_s": ("workload.arrival",), "workload.trace": ("workload.arrival",),
           "workload.num_requests": ("workload.arrival",), "acceptance.forced": ("speculative", "engine"),
           "engine.eplb": ("model",), "engine.mixed_batches": ("speculative", "engine"),
           "engine.dp_routing": ("parallel", "disaggregation"), "workload.shared_prefix": ("engine",)}


def _within(swept: str, key: str) -> bool:
    return swept == key or swept.startswith(key + ".") or key.startswith(swept + ".")


def problems(s: Scenario, skip: tuple = ()) -> list[tuple[str, str]]:
    """(key, reason) for each setting of point `s` that cannot matter, in the order the checks
    below list them (advise_sweep names the first a swept key makes), but those in `skip`."""
    return [found for check in CHECKS if check not in skip for found in check(s)]


def _ignored_by_design(s: Scenario) -> list[tuple[str, str]]:
    """An acceptance for a design that drafts nothing (unless a searched design drafts), and a
    draft for a design that takes no external one (unless a searched design takes one)."""
    spec, record = s.speculative, designs.record(s.speculative.design)
    searched = s.search.designs if s.search is not None and s.search.designs else []  # `mtpsim search` drafts them
    found = []
    if record.draft_part is None and any(getattr(s.acceptance, k) is not None for k in ACCEPTANCE_FORMS) \
            and not any(designs.record(d).draft_part is not None for d in searched):
        found.append(("acceptance", f"design {spec.design} drafts nothing: its acceptance is ignored"))
    if spec.draft is not None and record.external is None \
            and not any(designs.record(d).external is not None for d in searched):
        found.append(("speculative.draft", f"design {spec.design} takes no external draft: it is ignored"))
    return found


def _experts_served(s: Scenario) -> bool:
    return any(spec.has_experts for _, _, spec in model_advice.served(s))


def _skew_without_experts(s: Scenario) -> list[tuple[str, str]]:
    if s.cost.moe_skew > 0 and not _experts_served(s):
        return [("cost.moe_skew", f"model {s.specs.model.name!r} has no experts: a routing skew changes nothing")]
    return []


def _stream_overlap_moot(s: Scenario) -> list[tuple[str, str]]:
    """A side-stream overlap where no pass runs the shared experts on a second stream: in any
    pass of an aggregated deployment, in a disaggregated one's decode pool or (where small
    passes take the stream, never CUDA graphs alone) its prefill pool's prompts."""
    if s.cost.moe_stream_overlap <= 0:
        return []
    from mtpsim.costs.deployment import resolve
    if s.disaggregation is None:
        reached = resolve(s).moe_side_stream_passes != ""
    else:
        from mtpsim.pools import pool_scenario
        reached = resolve(pool_scenario(s, "decode")).moe_side_stream_passes != "" or \
            resolve(pool_scenario(s, "prefill")).moe_side_stream_passes == "small"
    if reached:
        return []
    return [("cost.moe_stream_overlap", f"{s.specs.engine.name} runs no shared experts on a second stream here "
             "(none unfused, DP attention, not a DeepSeek-style MoE, or CUDA graphs off where only graph passes "
             f"take the stream){' in either pool' * (s.disaggregation is not None)}: the overlap changes nothing")]


def swept_search(s: Scenario) -> list[tuple[str, str]]:
    return [(f"sweep.{k}", "only `mtpsim search` reads the search section: these points are the same run")
            for k in s.point if k == "search" or k.startswith("search.")][:1]


def _verify_past_the_model(s: Scenario) -> list[tuple[str, str]]:
    """verify settings past what the model has to shrink (mtpsim/shrink.py): more layers or
    routed experts than it holds, a scale that takes every width to the floor."""
    from mtpsim.shrink import MIN_WIDTH
    model, v, found = s.specs.model, s.verify, []
    if "verify" not in s.model_fields_set:
        return found
    if v.num_layers > model.num_layers:
        found.append(("verify.num_layers", f"{v.num_layers} is more than model {model.name!r}'s "
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


def _engine_moot(s: Scenario) -> list[tuple[str, str]]:
    """Engine settings the design or model gives nothing to act on, and a profile under the roofline."""
    engine, record, found = s.specs.engine, designs.record(s.speculative.design), []
    if s.engine.mixed_batches and record.draft_part is not None and not engine.mixed_batches.speculative:
        found.append(("engine.mixed_batches", f"{engine.name} {engine.version} mixes no prompt chunks into speculative "
                      f"iterations: only the none baseline runs mixed batches, so the speedup compares the two "
                      "schedules"))
    if s.engine.speculative_overlap is not None and record.draft_part is None:
        found.append(("engine.speculative_overlap", f"design {s.speculative.design} runs no speculative iteration: the "
                      "speculative overlap changes nothing (plain decode's is engine.overlap_schedule)"))
    if s.engine.eplb and not _experts_served(s):
        found.append(("engine.eplb", f"model {s.specs.model.name!r} has no experts to place: EPLB changes nothing"))
    if s.cost.model == "roofline" and s.cost.profile is not None:
        found.append(("cost.profile", "cost.model is roofline: the profile prices nothing"))
    return found


def _past_their_reach(s: Scenario) -> list[tuple[str, str]]:
    """A shared prefix longer than any prompt (it is cut to the prompt), a kept-length curve
    deeper than the drafts an iteration makes (a request keeps at most speculative.steps), and
    a batch load whose concurrency is not its size (all num_requests arrive at t=0)."""
    w, found, load = s.workload, [], workload_advice.load_bounds(s)
    if w.shared_prefix is not None and w.shared_prefix.tokens > load.longest_input:
        found.append(("workload.shared_prefix.tokens", f"{w.shared_prefix.tokens} is longer than any prompt "
                      f"({load.longest_input} tokens at most{' in the trace' * load.from_trace}): the shared part "
                      "is cut to each prompt's length"))
    kept = s.acceptance.kept_length
    if kept is not None and len(kept) - 1 > s.speculative.steps > 0:
        found.append(("acceptance.kept_length", f"gives P(j kept) up to j = {len(kept) - 1}, more than "
                      f"speculative.steps {s.speculative.steps}: a request keeps at most {s.speculative.steps}, so "
                      "the entries past it count as keeping them all"))
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
                      f"does not read concurrency {w.concurrency} (cost and verify take it as their batch), though "
                      "the results table labels the point with it"))
    return found


def _forced_past_its_range(s: Scenario) -> list[tuple[str, str]]:
    """A forced-acceptance setting the engine's rule bends (acceptance.py AcceptanceProfile.forced):
    SGLang clamps the accept length to [1, steps + 1], TensorRT-LLM accepts every draft past
    steps; and a forcing rule of another engine than the one simulated."""
    forced, steps = s.acceptance.forced, s.speculative.steps
    if forced is None or designs.record(s.speculative.design).draft_part is None:
        return []
    found = []
    if forced.engine == "sglang" and not 1 <= forced.setting <= steps + 1:
        found.append(("acceptance.forced.setting", f"{forced.setting:g} lies outside [1, steps + 1 = {steps + 1}]: "
                      f"SGLang clamps SGLANG_SIMULATE_ACC_LEN to {min(max(forced.setting, 1), steps + 1):g}"))
    if forced.engine == "trtllm" and forced.setting > steps:
        found.append(("acceptance.forced.setting", f"{forced.setting:g} accepted drafts is more than steps {steps}: "
                      f"TensorRT-LLM accepts all {steps}"))
    if forced.engine != s.engine.kind:
        found.append(("acceptance.forced.engine", f"reproduces {forced.engine}'s forcing rule while engine.kind is "
                      f"{s.engine.kind}"))
    return found


def _no_wide_ep(s: Scenario) -> list[tuple[str, str]]:
    """Two-batch overlap and EP imbalance only act on MoE layers run wide EP (ep == tp under
    DP attention: costs/dp_attention.py), in the scenario's layout or either pool's."""
    d = s.disaggregation
    layouts = [s.parallel] if d is None else [d.prefill, d.decode]
    if _experts_served(s) and any(p.attention_dp > 1 and p.ep == p.tp > 1 for p in layouts):
        return []
    why = "no layout here runs its experts wide EP (ep == tp with attention_dp > 1): it changes nothing"
    return [(key, why) for key, on in (("engine.two_batch_overlap", s.engine.two_batch_overlap),
                                       ("cost.ep_imbalance", s.cost.ep_imbalance is not None)) if on]


def _idle_engine_settings(s: Scenario) -> list[tuple[str, str]]:
    """Engine settings whose mechanism does not run here: EPLB where no published imbalance applies
    (costs/wide_ep.py: wide EP over 32 ranks or more, without cost.ep_imbalance), a graph batch
    limit without graphs, a block size of a prefix cache that is off."""
    from mtpsim.costs.wide_ep import MEASURED_RANKS
    found, e, moe = [], s.engine, _experts_served(s)
    d = s.disaggregation
    layouts = [s.parallel] if d is None else [d.prefill, d.decode]
    if e.eplb and moe and s.cost.ep_imbalance is not None:
        found.append(("engine.eplb", "cost.ep_imbalance sets the busiest rank's load itself: EPLB changes nothing"))
    elif e.eplb and moe and not any(p.attention_dp > 1 and p.ep == p.tp >= MEASURED_RANKS for p in layouts):
        found.append(("engine.eplb", f"EPLB's measured imbalance is for wide EP over {MEASURED_RANKS} ranks or more, "
                      "which no layout here runs (routing is uniform below): it changes nothing"))
    if not e.cuda_graphs and "max_graph_batch" in e.model_fields_set:
        found.append(("engine.max_graph_batch", "engine.cuda_graphs is false: no graph is captured, so its batch "
                      "limit changes nothing"))
    cache = e.prefix_cache
    if cache is not None and not cache.enabled and "block_tokens" in cache.model_fields_set:
        found.append(("engine.prefix_cache.block_tokens", "the prefix cache is off: its block size changes nothing"))
    return found


def _blocks_out_of_reach(s: Scenario) -> list[tuple[str, str]]:
    """Prefix-cache settings that leave no block to cache: a block longer than any prompt, a
    shared prefix shorter than one block (a block holds the shared tokens and the request's own,
    so no two prompts' blocks match), a cache cap under one block. A trace's hash_ids name its
    blocks itself (block_size), and the engine's block_tokens does not apply to them."""
    cache, w = s.engine.prefix_cache, s.workload
    if not cache_enabled(s):
        return []
    block, found, load = block_tokens_of(s), [], workload_advice.load_bounds(s)
    if cache is not None and "block_tokens" in cache.model_fields_set and not trace_blocks(s) \
            and cache.block_tokens > load.longest_input:
        found.append(("engine.prefix_cache.block_tokens", f"{cache.block_tokens:,} tokens is longer than any prompt "
                      f"({load.longest_input:,} at most{' in the trace' * load.from_trace}): no prompt fills a block, "
                      "so nothing is cached"))
    if w.shared_prefix is not None and w.shared_prefix.fraction > 0 and not trace_blocks(s) \
            and w.shared_prefix.tokens < block:
        found.append(("workload.shared_prefix.tokens", f"{w.shared_prefix.tokens} is shorter than one prefix-cache "
                      f"block of {block} tokens: the block that holds it holds each request's own tokens too, so no "
                      "block is shared and nothing is cached"))
    if cache is not None and cache.max_tokens is not None and cache.max_tokens < block:
        tokens = f"{cache.max_tokens:,} token{'s' * (cache.max_tokens != 1)}"
        found.append(("engine.prefix_cache.max_tokens", f"{tokens} is less than one block of {block}: the cache "
                      "can hold no block, so nothing is cached"))
    return found


def _budget_below_decode(s: Scenario) -> list[tuple[str, str]]:
    """A mixing engine (vLLM, TensorRT-LLM: sim/mixed.py) schedules at most its token budget a
    step, running requests first at their verify width each; mtpsim decodes the whole running
    batch in one iteration even past it, where the engine would decode part of it per step. A
    closed or batch load's running batch is its users per replica, up to the cap; an open
    load's (Poisson, a trace) is found by the simulation, up to the cap."""
    from mtpsim.memory import prefill_chunk_tokens
    d, w = designs.DesignShape.of(s.speculative), s.workload
    engine = s.specs.engine
    if s.disaggregation is not None or not engine.mixes(d.design, s.engine.mixed_batches):
        return []
    cap = engine.max_running(d.design, s.engine.max_running_requests)
    closed = w.arrival in ("closed", "batch")
    users = w.concurrency if w.arrival == "closed" else w.num_requests
    running = min(-(-users // s.parallel.dp), cap) if closed else cap
    budget = prefill_chunk_tokens(s)
    if running * d.draft_tokens <= budget:
        return []
    bound = "workload.concurrency" if closed else "engine.max_running_requests"
    key = "engine.chunked_prefill_tokens" if s.engine.chunked_prefill_tokens is not None else bound
    each = f"{d.draft_tokens} token{'s' * (d.draft_tokens > 1)} each"
    batch = f"{running} running requests" if closed else f"up to {running} running requests (the running-request cap)"
    return [(key, f"{batch} x {each} exceed {engine.name}'s {budget}-token budget a step: the engine would decode "
             "part of the batch per step, mtpsim decodes all of it")]


def _unreached_policy(s: Scenario) -> list[tuple[str, str]]:
    """steps_by_batch entries whose batch no iteration can run: past the running-request cap,
    the number of requests, or a closed loop's users."""
    policy = s.speculative.policy
    if policy is None:
        return []
    if not any(policy.steps_by_batch.values()):
        return [("speculative.policy.steps_by_batch", "every entry drafts 0 steps: no iteration speculates, and the "
                 "run is plain decode paying for the draft's weights and KV")]
    w, load = s.workload, workload_advice.load_bounds(s)
    bounds = [(s.specs.engine.max_running(s.speculative.design, s.engine.max_running_requests), "the running-request cap"),
              (load.requests, load.requests_by)]
    bounds += [(w.concurrency, "workload.concurrency")] if w.arrival in ("closed", "batch") else []
    most, by = min(bounds)
    unreached = sorted(k for k in policy.steps_by_batch if k > most)
    if not unreached:
        return []
    which = "this entry is" if len(unreached) == 1 else f"{len(unreached)} entries from this one are"
    return [(f"speculative.policy.steps_by_batch.{unreached[0]}", f"no iteration of this workload runs more than "
             f"{most} requests ({by}), so {which} never used")]


def _dead_drafts(s: Scenario) -> list[tuple[str, str]]:
    """Drafts the acceptance never accepts (0 from some depth on): they only cost time. A
    histogram says so in its own words (_deep_histogram)."""
    from mtpsim.acceptance import AcceptanceProfile
    from mtpsim.errors import ScenarioError
    steps, acc = s.speculative.steps, s.acceptance
    if designs.record(s.speculative.design).draft_part is None or acc.histogram is not None or not steps:
        return []
    form = next((k for k in ACCEPTANCE_FORMS if getattr(acc, k) is not None), None)
    if form in (None, "forced"):  # a forced setting has its engine's own warnings (_forced_past_its_range)
        return []
    try:
        alphas = AcceptanceProfile.from_section(acc, steps, s.source, s.speculative.topk, s.speculative.draft_tokens).alphas
    except (ScenarioError, ValueError):  # refused by the scenario's own checks, in their words
        return []
    dead = next((i for i, a in enumerate(alphas[:steps]) if a <= 0), None)
    if dead is None:
        return []
    drafts = f"draft {steps}" if dead + 1 == steps else f"drafts {dead + 1}..{steps}"
    return [(f"acceptance.{form}", f"no draft past depth {dead} is ever accepted: {drafts} of speculative.steps "
             f"{steps} only cost time")]


def _deep_histogram(s: Scenario) -> list[tuple[str, str]]:
    from mtpsim.acceptance import read_histogram
    if s.acceptance.histogram is None or designs.record(s.speculative.design).draft_part is None:
        return []
    counts = read_histogram(s.acceptance.histogram)
    depth, steps = int(counts.nonzero()[0].max()), s.speculative.steps  # the deepest row that counts anything
    if depth > steps:
        return [("acceptance.histogram", f"counts up to {depth} accepted drafts, more than speculative.steps "
                 f"{steps}: it was measured with more steps, and its depths past {steps} are not used")]
    if depth < steps:
        return [("acceptance.histogram", f"counts at most {depth} accepted drafts of speculative.steps {steps}: "
                 f"drafts {depth + 1}..{steps} are never accepted, so they only cost time (measured with fewer "
                 "steps?)")]
    return []


# every check problems() runs, in the order its warnings print
CHECKS = (_ignored_by_design, _unreached_policy, _skew_without_experts, workload_advice.reshaped_lengths,
          model_advice.no_context_limit, _deep_histogram, _dead_drafts, swept_search, _no_wide_ep,
          _idle_engine_settings, _blocks_out_of_reach, _budget_below_decode, model_advice.unread_dtypes,
          model_advice.windows_past_context, workload_advice.trace_settings_unread, model_advice.odd_widths,
          _verify_past_the_model, _disaggregation_moot, workload_advice.unused_by_arrival, _past_their_reach,
          _forced_past_its_range, _engine_moot, _stream_overlap_moot)

# checks whose every warning says the value is not read at all (a null, the default, is read no more)
UNREAD_CHECKS = (_ignored_by_design, workload_advice.trace_settings_unread, workload_advice.unused_by_arrival)
# checks that judge the batch a run's load keeps running (its users, its requests, the cap):
# `cost --batch` prices a batch of its own, which its header line describes
RUNNING_BATCH_CHECKS = (_unreached_policy, _budget_below_decode)
