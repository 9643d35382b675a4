"""CSV under one set of rules (`read_csv`): required columns, numbers where the `Column` rules
say so (finite, integer where counts belong, within range; `True` is not a number), at most
MAX_ROWS rows, never empty, each column named once. The file itself is read by textfiles.py's rules.
"""
from __future__ import annotations

import csv
import io
import re
import warnings
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

import numpy as np

from mtpsim.errors import ScenarioError, short
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.textfiles import check_lines, read_bytes, unsigned

MAX_ROWS = 5_000_000           # CSV rows
CELL_LIMIT = 2**31 - 1         # characters of one cell the record walk reads (pandas' C parser has no limit)


# the largest integer a float64 holds exactly, and so the largest an integer column reads: past it
# whether a cell is whole cannot be told, and casting to int64 wraps past 2**63
MAX_EXACT_INTEGER = 2**53


@dataclass(frozen=True)
class Column:
    """What a CSV column must hold: numbers (`integer` for counts) at least `low` (strictly
    above it when `above`) and at most `high`; or `text`."""

    low: float | None = None
    above: bool = False
    high: float | None = None
    integer: bool = False
    text: bool = False
    blank: bool = False  # empty cells allowed (read as NaN): a column that does not apply to every row
    note: str = ""  # what the values mean, said after the range where one is refused

    @property
    def top(self) -> float | None:
        """The highest value allowed: `high`, and for an integer column at most MAX_EXACT_INTEGER
        (a count read as 1e20 was cast to int64 as -9.2e18, and a profile's axis then failed
        math.log from inside a run; a plotted replica or seed took that negative number)."""
        if not self.integer:
            return self.high
        return MAX_EXACT_INTEGER if self.high is None else min(self.high, MAX_EXACT_INTEGER)

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None:
            kind += f" {'>' if self.above else '>='} {self.low:g}"
        if self.top is not None:
            kind += f" and <= {self.top:g}"
        return f"{kind} ({self.note})" if self.note else kind


POSITIVE = Column(low=0, above=True)
NON_NEGATIVE = Column(low=0)
COUNT = Column(low=0, integer=True)
TEXT = Column(text=True)


class CsvRecords:
    """Where each data record of a CSV starts in its file, as pandas counts records (blank and
    whitespace-only lines skipped, a quoted cell perhaps spanning lines), and the text of a
    record's cells: found by reading the file again with the csv module, on first use only (an
    error's row, a cell pandas read as missing), so reading a good file never pays for it.
    `opener` gives the file's bytes from the start (picklable: a partial of a module function)."""

    def __init__(self, opener: Callable[[], BinaryIO], skipinitialspace: bool = False):
        self.opener, self.skipinitialspace = opener, skipinitialspace
        self.lines = array("q")  # the file line each record starts on, as far as read

    def line(self, record: int) -> int:
        """The file line (the header's is 1, for a file that opens with it) of data record
        `record` (0-based, as pandas numbers rows); record + 2 if the file cannot be read again."""
        if record >= len(self.lines):
            self._scan(record)
        return self.lines[record] if record < len(self.lines) else record + 2

    def cell(self, record: int, column: str) -> str | None:
        """The text of data record `record`'s cell in `column` (None: the record has no such cell)."""
        found = self._scan(record, column)
        return found if isinstance(found, str) else None

    def first_ragged(self) -> tuple[int, int, int] | None:
        """(the file line, its field count, the header's) of the first data record holding more
        fields than the header, which pandas' own messages place by no file line; None if none
        (or the file cannot be read again)."""
        header = None
        for start, fields in self._records():
            if header is None:
                header = fields
            elif len(fields) > len(header):
                return start, len(fields), len(header)
        return None

    def _scan(self, record: int, column: str | None = None):
        """Read the records up to `record`, noting where each starts; the text of its cell in
        `column` when asked."""
        self.lines = array("q")
        header = None
        for start, fields in self._records():
            if header is None:
                header = [f.strip() for f in fields]
                continue
            self.lines.append(start)
            if len(self.lines) > record:
                at = header.index(column) if column in header else len(fields)
                return fields[at] if at < len(fields) else None
        return None

    def _records(self) -> Iterator[tuple[int, list[str]]]:
        """(the file line it starts on, its fields) of each record, the header's first, as pandas
        reads them (blank and whitespace-only lines skipped); none past a point the file can no
        longer be read (the callers then fall back to counting rows)."""
        csv.field_size_limit(CELL_LIMIT)  # a cell as long as pandas reads (the csv module stops at 128 KiB)
        try:
            with self.opener() as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as text:
                reader, end = csv.reader(text, skipinitialspace=self.skipinitialspace), 0
                for fields in reader:
                    start, end = end + 1, reader.line_num
                    if len(fields) <= 1 and not "".join(fields).strip():
                        continue  # a blank line: pandas skips it
                    yield start, fields
        except (OSError, ValueError, csv.Error):
            return


def record_row(values: pd.Series, position: int, records: CsvRecords | None) -> int:
    """The file row of a column's value at `position`: its record (the frame's index, which
    counts on across a streamed file's chunks) where it lies, else the record + 2 (the header
    being row 1, with no blank line between rows)."""
    record = int(values.index[position])
    return records.line(record) if records is not None else record + 2


def as_written(values: pd.Series, position: int, name: str, records: CsvRecords | None):
    """A column's value at `position` for an error to show: as read, or where pandas read it as
    missing, its text in the file (`nan`, `NA`, `None` are words, not empty cells); "" for an
    empty cell or a row shorter than the header."""
    cell = values.iloc[position]
    if isinstance(cell, str) or not pd.isna(cell):
        return cell
    written = records.cell(int(values.index[position]), name) if records is not None else None
    return (written or "").strip()


def read_csv(path: str | Path, columns: dict[str, Column], where: str | None = None, *,
             max_rows: int = MAX_ROWS, optional: tuple[str, ...] = (), written_whole: str | None = None) -> pd.DataFrame:
    """A CSV whose `columns` (those in `optional` may be absent) hold what their rules say.
    Numeric columns come back as float64 (int64 where `integer`); other columns as pandas reads them.
    `written_whole`: the file is mtpsim's own output, each row ended by a line end, so one whose
    last row has none was cut off (its last number read short, `0.0157084` as `0.015`): refused,
    with this hint at the cause."""
    where = where or str(path)
    data = read_bytes(path, where)  # checked UTF-8: parsed as bytes, as the C parser reads them
    if written_whole is not None and data and not data.endswith(b"\n"):
        raise ScenarioError(where, "", f"truncated: its last row is cut off ({written_whole})")
    check_lines(data, where)  # a row of a million fields would take pandas minutes
    try:
        with warnings.catch_warnings():  # rows longer than the header warn (index_col=False): refuse them
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(io.BytesIO(data), nrows=max_rows + 1, index_col=False)
    except pd.errors.EmptyDataError:
        raise ScenarioError(where, "", "empty: no header and no rows") from None
    except (pd.errors.ParserWarning, pd.errors.ParserError, ValueError) as exc:
        raise unreadable_csv(exc, where, CsvRecords(partial(io.BytesIO, data))) from None
    if len(df) > max_rows:
        raise ScenarioError(where, "", f"more than {max_rows:,} rows")
    _unique_header(data, where)
    records = CsvRecords(partial(io.BytesIO, data))
    for name, rule in columns.items():
        if name not in df.columns:
            if name in optional:
                continue
            needed = ", ".join(c for c in columns if c not in optional)
            near = next((c for c in df.columns if isinstance(c, str) and c.strip().lower() == name), None)
            found = f"; the header has {short(near, 40)}: write it as {name}, no spaces, lower case" if near else ""
            raise ScenarioError(where, name, f"missing column (columns needed: {needed}){found}")
        if not rule.text:
            df[name] = _numbers(df[name], rule, where, name, records)
    if df.empty:
        raise ScenarioError(where, "", "no rows")
    df.attrs["records"] = records  # where each row starts in the file, for the errors found later (first_repeat_rows)
    return df


def unreadable_csv(exc: Exception, where: str, records: CsvRecords) -> ScenarioError:
    """pandas' refusal of a CSV as one line: a row with more fields than the header at its file
    line (`records` finds it: pandas' C parser says "Expected 3 fields in line 3, saw 4", counting
    records, not lines, and its warning where every row is long names none), else its own words."""
    ragged = isinstance(exc, pd.errors.ParserWarning) or re.search(r"Expected \d+ fields in line \d+", str(exc))
    found = records.first_ragged() if ragged else None
    if found is not None:
        line, saw, header = found
        return ScenarioError(where, f"line {line}", f"{saw} fields where the header has {header} (ragged rows): is it a "
                             "CSV table?")
    if ragged:
        return ScenarioError(where, "", "rows hold more fields than the header names (ragged rows)")
    return ScenarioError(where, "", f"not a readable CSV: {short(str(exc).strip(), 160)[1:-1]}")


def first_repeat_rows(df: pd.DataFrame, columns: list[str] | None = None) -> tuple[int, int] | None:
    """The positions of the first row some later row repeats on `columns` (all when None) and of
    that later row: a pair that really are copies of each other (file_row says where each is)."""
    later = df.duplicated(subset=columns, keep="first").to_numpy().nonzero()[0]
    if not len(later):
        return None
    j = int(later[0])
    key = df.columns if columns is None else columns
    before, row = df[key].iloc[:j], df[key].iloc[j]
    same = (before == row) | (before.isna() & row.isna())  # duplicated() counts two blanks as one value
    return int(same.all(axis=1).to_numpy().nonzero()[0][0]), j


def file_row(df: pd.DataFrame, position: int) -> int:
    """The file row (header row 1) of the row at `position`: where read_csv found it (its
    `records`: a blank line between rows moves the numbers), else counted from the header."""
    records = df.attrs.get("records")
    if isinstance(records, CsvRecords):
        return records.line(int(df.index[position]))
    return position + 2


def _unique_header(data: bytes, where: str) -> None:
    """pandas renames a repeated column (`x`, `x.1`): which one is meant is then a guess, so refuse it."""
    header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    seen = set()
    for name in header:
        if name in seen:
            raise ScenarioError(where, short(name, 40)[1:-1], "column named twice in the header")
        seen.add(name)


def _numbers(values: pd.Series, rule: Column, where: str, name: str, records: CsvRecords | None = None) -> pd.Series:
    """A column as numbers under `rule`, or a ScenarioError naming the first bad row by its file
    line (`records`; without them, rows count from 2, the header being row 1) and its text as
    written: pandas reads `nan`, `NA` or `None` as missing, and such a cell is not empty."""
    # a column pandas read as numbers holds no true/false; only a mixed (object) one is looked through
    mixed = not pd.api.types.is_numeric_dtype(values.dtype)
    if values.dtype == bool or mixed and values.map(lambda v: isinstance(v, (bool, np.bool_))).any():
        raise ScenarioError(where, name, "holds true/false where numbers belong")
    numeric = unsigned(pd.to_numeric(values, errors="coerce").astype(float))  # -0.0 as 0.0, as YAML and JSON read it
    x = numeric.to_numpy()  # the checks on the array: a profile table's columns run to 100k rows
    bad = ~np.isfinite(x)
    if rule.integer:
        bad |= x != np.round(x)
    if rule.low is not None:
        bad |= (x <= rule.low) if rule.above else (x < rule.low)
    if rule.top is not None:
        bad |= x > rule.top
    if rule.blank:
        bad &= ~values.isna().to_numpy()
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        row, cell = record_row(values, position, records), as_written(values, position, name, records)
        if cell == "":  # an empty cell, or a row shorter than the header
            raise ScenarioError(where, name, f"row {row}: empty (a missing value, or fewer fields than the "
                                f"header); must be {rule.describe()}")
        shown = short(cell, 40) if isinstance(cell, str) else str(cell)
        raise ScenarioError(where, name, f"row {row}: {shown} is not {rule.describe()}")
    return numeric.astype("int64") if rule.integer and not numeric.isna().any() else numeric


check_numbers = _numbers  # for readers that stream a CSV in chunks (mtpsim/tracefiles)
