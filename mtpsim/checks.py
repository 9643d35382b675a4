"""The checks a validated scenario must pass against the specs it resolved to, each a
ScenarioError naming the key to change: the design against the model (designs.py's records),
the layout's sharding against heads, widths and experts, and nodes (layout_checks.py), the
context window, an adaptive-steps policy, a swinging load; the acceptance against the speculation
it serves is acceptance_checks.py's.
"""
from __future__ import annotations

from mtpsim import catalog, catalog_lookup, designs
from mtpsim.acceptance_checks import check_acceptance
from mtpsim.acceptance_histogram import read_histogram
from mtpsim.errors import ScenarioError, set_by_flag, warn
from mtpsim.files import require_file
from mtpsim.layout_checks import check_parallelism, check_pools
from mtpsim.schema import (
    MAX_SCHEDULE_DRAWS,
    MAX_SIM_S,
    Scenario,
    Workload,
    check_replicates,
    max_length,
)
from mtpsim.sections import is_catalog_name


def check_against_specs(s: Scenario, where: str) -> None:
    spec, record = s.specs.model, designs.record(s.speculative.design)
    if spec.role != "target":
        what = {"assistant": "a frozen-KV assistant", "draft": "a draft model", "block_draft": "a block drafter"}[spec.role]
        raise ScenarioError(where, "model", f"{spec.name!r} is {what} (role: {spec.role}), not a model to serve: "
                            "name the target at model, and this entry at speculative.draft")
    draft = s.specs.draft or s.specs.assistant
    if _changed_target(spec, draft):
        raise ScenarioError(where, "model", f"{draft.block.kind} drafter {draft.name!r} was built for {spec.name!r} as "
                            "the catalog gives it (block.built_for), and this model changes its layers, widths, "
                            "vocabulary or experts")
    built = as_built_for(spec, draft)
    for key, reason in record.problems(s.speculative, built, draft)[:1]:
        raise ScenarioError(where, key, reason)
    if record.draft_part is not None:
        check_acceptance(s, where, built)
    elif s.acceptance.kept_length is not None:
        raise ScenarioError(where, "acceptance.kept_length", f"design {s.speculative.design} drafts nothing to keep")
    _check_peak_flops(s, where)
    _check_policy(s, where)
    check_rate_schedule(s.workload, where)
    check_parallelism(s, where)
    if s.disaggregation is not None:
        check_pools(s, where)
    _check_context(s, where)
    if s.workload.arrival == "closed" and s.workload.concurrency > s.workload.num_requests:
        raise ScenarioError(where, "workload.concurrency", f"{s.workload.concurrency} closed-loop users need "
                            f"num_requests >= concurrency (got {s.workload.num_requests})")
    if s.acceptance.histogram:
        require_file(s.acceptance.histogram, where, "acceptance.histogram")
        read_histogram(s.acceptance.histogram)
    imbalance, ep = s.cost.ep_imbalance, (s.disaggregation.decode.ep if s.disaggregation else s.parallel.ep)
    if imbalance is not None and imbalance > ep:  # the busiest rank holds at most all the tokens
        raise ScenarioError(where, "cost.ep_imbalance", f"{imbalance:g} is more than ep {ep}: the busiest of {ep} EP "
                            f"ranks holds at most {ep} times the mean (all the tokens)")
    check_replicates(s.seed, s.seeds, where, "seeds")
    _check_token_budget(s, where)
    _check_running_per_rank(s, where)
    _check_host_link(s, where)


def _check_host_link(s: Scenario, where: str) -> None:
    """Engram tables in host memory are read over the GPU's host link: the hardware must give it."""
    hw = s.specs.hardware
    if s.engine.engram_tables != "gpu" and s.specs.model.engram is not None and hw.host_link_bandwidth_bytes_per_s is None:
        raise ScenarioError(where, "engine.engram_tables", f"{s.engine.engram_tables} tables are read over the host link, "
                            f"and hardware {hw.name!r} gives no host_link_bandwidth_bytes_per_s (give it: "
                            f"hardware: {{from: {hw.name}, host_link_bandwidth_bytes_per_s: ...}})")


def _check_running_per_rank(s: Scenario, where: str) -> None:
    """SGLang under DP attention gives each attention-DP rank max_running_requests // dp_size
    requests (model_runner.py init_max_running_requests): a cap below the ranks admits none, and
    the engine runs nothing, where mtpsim ran the cap at once."""
    cap, e = s.engine.max_running_requests, s.specs.engine
    d = s.disaggregation
    layout = s.parallel if d is None else d.decode  # the running cap holds where requests decode
    at = "parallel.attention_dp" if d is None else "disaggregation.decode.attention_dp"
    if e.name != "sglang":
        return
    if cap is not None and cap < layout.attention_dp:
        raise ScenarioError(where, "engine.max_running_requests", f"{cap} is below {at} {layout.attention_dp}: SGLang "
                            f"gives each attention-DP rank {cap} // {layout.attention_dp} = 0 requests, "
                            f"so none would run (give at least {layout.attention_dp})")
    own = e.max_running(s.speculative.design, None) if cap is None else None  # the engine's fixed cap, if any
    if own is not None and own < layout.attention_dp:
        origin = e.cap_origin(s.speculative.design, False, s.specs.model.architecture, catalog.engine_file_label(e.name))
        raise ScenarioError(where, at, f"{layout.attention_dp} ranks, and {origin} is {own}: SGLang gives each rank {own} // "
                            f"{layout.attention_dp} = 0 requests, so none would run (set engine.max_running_requests "
                            f"to at least {layout.attention_dp})")


def _check_token_budget(s: Scenario, where: str) -> None:
    """vLLM gives every running sequence at least one token of a step's budget, and refuses to
    start with max_num_batched_tokens below max_num_seqs (vllm/config/scheduler.py,
    SchedulerConfig._verify_args: "must be greater than or equal to max_num_seqs")."""
    e = s.engine
    if s.specs.engine.name == "vllm" and e.chunked_prefill_tokens is not None and e.max_running_requests is not None \
            and e.chunked_prefill_tokens < e.max_running_requests:
        raise ScenarioError(where, "engine.chunked_prefill_tokens", f"{e.chunked_prefill_tokens} tokens a step is fewer "
                            f"than engine.max_running_requests {e.max_running_requests}: vLLM refuses "
                            "max_num_batched_tokens below max_num_seqs (one token per running sequence)")


def _check_peak_flops(s: Scenario, where: str) -> None:
    """Every dtype the served models compute in has a peak on the hardware (hardware_spec.py
    flops_per_s): found here, not mid-run when the first op of that dtype is priced."""
    hw = s.specs.hardware
    for spec in filter(None, (s.specs.model, s.specs.draft, s.specs.assistant)):
        used = spec.dtypes.model_dump()
        widened = {}  # dtype -> the roles priced at the fp32 peak for want of their own
        for role, dtype in used.items():
            if role == "kv_cache":
                continue
            at = hw.peak_dtype_for(dtype)
            if at is None:
                raise ScenarioError(where, "hardware", f"hardware {hw.name!r} has no peak_flops entry usable for "
                                    f"{dtype} ({spec.name}'s dtypes.{role}; it has {', '.join(hw.peak_flops) or 'none'})")
            held = not (role == "experts" and not spec.has_experts) and not (role == "mtp" and spec.mtp is None)
            if at == "fp32" and dtype != "fp32" and held:  # 8 to 16 times slower on tensor-core GPUs: said, not assumed
                widened.setdefault(dtype, []).append(role)
        for dtype, roles in widened.items():
            warn(where, "hardware", f"hardware {hw.name!r} gives no peak_flops as wide as {dtype} below fp32: "
                 f"{spec.name}'s {', '.join(roles)} ({dtype}) {'is' if len(roles) == 1 else 'are'} priced at its fp32 "
                 f"peak (give peak_flops.{dtype} where the GPU has one)")


def as_built_for(model, draft):
    """The model as a block drafter names its target (block.built_for, a catalog entry): a copy of
    that entry under another name (`{from: qwen3-8b, name: mine}`, or a checkpoint's config.json
    read from a folder of any name) is that target when it has its width, depth, vocabulary and
    experts. Anything else is left as it is, for design_checks.block_fits to refuse."""
    built_for = draft.block.built_for if draft is not None and draft.block is not None else None
    if built_for is None or built_for == model.name or not is_catalog_name(built_for) \
            or catalog_lookup.find("models", built_for) is None:  # one file looked up, not the catalog listed
        return model
    if _architecture(catalog.load_model(built_for)) != _architecture(model):
        return model
    return model.model_copy(update={"name": built_for})


def _changed_target(model, draft) -> bool:
    """Whether `model` keeps the name of the catalog target a block drafter was built for but
    not its architecture (`{from: qwen3-8b, layers: ...}`): the name alone does not make it that
    target."""
    built_for = draft.block.built_for if draft is not None and draft.block is not None else None
    if built_for is None or built_for != model.name or catalog_lookup.find("models", built_for) is None:
        return False
    return _architecture(catalog.load_model(built_for)) != _architecture(model)


def _architecture(m) -> tuple:
    """What a drafter trained against a target depends on: width, vocabulary, and every layer's
    attention and FFN shapes in order (kind names aside)."""
    kinds = {name: tuple(sorted(spec.model_dump(exclude_none=True).items(), key=str))
             for name, spec in (*m.attention_kinds.items(), *m.ffn_kinds.items())}
    layers = tuple((kinds[ref.attention], kinds[ref.ffn]) for ref in m.expanded_layers)
    return m.hidden_size, m.vocab_size, str(layers)


def _check_context(s: Scenario, where: str) -> None:
    """Every request fits the context window of each model that reads it (the target, and a
    draft or assistant that runs over the same sequence): prompt + output <= max_context."""
    for spec in filter(None, (s.specs.model, s.specs.draft, s.specs.assistant)):
        _check_context_of(s, spec, where)


def _check_context_of(s: Scenario, spec, where: str) -> None:
    limit, w = spec.max_context, s.workload
    if limit is None:
        return
    what = f"model {spec.name!r}" if spec is s.specs.model else f"the draft {spec.name!r} (speculative.draft)"
    if w.arrival == "trace":
        require_file(w.trace.path, where, "workload.trace.path")
        from mtpsim.tracefiles import scan  # on first use: not on `mtpsim run`'s path without a trace
        t = scan(w.trace)
        if t.longest > limit:
            from mtpsim.tracefiles.formats import FORMATS
            columns = FORMATS[t.format]  # the file's own names: its prompt's where it alone overflows, else its output's
            column = columns.input if t.longest_input > limit else columns.output
            raise ScenarioError(w.trace.path, column, f"row {t.longest_row}: {t.longest_input} input + "
                                f"{t.longest - t.longest_input} output tokens exceed the max_context {limit} of "
                                f"{what} (workload.trace.max_input_len / max_output_len cap them)")
        return
    if max_length(w.input_len) + max_length(w.output_len) > limit:
        # the length that overflows: the prompt where it alone does, else the one --set gave, else the output
        key = "workload.input_len" if max_length(w.input_len) > limit or (
            set_by_flag(where, "workload.input_len") and not set_by_flag(where, "workload.output_len")) \
            else "workload.output_len"
        override = "model.max_context" if spec is s.specs.model else "speculative.draft's max_context"
        raise ScenarioError(where, key, f"up to {max_length(w.input_len)} input + "
                            f"{max_length(w.output_len)} output tokens exceed the max_context {limit} of {what} "
                            f"(a checkpoint served past it, with RoPE scaling, says so in {override})")


def _check_policy(s: Scenario, where: str) -> None:
    """An adaptive policy varies a chain's steps between 0 and `speculative.steps`, the most the
    run reserves KV, keeps draft layers and draws acceptance for. Every speculative design can
    run fewer steps than its most: nextn and frozen_kv chain fewer passes, multi_layer uses its
    first S layers, parallel_heads verifies S of its heads' proposals."""
    spec, key = s.speculative, "speculative.policy.steps_by_batch"
    if spec.policy is None:
        return
    if designs.record(spec.design).draft_part is None:
        raise ScenarioError(where, "speculative.policy", f"design {spec.design} has no steps to vary: "
                            "choose a speculative design (0 steps in the policy is plain decoding)")
    if spec.topk > 1:
        raise ScenarioError(where, "speculative.policy", "varies a chain's steps: topk must be 1")
    table = spec.policy.steps_by_batch
    if 1 not in table:
        raise ScenarioError(where, key, "needs an entry for batch 1 (each entry holds from its key up to the next)")
    for batch, steps in table.items():
        if steps > spec.steps:
            raise ScenarioError(where, f"{key}.{batch}", f"{steps} steps exceed speculative.steps {spec.steps}, "
                                "the most the run reserves KV and draws acceptance for")


def check_rate_schedule(w: Workload, where: str) -> None:
    """A rate schedule is a Poisson load's rate over time: phases in time order, one rate at a time.
    A Poisson load's arrivals span at most MAX_SIM_S simulated seconds."""
    if w.arrival == "poisson" and w.rate_per_s is not None and w.num_requests / w.rate_per_s > MAX_SIM_S:
        raise ScenarioError(where, "workload.rate_per_s", f"{w.rate_per_s:g} req/s: {w.num_requests} requests would "
                            f"arrive over ~{w.num_requests / w.rate_per_s:.3g} simulated seconds, past the limit of "
                            f"{MAX_SIM_S:g} (raise the rate or lower num_requests)")
    if w.rate_schedule is None:
        return
    if w.arrival != "poisson":
        raise ScenarioError(where, "workload.rate_schedule", f"sets a Poisson rate over time: use it with "
                            f"arrival poisson (got {w.arrival})")
    if w.rate_per_s is not None:
        raise ScenarioError(where, "workload.rate_per_s", "give rate_per_s or rate_schedule, not both")
    for i, (before, phase) in enumerate(zip(w.rate_schedule, w.rate_schedule[1:]), start=1):
        if phase.until_s <= before.until_s:
            raise ScenarioError(where, f"workload.rate_schedule.{i}.until_s", f"{phase.until_s} does not come after "
                                f"the previous phase's end {before.until_s} (phases run in time order)")
    # arrivals are drawn phase by phase, the schedule repeating until num_requests have come: bound
    # the repeats (a 1e-9 req/s or 1e-300 s phase would repeat forever) and the simulated span
    ends = [p.until_s for p in w.rate_schedule]
    per_cycle = sum(p.rate_per_s * (end - start) for p, start, end in zip(w.rate_schedule, [0.0, *ends], ends))
    cycles = w.num_requests / per_cycle
    if cycles * len(ends) > MAX_SCHEDULE_DRAWS or cycles * ends[-1] > MAX_SIM_S:
        raise ScenarioError(where, "workload.rate_schedule", f"brings ~{per_cycle:.3g} requests per {ends[-1]:g} s "
                            f"cycle, so {w.num_requests} requests need ~{cycles:.3g} cycles: past the limits of "
                            f"{MAX_SCHEDULE_DRAWS:,} phases drawn and {MAX_SIM_S:g} simulated seconds (raise the "
                            "rates, lengthen the phases, or lower num_requests)")
