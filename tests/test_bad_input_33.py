"""Bad-input campaign 33 (b): ~190 probes of the code this session added (trees read from a bare
accept length, config.json without torch_dtype, Llama 4, the kernels release in headers, search's
rates and idle replicas, GPUs no pool uses). No traceback or hang; the holes:
- a sweep over a tree's accept length, or over disaggregation.gpus, printed neither new warning
  (a warning at a swept key is held back unless every point says it word for word);
- Llama 4 with `moe_layers: []` (an all-dense model, as transformers builds it) or an
  interleave step past the layers was refused at num_hidden_layers, naming other families' keys;
- an accept length of 5.00000001 was refused as "5 exceeds 5";
- a user profile's framework_version with a newline or escape codes broke the one-line header;
- (judged, and taken) Llama 4's chunked layers were priced with a window's memory, where vLLM keeps
  their KV whole by default; summary.csv's `pricing` and search's header left out what the
  headers say (the kernels' release, the engine's).

Also taken from the 33a check of new sources: `cost --ops` prints the plain step's ops beside the
iteration's.

Left alone: the largest trees the schema allows solve their rank rate in seconds (64 steps x topk
64 x 512 tokens: ~6 s; 258,049 tokens: ~17 s), realistic ones in under 0.3 s; a tree's warning
repeats once per tree shape a sweep runs (each solves its own rate); `spread` moves the simulated
accept length away from the one given (for chains too, before this session); shared experts take
the routed experts' dtype in quantized Llama 4 checkpoints (quant_parts.py says so of every family);
profiles whose side tables (wide EP, all-to-all) come from older releases than the one the header
names.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim import scenario as sc
from tests.test_bad_input import one_line_error
from tests.test_hfconfig import LLAMA4_SCOUT, LLAMA4_SCOUT_TEXT, read
from tests.test_tree_accept_length import TREE

ROOT = Path(__file__).resolve().parents[1]
DISAGG = ROOT / "scenarios" / "disagg-gb200-1p3d.yaml"


def _write(tmp_path, text: str, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_swept_tree_accept_length_says_its_assumption_at_every_point(tmp_path, capsys):
    path = _write(tmp_path, TREE + "sweep: {acceptance.accept_length: [2.0, 2.5]}\n")
    assert cli.main(["run", path, "--out", str(tmp_path / "o")]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "a tree's accept length alone" in line]
    assert len(said) == 2 and "accepts 2;" in said[0] + said[1] and "accepts 2.5;" in said[0] + said[1]


def test_a_swept_disaggregation_gpus_says_the_idle_gpus_at_every_point(tmp_path, capsys):
    text = DISAGG.read_text()
    text = text[: text.index("sweep:")] if "sweep:" in text else text
    path = _write(tmp_path, text + "\nsweep: {disaggregation.gpus: [64, 128]}\n")
    assert cli.main(["run", path, "--out", str(tmp_path / "o")]) == 0
    # each point's GPUs come from the sweep, so its entry is named (campaign 38, H4)
    said = [line for line in capsys.readouterr().err.splitlines() if ": sweep.disaggregation.gpus: " in line]
    assert len(said) == 2 and "other 32 serve nothing" in said[0] and "other 96 serve nothing" in said[1]


@pytest.mark.parametrize("change", [{"moe_layers": []}, {"interleave_moe_layer_step": 64}])
def test_llama4_without_moe_layers_reads_as_all_dense(tmp_path, change):
    spec = read(tmp_path, {**LLAMA4_SCOUT, "text_config": {**LLAMA4_SCOUT_TEXT, **change}})
    assert {r.ffn for r in spec.expanded_layers} == {"dense"} and set(spec.ffn_kinds) == {"dense"}
    assert spec.ffn_kinds["dense"].intermediate_size == 16384


def test_llama4_chunked_layers_keep_their_kv_whole(tmp_path):
    """vLLM turns its hybrid KV cache manager off for chunked local attention by default (and
    always beside EAGLE): every layer keeps every token's KV, 48 layers x 8 KV heads x 128 x K and
    V x 2 bytes on one GPU, while the chunked layers' reads stay within their chunk."""
    config = tmp_path / "config.json"
    read(tmp_path, LLAMA4_SCOUT)  # writes config.json
    s = sc.validate({"name": "l4", "model": {"hf_config": str(config)}, "hardware": "b200", "parallel": {"tp": 8}})
    from mtpsim.costs import build_pricer
    from mtpsim.designs import DesignShape
    from mtpsim.memory import memory_budget, pool_rule
    budget = memory_budget(build_pricer(s), DesignShape.of(s.speculative), pool_rule(s))
    assert budget.kv_bytes_per_token == 48 * 1 * 128 * 2 * 2
    chunked = s.specs.model.attention_kinds["chunked"]
    assert chunked.chunked and chunked.window == 8192


def test_a_chunked_attention_without_a_window_is_refused(tmp_path, capsys):
    model = ("model: {from: llama-3.1-8b, attention_kinds: {gqa: {kind: gqa, num_heads: 32, num_kv_heads: 8, "
             "head_dim: 128, chunked: true}}}\n")
    text = TREE.replace("model: qwen3-30b-a3b\n", model).replace(
        "speculative: {design: nextn, steps: 3, topk: 3, draft_tokens: 8, draft: eagle3-qwen3-30b-a3b-specforge}\n"
        "acceptance: {accept_length: 2.2}\n", "").replace("parallel: {tp: 2}", "parallel: {tp: 1}")
    one_line_error(capsys, ["run", _write(tmp_path, text)], "model.attention_kinds.gqa.chunked", "give window")


def test_an_accept_length_just_past_the_tree_is_written_as_given(tmp_path, capsys):
    line = one_line_error(capsys, ["run", _write(tmp_path, TREE.replace("accept_length: 2.2", "accept_length: 4.00000001"))],
                          "acceptance.accept_length", "exceeds 4")
    assert "4.00000001 exceeds 4," in line


@pytest.mark.parametrize("version", ['"0.5.14\\nsecond line"', '"\\u001b[31mred"', '"' + "x" * 300 + '"', "[1, 2]"])
def test_a_profile_s_own_release_text_never_breaks_the_header(tmp_path, capsys, version):
    source = ROOT / "mtpsim" / "data" / "profiles" / "h200-sglang"
    folder = tmp_path / "prof"
    folder.mkdir()
    for table in source.iterdir():
        if table.name != "meta.yaml":
            (folder / table.name).symlink_to(table)
    meta = (source / "meta.yaml").read_text().replace("framework_version: 0.5.14\n", f"framework_version: {version}\n", 1)
    (folder / "meta.yaml").write_text(meta)
    text = (ROOT / "scenarios" / "quickstart.yaml").read_text() + f"cost: {{model: calibrated, profile: {folder}}}\n"
    assert cli.main(["cost", _write(tmp_path, text), "--batch", "2"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("priced by calibrated:prof") and "\x1b" not in header


def test_summary_csv_and_search_name_the_kernels_and_the_release(tmp_path, capsys):
    quick = str(ROOT / "scenarios" / "quickstart.yaml")
    assert cli.main(["run", quick, "--out", str(tmp_path / "o"), "--set", "sweep=null"]) == 0
    with open(tmp_path / "o" / "summary.csv") as f:
        pricing = {row["pricing"] for row in csv.DictReader(f)}
    assert pricing == {"calibrated:h200-sglang (sglang 0.5.14's kernels)"}
    capsys.readouterr()
    assert cli.main(["search", quick, "--gpus", "8", "--concurrency", "4", "--max-steps", "1", "--set", "search.tp=[8]",
                     "--set", "search.ep=[1]", "--set", "search.attention_dp=[1]", "--jobs", "1", "--no-cache",
                     "--no-plot", "--out", str(tmp_path / "s")]) == 0
    assert "engine sglang 0.5.12, priced by calibrated:h200-sglang (sglang 0.5.14's kernels)" in capsys.readouterr().out


def test_cost_ops_prints_the_plain_step_beside_the_iteration(capsys):
    """The 33a check of new sources had to price the plain step's ops with a second command
    (`--set speculative.design=none`) to weigh them against the verify's, op by op."""
    quick = str(ROOT / "scenarios" / "quickstart.yaml")
    assert cli.main(["cost", quick, "--batch", "8", "--ops"]) == 0
    out = capsys.readouterr().out
    plain, spec = out.index("== Ops of one plain decode step"), out.index("== Ops of one nextn iteration")
    assert plain < spec and "decode:target" in out[plain:spec] and "verify:target" in out[spec:]
    assert cli.main(["cost", quick, "--batch", "8", "--ops", "--set", "speculative.design=none"]) == 0
    assert capsys.readouterr().out.count("== Ops of one") == 1
