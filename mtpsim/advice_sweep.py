"""What a sweep's points say together, beyond each point's own warnings (advice.advise): a swept
key no point reads or that changes no simulation (the points are the same run), a warning held back
at each point because the sweep varies what it depends on (advice.DEPENDS) but given at every
point, and points of design none that differ only in settings it does not read. Each is one
stderr line (errors.warn), at the sweep's entry where the sweep gives the value.
"""
from __future__ import annotations

import copy
import re

from mtpsim import advice
from mtpsim.schema import Scenario


def advise_sweep(points: list[Scenario], skip: tuple = ()) -> None:
    """A swept key that no point reads (the same warning at every point, which advise() leaves
    alone because the key is swept; or a value no point reads, null at the others: the default,
    which is no more read), or that changes no simulation (question, name): one warning that
    the sweep's points are the same run."""
    from mtpsim.errors import warn
    if not points:
        return
    found = [advice.problems(s, (*skip, *advice.RUNS_OTHERWISE)) for s in points]  # advise() says those at each point
    if len(points) == 1:  # one point: what advise() holds back for its swept keys is said as set directly
        for key, reason in found[0]:
            depends = (key, *advice.DEPENDS.get(".".join(key.split(".")[:2]), ()))
            swept = next((k for k in points[0].point for dep in depends if advice.within(k, dep)), None)
            if swept is not None:
                warn(points[0].source, f"sweep.{swept}", f"{key}: {reason}")
        return
    for swept in points[0].point:
        if swept in ("question", "name"):
            warn(points[0].source, f"sweep.{swept}", f"the {swept} is printed, not simulated: these points are the "
                 "same run")
            continue
        first = next(((k, r) for k, r in found[0] if advice.within(swept, k)), None)
        # the same warning word for word at every point: one that depends on the point (its users,
        # its batch) says each point differs, which is no sign that they are the same run
        held = _everywhere(found, *first) if first is not None else None
        if held == "word for word":
            if _differ_elsewhere(points, swept, first[0]):  # the warning holds at every point, which still differ
                warn(points[0].source, f"sweep.{swept}", f"{first[0]}: {first[1]} (at every point)")
            else:
                warn(points[0].source, f"sweep.{swept}", f"{first[0]}: {first[1]} at every point: these points are "
                     "the same run")
        elif held == "in other numbers":
            # the same key warned at every point in other words (its numbers differ): still at every point
            warn(points[0].source, f"sweep.{swept}", f"{first[0]} at every point, as at the first: {first[1]}")
        elif advice.within(swept, "speculative") and all(s.speculative.design == "none" for s in points):
            same = "these points are the same run" if not _differ_outside(points, "speculative") else \
                "points that differ only in speculative settings are the same run"
            warn(points[0].source, f"sweep.{swept}", f"design none drafts nothing at every point: {same}")
        elif first is None:
            _unread_or_null(points, swept, skip)
    _held_everywhere(points, found)
    _undrafted_twins(points)


def _undrafted_twins(points: list[Scenario]) -> None:
    """Points of design none that differ only in speculative settings it does not read (a sweep of
    designs crossed with steps runs `none` once per step): one warning naming the first pair."""
    from mtpsim.errors import warn
    if all(s.speculative.design == "none" for s in points):  # said of the sweep as a whole (advise_sweep)
        return
    seen: dict = {}
    for i, s in enumerate(points):
        if s.speculative.design != "none" or not any(advice.within(k, "speculative") for k in s.point):
            continue
        rest = _outside(s, "speculative")
        if rest in seen:
            warn(s.source, "sweep", f"points {seen[rest]} and {i} run design none and differ only in speculative "
                 "settings it does not read: the same run")
            return
        seen[rest] = i


def _differ_outside(points: list[Scenario], section: str) -> bool:
    """Whether the points' swept values differ outside `section` (a sweep of steps crossed with
    users: the points of one user count are the same run under design none, the others not)."""
    return len({_outside(s, section) for s in points}) > 1


def _outside(s: Scenario, section: str) -> str:
    """Point `s`'s swept values outside `section`, as one comparable text."""
    from mtpsim.overrides import canonical
    return canonical({k: v for k, v in s.point.items() if not advice.within(k, section)})


def _held_everywhere(points: list[Scenario], found: list[list[tuple[str, str]]]) -> None:
    """A warning advise() held back because the sweep varies a key it depends on (advice.DEPENDS), but
    which every point gives word for word about a key no sweep sets: the swept values never made
    it matter (`acceptance` under design none with only the steps swept). Said once, at its key."""
    from mtpsim.errors import warn
    swept = list(points[0].point)
    for key, reason in found[0]:
        depends = advice.DEPENDS.get(".".join(key.split(".")[:2]), ())
        held = any(advice.within(k, dep) for k in swept for dep in depends)
        if not held or any(advice.within(k, key) for k in swept):
            continue
        held = _everywhere(found, key, reason)
        if held == "word for word":
            warn(points[0].source, key, reason)
        elif held == "in other numbers":
            warn(points[0].source, key, f"at every point, as at the first: {reason}")


def _everywhere(found: list[list[tuple[str, str]]], key: str, reason: str) -> str | None:
    """Whether every point warns at `key` as the first point does: "word for word", "in other
    numbers" (the same words, its counts differ: 8 replicas for 4 users, 16 for 4), else None."""
    if all((key, reason) in at for at in found[1:]):
        return "word for word"
    words = _in_words(reason)
    if all(any(k == key and _in_words(r) == words for k, r in at) for at in found[1:]):
        return "in other numbers"
    return None


def _in_words(reason: str) -> str:
    """A warning's words without its numbers: one check's warning at two points where the counts
    differ (8 replicas for 4 users, 16 for 4) reads the same; another check's does not."""
    return re.sub(r"(\w+?)s\b", r"\1", re.sub(r"\d[\d,.]*", "#", reason))  # 1 request, 2 requests


def _differ_elsewhere(points: list[Scenario], swept: str, key: str) -> bool:
    """Whether the points' values of a swept section differ outside `key`, the key inside it that
    one warning names at every point (a sweep over whole speculative sections, each a block
    drafter the release lacks: their steps still differ). A warning at the swept key or above it
    speaks of all that the points vary."""
    from mtpsim.overrides import canonical
    if not key.startswith(swept + "."):
        return False
    *path, leaf = key[len(swept) + 1:].split(".")
    rest = set()
    for s in points:
        value = copy.deepcopy(s.point[swept])
        parent = value
        for part in path:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent.pop(leaf, None)
        rest.add(canonical(value))
    return len(rest) > 1


def _unread_or_null(points: list[Scenario], swept: str, skip: tuple) -> None:
    """A swept key null at some points and, at every other, named by a check whose warnings say
    the value is not read (advice.UNREAD_CHECKS): its default is no more read than its values, so the
    points are the same run (`workload.rate_per_s: [null, 5]` under a closed loop)."""
    from mtpsim.errors import warn
    unread = [[found for check in advice.UNREAD_CHECKS if check not in skip for found in check(s)
               if advice.within(swept, found[0])] for s in points]
    null = [s.point[swept] is None for s in points]
    said = next((at[0] for at in unread if at), None)
    if said is not None and any(null) and all(at or blank for at, blank in zip(unread, null)):
        warn(points[0].source, f"sweep.{swept}", f"{said[0]}: {said[1]} where it is set, and null elsewhere: these "
             "points are the same run")
