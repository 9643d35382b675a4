"""Streaming a trace file in checked chunks of its rows (a 10M-row trace is never held whole):
CSV through pandas' chunked reader, JSON lines one line at a time. Each chunk's columns are
checked as they come (formats.py's LENGTH and TIME) and a bad cell is one ScenarioError naming
the file, the column and the row.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Iterator
from functools import partial

import numpy as np

from mtpsim.csvfiles import CsvRecords, as_written, record_row, unreadable_csv
from mtpsim.errors import ScenarioError, short
from mtpsim.files import READ_ERRORS, Column, check_numbers, strict_json, unreadable
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.schema import MAX_TRACE_S
from mtpsim.textnumbers import first_repeat
from mtpsim.tracefiles.formats import (
    CSV_LINE_BYTES,
    JSON_LINE_BYTES,
    LENGTH,
    TIME,
    Format,
    RawChunk,
    header_cells,
    open_trace,
    sniff,
)

CHUNK_ROWS = 1 << 16   # rows per streamed chunk (~1.5 MB of arrays)
# a date and a time of day, to the minute at least: 2023-11-16 18:15, or ISO 8601's basic 20231116T1815
DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\d{8}T\d{4}")


def read_chunks(path: str, fmt: Format, chunk_rows: int | None = None) -> Iterator[RawChunk]:
    """The file's rows in checked chunks of `chunk_rows` (None: CHUNK_ROWS), in file order."""
    reader = _jsonl_chunks if fmt.jsonl else _csv_chunks
    try:
        yield from reader(path, fmt, chunk_rows or CHUNK_ROWS)
    except UnicodeDecodeError as exc:
        raise ScenarioError(path, "", f"not UTF-8 text ({exc.reason})") from None
    except READ_ERRORS as exc:
        raise unreadable(path, exc) from None


def _stripped(df):
    """A chunk whose column names carry no spaces a header put around them (`arrival_s ,`)."""
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _csv_chunks(path: str, fmt: Format, chunk_rows: int) -> Iterator[RawChunk]:
    lines = sniff(path).removeprefix("\ufeff").splitlines()  # any line ending: \n, \r\n or a lone \r
    with open_trace(path, CSV_LINE_BYTES) as f:
        header = header_cells(lines[0] if lines else "")
        again = first_repeat(header)
        twice = None if again is None else header[again]
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
            records, origin = CsvRecords(partial(open_trace, path), skipinitialspace=True), None
            for df in map(_stripped, _chunks_refusing_long_rows(reader)):
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
        except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
            raise unreadable_csv(exc, path, CsvRecords(partial(open_trace, path), skipinitialspace=True)) from None


def _chunks_refusing_long_rows(reader) -> Iterator[pd.DataFrame]:
    """The reader's chunks; rows all longer than the header (pandas warns and drops the extra
    fields, index_col=False) raise its warning, which the caller words as an uneven row's error."""
    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            try:
                df = next(reader)
            except StopIteration:
                return
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
    with open_trace(path, JSON_LINE_BYTES) as f:
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
        and (rule.top is None or value <= rule.top)
    if not ok:
        raise ScenarioError(path, key, f"row {line_no}: {short(value, 40)} is not {rule.describe()}")
    return value
