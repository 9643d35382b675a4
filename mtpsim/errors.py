"""The one error type users see: a file, a key path and a reason, printed without a traceback."""
from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic loads with the schema, not with every one-line error
    from pydantic import ValidationError


class ScenarioError(Exception):
    """Bad input. `where` is the file (or catalog entry), `key` the dotted key path ('' = whole)."""

    def __init__(self, where: str, key: str, reason: str):
        self.where, self.key, self.reason = where, key, reason
        # args are the three parts, so `type(e)(*e.args)` rebuilds the error (simpy re-raises a
        # process's exception that way)
        super().__init__(where, key, reason)

    @property
    def message(self) -> str:
        """`where: key: reason`, where naming --set for a key whose value the flag gave (a long
        path cut in its middle, so its start and its file name still show)."""
        at = f": {'.'.join(map(_part, self.key.split('.')))}" if self.key else ""
        by_flag = self.key and set_by_flag(self.where, self.key)
        return f"{'--set' if by_flag else cut_middle(self.where, MAX_WHERE)}{at}: {self.reason}"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        """Rebuilt from its three parts, so an error raised in a sweep's worker process reaches
        the user as the same one-line error (the default pickling passes only the message)."""
        return type(self), (self.where, self.key, self.reason)


class AtKey(ValueError):
    """A spec validator's error about one of its own keys (`key`, dotted, below the spec): the
    ScenarioError then names that key, not the spec as a whole."""

    def __init__(self, key: str, reason: str):
        self.key, self.reason = key, reason
        super().__init__(reason)


MAX_LINE = 480   # characters in one `mtpsim: error:` or `mtpsim: warning:` line (the rule: under 500)
MAX_WHERE = 200  # characters of the file (or flag) an error names


def cut_middle(text: str, limit: int) -> str:
    """`text`, or its start and end around ` ... ` when it is longer than `limit`: a path keeps
    its first folders and its file name, a message its file, key and last words."""
    if len(text) <= limit:
        return text
    head = (limit - 5) * 2 // 3
    return f"{text[:head]} ... {text[len(text) - (limit - 5 - head):]}"


def line(kind: str, message: str, prog: str = "mtpsim") -> str:
    """What mtpsim prints for an error or warning (`kind`): `mtpsim: kind: message`, control
    characters escaped and at most MAX_LINE characters, whatever value the message echoes whole
    (a user's 3,000-character knob name, a 2,000-digit flag): the one-line rule, kept in one place."""
    return cut_middle(f"{prog}: {kind}: {printable(message)}", MAX_LINE)


def short(value: object, limit: int = 80) -> str:
    """repr(value), cut to `limit` characters: an error message never echoes a huge value. A
    numpy scalar (a table's cell) is said as the number it holds, not as `np.int64(0)`."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# a Hugging Face config.json key written in a catalog spec -> what mtpsim calls it (or reads it as)
HF_KEYS = {
    "tie_word_embeddings": "tie_embeddings", "max_position_embeddings": "max_context",
    "num_hidden_layers": "layers (a list of runs: {count, attention, ffn})", "torch_dtype": "dtypes (per part)",
    "dtype": "dtypes (per part)", "num_attention_heads": "attention_kinds.<kind>.num_heads",
    "num_key_value_heads": "attention_kinds.<kind>.num_kv_heads", "intermediate_size": "ffn_kinds.<kind>.intermediate_size",
    "num_nextn_predict_layers": "mtp.num_layers", "quantization_config": "dtypes (per part)",
}


def from_validation(exc: ValidationError, where: str, prefix: str = "", data: object = None) -> ScenarioError:
    """The first pydantic error as a ScenarioError with a dotted key path. `data`: the input that
    was validated, where the caller has it: a part of the path that is one of its keys stays in the
    path even when it spells a union branch's name (a user's `attention_kinds: {Pool: ...}`)."""
    errors = exc.errors()
    err = errors[0]
    if isinstance(err.get("input"), dict):  # a union like `int | mapping`: report the mapping's error
        # one of its own (an unknown key, a bound), else a value of the wrong type inside it: `min: 0.0`
        # in a LengthDist was said as `input_len: Input should be a valid integer (got {...})`, the
        # int branch's error about the whole mapping
        err = next((e for e in errors if not e["type"].endswith("_type")), None) \
            or next((e for e in errors if e.get("input") is not err["input"]), err)
    hint = ""
    if err["type"] == "missing":  # a required key misspelt: the key the user wrote, beside it, is named
        stray = _stray_beside(err, errors)
        if stray is not None:
            import difflib  # the error path only: 1 ms a start otherwise

            wanted = str(err["loc"][-1])
            close = difflib.get_close_matches(str(stray["loc"][-1]), [wanted], n=1, cutoff=0.6)
            hint = f" (did you mean {wanted}? it is required)" if close else f" (and the required key {wanted} is missing)"
            err = stray
    loc = [str(p) for p in err["loc"]]
    named = loc.pop() if err["type"] == "extra_forbidden" and loc else None  # the user's own key, never a tag
    keys = _input_keys(loc, data)
    parts = [p for i, p in enumerate(loc) if i in keys or not _is_union_tag(p)] + ([named] if named is not None else [])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, AtKey):  # a validator that knows which of its keys is wrong
        parts.append(cause.key)
    key = ".".join(p for p in [prefix, *parts] if p and p != "[key]")
    reason = cause.reason if isinstance(cause, AtKey) else err["msg"].removeprefix("Value error, ")
    if "[key]" in parts:  # a mapping's key, not its value, is wrong
        reason = f"as a key: {reason}"
    if err["type"] == "extra_forbidden":
        # at a model spec's top level only (a scenario's model, a draft, a catalog file's root)
        parent = key.rsplit(".", 1)[0] if "." in key else ""
        ours = HF_KEYS.get(named or "") if parent in ("", "model", "speculative.draft") else None
        reason = f"unknown key{hint}" + (f" (Hugging Face's name; mtpsim's is {ours})" if ours and not hint else "")
    elif err["type"] == "missing":
        reason = "required key is missing"
    elif "input" in err and err["type"] not in ("value_error", "assertion_error"):
        if err["type"] in ("model_type", "dataclass_type"):  # pydantic's names its class: "... instance of Workload"
            reason = "expected a section of keys (a mapping) here"
        reason = f"{reason} (got {short(err['input'])})"
    return ScenarioError(where, key, reason)


def _input_keys(loc: list[str], data: object) -> set[int]:
    """The positions in an error's `loc` that are keys (or list indices) of the validated input, read
    down from its root; a union branch's tag is none (it names a type, not a key the user wrote)."""
    found, node = set(), data
    for i, part in enumerate(loc):
        if isinstance(node, dict):
            by_text = {str(k): v for k, v in node.items()}
            if part in by_text:
                found.add(i)
                node = by_text[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            found.add(i)
            node = node[int(part)]
    return found


def _stray_beside(missing: dict, errors: list[dict]) -> dict | None:
    """An unknown key in the same mapping as the `missing` required one: most often it is that key
    misspelt, which "required key is missing" alone never showed the user."""
    where = [p for p in missing["loc"][:-1] if not _is_union_tag(str(p))]
    return next((e for e in errors if e["type"] == "extra_forbidden" and e["loc"]
                 and [p for p in e["loc"][:-1] if not _is_union_tag(str(p))] == where), None)


def _part(part: str, limit: int = 60) -> str:
    """A key path's part as printed: a key the user wrote 100,000 characters long is cut short
    (the error keeps it whole, so the --set that gave it is still found: set_blame.from_set)."""
    return part if len(part) <= limit else f"{part[:limit - 3]}..."


def _is_union_tag(part: str) -> bool:
    """pydantic names union branches in error locations (`int`, `LengthDist`, `function-after[...]`).
    A capitalised part is a branch only where it names a model class: a mapping's own key
    (`architecture_running_cap.DeepseekV4ForCausalLM`) stays in the path."""
    return part.startswith(("function-", "constrained-")) or part in ("int", "str", "float", "bool") \
        or part.startswith(("dict[", "list[")) or (part[:1].isupper() and ("[" in part or _is_model_name(part)))


_MODEL_NAMES: set[str] = set()  # pydantic model classes seen so far: walked again only on a miss


def _is_model_name(part: str) -> bool:
    """Whether `part` names a pydantic model class (a union's branch): the classes are walked once,
    and again only for a name not found (a class imported since, or a mapping's own key), so an
    error of many entries does not walk them per entry."""
    if part not in _MODEL_NAMES:
        from pydantic import BaseModel
        todo, seen = [BaseModel], set()
        while todo:
            for sub in todo.pop().__subclasses__():
                if sub not in seen:
                    seen.add(sub)
                    _MODEL_NAMES.add(sub.__name__)
                    todo.append(sub)
    return part in _MODEL_NAMES


_warned: set[str] = set()


# a line break or a control character: C0 and C1 controls (newline, tab, escape, NEL) and the
# Unicode line and paragraph separators, which str.splitlines() and some terminals break lines at
LINE_BREAKING = ("Cc", "Zl", "Zp")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(c: str) -> str:
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}")


def printable(text: str) -> str:
    """A message as one line: line-breaking and control characters a user's value carried (a
    newline in a flag, an escape, a NEL or U+2028 in a path) written as escapes, not printed raw."""
    if text.isprintable():  # nothing to escape (the usual message)
        return text
    return "".join(_escaped(c) if unicodedata.category(c) in LINE_BREAKING else c for c in text)


# file -> whether a key's value in it came from --set (scenario.load notes it): an error or a
# warning about such a key names --set, whenever and wherever it is raised
_set_keys: dict[str, Callable[[str], bool]] = {}


def note_set_keys(where: str, by_flag: Callable[[str], bool] | None) -> None:
    """From now on a warning about file `where`'s key k names --set where by_flag(k) (None: none)."""
    if by_flag is None:
        _set_keys.pop(where, None)
    else:
        _set_keys[where] = by_flag


def set_by_flag(where: str, key: str) -> bool:
    """Whether file `where`'s key `key` took its value from --set."""
    return where in _set_keys and _set_keys[where](key)


_held: list[str] | None = None  # warnings a command holds back until its own checks pass (holding())


@contextmanager
def holding() -> Iterator[None]:
    """Within: warnings wait; they are said when the block ends without an error (inside another
    holding block, when that one does), and dropped when it raises one, so that bad input a
    command finds after the loader's advice stays one line."""
    global _held
    outer, _held = _held, []
    try:
        yield
    except BaseException:
        _held = outer
        raise
    pending, _held = _held, outer
    if outer is not None:  # inside a command's own holding: its checks are still to pass
        outer.extend(pending)
        return
    for message in pending:
        _say(message)


@contextmanager
def silenced() -> Iterator[None]:
    """Within: warnings are dropped, never said: a trial validation run only to decide whom an
    error blames (scenario.load) must not speak."""
    global _held
    outer, _held = _held, []
    try:
        yield
    finally:
        _held = outer


def warn(where: str, key: str, reason: str) -> None:
    """One line on stderr for input that runs but makes little sense (the run goes on); each
    message once per process, so a sweep's points do not repeat it."""
    message = ScenarioError(where, key, reason).message
    if _held is not None:
        _held.append(message)
    else:
        _say(message)


def _say(message: str) -> None:
    import sys
    if message not in _warned:
        _warned.add(message)
        print(line("warning", message), file=sys.stderr)
