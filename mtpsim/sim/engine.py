"""simpy processes: one serving loop per dp replica (requests arrive through sim/arrivals.py).

Each replica loop: admit what fits, prefill it (the running batch waits, as SGLang schedules by
default), then one decode iteration for the running batch as the design's passes, priced
and run back to back as one timed event; sample acceptance, commit tokens, retire the finished.
Where the engine mixes batches (vLLM, TensorRT-LLM), prompt chunks ride inside the decode
iterations instead (sim/mixed.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import simpy

from mtpsim import interrupts
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.costs.iteration import PREFILL_WINDOW, iteration_cost
from mtpsim.costs.ops import BatchLens
from mtpsim.costs.passes import Pricer
from mtpsim.costs.ragged import all_plain, pass_lens
from mtpsim.designs import DesignShape, prefill_passes
from mtpsim.results import PASS_COLUMN, PASS_TIME_COLUMNS, Records
from mtpsim.schema import Policy
from mtpsim.sim.batch import RunningBatch
from mtpsim.sim.mixed import MixedRule, mixed_passes, serve_mixed
from mtpsim.sim.scheduler import Scheduler
from mtpsim.sim.timing import DecodeIteration, IterationTiming
from mtpsim.sim.workload import Request


@dataclass
class Replica:
    index: int
    scheduler: Scheduler
    wakeup: simpy.Event | None = None
    iterations: int = 0
    batch: RunningBatch | None = None  # the running requests past prefill, as arrays


@dataclass
class Engine:
    """Shared by all replicas of one run: how to price, what to run, where to record."""

    env: simpy.Environment
    pricer: Pricer
    design: DesignShape
    profile: AcceptanceProfile
    records: Records
    rng: np.random.Generator
    overlap: bool
    chunk_tokens: int
    policy: Policy | None = None  # steps per running batch size; None: design.steps every iteration
    mixed: MixedRule | None = None  # prefill chunks ride inside decode iterations (sim/mixed.py); None: they do not
    on_finished: Callable[[int], object] = lambda n: None  # told how many requests just finished (progress)
    iterations_by_steps: dict = field(init=False)
    timings: dict = field(init=False)

    def __post_init__(self):
        self.iterations_by_steps = {}  # steps -> DecodeIteration, built once each
        self.timings = {}  # (steps, batch size) -> IterationTiming or None, built once each (`timing_at`)
        # identical requests share one acceptance row; with spread each request has its own
        self.per_request_levels = self.profile.spread >= 1e-6
        self.levels = self.profile.request_levels(self.rng, 1, self.design.steps)[0]
        # the shared row as a batch's levels, and the host time per iteration, per batch size
        self.shared_levels = lru_cache(maxsize=4096)(lambda n: np.broadcast_to(self.levels, (n, len(self.levels))))
        self.host_s = lru_cache(maxsize=4096)(self.pricer.host_s)
        # a prefill chunk's passes priced, by its (tokens, already prefilled) per request: chunks
        # of the same lengths recur (whole prompts of a fixed length, cut at the same budget)
        self.prefill_memo = lru_cache(maxsize=1024)(self._price_prefill)

    def iteration_at(self, batch_size: int) -> DecodeIteration:
        """The decode iteration of the steps in force for this running batch (the policy's, else
        the design's)."""
        return self.iteration(self.design.steps if self.policy is None else self.policy.steps_for(batch_size))

    def iteration(self, steps: int) -> DecodeIteration:
        """The decode iteration at `steps`, built once; S = 0 is plain decoding."""
        if steps not in self.iterations_by_steps:
            design = self.design if steps == self.design.steps else self.design.with_steps(steps)
            self.iterations_by_steps[steps] = DecodeIteration.of(design, self.pricer.host, self.overlap)
        return self.iterations_by_steps[steps]

    def timing_at(self, it: DecodeIteration, n: int) -> IterationTiming | None:
        """The common iteration of `it` over n requests timed in one go (sim/timing.py), or None
        where its passes are priced whole; built once."""
        key = (it.design.steps, n)
        if key not in self.timings:
            self.timings[key] = IterationTiming.of(self, it, n)
        return self.timings[key]

    # ------------------------------------------------------------------ the loop
    def serve(self, rep: Replica):
        """One replica, forever: admit, prefill, decode."""
        rep.batch = RunningBatch(self.design.steps, self.per_request_levels)
        if self.mixed is not None:
            yield from serve_mixed(self, rep)
        while True:
            admitted = rep.scheduler.admit()
            if admitted:
                yield from self.prefill(rep, admitted)
            if rep.scheduler.running:
                yield from self.decode(rep)
            elif not admitted:
                rep.wakeup = self.env.event()
                yield rep.wakeup

    def decode(self, rep: Replica, chunk: list | None = None):
        """One decode iteration: price the passes of the steps in force, run them and the host time
        they leave exposed as one event, then draw each request's accepted drafts and commit. Each
        request verifies what it kept (ragged widths); a depth controller's width-0 requests run no
        draft pass, and when it leaves every request at 0 the iteration is plain decoding. `chunk`:
        prompt chunks (as `chunks` lists them) riding in it, priced with its passes (sim/mixed.py)."""
        batch, start = rep.batch, self.env.now  # batch KV: the prompt and every emitted token but the last
        n = len(batch.requests)
        it = self.iteration_at(n)
        kept = self.profile.kept_drafts(self.rng, n, it.design.steps) if it.design.steps else None
        if kept is not None and all_plain(kept, self.profile.kept_before_drafting):
            it, kept = self.iteration(0), None
        timing = self.timing_at(it, n) if not chunk and kept is None else None
        if timing is not None:  # the common iteration, timed in one go (sim/timing.py)
            times, durations, host = timing.run(batch)
            eager = timing.eager
        else:
            times, durations, host, eager = self.price_iteration(rep, start, it, kept, chunk)
        yield from back_to_back(self.env, [*durations, host])
        emitted, accepted = self.commit(batch, it.design.steps, kept)
        firsts = completed_prompts(chunk) if chunk else ()
        self.record_decode(rep, start, it, kept, accepted, emitted, len(firsts), times, host, eager)
        finished = batch.pop_finished()
        if finished:
            self.finish(rep, finished)
        if firsts:
            self.first_tokens(rep, firsts)

    def price_iteration(self, rep: Replica, start: float, it: DecodeIteration, kept, chunk) -> tuple:
        """A decode iteration's passes priced one by one and recorded (the path of iterations that
        `timing_at` does not time): (seconds per pass-time column, each pass's seconds, the host
        seconds left exposed, whether it ran eagerly)."""
        batch, n = rep.batch, len(rep.batch)
        passes = it.passes if kept is None else it.ragged_passes
        if chunk:
            priced = mixed_passes(self, passes, batch, kept, chunk)
        else:
            priced = [(shape, self.price(shape, batch, kept)) for shape in passes]
        priced = [(shape, cost) for shape, cost in priced if cost is not None]  # width-0 requests: no draft pass
        kinds = [shape.kind for shape, _ in priced] if chunk or len(priced) < len(passes) else it.kinds
        times, durations = self.record_passes(rep, start, priced)
        host = iteration_cost(kinds, durations, it.window, self.host_s(it.design.design, n + len(chunk or ()))).exposed_host_s
        return times, durations, host, not self.pricer.uses_graphs(it.passes[0], self.pricer.group_batch(n))

    def record_decode(self, rep: Replica, start: float, it: DecodeIteration, kept, accepted, emitted: int,
                      firsts: int, times: dict, host_s: float, eager: bool) -> None:
        """A finished decode iteration's records: the tokens it verified, its streamed chunks' gaps
        (with each request's `accepted` drafts, for the per-token ITL), whether it ran `eager`ly
        (its batch past the CUDA graphs), and its row (`emitted`: the batch's tokens out, as
        RunningBatch.commit counts them; `firsts`: first tokens of prompts that rode in it)."""
        batch, records = rep.batch, self.records
        n = len(batch.requests)
        verified = int(kept.sum()) + n if kept is not None else n * it.design.draft_tokens
        records.add_verified(verified, n)
        records.add_chunk_gaps(batch.chunk_gaps(self.env.now), accepted, batch.emitted, emitted)
        records.eager_iterations += eager
        records.add_iteration(rep.index, rep.iterations, "decode", start, self.env.now - start, n, emitted + firsts,
                              times, host_s)
        rep.iterations += 1

    def record_passes(self, rep: Replica, start: float, priced: list) -> tuple[dict, list[float]]:
        """Record an iteration's (shape, cost) passes, run back to back from `start`, each with its
        end time; returns the seconds per pass-time column and each pass's duration."""
        times, durations, end = dict.fromkeys(PASS_TIME_COLUMNS, 0.0), [], start
        for shape, cost in priced:
            end += cost.time_s
            self.records.add_pass(rep.index, end, shape, cost)
            durations.append(cost.time_s)
            times[PASS_COLUMN[shape.kind]] += cost.time_s
        return times, durations

    def price(self, shape, batch: RunningBatch, kept):
        """A pass over the running batch, each request's kept drafts setting what it verifies (and,
        under a depth controller, whether it drafts: costs/ragged.py); None: no request runs it."""
        lens = pass_lens(shape.kind, shape.tokens_per_request, kept, batch.kv, batch.lens,
                         self.profile.kept_before_drafting)
        return None if lens is None else self.pricer.price_lens(shape, lens)

    @staticmethod
    def decode_lens(shape, batch: RunningBatch, kept) -> BatchLens:
        """The running batch's lengths as `shape` reads them (ragged: each request's kept drafts + 1)."""
        return BatchLens.of(kept + 1, batch.kv) if shape.ragged else batch.lens(shape.tokens_per_request)

    def commit(self, batch: RunningBatch, steps: int, kept=None) -> tuple[int, np.ndarray | None]:
        """Draw accepted drafts per request out of `steps`, at most its `kept` where a confidence
        rule kept fewer; each emits accepted + 1 (the bonus) tokens. Levels are drawn for the most
        steps; an iteration of fewer uses their prefix. Returns the tokens emitted and the accepted
        drafts per request (None: S = 0)."""
        accepted, n = None, len(batch.requests)  # S = 0: no drafts to accept
        if steps:
            levels = batch.levels if self.per_request_levels else self.shared_levels(n)
            if steps < levels.shape[1]:  # fewer steps than the design's (a policy): their prefix
                levels = levels[:, :steps]
            # no request can accept past its last token when each has more than `steps` left: no cap
            capped = None if batch.all_beyond(steps) else batch.remaining
            accepted = self.profile.sample(self.rng, levels, capped, self.profile.shared)
            if kept is not None:
                np.minimum(accepted, kept, out=accepted)
        self.records.add_accepts(accepted, self.design.steps, n)
        return batch.commit(accepted), accepted

    def prefill(self, rep: Replica, admitted: list[Request]):
        """Prompts in chunks of at most chunk_tokens; a request's first token comes with its last chunk."""
        now = self.env.now
        for r in admitted:
            r.admitted_s = now
        for chunk in self.chunks(admitted):
            yield from self.prefill_chunk(rep, chunk)

    def prefill_chunk(self, rep: Replica, chunk: list):
        """One prefill iteration over `chunk`, (request, tokens, already prefilled) triples."""
        start = self.env.now
        priced = self.prefill_memo(tuple([(n, done) for _, n, done in chunk]))
        times, durations = self.record_passes(rep, start, priced)
        host = iteration_cost([shape.kind for shape, _ in priced], durations, PREFILL_WINDOW if self.overlap else (),
                              self.host_s(self.design.design, len(chunk))).exposed_host_s
        yield from back_to_back(self.env, [*durations, host])
        firsts = completed_prompts(chunk)
        self.records.add_iteration(rep.index, rep.iterations, "prefill", start, self.env.now - start,
                                   len(chunk), len(firsts), times, host)
        rep.iterations += 1
        self.first_tokens(rep, firsts)

    def _price_prefill(self, lengths: tuple) -> tuple:
        """(shape, cost) of each prefill pass over a chunk of requests with these (tokens, already
        prefilled) lengths (`prefill_memo`: shared, so a tuple)."""
        q, kv = np.array([n for n, _ in lengths]), np.array([done for _, done in lengths])
        return tuple((shape, self.pricer.price(shape, q, kv)) for shape in prefill_passes(self.design))

    def first_tokens(self, rep: Replica, firsts: list[Request]) -> None:
        """Requests whose last prompt chunk just ran: their first token is out now; those with more
        to emit join the decode batch, the rest finish."""
        for r in firsts:
            r.first_token_s, r.generated = self.env.now, 1
            rep.scheduler.prefilled(r)
        rep.batch.add([r for r in firsts if r.remaining > 0])
        self.finish(rep, [r for r in firsts if r.remaining == 0])

    def chunks(self, admitted: list[Request]):
        """Lists of (request, tokens in this chunk, tokens already prefilled); a prompt's cached
        prefix counts as prefilled (its KV is read, not computed)."""
        chunk, room = [], self.chunk_tokens
        for r in admitted:
            done = r.cached_len
            while done < r.input_len:
                n = min(room, r.input_len - done)
                chunk.append((r, n, done))
                done, room = done + n, room - n
                if room == 0:
                    yield chunk
                    chunk, room = [], self.chunk_tokens
        if chunk:
            yield chunk

    def finish(self, rep: Replica, finished: list[Request]) -> None:
        for r in finished:
            r.finish_s = self.env.now
            self.records.add_request(r)
            if r.done is not None:
                r.done.succeed()
        rep.scheduler.retire(finished)
        if finished:
            self.on_finished(len(finished))
            interrupts.check()  # a SIGTERM whose KeyboardInterrupt something swallowed stops the run here


def completed_prompts(chunk) -> list[Request]:
    """The requests whose last prompt chunk is in `chunk` ((request, tokens, already prefilled)
    triples): their first token comes out with this iteration."""
    return [r for r, tokens, done in chunk if done + tokens == r.input_len]


def back_to_back(env: simpy.Environment, times: list[float]):
    """Advance the clock by `times` one after another (an iteration's passes, then its host
    time), as a timeout each would, in one event where one lands on the same float. simpy adds
    a delay to now, and now + (end - now) can round off the end a chain of timeouts reaches
    (about one iteration in a thousand; no single delay lands on it then): those take one
    timeout per time. One event per iteration gives the timeline of one per pass: nothing
    another process reads (the scheduler's queues, finished requests, the shared acceptance
    rng) changes before the iteration commits."""
    now = end = env.now
    for t in times:
        end += t
    if now + (end - now) == end:
        yield env.timeout(end - now)
    else:
        for t in times:
            yield env.timeout(t)
