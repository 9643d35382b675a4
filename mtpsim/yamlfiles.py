"""YAML under one set of rules (`load_yaml`, `parse_yaml`, `load_yaml_documents`):
- safe constructors only: a custom or `!!python` tag is an error, never code;
- a duplicate key is an error naming its dotted key path (YAML would keep the last silently);
- merge keys follow YAML's rule: a mapping's own keys win, then the first of the mappings `<<`
  merges that gives a key (PyYAML's own choice depends on the key's length); a second `<<` in
  one mapping is a duplicate key;
- nesting is at most MAX_DEPTH levels and aliases may expand to at most MAX_VALUES values (an
  alias bomb is refused before anything walks it); each use of an alias is a copy of its own, so
  changing one (--set, a sweep) leaves the others as written;
- floats follow YAML 1.2 as well as 1.1: `1e9`, `989e12` and `-.5` are numbers, not strings;
- numbers are written in decimal: YAML 1.1's other spellings (`010` octal = 8, `0x4`, `0b11`,
  `1:30` sexagesimal = 90, `1_000`) and YAML 1.2's octal (`0o10`, text to YAML 1.1) are errors,
  not silently other values;
- `-0.0` reads as 0.0: a zero's sign means nothing to a user, but it passes a `>= 0` bound and
  then NumPy refused it (`normal(scale=-0.0)` raised `scale < 0` from inside a run).
The file itself is read by textfiles.py's rules. Where PyYAML was built with libyaml, its C
parser reads the text into events and the rules above compose and construct them in Python
(~8x faster than PyYAML's pure-Python scanner and parser, ~0.04 s of each `mtpsim run`'s
start-up over the catalog files it reads); a text it refuses is read again by the pure-Python
loader, whose error is the one reported (libyaml words its own), and one that breaks a rule above
is refused as it is (the same words: reading it again took ~10 s a MB).
Writing (`dump_yaml_all`) takes libyaml's emitter likewise: the same text, a few times faster.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from mtpsim.errors import ScenarioError, short
from mtpsim.textfiles import read_text, unsigned
from mtpsim.textnumbers import DECIMAL

MAX_YAML_BYTES = 4 * 2**20     # scenarios and catalog entries are a few kB
MAX_DEPTH = 64                 # YAML nesting levels
MAX_VALUES = 200_000           # YAML values after alias expansion

# YAML 1.2's floats YAML 1.1 reads as text: an exponent without a dot or sign (`1e9`), and a sign
# before a leading dot (`-.5`, `+.25`: 1.1 signs only a float that starts with a digit, so `-.5` was
# the string '-.5' where a number goes, refused as `a valid number`)
_FLOAT_12 = re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+|[-+]\.[0-9]+)$")
# YAML 1.2's octal (`0o17` = 15), which YAML 1.1 reads as the text '0o17': refused, as 1.1's other
# number spellings are, where it went on as text to `not a valid integer` (or into a name)
_OCTAL_12 = re.compile(r"[-+]?0o[0-7_]+")
_MERGE = "tag:yaml.org,2002:merge"
# keys YAML 1.1 reads as something no scenario, catalog or engine file keys by: said as written,
# where the schema's `Keys should be strings (got True)` at the path `engine.1` named a key no one wrote
_NOT_KEYS = {"tag:yaml.org,2002:bool": "a boolean (YAML 1.1: true, yes, on, false, no, off)",
             "tag:yaml.org,2002:float": "a fraction", "tag:yaml.org,2002:null": "null"}
_NUMERIC_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool")}
_DECIMAL = {"tag:yaml.org,2002:int": re.compile(r"[-+]?(?:0|[1-9][0-9]*)"),
            "tag:yaml.org,2002:float": re.compile(rf"{DECIMAL.pattern}|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")}


_INT, _FLOAT, _BOOL, _TIMESTAMP = (f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "timestamp"))
_TAGGED = {_INT: "int", _FLOAT: "float", _BOOL: "bool", _TIMESTAMP: "timestamp"}


class _Problem(Exception):
    """Raised inside the loader with the dotted path where it happened."""

    def __init__(self, path: list, reason: str):
        self.key, self.reason = ".".join(str(p) for p in path if p is not None), reason


class _Rules:
    """A loader's composer that tracks the key path it is composing, refuses duplicate keys,
    YAML 1.1 number spellings and deep nesting, and merges keys by YAML's rule."""

    _path: list

    def compose_node(self, parent, index):
        if len(self._path) > MAX_DEPTH:
            raise _Problem(self._path, f"nested deeper than {MAX_DEPTH} levels")
        self._path.append(index.value if isinstance(index, yaml.ScalarNode) else index)
        try:
            node = super().compose_node(parent, index)
            # a plain scalar's style: None in PyYAML's events, '' in libyaml's
            bare = isinstance(node, yaml.ScalarNode) and not node.style
            # a number's spelling, bare or quoted under an explicit !!int / !!float tag (a quoted scalar
            # is text unless tagged so: its tag is an int's or a float's only then)
            plain = _DECIMAL.get(node.tag) if isinstance(node, yaml.ScalarNode) else None
            if node.tag == _MERGE and index is not None:  # a `<<` not in a mapping's key: an item or a value
                raise _Problem(self._path, "'<<' is YAML's merge key, which only a mapping's key can be (<<: *anchor); "
                               "quote it to mean the text")
            if bare and _OCTAL_12.fullmatch(node.value):
                raise _Problem(self._path, f"{node.value[:40]!r} is a YAML 1.2 octal number (YAML 1.1 reads it as "
                               "text): write the number in decimal, or quote it for a string")
            if isinstance(node, yaml.ScalarNode) and node.tag in _TAGGED:
                # an explicit !!bool / !!timestamp / !!int / !!float on a value that does not read as
                # one (PyYAML's constructor fails with a KeyError or AttributeError, or misreads it)
                reads = self.resolve(yaml.ScalarNode, node.value, (True, False))
                if reads != node.tag and not (node.tag == _FLOAT and reads == _INT):
                    what = {_TIMESTAMP: "a date", _BOOL: "true or false"}.get(node.tag, "a number")
                    raise _Problem(self._path, f"{node.value[:40]!r} is tagged !!{_TAGGED[node.tag]} but is not {what}: "
                                   "write the value itself, or quote it for a string")
            if isinstance(node, yaml.ScalarNode) and node.tag == _TIMESTAMP:
                try:  # a date's spelling past the calendar (2001-13-45) fails only when built, where no key is known
                    self.construct_yaml_timestamp(node)
                except (ValueError, OverflowError) as exc:
                    raise _Problem(self._path, f"{node.value[:40]!r} is not a date ({exc}): write a real date, or "
                                   "quote it for a string") from None
            if plain and not plain.fullmatch(node.value):
                raise _Problem(self._path, f"{node.value[:40]!r} is a YAML 1.1 number spelling (octal, hex, binary, "
                               "sexagesimal or with underscores) that would read as another value: write it in "
                               "decimal, or quote it for a string")
            return node
        finally:
            self._path.pop()

    def compose_mapping_node(self, anchor):
        node = super().compose_mapping_node(anchor)
        seen: set[tuple[bool, str]] = set()  # a merge key `<<` apart from a quoted '<<'
        values: dict = {}  # keys as Python reads them: `1`, `1.0` and `true` are one dict key
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode):
                spelled = (key.tag == _MERGE, key.value)
                if spelled in seen:  # a second `<<` too: PyYAML would merge both, the later one winning
                    raise _Problem([*self._path, key.value[:60]],
                                   f"duplicate key (again on line {key.start_mark.line + 1})")
                seen.add(spelled)
                if key.tag in _NUMERIC_TAGS:
                    value = self.construct_object(key)
                    if value in values:
                        raise _Problem([*self._path, key.value[:60]], f"the same key as {values[value]!r} "
                                       f"(equal as numbers; line {key.start_mark.line + 1})")
                    values[value] = key.value[:60]
                if key.tag in _NOT_KEYS:  # after the check above: `{1: 2, 1.0: 1}` is a duplicate first
                    raise _Problem(self._path, f"{key.value[:40]!r} as a key reads as {_NOT_KEYS[key.tag]} (line "
                                   f"{key.start_mark.line + 1}): a key is a name or a whole number; quote it to mean the text")
        return node

    def flatten_mapping(self, node):
        """YAML's merge rule (https://yaml.org/type/merge.html): a mapping's own keys win over
        merged ones, and of the mappings `<<: [A, B]` merges, the first that gives a key wins.
        PyYAML 6.0.4 kept every merged pair, told apart by the key string's identity: the last
        source won for most keys and the first for one-character (interned) ones."""
        merged, own, merges = [], [], False
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                if key_node.tag == "tag:yaml.org,2002:value":  # as PyYAML reads `=`
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            merges = True
            for source in _merge_sources(node, value_node):
                self.flatten_mapping(source)
                merged += source.value
        if merges:  # an empty merge (`<<: {}`, `<<: []`) merges nothing: its key goes with it
            node.value = self._merged_pairs(merged, own)

    def _merged_pairs(self, merged: list, own: list) -> list:
        """One pair per key, in the order a dict of PyYAML's reading puts them (merged keys first,
        each where it first appears), with the winner's value: its own, else the first merged.
        Only winners are kept, so a mapping that merges this one takes them as they are."""
        own_pairs = {self._key_of(k): (k, v) for k, v in own}
        pairs, seen = [], set()
        for key_node, value_node in merged:
            key = self._key_of(key_node)
            if key not in seen:
                seen.add(key)
                pairs.append(own_pairs.pop(key, (key_node, value_node)))
        return pairs + list(own_pairs.values())

    def _key_of(self, key_node: yaml.Node):
        """A key as Python reads it; a non-scalar key by its node (construct_mapping refuses it)."""
        return self.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else key_node


class _Loader(_Rules, yaml.SafeLoader):
    """PyYAML's pure-Python SafeLoader under the rules: every error is this loader's."""

    def __init__(self, stream):
        super().__init__(stream)
        self._path = []


_CParser = getattr(getattr(yaml, "_yaml", None), "CParser", None)  # None: PyYAML built without libyaml


class _FastLoader(_Rules, Composer, _CParser or object, SafeConstructor, Resolver):
    """libyaml's parser (its events) under the rules, composed and constructed as _Loader does:
    the same values, and what it refuses _Loader reads again (tests/test_yaml_parsers.py
    compares the two). Used only where _CParser is."""

    def __init__(self, stream):
        _CParser.__init__(self, stream)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        Composer.__init__(self)
        self._path = []


def _unsigned_zero(loader, node) -> float:
    """A float as YAML reads it, a negative zero as 0.0 (textfiles.py `unsigned`)."""
    return unsigned(SafeConstructor.construct_yaml_float(loader, node))


for _loader in (_Loader, _FastLoader):
    _loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
    _loader.add_constructor("tag:yaml.org,2002:float", _unsigned_zero)


def _merge_sources(node: yaml.MappingNode, value: yaml.Node) -> list[yaml.MappingNode]:
    """The mappings a merge key's value names, in order: one mapping, or a sequence of them."""
    sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
    for source in sources:
        if not isinstance(source, yaml.MappingNode):
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    f"expected a mapping or list of mappings for merging, but found "
                                                    f"{source.id}", source.start_mark)
    return sources


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values the node stands for once aliases are expanded (each shared node counted
    every time it is used), stopping early past MAX_VALUES."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_VALUES + 1  # a node reached again while being counted: a cycle
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        children = []
    size = 1
    for child in children:
        size += _expanded_size(child, memo)
        if size > MAX_VALUES:
            break
    memo[id(node)] = size
    return size


def parse_yaml(text: str, where: str) -> Any:
    """YAML text -> Python values under the rules above; ScenarioError(where, key path, reason)."""
    documents = _parse(text, where, multi=False)
    return documents[0] if documents else None


def _unprintable(exc: yaml.reader.ReaderError, text: str, where: str) -> ScenarioError:
    """A character YAML does not allow in its text (a control character, or a byte that was
    not UTF-8 read through the command line), by its code point and line."""
    char = exc.character if isinstance(exc.character, int) else ord(exc.character)
    line = text.count("\n", 0, exc.position) + 1
    return ScenarioError(where, f"line {line}", f"character U+{char:04X} is not allowed in YAML text "
                         "(control characters and undecodable bytes are not)")


def _parse(text: str, where: str, multi: bool) -> list:
    """The documents of a YAML text (at most one unless `multi`), each checked as above: read by
    libyaml's parser where there is one, and by PyYAML's own where that fails (the error said is
    always PyYAML's)."""
    try:
        loader = _Loader(text)  # PyYAML's reader refuses non-printable characters here, before parsing
    except yaml.reader.ReaderError as exc:
        raise _unprintable(exc, text, where) from None
    if _CParser is not None:
        fast = _FastLoader(text)
        try:
            return _documents(fast, where, multi)
        except ScenarioError:  # the text parsed and broke a rule of this module (a size): said as it is
            loader.dispose()
            raise
        except _Problem as exc:  # likewise (a duplicate key, a number's spelling, nesting): the same words
            loader.dispose()     # PyYAML's loader would say, without reading the text again at ~10 s a MB
            raise ScenarioError(where, exc.key, exc.reason) from None
        except Exception:  # noqa: BLE001 -- whatever refused the text, PyYAML's loader says what
            pass
        finally:
            fast.dispose()
    try:
        return _documents(loader, where, multi)
    except _Problem as exc:
        raise ScenarioError(where, exc.key, exc.reason) from None
    except yaml.reader.ReaderError as exc:
        raise _unprintable(exc, text, where) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark else ""
        problem = short(getattr(exc, "problem", None) or str(exc), 200)[1:-1]
        kind = "YAML syntax error"
        if isinstance(exc, yaml.constructor.ConstructorError):
            kind = "YAML tag not allowed" if "tag" in problem else "YAML value not readable"
        raise ScenarioError(where, line, f"{kind}: {problem}") from None
    except (ValueError, RecursionError, KeyError, AttributeError, TypeError, OverflowError) as exc:
        # e.g. an integer of more than 4300 digits, a date past the calendar
        raise ScenarioError(where, "", f"YAML value not readable: {short(str(exc), 120)[1:-1]}") from None
    finally:
        loader.dispose()


def _documents(loader, where: str, multi: bool) -> list:
    """The loader's documents, constructed, after each one's expanded size is checked."""

    def nodes():
        if multi:
            while loader.check_node():
                yield loader.get_node()
        elif (node := loader.get_single_node()) is not None:
            yield node

    documents = []
    for node in nodes():
        if _expanded_size(node, {}) > MAX_VALUES:
            raise ScenarioError(where, "", f"expands to more than {MAX_VALUES:,} values, aliases expanded "
                                "(scenarios and catalog entries hold a few hundred)")
        documents.append(_unshared(loader.construct_document(node)))
    return documents


def _unshared(value: Any) -> Any:
    """`value` with every mapping and list its own: YAML builds each use of an alias as the one
    object its anchor made, so a key --set (or a sweep) changed under one use changed every other
    (`input_len: &len {...}`, `output_len: *len`: --set workload.input_len.min=4000 made the
    outputs 4000 tokens too). Bounded: the expanded size is checked before (MAX_VALUES)."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def load_yaml_documents(path: str | Path, where: str | None = None) -> list:
    """Every document of a multi-document YAML file (a run's scenario.resolved.yaml, one per
    point, can exceed MAX_YAML_BYTES: the general file limit applies)."""
    where = where or str(path)
    return _parse(read_text(path, where), where, multi=True)


def load_yaml(path: str | Path, where: str | None = None) -> Any:
    """A YAML file's contents (None when empty)."""
    where = where or str(path)
    return parse_yaml(read_text(path, where, MAX_YAML_BYTES), where)


# libyaml's safe emitter where PyYAML has it (its wheels do), else the pure-Python one: byte for
# byte the same text on every shipped and published scenario (checked 2026-12-04), ~4.6x faster
_SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml_all(documents: list, **options) -> str:
    """yaml.safe_dump_all's text of `documents`, by the fastest safe emitter at hand."""
    return yaml.dump_all(documents, Dumper=_SAFE_DUMPER, **options)


PLAIN = (str, bool, int, float, type(None))  # the values YAML reads (besides lists and mappings)


def plain_values(value: Any, where: str, key: str = "", depth: int = 0) -> Any:
    """A value handed to mtpsim in code (a mapping given to `load`, `disaggregated`'s pools) holding
    only what a YAML file can (else an error at `where` naming the key path of what does not), as a
    copy of built-in types: a subclass (an OrderedDict, a str or int Enum, a
    list subclass) as the dict, str, int or list it is, which the YAML writer takes; an integer
    or text no YAML file could hold (past the 4,300 digits Python converts, a lone surrogate) is
    named, not met as a ValueError or UnicodeError when the mapping is written out."""
    if depth > MAX_DEPTH:
        raise ScenarioError(where, short(key, 80)[1:-1], f"nested deeper than {MAX_DEPTH} levels (a mapping that "
                            "holds itself?)")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ScenarioError(where, key, f"a key is {type(k).__name__} {short(k, 40)}: keys are text (or "
                                    "integers, as steps_by_batch's batch sizes)")
            k = plain_values(k, where, key, depth + 1)
            out[k] = plain_values(v, where, f"{key}.{k}" if key else str(k), depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [plain_values(v, where, f"{key}.{i}", depth + 1) for i, v in enumerate(value)]
    if not isinstance(value, PLAIN):
        raise ScenarioError(where, key, f"is {type(value).__module__}.{type(value).__qualname__} {short(value, 40)}: "
                            "a scenario holds what YAML does (str, int, float, bool, None, lists and dicts; "
                            "int(x) or float(x) for a NumPy number)")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        text = str.__str__(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ScenarioError(where, key, f"holds {text[exc.start]!r}, a lone surrogate no UTF-8 text (and so no "
                                "file) can hold") from None
        return text
    if isinstance(value, int):
        number = int.__index__(value)
        try:
            str(number)
        except ValueError:
            raise ScenarioError(where, key, f"an integer of {number.bit_length():,} bits, more digits than a YAML "
                                "file's number may have (4,300)") from None
        return number
    return float(value)
