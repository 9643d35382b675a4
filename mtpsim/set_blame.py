"""Whom an error blames when --set is given: the flag, where a value it gave is at fault (at a
key it set, a swept value it gave, or a file that validates without it), else the file. The
overrides themselves are parsed and applied in overrides.py; scenario.load asks this module
only once validation has failed (and `note_set_keys` asks `from_set` of each warning)."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from mtpsim.errors import ScenarioError, silenced
from mtpsim.overrides import Override, holds, set_key


def from_set(key: str, set_keys: list[str], written: dict[str, Any]) -> bool:
    """Whether the value at `key` came from --set: it lies at or under a key the flag set, or it
    is a mapping the flag created on the way to one (the file does not hold it)."""
    return any(key == k or key.startswith(k + ".") or (k.startswith(key + ".") and not holds(written, key))
               for k in set_keys)


def blamed_on_set(exc: ScenarioError, where: str, overrides: list[Override], written: dict[str, Any],
                  sweep: Any, check: Callable[[dict[str, Any], list[Override]], object]) -> ScenarioError | None:
    """`exc`, raised checking file `where` with `overrides` set, as --set's error where a value
    the flag gave is at fault: at a key it set (a swept one too: `sweep`, the sweep with the
    flags applied), or elsewhere in a file that `check` accepts without it (breaking_set); None
    where the error is the file's own."""
    keys = [k for k, _ in overrides]
    if exc.where == where and exc.key and (from_set(exc.key, keys, written) or
                                           _swept_by_set(exc.key, keys, written, sweep)):
        return ScenarioError("--set", exc.key, exc.reason)
    culprit = breaking_set(written, overrides, check, exc.key) if exc.where == where and overrides else None
    if culprit is not None:  # the file alone is valid: the flag broke it elsewhere (a sibling, a parent)
        at = f"{exc.key}: " if exc.key and exc.key != culprit else ""
        return ScenarioError("--set", culprit, f"{at}{exc.reason}")
    return None


def _swept_by_set(key: str, keys: list[str], written: dict[str, Any], sweep: Any) -> bool:
    """Whether `key` lies at or under an entry of `sweep` (the flags applied) that --set gave
    (`sweep.K=[...]`, or a whole `sweep={...}` holding K): its values are the flag's. A --set of
    the sweep that does not sweep `key` (`sweep=null`, another entry) leaves an error there the file's."""
    return isinstance(sweep, dict) and any(
        isinstance(entry, str) and (key == entry or key.startswith(entry + "."))
        and from_set(f"sweep.{entry}", keys, written) for entry in sweep)


def breaking_set(written: dict[str, Any], overrides: list[Override],
                 check: Callable[[dict[str, Any], list[Override]], object], at: str | None = None) -> str | None:
    """The --set key whose value breaks a file that validates on its own (the first that does so
    alone, at the error's key `at` where one does: another may fail alone for a reason of its
    own, as a steps_by_batch entry without the policy's key 1; else the first that fails alone,
    else the first given), or None when the file alone fails too: an error a flag causes away
    from the key it sets (a null that leaves its parent without a required entry, a value that a
    sibling must now match) is the flag's, not the file's. `check(data, sets)` validates the
    file's data with `sets` applied (a ScenarioError if it fails): trial validations, said
    nothing of: the error path only."""
    def error(sets: list[Override]) -> ScenarioError | None:
        data = copy.deepcopy(written)
        for key, value in sets:
            set_key(data, key, copy.deepcopy(value), "--set")
        try:
            with silenced():
                check(data, sets)
        except ScenarioError as exc:
            return exc
        return None

    if error([]) is not None:
        return None
    first = None
    for key, value in overrides:
        found = error([(key, value)])
        if found is not None and found.key == at:
            return key
        first = first or (key if found is not None else None)
    return first or overrides[0][0]
