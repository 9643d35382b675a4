"""What a command-line flag accepts: argparse types for a whole number in range and for a name
that is not blank, and the flags' limits, shared by mtpsim/cli.py and mtpsim/search/cli.py. A
bad value is argparse's one-line error (cli.py `_Parser`). Standard library only, so building
the parser stays quick.
"""
from __future__ import annotations

import argparse

from mtpsim.errors import short, whole_number

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


at_least_one = bounded(1, 1 << 20)
folder = named("name the folder to write, or leave --out out for the default")
address = named("name the Ray cluster (host:port), or leave --address out for RAY_ADDRESS or a local Ray")


class Once(argparse.Action):
    """A flag that takes one value: given twice, argparse's one-line error (the last one used to
    win without a word)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(self, "given more than once: give it once")
        setattr(namespace, self.dest, values)
