"""Requests into the simulation: created, routed to a replica, and the idle replica woken, as
the workload's arrival process says (closed-loop users, known times, or a trace's stream).
"""
from __future__ import annotations

import numpy as np
import simpy

from mtpsim.sim.engine import Replica
from mtpsim.sim.scheduler import Router
from mtpsim.sim.workload import Request, open_arrivals, sample_lengths


class Arrivals:
    """Creates requests and routes them; wakes an idle replica."""

    def __init__(self, env: simpy.Environment, router: Router, replicas: list[Replica], new_request):
        self.env, self.router, self.replicas, self.new_request = env, router, replicas, new_request

    def submit(self, request: Request) -> None:
        rep = self.replicas[self.router.route(request)]
        if rep.wakeup is not None and not rep.wakeup.triggered:
            rep.wakeup.succeed()

    def open_loop(self, times: np.ndarray, inputs: np.ndarray, outputs: np.ndarray, hash_ids: list | None = None):
        """Requests at known times (batch, poisson, trace), one at a time from the arrays
        (`hash_ids`: each prompt's prefix-block ids, from a Mooncake trace)."""
        for i, (arrival_s, input_len, output_len) in enumerate(zip(times.tolist(), inputs, outputs)):
            if arrival_s > self.env.now:
                yield self.env.timeout(arrival_s - self.env.now)
            self.submit(self.new_request(input_len, output_len, hash_ids[i] if hash_ids is not None else None))

    def open_stream(self, chunks):
        """Requests at known times streamed in chunks of arrays (a trace file)."""
        for chunk in chunks:
            yield from self.open_loop(chunk.arrival_s, chunk.input_len, chunk.output_len, chunk.hash_ids)

    def start(self, workload, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw a batch, poisson or closed workload's lengths (and arrival times) from `seed` and
        start its arrival processes: one open loop, or one process per closed-loop user. Returns
        the drawn (input lengths, output lengths); the simulation has not run yet, so a caller may
        still refuse them. A trace streams instead (`open_stream`)."""
        rng, w = np.random.default_rng([seed, 0]), workload
        if w.arrival == "closed":
            inputs, outputs = sample_lengths(rng, w.input_len, w.num_requests), sample_lengths(rng, w.output_len, w.num_requests)
            lengths = list(zip(inputs.tolist(), outputs.tolist()))  # closed loops hold at most MAX_USERS x this
            for user in range(min(w.concurrency, w.num_requests)):
                self.env.process(self.closed_user(lengths[user::w.concurrency]))
        else:
            times, inputs, outputs = open_arrivals(w, rng)
            self.env.process(self.open_loop(times, inputs, outputs))
        return inputs, outputs

    def begin(self, workload, seed: int) -> tuple[int, int, int]:
        """Start any workload's arrivals (`start`'s draws, or a trace's stream): (requests, the
        longest prompt, the longest prompt + output), for the caller to check against its KV
        pool before the simulation runs."""
        if workload.arrival == "trace":
            from mtpsim.tracefiles import scan, stream  # on first use: not on `mtpsim run`'s path without a trace
            stats = scan(workload.trace)
            self.env.process(self.open_stream(stream(workload.trace)))
            # the longest prompt, not the prompt of the longest request (a short prompt with a long
            # answer): a disaggregated run checks its prefill pool with it (sim/disagg.py start_arrivals)
            return stats.num_requests, stats.max_input_len, stats.longest
        inputs, outputs = self.start(workload, seed)
        return len(inputs), int(inputs.max()), int((inputs + outputs).max())

    def closed_user(self, lengths):
        """One user of a closed loop: send, wait for the answer, send the next (no think time)."""
        for input_len, output_len in lengths:
            request = self.new_request(input_len, output_len)
            request.done = self.env.event()
            self.submit(request)
            yield request.done
