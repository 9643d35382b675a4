"""Numbers and lists as a user writes them, read strictly: a flag's or a file's number in ASCII
decimal only (Python's int() and float() also read other scripts' digits, `1_000`, `inf` and
`nan`, which no flag or table means), and the first repeat in a list of values."""
from __future__ import annotations

import re


def first_repeat(values) -> int | None:
    """The index of the first entry of `values` equal to an earlier one, or None: in one pass over
    a set where the entries hash (a check against every earlier entry took seconds on a list of
    tens of thousands, before any limit on its length was looked at)."""
    seen, unhashable = set(), []
    for i, value in enumerate(values):
        try:
            if value in seen:
                return i
            seen.add(value)
        except TypeError:
            if value in unhashable:
                return i
            unhashable.append(value)
    return None


def whole_number(text: str) -> int | None:
    """`text` as an int when it is one in ASCII digits (an optional sign), else None: int() also
    reads `١٢` (Arabic-Indic digits), `1_000` and padded text, which no flag means."""
    text = text.strip()
    body = text[1:] if text[:1] in "+-" else text
    if not (body.isascii() and body.isdigit()) or len(body) > 30:
        return None
    return int(text)


# a number written in ASCII decimal: what a flag takes (decimal_number) and what a YAML float
# may be spelt as (yamlfiles.py)
DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def decimal_number(text: str) -> float | None:
    """`text` as a float when it is written in ASCII decimal (`2`, `0.5`, `1e3`, a sign), else
    None: float() also reads `١٢`, `1_000`, `inf` and `nan`, which no flag means."""
    text = text.strip()
    return float(text) if text.isascii() and DECIMAL.fullmatch(text) else None
