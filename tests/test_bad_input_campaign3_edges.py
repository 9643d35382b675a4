"""Three rough edges the third campaign (test_bad_input_campaign3.py) left: a one-point command
validating every point of a large sweep, the heavy-run estimate ignoring prefill passes, and
absurd model widths and layer counts accepted without a word. Each test's docstring says what
happened before the fix."""
from __future__ import annotations

from mtpsim import resolve, sweep
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_11q import NEXTN, SEARCH, _recommend, _search

BROKEN_LATER = "sweep: {workload.num_requests: [4, 1]}\n"  # point 2: fewer requests than the 2 users


def _counting(monkeypatch) -> list[int]:
    calls = []
    real = resolve.validate

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(sweep, "validate", counted)
    return calls


def test_search_and_recommend_validate_only_the_point_they_use(tmp_path, capsys, monkeypatch):
    """Before: search and recommend validated every point of a sweep (about 16 s for 10,000) to
    use the first, and refused a sweep whose later point alone is broken, which they never run."""
    calls = _counting(monkeypatch)
    swept = SEARCH.replace("search: {", "sweep: {workload.num_requests: [4, 1]}\nsearch: {")
    found = warnings_of(capsys, _search(tmp_path, swept))
    assert any(": sweep: search uses one point, the first of the sweep's 2" in w for w in found), found
    assert len(calls) == 1, calls
    (tmp_path / "r").mkdir()
    calls.clear()
    found = warnings_of(capsys, _recommend(tmp_path / "r", NEXTN + BROKEN_LATER))
    assert any(": sweep: recommend uses one point, the first of the sweep's 2" in w for w in found), found
    assert len(calls) == 1, calls


def test_run_and_cost_still_validate_every_point(tmp_path, capsys, monkeypatch):
    """`mtpsim run` runs every point; `cost` checks the whole sweep too (a broken sweep file is
    worth knowing of, and its same-run warnings compare the points)."""
    argv = run(tmp_path, NEXTN + BROKEN_LATER)
    one_line_error(capsys, argv, "workload.concurrency", "sweep point 2 of 2")
    one_line_error(capsys, ["cost", argv[1]], "workload.concurrency", "sweep point 2 of 2")
