"""Replaying a trace file (workload.trace): the part of it a scenario selects, streamed.

`scan(trace)` reads the selection once and returns its `TraceStats` (how many requests, the
longest, the rate, what was capped or skipped); `stream(trace)` yields it again as `Chunk`s of
arrays for the arrival process. Neither holds more than one chunk of the file (readers.CHUNK_ROWS
rows), and both stop reading at the window's end or the N-th request.

Selection, in order: rows before `start_s` or after `end_s` (trace seconds) are passed over;
rows with no prompt or no output tokens (BurstGPT's failed requests) are skipped and counted;
the first `max_requests` of the rest are kept; lengths over `max_input_len` / `max_output_len`
are cut to them and counted; arrival times become (t - start_s) / speed. Rows must come in
arrival order (equal times are fine): a trace that goes back in time is an error, as are the
bad cells readers.py refuses, and a `hash_ids` list longer than ceil(input / block_size).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np

from mtpsim.errors import ScenarioError, short, warn
from mtpsim.files import read_once
from mtpsim.schema import MAX_REQUESTS, MAX_SIM_S, TraceFile
from mtpsim.tracefiles.formats import FORMATS, Format, RawChunk, detect, sniff
from mtpsim.tracefiles.readers import read_chunks
from mtpsim.workload_schema import mean_length

__all__ = ["Chunk", "TraceStats", "mean_lengths", "scan", "stream", "FORMATS"]


@dataclass
class Chunk:
    """Selected requests in arrival order: arrival seconds from the replay's start, lengths, and
    (mooncake) each prompt's prefix-block ids."""

    arrival_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    hash_ids: list | None = None


@dataclass
class TraceStats:
    """What a selection holds; `longest_row` is the file row of the longest prompt + output."""

    path: str
    format: str
    num_requests: int = 0
    num_skipped: int = 0          # rows with 0 input or 0 output tokens
    num_capped_inputs: int = 0
    num_capped_outputs: int = 0
    first_arrival_s: float = math.nan
    last_arrival_s: float = math.nan
    longest: int = 0
    longest_at: Callable[[], int] | None = None  # its file row, found when asked (RawChunk.row_later)
    longest_input: int = 0        # the prompt of that longest request
    max_input_len: int = 0        # the longest prompt and the longest output, each on its own
    max_output_len: int = 0
    input_tokens: int = 0         # summed over the selection (after max_input_len cuts)
    output_tokens: int = 0        # summed over the selection (after max_output_len cuts)
    has_blocks: bool = False
    num_short_blocks: int = 0     # rows naming fewer block ids than their prompt's full blocks

    @property
    def longest_row(self) -> int:
        """The file row of the longest prompt + output (a CSV's is found by reading it again)."""
        return self.longest_at() if self.longest_at is not None else 0

    @property
    def mean_input_len(self) -> float:
        return self.input_tokens / self.num_requests if self.num_requests else math.nan

    @property
    def mean_output_len(self) -> float:
        return self.output_tokens / self.num_requests if self.num_requests else math.nan

    @property
    def rate_per_s(self) -> float:
        """Requests per second over the selection's span (NaN when all arrive at once)."""
        span = self.last_arrival_s - self.first_arrival_s
        return (self.num_requests - 1) / span if self.num_requests > 1 and span > 0 else math.nan

    def add(self, raw: RawChunk, keep: np.ndarray, chunk: Chunk) -> None:
        if not len(chunk.arrival_s):
            return
        if not self.num_requests:
            self.first_arrival_s = float(chunk.arrival_s[0])
        self.num_requests += len(chunk.arrival_s)
        self.last_arrival_s = float(chunk.arrival_s[-1])
        self.input_tokens += int(chunk.input_len.sum())
        self.output_tokens += int(chunk.output_len.sum())
        self.max_input_len = max(self.max_input_len, int(chunk.input_len.max()))
        self.max_output_len = max(self.max_output_len, int(chunk.output_len.max()))
        total = chunk.input_len + chunk.output_len
        i = int(np.argmax(total))
        if total[i] > self.longest:
            self.longest, self.longest_input = int(total[i]), int(chunk.input_len[i])
            self.longest_at = raw.row_later(int(np.flatnonzero(keep)[i]))
        self.has_blocks |= chunk.hash_ids is not None and any(chunk.hash_ids)


def scan(trace: TraceFile) -> TraceStats:
    """The selection's stats, read once per version of the file and selection."""
    return _scan(trace.path, trace)


def mean_lengths(workload) -> tuple[int, int]:
    """A request's typical (input, output) tokens under `workload`: the replayed requests' means
    for a trace (whose input_len / output_len are the schema's defaults, never read), else the
    mean of each length as drawn. What one request holds in KV at its end sizes the pool's
    requests (memory plots) and the context priced (`cost`) the same way."""
    if workload.arrival == "trace":
        stats = scan(workload.trace)
        return max(1, round(stats.mean_input_len)), max(1, round(stats.mean_output_len))
    return mean_length(workload.input_len), mean_length(workload.output_len)


@read_once
def _scan(path: str, trace: TraceFile) -> TraceStats:
    stats = TraceStats(path, _format(trace).name)
    for _ in _select(trace, stats):
        pass
    if not stats.num_requests:
        window = trace.start_s > 0 or trace.end_s is not None
        if window and not stats.num_skipped:
            raise ScenarioError(path, "", f"no request arrives in the window workload.trace.start_s {trace.start_s:g} .. "
                                f"end_s {'the end' if trace.end_s is None else f'{trace.end_s:g}'} (seconds from the "
                                "trace's first row)")
        raise ScenarioError(path, "", "no rows" if not stats.num_skipped else
                            f"no requests selected ({stats.num_skipped} rows with 0 tokens skipped)")
    if stats.num_short_blocks:  # Mooncake names every full block of a prompt: a shorter list is cut, or another block size
        warn(path, "hash_ids", f"{stats.num_short_blocks} row(s) name fewer block ids than their prompt's full blocks of "
             f"{trace.block_size} tokens (workload.trace.block_size): the blocks past their ids are never cached")
    return stats


def stream(trace: TraceFile) -> Iterator[Chunk]:
    """The selection as chunks, in arrival order."""
    yield from _select(trace, TraceStats(trace.path, _format(trace).name))


def _format(trace: TraceFile) -> Format:
    return detect(trace.path, sniff(trace.path), trace.format)


def _select(trace: TraceFile, stats: TraceStats) -> Iterator[Chunk]:
    """Every chunk of the selection, counting into `stats` (module docstring: the rules)."""
    path, last_t, last_row = trace.path, -math.inf, partial(int, 0)
    seen: dict = {}  # block id -> (its position in a prompt, the row it was first seen in)
    for raw in read_chunks(path, _format(trace)):
        t = raw.time_s
        _check_order(path, raw, last_t, last_row)
        last_t, last_row = float(t[-1]), raw.row_later(len(t) - 1)
        keep = t >= trace.start_s
        ended = trace.end_s is not None and t[-1] > trace.end_s
        if ended:
            keep &= t <= trace.end_s
        empty = keep & ((raw.input_len == 0) | (raw.output_len == 0))
        stats.num_skipped += int(empty.sum())
        keep &= ~empty
        room = (trace.max_requests or MAX_REQUESTS + 1) - stats.num_requests
        if keep.sum() >= room:
            keep[np.flatnonzero(keep)[room:]] = False
            ended = ended or trace.max_requests is not None
        chunk = _take(trace, raw, keep, stats, seen)
        if stats.num_requests + len(chunk.arrival_s) > MAX_REQUESTS:
            raise ScenarioError(path, "", f"the selection holds more than {MAX_REQUESTS:,} requests, the most one run "
                                "takes: set workload.trace.max_requests or end_s")
        stats.add(raw, keep, chunk)
        yield chunk
        if ended:
            return


def _check_order(path: str, raw: RawChunk, last_t: float, last_row: Callable[[], int]) -> None:
    t = np.concatenate([[last_t], raw.time_s])
    back = np.flatnonzero(np.diff(t) < 0)
    if len(back):
        i = int(back[0])
        row, prev = raw.row(i), last_row() if i == 0 else raw.row(i - 1)
        raise ScenarioError(path, "", f"row {row}: timestamp {t[i + 1]:g} s comes before row {prev}'s {t[i]:g} s: "
                            "a trace must list requests in arrival order")


def _take(trace: TraceFile, raw: RawChunk, keep: np.ndarray, stats: TraceStats, seen: dict) -> Chunk:
    """The kept rows of a chunk, capped, their block ids checked, times from the replay's start."""
    inputs, outputs = raw.input_len[keep], raw.output_len[keep]
    blocks = None
    if raw.hash_ids is not None:
        blocks = [raw.hash_ids[i] or [] for i in np.flatnonzero(keep)]
        stats.num_short_blocks += _check_blocks(trace, raw, keep, inputs, blocks, seen)
    if trace.max_input_len is not None:
        over = inputs > trace.max_input_len
        stats.num_capped_inputs += int(over.sum())
        inputs = np.minimum(inputs, trace.max_input_len)
        if blocks is not None and over.any():
            blocks = [b[: -(-n // trace.block_size)] for b, n in zip(blocks, inputs.tolist())]
    if trace.max_output_len is not None:
        stats.num_capped_outputs += int((outputs > trace.max_output_len).sum())
        outputs = np.minimum(outputs, trace.max_output_len)
    with np.errstate(over="ignore"):  # a speed near 0 stretches a time to inf: the check below names it
        arrival_s = (raw.time_s[keep] - trace.start_s) / trace.speed
    if len(arrival_s) and arrival_s[-1] > MAX_SIM_S:  # the rows' times are bounded; a slow replay stretches them
        raise ScenarioError(trace.path, "", f"row {raw.row(int(np.flatnonzero(keep)[-1]))} arrives "
                            f"{arrival_s[-1]:.3g} s into the replay at workload.trace.speed {trace.speed:g}, past the "
                            f"{MAX_SIM_S:g} s one run simulates (the clock could not resolve a decode step there): "
                            "raise the speed, or set end_s or max_requests")
    return Chunk(arrival_s, inputs, outputs, blocks)


def _check_blocks(trace: TraceFile, raw: RawChunk, keep: np.ndarray, inputs: np.ndarray, blocks: list,
                  seen: dict) -> int:
    """Each row's ids fit its prompt, and each id keeps one position: a block id names the whole
    prefix up to its block (Mooncake hashes each block with the ones before it), so an id
    twice in a prompt, or at another position than in an earlier row, is a broken trace
    whose cache hits would be made up. Returns the rows naming fewer ids than their full blocks."""
    rows, short_rows = np.flatnonzero(keep), 0
    for j, (ids, n) in enumerate(zip(blocks, inputs.tolist())):
        row = raw.row(int(rows[j]))
        allowed = -(-n // trace.block_size)
        short_rows += 0 < len(ids) < n // trace.block_size
        if len(ids) > allowed:
            raise ScenarioError(trace.path, "hash_ids", f"row {row}: {len(ids)} block ids for "
                                f"input_length {n}, which fills at most {allowed} blocks of {trace.block_size} tokens "
                                "(workload.trace.block_size)")
        for position, block in enumerate(ids):
            first = seen.setdefault(block, (position, row))
            if first[0] != position:
                where = "earlier in this row" if first[1] == row else f"in row {first[1]}"
                raise ScenarioError(trace.path, "hash_ids", f"row {row}: block id {short(block)} is block "
                                    f"{position + 1} here and block {first[0] + 1} {where}: an id names the prefix up "
                                    "to its block, so it keeps one position")
    return short_rows
