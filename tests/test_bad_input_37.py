"""Bad-input campaign 37: ~590 probes of the previous commits' changes. The holes taken, each
tested below (H6, the duplicate rows' file lines, and H9, the fp32 warning's words, are in
test_bad_input_35b.py and test_bad_input_36.py):
- recommend's policy keyed a capped batch by its last pick, where plain decoding had run more
  requests than a server under the cap can (H1); its default widths tried trees on engines that
  run chains only (H2);
- an empty or partial rope_scaling beside a scaling rope_parameters was read alone (H3);
- a pipe named like a profile cache entry blocked `cost` for ever (H4);
- `mtpsim plot` checked design and steps only: an edited topk, width, load or baseline row was
  drawn (H5);
- a busy --out came after the scenario's warnings: several lines (H7);
- a cap's note named "the engine file" where a user catalog's file set it (H10); an unknown kind
  over re-laid layers said "(the model's: none)" (H11).
"""
from __future__ import annotations

import os
import threading

import pandas as pd
import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_36 import SMALL


def test_a_capped_key_is_the_pick_nearest_the_cap():
    """Before: {1: 2, 48: 0}: batch 128's `none` (uncapped, 128 at once) overwrote batch 64's 2."""
    from mtpsim.recommend import policy_line
    from tests.test_recommend import table
    picks = table([2, 2, 2, 0], batches=(1, 32, 64, 128))
    picks["max_running"] = [48, 48, 48, 48]
    assert policy_line(picks).startswith("policy: {steps_by_batch: {1: 2}}")


def test_recommend_tries_no_trees_on_an_engine_that_runs_chains(tmp_path, capsys):
    text = SMALL.replace("TOPK", "1").replace("hardware: h100-sxm\n", "hardware: h100-sxm\nengine: {kind: vllm}\n")
    assert cli.main(["recommend", run(tmp_path, text)[1], "--batch", "1", "--seeds", "1", "--out",
                     str(tmp_path / "o")]) == 0
    grid = pd.read_csv(tmp_path / "o" / "grid.csv")
    assert grid[grid.design == "nextn"].topk.unique().tolist() == [1]


@pytest.mark.parametrize("scaling", [{}, {"rope_theta": 500000.0},
                                     {"rope_type": "yarn", "original_max_position_embeddings": 32768}])
def test_a_partial_rope_scaling_beside_a_scaling_rope_parameters(tmp_path, scaling):
    """Before: the context came from rope_scaling alone, 4x short."""
    from mtpsim.errors import ScenarioError
    from tests.test_hfconfig import LLAMA_31_8B, read
    config = {**{k: v for k, v in LLAMA_31_8B.items() if k != "rope_scaling"}, "max_position_embeddings": 32768,
              "rope_scaling": scaling,
              "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    if not scaling:  # transformers reads `rope_scaling or rope_parameters`: an empty one gives way
        assert read(tmp_path, config).max_context == 4 * 32768
        return
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, config)
    assert err.value.key == "rope_parameters"


def test_a_pipe_named_like_a_cache_entry_is_not_read(tmp_path, monkeypatch):
    from mtpsim.catalog import data_dir
    from mtpsim.costs import profile_cache
    folder = tmp_path / "cache"
    monkeypatch.setenv("MTPSIM_CACHE_DIR", str(folder))
    profile = data_dir() / "profiles" / "h100-sxm-sglang"
    assert profile_cache.cached(profile, ("x",), lambda: 7, int) == 7
    entry = next(folder.iterdir())
    entry.unlink()
    os.mkfifo(entry)
    done = []
    worker = threading.Thread(target=lambda: done.append(profile_cache.cached(profile, ("x",), lambda: 9, int)),
                              daemon=True)
    worker.start()
    worker.join(20)
    if not done:  # unblock the reader so the test process can end
        with open(entry, "wb"):
            pass
    assert done == [9]


@pytest.mark.parametrize("column, value", [("topk", "2"), ("concurrency", "3")])
def test_plot_refuses_an_edited_width_or_load(tmp_path, capsys, column, value):
    assert cli.main(run(tmp_path, SMALL.replace("TOPK", "1"))) == 0
    capsys.readouterr()
    path = tmp_path / "out" / "summary.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[df.design == "nextn", column] = value
    df.to_csv(path, index=False)
    one_line_error(capsys, ["plot", str(tmp_path / "out")], column, "scenario.resolved.yaml runs")


def test_plot_refuses_a_baseline_row_that_drafts(tmp_path, capsys):
    assert cli.main(run(tmp_path, SMALL.replace("TOPK", "1"))) == 0
    capsys.readouterr()
    path = tmp_path / "out" / "summary.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[df.point == "-1", "design"] = "nextn"
    df.to_csv(path, index=False)
    one_line_error(capsys, ["plot", str(tmp_path / "out")], "design", "at a baseline row")


@pytest.mark.parametrize("command", ["run", "recommend"])
def test_a_busy_out_is_the_one_line(tmp_path, capsys, command):
    """Before: the scenario's warnings, then `output folder exists and is not empty`."""
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    text = SMALL.replace("TOPK", "1").replace("concurrency: 1,", "concurrency: 1, rate_per_s: 2,")  # warned: closed
    path = run(tmp_path, text)[1]
    argv = {"run": ["run", path, "--out", str(busy)],
            "recommend": ["recommend", path, "--batch", "1", "--seeds", "1", "--out", str(busy)]}[command]
    one_line_error(capsys, argv, "", "output folder exists and is not empty")
    assert (busy / "mine.txt").read_text() == "keep"


def test_a_cap_note_names_the_user_catalogs_file(tmp_path, monkeypatch):
    import yaml

    from mtpsim import catalog
    from mtpsim.catalog import data_dir
    data = yaml.safe_load((data_dir() / "engines" / "sglang.yaml").read_text())
    data["rules"] = [r for r in data["rules"] if r["field"] != "speculative_max_running_requests"]
    data["speculative_max_running_requests"] = 2
    path = tmp_path / "cat" / "engines" / "sglang.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    engine = catalog.load_engine("sglang", "0.5.12")
    assert engine.cap_origin("nextn", False, None, catalog.engine_file_label("sglang")).endswith(
        f"({path} speculative_max_running_requests)")


def test_an_unknown_kind_over_re_laid_layers_says_what_to_give(tmp_path, capsys):
    """H11: `(the model's: none)` where `from:` re-laid the layers and dropped the source's kinds."""
    one_line_error(capsys, [*run(tmp_path, SMALL.replace("TOPK", "1")), "--set",
                            "model={from: llama-3.1-8b, layers: [{count: 32, attention: gqa, ffn: moe}]}"],
                   "model.layers.0.ffn", "give ffn_kinds beside layers re-laid")
