"""Disaggregated deployments of the same N GPUs, beside the aggregated ones (`search.disaggregated`
or `--disagg`): x prefill replicas and y decode replicas (xPyD), each replica a shard the
aggregated search keeps, the ratio matched to the load as aiconfigurator matches it.

aiconfigurator sizes a disaggregated deployment from each pool's own throughput: prefill workers
at their prompt rate, decode workers at their generation rate, then the counts x and y whose
pools' rates meet. Here, per design setting and load of U closed-loop users, from the layout's
priced passes (the Pricer the points use):
- a prefill replica's prompt rate Rp: prompts of the mean input length in one chunk of the
  engine's prefill size (as many as fit; a longer prompt in several chunks), priced as the design's
  prefill passes plus the host time, Rp = prompts / seconds;
- a decode replica's request rate Rd(b) at its share b = ceil(U / y) of the users: the design's
  iteration passes over b requests at KV = input + output / 2, plus the host time, emitting the
  accept length per request per iteration, Rd = b x accept length / (output length x seconds).
The prefill shard is the one of most Rp per GPU; for each decode shard, the x and y with
x tp_p + y tp_d = N that serve the most requests, min(x Rp, y Rd(ceil(U / y))). The
DISAGG_DECODE_SHARDS decode shards serving the most per GPU are simulated, each split as a
scenario of mtpsim.disaggregated(...) (sim/disagg.py runs it: prefill, KV transfer over the link,
decode). These rates only choose the splits; the frontier's figures are the simulations'. An
open-loop load of R requests per second is sized as ceil(R) users in flight for the choice (a
rough guess: Little's law would need the decode time the split decides).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpsim import scenario as sc
from mtpsim.acceptance import AcceptanceProfile
from mtpsim.designs import BASELINE, DesignShape, iteration_passes, prefill_passes
from mtpsim.errors import ScenarioError
from mtpsim.memory import prefill_chunk_tokens
from mtpsim.schema import mean_length
from mtpsim.search.layouts import Layout, at_layout, kv_problem
from mtpsim.search.space import with_load
from mtpsim.search.worker import pricer_for

DISAGG_DECODE_SHARDS = 3  # decode shards simulated per setting and load (the most requests per GPU first)


@dataclass(frozen=True)
class Split:
    """x prefill replicas of one shard and y decode replicas of another, on the same GPUs."""

    prefill: Layout  # replicas = x
    decode: Layout   # replicas = y

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def label(self) -> str:
        """`1P(tp8 ep8 adp1) 1D(tp8 ep8 adp8)`."""
        return " ".join(f"{lay.replicas}{role}(tp{lay.tp} ep{lay.ep} adp{lay.attention_dp})"
                        for role, lay in (("P", self.prefill), ("D", self.decode)))


def shards(layouts: list[Layout]) -> list[Layout]:
    """The one-replica shards of the aggregated layouts kept (tp, ep, attention_dp), in order."""
    return list(dict.fromkeys(Layout(1, lay.tp, lay.ep, lay.attention_dp) for lay in layouts))


def _host(pricer, design: DesignShape, batch: int) -> float:
    return pricer.host_s(design.design, batch)


def prefill_rate(s: sc.Scenario) -> float:
    """Prompts per second one replica of `s`'s layout prefills back to back (module docstring)."""
    pricer, design = pricer_for(s), DesignShape.of(s.speculative)
    chunk, prompt = prefill_chunk_tokens(s), mean_length(s.workload.input_len)
    if prompt <= chunk:
        k = chunk // prompt
        q, kv = np.full(k, prompt), np.zeros(k, dtype=int)
        seconds = sum(pricer.price(shape, q, kv).time_s for shape in prefill_passes(design)) + _host(pricer, design, k)
        return k / seconds
    seconds, done = 0.0, 0
    while done < prompt:
        n = min(chunk, prompt - done)
        seconds += sum(pricer.price(shape, np.array([n]), np.array([done])).time_s for shape in prefill_passes(design))
        seconds += _host(pricer, design, 1)
        done += n
    return 1.0 / seconds


def decode_rate(s: sc.Scenario, batch: int) -> float:
    """Requests per second one replica of `s`'s layout decodes at `batch` running requests."""
    pricer, design = pricer_for(s), DesignShape.of(s.speculative)
    out = mean_length(s.workload.output_len)
    kv = np.full(batch, mean_length(s.workload.input_len) + out // 2)
    seconds = sum(pricer.price(shape, np.full(batch, shape.tokens_per_request), kv).time_s
                  for shape in iteration_passes(design)) + _host(pricer, design, batch)
    length = 1.0
    if design.steps:
        profile = AcceptanceProfile.from_section(s.acceptance, design.steps, s.source, design.topk, design.draft_tokens)
        length = profile.expected_accept_length(design.steps)
    return batch * length / (max(out, 1) * seconds)


def best_split(base: sc.Scenario, spec: dict, prefill: Layout, decode: Layout, gpus: int,
               users: int) -> tuple[Split, float] | None:
    """The x and y serving the most requests per second for one prefill and one decode shard, with
    that rate; None when no x, y >= 1 fill the GPUs exactly."""
    rp = prefill_rate(at_layout(base, prefill, spec))
    d = at_layout(base, decode, spec)
    best = None
    for y in range(1, gpus // decode.tp + 1):
        rest = gpus - y * decode.tp
        if rest < prefill.tp or rest % prefill.tp:
            continue
        x = rest // prefill.tp
        served = min(x * rp, y * decode_rate(d, math.ceil(users / y)))
        if best is None or served > best[1]:
            best = (Split(Layout(x, prefill.tp, prefill.ep, prefill.attention_dp),
                          Layout(y, decode.tp, decode.ep, decode.attention_dp)), served)
    return best


def splits(base: sc.Scenario, spec: dict, pool_shards: list[Layout], gpus: int, users: int) -> list[Split]:
    """The DISAGG_DECODE_SHARDS splits of `gpus` serving the most at `users` (module docstring)."""
    if not pool_shards:
        return []
    prefill = max(pool_shards, key=lambda lay: prefill_rate(at_layout(base, lay, spec)) / lay.tp)
    found = [b for b in (best_split(base, spec, prefill, d, gpus, users) for d in pool_shards) if b is not None]
    return [split for split, _ in sorted(found, key=lambda b: -b[1])[:DISAGG_DECODE_SHARDS]]


def point(base: sc.Scenario, split: Split, spec: dict, load: dict, keep_cap: bool, gpus: int) -> sc.Scenario:
    """`base` with `spec` on the split's pools under `load` (each decode replica's running cap its
    share of the users, as the aggregated points'), labelled by the split; a ScenarioError if the
    pools cannot run it."""
    agg = with_load(at_layout(base, split.decode, spec), load, split.decode, keep_cap)
    pools = {role: {"replicas": lay.replicas, "tp": lay.tp, "ep": lay.ep, "attention_dp": lay.attention_dp}
             for role, lay in (("prefill", split.prefill), ("decode", split.decode))}
    s = sc.disaggregated(agg, pools["prefill"], pools["decode"], gpus=gpus)
    s._point = {**agg.point, "layout": split.label}
    return s


def points(base: sc.Scenario, layouts: list[Layout], settings: list[dict], ladder: list[dict], gpus: int,
           keep_cap: bool) -> tuple[list[sc.Scenario], dict[str, str]]:
    """Every setting x load on its best splits, and {split: why not} for splits that cannot run."""
    pool_shards, out, refused = shards(layouts), [], {}
    for spec in settings:
        # the shards were kept for the scenario's own design; a searched design's draft may leave
        # no KV pool on one (space.points leaves its aggregated points out the same way)
        fitting = pool_shards if spec["design"] == BASELINE else \
            [lay for lay in pool_shards if kv_problem(at_layout(base, lay, spec)) is None]
        for load in ladder:
            users = load.get("concurrency") or max(1, math.ceil(load["rate_per_s"]))  # a rate: sized as that many users
            for split in splits(base, spec, fitting, gpus, users):
                try:
                    out.append(point(base, split, spec, load, keep_cap, gpus))
                except ScenarioError as exc:
                    refused[split.label] = exc.reason
    return out, refused
