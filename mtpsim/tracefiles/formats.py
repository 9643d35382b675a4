"""The trace formats mtpsim reads, as records; a chunk of a file's rows as read (RawChunk) and
the rules its columns keep; and recognising a file's format from its first bytes (sniff, detect).
readers.py streams a file of each format in checked chunks.

Each format names its arrival-time, prompt-length and output-length columns and how its times
read; the columns are checked as they stream (numbers, non-negative integers for lengths,
finite times) and a bad cell is one ScenarioError naming the file, the column and the row.
Where the public traces are published (the README's "Replaying public traces" shows how to point
mtpsim at each):
- azure: https://github.com/Azure/AzurePublicDataset, data/AzureLLMInferenceTrace_{code,conv}.csv
  (2023) and AzureLLMInferenceTrace_{code,conv}_1week.csv (2024); TIMESTAMP is a wall-clock
  datetime (`2023-11-16 18:15:46.6805900`), read as seconds from the file's first row.
- burstgpt: https://github.com/HPMLL/BurstGPT, data/BurstGPT_*.csv, header
  `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`; Timestamp in seconds.
  Failed requests have `Response tokens` 0 (the README of that repo says so).
- mooncake: https://github.com/kvcache-ai/Mooncake, FAST25-release/traces/*.jsonl; one JSON
  object per line, `timestamp` in milliseconds since the first request, `input_length`,
  `output_length`, and `hash_ids`, one id per 512-token block of the prompt, equal ids meaning
  a shared prefix (ai-dynamo/dynamo benchmarks/data_generator/README.md describes the format).
- mtpsim: arrival_s,input_len,output_len in seconds, what `mtpsim verify` writes.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from mtpsim.csvfiles import CsvRecords
from mtpsim.errors import ScenarioError, short
from mtpsim.files import READ_ERRORS, Column, unreadable
from mtpsim.schema import MAX_TOKENS, MAX_TRACE_S
from mtpsim.textfiles import MAX_LINE_BYTES, LinesCapped

SNIFF_BYTES = 1 << 16  # what is read to recognise the format and refuse binary files
CSV_LINE_BYTES = MAX_LINE_BYTES  # a CSV trace row: a few dozen bytes
# a JSON-lines row: its hash_ids list one id per prompt block (a 16M-token prompt in blocks of 16, ~10 MB)
JSON_LINE_BYTES = 64 * 2**20
LENGTH = Column(low=0, high=MAX_TOKENS, integer=True)
# a trace stamped in Unix time (~1.7e9 s) is past MAX_TRACE_S: the note says what the column counts from
TIME = Column(low=0, high=MAX_TRACE_S, note="time from the trace's origin, not Unix time: subtract the first row's")


@dataclass(frozen=True)
class Format:
    """One trace format: its columns (keys, for JSON lines), and seconds per unit of its
    timestamps (None: wall-clock datetimes, read as seconds from the first row)."""

    name: str
    time: str
    input: str
    output: str
    seconds_per_unit: float | None = 1.0
    jsonl: bool = False
    blocks: str | None = None   # the key listing a prompt's prefix-block ids

    @property
    def columns(self) -> tuple[str, str, str]:
        return self.time, self.input, self.output


FORMATS = {f.name: f for f in (
    Format("mtpsim", "arrival_s", "input_len", "output_len"),
    Format("azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", seconds_per_unit=None),
    Format("burstgpt", "Timestamp", "Request tokens", "Response tokens"),
    Format("mooncake", "timestamp", "input_length", "output_length", seconds_per_unit=1e-3, jsonl=True,
           blocks="hash_ids"),
)}


@dataclass
class RawChunk:
    """Consecutive rows as read: `first_row` is the file row of the first (JSON lines count from
    1; a CSV's first record, 0-based, whose file rows `records` finds, the header's being 1);
    times in seconds from the trace's origin."""

    first_row: int
    time_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    hash_ids: list | None = None
    row_numbers: list[int] | None = None  # each row's file row where blank lines come between
    records: CsvRecords | None = None     # a CSV's records: file rows found when a message needs one

    def row(self, i: int) -> int:
        """The file row of the chunk's i-th row (a CSV's: read again, so for messages only)."""
        if self.records is not None:
            return self.records.line(self.first_row + i)
        return self.row_numbers[i] if self.row_numbers is not None else self.first_row + i

    def row_later(self, i: int) -> Callable[[], int]:
        """`row(i)` when called, holding none of the chunk's arrays: a file row a later message
        may need (the order check's previous row, the longest request's)."""
        if self.records is not None:
            return partial(self.records.line, self.first_row + i)
        return partial(int, self.row(i))


def sniff(path: str) -> str:
    """The file's first SNIFF_BYTES as text, refusing a missing, binary or non-UTF-8 file."""
    try:
        with open_trace(path) as f:
            head = f.read(SNIFF_BYTES)
    except READ_ERRORS as exc:
        raise unreadable(path, exc) from None
    if not head.strip():
        raise ScenarioError(path, "", "empty: no header and no rows")
    if b"\0" in head:
        raise ScenarioError(path, "", "a binary file, not text")
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a character cut by the sniff's end is no error
            raise ScenarioError(path, "", f"not UTF-8 text (byte 0x{head[exc.start]:02x} at offset {exc.start})") from None
        return head[:exc.start].decode("utf-8")


def detect(path: str, head: str, name: str) -> Format:
    """The format `name` names, or for `auto` the one whose columns the header holds (most of
    them: a file missing one column is that format's, and its reader says which is missing)."""
    head = head.removeprefix("\ufeff")  # a byte-order mark (spreadsheets write one) is no column
    first = head.lstrip().splitlines()[0] if head.strip() else ""
    if first.startswith("{"):
        try:
            keys = set(json.loads(first))
        except (ValueError, TypeError, RecursionError):  # the reader says what is wrong with the row
            # a first row longer than the sniff (a long hash_ids list) is cut off: its leading keys still tell
            keys = set(re.findall(r'"([^"\\]+)"\s*:', first))
    else:
        keys = set(header_cells(first))
    if name != "auto":
        return FORMATS[name]
    # the format holding most of its columns, if two or more: its reader names what is missing
    best = max(FORMATS.values(), key=lambda f: len(set(f.columns) & keys))
    if len(set(best.columns) & keys) >= 2:
        return best
    known = "; ".join(f"{f.name} ({', '.join(f.columns)})" for f in FORMATS.values())
    raise ScenarioError(path, "", f"cannot recognise the trace format from its first line {short(first, 60)}: "
                        f"it holds the columns of none of {known} (or set workload.trace.format)")


def open_trace(path: str, max_line: int | None = None):
    """The file's bytes, a .gz file's uncompressed; with `max_line`, refused (one ScenarioError)
    at the first line longer than that many bytes, before it is read whole (textfiles.LinesCapped)."""
    raw = gzip.open(path, "rb") if Path(path).suffix == ".gz" else open(path, "rb")  # noqa: SIM115 -- the caller's
    return raw if max_line is None else io.BufferedReader(LinesCapped(raw, path, max_line))


def header_cells(line: str) -> list[str]:
    """A CSV header line's column names as pandas reads them: quotes removed, spaces around each
    name dropped (read_csv's columns are stripped the same way: _stripped)."""
    return [c.strip() for c in next(csv.reader([line]), [])]
