"""Engine releases: an engine file (mtpsim/data/engines/<kind>.yaml) holds the engine's fields as
they are at every release it knows (engines.py `EngineSpec`), plus
- `versions`: the releases it knows (`known`) and the one a scenario without `engine.version`
  runs (`default`);
- `rules`: fields that differ between releases, each a named change over a version range
  (`since` inclusive, `until` exclusive) with its source at that version. A rule sets a field of
  `EngineSpec` or, by a dotted path, one key inside one (`kv_pool.reserved.speculative_mib`), so a
  release that changes one figure of a section does not restate the section.

A rule applies to every scenario of its versions, never to one case; `engine.ignore_rules`
resolves without some (what-if studies, benchmarks/published.py --rules). This module is the one
home of that resolution: `run`, `recommend`, `cost` and the benchmarks all get their engine here
through resolve.py.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal, get_args

from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError, field_validator, model_validator

from mtpsim.engines import EngineSpec
from mtpsim.errors import AtKey, ScenarioError, from_validation, short, warn
from mtpsim.specs import Spec
from mtpsim.textnumbers import first_repeat

RuleField = Literal["speculative_max_running_requests", "architecture_running_cap", "speculative_overlap",
                    "speculative_overlap_possible", "compressed_query_heads",
                    "verify_scorer",
                    "fuses_shared_experts", "shared_fusion_below_capability", "triton_fp8_moe_from_capability",
                    "shared_expert_stream",
                    "fraction_by_tp", "unoverlapped_designs", "speculative_overlap_max_topk", "decode_overlap",
                    "speculative_host_extra_s", "eager_passes", "mixed_head_attention", "mixes_as_decode", "lacks_methods",
                    "lacks_architectures",
                    "mixed_head_fa4_capability",
                    "kv_pool.reserved.speculative_mib", "kv_pool.reserved.classes", "kv_pool.fraction",
                    "kv_pool.margin_mib", "kv_pool.margin_activation_share", "prefill_chunk",
                    "prefix_cache.block_tokens", "dp_routing.waiting_weight", "cuda_graph", "running_cap", "hides"]
# an engine file's releases and rules, at most: each rule is tested at every release (an engine
# publishes tens of each; thousands would take seconds to check before anything ran)
MAX_RELEASES = MAX_RULES = 500


class VersionRule(Spec):
    """One field's value over a range of releases, with the source that shows it there."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    field: RuleField

    @field_validator("field", mode="before")
    @classmethod
    def _a_whole_section(cls, value):
        """`cuda_graph.max` or `kv_pool.knob` was refused with the 27 fields a rule sets, cut in
        the middle: say that a rule sets such a section whole, or which keys of it a rule sets."""
        head, dot, _ = value.partition(".") if isinstance(value, str) else ("", "", "")
        fields = get_args(RuleField)
        inside = [f for f in fields if f.startswith(f"{head}.")]
        if dot and value not in fields and head in fields:
            raise ValueError(f"{short(value)}: a rule sets {head} whole, not one key of it (field: {head}, "
                             f"value: the whole {head} section at those releases)")
        if dot and value not in fields and inside:
            raise ValueError(f"{short(value)}: inside {head} a rule sets only {', '.join(inside)}")
        return value
    value: Any
    since: str | None = None  # the first release it holds for
    until: str | None = None  # the first release it no longer holds for
    source: str = Field(min_length=1)

    def holds_at(self, version: Version) -> bool:
        return (self.since is None or version >= release(self.since)) and \
            (self.until is None or version < release(self.until))


class Versions(Spec):
    default: str
    known: list[str] = Field(min_length=1, max_length=MAX_RELEASES)

    @model_validator(mode="after")
    def _each_once(self) -> Versions:
        """A release known twice says nothing more, and reads as a typo for another release."""
        again = first_repeat(self.known)
        if again is not None:
            raise AtKey(f"known.{again}", f"{short(self.known[again], 40)} is listed twice: list each release once")
        return self


@functools.lru_cache(maxsize=4096)  # a rule's since / until is read at every release it is tested at
def release(text: str) -> Version:
    """A release's comparable form: its number and post part (0.5.12.post1 comes after 0.5.12 and
    before 0.5.13), nothing else. A rule that names a release holds at its post releases as at it
    (a post release runs its release's code paths); one that names a post release as a bound holds
    from or until exactly that one (SGLang's EAGLE3 method came in 0.4.4.post2). What a file or
    scenario names is read by `_plain_release` first, which refuses what is no release."""
    at = Version(text)
    return Version(at.base_version + (f".post{at.post}" if at.post is not None else ""))


def _plain_release(text: str) -> Version:
    """`text` as the release it names (comparable, as `release`); ValueError, its reason a clause,
    unless it is a release written as its engine publishes it (0.5.12, 0.5.12.post1): no leading
    'v', no epoch, no local '+' part, no pre-release or .dev build (code before the release, which
    the release's rules may not describe), no other spelling of the same number (0.5.012, 0.5.12-1)."""
    if text.startswith(("v", "V")):  # not text[:1] in "vV", which an empty text passes
        raise ValueError(f"a leading {text[0]!r} is no part of a release number: write the number alone")
    try:
        at = Version(text)
    except InvalidVersion:
        raise ValueError("not a release number (e.g. 0.5.12)") from None
    if at.epoch:
        raise ValueError("an epoch '!' part names no release: write the release alone")
    if at.local:
        raise ValueError(f"a local '+' part marks a build, not a release: write the release alone ({at.public})")
    if at.is_prerelease:  # a, b, rc and .dev
        raise ValueError(f"a {'development build' if at.is_devrelease else 'pre-release'} of {at.base_version}, "
                         "not a release: its code may predate the release's rules (write the release it led to, "
                         "or the one before, to price it with that release's rules)")
    if str(at) != text:
        raise ValueError(f"written unusually: write it as {at}")
    return release(text)


def resolve_engine(raw: dict, version: str | None, ignore: list[str] | tuple[str, ...] = (),
                   where: str = "<scenario>", file: str | None = None) -> EngineSpec:
    """The engine file `raw` (read from `file`) at `version` (None: its default), without the
    rules in `ignore`. An unknown version or rule name is a ScenarioError naming engine.version /
    engine.ignore_rules; a fault of the file itself names the file and its key."""
    raw = dict(raw)
    file = file or f"engines/{raw.get('name')}.yaml"
    versions, rules = _versions(raw.pop("versions", None), raw, file), _rules(raw.pop("rules", ()), raw, file)
    _check_file(raw, rules, versions, file)
    chosen = version or versions.default
    at = _known(chosen, versions, raw.get("name", "?"), where)
    unknown = sorted(set(ignore) - {r.name for r in rules})
    if unknown:
        raise ScenarioError(where, "engine.ignore_rules", f"no rule {short(unknown[0])} for {raw.get('name')} "
                            f"(its rules: {', '.join(r.name for r in rules) or 'none'})")
    idle = [r.name for r in rules if r.name in ignore and not r.holds_at(at)]
    if idle or len(set(ignore)) < len(ignore):  # leaving out what is not in force changes nothing
        again = first_repeat(list(ignore))
        warn(where, "engine.ignore_rules", f"{short(ignore[again])} is listed twice" if again is not None else
             f"rule {idle[0]} does not hold at {raw.get('name')} {chosen}: leaving it out changes nothing")
    applied = [r for r in rules if r.holds_at(at) and r.name not in ignore]
    fields = dict(raw)
    for r in applied:
        fields = _with(fields, r.field, r.value)
    fields = {**fields, "version": chosen, "rules": tuple(r.name for r in applied),
              "set_by": {r.field: r.name for r in applied}}
    try:
        return EngineSpec.model_validate(fields)
    except ValidationError as exc:  # each rule's value passed alone (_check_file): two together clash
        raise ScenarioError(file, "rules", f"the rules in force at {chosen} clash: {exc.errors()[0]['msg']}") from None


def _check_file(raw: dict, rules: list[VersionRule], versions: Versions, file: str) -> None:
    """The file's own fields, then each rule's value over them, whatever release it holds at
    (a bad value used to pass until a scenario picked that release), its bounds among the releases
    the file knows, and no two rules setting one field at one release; the name is the file's."""
    stem = Path(file).stem
    if raw.get("name") != stem:
        raise ScenarioError(file, "name", f"{short(raw.get('name'))} is not the file's name {stem!r}: a scenario's "
                            "engine.kind names the file")
    base = {**raw, "version": "0", "rules": ()}
    known = {release(v).release: release(v) for v in versions.known}  # release tuple -> comparable release
    try:
        EngineSpec.model_validate(base)
    except ValidationError as exc:
        raise from_validation(exc, file, data=base) from None
    for i, rule in enumerate(rules):
        parent = rule.field.rpartition(".")[0]
        if parent and not isinstance(_at(base, parent), dict):
            raise ScenarioError(file, f"rules.{i}.field", f"rule {rule.name} sets {rule.field}, but the file has no "
                                f"{parent} section to set it in")
        if rule.field == "kv_pool.fraction" and base.get("fraction_by_tp") is not None:
            raise ScenarioError(file, f"rules.{i}.field", f"rule {rule.name} sets kv_pool.fraction, which the file's "
                                "fraction_by_tp table overrides at every release: it would never be read")
        try:
            EngineSpec.model_validate(_with(base, rule.field, rule.value))
        except ValidationError as exc:
            bad = from_validation(exc, file)
            raise ScenarioError(file, f"rules.{i}.value", f"rule {rule.name} sets {bad.key}: {bad.reason}") from None
        for key, bound in (("since", rule.since), ("until", rule.until)):
            # a bound no scenario can name: 'since: 9.9.9' never applies, and one between two known
            # releases moves which of them the rule holds at without a line saying so
            if bound is not None and release(bound).release not in known:
                raise ScenarioError(file, f"rules.{i}.{key}", f"{short(bound)} is not among versions.known: a rule "
                                    "holds from and until releases the file knows")
        if rule.since is not None and rule.until is not None and release(rule.until) <= release(rule.since):
            raise ScenarioError(file, f"rules.{i}.until", f"rule {rule.name} holds for no release (until {rule.until} "
                                f"is not after since {rule.since})")
        # a rule from a post release (since: 0.4.4.post2) may hold at post releases alone
        holds = [*known.values(), *([release(rule.since)] if rule.since is not None else [])]
        if not any(rule.holds_at(k) for k in holds):
            raise ScenarioError(file, f"rules.{i}.until", f"rule {rule.name} holds for no release of versions.known "
                                f"(until {rule.until} is the first)")
    names = [r.name for r in rules]
    again = first_repeat(names)
    if again is not None:
        raise ScenarioError(file, "rules", f"two rules are named {names[again]}: engine.ignore_rules names them one by one")
    _no_overlap(rules, sorted(known.values()), file)


def _at(fields: dict, path: str):
    """The value at dotted `path` in `fields` (None where a key is missing or a level is no mapping)."""
    for key in path.split("."):
        fields = fields.get(key) if isinstance(fields, dict) else None
    return fields


def _with(fields: dict, path: str, value) -> dict:
    """`fields` with the key at dotted `path` set to `value`: each level on the way copied, nothing
    of `fields` changed (an engine file's mapping is read once and resolved at many releases)."""
    head, _, rest = path.partition(".")
    if not rest:
        return {**fields, head: value}
    return {**fields, head: _with(fields[head], rest, value)}


# fields that give one figure: a release's fraction table (memory.py resolve_pool) wins over the
# pool's fixed fraction, so a rule setting either where the other's rule holds sets it twice
_ONE_FIGURE = {"fraction_by_tp": "kv_pool.fraction"}


def _no_overlap(rules: list[VersionRule], releases: list[Version], file: str) -> None:
    """No two rules set one field at one release of `releases`: the later in the file would win
    there without a word (and leaving it out, engine.ignore_rules, would bring back the other)."""
    held = [frozenset(v for v in releases if rule.holds_at(v)) for rule in rules]  # each rule's releases, once
    figure = [_ONE_FIGURE.get(rule.field, rule.field) for rule in rules]
    for j, later in enumerate(rules):
        for i, earlier in enumerate(rules[:j]):
            both = sorted(held[i] & held[j]) if figure[i] == figure[j] else []
            if both:
                span = str(both[0]) if len(both) == 1 else f"{both[0]} to {both[-1]}"
                does = "does" if earlier.field == later.field else f"sets {earlier.field}"
                raise ScenarioError(file, f"rules.{j}", f"rule {later.name} sets {later.field} where rule {earlier.name} "
                                    f"(rules.{i}) {does}, at {span}: one release, one value (end one rule's range where "
                                    "the other's begins: until / since)")


def engine_rules(raw: dict, file: str | None = None) -> list[VersionRule]:
    """The rules of an engine file `raw` read from `file` (for listings and the leave-one-rule-out
    benchmark); a fault names `file` (None: a mapping of no file, engines/<its name>.yaml)."""
    return _rules(raw.get("rules", ()), raw, file)


def known_versions(raw: dict, file: str | None = None) -> Versions:
    """The releases of an engine file `raw` read from `file` (as engine_rules)."""
    return _versions(raw.get("versions"), raw, file)


def _known(chosen: str, versions: Versions, name: str, where: str) -> Version:
    """`chosen` as a comparable release, when the engine file knows it."""
    try:
        at = _plain_release(chosen)
    except ValueError as exc:  # '0.5.12+evil' or 'V0.5.12' would run (and be recorded as) 0.5.12
        raise ScenarioError(where, "engine.version", f"unknown {name} version {short(chosen)}: {exc}") from None
    # written out to its last part: "0.5" names the 0.5 series, not its first release 0.5.0, though
    # the two compare equal
    if at.release not in {release(v).release for v in versions.known}:
        series = [v for v in versions.known if release(v).release[:len(at.release)] == at.release]
        hint = f"it names a series: write one release of it ({', '.join(series)}); " if series else ""
        raise ScenarioError(where, "engine.version", f"unknown {name} version {short(chosen)} "
                            f"({hint}known: {', '.join(versions.known)})")
    return at


def _versions(data, raw: dict, file: str | None = None) -> Versions:
    file = file or f"engines/{raw.get('name')}.yaml"
    if data is None:
        raise ScenarioError(file, "versions", "an engine file needs versions: {default, known}")
    try:
        versions = Versions.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, file, "versions", data=data) from None
    for key, v in [("versions.default", versions.default), *(("versions.known", k) for k in versions.known)]:
        _release_in(v, file, key)
    if release(versions.default) not in {release(v) for v in versions.known}:
        raise ScenarioError(file, "versions.default", "is not among versions.known")
    return versions


def _rules(data, raw: dict, file: str | None = None) -> list[VersionRule]:
    file = file or f"engines/{raw.get('name')}.yaml"
    if not isinstance(data, (list, tuple)):
        raise ScenarioError(file, "rules", f"expected a list of rules, got {short(data)}")
    if len(data) > MAX_RULES:
        raise ScenarioError(file, "rules", f"{len(data):,} rules: an engine file gives at most {MAX_RULES}")
    rules = []
    for i, r in enumerate(data):
        try:
            rule = VersionRule.model_validate(r)
        except ValidationError as exc:
            raise from_validation(exc, file, f"rules.{i}", data=r) from None
        for key, v in (("since", rule.since), ("until", rule.until)):
            if v is not None:
                _release_in(v, file, f"rules.{i}.{key}")
        rules.append(rule)
    return rules


def _release_in(text: str, file: str, key: str) -> Version:
    """A release an engine file names, written plainly (`_plain_release`)."""
    try:
        return _plain_release(text)
    except ValueError as exc:
        raise ScenarioError(file, key, f"{short(text)}: {exc}") from None


__all__ = ["VersionRule", "Versions", "engine_rules", "known_versions", "release", "resolve_engine"]
