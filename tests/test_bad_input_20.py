"""Bad-input campaign 20: TensorRT-LLM's batch waiting (engine.batch_wait), the CUDA-graph capture
lists of an engine file in a user catalog (GraphCapture pads_to / speculative_pads_to / gpu_pads_to
of SizeRange items, costs/host.py host_model), `mtpsim cost`'s flags over odd scenarios, and
engine.max_graph_batch / max_running_requests / mem_fraction beside the version rules.

Probed, and already one line naming the key (or fine): engine.batch_wait null, {}, [], 5, true,
timeout_iters 1e400, .inf, 10**23, true, "40", 40.0, 1000000, max_tokens_ratio .nan, -.inf, "0.5",
[0.5], 1e-320 (warned), by --set and in the file, a key twice, a `<<` merge; with vLLM and SGLang,
attention DP, mixing off, cost --batch / --prompt, recommend and search (its launch flags carry no
engine tuning, batch waiting included, as they carry no chunk or memory fraction); a sweep over
timeout_iters or over whole batch_wait mappings (points where it is idle are left alone, as any
swept key), with --set into the swept section and a value listed twice; graph lists with a step of
0, first above last, -1, [null, 8, 1], .inf and .nan bounds, last past 2**24, an extra key, a
string or a bare int for the list, an empty list, pads_to null beside speculative_pads_to, in the
file's section and in a rule's; an unpadded sizes list with a 0, [1, 8, 1], 1.0, a repeat,
unsorted or past max, and 190,000 sizes (2 s: the file's value limit bounds it); cuda_graph.max 0,
true, 2**24 + 1; a user engine file with a BOM, Latin-1 bytes, a tab, empty, a list, another
name, name or cuda_graph twice; engine.max_graph_batch 100,000 (refused without mem_fraction, and
fine with it, padded or not), above max_running_requests, 3 on vLLM 0.7.3, 1 on SGLang 0.4.0;
mem_fraction 0.05 and 1 with 100,000 running requests; cost --batch 1 --context 0 --ops,
--batch 2**20 --context 2**24 and --batch 3 --prompt 1 --context 1 on every committed scenario
(published, verify, search included); plot over a summary.csv whose batch_wait_iterations is text.

Found and fixed:
- a padded list of a user engine file expanding to millions of sizes ([[1, null, 1]] under a
  cuda_graph.max of 2**24 tokens: 16.8M) built them into a sorted tuple at every point, 4 GB and
  20 s a point (30 s with a speculative and a GPU list): refused past 100,000 sizes at the list's
  key (engine_sections.GraphCapture, limits.MAX_GRAPHS);
- the same max unpadded (engine.graph_padding: false) captured every size up to it as a 16.8M
  tuple, 3 s and 4 GB for a point, 20 s for six: now a range (costs/host.py);
- a graph-list item of two numbers ([16, 256], a range without its step), 8.0, true or "8" was
  refused as "a valid dictionary or instance of SizeRange", naming neither form a size takes;
- a padded list holding no size up to the largest graph (a speculative list from 4000, adds_max
  false) captured none, yet host.py took the empty list for 'no list' and replayed the default
  buckets (a verify priced as a graph replay) without a word: its passes now run eagerly, warned;
- `cost --batch 1024` under nextn S=3 on a 2048-token TensorRT-LLM budget priced 4096 verify tokens
  as one iteration without the warning `run` gives the same batch as its load (budget_advice);
- run's notes under the table read every baseline row's settings off the first point: a sweep over
  engine.batch_wait [null, {...}] under speculation was an AttributeError traceback (run_table.py);
- a user catalog's entry of a built-in name that the lookup passes over (a link to a moved file, a
  folder, sglang.yml) was skipped for the built-in entry without a word (catalog_lookup.find), as a
  profile of that kind already is not;
- a batch-wait ratio whose share of the budget is under a speculative mixing step's least tokens
  (0.0005 x 8192 = 4.1 under nextn S=3: 4 verify tokens and a prompt token) held nothing back
  without the warning a ratio under 2 tokens gets (budget_advice.batch_wait_idle).
"""
from __future__ import annotations

import pytest

from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_9e import _engine, _refused, _scenario

VLLM_GRAPHS = "cuda_graph: {unit: tokens, max: 512, padded: true}"
PADS = "  padded: true\n  pads_to: [1, 2, 4, 8, 12, [16, 256, 8]"  # the file's own section, not a rule's
VLLM_8B = """\
name: v
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: vllm}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 100, output_len: 8}
"""


def _swap(old: str, new: str):
    return lambda t: t.replace(old, new, 1)


# ------------------------------------------------------------- 1. a graph list of millions of sizes

@pytest.mark.parametrize("graphs, key, count", [
    ("{unit: tokens, max: 16777216, padded: true, pads_to: [[1, null, 1]]}", "cuda_graph.pads_to", "16,777,216"),
    ("{unit: tokens, max: 16777216, padded: true, pads_to: [1], speculative_pads_to: [[1, null, 8]]}",
     "cuda_graph.speculative_pads_to", "2,097,152"),
    ("{unit: tokens, max: 16777216, padded: true, pads_to: [1], gpu_pads_to: [{above_mib: 0, sizes: [[1, null, 300]]}, "
     "{above_mib: 0, sizes: [[1, null, 300]]}]}", "cuda_graph.gpu_pads_to", "111,850"),
])
def test_a_graph_list_of_millions_of_sizes_is_one_line(tmp_path, capsys, monkeypatch, graphs, key, count):
    """Before: [[1, null, 1]] under a max of 2**24 tokens expanded into 16.8M sizes at every point
    (4 GB, 20 s; a speculative and a GPU list beside it, 30 s)."""
    line = _refused(tmp_path, capsys, monkeypatch, _swap(VLLM_GRAPHS, f"cuda_graph: {graphs}"), key,
                    f"lists {count} sizes", "vllm", ("--set", "engine.kind=vllm"))
    assert "give its ranges a larger step" in line


def test_a_rules_graph_list_of_too_many_sizes_is_one_line(tmp_path, capsys, monkeypatch):
    """The same list set by a version rule (two ranges of 100,000 sizes where SGLang's memory classes
    give the largest graph, up to the 100,000 a scenario's max_graph_batch may name)."""
    rule = "  pads_to: [1, 2, 4, 8, 12, [16, 256, 8], [272, 496, 16], [512, null, 32]]\n"
    _refused(tmp_path, capsys, monkeypatch, _swap(rule, "  pads_to: [[1, null, 1], [2, null, 1]]\n"),
             "rules.20.value", "sets cuda_graph.pads_to: lists 199,999 sizes")


def test_a_list_within_the_limit_still_runs(tmp_path, capsys, monkeypatch):
    """Every size up to a largest graph of 512 tokens, or every 256th up to 2**24, is no burden."""
    for graphs in ("{unit: tokens, max: 512, padded: true, pads_to: [[1, null, 1]]}",
                   "{unit: tokens, max: 16777216, padded: true, pads_to: [[1, null, 256]]}"):
        _engine(tmp_path, monkeypatch, _swap(VLLM_GRAPHS, f"cuda_graph: {graphs}"), "vllm")
        warnings_of(capsys, ["cost", _scenario(tmp_path, VLLM_8B)])


def test_every_size_up_to_a_huge_graph_unpadded_is_a_range(tmp_path, monkeypatch):
    """Before: a user file's max of 2**24 tokens under engine.graph_padding false captured every
    size as a 16.8M tuple (3 s and 4 GB a point)."""
    from mtpsim.costs.host import host_model
    from mtpsim.scenario import load
    _engine(tmp_path, monkeypatch, _swap(VLLM_GRAPHS, "cuda_graph: {unit: tokens, max: 16777216, padded: true}"), "vllm")
    point = load(_scenario(tmp_path, VLLM_8B.replace("{kind: vllm}", "{kind: vllm, graph_padding: false}")))[0]
    host = host_model(point)
    assert host.graph_sizes == range(1, 2**24 + 1)
    assert host.uses_graphs("decode", 2**24) and not host.uses_graphs("decode", 2**24 + 1)
    assert host.padded_batch(7) == 7


# ------------------------------------------------------------- 2. a graph-list item neither a size nor a range

@pytest.mark.parametrize("item, word", [
    ("[16, 256]", "a list of 2 items, where a range is [first, last, step]"),
    ("[]", "a list of 0 items"),
    ("[1, null, 1, 4]", "a list of 4 items"),
    ("8.0", "8.0 is neither a size (a whole number) nor a range"),
    ("true", "True is neither a size"),
    ('"8"', "'8' is neither a size"),
])
def test_a_graph_item_neither_a_size_nor_a_range_says_what_they_are(tmp_path, capsys, monkeypatch, item, word):
    """Before: "Input should be a valid dictionary or instance of SizeRange", naming no form."""
    _refused(tmp_path, capsys, monkeypatch, _swap(PADS, f"  padded: true\n  pads_to: [1, {item}"), "cuda_graph.pads_to.1", word)


# ------------------------------------------------------------- 3. a padded list holding no size within the largest graph

SPECULATIVE = "  speculative_pads_to: [[1, 8, 1], [10, 32, 2], [40, 64, 4], [72, 256, 8], [272, null, 16]]\n# Prefix"


def test_a_speculative_list_past_the_largest_graph_captures_none(tmp_path, capsys, monkeypatch):
    """Before: an engine file whose speculative list starts past the largest graph (adds_max false)
    captured no speculative graph, yet its verify replayed one, padded to the default buckets
    (host.py took the empty list for 'no list'), and nothing was said."""
    from mtpsim.costs.host import host_model
    from mtpsim.scenario import load
    _engine(tmp_path, monkeypatch, _swap(SPECULATIVE, "  speculative_pads_to: [[4000, null, 16]]\n  adds_max: false\n# Prefix"))
    host = host_model(load("scenarios/quickstart.yaml")[0])
    assert host.speculative_graph_sizes == () and host.graph_label == "512"
    assert not host.uses_graphs("verify", 8, 4) and host.padded_batch(5, 4, "verify") == 5
    assert host.uses_graphs("decode", 8) and host.padded_batch(5) == 8  # the plain list is still captured
    said = ("engine.kind: sglang's cuda_graph.speculative_pads_to holds no size up to its largest graph, 512: no graph "
            "is captured for a speculative iteration's passes, which run eagerly")
    assert any(said in line for line in warnings_of(capsys, ["cost", "scenarios/quickstart.yaml", "--batch", "8"]))
    assert not any("pads_to" in line for line in warnings_of(
        capsys, ["cost", "scenarios/quickstart.yaml", "--batch", "8", "--set", "engine.max_graph_batch=300"]))


# ------------------------------------------------------------- 4. cost --batch past a mixing engine's budget

TRT_NEXTN = """\
name: t
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: trtllm, chunked_prefill_tokens: 2048}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.6, 0.4]}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 100, output_len: 8}
"""


def test_a_cost_batch_past_the_token_budget_is_warned_of(tmp_path, capsys):
    """Before: `cost --batch 1024` priced 1024 x 4 verify tokens as one iteration of an engine
    whose budget is 2048 tokens a step, without the word `run` gives the same batch as its load."""
    said = ("mtpsim: warning: --batch: 1024 requests x 4 tokens each exceed trtllm's 2048-token budget a step: the "
            "engine would decode part of the batch per step; priced as asked")
    assert said in warnings_of(capsys, ["cost", _scenario(tmp_path, TRT_NEXTN), "--batch", "1024"])
    assert not any("budget" in line for line in warnings_of(capsys, ["cost", _scenario(tmp_path, TRT_NEXTN),
                                                                     "--batch", "512"]))
    for engine in ("{kind: sglang, chunked_prefill_tokens: 2048}", "{kind: trtllm, chunked_prefill_tokens: 2048, "
                                                                     "mixed_batches: false}"):
        text = TRT_NEXTN.replace("{kind: trtllm, chunked_prefill_tokens: 2048}", engine)
        assert not any("budget" in line for line in warnings_of(capsys, ["cost", _scenario(tmp_path, text),
                                                                         "--batch", "1024"]))


# ------------------------------------------------------------- 5. a baseline's notes read its own point

WAIT_SWEEP = """\
name: w
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: trtllm}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.6, 0.4]}
workload: {arrival: closed, concurrency: 16, num_requests: 32, input_len: {dist: uniform, min: 700, max: 900},
           output_len: {dist: uniform, min: 30, max: 80}}
sweep: {engine.batch_wait: [null, {timeout_iters: 40, max_tokens_ratio: 0.8}]}
"""


def test_a_baselines_batch_wait_note_reads_its_own_point(tmp_path, capsys):
    """Before: the notes under the table read every baseline row's settings off the first point,
    so the `none` run of the batch-waiting point (its engine.batch_wait null at the first) was an
    AttributeError traceback: 'NoneType' object has no attribute 'timeout_iters'."""
    from mtpsim import cli
    assert cli.main(["run", _scenario(tmp_path, WAIT_SWEEP), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("batch wait: ")]
    assert [line.split(":")[1].strip() for line in notes] == ["nextn S=3 at conc 16", "none S=0 at conc 16"], out
    assert all("until 40 steps had held them" in line for line in notes)


# ------------------------------------------------------------- 6. a user catalog's entry the lookup passes over

@pytest.mark.parametrize("kind, name, make, word", [
    ("engines", "sglang.yaml", lambda p: p.symlink_to(p.parent / "moved.yaml"), "a link that leads nowhere"),
    ("engines", "sglang.yaml", lambda p: p.mkdir(), "a folder, not a file"),
    ("engines", "sglang.yml", lambda p: p.write_text("name: sglang\n"), "catalog files end in .yaml"),
    ("models", "deepseek-v3.yaml", lambda p: p.symlink_to(p.parent / "moved.yaml"), "a link that leads nowhere"),
])
def test_a_user_entry_the_lookup_passes_over_shadows_nothing_silently(tmp_path, capsys, monkeypatch, kind, name,
                                                                      make, word):
    """Before: a user catalog's entry that is a broken link (its file moved), a folder or a .yml
    file of a built-in name was passed over, and the built-in entry ran in its place without a
    word; only a name no folder held was refused so (as profiles already were)."""
    entry = tmp_path / "cat" / kind / name
    entry.parent.mkdir(parents=True)
    make(entry)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    line = one_line_error(capsys, ["cost", "scenarios/quickstart.yaml"], "", word)
    assert f"{kind} catalog entry {entry}: " in line, line
    if kind == "models":
        assert ": model: " in line, line


def test_a_file_at_a_catalogs_top_still_leaves_a_built_in_name_alone(tmp_path, capsys, monkeypatch):
    """A file at a user catalog's top named like a built-in entry (a scenario may be called
    h200.yaml) is said only where no folder holds the name."""
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "sglang.yaml").write_text("name: s\n")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    warnings_of(capsys, ["cost", "scenarios/quickstart.yaml"])


# ------------------------------------------------------------- 7. a batch-wait ratio every speculative mixing step reaches

def test_a_ratio_under_a_speculative_steps_tokens_is_warned_of(tmp_path, capsys):
    """Before: the ratio was judged against 2 tokens (one decode token and one prompt token), so
    0.0005 x 8192 = 4.1 tokens under nextn S=3, where every decoding request holds 4 verify tokens
    and a mixing step 5 at least, held nothing back without a word."""
    text = TRT_NEXTN.replace("{kind: trtllm, chunked_prefill_tokens: 2048}",
                             "{kind: trtllm, batch_wait: {timeout_iters: 40, max_tokens_ratio: 0.0005}}")
    said = ("engine.batch_wait: max_tokens_ratio 0.0005 x the 8192-token budget is 4.096 tokens, which every step "
            "that mixes a prompt into decoding reaches (5 at least)")
    assert any(said in line for line in warnings_of(capsys, ["cost", _scenario(tmp_path, text)]))
    for quiet in (text.replace("0.0005", "0.001"),  # 8.2 tokens: a step of one request and a short prompt is below it
                  text.replace("acceptance:", "speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b, policy: "
                               "{steps_by_batch: {1: 3, 2: 0}}}\nacceptance:").replace(
                      "speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}\n", "", 1)):
        assert not any("batch_wait" in line for line in warnings_of(capsys, ["cost", _scenario(tmp_path, quiet)]))
