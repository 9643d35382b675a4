"""Tables as rows, written and printed as pandas would, without importing pandas (with pyarrow,
~0.2-0.3 s): `mtpsim run` keeps its summary and records as rows (results.Results) and writes
them here. A Table's columns are typed as a DataFrame of the same rows types them (`kind_of`),
so that summary.csv and the printed table read as before, byte for byte:

- `write_csv`: DataFrame.to_csv(index=False): ints as written, floats as numpy's str of a
  float64 (pandas' own conversion; Python's repr is the same shortest round-trip text), missing
  values empty, csv's minimal quoting;
- `to_string`: DataFrame.to_string(index=False, float_format=...): each column right-justified
  to its widest cell or header (no cell cut), a numeric column's header one space wider,
  columns one space apart.
"""
from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtpsim.outputs import writing


def missing(v) -> bool:
    """What pandas counts as missing: None and NaN."""
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def key_labels(keys: list[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """Each dotted key -> the shortest tail of its parts that no other key (nor a name in `taken`)
    ends with, and that starts at a named part rather than an integer one: swept
    workload.input_len.max and workload.output_len.max read `input_len.max` and `output_len.max`
    (by the last part alone, two columns under one name), a policy's batch entry
    `steps_by_batch.8` (not `8`)."""
    taken = set(taken)
    return {key: _shortest_tail(key, [k for k in keys if k != key], taken) for key in keys}


def _shortest_tail(key: str, others: list[str], taken: set[str]) -> str:
    parts = key.split(".")
    for n in range(1, len(parts)):
        tail = ".".join(parts[-n:])
        if parts[-n].isdigit() or tail in taken:
            continue
        if not any(other == tail or other.endswith("." + tail) for other in others):
            return tail
    return key


def _sort(t: type) -> str:
    """A value's type as kind_of reads it."""
    if issubclass(t, (bool, np.bool_)):
        return "bool"
    if issubclass(t, (int, np.integer)):
        return "int"
    if issubclass(t, (float, np.floating)):
        return "float"
    return "none" if t is type(None) else "other"


def kind_of(values: list) -> str:
    """The dtype a DataFrame gives a column of `values`: `bool` (all bools), `int` (all ints),
    `float` (numbers, or numbers and missing values: NaN, None), else `object` (None alone too).
    Read from the set of the values' types, so a long column costs no Python per value."""
    sorts = {_sort(t) for t in set(map(type, values))}
    if sorts == {"bool"} or sorts == {"int"}:
        return sorts.pop()
    if sorts and sorts <= {"int", "float", "none"} and sorts != {"none"}:
        return "float"
    return "float" if not sorts else "object"


@dataclass
class Table:
    """Named columns of equal length, each with its kind (kind_of)."""

    columns: dict[str, list]
    kinds: dict[str, str]

    @classmethod
    def of_rows(cls, rows: list[dict]) -> Table:
        """Rows of dicts -> columns in order of first appearance, a missing key NaN (as
        pd.DataFrame(rows) makes them)."""
        names = list(dict.fromkeys(k for row in rows for k in row))
        columns = {k: [row.get(k, math.nan) for row in rows] for k in names}
        return cls(columns, {k: kind_of(v) for k, v in columns.items()})

    @classmethod
    def of_columns(cls, columns: dict[str, list]) -> Table:
        return cls(columns, {k: kind_of(v) for k, v in columns.items()})

    @classmethod
    def of_tuples(cls, names: list[str], rows: Iterable[tuple]) -> Table:
        rows = list(rows)
        return cls.of_columns({k: list(col) for k, col in zip(names, zip(*rows))} if rows else {k: [] for k in names})

    @classmethod
    def of_frame(cls, frame) -> Table:
        """A DataFrame's columns, with their dtypes' kinds."""
        kinds = {"b": "bool", "i": "int", "u": "int", "f": "float"}
        return cls({c: frame[c].tolist() for c in frame.columns},
                   {c: kinds.get(getattr(frame[c].dtype, "kind", "O"), "object") for c in frame.columns})

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    def set(self, name: str, values: list, kind: str | None = None) -> None:
        """Add or replace a column (kept in its place if it is there)."""
        self.columns[name], self.kinds[name] = values, kind or kind_of(values)

    def drop(self, name: str) -> None:
        del self.columns[name], self.kinds[name]

    def rename(self, names: dict[str, str]) -> None:
        self.columns = {names.get(k, k): v for k, v in self.columns.items()}
        self.kinds = {names.get(k, k): v for k, v in self.kinds.items()}


def csv_cells(values: list, kind: str) -> list[str]:
    """One column's cells as DataFrame.to_csv writes a column of this kind."""
    if kind == "int":
        return list(map(str, values))
    if kind == "float":
        floats = np.array(values, dtype=np.float64)  # None -> NaN
        cells = list(map(repr, floats.tolist()))  # numpy's str of a float64, digit for digit, and faster
        for i in np.flatnonzero(np.isnan(floats)).tolist():
            cells[i] = ""
        return cells
    if set(map(type, values)) == {str}:
        return values
    return ["" if missing(v) else str(v) for v in values]


def write_csv(table: Table, path: Path) -> None:
    """The table as `path`, or a ScenarioError naming it (outputs.writing). Rows whose cells csv
    would not quote (`_plain`) are joined with commas as csv.writer joins them, ~5x faster on a
    run's iterations.csv; any other table goes through csv.writer."""
    cells = [csv_cells(v, table.kinds[k]) for k, v in table.columns.items()]
    with writing(path), open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(table.columns)
        if _plain(cells, [table.kinds[k] for k in table.columns]):
            if len(table):
                f.write("\n".join(map(",".join, zip(*cells))) + "\n")
        else:
            out.writerows(zip(*cells))


# what csv.writer (minimal quoting, "\n" lines) would quote a cell for, and NUL
_QUOTED = re.compile('[,"\r\n\0]')


def _plain(cells: list[list[str]], kinds: list[str]) -> bool:
    """Whether csv.writer writes each row of these columns as its cells joined by commas: two
    columns or more (one empty cell alone on a row is written `""`), and no cell holding what it
    quotes. Numbers' cells (csv_cells of an int or float column) never do."""
    return len(cells) > 1 and not any(_QUOTED.search("".join(column)) for column, kind in zip(cells, kinds)
                                      if kind not in ("int", "float"))


def _text_cells(values: list, kind: str, float_format: Callable[[float], str], na_rep: str = "NaN") -> list[str]:
    """One column's cells as DataFrame.to_string(index=False, float_format=..., na_rep=...) shows them."""
    if kind == "int":
        return [f"{v:d}" for v in values]
    if kind == "float":
        return [na_rep if missing(v) else float_format(v) for v in values]
    out = []
    for v in values:
        if v is None:
            out.append("None")
        elif missing(v):
            out.append(na_rep)
        elif isinstance(v, (float, np.floating)):
            out.append(float_format(v))
        else:
            out.append(str(v).replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n"))
    return out


def to_string(table: Table, float_format: Callable[[float], str], na_rep: str = "NaN") -> str:
    """DataFrame.to_string(index=False, float_format=float_format, na_rep=na_rep) of the table."""
    columns = []
    for name, values in table.columns.items():
        kind = table.kinds[name]
        header = f" {name}" if kind in ("int", "float", "bool") else name
        cells = _text_cells(values, kind, float_format, na_rep)
        width = max([len(header), *map(len, cells)])
        columns.append([header.rjust(width)] + [c.rjust(width) for c in cells])
    return "\n".join(" ".join(line) for line in zip(*columns))
