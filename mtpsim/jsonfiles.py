"""JSON as the readers take it (a config.json, a JSON-lines trace row): strict where json.loads
is lenient, with every refusal a ValueError for the caller to word with its file."""
from __future__ import annotations

import json

from mtpsim.errors import short
from mtpsim.textfiles import unsigned


def strict_json(text: str):
    """JSON text -> values, refusing what json.loads lets through silently: a key given twice in
    one object (the last would win) and NaN / Infinity, which JSON does not allow. Raises
    ValueError (json.JSONDecodeError for syntax) or RecursionError for the caller to word. A
    leading byte-order mark is dropped, as the CSV readers drop it (editors on Windows write one).
    A `-0.0` reads as 0.0, as YAML's does (yamlfiles.py): the sign of a zero passes a `>= 0` bound."""
    return json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                      parse_float=_unsigned_float, parse_int=_whole)


MAX_INT_DIGITS = 4000  # Python refuses to read an integer of 4,301 digits or more, in words for a programmer


def _whole(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer {len(text.lstrip('-')):,} digits long ({text[:12]}...): no value is that large")
    return int(text)


def _unsigned_float(text: str) -> float:
    return unsigned(float(text))


def _unique_keys(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {short(k, 60)}")
        out[k] = v
    return out


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")
