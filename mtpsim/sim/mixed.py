"""Mixed batches: prompt chunks riding inside decode iterations, as vLLM V1 and TensorRT-LLM
schedule by default (mtpsim/data/engines/<kind>.yaml `mixed_batches`, with their sources).

Every iteration has a token budget, the engine's prefill chunk (vLLM max_num_batched_tokens,
TensorRT-LLM max_num_tokens, SGLang chunked_prefill_size). The decode batch takes its tokens
first, the verify window per request (1 + steps for a chain, a tree's draft_tokens; 1 for plain
decoding); admitted prompts not yet prefilled fill what is left, in admission order, cut to fit
(`split_prompts`) or whole when they fit (TensorRT-LLM without chunked context), unless the
engine holds them back to prefill more at once (TensorRT-LLM's batch waiting: `BatchWaitRule`). The iteration
runs the design's decode passes, the target's carrying the chunk's target prefill and a draft
pass the chunk's prefill of the same draft part and input (costs/mixed.py prices each pair as one
pass); a prefill pass no decode pass carries runs after them. With no decode batch the chunk runs
alone as a prefill iteration; with no prompt waiting the iteration is a plain decode iteration.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from mtpsim.costs.mixed import price_mixed
from mtpsim.costs.ops import BatchLens
from mtpsim.designs import PassShape, prefill_passes


@dataclass(frozen=True)
class BatchWaitRule:
    """TensorRT-LLM's batch waiting (a scenario's engine.batch_wait; PyExecutor._waiting_requests):
    while requests decode, a step's prompts are held back unless `timeout_iters` steps already held
    them or the step's tokens (the prompts' and the decodes') reach `min_tokens`."""

    timeout_iters: int
    min_tokens: float

    def releases(self, held: int, tokens: int) -> bool:
        return held >= self.timeout_iters or tokens >= self.min_tokens


@dataclass(frozen=True)
class MixedRule:
    """An engine's mixing: tokens per iteration, whether a prompt may be cut to fit, and whether
    prompts wait to be batched (None: they ride as soon as they fit)."""

    budget_tokens: int
    split_prompts: bool = True
    batch_wait: BatchWaitRule | None = None


class PrefillQueue:
    """Admitted prompts not yet prefilled, in admission order, each with its tokens already in KV
    (a cached prefix counts: it is read, not computed)."""

    def __init__(self):
        self.items: deque[list] = deque()  # [request, tokens already in KV]

    def __len__(self) -> int:
        return len(self.items)

    def add(self, requests) -> None:
        self.items.extend([r, r.cached_len] for r in requests)

    def plan(self, budget: int, split: bool, alone: bool) -> list[tuple]:
        """This iteration's chunk, the queue left as it is: (request, tokens, already in KV), at
        most `budget` tokens. A prompt that does not fit whole is cut when `split`, when it is
        already under way, or when it would run `alone` and first (longer than the whole budget);
        else it and those behind it wait, as TensorRT-LLM's micro-batch scheduler stops at the
        first context that does not fit."""
        chunk = []
        for r, done in self.items:
            if budget <= 0:
                break
            n = min(r.input_len - done, budget)
            if n < r.input_len - done and not (split or done > r.cached_len or (alone and not chunk)):
                break
            chunk.append((r, n, done))
            budget -= n
        return chunk

    def take(self, budget: int, split: bool, alone: bool) -> list[tuple]:
        """`plan`, then `commit`: this iteration's chunk, taken off the queue."""
        chunk = self.plan(budget, split, alone)
        self.commit(chunk)
        return chunk

    def commit(self, chunk: list[tuple]) -> None:
        """Mark `chunk` (a `plan` of this queue) prefilled: finished prompts leave the queue, the
        last one cut stays with its progress."""
        for r, n, done in chunk:
            if done + n == r.input_len:
                self.items.popleft()
            else:
                self.items[0][1] = done + n


def serve_mixed(engine, rep):
    """One replica, forever, mixing: admit, then one iteration of the decode batch and the chunk
    the budget leaves room for (`engine` is the sim/engine.py Engine, `rep` its Replica)."""
    queue, rule, held = PrefillQueue(), engine.mixed, 0
    while True:
        admitted = rep.scheduler.admit()
        for r in admitted:
            r.admitted_s = engine.env.now
        queue.add(admitted)
        batch = rep.batch
        decode_tokens = len(batch) * engine.iteration_at(len(batch)).design.draft_tokens if len(batch) else 0
        chunk = queue.plan(rule.budget_tokens - decode_tokens, rule.split_prompts, not len(batch)) if queue else []
        engine.records.budget_full_iterations += bool(len(batch) and queue and not chunk)  # prompts wait for room
        if chunk and len(batch) and rule.batch_wait is not None:
            if rule.batch_wait.releases(held, decode_tokens + sum(n for _, n, _ in chunk)):
                held = 0
            else:
                held, chunk = held + 1, []
                engine.records.batch_wait_iterations += 1
        queue.commit(chunk)
        if len(batch):
            yield from engine.decode(rep, chunk)
        elif chunk:
            yield from engine.prefill_chunk(rep, chunk)
        else:
            rep.wakeup = engine.env.event()
            yield rep.wakeup


def mixed_passes(engine, passes: list[PassShape], batch, kept, chunk: list[tuple]) -> list[tuple]:
    """(shape, cost) of a decode iteration's `passes` over `batch` (`kept`: each request's kept
    drafts, or None) carrying `chunk`'s prefill passes."""
    chunk_lens = BatchLens.of(np.array([n for _, n, _ in chunk]), np.array([done for _, _, done in chunk]))
    waiting = list(prefill_passes(engine.design))
    priced = []
    for shape in passes:
        ride = next((p for p in waiting if carries(shape, p)), None)
        if ride is None:
            priced.append((shape, engine.price(shape, batch, kept)))
        else:
            waiting.remove(ride)
            priced.append((shape, price_mixed(engine.pricer, shape, engine.decode_lens(shape, batch, kept),
                                              ride, chunk_lens)))
    return priced + [(shape, engine.pricer.price_lens(shape, chunk_lens)) for shape in waiting]


def carries(shape: PassShape, prefill: PassShape) -> bool:
    """Whether a decode pass carries a prefill pass: the same part and layer fed the same hidden
    states (the target's decode or verify its prefill; nextn's extend, fed the target's hidden
    states, the draft's prefill; multi_layer's extend of layer k that layer's prefill)."""
    return prefill.part == shape.part and prefill.layer == shape.layer and prefill.from_target == shape.from_target
