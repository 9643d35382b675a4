"""The trace formats mtpsim reads, as records, and the readers that stream a file of each in
checked chunks (a 10M-row trace is never held whole).

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
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from mtpsim.csvfiles import CsvRecords, as_written, record_row
from mtpsim.errors import ScenarioError, short
from mtpsim.files import READ_ERRORS, Column, check_numbers, strict_json, unreadable
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.schema import MAX_TOKENS, MAX_TRACE_S

CHUNK_ROWS = 1 << 16   # rows per streamed chunk (~1.5 MB of arrays)
SNIFF_BYTES = 1 << 16  # what is read to recognise the format and refuse binary files
LENGTH = Column(low=0, high=MAX_TOKENS, integer=True)
TIME = Column(low=0, high=MAX_TRACE_S)
# a date and a time of day, to the minute at least: 2023-11-16 18:15, or ISO 8601's basic 20231116T1815
DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\d{8}T\d{4}")


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
        with _open(path) as f:
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


def read_chunks(path: str, fmt: Format, chunk_rows: int | None = None) -> Iterator[RawChunk]:
    """The file's rows in checked chunks of `chunk_rows` (None: CHUNK_ROWS), in file order."""
    reader = _jsonl_chunks if fmt.jsonl else _csv_chunks
    try:
        yield from reader(path, fmt, chunk_rows or CHUNK_ROWS)
    except UnicodeDecodeError as exc:
        raise ScenarioError(path, "", f"not UTF-8 text ({exc.reason})") from None
    except READ_ERRORS as exc:
        raise unreadable(path, exc) from None


def _open(path: str):
    return gzip.open(path, "rb") if Path(path).suffix == ".gz" else open(path, "rb")


def header_cells(line: str) -> list[str]:
    """A CSV header line's column names as pandas reads them: quotes removed, spaces around each
    name dropped (read_csv's columns are stripped the same way: _stripped)."""
    return [c.strip() for c in next(csv.reader([line]), [])]


def _stripped(df):
    """A chunk whose column names carry no spaces a header put around them (`arrival_s ,`)."""
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _csv_chunks(path: str, fmt: Format, chunk_rows: int) -> Iterator[RawChunk]:
    lines = sniff(path).removeprefix("\ufeff").splitlines()  # any line ending: \n, \r\n or a lone \r
    with _open(path) as f:
        header = header_cells(lines[0] if lines else "")
        twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
        if twice is not None:  # pandas would rename the second (`x.1`): which one is meant is a guess
            raise ScenarioError(path, short(twice, 40)[1:-1], "column named twice in the header")
        for col in fmt.columns:
            if col not in header:
                raise ScenarioError(path, col, f"missing column (format {fmt.name} needs {', '.join(fmt.columns)}; "
                                    f"the header has {short(','.join(header), 120)})")
        f.seek(0)
        try:
            # every column read (usecols would drop a longer row's extra fields without a word)
            reader = pd.read_csv(f, chunksize=chunk_rows, skipinitialspace=True, encoding="utf-8-sig", index_col=False,
                                 dtype={fmt.time: str} if fmt.seconds_per_unit is None else None)
            records, origin = CsvRecords(partial(_open, path), skipinitialspace=True), None
            for df in map(_stripped, _chunks_refusing_long_rows(reader, path)):
                if df.empty:
                    continue
                if fmt.seconds_per_unit is None:
                    time_s, origin = _datetimes(df[fmt.time], origin, path, fmt.time, records)
                else:
                    time_s = check_numbers(df[fmt.time], TIME, path, fmt.time, records).to_numpy(float) * \
                        fmt.seconds_per_unit
                lengths = [check_numbers(df[c], LENGTH, path, c, records).to_numpy(np.int64) for c in (fmt.input, fmt.output)]
                yield RawChunk(int(df.index[0]), time_s, *lengths, records=records)
        except pd.errors.EmptyDataError:
            raise ScenarioError(path, "", "no rows") from None
        except pd.errors.ParserError as exc:
            detail = short(str(exc).strip(), 160)[1:-1]
            if "Expected" in detail:  # the C parser: "Expected 3 fields in line 3, saw 4"
                raise ScenarioError(path, "", f"a row holds more fields than the header names ({detail})") from None
            raise ScenarioError(path, "", f"not a readable CSV: {detail}") from None


def _chunks_refusing_long_rows(reader, path: str) -> Iterator[pd.DataFrame]:
    """The reader's chunks; rows all longer than the header (pandas warns and drops the extra
    fields, index_col=False) are one ScenarioError, as an uneven row is (the parser's error)."""
    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            try:
                df = next(reader)
            except StopIteration:
                return
            except pd.errors.ParserWarning as exc:
                detail = short(str(exc), 100)[1:-1]
                raise ScenarioError(path, "", f"rows hold more fields than the header names ({detail})") from None
        yield df


def _datetimes(values: pd.Series, origin: int | None, path: str, name: str,
               records: CsvRecords) -> tuple[np.ndarray, int]:
    """Wall-clock datetimes as seconds from `origin` (ns since the epoch; None: this chunk's
    first row), and the origin. Each must give a date and a time of day (DATETIME): ISO 8601's
    reduced precision would read `2023` as 2023-01-01, so a column of seconds under an azure
    header replayed one request a year."""
    text = values.str.strip()
    try:
        parsed = pd.to_datetime(text, format="ISO8601", errors="coerce")
    except ValueError:  # some rows with a UTC offset and some without, or with different ones
        rows = f"{record_row(values, 0, records)}..{record_row(values, len(values) - 1, records)}"
        raise ScenarioError(path, name, f"rows {rows}: datetimes with and without a time zone, or with different "
                            "ones: write them all one way") from None
    bad = parsed.isna().to_numpy() | ~text.str.match(DATETIME.pattern, na=False).to_numpy(bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        cell = as_written(values, i, name, records)
        raise ScenarioError(path, name, f"row {record_row(values, i, records)}: {short(cell, 40) if cell else 'an empty cell'} "
                            "is not a datetime (YYYY-MM-DD HH:MM:SS.fffffff)")
    ns = parsed.to_numpy("datetime64[ns]").astype(np.int64)
    origin = int(ns[0]) if origin is None else origin
    seconds = (ns - origin) / 1e9
    past = np.flatnonzero(np.abs(seconds) > MAX_TRACE_S)
    if len(past):
        raise ScenarioError(path, name, f"row {record_row(values, int(past[0]), records)}: "
                            f"{short(values.iloc[int(past[0])], 40)} is "
                            f"{abs(seconds[past[0]]):.3g} s from the first row, past the {MAX_TRACE_S:g} s a trace spans")
    return seconds, origin


def _jsonl_chunks(path: str, fmt: Format, chunk_rows: int) -> Iterator[RawChunk]:
    rows: list[tuple] = []
    numbers: list[int] = []
    with _open(path) as f:
        for line_no, line in enumerate(io.TextIOWrapper(f, encoding="utf-8"), start=1):
            if not line.strip():
                continue
            rows.append(_json_row(line, line_no, path, fmt))
            numbers.append(line_no)
            if len(rows) == chunk_rows:
                yield _raw(numbers, rows, fmt)
                rows, numbers = [], []
    if rows:
        yield _raw(numbers, rows, fmt)


def _raw(numbers: list[int], rows: list[tuple], fmt: Format) -> RawChunk:
    time_s = np.array([r[0] for r in rows], float) * fmt.seconds_per_unit
    spaced = numbers[-1] - numbers[0] != len(numbers) - 1  # blank lines between: keep each row's number
    return RawChunk(numbers[0], time_s, np.array([r[1] for r in rows], np.int64), np.array([r[2] for r in rows], np.int64),
                    [r[3] for r in rows] if fmt.blocks else None, numbers if spaced else None)


def _json_row(line: str, line_no: int, path: str, fmt: Format) -> tuple:
    """(timestamp, input, output, block ids or None) of one JSON line, checked."""
    try:
        obj = strict_json(line)  # a key twice (the last would win) or NaN: refused
    except ValueError as exc:
        raise ScenarioError(path, "", f"row {line_no}: not a JSON object ({getattr(exc, 'msg', exc)})") from None
    except RecursionError:
        raise ScenarioError(path, "", f"row {line_no}: nested too deep to be a trace row") from None
    if not isinstance(obj, dict):
        raise ScenarioError(path, "", f"row {line_no}: not a JSON object")
    values = []
    for key, rule in zip(fmt.columns, (TIME, LENGTH, LENGTH)):
        if key not in obj:
            raise ScenarioError(path, key, f"row {line_no}: missing key (format {fmt.name} needs {', '.join(fmt.columns)})")
        values.append(_json_number(obj[key], rule, path, key, line_no))
    ids = obj.get(fmt.blocks) if fmt.blocks else None
    if ids is not None and not (isinstance(ids, list) and all(type(i) is int and i >= 0 for i in ids)):
        raise ScenarioError(path, fmt.blocks, f"row {line_no}: {short(ids, 40)} is not a list of non-negative integers")
    return (*values, ids)


def _json_number(value, rule: Column, path: str, key: str, line_no: int) -> float:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:  # past a float's reach
        raise ScenarioError(path, key, f"row {line_no}: a {len(str(abs(value)))}-digit number is not {rule.describe()}")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (not rule.integer or float(value).is_integer()) and value >= rule.low \
        and (rule.high is None or value <= rule.high)
    if not ok:
        raise ScenarioError(path, key, f"row {line_no}: {short(value, 40)} is not {rule.describe()}")
    return value
