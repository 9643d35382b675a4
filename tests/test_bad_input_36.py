"""Bad-input campaign 36: ~1,000 probes of the commands less probed before (search, recommend,
cost, verify and calibrate flags, workloads and traces, disaggregation, block drafters, catalog
entries, config.json readers, output folders, the Python API). The holes taken, each tested below:
- a profile cache folder other users could write was used: its entries are pickles, which run
  code when read (H1);
- search and recommend dropped a tree's speculative.draft_tokens, and search the scenario's
  parallel layout, without a word (H2, H5); `search --out` inside the cache folder ran, and
  every later search refused the cache (H3);
- a 16-bit model on hardware with only an fp32 peak was priced at it without a word (H4);
- a draft tree's KV reservation that fills the pool was blamed on the workload (H6), a pool's
  weights on parallel.tp (H11), and SGLang's default fraction told to shard wider (H12);
- idle replicas were said of closed loops only (H7); draft_tokens under design none,
  and seed under cost, passed without a word (H8); an alias equal to another entry's name was
  listed but never used (H9); an unknown layer kind had no key path (H10);
- mtpsim.load's keyword arguments were unchecked (H13); plot left latency.png out without a word
  where requests.csv was missing (H14).
"""
from __future__ import annotations

import os
import shutil

import pytest
import yaml

from mtpsim import cli
from mtpsim.catalog import data_dir
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_5 import warnings_of
from tests.test_bad_input_7 import MOE, _file

SMALL = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
         "speculative: {design: nextn, steps: 2, topk: TOPK, draft: eagle3-llama-3.1-8b}\n"
         "acceptance: {per_depth_topk: [[0.8, 0.1], [0.7, 0.1]]}\n"
         "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}\n")


def test_an_output_folder_inside_the_cache_is_refused_before_anything_is_made(tmp_path, capsys, monkeypatch):
    """Before: the run went into runs/search-cache/mine, and every later search said the cache
    `holds 'mine', which is no cache entry`."""
    monkeypatch.chdir(tmp_path)
    scenario = _file(tmp_path, MOE)
    one_line_error(capsys, ["search", scenario, "--gpus", "8", "--out", "runs/search-cache/mine"], "--out",
                   "inside the cache folder")
    assert not (tmp_path / "runs" / "search-cache" / "mine").exists()
    assert cli.main(["search", scenario, "--gpus", "8", "--concurrency", "1", "--max-steps", "1", "--no-plot",
                     "--out", "out"]) == 0


def test_a_profile_cache_other_users_can_write_is_not_used(tmp_path, capsys, monkeypatch):
    """Before: a world-writable MTPSIM_CACHE_DIR was used, and a pickle planted there ran code."""
    import pickle

    from mtpsim.costs import profile_cache
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("MTPSIM_CACHE_DIR", str(shared))
    calls = []
    assert profile_cache.cached(data_dir() / "profiles" / "h100-sxm-sglang", ("x",), lambda: calls.append(1) or 7,
                                int) == 7
    assert calls and not list(shared.iterdir()) and "writable by other users" in capsys.readouterr().err
    own = tmp_path / "own"
    monkeypatch.setenv("MTPSIM_CACHE_DIR", str(own))
    profile = data_dir() / "profiles" / "h100-sxm-sglang"
    assert profile_cache.cached(profile, ("x",), lambda: 7, int) == 7
    entry = next(own.iterdir())
    entry.write_bytes(pickle.dumps(8))
    assert profile_cache.cached(profile, ("x",), lambda: 7, int) == 8  # its own entry is read
    os.chmod(entry, 0o666)  # an entry another user could have written is not
    assert profile_cache.cached(profile, ("x",), lambda: 7, int) == 7


@pytest.mark.parametrize("command", ["search", "recommend"])
def test_a_trees_draft_tokens_the_grid_does_not_use_is_said(tmp_path, capsys, command):
    text = SMALL.replace("TOPK", "2").replace("topk: 2,", "topk: 2, draft_tokens: 4,")
    path = run(tmp_path, text)[1]
    argv = {"search": ["search", path, "--gpus", "1", "--concurrency", "1", "--topk", "2", "--no-cache", "--no-plot",
                       "--out", str(tmp_path / "o")],
            "recommend": ["recommend", path, "--batch", "1", "--seeds", "1", "--topk", "2", "--out", str(tmp_path / "o")]}
    lines = warnings_of(capsys, argv[command])
    assert any(": speculative.draft_tokens: " in line and "4 is not used" in line for line in lines), lines


def test_search_says_it_does_not_read_the_scenarios_layout(tmp_path, capsys):
    text = SMALL.replace("TOPK", "1").replace("hardware: h100-sxm\n", "hardware: h100-sxm\nparallel: {tp: 2}\n")
    lines = warnings_of(capsys, ["search", run(tmp_path, text)[1], "--gpus", "2", "--concurrency", "1", "--max-steps",
                                 "1", "--no-cache", "--no-plot", "--out", str(tmp_path / "o")])
    assert any(": parallel.tp: search lays out its own deployments" in line for line in lines), lines


def _hardware(tmp_path, monkeypatch, **changes) -> None:
    data = yaml.safe_load((data_dir() / "hardware" / "h100-sxm.yaml").read_text())
    data.update(name="mygpu", **changes)
    data.pop("profiles", None)  # another GPU's measured profiles would be refused on it
    path = tmp_path / "cat" / "hardware" / "mygpu.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))


def test_a_16_bit_model_priced_at_an_fp32_peak_is_said(tmp_path, capsys, monkeypatch):
    _hardware(tmp_path, monkeypatch, peak_flops={"fp32": 6.7e13})
    text = SMALL.replace("TOPK", "1").replace("hardware: h100-sxm", "hardware: mygpu")
    lines = warnings_of(capsys, ["cost", run(tmp_path, text)[1]])
    said = [line for line in lines if ": hardware: hardware 'mygpu' gives no peak_flops as wide as bf16" in line]
    assert len(said) == 2 and not any("experts" in line for line in said), lines  # per model (target, draft), its parts


def test_a_tree_reservation_that_fills_the_pool_names_the_tree(tmp_path, capsys):
    text = ("name: s\nmodel: mimo-7b\nhardware: h100-sxm\n"
            "speculative: {design: nextn, steps: 64, topk: 64, draft_tokens: 258049}\nacceptance: {accept_length: 3}\n"
            "workload: {arrival: closed, concurrency: 2, num_requests: 8, input_len: 256, output_len: 64}\n")
    one_line_error(capsys, run(tmp_path, text), "speculative.draft_tokens", "KV slots for its drafts")


@pytest.mark.parametrize("arrival", ["arrival: poisson, rate_per_s: 4", "arrival: batch"])
def test_idle_replicas_are_said_of_every_load(tmp_path, capsys, arrival):
    text = SMALL.replace("TOPK", "1").replace("hardware: h100-sxm\n", "hardware: h100-sxm\nparallel: {dp: 10}\n") \
        .replace("arrival: closed, concurrency: 1", arrival)
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": parallel.dp: 10 replicas for at most 2 requests in all" in line for line in lines), lines


def test_draft_tokens_under_design_none_and_seed_under_cost_are_said(tmp_path, capsys):
    text = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\nspeculative: {design: none, steps: 5, draft_tokens: 6}\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n")
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": speculative.draft_tokens: design none drafts nothing" in line for line in lines), lines
    assert not any(": speculative.steps: " in line for line in lines), lines  # a design switched to none keeps its steps
    (tmp_path / "b").mkdir()
    lines = warnings_of(capsys, ["cost", run(tmp_path / "b", SMALL.replace("TOPK", "1"))[1], "--set", "seed=5"])
    assert any(": seed: cost prices one iteration" in line for line in lines), lines


def test_an_alias_that_another_entry_is_named_is_said(tmp_path, capsys, monkeypatch):
    data = yaml.safe_load((data_dir() / "models" / "mimo-7b.yaml").read_text())
    data.update(name="mymodel", aliases=["deepseek-v3"])
    path = tmp_path / "cat" / "models" / "mymodel.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    lines = warnings_of(capsys, ["models"])
    assert any(": aliases.0: 'deepseek-v3' is the name of another models catalog entry" in line for line in lines)


def test_an_unknown_layer_kind_names_its_key(tmp_path, capsys):
    one_line_error(capsys, [*run(tmp_path, SMALL.replace("TOPK", "1")), "--set",
                            "model={from: mimo-7b, mtp: {num_layers: 3, layer: {attention: nosuch, ffn: dense}}}"],
                   "model.mtp.layer.attention", "unknown attention kind 'nosuch'")


def test_a_pools_weights_name_the_pools_layout(tmp_path, capsys):
    text = ("name: s\nmodel: deepseek-v3\nhardware: gb200\nspeculative: {design: none}\n"
            "disaggregation: {prefill: {tp: 2, ep: 2}, decode: {tp: 8, ep: 8}}\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n")
    line = one_line_error(capsys, run(tmp_path, text), "disaggregation.prefill", "shard over more GPUs")
    assert "disaggregation.prefill.tp" in line and "parallel.tp" not in line


def test_sglangs_own_fraction_is_not_told_to_shard_wider(tmp_path, capsys):
    text = ("name: s\nmodel: deepseek-v3\nhardware: gb200\nspeculative: {design: none}\n"
            "parallel: {tp: 64, ep: 64, attention_dp: 64}\nengine: {max_running_requests: 64}\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n")
    line = one_line_error(capsys, run(tmp_path, text), "engine.mem_fraction", "shrinks with more GPUs")
    assert "shard over more GPUs" not in line


@pytest.mark.parametrize("kwargs, key", [({"refuse": 5}, "refuse"), ({"fixed": {"a": 1}}, "fixed"),
                                         ({"first_only": 2}, "first_only"), ({"advise_points": "no"}, "advise_points")])
def test_loads_keyword_arguments_are_checked(tmp_path, kwargs, key):
    import mtpsim
    from mtpsim.errors import ScenarioError
    with pytest.raises(ScenarioError) as err:
        mtpsim.load(run(tmp_path, SMALL.replace("TOPK", "1"))[1], **kwargs)
    assert (err.value.where, err.value.key) == ("mtpsim.load", key)


def test_plot_says_latency_png_is_skipped_without_requests_csv(tmp_path, capsys):
    assert cli.main(run(tmp_path, SMALL.replace("TOPK", "1"))) == 0
    (tmp_path / "out" / "requests.csv").unlink()
    lines = warnings_of(capsys, ["plot", str(tmp_path / "out")])
    assert any("requests.csv: absent: latency.png" in line for line in lines), lines
    assert not (tmp_path / "out" / "latency.png").exists()
    shutil.rmtree(tmp_path / "out")
