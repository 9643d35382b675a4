"""Three rough edges the third campaign (test_bad_input_campaign3.py) left: a one-point command
validating every point of a large sweep, the heavy-run estimate ignoring prefill passes, and
absurd model widths and layer counts accepted without a word. Each test's docstring says what
happened before the fix."""
from __future__ import annotations

import json

import pytest

from mtpsim import resolve, sweep
from tests.test_bad_input import BASE, LLAMA, one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_11q import NEXTN, SEARCH, _recommend, _search
from tests.test_hfconfig import DEEPSEEK_V3

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


# ------------------------------------------------------------- 3: sizes no released model has

@pytest.mark.parametrize("text, files, key, word", [
    (BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, hidden_size: 1}"), {}, "model.hidden_size",
     "hidden_size 1 is narrower than any released model"),
    (LLAMA.replace("model: llama-3.1-8b", "model: {from: llama-3.1-8b, hidden_size: 63}"), {}, "model.hidden_size",
     "hidden_size 63"),
    (BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, mtp: {num_layers: 17}}"), {},
     "model.mtp.num_layers", "17 is more than any released model has"),
    (BASE.replace("model: deepseek-v3", "model: {hf_config: c.json}"),
     {"c.json": json.dumps({**DEEPSEEK_V3, "num_nextn_predict_layers": 100})}, "model.hf_config",
     "config.json's MTP layer count (num_nextn_predict_layers or alike) 100 is more than the model's own 61 layers"),
    (BASE.replace("model: deepseek-v3", "model: {hf_config: c.json}"),
     {"c.json": json.dumps({**DEEPSEEK_V3, "hidden_size": 32})}, "model.hf_config", "config.json's hidden_size 32"),
])
def test_a_width_or_layer_count_past_any_released_model_warns_once(tmp_path, capsys, text, files, key, word):
    """Before: a model 1 wide (an MLA model's, which no heads x head_dim check measures) or with 100
    MTP layers, more than its 61, priced without a word. A hidden_size so narrow is now said of
    itself, once, not of every attention kind measured against it (odd_widths)."""
    lines = warnings_of(capsys, ["cost", run(tmp_path, text, files)[1]])
    found = [line for line in lines if f": {key}: " in line]
    assert len(found) == 1 and word in found[0], lines
    assert not any("attention_kinds" in line for line in lines), lines


@pytest.mark.parametrize("model", ["{from: deepseek-v3, hidden_size: 64}", "{from: mimo-7b, mtp: {num_layers: 16}}"])
def test_the_edges_of_released_sizes_do_not_warn(tmp_path, capsys, model):
    lines = warnings_of(capsys, ["cost", run(tmp_path, BASE.replace("model: deepseek-v3", f"model: {model}"))[1]])
    assert not any("released model" in line for line in lines), lines
