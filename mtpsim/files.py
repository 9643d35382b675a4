"""Reading the files users hand us (scenarios, catalog entries, profile tables and meta, traces,
histograms) under one set of rules, so a bad file is one ScenarioError and never a traceback,
a hang or a silently odd number.

Every file:
- is at most MAX_FILE_BYTES (after gunzipping a `.gz`), so nothing reads the machine's memory away;
- is UTF-8 text without NUL bytes; a binary file is called binary.

YAML (`load_yaml`, `parse_yaml`):
- safe constructors only: a custom or `!!python` tag is an error, never code;
- a duplicate key is an error naming its dotted key path (YAML would keep the last silently);
- nesting is at most MAX_DEPTH levels and aliases may expand to at most MAX_VALUES values (an
  alias bomb is refused before anything walks it);
- floats follow YAML 1.2 as well as 1.1: `1e9` and `989e12` are numbers, not strings.

CSV (`read_csv`): required columns, numbers where the `Column` rules say so (finite, integer
where counts belong, within range; `True` is not a number), at most MAX_ROWS rows, never empty.

Error messages quote at most 80 characters of a value (`short`).

Outputs have their own rule: mtpsim/outputs.py `writing` (re-exported here).
"""
from __future__ import annotations

import functools
import gzip
import io
import re
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from mtpsim.errors import ScenarioError, short
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.outputs import writing  # noqa: F401 (callers of mtpsim.files.writing keep working)

MAX_FILE_BYTES = 512 * 2**20   # the largest file read (a 1M-request trace is ~25 MB)
MAX_YAML_BYTES = 4 * 2**20     # scenarios and catalog entries are a few kB
MAX_DEPTH = 64                 # YAML nesting levels
MAX_VALUES = 200_000           # YAML values after alias expansion
MAX_ROWS = 5_000_000           # CSV rows


def read_text(path: str | Path, where: str | None = None, limit: int = MAX_FILE_BYTES) -> str:
    """A file's text: at most `limit` bytes, UTF-8, not binary. `.gz` files are gunzipped."""
    return read_bytes(path, where, limit).decode("utf-8")


# what reading a file, plain or gzipped, can raise: gzip.BadGzipFile is an OSError; a cut-off
# stream an EOFError; a bad deflate stream zlib's error
READ_ERRORS = (OSError, EOFError, zlib.error)


def unreadable(where: str, exc: BaseException) -> ScenarioError:
    """The one line for a file a READ_ERRORS exception stopped reading."""
    reason = "a corrupt or cut-off .gz file" if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)) \
        else getattr(exc, "strerror", None) or str(exc)
    return ScenarioError(where, "", f"cannot read: {short(reason, 160)[1:-1]}")


def read_bytes(path: str | Path, where: str | None = None, limit: int = MAX_FILE_BYTES) -> bytes:
    """`read_text`'s checks, the text left as its UTF-8 bytes (what the CSV reader parses)."""
    path = Path(path)
    where = where or str(path)
    try:
        if not path.is_file():
            raise ScenarioError(where, "", "no such file")
        if path.stat().st_size > limit:
            raise ScenarioError(where, "", f"{path.stat().st_size:,} bytes is over the {limit:,}-byte limit")
        data = path.read_bytes()
        if path.suffix == ".gz":
            with gzip.open(io.BytesIO(data)) as f:
                data = f.read(limit + 1)
            if len(data) > limit:
                raise ScenarioError(where, "", f"gunzips to over the {limit:,}-byte limit")
    except READ_ERRORS as exc:
        raise unreadable(where, exc) from None
    if b"\0" in data:
        raise ScenarioError(where, "", "a binary file, not text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(where, "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    return data


def version(path: str | Path) -> tuple:
    """What changes when a file, or any file in a folder, changes: the resolved path and each
    file's (name, mtime, size). () for a path that does not exist (its reader then says why)."""
    path = Path(path)
    files = sorted(path.iterdir()) if path.is_dir() else [path] if path.exists() else []
    return (str(path.resolve()), *((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files))


def read_once(reader):
    """`reader(path, *args)`, run once per version of the file at `path` (the last 8 kept): a
    sweep validates and then runs every point from the same trace, histogram or profile. What
    it returns is shared by every caller, so it must not be changed in place."""
    cached = functools.lru_cache(maxsize=8)(lambda path, _version, *args: reader(path, *args))

    @functools.wraps(reader)
    def read(path, *args):
        return cached(path, version(path), *args)
    read.cache_clear = cached.cache_clear
    return read


# ---------------------------------------------------------------------------------------- YAML
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_MERGE = "tag:yaml.org,2002:merge"
_NUMERIC_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool")}


class _Problem(Exception):
    """Raised inside the loader with the dotted path where it happened."""

    def __init__(self, path: list, reason: str):
        self.key, self.reason = ".".join(str(p) for p in path if p is not None), reason


class _Loader(yaml.SafeLoader):
    """SafeLoader that tracks the key path it is composing, refuses duplicate keys and deep nesting."""

    def __init__(self, stream):
        super().__init__(stream)
        self._path: list = []

    def compose_node(self, parent, index):
        if len(self._path) > MAX_DEPTH:
            raise _Problem(self._path, f"nested deeper than {MAX_DEPTH} levels")
        self._path.append(index.value if isinstance(index, yaml.ScalarNode) else index)
        try:
            return super().compose_node(parent, index)
        finally:
            self._path.pop()

    def compose_mapping_node(self, anchor):
        node = super().compose_mapping_node(anchor)
        seen: set[str] = set()
        values: dict = {}  # keys as Python reads them: `1`, `1.0` and `true` are one dict key
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE:
                if key.value in seen:
                    raise _Problem([*self._path, key.value[:60]],
                                   f"duplicate key (again on line {key.start_mark.line + 1})")
                seen.add(key.value)
                if key.tag in _NUMERIC_TAGS:
                    value = self.construct_object(key)
                    if value in values:
                        raise _Problem([*self._path, key.value[:60]], f"the same key as {values[value]!r} "
                                       f"(equal as numbers; line {key.start_mark.line + 1})")
                    values[value] = key.value[:60]
        return node


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values the node stands for once aliases are expanded (each shared node counted
    every time it is used), stopping early past MAX_VALUES."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_VALUES + 1  # a node reached again while being counted: a cycle
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        children = []
    size = 1
    for child in children:
        size += _expanded_size(child, memo)
        if size > MAX_VALUES:
            break
    memo[id(node)] = size
    return size


def parse_yaml(text: str, where: str) -> Any:
    """YAML text -> Python values under the rules above; ScenarioError(where, key path, reason)."""
    documents = _parse(text, where, multi=False)
    return documents[0] if documents else None


def _parse(text: str, where: str, multi: bool) -> list:
    """The documents of a YAML text (at most one unless `multi`), each checked as above."""
    loader = _Loader(text)

    def nodes():
        if multi:
            while loader.check_node():
                yield loader.get_node()
        elif (node := loader.get_single_node()) is not None:
            yield node

    try:
        documents = []
        for node in nodes():
            if _expanded_size(node, {}) > MAX_VALUES:
                raise ScenarioError(where, "", f"expands to more than {MAX_VALUES:,} values (aliases repeated too often)")
            documents.append(loader.construct_document(node))
        return documents
    except _Problem as exc:
        raise ScenarioError(where, exc.key, exc.reason) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark else ""
        problem = short(getattr(exc, "problem", None) or str(exc), 200)[1:-1]
        kind = "YAML tag not allowed" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
        raise ScenarioError(where, line, f"{kind}: {problem}") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
        raise ScenarioError(where, "", f"YAML value not readable: {short(str(exc), 120)[1:-1]}") from None
    finally:
        loader.dispose()


def load_yaml_documents(path: str | Path, where: str | None = None) -> list:
    """Every document of a multi-document YAML file (a run's scenario.resolved.yaml, one per
    point, can exceed MAX_YAML_BYTES: the general file limit applies)."""
    where = where or str(path)
    return _parse(read_text(path, where), where, multi=True)


def load_yaml(path: str | Path, where: str | None = None) -> Any:
    """A YAML file's contents (None when empty)."""
    where = where or str(path)
    return parse_yaml(read_text(path, where, MAX_YAML_BYTES), where)


# ----------------------------------------------------------------------------------------- CSV
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

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None:
            kind += f" {'>' if self.above else '>='} {self.low:g}"
        if self.high is not None:
            kind += f" and <= {self.high:g}"
        return kind


POSITIVE = Column(low=0, above=True)
NON_NEGATIVE = Column(low=0)
COUNT = Column(low=0, integer=True)
TEXT = Column(text=True)


def read_csv(path: str | Path, columns: dict[str, Column], where: str | None = None, *,
             max_rows: int = MAX_ROWS, optional: tuple[str, ...] = ()) -> pd.DataFrame:
    """A CSV whose `columns` (those in `optional` may be absent) hold what their rules say.
    Numeric columns come back as float64 (int64 where `integer`); other columns as pandas reads them."""
    where = where or str(path)
    data = read_bytes(path, where)  # checked UTF-8: parsed as bytes, as the C parser reads them
    try:
        with warnings.catch_warnings():  # rows longer than the header warn (index_col=False): refuse them
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(io.BytesIO(data), nrows=max_rows + 1, index_col=False)
    except pd.errors.ParserWarning:
        raise ScenarioError(where, "", "rows hold more fields than the header names (ragged rows)") from None
    except pd.errors.EmptyDataError:
        raise ScenarioError(where, "", "empty: no header and no rows") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise ScenarioError(where, "", f"not a readable CSV: {short(str(exc).strip(), 160)[1:-1]}") from None
    if len(df) > max_rows:
        raise ScenarioError(where, "", f"more than {max_rows:,} rows")
    _unique_header(data, where)
    for name, rule in columns.items():
        if name not in df.columns:
            if name in optional:
                continue
            needed = ", ".join(c for c in columns if c not in optional)
            raise ScenarioError(where, name, f"missing column (columns needed: {needed})")
        if not rule.text:
            df[name] = _numbers(df[name], rule, where, name)
    if df.empty:
        raise ScenarioError(where, "", "no rows")
    return df


def _unique_header(data: bytes, where: str) -> None:
    """pandas renames a repeated column (`x`, `x.1`): which one is meant is then a guess, so refuse it."""
    header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    seen = set()
    for name in header:
        if name in seen:
            raise ScenarioError(where, short(name, 40)[1:-1], "column named twice in the header")
        seen.add(name)


def _numbers(values: pd.Series, rule: Column, where: str, name: str, first_row: int = 2) -> pd.Series:
    """A column as numbers under `rule`, or a ScenarioError naming the first bad row (rows count
    from 2, the header being row 1; a later chunk of a streamed file starts at `first_row`)."""
    # a column pandas read as numbers holds no true/false; only a mixed (object) one is looked through
    mixed = not pd.api.types.is_numeric_dtype(values.dtype)
    if values.dtype == bool or mixed and values.map(lambda v: isinstance(v, (bool, np.bool_))).any():
        raise ScenarioError(where, name, "holds true/false where numbers belong")
    numeric = pd.to_numeric(values, errors="coerce").astype(float)
    x = numeric.to_numpy()  # the checks on the array: a profile table's columns run to 100k rows
    bad = ~np.isfinite(x)
    if rule.integer:
        bad |= x != np.round(x)
    if rule.low is not None:
        bad |= (x <= rule.low) if rule.above else (x < rule.low)
    if rule.high is not None:
        bad |= x > rule.high
    if rule.blank:
        bad &= ~values.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        cell = values.iloc[row]
        if not isinstance(cell, str) and pd.isna(cell):  # an empty cell, or a row shorter than the header
            raise ScenarioError(where, name, f"row {row + first_row}: empty (a missing value, or fewer fields than the "
                                f"header); must be {rule.describe()}")
        shown = short(cell, 40) if isinstance(cell, str) else str(cell)
        raise ScenarioError(where, name, f"row {row + first_row}: {shown} is not {rule.describe()}")
    return numeric.astype("int64") if rule.integer and not numeric.isna().any() else numeric


check_numbers = _numbers  # for readers that stream a CSV in chunks (mtpsim/tracefiles)
