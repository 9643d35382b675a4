"""rows.write_csv joins the cells of a table csv would not quote itself (its fast path): the file
must be the one csv.writer writes, byte for byte, for every table, quoted cells or not."""
from __future__ import annotations

import csv
import math

import pytest

from mtpsim.rows import Table, csv_cells, write_csv

TABLES = {
    "numbers": {"a": [1, 2, 3], "b": [0.1, math.nan, 1e300], "c": [None, 2.5, -0.0]},
    "plain text": {"kind": ["decode", "prefill", ""], "x": [1, 2, 3]},
    "comma": {"name": ["a,b", "c", "d"], "x": [1, 2, 3]},
    "quote": {"name": ['say "hi"', "c", "d"], "x": [1.5, 2.5, 3.5]},
    "newline": {"name": ["two\nlines", "c", "cr\r"], "x": [1, 2, 3]},
    "one column, empty cells": {"name": ["", "x", ""]},
    "one number column": {"x": [1.0, math.nan]},
    "empty cells only": {"a": ["", ""], "b": [None, None]},
    "no rows": {"a": [], "b": []},
    "bools and objects": {"flag": [True, False, True], "o": [None, "x", 3]},
}


@pytest.mark.parametrize("name", TABLES)
def test_write_csv_is_what_csv_writer_writes(tmp_path, name):
    table = Table.of_columns({k: list(v) for k, v in TABLES[name].items()})
    write_csv(table, tmp_path / "fast.csv")
    with open(tmp_path / "writer.csv", "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(table.columns)
        out.writerows(zip(*[csv_cells(v, table.kinds[k]) for k, v in table.columns.items()]))
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "writer.csv").read_bytes()
