"""`--set key.path=value` overrides of a scenario (the flag, and `mtpsim.load`'s `sets`): each
parsed (its value read as YAML), set into the scenario's nested mappings by its dotted key path,
checked against the others (a key given twice, a section given after a key inside it), and
applied inside a swept section it lies in. Whom an error then blames, --set or the file, is
set_blame.py's.

scenario.py's `load` uses these before the sweep is expanded, sweep.py while it expands it (its
points set by the same set_key); nothing here validates a scenario.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from mtpsim.errors import ScenarioError, short
from mtpsim.files import parse_yaml
from mtpsim.textnumbers import first_repeat
from mtpsim.yamlfiles import MAX_DEPTH

Override = tuple[str, Any]  # (the dotted key path, its value as YAML read it)


def parse_sets(sets: Any) -> list[Override]:
    """`load`'s `sets` (the `key.path=value` texts --set gives) parsed, or a ScenarioError."""
    return [parse_set(item) for item in _set_items(sets)]


REPLACED = object()  # flags_over_sets: a flag that drops the key whatever its value (search --rates, its users)


def flags_over_sets(sets: Any, flags: dict[str, tuple[str, Any]]) -> None:
    """A key a command's own flag gives (dotted key -> (the flag as written, the value it gives;
    None: not given; REPLACED: the flag drops the key)) that --set gives another value, at the key
    or in a section around it: a ScenarioError naming --set. The flag wins over the file, and won
    over --set without a word (`run --seeds 2 --set seeds=5` ran 2 seeds; `search --gpus 8 --set
    search.gpus=16` searched 8 GPUs)."""
    for key, value in parse_sets(sets):
        for at, (flag, given) in flags.items():
            if given is None or not (at == key or at.startswith(key + ".")):
                continue
            found = value
            for part in at[len(key):].split(".")[1:]:  # the value a set section gives at the flag's key
                found = found.get(part) if isinstance(found, dict) else None
            if found is not None and (given is REPLACED or canonical(found) != canonical(given)):
                does = "drops it" if given is REPLACED else "sets it over that"
                raise ScenarioError("--set", key, f"gives {at} {short(found, 40)}, and {flag} {does}: give one of "
                                    "them (the flag would win without a word)")


def _set_items(sets: Any) -> list[str]:
    """`load`'s `sets` as the list of `key.path=value` texts --set gives, or a ScenarioError."""
    if isinstance(sets, (str, bytes)) or not isinstance(sets, (list, tuple)):
        raise ScenarioError("mtpsim.load", "sets", f"is a list of 'key.path=value' texts (as --set gives), not "
                            f"{type(sets).__name__} {short(sets, 60)}")
    for i, item in enumerate(sets):
        if not isinstance(item, str):
            raise ScenarioError("mtpsim.load", f"sets.{i}", f"is {type(item).__name__} {short(item, 40)}: each is "
                                "a 'key.path=value' text")
    return list(sets)


def set_key(data: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    """Set `a.b.c` in nested mappings, creating intermediate mappings. A part in digits names an
    integer key (as YAML reads `8:`), unless the mapping has it as text; `null` removes the key,
    so its default applies (`--set acceptance=null` drops the section). A sweep entry's key is
    itself dotted: `sweep.workload.concurrency` sets the entry `workload.concurrency` of `sweep`."""
    node = data
    if dotted.count(".") >= MAX_DEPTH:
        raise ScenarioError(where, short(dotted, 80)[1:-1], f"a key path of more than {MAX_DEPTH} levels (YAML nests "
                            f"at most {MAX_DEPTH})")
    *parents, leaf = _parts(dotted)
    _into_a_list(data, dotted, where)
    for i, part in enumerate(parents):
        part = _set_part(node, part, dotted, where)
        child = node.get(part)
        if child is None and value is None:
            return  # nothing to drop (making the mappings on the way would add empty sections)
        if child is None:
            child = node[part] = {}
        elif isinstance(child, str) and ".".join(parents[: i + 1]) in REFERENCES:
            # the catalog name becomes `from`, what the keys set override; a config.json given as the
            # source replaces it (from and hf_config are two sources, refused together)
            at = ".".join(parents[: i + 1])
            child = node[part] = {} if dotted == f"{at}.hf_config" else {"from": child}
        elif not isinstance(child, dict):
            raise ScenarioError(where, dotted, f"{'.'.join(parents[: i + 1])} is not a mapping")
        node = child
    leaf = _set_part(node, leaf, dotted, where)
    if value is None:
        node.pop(leaf, None)
    else:
        node[leaf] = value


def _set_part(node: dict[str, Any], part: str, dotted: str, where: str) -> str | int:
    """`_key` for a part --set writes, refusing digits with a leading zero (`steps_by_batch.010`)
    where they would name an integer key: YAML 1.1 reads `010:` in a file as 8, and the file
    loader refuses it for that (yamlfiles.py), so --set refuses it too rather than read it as 10,
    in a mapping it makes on the way as in one the scenario holds."""
    key = _key(node, part)
    if isinstance(key, int) and len(part) > 1 and part.startswith("0"):
        octal = set(part) <= set("01234567")
        read = f"the octal number {int(part, 8)}" if octal else f"the text {part!r}"
        other = "" if octal and int(part, 8) == key else f", not {key}"
        raise ScenarioError(where, short(dotted, 80)[1:-1], f"{part!r} has a leading zero: YAML 1.1 reads `{part}:` "
                            f"in a file as {read}{other}: write the number in decimal")
    return key


def _holds_parts(data: dict[str, Any], parts: list[str]) -> bool:
    """Whether the nested mappings hold the key path `parts` (each part as set_key reads it)."""
    for part in parts:
        if not isinstance(data, dict) or _key(data, part) not in data:
            return False
        data = data[_key(data, part)]
    return True


def _nothing_to_drop(dotted: str, known: Callable[[str], bool], where: str) -> None:
    """`--set key=null` where the scenario does not hold the key: its default applies already, so
    nothing changes; a key the schema does not know either (`acceptence=null`, a sweep entry
    `sweep.workload.bogus=null`) is a slip that would have dropped nothing without a word."""
    # a sweep entry (`sweep.workload.concurrency`) names a scenario key; `sweep` itself is one too
    head, _, entry = dotted.partition(".")
    if not (known(entry) if head == "sweep" and entry else dotted == "sweep" or known(dotted)):
        raise ScenarioError(where, dotted, "unknown key (=null drops a key, and no scenario has this one)")


def _into_a_list(data: dict[str, Any], dotted: str, where: str) -> None:
    """A key path through a list by an item's index (`acceptance.per_depth.0`, or under `sweep`
    `workload.concurrency.1`, an entry's values): a list is set whole, so a ScenarioError that
    says so, not that the list is no mapping, that the index is an unknown sweep key, or that the
    value set there must itself be a list."""
    parts, node, walked = dotted.split("."), data, []
    while parts:
        if isinstance(node, dict) and walked == ["sweep"]:  # a sweep entry's key is itself dotted
            entry = next((k for k in node if isinstance(k, str) and ".".join(parts).startswith(k + ".")), None)
            if entry is None:
                return
            walked, parts, node = [*walked, entry], parts[len(entry.split(".")):], node[entry]
            continue
        if isinstance(node, list) and parts[0].isascii() and parts[0].lstrip("-").isdigit():
            whole = ".".join(walked)
            raise ScenarioError(where, dotted, f"{whole} is a list, set whole: give --set {whole}=[...] with every "
                                "item (an item is not set by its index)")
        if not isinstance(node, dict):
            return
        part = parts.pop(0)
        node, walked = node.get(_key(node, part)), [*walked, part]


def _parts(dotted: str) -> list[str]:
    """A dotted key path's parts; under `sweep` all that follows is one part, an entry's key."""
    head, sep, rest = dotted.partition(".")
    return [head, rest] if head == "sweep" and sep else dotted.split(".")


def _key(node: dict[str, Any], part: str) -> str | int:
    """A dotted path's part as the key it names in `node`."""
    # an integer key (steps_by_batch's batch sizes) has a few digits; a longer run stays text, for
    # the schema to refuse as a key (int() of 4,300 digits or more raises)
    return int(part) if part.isascii() and part.isdigit() and len(part) <= 18 and part not in node else part


# the keys a catalog name or `{from: NAME, ...}` may give (a model, a GPU, a draft): a key --set
# inside a name there overrides that entry (--set speculative.draft.block.markov_rank=128 over
# `draft: dspark-qwen3-8b-block7` was `speculative.draft is not a mapping`)
REFERENCES = ("model", "hardware", "speculative.draft")

NULLS = ("null", "Null", "NULL", "~")  # YAML's spellings of null: `--set key=null` drops the key


def parse_set(item: str) -> Override:
    """`key.path=value` with the value parsed as YAML."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ScenarioError("--set", short(item, 80)[1:-1], "expected key.path=value")
    if not raw.strip():  # YAML reads nothing as null, which would drop the key without a word
        raise ScenarioError("--set", short(key.strip(), 80)[1:-1], "no value after '=' (write =null to drop the key "
                            "and take its default)")
    if any(not part.strip() for part in key.strip().split(".")):
        raise ScenarioError("--set", short(key, 80)[1:-1], "an empty part in the key path (a leading, trailing "
                            "or doubled '.')")
    try:
        value = parse_yaml(raw, "--set")
    except ScenarioError as exc:
        at = ".".join(k for k in (key.strip(), exc.key) if k and not k.startswith("line "))
        raise ScenarioError("--set", at, f"value is not valid YAML: {exc.reason}") from None
    if value is None and raw.strip() not in NULLS:  # `=#2`: YAML reads a comment, which would drop the key
        raise ScenarioError("--set", short(key.strip(), 80)[1:-1], f"the value {short(raw.strip(), 40)} reads as "
                            "nothing (a YAML comment starts with '#'; quote it, or write =null to drop the key)")
    return key.strip(), value


def apply_sets(data: dict[str, Any], overrides: list[Override], known: Callable[[str], bool] = lambda key: True,
               on_replace: Callable[[dict[str, Any], str, Any, set[str]], None] = lambda *args: None) -> dict[str, Any]:
    """Set each override into `data` (set_key), and return what the file says without them (a
    copy where there are any), to tell its errors from --set's (from_set). A key given twice, or a
    section given after a key inside it (which it would undo), is a ScenarioError; so is a null
    dropping a key the data does not hold that `known` (the loader's schema) does not know."""
    written = copy.deepcopy(data) if overrides else data
    for at in REFERENCES:  # a config.json replaces a catalog name as the source, whatever --set comes first
        *path, leaf = at.split(".")
        node = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(leaf), str) and any(k == f"{at}.hf_config" for k, _ in overrides):
            node[leaf] = {}
    for i, (key, value) in enumerate(overrides):
        if value is None and not _holds_parts(data, _parts(key)):
            _nothing_to_drop(key, known, "--set")
        later = {k[len(key) + 1:].split(".")[0] for k, _ in overrides[i + 1:] if k.startswith(f"{key}.")}
        on_replace(data, key, value, later)  # a whole section replaced: the loader says what it drops (section_drops.py)
        set_key(data, key, value, "--set")
    keys = [k for k, _ in overrides]
    again = first_repeat(keys)
    twice = None if again is None else keys[again]
    if twice is not None:
        raise ScenarioError("--set", twice, "given twice: the last one would win; give it once")
    # a later --set of a section replaces what an earlier one set inside it: the earlier one is lost
    lost = next(((inner, outer) for i, inner in enumerate(keys) for outer in keys[i + 1:]
                 if inner.startswith(f"{outer}.")), None)
    if lost is not None:
        inner, outer = lost
        raise ScenarioError("--set", outer, f"replaces the whole section after --set {inner}, which it would undo: "
                            f"give {inner} after it, or inside it")
    return written


def set_inside(key: str, values: list, overrides: list[Override], where: str, later: list) -> list:
    """A swept section's values with each --set that lies inside it applied, as the points run
    it: the rows then say what ran. Where the section's values set that key otherwise, a warning
    (into `later`) says the swept values are not run, as for a swept key --set names."""
    for dotted, value in overrides:
        if not dotted.startswith(key + "."):
            continue
        inner = dotted[len(key) + 1:]
        swept = [value_at(v, inner) for v in values if isinstance(v, dict) and holds(v, inner)]
        lost = list(dict.fromkeys(short(v, 40) for v in swept if canonical(v) != canonical(value)))
        if lost:
            later.append((where, f"sweep.{key}", f"--set {dotted} sets it on every point, inside this swept section: "
                          f"its swept values {', '.join(lost)} are not run"))
        # a swept catalog name takes the key as a file's name does (set_key): {from: NAME, ...}, so
        # its row says what ran, not the bare name of an entry run with the --set key changed
        named = key in REFERENCES
        values = [_with_set(v, inner, value, where) if isinstance(v, dict) else
                  _with_set({} if inner == "hf_config" else {"from": v}, inner, value, where)
                  if named and isinstance(v, str) else v for v in values]
    return values


def _with_set(section: dict[str, Any], dotted: str, value: Any, where: str) -> dict[str, Any]:
    """A copy of `section` with `dotted` set to `value` (set_key's rules)."""
    out = copy.deepcopy(section)
    set_key(out, dotted, copy.deepcopy(value), where)
    return out


def value_at(data: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted key path the mapping holds (holds)."""
    for part in dotted.split("."):
        data = data[part if part in data else _key(data, part)]
    return data


def holds(data: Any, dotted: str) -> bool:
    """Whether the mapping has the dotted key path (each part as written, or as an integer key)."""
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return False
        key = part if part in data else _key(data, part)
        if key not in data:
            return False
        data = data[key]
    return True


def canonical(value: Any) -> Any:
    """A value as the schema compares it: mappings whatever their key order, 0 and 0.0 alike."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return tuple(sorted(((str(k), canonical(v)) for k, v in value.items()), key=repr))
    if isinstance(value, list):
        return tuple(canonical(v) for v in value)
    return value
