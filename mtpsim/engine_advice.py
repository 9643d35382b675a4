"""Warnings about how the engine runs and prices a scenario (advice.py runs them with the rest):
engine and cost settings whose mechanism never runs here (a routing skew, EPLB, two-batch overlap
or a second stream without (wide-EP) experts, mixed batches or a speculative overlap the design
gives nothing to act on, a graph limit without graphs, a prefix cache that caches nothing, a
profile under the roofline). A mixing engine's token budget a step is budget_advice.py's. Each
check takes the scenario and returns (dotted key, reason) pairs."""
from __future__ import annotations

from mtpsim import designs, model_advice, workload_advice
from mtpsim.cache_settings import block_tokens_of, cache_enabled, trace_blocks
from mtpsim.engine_forms import scenario_cannot_launch
from mtpsim.schema import Scenario


def _experts_served(s: Scenario) -> bool:
    return any(spec.has_experts for _, _, spec in model_advice.served(s))


def skew_without_experts(s: Scenario) -> list[tuple[str, str]]:
    """A routing skew or locality where no served model has experts to route to."""
    if _experts_served(s):
        return []
    found = []
    for key, what in (("moe_skew", "a routing skew"), ("routing_locality", "a routing locality")):
        if getattr(s.cost, key) > 0:
            found.append((f"cost.{key}", f"model {s.specs.model.name!r} has no experts: {what} changes nothing"))
    return found


def stream_overlap_moot(s: Scenario) -> list[tuple[str, str]]:
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


def _setting_rule(engine, field: str) -> str:
    """Who set `field` of `engine` at its release: the version rule in force that sets it, else its file."""
    from mtpsim.catalog import engine_file_label
    return engine.origin_of(field, engine_file_label(engine.name))




def lacked_method(s: Scenario) -> tuple[str, str] | None:
    """(the key at fault, what to say) where the engine release has no speculative method for the
    scenario's design, block drafter or EAGLE-3 draft (its file's lacks_methods), else None."""
    engine, design, draft = s.specs.engine, s.speculative.design, s.specs.draft
    block = s.specs.block_kind if design == "block" else None
    eagle3 = design == "nextn" and draft is not None and draft.fused_target_layers is not None
    lacking = block if block in engine.lacks_methods else design if design in engine.lacks_methods else \
        "eagle3" if eagle3 and "eagle3" in engine.lacks_methods else None
    if lacking is None:
        return None
    what = f"a {lacking} block drafter" if lacking == block else \
        f"an EAGLE-3 draft ({draft.name!r})" if lacking == "eagle3" else f"design {design}"
    return ("speculative.draft" if lacking == "eagle3" else "speculative.design",
            f"{engine.name} {engine.version} has no speculative method for {what} "
            f"({_setting_rule(engine, 'lacks_methods')}): mtpsim prices it with this engine's host rules as if "
            "the release ran it")


def engine_moot(s: Scenario) -> list[tuple[str, str]]:
    """Engine settings the design or model gives nothing to act on, a design the release has no
    method for, and a profile under the roofline."""
    engine, record, found = s.specs.engine, designs.record(s.speculative.design), []
    lacking = lacked_method(s)
    if lacking is not None:
        found.append(lacking)
    arch = next((a for a in s.specs.model.served_as if a in engine.lacks_architectures), None)
    if arch is not None:
        found.append(("model", f"{engine.name} {engine.version} has no code for {arch} models "
                      f"({_setting_rule(engine, 'lacks_architectures')}): mtpsim prices it with this release's rules as "
                      "if it served it"))
    launch = scenario_cannot_launch(s)
    if launch is not None:  # a layout or draft shape the engine has no option for
        key, why = launch
        found.append((key, f"{engine.name} {engine.version} {why}; mtpsim prices it as if it could (the sources: "
                      "mtpsim/engine_forms.py)"))
    if s.engine.mixed_batches and record.draft_part is not None and not engine.mixed_batches.speculative:
        if s.speculative.design in engine.mixes_as_decode:
            found.append(("engine.mixed_batches", f"{engine.name} {engine.version} mixes a prompt chunk into a "
                          f"{s.speculative.design} batch by running that step's requests as plain one-token decodes, "
                          "which mtpsim does not model: it keeps prompts out of speculative iterations (the "
                          "engine's rule before), and only the none baseline runs mixed batches"))
        else:
            found.append(("engine.mixed_batches", f"{engine.name} {engine.version} mixes no prompt chunks into "
                          "speculative iterations: only the none baseline runs mixed batches, so the speedup "
                          "compares the two schedules"))
    if s.engine.speculative_overlap is not None and record.draft_part is None:
        found.append(("engine.speculative_overlap", f"design {s.speculative.design} runs no speculative iteration: the "
                      "speculative overlap changes nothing (plain decode's is engine.overlap_schedule)"))
    elif s.engine.speculative_overlap and not engine.speculative_overlap_possible:  # resolve.py keeps it off
        found.append(("engine.speculative_overlap", f"{engine.name} {engine.version} has no speculative overlap to "
                      f"turn on ({_setting_rule(engine, 'speculative_overlap_possible')}): true changes nothing"))
    elif s.engine.speculative_overlap and not s.engine.overlap_schedule:  # costs/iteration.py hiding_window
        found.append(("engine.speculative_overlap", "engine.overlap_schedule is false: no iteration hides host work, "
                      "so the speculative overlap changes nothing"))
    elif s.engine.speculative_overlap and s.speculative.design in engine.unoverlapped_designs:  # EngineSpec.hidden_by
        found.append(("engine.speculative_overlap", f"{engine.name} {engine.version} runs {s.speculative.design}'s "
                      f"speculative worker without overlapping host work, whatever the flag says "
                      f"({_setting_rule(engine, 'unoverlapped_designs')}): true changes nothing"))
    elif s.engine.speculative_overlap and engine.speculative_overlap_max_topk is not None \
            and s.speculative.topk > engine.speculative_overlap_max_topk:
        found.append(("engine.speculative_overlap", f"{engine.name} {engine.version} overlaps no speculative iteration "
                      f"of topk above {engine.speculative_overlap_max_topk} (this one's {s.speculative.topk}; "
                      f"{_setting_rule(engine, 'speculative_overlap_max_topk')}): true changes nothing"))
    if s.cost.routing_locality > 0 and record.draft_part is None and _experts_served(s) \
            and not any(designs.record(d).draft_part is not None for d in s.searched_designs):  # costs/ffn.py shared_routing
        found.append(("cost.routing_locality", f"design {s.speculative.design} brings one token per request to each "
                      "pass: a routing locality (between a request's consecutive tokens in one pass) changes nothing"))
    if s.engine.eplb and not _experts_served(s):
        found.append(("engine.eplb", f"model {s.specs.model.name!r} has no experts to place: EPLB changes nothing"))
    if s.cost.model == "roofline" and s.cost.profile is not None:
        found.append(("cost.profile", "cost.model is roofline: the profile prices nothing"))
    return found


def no_wide_ep(s: Scenario) -> list[tuple[str, str]]:
    """Two-batch overlap and EP imbalance only act on MoE layers run wide EP (ep == tp under
    DP attention: costs/dp_attention.py), in the scenario's layout or either pool's."""
    d = s.disaggregation
    layouts = [s.parallel] if d is None else [d.prefill, d.decode]
    if _experts_served(s) and any(p.attention_dp > 1 and p.ep == p.tp > 1 for p in layouts):
        return []
    why = "no layout here runs its experts wide EP (ep == tp with attention_dp > 1): it changes nothing"
    return [(key, why) for key, on in (("engine.two_batch_overlap", s.engine.two_batch_overlap),
                                       ("cost.ep_imbalance", s.cost.ep_imbalance is not None)) if on]


def idle_engine_settings(s: Scenario) -> list[tuple[str, str]]:
    """Engine settings whose mechanism does not run here: EPLB where no published imbalance applies
    (costs/wide_ep.py: wide EP over 32 ranks or more, without cost.ep_imbalance), a graph batch
    limit without graphs, a block size or size limit of a prefix cache that is off, a bounded
    replay on a model with no tail to replay (ModelSpec.replay_tail), Engram tables placed for a
    model without them."""
    from mtpsim.costs.wide_ep import MEASURED_RANKS
    found, e, moe = [], s.engine, _experts_served(s)
    d = s.disaggregation
    layouts = [s.parallel] if d is None else [d.prefill, d.decode]
    if e.eplb and moe and s.cost.ep_imbalance is not None:
        found.append(("engine.eplb", "cost.ep_imbalance sets the busiest rank's load itself: EPLB changes nothing"))
    elif e.eplb and moe and not any(p.attention_dp > 1 and p.ep == p.tp >= MEASURED_RANKS for p in layouts):
        found.append(("engine.eplb", f"EPLB's measured imbalance is for wide EP over {MEASURED_RANKS} ranks or more, "
                      "which no layout here runs (routing is uniform below): it changes nothing"))
    for key in ("max_graph_batch", "graph_padding"):
        if not e.cuda_graphs and getattr(e, key) is not None:
            found.append((f"engine.{key}", "engine.cuda_graphs is false: no graph is captured, so its "
                          f"{'batch limit' if key == 'max_graph_batch' else 'padding'} changes nothing"))
    if e.engram_tables != "gpu" and s.specs.model.engram is None:
        found.append(("engine.engram_tables", f"{s.specs.model.name!r} has no Engram tables (DeepSeek-V4.1's, "
                      "Qwen4-Exp's PLE): where they live changes nothing"))
    if e.bounded_replay is not None and s.specs.model.replay_tail is None:
        found.append(("engine.bounded_replay", f"{s.specs.model.name!r} has no decoder layers to replay (DeepSeek-V4.1's "
                      "layers after its last kv source): it changes nothing"))
    cache = e.prefix_cache
    for key, what in (("block_tokens", "its block size"), ("max_tokens", "its size limit")):
        if cache is not None and not cache.enabled and key in cache.model_fields_set:
            found.append((f"engine.prefix_cache.{key}", f"the prefix cache is off: {what} changes nothing"))
    return found


def graph_lists_capture_none(s: Scenario) -> list[tuple[str, str]]:
    """An engine file's padded graph list (cuda_graph.pads_to, speculative_pads_to) holding no size
    up to the largest graph on this GPU (its first size past it, adds_max false): the engine
    captures no graph for those passes, which run eagerly (costs/host.py; SGLang's
    get_batch_sizes_to_capture asserts it keeps one)."""
    from mtpsim.costs.host import host_model
    if not s.engine.cuda_graphs:
        return []
    host, found = host_model(s), []
    key = "engine.max_graph_batch" if s.engine.max_graph_batch is not None else "engine.kind"
    lists = [("pads_to", host.graph_sizes, "plain decode passes")]
    if s.speculative.design != "none":
        lists.append(("speculative_pads_to", host.speculative_graph_sizes, "a speculative iteration's passes"))
    for field, sizes, passes in lists:
        if host.graph_padded and sizes is not None and not sizes:
            found.append((key, f"{s.specs.engine.name}'s cuda_graph.{field} holds no size up to its largest graph, "
                          f"{host.max_graph_batch}: no graph is captured for {passes}, which run eagerly"))
    return found


def blocks_out_of_reach(s: Scenario) -> list[tuple[str, str]]:
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


def cap_per_rank(s: Scenario) -> list[tuple[str, str]]:
    """SGLang under DP attention gives each rank max_running_requests // ranks (checks.py refuses a
    cap below the ranks): a cap not a multiple of them admits fewer at once than it says."""
    cap, d = s.engine.max_running_requests, s.disaggregation
    ranks = (s.parallel if d is None else d.decode).attention_dp
    if s.specs.engine.name != "sglang" or cap is None or ranks <= 1 or cap % ranks == 0:
        return []
    return [("engine.max_running_requests", f"SGLang gives each of its {ranks} attention-DP ranks {cap} // {ranks} = "
             f"{cap // ranks} requests, {cap // ranks * ranks} at once in all, and mtpsim runs {cap}: give a multiple "
             f"of {ranks}")]
