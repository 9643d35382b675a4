"""What replacing a section whole drops. `--set workload={concurrency: 2}`, a catalog name set
over `hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}`, and a sweep whose values are sections
(`sweep: {workload: [{concurrency: 1}, ...]}`) replace the section as written: the keys the
scenario gave there and the value leaves out no longer apply, which one warning says (silent,
it is a wrong result nobody asked for).

Not every key left out is lost. A key the value replaces by an alternative the section refuses
beside it (acceptance's forms, a rate schedule for a rate, a uniform range for mean and std, one
catalog source for another) is the switch the user asked for; a table keyed by the user's own
numbers (steps_by_batch) is replaced by the new table; a value the section refuses has its own
error coming, which no warning should precede. None of these is named.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any, NamedTuple

from pydantic import BaseModel

from mtpsim.checks import check_rate_schedule
from mtpsim.errors import short, silenced
from mtpsim.overrides import REFERENCES, canonical, holds, value_at
from mtpsim.schema_paths import section_class
from mtpsim.workload_advice import READ_BY

SOURCES = ("from", "hf_config")  # a catalog reference's source: replaced by another on purpose


class Drop(NamedTuple):
    """The scenario's keys a replacement drops, and the catalog entry or file that now gives
    them (None: the defaults)."""

    lost: list[str]
    source: str | None


def dropped(data: dict[str, Any], key: str, value: Any, later: Collection[str] = ()) -> Drop | None:
    """What `value`, replacing the section at `key` of `data` whole, drops of the keys the
    scenario gave there (None: nothing); `later`: keys a later --set gives inside it again."""
    held = value_at(data, key) if holds(data, key) else None
    if not isinstance(held, dict):
        return None
    drop = _reference_drop(held, value, later) if key in REFERENCES else _section_drop(key, held, value, later)
    return drop if drop is not None and drop.lost else None


def _reference_drop(held: dict, value: Any, later: Collection[str]) -> Drop | None:
    """A catalog reference (model, hardware, speculative.draft): its fields the scenario wrote
    over its source take what the new source gives; the source itself is replaced on purpose."""
    source = value if isinstance(value, str) else \
        next((value[k] for k in SOURCES if k in value), None) if isinstance(value, dict) else None
    if not isinstance(source, str):  # no source: the value's own error comes
        return None
    given = value if isinstance(value, dict) else {}
    lost = [str(k) for k in held if k not in SOURCES and k not in given and str(k) not in later]
    return Drop(lost, source)


def _section_drop(key: str, held: dict, value: Any, later: Collection[str]) -> Drop | None:
    """A section of the schema's (a user-keyed table has no class: replaced whole on purpose): the
    keys the value leaves out that the section takes beside it go back to their defaults."""
    cls = section_class(key)
    if cls is None:
        return None
    base = value if isinstance(value, dict) else {"path": value} if "path" in cls.model_fields else None
    section = _valid(key, cls, base) if base is not None else None
    if section is None:  # the value's own error comes, or a form of it no key maps to
        return None
    default = {k: f.get_default(call_default_factory=True) for k, f in cls.model_fields.items() if not f.is_required()}
    lost = [str(k) for k, v in held.items() if k not in base and str(k) not in later
            and not (k in default and default[k] == v) and not _unread(key, section, str(k))
            and _valid(key, cls, {**base, k: v}) is not None]  # else: an alternative the value chose
    return Drop(lost, None)


def _valid(key: str, cls: type[BaseModel], data: dict) -> BaseModel | None:
    """The section at `key` as `data` gives it, where it takes it (None: refused), its warnings
    unsaid (only a trial); the workload's rate schedule is checked too (checks.py: one rate at a time)."""
    with silenced():
        try:
            section = cls.model_validate(data)
            if key == "workload":
                check_rate_schedule(section, "")
        except Exception:  # noqa: BLE001 (any refusal: pydantic's, a validator's ScenarioError)
            return None
    return section


def _unread(key: str, section: BaseModel, name: str) -> bool:
    """Whether the new section does not read its key `name` at all: the workload's keys its
    arrival leaves alone (a trace brings its own requests and lengths; workload_advice.READ_BY)."""
    if key != "workload":
        return False
    readers = READ_BY.get(name)  # concurrency is not among them: `cost` takes it as its batch under any arrival
    return readers is not None and section.arrival not in readers


def set_drop(data: dict[str, Any], key: str, value: Any, later: Collection[str]) -> tuple[str, str, str] | None:
    """The warning (where, key, reason) for `--set KEY=VALUE` of a whole section, worked out
    before the value is set (overrides.apply_sets calls it) and said once the scenario has
    validated (scenario.load: bad input stays one line); None where nothing is dropped. A sweep
    is replaced whole on purpose (`sweep={...}` runs that sweep)."""
    if key == "sweep" or key.startswith("sweep."):
        return None
    drop = dropped(data, key, value, later)
    if drop is None:
        return None
    # a catalog name or `{from: NAME}` over `{from: ..., ...}`: `KEY.from=NAME` keeps the fields
    keeps = isinstance(drop.source, str) and "from" in value_at(data, key) and \
        (isinstance(value, str) or set(value) == {"from"})
    hint = f" (--set {key}.from={drop.source} keeps {'them' if len(drop.lost) > 1 else 'it'})" if keeps else ""
    return "--set", key, f"replaces the whole section: the scenario's {said_keys(drop.lost)} " \
        f"{_fate({drop.source}, len(drop.lost))}{hint}"


def sweep_drops(data: dict[str, Any], key: str, values: list) -> str | None:
    """The warning's words for a swept section whose values each replace it whole (None: none of
    them drops a key the scenario gave). Each distinct value is weighed once."""
    distinct = list({repr(canonical(v)): v for v in values}.values())
    drops = [d for d in (dropped(data, key, v) for v in distinct) if d is not None]
    if not drops:
        return None
    lost = list(dict.fromkeys(k for d in drops for k in d.lost))
    every = len(drops) == len(distinct) and all(set(d.lost) == set(lost) for d in drops)
    which = "each value replaces the whole section" if every else \
        f"{len(drops)} of its {len(distinct)} values replace the whole section, dropping some of"
    return f"{which}: the scenario's {said_keys(lost)} {_fate({d.source for d in drops}, len(lost))}"


def _fate(sources: set[str | None], count: int) -> str:
    """What becomes of `count` dropped keys: the defaults' values (source None), what one source
    gives (its value, or the default where it gives none), or (over a sweep's values) each one's."""
    many = count > 1
    if len(sources) > 1:
        return f"go{'' if many else 'es'} back to what each value's source gives, or to the default"
    source = next(iter(sources))
    if source is None:
        return "go back to their defaults" if many else "goes back to its default"
    return f"go{'' if many else 'es'} back to what {short(source, 200)} gives"


def said_keys(keys: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`, ... at most four named, then a count."""
    return keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} and {keys[-1]}" if len(keys) <= 4 else \
        f"{', '.join(keys[:4])} and {len(keys) - 4} more"
