"""Records -> rows -> summary (and DataFrames on request).

The engine appends flat rows; this module keeps them in a Results with one summary row, and
builds the `requests`, `iterations`, `passes` and `summary` DataFrames when first read (pandas,
with pyarrow ~0.2-0.3 s to import, loads then: `mtpsim run` writes the rows as CSV without
it). Iteration rows stop being kept past `max_iteration_rows`
(memory stays flat in the token count); totals by pass kind keep counting all of them. Request
rows stop being kept past `max_request_rows` (memory flat in the request count): every request
still streams into `RequestStats`, whose sums are exact and whose percentiles come from log
histograms within LogHistogram.RELATIVE_ERROR; the summary uses the rows while all are kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter

import numpy as np

from mtpsim.histogram import LogHistogram
from mtpsim.summary_columns import columns, summarize, summarize_stats  # summarize: read from here too

# GPU seconds per pass kind, one column each in iterations.csv (plain decoding's one pass counts
# as verify), then the host time the overlap did not hide: the one home of these names
PASS_COLUMN = {"draft": "draft_s", "verify": "verify_s", "decode": "verify_s", "extend": "extend_s",
               "prefill": "prefill_s"}
PASS_TIME_COLUMNS = ("draft_s", "verify_s", "extend_s", "prefill_s")
HOST_COLUMN = "host_s"
TIME_COLUMNS = (*PASS_TIME_COLUMNS, HOST_COLUMN)
ITERATION_COLUMNS = ["replica", "index", "kind", "start_s", "duration_s", "batch", "emitted", *TIME_COLUMNS]
REQUEST_COLUMNS = ["request_id", "replica", "arrival_s", "admitted_s", "first_token_s", "finish_s",
                   "input_len", "output_len", "iterations", "accepted"]
PASS_COLUMNS = ["replica", "start_s", "duration_s", "kind", "part", "tokens"]


@dataclass
class RequestStats:
    """What the summary needs of every finished request, kept as running sums and histograms."""

    n: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    decode_tokens: int = 0
    iterations: int = 0
    first_arrival_s: float = math.inf
    last_finish_s: float = -math.inf
    e2e_sum_s: float = 0.0
    num_decoding: int = 0            # requests with more than one output token
    per_user_tps_sum: float = 0.0
    ttft: LogHistogram = field(default_factory=LogHistogram)
    tpot: LogHistogram = field(default_factory=LogHistogram)
    e2e: LogHistogram = field(default_factory=LogHistogram)

    def add(self, r) -> None:
        self.n += 1
        self.input_tokens += r.input_len
        self.output_tokens += r.output_len
        self.decode_tokens += r.output_len - 1
        self.iterations += r.iterations
        self.first_arrival_s = min(self.first_arrival_s, r.arrival_s)
        self.last_finish_s = max(self.last_finish_s, r.finish_s)
        self.e2e_sum_s += r.finish_s - r.arrival_s
        self.e2e.add(r.finish_s - r.arrival_s)
        self.ttft.add(r.first_token_s - r.arrival_s)
        if r.output_len > 1:
            decode_s = r.finish_s - r.first_token_s
            self.num_decoding += 1
            self.per_user_tps_sum += (r.output_len - 1) / decode_s
            self.tpot.add(decode_s / (r.output_len - 1))


@dataclass
class Records:
    """Flat rows as the simulation appends them."""

    max_iteration_rows: int = 10_000
    keep_passes: bool = False
    max_request_rows: int = 100_000
    stats: RequestStats = field(default_factory=RequestStats)
    requests: list = field(default_factory=list)
    iterations: list = field(default_factory=list)
    passes: list = field(default_factory=list)
    totals: dict = field(default_factory=lambda: dict.fromkeys(TIME_COLUMNS, 0.0))
    num_iterations: int = 0
    num_decode_iterations: int = 0
    decode_batch_sum: int = 0   # running requests summed over decode iterations
    max_decode_batch: int = 0
    eager_iterations: int = 0   # decode iterations whose batch no CUDA graph holds
    budget_full_iterations: int = 0  # decode iterations whose tokens left admitted prompts no room (sim/mixed.py)
    batch_wait_iterations: int = 0  # decode iterations that held fitting prompts back to batch them (sim/mixed.py)
    accept_counts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    undrafted_rows: int = 0     # requests of iterations without drafts (S = 0): `accepts` adds them to accept_counts[0]
    pending_accepts: list = field(default_factory=list, repr=False)  # accepted-draft arrays not yet counted
    num_pending_accepts: int = 0
    verified_tokens: int = 0    # tokens verify passes checked, root included, summed over decode iterations
    verify_rows: int = 0        # requests verified, summed over decode iterations

    def add_verified(self, tokens: int, batch: int) -> None:
        """A decode iteration's verify: `tokens` checked over `batch` requests (a plain decode
        checks one token per request)."""
        self.verified_tokens += tokens
        self.verify_rows += batch
    # every request's gap between streamed chunks: `itl` of one-token chunks (iterations without
    # drafts), `itl_spec` of speculative iterations' chunks and `itl_token` the latter spread over
    # their tokens, one entry per token (SGLang's native backend); a one-token chunk is the same
    # either way, so it is counted once (`itl_columns` merges them)
    itl: LogHistogram = field(default_factory=LogHistogram)
    itl_spec: LogHistogram = field(default_factory=LogHistogram)
    itl_token: LogHistogram = field(default_factory=LogHistogram)

    def add_chunk_gaps(self, gaps: np.ndarray, accepted: np.ndarray | None, tokens: np.ndarray | None = None,
                       total: int | None = None) -> None:
        """One decode iteration's streamed chunks: each request's gap since its last, and its
        accepted drafts (its chunk holds accepted + 1 tokens; None: one token each). `tokens`
        and `total`: those chunks' tokens and their sum, where the caller has them already."""
        if accepted is None:
            self.itl.add_many(gaps)
        else:
            if tokens is None:
                tokens = accepted + 1
            self.itl_spec.add_many(gaps)
            self.itl_token.add_many(gaps / tokens, tokens, total)

    def itl_histograms(self) -> tuple[LogHistogram, LogHistogram]:
        """(gaps per streamed chunk, gaps per token) over all decode iterations."""
        return self.itl.merged(self.itl_spec), self.itl.merged(self.itl_token)

    def add_request(self, r) -> None:
        self.stats.add(r)
        if len(self.requests) < self.max_request_rows:
            self.requests.append((r.request_id, r.replica, r.arrival_s, r.admitted_s, r.first_token_s,
                                  r.finish_s, r.input_len, r.output_len, r.iterations, r.accepted))

    def add_iteration(self, replica, index, kind, start_s, duration_s, batch, emitted, times, host_s) -> None:
        self.num_iterations += 1
        if kind == "decode":
            self.num_decode_iterations += 1
            self.decode_batch_sum += batch
            if batch > self.max_decode_batch:
                self.max_decode_batch = batch
        totals = self.totals
        for key, seconds in times.items():
            totals[key] += seconds
        totals[HOST_COLUMN] += host_s
        if len(self.iterations) < self.max_iteration_rows:
            self.iterations.append((replica, index, kind, start_s, duration_s, batch, emitted,
                                    *map(times.__getitem__, PASS_TIME_COLUMNS), host_s))

    def add_pass(self, replica, end_s, shape, cost) -> None:
        """A pass that ends at end_s. The engine adds an iteration's passes when it starts, so
        replicas' rows interleave by their end (`to_results` sorts them), as the passes run."""
        if self.keep_passes:
            self.passes.append((replica, end_s - cost.time_s, cost.time_s, shape.kind, shape.part, cost.tokens, end_s))

    def add_accepts(self, accepted: np.ndarray | None, steps: int, batch: int) -> None:
        """Histogram: iterations (per request) in which exactly j drafts were accepted; None: the
        batch's requests had no drafts (S = 0) and accepted none."""
        if len(self.accept_counts) < steps + 1:
            self._count_accepts()  # the arrays waiting are counted up to the old length, as they came
            self.accept_counts = np.pad(self.accept_counts, (0, steps + 1 - len(self.accept_counts)))
        if accepted is None:
            self.undrafted_rows += batch  # an int: a plain iteration costs no numpy call
        else:  # counted in one bincount for many iterations (whole numbers: adding in another order is exact)
            self.pending_accepts.append(accepted)
            self.num_pending_accepts += len(accepted)
            if self.num_pending_accepts >= LogHistogram.FLUSH_VALUES:  # the histograms' batch size
                self._count_accepts()

    def _count_accepts(self) -> None:
        if self.pending_accepts:
            found = np.bincount(np.concatenate(self.pending_accepts), minlength=len(self.accept_counts))
            self.accept_counts += found[: len(self.accept_counts)]
            self.pending_accepts, self.num_pending_accepts = [], 0

    def accepts(self) -> np.ndarray:
        """The histogram `add_accepts` counted (a copy): per j, requests' iterations with j drafts accepted."""
        self._count_accepts()
        counts = self.accept_counts.copy()
        counts[0] += self.undrafted_rows
        return counts

    @property
    def iterations_truncated(self) -> bool:
        return self.num_iterations > len(self.iterations)

    @property
    def requests_truncated(self) -> bool:
        return self.stats.n > len(self.requests)


class Results:
    """A run's records as rows (tuples in REQUEST_COLUMNS, ITERATION_COLUMNS, PASS_COLUMNS order;
    requests by id, passes by start), its accept counts and its summary `row`; the same as
    DataFrames, each built on first read."""

    def __init__(self, request_rows: list, iteration_rows: list, pass_rows: list, accept_counts: np.ndarray,
                 row: dict, iterations_truncated: bool = False, requests_truncated: bool = False):
        self.request_rows, self.iteration_rows, self.pass_rows = request_rows, iteration_rows, pass_rows
        self.accept_counts, self.row = accept_counts, row
        self.iterations_truncated, self.requests_truncated = iterations_truncated, requests_truncated

    @cached_property
    def requests(self):
        import pandas as pd
        return pd.DataFrame(self.request_rows, columns=REQUEST_COLUMNS)

    @cached_property
    def iterations(self):
        import pandas as pd
        return pd.DataFrame(self.iteration_rows, columns=ITERATION_COLUMNS)

    @cached_property
    def passes(self):
        import pandas as pd
        return pd.DataFrame(self.pass_rows, columns=PASS_COLUMNS)

    @cached_property
    def summary(self):
        """The summary row as a one-row DataFrame."""
        import pandas as pd
        return pd.DataFrame([self.row])


def limits_row(records: Records, max_running: int, capped: int, kv_full: int, max_graph_batch: int | str | None,
               budget_tokens: int | None = None) -> dict:
    """What bounded a run's batch: the running-request cap in force, the decode iterations at
    which the cap or the KV budget turned waiting requests away, the mean and largest running
    batch, the share of decode iterations past the largest CUDA-graph batch (run eagerly; None:
    no graphs), and `bound_by`, those limits that bound at all ("" when none did): `budget N`
    where a mixing engine's N-token budget a step (`budget_tokens`; None: it does not mix) left
    admitted prompts no room beside the running batch's decode, so they waited to prefill; and
    `batch_wait_iterations`, the decode iterations that held prompts back to batch them
    (engine.batch_wait, TensorRT-LLM's batch waiting: sim/mixed.py)."""
    n = records.num_decode_iterations
    eager = records.eager_iterations / n if n and max_graph_batch is not None else 0.0
    budget = budget_tokens is not None and records.budget_full_iterations
    bound = [f"cap {max_running}" if capped else "", "KV" if kv_full else "", f"eager>{max_graph_batch}" if eager else "",
             f"budget {budget_tokens}" if budget else ""]
    return {"max_running": max_running, "capped_iterations": capped, "kv_full_iterations": kv_full,
            "mean_running": records.decode_batch_sum / n if n else float("nan"), "max_batch": records.max_decode_batch,
            "eager_share": eager, "bound_by": " ".join(b for b in bound if b),
            "batch_wait_iterations": records.batch_wait_iterations}


def to_results(records: Records, identity: dict, max_kv_tokens: int, sim_wall_s: float, limits: dict | None = None) -> Results:
    requests = sorted(records.requests, key=itemgetter(0))  # by request_id
    ended = sorted(records.passes, key=lambda row: row[-1])  # stable: a replica's passes keep their order
    latency = summarize_stats(records.stats, records) if records.requests_truncated else \
        summarize(dict(zip(REQUEST_COLUMNS, columns(requests, len(REQUEST_COLUMNS)))), records)
    row = {**identity, **latency, **time_shares(records), "max_kv_tokens": max_kv_tokens,
           "requests_kept": len(records.requests), "requests_total": records.stats.n,
           "iterations_kept": len(records.iterations), "iterations_total": records.num_iterations,
           "decode_iterations": records.num_decode_iterations,
           "verify_width": records.verified_tokens / records.verify_rows if records.verify_rows else float("nan"),
           **(limits or {}),
           "sim_wall_s": sim_wall_s}
    return Results(requests, list(records.iterations), [r[:-1] for r in ended], records.accepts(), row,
                   records.iterations_truncated, records.requests_truncated)


def time_shares(records: Records) -> dict:
    """Fractions of busy time (GPU passes + exposed host time) by pass kind, and the host's."""
    busy = sum(records.totals.values()) or 1.0
    return {**{share_column(k): records.totals[k] / busy for k in PASS_TIME_COLUMNS},
            "host_share": records.totals[HOST_COLUMN] / busy}


def share_column(time_column: str) -> str:
    """The summary column of a pass-time column's share of busy time: draft_s -> draft_share."""
    return f"{time_column.removesuffix('_s')}_share"
