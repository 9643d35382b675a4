"""The real decode loop of each design, pass by pass as `mtpsim.designs` lists them.

Positions: request i has committed KV for tokens x_0..x_{L-1} and a root x_L (the last emitted
token, no KV yet). An MTP layer at position p reads (hidden at p, embedding of x_{p+1}) and
predicts x_{p+2}. A verify runs the target over [x_L, d_1..d_S] at positions L..L+S; row k's
greedy token t_k is the target's x_{L+k+1}. With `a` drafts accepted, x_{L+1..L+a} = d_1..d_a
and the bonus x_{L+a+1} = t_a: every cache the window wrote is cut back to L + a + 1.

- none:           T(B) on the root.
- nextn:          S-1 draft passes D(B) (d_1 came out of the last extend), verify T(B.N),
                  extend D(B.N) over the whole window; row a gives the next d_1.
- multi_layer:    verify T(B.N), then layer k extends over the window (tokens shifted by k),
                  one logits row per request: the next d_k.
- frozen_kv:      S assistant passes (seed: the last accepted target hidden and the root), each
                  reading the target's KV, then verify T(B.N); nothing after.
- parallel_heads: verify T(B.N), then the heads over the window's target hiddens (one pass).
- block:          one drafter pass: inject the last verify window's tapped target hiddens
                  (N positions from where it started; only the accepted + 1 stay committed) as
                  context K/V, then the block [root, S masks] bidirectionally; verify T(B.N).
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np
import torch

from mtpsim.designs import record
from mtpsim.results import PASS_COLUMN
from mtpsim.torchkit.cache import Batch

KINDS = tuple(PASS_COLUMN[k] for k in ("draft", "verify", "extend"))  # the timed columns, as the simulator's


class Run:
    """A running batch: models, caches, per-request roots / drafts / carries, timing.

    accept(drafts [B, S], targets [B, N]) -> accepted drafts per request (np.ndarray);
    propose(tokens [n], positions, requests) -> the drafts to use (identity, or a test oracle)."""

    def __init__(self, target, drafts, design: str, steps: int, batch: int, capacity: int, accept, propose=None):
        self.target, self.drafts, self.design, self.batch = target, drafts, design, batch
        self.steps = steps if record(design).draft_part else 0
        self.accept, self.propose = accept, propose or (lambda tokens, positions, requests=None: tokens)
        p = next(target.parameters())
        self.device = p.device
        n = self.steps + 1
        self.target_cache = target.new_cache(batch, capacity, n)
        self.draft_caches = [m.new_cache(batch, capacity, n) for m in drafts if hasattr(m, "new_cache")]
        d = target.embed.embedding_dim
        self.root = torch.zeros(batch, dtype=torch.int64, device=self.device)
        self.next_drafts = torch.zeros(batch, max(self.steps, 1), dtype=torch.int64, device=self.device)
        self.carry = torch.zeros(batch, 1, d, dtype=p.dtype, device=self.device)  # draft hidden / assistant carry
        self.rows = torch.arange(batch, device=self.device)
        self.emitted: list[list[int]] = [[] for _ in range(batch)]
        self.times = dict.fromkeys(KINDS, 0.0)
        self.sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        self.pending = None  # block: (the last verify's tapped hiddens, where its window started)

    def at(self, start, q: int, limit=None) -> Batch:
        return Batch.at(np.full(self.batch, start) if np.ndim(start) == 0 else start, q, self.device, limit)

    @contextmanager
    def timed(self, kind: str):
        self.sync()
        t0 = time.perf_counter()
        yield
        self.sync()
        self.times[PASS_COLUMN[kind]] += time.perf_counter() - t0

    def verify(self, drafts: torch.Tensor):
        """Target over [root, drafts] -> (committed tokens x_{L+1}..x_{L+N} [B, N], accepted [B],
        target hiddens [B, N, d]); the target cache keeps L + accepted + 1."""
        L, n = self.target_cache.lens, drafts.shape[1] + 1
        with self.timed("verify"):
            hidden, targets = self.target(torch.cat([self.root[:, None], drafts], 1), self.at(L, n), self.target_cache)
        accepted = self.accept(drafts, targets)
        self.target_cache.commit(L + accepted + 1)
        keep = torch.arange(n, device=self.device) < torch.as_tensor(accepted, device=self.device)[:, None]
        verified = torch.where(keep, torch.cat([drafts, targets[:, -1:]], 1), targets)
        self.root = verified[self.rows, torch.as_tensor(accepted, device=self.device)]
        return verified, accepted, hidden

    def emit(self, verified: torch.Tensor, accepted: np.ndarray) -> np.ndarray:
        for out, row, a in zip(self.emitted, verified.tolist(), accepted.tolist()):
            out.extend(row[: a + 1])
        return accepted


# ----------------------------------------------------------------------------- iterations

def plain(r: Run) -> np.ndarray:
    L = r.target_cache.lens
    with r.timed("verify"):
        _, tokens = r.target(r.root[:, None], r.at(L, 1), r.target_cache)
    r.target_cache.commit(L + 1)
    r.root = tokens[:, 0]
    return r.emit(tokens, np.zeros(r.batch, dtype=np.int64))


def nextn(r: Run) -> np.ndarray:
    L, n, mtp, cache = r.target_cache.lens, r.steps + 1, r.drafts[0], r.draft_caches[0]
    drafts, hidden = [r.next_drafts[:, 0]], r.carry
    for j in range(1, r.steps):  # d_1 came from the last extend: S-1 draft passes
        with r.timed("draft"):
            hidden, tokens = mtp(hidden, drafts[-1][:, None], r.at(L - 1 + j, 1), cache)
        drafts.append(r.propose(tokens[:, 0], L + j + 1))
    verified, accepted, target_hidden = r.verify(torch.stack(drafts, 1))
    with r.timed("extend"):  # the whole window, logits for every row
        hidden, tokens = mtp(target_hidden, verified, r.at(L, n), cache)
    cache.commit(L + accepted + 1)
    at = torch.as_tensor(accepted, device=r.device)
    r.carry = hidden[r.rows, at][:, None]
    r.next_drafts = r.propose(tokens[r.rows, at], L + accepted + 2)[:, None]
    return r.emit(verified, accepted)


def multi_layer(r: Run) -> np.ndarray:
    L, n = r.target_cache.lens, r.steps + 1
    verified, accepted, hidden = r.verify(r.next_drafts)
    at = torch.as_tensor(accepted, device=r.device)
    seq = torch.cat([verified, torch.zeros_like(verified[:, :-1])], 1)  # seq[:, i] = x_{L+i+1}
    new = []
    for k, (layer, cache) in enumerate(zip(r.drafts, r.draft_caches)):
        with r.timed("extend"):  # layer k reads tokens shifted by k; one logits row per request
            hidden, tokens = layer(hidden, seq[:, k:k + n], r.at(L, n), cache, rows=at)
        cache.commit(L + accepted + 1)
        new.append(r.propose(tokens[:, 0], L + accepted + 2 + k))
        seq[r.rows, at + k + 1] = new[-1]
    r.next_drafts = torch.stack(new, 1)
    return r.emit(verified, accepted)


def frozen_kv(r: Run) -> np.ndarray:
    L, assistant = r.target_cache.lens, r.drafts[0]
    carry, token, drafts = r.carry, r.root, []
    for j in range(r.steps):  # a seed pass, then S-1 more; the assistant reads the target's KV
        with r.timed("draft"):
            carry, tokens = assistant(carry, token[:, None], r.at(L + j, 1, limit=L), r.target_cache)
        token = r.propose(tokens[:, 0], L + j + 1)
        drafts.append(token)
    verified, accepted, hidden = r.verify(torch.stack(drafts, 1))
    r.carry = hidden[r.rows, torch.as_tensor(accepted, device=r.device)][:, None]  # the next seed
    return r.emit(verified, accepted)


def parallel_heads(r: Run) -> np.ndarray:
    L, n = r.target_cache.lens, r.steps + 1
    verified, accepted, hidden = r.verify(r.next_drafts)
    at = torch.as_tensor(accepted, device=r.device)
    with r.timed("draft"):  # every head over every window row
        outs = [head(hidden, verified, r.at(L, n), cache)[1] for head, cache in zip(r.drafts, r.draft_caches)]
    for cache in r.draft_caches:
        cache.commit(L + accepted + 1)
    r.next_drafts = torch.stack([r.propose(t[r.rows, at], L + accepted + 2 + k) for k, t in enumerate(outs)], 1)
    return r.emit(verified, accepted)


def block(r: Run) -> np.ndarray:
    L, drafter, cache = r.target_cache.lens, r.drafts[0], r.draft_caches[0]
    mask = torch.zeros(r.batch, r.steps, dtype=torch.int64, device=r.device)  # the mask token (id 0)
    with r.timed("draft"):
        if r.pending is not None:  # the last window's context, at the fixed verify width
            tapped, start = r.pending
            drafter.inject(tapped, r.at(start, tapped.shape[1]), cache)
        _, tokens = drafter(torch.cat([r.root[:, None], mask], 1), r.at(L, r.steps + 1), cache)
    drafts = torch.stack([r.propose(tokens[:, j], L + j + 1) for j in range(r.steps)], 1)
    verified, accepted, _ = r.verify(drafts)
    # the cache's lengths follow the target's; the accepted positions' K/V is written by the next
    # draft pass, before anything reads it
    r.pending = (r.target.tapped, L.copy())
    cache.commit(L + accepted + 1)
    return r.emit(verified, accepted)


ITERATIONS = {"none": plain, "nextn": nextn, "multi_layer": multi_layer, "frozen_kv": frozen_kv,
              "parallel_heads": parallel_heads, "block": block}


def step(r: Run) -> dict:
    """One timed iteration -> {iteration_s, draft_s, verify_s, extend_s, emitted, accepted}."""
    r.times = dict.fromkeys(KINDS, 0.0)
    r.sync()
    t0 = time.perf_counter()
    accepted = ITERATIONS[r.design](r)
    r.sync()
    wall = time.perf_counter() - t0
    return {"iteration_s": wall, **r.times, "emitted": int(accepted.sum()) + r.batch, "accepted": accepted}


# ----------------------------------------------------------------------------- prefill

def prefill(r: Run, prompts: list[torch.Tensor]) -> None:
    """Each prompt on its own (not timed): target, then the design's draft prefill; the prefill
    emits the root, and the drafts (or carry) the first iteration needs."""
    for b, prompt in enumerate(prompts):
        P, last = len(prompt), torch.tensor([len(prompt) - 1], device=r.device)
        cache = r.target_cache.view(b)
        where = Batch.at(np.zeros(1, np.int64), P, r.device, prefill=True)
        hidden, root = r.target(prompt[None], where, cache, rows=last)
        cache.commit(np.array([P]))
        r.target_cache.lens[b] = P
        r.root[b] = root[0, 0]
        r.emitted[b].append(int(root[0, 0]))
        seq = torch.cat([prompt[1:], root[0], torch.zeros(r.steps, dtype=prompt.dtype, device=r.device)])
        chain = record(r.design).chain
        if chain == "seeded":
            r.carry[b] = hidden[0, -1:]
        if chain == "block":  # the prompt's context, no block yet
            full = r.draft_caches[0]
            draft_cache = full.view(b)
            r.drafts[0].inject(r.target.tapped, where, draft_cache)
            draft_cache.commit(np.array([P]))
            full.lens[b] = P
            continue
        for k, (layer, full) in enumerate(zip(r.drafts if r.draft_caches else [], r.draft_caches)):
            draft_cache = full.view(b)
            tokens_in = seq[k:k + P] if chain == "stacked" else seq[:P]
            hidden_k, tokens = layer(hidden, tokens_in[None], where, draft_cache, rows=last)
            draft_cache.commit(np.array([P]))
            full.lens[b] = P
            token = r.propose(tokens[:, 0], np.array([P + 1 + k]), [b])[0]
            r.next_drafts[b, k] = token
            if chain == "recursive":
                r.carry[b] = hidden_k[0, -1:]
            if chain == "stacked":
                seq[P + k] = token
                hidden = hidden_k
