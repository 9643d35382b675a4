"""`mtpsim models`, `mtpsim hardware`, `mtpsim engines` and `mtpsim schema`: what the catalog and
the scenario schema hold, printed one entry a line (commands.py dispatches here).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from mtpsim import catalog, catalog_lookup
from mtpsim.engine_releases import engine_rules, known_versions
from mtpsim.errors import ScenarioError, cut_middle, line, printable, short
from mtpsim.packagedata import catalog_dirs
from mtpsim.schema import Engine
from mtpsim.schema_json import json_schema
from mtpsim.sections import is_catalog_name

MAX_RULE_VALUE = 1000  # characters of a rule's value `mtpsim engines` prints (the shipped files' longest: 600)


def list_entries(kind: str) -> int:
    """`mtpsim models` / `mtpsim hardware`: every catalog entry, one line each."""
    load, describe = {"models": (catalog.load_model, lambda spec: spec.summary()),
                      "hardware": (_usable_hardware, lambda spec: spec.summary(Engine().kind))}[kind]
    entries = catalog_lookup.names(kind)
    width = max((len(n) for n in entries), default=0)
    invalid = []
    for name in entries:
        try:
            _listable(kind, name)
            text = describe(load(name))
        except ScenarioError as exc:  # an unreadable or invalid entry, named by its file
            invalid.append(exc)
            text = "invalid (the error is on stderr)"
        print(f"{printable(name):<{width}}  {text}")
    return _said(invalid + _unnamed(kind), kind)


def list_engines() -> int:
    """`mtpsim engines`: each engine's known releases, its default, and its version rules. An
    entry is listed once its whole file resolves, as a scenario naming it would resolve it (its
    errors name the file read, not the one the name suggests)."""
    invalid = []
    for name in catalog_lookup.names("engines"):
        try:
            _listable("engines", name)
            catalog.load_engine(name)
            file = str(catalog_lookup.path_of("engines", name, "engines catalog", paths=False))
            raw = catalog.engine_file(name)
            versions, rules = known_versions(raw, file), engine_rules(raw, file)
        except ScenarioError as exc:
            invalid.append(exc)
            print(f"{printable(name)}: invalid (the error is on stderr)")
            continue
        print(f"{name}: default {versions.default}; known {', '.join(versions.known)}")
        for rule in rules:
            span = f"{'from ' + rule.since if rule.since else ''}{' ' if rule.since and rule.until else ''}" \
                   f"{'before ' + rule.until if rule.until else ''}" or "every release"
            # a user file's value as one line of bounded length: its strings may carry escapes and
            # newlines (mixed_head_attention, prefill_chunk's gpus), its lists thousands of entries
            value = cut_middle(printable(str(rule.value)), MAX_RULE_VALUE)
            print(f"  {rule.name}: {rule.field} = {value} ({span})")
    return _said(invalid + _unnamed("engines"), "engines")


def _unnamed(kind: str) -> list[ScenarioError]:
    """A user catalog's entries of `kind` the listing passes over (a folder or broken link named
    .yaml, a .yml file), each printed as invalid: no scenario can name them."""
    listed = set(catalog_lookup.names(kind))  # one of another folder's name: its lookup above said so already
    unnamed = [exc for exc in catalog_lookup.unnamed_entries(kind) if Path(exc.where).stem not in listed]
    for exc in unnamed:
        print(f"{printable(short(exc.where, 200)[1:-1])}  invalid (the error is on stderr)")
    return unnamed


def _usable_hardware(name: str):
    """A hardware entry, each profile it names found (else a ScenarioError naming its file and
    key): an entry whose profile is missing fails every scenario that names it."""
    from mtpsim.costs.profile import require_profile
    spec = catalog.load_hardware(name)
    for engine, ref in spec.profiles.items():
        require_profile(ref, str(catalog_lookup.find("hardware", name)), f"profiles.{engine}")
    return spec


def _listable(kind: str, name: str) -> None:
    """A file no scenario can name (its stem is no catalog name, or no engine engine.kind takes)
    is refused, naming the file."""
    from typing import get_args

    from mtpsim.engine_schema import EngineKind
    engines = get_args(EngineKind)
    named = is_catalog_name(name)
    if named and (kind != "engines" or name in engines):
        return
    path = next(p for d in catalog_dirs() if (p := d / kind / f"{name}.yaml").is_file())
    if named:
        raise ScenarioError(str(path), "", f"{short(name)} is no engine a scenario can name (engine.kind: "
                            f"{', '.join(engines)}): an engine file gives one of those engines' releases and rules")
    raise ScenarioError(str(path), "", f"{short(name)} is not a {kind} catalog name (letters, digits, '.', "
                        "'-', '_', '+'): rename the file")


def _said(invalid: list[ScenarioError], kind: str) -> int:
    """An entry no scenario could use is bad input: one line (the first), and exit status 2."""
    if invalid:
        more = f" (and {len(invalid) - 1} more invalid {kind} entries)" if len(invalid) > 1 else ""
        print(line("error", f"{invalid[0].message}{more}"), file=sys.stderr)
    return 2 if invalid else 0


def print_schema() -> int:
    """The JSON Schema of a scenario file (every key, its type and default)."""
    print(json.dumps(json_schema(), indent=2))
    return 0
