"""Warnings about a mixing engine's token budget a step (vLLM, TensorRT-LLM: sim/mixed.py; advice.py
runs them with the rest): a running batch whose decode tokens outgrow it, prompts an engine that
prefills them whole cannot fit beside the batch or at all, and TensorRT-LLM's batch waiting where
it holds nothing back (`batch_wait_idle`, which the simulator's mixed_rule reads too: one home for
when it acts). Each check takes the scenario and returns (dotted key, reason) pairs."""
from __future__ import annotations

from mtpsim import designs
from mtpsim.schema import Scenario
from mtpsim.workload_schema import max_length


def _budget(s: Scenario) -> int:
    """The engine's token budget a step: its prefill chunk (memory.prefill_chunk_tokens)."""
    from mtpsim.memory import prefill_chunk_tokens
    return prefill_chunk_tokens(s)


def _mixing_design(s: Scenario) -> designs.DesignShape | None:
    """The scenario's design where its engine mixes prompt chunks into its decode iterations (an
    aggregated deployment), else None."""
    d = designs.DesignShape.of(s.speculative)
    return d if s.disaggregation is None and s.specs.engine.mixes(d.design, s.engine.mixed_batches) else None


def _mixing_batch(s: Scenario):
    """(design, the running requests a replica decodes beside prompt chunks, whether the load
    sets them: closed or batch) where the scenario's engine mixes prompt chunks into decode
    iterations, else None. A closed or batch load runs its users per replica, up to the cap; an
    open one (Poisson, a trace) as many as the cap admits. The cap is the one on this GPU: without
    it a by-GPU cap is its first class below any size (vLLM's 256, not an 80 GB H100's 1024)."""
    d, w = _mixing_design(s), s.workload
    if d is None:
        return None
    cap = s.specs.engine.max_running(d.design, s.engine.max_running_requests, s.specs.hardware)
    closed = w.arrival in ("closed", "batch")
    users = w.concurrency if w.arrival == "closed" else w.num_requests
    return d, (min(-(-users // s.parallel.dp), cap) if closed else cap), closed


def batch_wait_idle(s: Scenario) -> str | None:
    """Why the scenario's engine.batch_wait holds no prompt back, or None where it does (sim's
    mixed_rule builds the rule then): an engine without batch waiting, no step that mixes prompts
    into decoding, attention DP (TensorRT-LLM's PyExecutor._schedule waits only without it), a
    timeout of 0 (its held-step count has always reached 0, whatever the ratio), or a ratio whose
    share of the budget every mixing step reaches (0: its tokens are never below it)."""
    wait, engine = s.engine.batch_wait, s.specs.engine
    if wait is None:
        return None
    if not engine.mixed_batches.batch_wait:
        return f"{engine.name} holds no prompts back to batch them (TensorRT-LLM's batch_wait_timeout_iters does)"
    if _mixing_design(s) is None:
        return "no step here mixes prompts into decoding (a disaggregated deployment, or engine.mixed_batches off)"
    if s.parallel.attention_dp > 1:
        return (f"{engine.name} waits for batches only without attention DP (PyExecutor._schedule; "
                "attention_dp_config balances ranks instead)")
    if wait.timeout_iters == 0:
        return (f"timeout_iters is 0: {engine.name} stops waiting at once whatever max_tokens_ratio says (its count "
                "of held steps has always reached 0)")
    budget = _budget(s)
    # a step mixing a prompt into decoding holds a decoding request's verify window (1 + steps for
    # a chain; 1 where a steps policy may run plain decoding) and a prompt token at least: a
    # floor of 2 left nextn's 5 (S=3) unsaid
    least = (1 if s.speculative.policy is not None else _mixing_design(s).draft_tokens) + 1
    if wait.max_tokens_ratio * budget <= least:
        return (f"max_tokens_ratio {wait.max_tokens_ratio:g} x the {budget}-token budget is "
                f"{wait.max_tokens_ratio * budget:g} tokens, which every step that mixes a prompt into decoding "
                f"reaches ({least} at least): {engine.name} stops waiting at once whatever timeout_iters says")
    return None


def batch_wait_moot(s: Scenario) -> list[tuple[str, str]]:
    """engine.batch_wait where it holds nothing back (`batch_wait_idle`)."""
    idle = batch_wait_idle(s)
    return [] if idle is None else [("engine.batch_wait", f"{idle}: it changes nothing")]


def budget_below_decode(s: Scenario) -> list[tuple[str, str]]:
    """A mixing engine (vLLM, TensorRT-LLM: sim/mixed.py) schedules at most its token budget a
    step, running requests first at their verify width each; mtpsim decodes the whole running
    batch in one iteration even past it, where the engine would decode part of it per step. A
    closed or batch load's running batch is its users per replica, up to the cap; an open
    load's (Poisson, a trace) is found by the simulation, up to the cap."""
    mixing = _mixing_batch(s)
    if mixing is None:
        return []
    d, running, closed = mixing
    past = _past_budget(s, d, running)
    if past is None:
        return []
    bound = "workload.concurrency" if closed else "engine.max_running_requests"
    key = "engine.chunked_prefill_tokens" if s.engine.chunked_prefill_tokens is not None else bound
    batch = f"{running} running requests" if closed else f"up to {running} running requests (the running-request cap)"
    return [(key, f"{batch} x {past}, mtpsim decodes all of it")]


def batch_past_budget(s: Scenario, batch: int) -> str | None:
    """What budget_below_decode says of a batch `cost --batch` sets itself (a replica's): `batch`
    requests past a mixing engine's token budget a step, or None where they fit or it does not mix."""
    d = _mixing_design(s)
    past = None if d is None else _past_budget(s, d, batch)
    return None if past is None else f"{batch} requests x {past}; priced as asked"


def _past_budget(s: Scenario, d: designs.DesignShape, running: int) -> str | None:
    """`running` requests decoding at the design's verify width past the engine's token budget
    a step: how many tokens, and what the engine does (None where they fit)."""
    budget = _budget(s)
    if running * d.draft_tokens <= budget:
        return None
    return (f"{d.draft_tokens} token{'s' * (d.draft_tokens > 1)} each exceed {s.specs.engine.name}'s {budget}-token "
            "budget a step: the engine would decode part of the batch per step")


def whole_prompts_past_budget(s: Scenario) -> list[tuple[str, str]]:
    """An engine that prefills a prompt whole (TensorRT-LLM without chunked context: mixed_batches
    split_prompts false) admits a prompt only where it fits its token budget beside the running
    batch's decode tokens, and its scheduler stops at the first prompt that does not fit
    (sim/mixed.py PrefillQueue.take): a prompt longer than the budget left waits until the running
    batch shrinks, and every prompt behind it waits with it. Warned where the longest prompt and
    the running batch's decode tokens outgrow the budget; a prompt longer than the whole budget,
    which the engine refuses and mtpsim cuts at it (engines/trtllm.yaml), is
    prompts_past_whole_budget's. Trace loads bring their own lengths and are not judged."""
    mixing = _mixing_batch(s)
    engine = s.specs.engine
    if mixing is None or s.workload.arrival == "trace" or engine.mixed_batches.split_prompts:
        return []
    d, running, _ = mixing
    budget = _budget(s)
    longest = max_length(s.workload.input_len)
    others = max(running - 1, 0) * d.draft_tokens  # the prompt's own request is not yet decoding
    if longest + others <= budget or longest > budget:  # past the whole budget: prompts_past_whole_budget
        return []
    key = "engine.chunked_prefill_tokens" if s.engine.chunked_prefill_tokens is not None else "workload.input_len"
    return [(key, f"prompts of up to {longest} tokens beside {running - 1} other running requests x "
             f"{d.draft_tokens} decode token{'s' * (d.draft_tokens > 1)} each outgrow {engine.name}'s {budget}-token "
             f"budget a step: it prefills a prompt whole and its scheduler stops at the first that does not fit, so "
             f"such a prompt waits for the running batch to shrink and the prompts behind it wait too (a budget of "
             f"{longest + others} tokens, engine.chunked_prefill_tokens, admits every prompt beside a full batch)")]


def prompts_past_whole_budget(s: Scenario) -> list[tuple[str, str]]:
    """An engine that prefills a prompt whole (TensorRT-LLM without chunked context: mixed_batches
    split_prompts false) refuses a prompt longer than its whole token budget, which mtpsim cuts
    at the budget (engines/trtllm.yaml): said, where whole_prompts_past_budget judges only the
    prompts within it. A trace's longest prompt is its own (tracefiles.scan)."""
    engine = s.specs.engine
    if engine.mixed_batches.split_prompts:
        return []
    if s.workload.arrival == "trace":
        from mtpsim.tracefiles import scan  # on first use: not on `mtpsim run`'s path without a trace
        longest, key = scan(s.workload.trace).max_input_len, "workload.trace"
    else:
        longest, key = max_length(s.workload.input_len), "workload.input_len"
    budget = _budget(s)
    if longest <= budget:
        return []
    if s.engine.chunked_prefill_tokens is not None:
        key = "engine.chunked_prefill_tokens"
    return [(key, f"prompts of up to {longest} tokens {past_whole_budget(engine.name, longest, budget)}")]


def past_whole_budget(engine: str, longest: int, budget: int) -> str:
    """What prompts_past_whole_budget (and `cost --prompt`) say of a prompt of `longest` tokens
    past an engine's whole `budget` where it prefills prompts whole."""
    return (f"are past {engine}'s {budget}-token budget a step, and it prefills a prompt whole: the engine refuses "
            f"such a prompt, which mtpsim prefills in chunks of {budget} (give engine.chunked_prefill_tokens of at "
            f"least {longest})")


def budget_at_points(points: list, origin: tuple[str, str]) -> None:
    """budget_below_decode judged at the points recommend and search run (their own batches or
    users, and steps), not at the scenario's workload, which they replace: one warning for the
    first point past its engine's budget, naming what set its load (`origin`: file or flag, key)."""
    from mtpsim.errors import warn
    for p in points:
        found = budget_below_decode(p)
        if found:
            d = designs.DesignShape.of(p.speculative)
            warn(*origin, f"{d.design}{f' steps {d.steps}' * (d.steps > 0)}: {found[0][1]}")
            return
