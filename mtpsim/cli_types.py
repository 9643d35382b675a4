"""What a command-line flag accepts: argparse types for a whole number in range, for a name
that is not blank and for a path a command writes (one line, no control character), and the
flags' limits, shared by mtpsim/cli.py and mtpsim/search/cli.py. A bad value is argparse's
one-line error (cli.py `_Parser`); a comma-separated list of sizes (--batch, --topk,
--concurrency), read once the command knows its limit, is `parse_sizes`'s ScenarioError.
Standard library and mtpsim.errors only, so building the parser stays quick.
"""
from __future__ import annotations

import argparse
import os
import unicodedata

from mtpsim.errors import LINE_BREAKING, ScenarioError, short
from mtpsim.outputs import placed
from mtpsim.textnumbers import whole_number

MAX_JOBS, MAX_BATCH, MAX_CONTEXT = 256, 1 << 20, 1 << 24  # past these a command would only eat memory


def bounded(low: int, high: int):
    """An argparse type: a whole number in [low, high] in ASCII digits (int() would take `١٢`, or
    `1_000`), else argparse's one-line error."""
    def parse(text: str) -> int:
        value = whole_number(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"{short(text, 40)} is not a whole number (digits 0-9)")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value
    return parse


def named(hint: str):
    """An argparse type for a flag that names something (a folder, a cluster, a version): not
    empty or blank, which the command would otherwise take as the flag left out (the default)."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty: {hint}")
        return text
    return parse


def input_path(hint: str):
    """An argparse type for an argument that names a file or folder a command reads (a scenario,
    a run folder): `named`'s, with `~` the home folder, as the paths a scenario names are read."""
    not_blank = named(hint)
    return lambda text: os.path.expanduser(not_blank(text))


def output_path(hint: str):
    """An argparse type for a flag that names a file or folder a command writes (--out, --cache):
    `named`'s, and one line of text: a control character in it (a newline pasted with the path, an
    escape) would make a folder no one meant, printed over two lines by `wrote ...`."""
    not_blank = named(hint)

    def parse(text: str) -> str:
        if any(unicodedata.category(c) in LINE_BREAKING for c in text):
            raise argparse.ArgumentTypeError(f"{short(text, 60)} holds a control character or line break: give a path "
                                             "of one line, without newlines, tabs or escapes")
        # `~/runs/x` (quoted, or from a script) is the home folder's, as every path a scenario names
        # is read: it made a folder named `~` here, and `wrote ~/runs/x/` named one that was not written
        # and `nothere/../b` is `b` (outputs.placed): the folder it names once `nothere` is made
        return placed(os.path.expanduser(not_blank(text)))
    return parse


folder = output_path("name the folder to write, or leave --out out for the default")
address = named("name the Ray cluster (host:port), or leave --address out for RAY_ADDRESS or a local Ray")


class Once(argparse.Action):
    """A flag that takes one value: given twice, argparse's one-line error (the last one used to
    win without a word)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(self, "given more than once: give it once")
        setattr(namespace, self.dest, values)


def parse_sizes(text: str, option: str, high: int) -> list[int]:
    """`1,2,4` -> [1, 2, 4] (sorted, repeats dropped); a bad item is a ScenarioError naming the option."""
    values = set()
    for item in text.split(","):
        value = whole_number(item)
        if value is None or value < 1:
            raise ScenarioError(option, "", f"{short(item.strip(), 40)} is not a positive integer (digits 0-9, "
                                "comma-separated, e.g. 1,2,4)")
        if value > high:
            raise ScenarioError(option, "", f"{value} is over the limit of {high:,}")
        values.add(value)
    return sorted(values)
