"""yamlfiles.py reads YAML with libyaml's parser and falls back to PyYAML's pure-Python one
where that fails: the two must give the same values for every text the pure-Python loader
accepts, and the fast one must refuse every text it refuses (then its error is the one said)."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from mtpsim import yamlfiles
from mtpsim.yamlfiles import _CParser, _documents, _FastLoader, _Loader

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [
    "a: 010", "a: 0x4", "a: 0b11", "a: 1:30", "a: 1_000", "a: '010'", 'a: "0x4"', "a: 1e9\nb: 989e12\nc: .5\nd: 1.",
    "a: [10, -3, +7, 0, 1.5, .inf, -.inf, .nan, ~, null, true, no, yes, off]",
    "a: 1\na: 2", "1: x\n1.0: y", "true: x\n1: y", "'<<': 1\n<<: {b: 2}",
    "b: &b {x: 1, y: 2}\nc: {<<: *b, y: 3}", "w: {<<: [{a: 1, b: 2}, {a: 4, d: 5}], d: 6}",
    "w: {<<: [{x: 1}, {q: 7}], <<: {r: 1}}", "w: {<<: 5}", "a: &x [1, *x]", "a: *nope",
    "a:\n\tb: 1", "a: b: c", "[1, 2", "{a: 1", "- a\nb: 1", "a: |\n  one\n  two\nb: >-\n  folded\n  text\n",
    "a: 'it''s'\nb: \"tab\\tnew\\nline \\u00e9\"", "? [1, 2]\n: x", "? a\n: b", "a: !!python/object:os.system x",
    "a: !custom x", "a: !!str 5\nb: !!int '7'", "%YAML 1.1\n---\na: 1", "---\na: 1\n...\n", "---\n---\n", "",
    "# only a comment", "a: 1\r\nb: 2\r\n", "a: 1\rb: 2", "\ufeffa: 1", "a: 1\u2028b: 2", "a: 1\x85b: 2",
    "a: x\x07y", "a: \"x\\x07y\"", "k" * 1100 + ": 1", "[" * 70 + "]" * 70, "a: " + "[" * 30 + "]" * 30,
    "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]", "- - - 1\n  - 2\n- 3", "a:\n  - b: 1\n    c: 2\n  - d",
    "a: 2023-11-16\nb: 2023-11-16 18:15:46", "a: =", "= : 1", "a: 1 # c\nb: '# not'", "a: @x", "a: `x`",
    "a: -\nb: - 1", "a: 12345678901234567890123", "a: " + "9" * 5000,
]


def parse(loader_class, text: str, multi: bool):
    loader = loader_class(text)
    try:
        return _documents(loader, "t.yaml", multi)
    finally:
        loader.dispose()


def outcome(loader_class, text: str, multi: bool):
    try:
        return "ok", parse(loader_class, text, multi)
    except Exception as exc:  # noqa: BLE001 -- any refusal counts alike here
        return "refused", type(exc).__name__


def corpus():
    files = [p for p in ROOT.rglob("*.y*ml") if ".venv" not in p.parts and p.suffix in (".yaml", ".yml")]
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(files)] + \
        [(f"text {i}", t) for i, t in enumerate(TEXTS)]


@pytest.mark.skipif(_CParser is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("multi", [False, True])
def test_libyaml_reads_what_pure_python_reads(multi):
    differ = []
    for name, text in corpus():
        try:
            _Loader(text)
        except Exception:  # noqa: BLE001 -- the reader's refusal comes before either parser
            continue
        slow, fast = outcome(_Loader, text, multi), outcome(_FastLoader, text, multi)
        if slow[0] == "refused":
            if fast[0] != "refused":
                differ.append((name, slow, fast))
        elif fast[0] == "ok" and (fast[1] != slow[1] or pickle.dumps(fast[1]) != pickle.dumps(slow[1])):
            differ.append((name, slow, fast))
    assert not differ, differ[:5]


def test_the_error_said_is_pure_python_yamls(monkeypatch):
    """A text both refuse reads the same with the fast parser as without it."""
    from mtpsim.errors import ScenarioError
    texts = ["a: 1\na: 2", "[1, 2", "a: b: c", "a:\n\tb: 1", "a: 010", "a: *nope", "a: !custom x"]
    with_fast = []
    for text in texts:
        with pytest.raises(ScenarioError) as exc:
            yamlfiles.parse_yaml(text, "t.yaml")
        with_fast.append(str(exc.value))
    monkeypatch.setattr(yamlfiles, "_CParser", None)
    for text, said in zip(texts, with_fast):
        with pytest.raises(ScenarioError) as exc:
            yamlfiles.parse_yaml(text, "t.yaml")
        assert str(exc.value) == said
