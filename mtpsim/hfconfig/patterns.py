"""Module-name patterns, as a quantization config names the modules it leaves out or quantizes
otherwise (hfconfig/quant.py reads the config): exact names, wildcards and `re:` expressions,
checked as written (`expression_problem`) and matched under a time budget (`Patterns`).
"""
from __future__ import annotations

import fnmatch
import re
import time
import warnings
from collections.abc import Callable
from functools import lru_cache

from mtpsim.errors import short

# seconds a scheme's patterns may spend naming a model's modules: NVIDIA's exports name tens of
# thousands of modules exactly (a lookup) and a handful by pattern, which take milliseconds
MATCH_BUDGET_S = 10.0


class SlowPatterns(Exception):
    """A scheme's module patterns took more than MATCH_BUDGET_S to match (one regular expression
    that backtracks without end, or tens of thousands of wildcards): `pattern`, the one matching
    when the time ran out, and `count`, how many patterns the scheme gives."""

    def __init__(self, pattern: str, count: int):
        super().__init__(pattern)
        self.pattern, self.count = pattern, count


class Patterns:
    """Module-name patterns (exclusions, or a MIXED_PRECISION map's keys) matched fast: exact names
    by a lookup of every dotted run of the module's name (a name names the module, its parents and
    any name ending in it: `lm_head`, `model.layers.0`), wildcards by fnmatch over the module or
    a parent, `re:` expressions searched in it. NVIDIA's exports list hundreds to tens of thousands
    of exact names; a handful are wildcards. Wildcards and expressions run on the `regex` package,
    whose matches take a timeout: together they may spend MATCH_BUDGET_S (SlowPatterns past it;
    Python's own `re` cannot be stopped inside a match that backtracks exponentially)."""

    def __init__(self, items: list[tuple[str, str | None]]):
        import regex
        self.exact: dict[str, str | None] = {}
        # (the pattern as written, a matcher of the module's name, the value)
        self.other: list[tuple[str, Callable, str | None]] = []
        for pattern, value in items:
            if pattern.startswith("re:"):  # searched, its own flags and groups its own
                self.other.append((pattern, regex.compile(pattern[3:]).search, value))
            elif any(ch in pattern for ch in "*?["):
                self.other.append((pattern, regex.compile(f"{fnmatch.translate(pattern)}|"
                                                          f"{fnmatch.translate(pattern + '.*')}").match, value))
            else:
                self.exact.setdefault(pattern, value)
        self.spent = 0.0  # seconds the wildcards and expressions have taken so far
        self.found: dict[str, tuple[bool, str | None]] = {}

    def find(self, module: str) -> tuple[bool, str | None]:
        """(whether a pattern names `module`, the value of the first that does), remembered: a sweep
        reads one config.json once a point, and its patterns are matched once."""
        if module not in self.found:
            self.found[module] = self._find(module)
        return self.found[module]

    def _find(self, module: str) -> tuple[bool, str | None]:
        if self.exact:
            parts = module.split(".")
            for i in range(len(parts)):
                for j in range(len(parts), i, -1):
                    run = ".".join(parts[i:j])
                    if run in self.exact:
                        return True, self.exact[run]
        if not self.other:
            return False, None
        start = time.perf_counter()
        try:
            for pattern, matches, value in self.other:
                left = MATCH_BUDGET_S - self.spent - (time.perf_counter() - start)
                if left <= 0:
                    raise SlowPatterns(pattern, len(self.other) + len(self.exact))
                try:
                    if matches(module, timeout=left):
                        return True, value
                except TimeoutError:
                    raise SlowPatterns(pattern, len(self.other) + len(self.exact)) from None
            return False, None
        finally:
            self.spent += time.perf_counter() - start


@lru_cache(maxsize=32)
def patterns_of(items: tuple[tuple[str, str | None], ...]) -> Patterns:
    """One Patterns a pattern list, kept: every point of a sweep reads the same config.json, and
    its matches (and the time they took, against the budget) are the first read's."""
    return Patterns(list(items))


NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")


# a repeat count past this is expanded by the matcher at compile time (`x{100000000}`: gigabytes)
MAX_REPEAT = 10_000
REPEAT = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")
# syntax the `regex` package reads (and Python's `re` rejects or reads otherwise): fuzzy matching,
# POSIX classes, nested sets
REGEX_ONLY = re.compile(r"\{\s*[edis]\s*[<=]|\[\[?:\w+:\]|\[\[")


def expression_problem(expr: str) -> str | None:
    """Why an `re:` module pattern cannot be matched as written, or None: the engines match them
    with Python's `re`, mtpsim with `regex` under a time budget (Patterns), so an expression must
    mean the same to both, and must compile in bounded memory."""
    if REGEX_ONLY.search(expr):
        return ("uses syntax only the regex package reads (fuzzy matching, POSIX classes, nested sets), which "
                "the engines' Python re reads otherwise: write it in re's syntax")
    if any(int(n) > MAX_REPEAT for pair in REPEAT.findall(expr) for n in pair if n):
        return f"repeats a piece more than {MAX_REPEAT:,} times: write it without the count"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # re's FutureWarning of a syntax it will read otherwise
            re.compile(expr)
    except (re.error, OverflowError, RecursionError, FutureWarning) as exc:
        return f"is not a regular expression ({short(str(exc), 80)[1:-1]})"
    if NESTED_QUANTIFIER.search(expr):
        return "repeats a repeated group, which can take Python's matcher exponential time: write it without the nesting"
    return None
