"""Bad-input campaign 22: block drafters with kept-length curves and steps_by_batch, DeepSeek-V4 /
V4.1 targets read from config.json (mtpsim/hfconfig), engine versions and rules, `mtpsim cost`,
`search` and `recommend` flags, `--set` values of the wrong type, disaggregation on GB200 NVL72,
prefix caching, trace files, user catalogs and output folders.

Probed, and already fine (one line naming the key, or a warning, or the right numbers): V4 and
V4.1 config.json fields (hidden_size, vocab_size, heads, head_dim, ranks, groups, experts, top-k,
index_topk, window, hc_mult, sinkhorn iterations, hash layers, MTP layers, rope dims and factor)
at 0, -1, 1e300, 2**40, "8", 1.5, true, [1], missing; top-k past the experts, o_groups not
splitting the heads, more K=V heads than one, a window past the context (warned), compress_ratios
short, empty, text, a mapping, nested, true, 4.0, an MTP layer without a ratio; NaN, Infinity,
1e999, a 5,000-digit integer, an empty or null file, a BOM, UTF-16; quantization and expert dtypes
of the wrong type or disagreeing; text_config empty, a list, null; mlp_layer_types short or text;
DSpark-bundled checkpoints (their drafter found by shape, a serial MTP refused, block 0 or
10**6, taps empty, noise -1, markov 0), V4.1 Engram, kv/index source and candidate keys; z-lab
DFlash and DeepSpec drafter configs (block_size 1, 2, 10**6, "16", target layers 0, 3, taps
empty, -1, twice, past the target, text; markov -1, true; confidence 1, "yes"); a drafter built
for another target (V4 / V4.1 / V4-Pro pairs), a config.json read as a draft, assistant or block
drafter of the wrong role; block steps past the block, topk 2, draft_tokens, another role's draft,
inline block overrides; kept_length with design none, NaN, all on 0 (warned), 34 entries
(warned), with a histogram, a curve, a tree, spread, a controller without it, recommend and
search; steps_by_batch on block drafters past the steps, all 0 (warned), with kept_length, under
cost --batch, recommend and search (warned unused); engine.version null, [1, 2], {a: 1}, true,
0.5 / 0.4 / 1e3 / .nan as numbers, "0.5", "v0.5.12", "latest", "0.5.12rc1", blank, a date;
ignore_rules unknown, twice, not in force (warned), [1], text; mem_fraction [0.5], null, .inf,
0.5 (warned: no pool); engine overrides moot with the design or graphs (warned); --set of lists,
mappings, null, booleans, dates, !!binary, !!set, !!python tags, anchors, merges, several
documents, YAML 1.1 octal / hex / binary / sexagesimal / underscores, 100,000 characters,
duplicate keys, empty key parts, unknown paths, a sweep entry inside another; cost --batch 0,
2**20, 1.0, 1e3, blank, twice, --context -1, 2**24, nan, --prompt 0, 2**24, 100,000 on block and
V4 scenarios; recommend --batch 1,,2 / 0 / -1 / 1.5 / 9999999, --topk 0 / 65 / 1,2 on chains,
--max-steps 0..1000; search --gpus 0 / 3 / 10**6, --ttft / --tpot / --min-user-tps in every
spelling, --rates 0 / 1e-300 / 1e300 / nan / 1,1, search.* bounds (tp, ep, attention_dp, topk,
designs, max_steps, requests_per_user, rates) on block drafters, --disagg on one GPU; GB200
disaggregation (nvlink past the NVL72 domain, gpus below the pools, nodes of 3 or 5, no scale-out
network, attention_dp and ep not dividing tp, kv_streaming, link free, a trace), NVL72 layouts of
tp 64 / 72 / 128 / 144; prefix caching (block 0, 100,000, a cap of 1, off) on V4, V4.1,
Qwen3-Next, Gemma 4, MiMo-V2-Flash; traces that are a FIFO, /dev/zero, /dev/urandom, /dev/null,
a folder, a link loop, a corrupt, cut, empty, non-UTF-8 or 200 MB .gz, a window past the file,
every row skipped, prompts past the context, the wrong format, mooncake hash_ids past their
blocks, 2,000,000 rows; user catalogs whose entry is a list, empty, binary, null, a scalar,
Latin-1, another name, 20 MB, a key twice, an alias bomb, a folder or a link loop (named at a
scenario), a kind folder that is a file or a loop; output folders holding a hidden file, a
folder named summary.csv, an empty subfolder, the scenario itself, under a file, 300 characters,
a newline, blank; calibrate --out at a file, a full folder, under a file, a link; plot of
recommend, search and verify folders, of a run folder with its resolved scenario broken (warned)
or a table binary or empty; verify of block drafters, V4 (refused), disaggregated pools, traces,
dtype fp4, 0 iterations or layers, a CUDA device absent; hardware overrides (peak_flops emptied or
given only FP4, 1 MiB of memory, another GPU's profile, latency floors) and a user h200.yaml of other
figures (warned); cost.profile of another GPU (refused) or engine (warned); a sweep over
hf_config-read and catalog models; recommend and search on Poisson or scheduled loads (warned),
with block drafters, kept lengths, dp and V4; model and draft given both `from` and `hf_config`.

Found and fixed:
- config.json: a model_type given as a list (or a number) was passed over for the architectures
  class without a word, and architectures given as a string read as `no model_type nor
  architectures is not supported`: both are now refused at their key in config.json (hfconfig._reader);
- MTPSIM_CATALOG naming a file or a broken link said `no such folder` of a path that is there
  (packagedata.user_catalog_dirs);
- `mtpsim models / hardware / engines` passed over a user catalog's zz.yaml that is a folder or a
  broken link, and a zz.yml, exiting 0, where a scenario naming zz is refused: each is now listed
  invalid and the command exits 2 (catalog_lookup.unnamed_entries, listing._unnamed);
- `plot` of the committed block-confidence scenario drew latency.png with its axes collapsed under
  a legend of whole swept acceptance sections, and printed matplotlib's `constrained_layout not
  applied` warning: a swept value's label is cut to its start and end, numbered where two cut alike;
  and a sweep of 32 points or more did the same with one legend entry a point: past 16 points the
  legend names each series once, its points drawn in its colour (the speedup and frontier plots
  past 32 series say how many there are instead of a legend that collapsed them at 40, and
  acceptance.png, which draws 6 series, says when a sweep has more; breakdown.png, a bar a run,
  draws the first 200 and says so, where 10,000 made a figure 330,000 pixels tall in 108 s);
- YAML read `-.5` and `+.25` (YAML 1.2 floats) as text, refused as `not a valid number` where the
  value's bound (or nothing) was wrong (yamlfiles._FLOAT_12);
- a sweep over workload.concurrency under a Poisson or trace load ran the same points twice,
  told apart by nothing in the table, without a word: concurrency is warned of as unread by run
  (workload_advice.concurrency_unread; cost and verify, which take it as their batch, skip it);
- `cost` without --batch on a dp scenario priced one replica at all the users (its steps_by_batch
  entry and tokens), and held them against one replica's KV pool (`8 requests do not fit` where
  each replica holds its 4): it now prices a replica's share, as run spreads the users;
- a sweep over whole speculative sections (block drafters at steps 3 and 6, on a release lacking
  their method) was told `these points are the same run` above a table of 1237 and 1508 tok/s: a
  warning shared by every point says so only where the sections differ in nothing else
  (advice_sweep._differ_elsewhere);
- --set into a list by an item's index (sweep.workload.concurrency.1=8, sweep.speculative.0.steps,
  acceptance.per_depth.0) was refused for something else (`must be a non-empty list`, `unknown
  key`, `lies inside sweep...`, `not a mapping`): it now says the list is set whole, and how;
- verify's prediction ran the scenario's steps_by_batch policy (1 step at batch 2: no draft pass)
  against a loop that drafts speculative.steps (3.4 ms of drafts), an iteration 48% off without a
  word; it now predicts the loop's steps, and a policy or a kept-length curve is warned of as unread;
- search's cache key held an acceptance histogram's path, not its version: after the file was
  edited, a rerun served the old rows (`MTP vs none: -5.4%` where the new counts give +98.7%);
- `--set model.hf_config=...` over a catalog name was refused as `give one source, from or
  hf_config, not both`, of a `from` --set had made of the name: the config now replaces it;
- engine.prefix_cache.block_tokens 16 beside a Mooncake trace whose hash_ids name 512-token blocks
  ran with 512 without a word: warned as not read;
- DeepSeek-V4's compress_ratios and Step 3.5's layer_types took any number of entries past the
  MTP layers (50 for 43 + 1) without a word, and an unread ratio 1 was refused as an MTP layer's
  CSA2: the entries past them are warned of and built into nothing;
- a `~/...` path on the command line (quoted, or from a script): --out made a folder named `~`
  here and printed `wrote ~/runs/x/`; cost '~/s.yaml' and plot '~/runs/x' said `no such file`;
- a `~/...` trace, histogram or profile in a scenario was `no such file` where model and hardware
  files there were read, and a config.json at ~/config.json named its model `~` (sweep.home);
- a YAML alias used twice (`input_len: &len {...}`, `output_len: *len`) was one object, so --set
  workload.input_len.min=4000 (or a sweep over it) made every answer 4000+ tokens too;
- --set model.dtypes.kv_cache=fp8 inside a sweep of [llama-3.1-8b, {from: qwen3-8b}] ran both points
  with an FP8 cache but labelled the first row with the bare name: a swept catalog name takes the
  key as {from: NAME, ...} in its row too;
- --set inside a draft given as a catalog name (speculative.draft.block.markov_rank over `draft:
  dspark-qwen3-8b-block7`) was `speculative.draft is not a mapping`, where inside model and
  hardware it overrides the entry: the draft's name now takes it the same way.

Noticed, and left alone: unreached_policy bounds a steps_by_batch key by all the users, not a
replica's share (round-robin routing can pile a closed loop's requests on one replica, so `never
used` would not be certain); a named acceptance curve measured on another model and drafter (Kimi
K2.5's EAGLE-3 curve on DeepSeek-V4-Pro's MTP) is applied without a word (a proxy may be meant);
model.block_draft naming no catalog entry is not checked while the design drafts no block;
`cost --set seeds=5` is not warned of as unread; `calibrate --from aiconfigurator --archive` at a
file says `has no data folder`; a plain-text file named .gz is `a corrupt or cut-off .gz file`;
prefix caching is priced on hybrid linear-attention and compressed-attention models whatever an
engine release supports (a modelling question, not input); `0o7` (YAML 1.2 octal) is text,
refused as `not a valid number` where a number goes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_deepseek_v4 import FLASH

QUICKSTART = "scenarios/quickstart.yaml"
VLLM_8B = """\
name: v
model: llama-3.1-8b
hardware: h100-sxm
speculative: {design: none}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 100, output_len: 8}
"""
V4 = """\
name: v4
model: {hf_config: ckpt/config.json, name: deepseek-v4-flash}
hardware: b200
parallel: {tp: 8}
speculative: {design: nextn, steps: 1}
acceptance: {accept_length: 1.5}
workload: {concurrency: 1, num_requests: 2, input_len: 64, output_len: 16}
"""


def _v4(tmp_path, config: dict) -> str:
    """A scenario reading DeepSeek-V4-Flash from `config` (a config.json beside it); its path."""
    (tmp_path / "ckpt").mkdir(exist_ok=True)
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config))
    (tmp_path / "s.yaml").write_text(V4)
    return str(tmp_path / "s.yaml")


def _catalog(tmp_path, monkeypatch, kind: str) -> object:
    """An empty user catalog folder of `kind` under tmp_path, MTPSIM_CATALOG naming it."""
    folder = tmp_path / "cat" / kind
    folder.mkdir(parents=True)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    return folder


# ------------------------------------------------------------- 1. config.json's model_type and architectures

@pytest.mark.parametrize("field, value, word", [
    ("model_type", ["deepseek_v4"], "expected the architecture's name as text"),
    ("model_type", 4, "expected the architecture's name as text"),
    ("architectures", "DeepseekV4ForCausalLM", "expected a list of class names"),
    ("architectures", [["DeepseekV4ForCausalLM"]], "expected a list of class names"),
])
def test_model_type_and_architectures_of_another_form_are_named(tmp_path, capsys, field, value, word):
    """Before: a model_type written as a list was passed over without a word for the
    architectures class (the wrong reader could have been picked); an architectures string read as
    `no model_type nor architectures is not supported`, naming as missing what the file gives."""
    config = {**FLASH, field: value} | ({"model_type": None} if field == "architectures" else {})
    line = one_line_error(capsys, ["cost", _v4(tmp_path, config)], field, word)
    assert line.startswith(f"mtpsim: error: {tmp_path / 'ckpt' / 'config.json'}: "), line


# ------------------------------------------------------------- 2. MTPSIM_CATALOG naming something that is no folder

@pytest.mark.parametrize("make, word", [
    (lambda t: (t / "catalog.yaml").write_text("x: 1\n") and t / "catalog.yaml", "exists and is not a folder (a file)"),
    (lambda t: os.symlink(t / "gone", t / "link") or t / "link", "exists and is not a folder (a link to nothing)"),
    (lambda t: t / "missing", "no such folder"),
])
def test_a_catalog_variable_naming_no_folder_says_what_is_there(tmp_path, capsys, monkeypatch, make, word):
    """Before: MTPSIM_CATALOG naming a file (or a broken link) said `no such folder`, of a path
    the user can see is there."""
    monkeypatch.setenv("MTPSIM_CATALOG", str(make(tmp_path)))
    line = one_line_error(capsys, ["models"], "", word)
    assert line.startswith("mtpsim: error: MTPSIM_CATALOG: "), line


# ------------------------------------------------------------- 3. listing a catalog passes over no entry

@pytest.mark.parametrize("kind", ["models", "hardware", "engines"])
@pytest.mark.parametrize("make, word", [
    (lambda f: (f / "zz.yaml").mkdir(), "a folder, not a file"),
    (lambda f: os.symlink(f / "moved.yaml", f / "zz.yaml"), "a link that leads nowhere"),
    (lambda f: (f / "zz.yml").write_text("name: zz\n"), "catalog files end in .yaml"),
])
def test_a_listing_names_the_entries_no_scenario_can_name(tmp_path, capsys, monkeypatch, kind, make, word):
    """Before: `mtpsim models` (hardware, engines) listed the other entries and exited 0, leaving
    out a user's zz.yaml that is a folder or a broken link, or zz.yml, without a word, where a
    scenario naming zz is refused."""
    make(_catalog(tmp_path, monkeypatch, kind))
    line = one_line_error(capsys, [kind], "", word)
    assert f"{tmp_path / 'cat' / kind}/zz.y" in line and "no scenario can name this" in line, line


def test_a_listing_names_an_entry_once(tmp_path, capsys, monkeypatch):
    """A built-in name the user's folder holds as a broken link is the lookup's error, said once."""
    folder = _catalog(tmp_path, monkeypatch, "engines")
    os.symlink(folder / "moved.yaml", folder / "sglang.yaml")
    line = one_line_error(capsys, ["engines"], "", "a link that leads nowhere")
    assert "more invalid" not in line, line


# ------------------------------------------------------------- 4. a legend of long swept values

def test_a_legend_of_long_swept_values_leaves_the_plot_drawn(tmp_path, capsys):
    """Before: `mtpsim plot` of the committed block-confidence scenario (its sweep over whole
    acceptance sections, kept lengths and all) drew latency.png with its axes collapsed under a
    legend wider than the figure, and said so in matplotlib's words: `drawing its plots:
    constrained_layout not applied because axes sizes collapsed to zero`."""
    out = tmp_path / "out"
    assert cli.main(["run", "scenarios/block-confidence-qwen3-8b.yaml", "--out", str(out), "--jobs", "1",
                     "--set", "sweep.workload.concurrency=[1, 2]", "--set", "workload.num_requests=4",
                     "--set", "workload.output_len=8"]) == 0
    capsys.readouterr()
    assert warnings_of(capsys, ["plot", str(out)]) == []
    assert (out / "latency.png").is_file()


# ------------------------------------------------------------- 5. YAML 1.2's signed floats before a leading dot

def test_a_sign_before_a_leading_dot_reads_as_a_number(tmp_path, capsys):
    """Before: `-.5` and `+.25` (YAML 1.2 floats; 1.1 signs only a float starting with a digit)
    were the strings '-.5' and '+.25', refused as `Input should be a valid number (got '-.5')`
    where the value's own bound is what is wrong, and a valid `+.25` was refused."""
    one_line_error(capsys, ["cost", QUICKSTART, "--set", "acceptance.spread=-.5"], "acceptance.spread",
                   "greater than or equal to 0 (got -0.5)")
    assert warnings_of(capsys, ["cost", QUICKSTART, "--set", "acceptance.spread=+.25"]) == []
    text = tmp_path / "q.yaml"
    text.write_text(Path(QUICKSTART).read_text().replace("engine: {max_running_requests: 64}",
                                                    "engine: {max_running_requests: 64, mem_fraction: -.9}"))
    one_line_error(capsys, ["cost", str(text)], "engine.mem_fraction", "(got -0.9)")


# ------------------------------------------------------------- 6. users given to a Poisson or trace load

POISSON = """\
name: p
model: llama-3.1-8b
hardware: h100-sxm
speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.7]}
workload: {arrival: poisson, rate_per_s: 4, num_requests: 8, input_len: 64, output_len: 8}
"""


@pytest.mark.parametrize("arrival, workload, how", [
    ("poisson", "{arrival: poisson, rate_per_s: 4, num_requests: 8, input_len: 64, output_len: 8}",
     "draws its requests at rate_per_s"),
    ("trace", "{arrival: trace, trace: t.csv}", "replays the trace's arrival times"),
])
def test_a_sweep_over_users_a_load_does_not_read_is_the_same_run(tmp_path, capsys, arrival, workload, how):
    """Before: `run` with a Poisson or trace load and a sweep over workload.concurrency ran its
    points as one (the same rows twice, told apart by nothing in the table) without a word, where
    a batch load's unread concurrency is warned of."""
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,8\n0.5,32,8\n")
    text = POISSON.replace("{arrival: poisson, rate_per_s: 4, num_requests: 8, input_len: 64, output_len: 8}", workload)
    path = tmp_path / "s.yaml"
    path.write_text(text + "sweep:\n  workload.concurrency: [1, 4]\n")
    lines = warnings_of(capsys, ["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1"])
    said = (f"mtpsim: warning: {path}: sweep.workload.concurrency: workload.concurrency: arrival "
            f"{arrival} {how}: `run` does not read concurrency")
    assert any(line.startswith(said) and line.endswith("these points are the same run") for line in lines), lines
    path.write_text(text)
    lines = warnings_of(capsys, ["run", str(path), "--set", "workload.concurrency=4", "--out", str(tmp_path / "o2"),
                                 "--jobs", "1"])
    assert any(line.startswith("mtpsim: warning: --set: workload.concurrency: ") for line in lines), lines


def test_cost_and_a_swept_arrival_read_those_users(tmp_path, capsys):
    """`cost` takes workload.concurrency as its batch under any arrival, and a sweep over the
    arrival reads it at its closed-loop points: neither is warned of."""
    path = tmp_path / "s.yaml"
    path.write_text(POISSON.replace("rate_per_s: 4,", "rate_per_s: 4, concurrency: 4,"))
    assert warnings_of(capsys, ["cost", str(path)]) == []
    path.write_text(POISSON.replace("rate_per_s: 4,", "rate_per_s: 4, concurrency: 4,")
                    + "sweep:\n  workload.arrival: [closed, poisson]\n")
    assert warnings_of(capsys, ["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1"]) == []


# ------------------------------------------------------------- 7. cost over dp replicas prices a replica's share

DP2 = """\
name: dp
model: llama-3.1-8b
hardware: h100-sxm
parallel: {tp: 1, dp: 2}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b, policy: {steps_by_batch: {1: 3, 32: 1}}}
acceptance: {per_depth: [0.8, 0.7, 0.6]}
workload: {arrival: closed, concurrency: 32, num_requests: 64, input_len: 64, output_len: 32}
"""


def test_cost_prices_a_replicas_share_of_the_users(tmp_path, capsys):
    """Before: `cost` of 32 users over dp 2 priced one replica's iteration at 32 requests (its
    steps_by_batch line: 1 step), where `run` spreads them 16 a replica (3 steps): an iteration no
    GPU runs. Its cap warning already counted a replica's share; its pricing did not."""
    path = tmp_path / "s.yaml"
    path.write_text(DP2)
    assert cli.main(["cost", str(path)]) == 0
    out = capsys.readouterr().out
    assert "at batch 16 an iteration runs 3 steps" in out and ", batch 16, context 64," in out, out[:600]
    assert cli.main(["cost", str(path), "--batch", "32"]) == 0  # the flag's batch is a replica's, as said
    assert ", batch 32, context 64," in capsys.readouterr().out


def test_cost_judges_a_replicas_share_against_its_kv_pool(tmp_path, capsys):
    """Before: 8 users of 100,000 tokens over dp 2 were warned `8 requests ... do not fit in memory
    (at most 4)`: the users of both replicas held against one replica's pool, which holds its 4."""
    path = tmp_path / "s.yaml"
    path.write_text(DP2.replace("speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b, policy: "
                                "{steps_by_batch: {1: 3, 32: 1}}}\nacceptance: {per_depth: [0.8, 0.7, 0.6]}\n",
                                "speculative: {design: none}\n").replace(
        "concurrency: 32, num_requests: 64, input_len: 64", "concurrency: 8, num_requests: 8, input_len: 100000"))
    assert warnings_of(capsys, ["cost", str(path)]) == []
    path.write_text(path.read_text().replace("concurrency: 8, num_requests: 8", "concurrency: 10, num_requests: 10"))
    lines = warnings_of(capsys, ["cost", str(path)])
    assert any("5 requests a replica of 100000 tokens do not fit in memory (none: at most 4)" in x for x in lines), lines


# ------------------------------------------------------------- 8. a warning at every point of a sweep that still differs

SECTIONS = """\
name: sw
model: qwen3-8b
hardware: b200
engine: {kind: sglang, version: "0.5.14"}
acceptance: {per_depth: [0.9, 0.85, 0.8, 0.75, 0.7, 0.65]}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 256, output_len: 16}
sweep:
  speculative:
    - {design: block, steps: 3, draft: dspark-qwen3-8b-block7}
    - {design: block, steps: 6, draft: dspark-qwen3-8b-block7}
"""


def test_a_warning_at_every_point_of_sections_that_differ_is_no_same_run(tmp_path, capsys):
    """Before: a sweep over whole speculative sections, each a DSpark drafter SGLang 0.5.14 has
    no method for, was told `... at every point: these points are the same run` above a table
    whose two points ran 3 and 6 steps (1237 and 1508 tokens/s): the one warning the points share
    was taken for the sweep changing nothing."""
    path = tmp_path / "s.yaml"
    path.write_text(SECTIONS)
    lines = warnings_of(capsys, ["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1"])
    said = [x for x in lines if ": sweep.speculative: speculative.design: sglang 0.5.14 has no speculative method" in x]
    assert len(said) == 1 and said[0].endswith("(at every point)") and "same run" not in said[0], lines


def test_sections_that_differ_only_where_the_warning_says_are_the_same_run(tmp_path, capsys):
    """The rule stays for sections that differ only in what the warning says is ignored."""
    path = tmp_path / "s.yaml"
    path.write_text(SECTIONS.replace("hardware: b200\nengine: {kind: sglang, version: \"0.5.14\"}\n", "hardware: b200\n")
                    .replace("{design: block, steps: 3, draft: dspark-qwen3-8b-block7}", "{design: none, draft: a}")
                    .replace("{design: block, steps: 6, draft: dspark-qwen3-8b-block7}", "{design: none, draft: b}"))
    lines = warnings_of(capsys, ["cost", str(path)])
    assert any(x.endswith("speculative.draft: design none takes no external draft: it is ignored at every point: "
                          "these points are the same run") for x in lines), lines


# ------------------------------------------------------------- 9. --set into a list by an item's index

DSPARK_SWEEP = "scenarios/dspark-vs-mtp1-deepseek-v4-flash.yaml"


@pytest.mark.parametrize("setting, whole, before", [
    ("sweep.workload.concurrency.1=8", "sweep.workload.concurrency", "must be a non-empty list"),
    ("sweep.workload.concurrency.1=[8]", "sweep.workload.concurrency", "lies inside sweep.workload.concurrency"),
    ("sweep.speculative.0.steps=[2]", "sweep.speculative", "unknown key"),
    ("acceptance.per_depth.0=0.5", "acceptance.per_depth", "is not a mapping"),
])
def test_an_item_of_a_list_set_by_its_index_says_lists_are_set_whole(capsys, setting, whole, before):
    """Before: an item of a swept list (or of any list) named by its index was refused with words
    about something else: the value (`must be a non-empty list`), the index as a key (`unknown
    key`), a second sweep entry inside the first, or the list as `not a mapping`."""
    key = setting.partition("=")[0]
    line = one_line_error(capsys, ["cost", DSPARK_SWEEP, "--set", setting], key, f"{whole} is a list, set whole")
    assert f"--set {whole}=[...]" in line and before not in line, line


# ------------------------------------------------------------- 10. verify with a steps policy or a kept-length curve

def test_verify_predicts_the_steps_its_loop_runs_and_says_what_it_does_not_read(tmp_path, capsys):
    """Before: verify's loop drafted speculative.steps (3) every iteration while its prediction ran
    the scenario's steps_by_batch policy (1 step at batch 2): no draft pass predicted against 3.4 ms
    measured, an iteration 48% off, without a word; a kept-length curve went unread unsaid."""
    pytest.importorskip("torch")
    import pandas as pd
    out = tmp_path / "v"
    assert cli.main(["verify", QUICKSTART, "--out", str(out), "--set", "speculative.policy={steps_by_batch: {1: 3, 2: 1}}",
                     "--set", "verify={num_layers: 2, hidden_scale: 0.05, iterations: 3, warmup_iterations: 1}",
                     "--set", "workload.concurrency=2", "--set", "workload.input_len=64", "--set", "engine=null",
                     "--set", "acceptance.kept_length=[0.5, 0.5]"]) == 0
    err = capsys.readouterr().err
    assert "--set: speculative.policy: verify's loop drafts speculative.steps (3) every iteration" in err, err
    assert "--set: acceptance.kept_length: verify's loop verifies every draft it makes" in err, err
    table = pd.read_csv(out / "verify.csv").set_index("kind")
    assert table.loc["draft_s", "predicted"] > 0 and table.loc["draft_s", "measured"] > 0


# ------------------------------------------------------------- 11. search's cache and an edited acceptance histogram

def test_search_reruns_the_points_of_an_edited_histogram(tmp_path, capsys):
    """Before: the cache key held the histogram's path, not its contents: after the file at that
    path was edited (accepting far more), a rerun served the old rows, `MTP (nextn) vs none: 535 vs
    566 tok/s/GPU (-5.4%)`, where the new histogram gives +98.7%."""
    (tmp_path / "h.csv").write_text("accepted,count\n0,90\n1,5\n2,5\n")
    path = tmp_path / "s.yaml"
    path.write_text(POISSON.replace("acceptance: {per_depth: [0.8, 0.7]}", "acceptance: {histogram: h.csv}")
                    .replace("{arrival: poisson, rate_per_s: 4, num_requests: 8, input_len: 64, output_len: 8}",
                             "{arrival: closed, concurrency: 2, num_requests: 8, input_len: 64, output_len: 32}"))
    argv = ["search", str(path), "--gpus", "1", "--concurrency", "4", "--cache", str(tmp_path / "cache"), "--no-plot",
            "--jobs", "1"]
    assert cli.main([*argv, "--out", str(tmp_path / "o1")]) == 0
    before = capsys.readouterr().out
    (tmp_path / "h.csv").write_text("accepted,count\n0,5\n1,5\n2,90\n")
    assert cli.main([*argv, "--out", str(tmp_path / "o2")]) == 0
    after = capsys.readouterr().out
    assert "(3 run, 0 cached)" in before and "(2 run, 1 cached)" in after, after  # the baseline reads no histogram
    assert cli.main([*argv, "--out", str(tmp_path / "o3")]) == 0
    assert "(0 run, 3 cached)" in capsys.readouterr().out


# ------------------------------------------------------------- 12. --set model.hf_config over a catalog name

@pytest.mark.parametrize("sets", [
    ["model.hf_config=CONFIG"],
    ["model.dtypes.kv_cache=fp8", "model.hf_config=CONFIG"],
])
def test_a_config_set_over_a_catalog_name_replaces_it(tmp_path, capsys, sets):
    """Before: `--set model.hf_config=...` over `model: llama-3.1-8b` was refused with `model: give
    one source, from or hf_config, not both`, of a `from` the user never wrote (--set had turned
    the name into one)."""
    from tests.test_hfconfig import LLAMA_31_8B
    (tmp_path / "My-Llama").mkdir()
    (tmp_path / "My-Llama" / "config.json").write_text(json.dumps(LLAMA_31_8B))
    path = tmp_path / "s.yaml"
    path.write_text(VLLM_8B)
    argv = ["cost", str(path)]
    for setting in sets:
        argv += ["--set", setting.replace("CONFIG", str(tmp_path / "My-Llama" / "config.json"))]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "v: My-Llama on 1 h100-sxm" in capsys.readouterr().out


# ------------------------------------------------------------- 13. a cache block size a Mooncake trace's hash_ids override

def test_a_block_size_the_traces_hash_ids_override_is_warned_of(tmp_path, capsys):
    """Before: engine.prefix_cache.block_tokens 16 beside a Mooncake trace whose hash_ids name
    512-token blocks (workload.trace.block_size) ran with blocks of 512 without a word."""
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}\n'
                                      '{"timestamp": 5, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}\n')
    path = tmp_path / "s.yaml"
    path.write_text(VLLM_8B.replace("workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 100, "
                                    "output_len: 8}", "engine: {prefix_cache: {enabled: true, block_tokens: 16}}\n"
                                    "workload: {arrival: trace, trace: t.jsonl}"))
    lines = warnings_of(capsys, ["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1"])
    said = f"mtpsim: warning: {path}: engine.prefix_cache.block_tokens: the trace's hash_ids name blocks of "
    assert any(x.startswith(said) and "(512) tokens" in x for x in lines), lines
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 1024, "output_length": 10}\n')
    assert warnings_of(capsys, ["run", str(path), "--out", str(tmp_path / "o2"), "--jobs", "1"]) == []


# ------------------------------------------------------------- 14. per-layer lists longer than the layers and MTP layers

def test_per_layer_lists_past_the_mtp_layers_are_warned_of(tmp_path, capsys):
    """Before: DeepSeek-V4's compress_ratios (and Step 3.5's layer_types), which go on past the
    trunk for the MTP layers, took any number of entries: 50 for 43 layers and 1 MTP layer ran
    without a word, where a transformers layer_types of the wrong length is warned of."""
    from tests.test_hfconfig import STEP_35_FLASH
    config = {**FLASH, "compress_ratios": FLASH["compress_ratios"] + [4, 128, 4, 1, 0, 0]}  # a V4.1 ratio read by nothing
    lines = warnings_of(capsys, ["cost", _v4(tmp_path, config)])
    said = (f"mtpsim: warning: {tmp_path / 'ckpt' / 'config.json'}: compress_ratios: 50 entries for 43 layers and 1 MTP "
            "layers: the 6 past those are not read")
    assert said in lines, lines
    assert warnings_of(capsys, ["cost", _v4(tmp_path, FLASH)]) == []
    step = {**STEP_35_FLASH, "layer_types": STEP_35_FLASH["layer_types"] + ["full_attention"] * 10}
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(step))
    (tmp_path / "s.yaml").write_text(V4.replace("hardware: b200", "hardware: h200").replace(", name: deepseek-v4-flash", "")
                                     + "engine: {}\n")
    lines = warnings_of(capsys, ["cost", str(tmp_path / "s.yaml")])
    assert any(": layer_types: 58 entries for 45 layers and 3 MTP layers: the 10 past those are not read" in x
               for x in lines), lines


# ------------------------------------------------------------- 15. a path given with ~ on the command line

def test_a_tilde_path_on_the_command_line_is_the_home_folders(tmp_path, capsys, monkeypatch):
    """Before: `--out '~/runs/x'` (quoted, or from a script, so no shell expanded it) made a folder
    named `~` in the current folder and printed `wrote ~/runs/x/`, naming the home folder it did not
    write; `cost '~/s.yaml'` and `plot '~/runs/x'` said `no such file` of files that were there,
    where every path a scenario names reads ~ as the home folder."""
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    (home / "s.yaml").write_text(VLLM_8B)
    assert cli.main(["run", "~/s.yaml", "--out", "~/runs/x", "--jobs", "1"]) == 0
    assert f"wrote {home / 'runs' / 'x'}/" in capsys.readouterr().out
    assert (home / "runs" / "x" / "summary.csv").is_file() and not (here / "~").exists()
    assert cli.main(["cost", "~/s.yaml"]) == 0
    assert cli.main(["plot", "~/runs/x"]) == 0
    assert cli.main(["search", "~/s.yaml", "--gpus", "1", "--concurrency", "1", "--no-plot", "--jobs", "1",
                     "--out", "~/search", "--cache", "~/cache"]) == 0
    assert (home / "search").is_dir() and (home / "cache").is_dir() and list(here.iterdir()) == []


@pytest.mark.parametrize("setting, shown", [
    ("workload={arrival: trace, trace: ~/t.csv}", ", context 72, "),
    ("workload={arrival: trace, trace: {path: ~/t.csv, format: mtpsim}}", ", context 72, "),
    ("acceptance={histogram: ~/h.csv}", "v: llama-3.1-8b on"),
    ("model={hf_config: ~/config.json}", "v: home on"),
    ("cost={model: calibrated, profile: ~/prof}", "priced by calibrated:prof"),
])
def test_a_tilde_path_in_a_scenario_is_the_home_folders_for_every_file(tmp_path, capsys, monkeypatch, setting, shown):
    """Before: a model or hardware file at `~/...` was read from the home folder, but a trace, an
    acceptance histogram or a profile there was `no such file` (`~/t.csv`), and a config.json at
    `~/config.json` named its model `~`."""
    import shutil

    from mtpsim.packagedata import data_dir
    from tests.test_hfconfig import LLAMA_31_8B
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps(LLAMA_31_8B))
    (home / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,8\n0.5,80,8\n")
    (home / "h.csv").write_text("accepted,count\n0,5\n1,5\n")
    shutil.copytree(data_dir() / "profiles" / "h100-sxm-sglang", home / "prof")
    monkeypatch.setenv("HOME", str(home))
    path = tmp_path / "s.yaml"
    path.write_text(VLLM_8B.replace("speculative: {design: none}", "speculative: {design: nextn, steps: 1, draft: "
                                    "eagle3-llama-3.1-8b}\nacceptance: {per_depth: [0.7]}"))
    assert cli.main(["cost", str(path), "--set", setting]) == 0, capsys.readouterr().err
    assert shown in capsys.readouterr().out


# ------------------------------------------------------------- 16. a YAML alias changed under one of its uses

ALIASED = """\
name: al
model: llama-3.1-8b
hardware: h100-sxm
speculative: {design: none}
workload:
  arrival: closed
  concurrency: 2
  num_requests: 4
  input_len: &len {dist: uniform, min: 64, max: 128}
  output_len: *len
"""


@pytest.mark.parametrize("how", [
    ["--set", "workload.input_len.max=4096", "--set", "workload.input_len.min=4000"],
    ["--set", "sweep.workload.input_len.min=[4000]", "--set", "workload.input_len.max=4096"],
])
def test_a_key_changed_under_one_use_of_an_alias_leaves_the_others(tmp_path, how):
    """Before: `input_len: &len {...}` and `output_len: *len` were one object, so `--set
    workload.input_len.min=4000` (or a sweep over it) made every answer 4000+ tokens too, without a
    word: the requests ran 4082 in and 4029 out where 64-128 out was written."""
    import pandas as pd
    path = tmp_path / "s.yaml"
    path.write_text(ALIASED)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1", *how]) == 0
    requests = pd.read_csv(tmp_path / "o" / "requests.csv")
    assert requests.input_len.min() >= 4000 and requests.output_len.max() <= 128


def test_swept_values_cut_alike_in_a_legend_stay_told_apart():
    """A legend shows a swept value's start and end (test_a_legend_of_long_swept_values...): two
    acceptance curves that differ only in their middle entries are numbered, not drawn as two
    series under one label."""
    import pandas as pd

    from mtpsim.plots import _series
    curves = ["per_depth=0.9,0.85,0.8,0.75,0.7,0.65", "per_depth=0.9,0.85,0.8,0.55,0.7,0.65"]
    summary = pd.DataFrame({"design": "block", "steps": 6, "topk": 1, "dp": 1, "acceptance": curves,
                            "tps": [1.0, 2.0], "concurrency": 2, "point": [0, 1]})
    names = [name for name, _ in _series(summary)]
    assert len(set(names)) == 2 and all(len(n) < 60 for n in names), names


# ------------------------------------------------------------- 17. --set into a swept catalog name

def test_a_set_inside_a_swept_catalog_name_is_in_its_row(tmp_path, capsys):
    """Before: `sweep: {model: [llama-3.1-8b, {from: qwen3-8b}]}` with --set model.dtypes.kv_cache=fp8
    ran both points with an FP8 cache, but the first row read `llama-3.1-8b`, the bare name (the
    mapping's row said `dtypes=kv_cache=fp8`): the rows must say what ran."""
    import pandas as pd
    path = tmp_path / "s.yaml"
    path.write_text(VLLM_8B + "sweep:\n  model: [llama-3.1-8b, {from: qwen3-8b}]\n")
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--jobs", "1", "--set",
                     "model.dtypes.kv_cache=fp8"]) == 0
    rows = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert rows.model.str.contains("kv_cache").all(), rows.model.tolist()


BLOCK_8B = """\
name: b
model: qwen3-8b
hardware: b200
engine: {kind: sglang, version: "0.5.23"}
speculative: {design: block, steps: 6, draft: dspark-qwen3-8b-block7}
acceptance: {per_depth: [0.9, 0.85, 0.8, 0.75, 0.7, 0.65]}
workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 256, output_len: 32}
"""


def test_a_set_inside_a_drafts_catalog_name_overrides_that_entry(tmp_path, capsys):
    """Before: --set speculative.draft.block.markov_rank=128 over `draft: dspark-qwen3-8b-block7` was
    `speculative.draft is not a mapping`, where the same --set inside `model: qwen3-8b` overrides
    the catalog entry (the draft takes {from: NAME, ...} as the model does)."""
    path = tmp_path / "s.yaml"
    path.write_text(BLOCK_8B)
    assert cli.main(["cost", str(path), "--set", "speculative.draft.block.markov_rank=128"]) == 0
    capsys.readouterr()
    one_line_error(capsys, ["cost", str(path), "--set", "speculative.draft.block.markov_rank=-1"],
                   "speculative.draft.block.markov_rank", "greater than 0")


def test_a_latency_legend_of_many_points_names_each_series_once():
    """Before: latency.png's legend held one entry a run point, so a sweep of 32 points (16 loads of
    two designs) made it taller than the figure: the axes were drawn collapsed, with matplotlib's
    `constrained_layout not applied` warning. Past 16 points each series is named once."""
    import warnings

    import numpy as np
    import pandas as pd

    from mtpsim import plots
    n = 32
    summary = pd.DataFrame({"name": "x", "design": ["nextn"] * 16 + ["multi_layer"] * 16, "steps": 2, "topk": 1,
                            "dp": 1, "concurrency": np.tile(np.arange(1, 17), 2), "rate_per_s": np.nan, "tps": 1.0,
                            "point": range(n)})
    requests = pd.DataFrame({"point": np.repeat(np.arange(n), 4), "arrival_s": 0.0, "first_token_s": np.tile(
        [0.1, 0.2, 0.3, 0.4], n), "finish_s": 2.0, "output_len": 8})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = plots.latency_distributions(requests, summary)
        fig.canvas.draw()
    assert not caught, [str(w.message) for w in caught]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["nextn S=2", "multi_layer S=2"]


def test_a_legend_of_more_series_than_fit_says_how_many():
    """Before: 40 series (a sweep over 40 steps values) made the speedup and frontier legends taller
    than their figures, the axes collapsed under matplotlib's warning."""
    import warnings

    import numpy as np
    import pandas as pd

    from mtpsim import plots
    n = 40
    summary = pd.DataFrame({"name": "x", "design": "nextn", "steps": np.arange(1, n + 1), "topk": 1, "dp": 1,
                            "concurrency": 4, "rate_per_s": np.nan, "tps": 1.0, "point": range(n), "speedup": 1.1,
                            "per_user_tps": 10.0})
    for draw in (plots.speedup_vs_load, plots.throughput_frontier):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig = draw(summary)
            fig.canvas.draw()
        assert not caught and fig.axes[0].get_legend() is None, [str(w.message) for w in caught]
        assert any("series: too many to name" in t.get_text() for t in fig.axes[0].texts)


def test_an_acceptance_figure_of_more_series_than_it_draws_says_so():
    """Before: acceptance.png drew the first 6 series of a sweep of 8 and said nothing of the other 2."""
    import numpy as np
    import pandas as pd

    from mtpsim import plots
    n = 8
    summary = pd.DataFrame({"name": "x", "design": "nextn", "steps": np.arange(1, n + 1), "topk": 1, "dp": 1,
                            "concurrency": 4, "rate_per_s": np.nan, "tps": 1.0, "point": range(n), "accept_length": 2.0})
    counts = pd.DataFrame({"point": np.repeat(np.arange(n), 2), "accepted": np.tile([0, 1], n), "count": 5})
    fig = plots.accept_histogram(counts, summary)
    assert "(the first 6 of 8 series)" in fig._suptitle.get_text()


def test_a_breakdown_of_thousands_of_runs_draws_the_first_and_says_so():
    """Before: a sweep of 10,000 points drew breakdown.png a bar each, a figure 330,000 pixels tall
    that took 108 s; 2,600 took 18 s."""
    import time

    import numpy as np
    import pandas as pd

    from mtpsim import plots
    n = 2600
    summary = pd.DataFrame({"name": "x", "design": "nextn", "steps": 2, "topk": 1, "dp": 1,
                            "concurrency": np.arange(1, n + 1), "rate_per_s": np.nan, "tps": 1.0, "point": range(n),
                            "draft_share": 0.1, "verify_share": 0.5, "extend_share": 0.1, "prefill_share": 0.2,
                            "host_share": 0.1})
    started = time.perf_counter()
    fig = plots.time_breakdown(summary)
    fig.canvas.draw()
    assert time.perf_counter() - started < 60  # a hang guard (it took minutes), not a speed target
    assert "(the first 200 of 2600 runs)" in fig._suptitle.get_text() and fig.get_size_inches()[1] < 70
