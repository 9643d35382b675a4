"""A seventh adversarial campaign (this stop's: model definitions, and deployment and command
inputs; kept out of the repo), by class. As in test_bad_input.py: bad input is one stderr line,
exit status 2, naming the file and key; semantic nonsense that runs is one warning."""
from __future__ import annotations

import json

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

VLLM = """\
name: v
model: llama-3.1-8b
hardware: h100-sxm
engine: {kind: vllm, chunked_prefill_tokens: 16, max_running_requests: 64}
speculative: {design: none}
workload: {arrival: closed, concurrency: 64, num_requests: 64, input_len: 100, output_len: 8}
"""


def test_a_vllm_budget_below_its_running_cap_is_refused_as_vllm_refuses_it(tmp_path, capsys):
    """Before: accepted, and every running request decoded each step past the budget."""
    one_line_error(capsys, run(tmp_path, VLLM), "engine.chunked_prefill_tokens", "max_num_seqs")


def test_a_running_batch_past_a_mixing_engines_budget_warns(tmp_path, capsys):
    """Below the cap the engine starts, but decodes only part of a batch wider than its budget a
    step; mtpsim decodes all of it, and says so."""
    lines = warnings_of(capsys, run(tmp_path, VLLM.replace(", max_running_requests: 64", "")))
    assert any("engine.chunked_prefill_tokens" in line and "64 running requests x 1 token each" in line
               for line in lines), lines
    fits = VLLM.replace(", max_running_requests: 64", "").replace("concurrency: 64", "concurrency: 16")
    (tmp_path / "fits").mkdir()
    assert not any("budget" in line for line in warnings_of(capsys, run(tmp_path / "fits", fits)))


TAIL = "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 8}\n"


def _scenario(model: str, speculative: str = "{design: none}", hardware: str = "h200") -> str:
    return f"name: m\nmodel: {model}\nhardware: {hardware}\nspeculative: {speculative}\n" + \
        ("acceptance: {per_depth: [0.8, 0.6]}\n" if "none" not in speculative else "") + TAIL


@pytest.mark.parametrize("model, speculative, key, word", [
    # a field the entry's role never reads: before, ignored without a word
    ("qwen3-8b", "{design: block, steps: 2, draft: {from: dflash-qwen3-8b-b16, mtp: {num_layers: 2, "
     "layer: {attention: gqa, ffn: dense}}}}", "speculative.draft.mtp", "block drafter"),
    ("qwen3-8b", "{design: block, steps: 2, draft: {from: dflash-qwen3-8b-b16, draft_vocab_size: 1000}}",
     "speculative.draft.draft_vocab_size", "does not take"),
    ("llama-3.1-8b", "{design: nextn, steps: 2, draft: {from: eagle3-llama-3.1-8b, tie_embeddings: true}}",
     "speculative.draft.tie_embeddings", "draft model"),
    ("{from: llama-3.1-8b, backbone_hidden_size: 4096}", "{design: none}", "model.backbone_hidden_size", "target"),
    ("{from: llama-3.1-8b, attention_kinds: {gqa: {kv_source: target_last_full}}}", "{design: none}",
     "model.attention_kinds.gqa.kv_source", "assistant"),
    # a kind no layer uses: before, it steered the sharding checks and the listing
    ("{from: llama-3.1-8b, ffn_kinds: {spare: {kind: moe, num_experts: 8, top_k: 2, expert_intermediate_size: 64}}}",
     "{design: none}", "model.ffn_kinds.spare", "no layer uses"),
    # contradictions inside one kind: before, priced as written
    ("{from: deepseek-v4-flash, attention_kinds: {swa: {qk_rope_head_dim: 4096}}}", "{design: none}",
     "model.attention_kinds.swa.qk_rope_head_dim", "rotary dims"),
    ("{from: deepseek-v4-flash, attention_kinds: {swa: {compressed: {o_groups: 7}}}}", "{design: none}",
     "model.attention_kinds.swa.compressed.o_groups", "evenly"),
    ("{from: deepseek-v4-flash, attention_kinds: {swa: {num_kv_heads: 64}}}", "{design: none}",
     "model.attention_kinds.swa.num_kv_heads", "one shared"),
    ("qwen3-8b", "{design: block, steps: 2, draft: {from: dflash-qwen3-8b-b16, block: {markov_rank: 256}}}",
     "speculative.draft.block.markov_rank", "dspark"),
    ("qwen3-8b", "{design: block, steps: 2, draft: {from: dflash-qwen3-8b-b16, block: {kind: dspark}}}",
     "speculative.draft.block.kind", "markov_rank or confidence_head"),
    ("qwen3-8b", "{design: block, steps: 2, draft: {from: dflash-qwen3-8b-b16, block: {target_layer_ids: [1, 9, 9]}}}",
     "speculative.draft.block.target_layer_ids.2", "tapped twice"),
    # a DSpark drafter's target changed under its own name: before, the name alone passed
    ("{from: qwen3-8b, layers: [{count: 40, attention: gqa, ffn: dense}]}",
     "{design: block, steps: 2, draft: dspark-qwen3-8b-block7}", "model", "built for 'qwen3-8b'"),
])
def test_model_definitions_that_would_be_ignored_or_contradict_themselves_are_refused(tmp_path, capsys, model,
                                                                                        speculative, key, word):
    one_line_error(capsys, run(tmp_path, _scenario(model, speculative)), key, word)


def test_kinds_an_override_relays_away_go_with_their_layers(tmp_path, capsys):
    """An override cannot delete a key: the source's kinds its new layers no longer name are
    dropped (the refusal above is for kinds the user writes)."""
    text = _scenario("{from: gemma-4-e2b, layers: [{count: 35, attention: full, ffn: dense}]}")
    assert not [line for line in warnings_of(capsys, run(tmp_path, text)) if "kind" in line]


@pytest.mark.parametrize("model, key, word", [
    ("{from: llama-3.1-8b, dtypes: {experts: fp4}}", "model.dtypes.experts", "no experts"),
    ("{from: llama-3.1-8b, dtypes: {mtp: fp8}}", "model.dtypes.mtp", "no MTP layers"),
    ("{from: llama-3.1-8b, attention_kinds: {gqa: {window: 1000000}}}", "model.attention_kinds.gqa.window",
     "whole context"),
])
def test_settings_that_price_nothing_warn(tmp_path, capsys, model, key, word):
    lines = warnings_of(capsys, run(tmp_path, _scenario(model)))
    assert any(f": {key}: " in line and word in line for line in lines), lines


def test_a_draft_dtype_its_layers_never_read_warns(tmp_path, capsys):
    text = _scenario("llama-3.1-8b", "{design: nextn, steps: 2, draft: {from: eagle3-llama-3.1-8b, dtypes: {mtp: fp8}}}")
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": speculative.draft.dtypes.mtp: " in line for line in lines), lines


def test_a_layer_list_longer_than_the_layers_warns(tmp_path, capsys):
    """transformers refuses such a config; before, the extra entries were dropped without a word."""
    config = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "vocab_size": 1000,
              "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
              "intermediate_size": 2048, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
              "layer_types": ["full_attention"] * 10}
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "config.json").write_text(json.dumps(config))
    lines = warnings_of(capsys, run(tmp_path, _scenario("{hf_config: q/config.json}")))
    assert any(": layer_types: 10 entries for 4 layers" in line for line in lines), lines


DS = """\
name: ds
model: deepseek-v3
hardware: h200
parallel: {tp: 8, ep: 1, dp: 1}
speculative: {design: nextn, steps: 3}
acceptance: {per_depth: [0.85, 0.75, 0.65]}
workload: {arrival: closed, concurrency: 4, num_requests: 4, input_len: 256, output_len: 32}
"""


@pytest.mark.parametrize("setting, key, word", [
    ("parallel.ep=3", "parallel.ep", "does not divide tp 8"),
    ("parallel.attention_dp=3", "parallel.attention_dp", "does not divide tp 8"),
    ("workload.input_len={dist: uniform, min: 10, max: 5}", "workload.input_len.max", "below min 10"),
])
def test_a_cross_field_refusal_names_the_key_and_the_flag_that_gave_it(tmp_path, capsys, setting, key, word):
    """Before: `ds.yaml: parallel: ep (3) must divide tp (8)`, the section and the file, though the
    value came from --set."""
    line = one_line_error(capsys, [*run(tmp_path, DS), "--set", setting], key, word)
    assert line.startswith("mtpsim: error: --set: "), line


BASE8 = """\
name: base
model: llama-3.1-8b
hardware: h100-sxm
parallel: {tp: 1}
speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.8, 0.6, 0.5]}
workload: {arrival: closed, concurrency: 2, num_requests: 4, input_len: 128, output_len: 32}
"""


def test_the_length_that_overflows_the_context_is_the_one_named(tmp_path, capsys):
    """Before: `base.yaml: workload.input_len` whatever overflowed and whoever set it."""
    line = one_line_error(capsys, [*run(tmp_path, BASE8), "--set", "workload.output_len=200000"], "workload.output_len",
                          "max_context 131072")
    assert line.startswith("mtpsim: error: --set: "), line


def test_a_later_set_of_a_section_may_not_undo_an_earlier_set_inside_it(tmp_path, capsys):
    """Before: the earlier `acceptance.spread=0.5` was dropped without a word."""
    one_line_error(capsys, [*run(tmp_path, BASE8), "--set", "acceptance.spread=0.5", "--set",
                            "acceptance={per_depth: [0.8, 0.6, 0.5]}"], "acceptance", "would undo")
    capsys.readouterr()
    (tmp_path / "later").mkdir()
    assert cli.main([*run(tmp_path / "later", BASE8), "--set", "acceptance={per_depth: [0.8, 0.6, 0.5]}", "--set",
                     "acceptance.spread=0.5"]) == 0  # the section, then a key inside it: both hold


@pytest.mark.parametrize("command", [["recommend", "--batch", "1", "--seeds", "1"], ["search", "--gpus", "1"]])
def test_a_forced_accept_length_cannot_compare_steps(tmp_path, capsys, command):
    """Before: recommend picked steps under an accept length the engine forces whatever the steps."""
    text = BASE8.replace("acceptance: {per_depth: [0.8, 0.6, 0.5]}", "acceptance: {forced: {engine: sglang, setting: 2.5}}")
    argv = run(tmp_path, text)
    one_line_error(capsys, [command[0], argv[1], *command[1:], "--out", str(tmp_path / "o")], "acceptance.forced",
                   "whatever the steps")


@pytest.mark.parametrize("setting, key, word", [
    ("cost.profile=h100-sxm-vllm", "cost.profile", "times vllm's kernels"),
    ("hardware={from: b200, name: h100-sxm}", "hardware.name", "another hardware catalog entry"),
])
def test_a_borrowed_profile_or_name_warns(tmp_path, capsys, setting, key, word):
    lines = warnings_of(capsys, [*run(tmp_path, BASE8), "--set", setting])
    assert any(f": {key}: " in line and word in line for line in lines), lines


def test_lengths_a_trace_brings_its_own_of_warn(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,8\n1,64,8\n")
    text = BASE8.replace("workload: {arrival: closed, concurrency: 2, num_requests: 4, input_len: 128, output_len: 32}",
                         "workload: {arrival: trace, trace: {path: t.csv}, input_len: 5000}")
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": workload.input_len: arrival trace does not read it" in line for line in lines), lines


def test_a_user_hardware_files_key_is_blamed_on_that_file(tmp_path, capsys):
    from mtpsim.packagedata import data_dir
    shipped = (data_dir() / "hardware" / "h200.yaml").read_text()
    (tmp_path / "myh200.yaml").write_text(shipped.replace("name: h200", "name: myh200"))
    text = BASE8.replace("hardware: h100-sxm", f"hardware: {tmp_path / 'myh200.yaml'}")
    line = one_line_error(capsys, run(tmp_path, text), "profiles.sglang", "measured on 'h200'")
    assert "myh200.yaml: profiles.sglang: " in line, line


def test_a_network_link_without_a_network_says_so(tmp_path, capsys):
    """Before: 'the pools' 2 GPUs span more than one NVLink domain of 8', which they did not."""
    text = BASE8.replace("workload: {arrival: closed, concurrency: 2, num_requests: 4, input_len: 128, output_len: 32}",
                         "workload: {arrival: poisson, rate_per_s: 4, num_requests: 4, input_len: 128, output_len: 32}\n"
                         "disaggregation: {prefill: {replicas: 1, tp: 1}, decode: {replicas: 1, tp: 1}, link: network}")
    text = text.replace("parallel: {tp: 1}\n", "").replace("hardware: h100-sxm", "hardware: {from: h100-sxm, name: tiny, "
                                                           "internode_bandwidth_bytes_per_s: null}")
    line = one_line_error(capsys, run(tmp_path, text), "disaggregation.link", "scale-out network")
    assert "span more than one" not in line, line


def test_an_error_inside_a_from_source_names_that_file(tmp_path, capsys):
    """Before: `s.yaml: model.hidden_size`, a key the scenario does not hold."""
    from mtpsim.packagedata import data_dir
    shipped = (data_dir() / "models" / "llama-3.1-8b.yaml").read_text()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "parent.yaml").write_text(shipped.replace("hidden_size: 4096", "hidden_size: -1"))
    line = one_line_error(capsys, run(tmp_path, _scenario(f"{{from: {tmp_path / 'sub' / 'parent.yaml'}}}")),
                          "hidden_size", "greater than 0")
    assert "parent.yaml: hidden_size: " in line, line


def test_a_dangling_default_assistant_is_blamed_on_the_key_that_names_it(tmp_path, capsys):
    """Before: `speculative.draft: unknown models catalog name 'ghost'`, a key nobody wrote."""
    text = _scenario("{from: gemma-4-e2b, assistant: ghost}", "{design: frozen_kv, steps: 2}")
    one_line_error(capsys, run(tmp_path, text), "model.assistant", "default assistant")


@pytest.mark.parametrize("folder", [" ", "a\tb", "x" * 250])
def test_a_checkpoint_folder_that_cannot_name_the_model_says_so(tmp_path, capsys, folder):
    """Before: `model.name: must not be empty or blank (leave the key out ...)`, though it was left out."""
    config = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "vocab_size": 1000,
              "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
              "intermediate_size": 2048, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(config))
    model = json.dumps({"hf_config": str(tmp_path / folder / "config.json")})
    one_line_error(capsys, run(tmp_path, _scenario(model)), "model.hf_config", "give model.name")


def test_a_checkpoint_whose_mtp_kind_is_unsaid_reads_under_plain_decoding(tmp_path, capsys):
    """Before: refused under design none for MTP layers nothing runs."""
    base = tmp_path / "mm"
    base.mkdir()
    text = _scenario("{hf_config: mm/config.json}")
    mm = {"model_type": "minimax_m2", "architectures": ["MiniMaxM2ForCausalLM"], "hidden_size": 512, "vocab_size": 1000,
          "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
          "intermediate_size": 256, "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
          "torch_dtype": "bfloat16", "use_mtp": True, "num_mtp_modules": 3}
    (base / "config.json").write_text(json.dumps(mm))
    assert cli.main(run(tmp_path, text)) == 0
    capsys.readouterr()
    nextn = _scenario("{hf_config: mm/config.json}", "{design: nextn, steps: 1}")
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "mm").mkdir()
    (tmp_path / "n" / "mm" / "config.json").write_text(json.dumps(mm))
    one_line_error(capsys, run(tmp_path / "n", nextn), "model.mtp", "does not say the MTP layer's kind")


@pytest.mark.parametrize("make, word", [
    (lambda d: (d / "models" / "x.yaml").mkdir(parents=True), "a folder, not a file"),
    (lambda d: ((d / "models").mkdir(parents=True), (d / "models" / "x.yml").write_text("name: x\n")), "end in .yaml"),
    (lambda d: ((d / "models").mkdir(parents=True), (d / "models" / "x.yaml").symlink_to(d / "nowhere")), "leads nowhere"),
    (lambda d: (d.mkdir(parents=True), (d / "x.yaml").write_text("name: x\n")), "entries go in"),
])
def test_a_catalog_entry_the_lookup_passes_over_is_named(tmp_path, capsys, monkeypatch, make, word):
    """Before: `unknown models catalog name 'x'`, with the entry on disk."""
    make(tmp_path / "cat")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    one_line_error(capsys, run(tmp_path, _scenario("x")), "model", word)


def test_a_verify_batch_too_big_to_prefill_is_blamed_on_the_batch(tmp_path, capsys):
    """Before: `verify.hidden_scale: the shrunken model does not fit`, whose advice changed nothing."""
    pytest.importorskip("torch")
    from pathlib import Path
    text = (Path(__file__).parent.parent / "scenarios" / "verify" / "deepseek-v3-nextn-cpu.yaml").read_text()
    text = text[:text.index("sweep:")]
    argv = run(tmp_path, text)
    one_line_error(capsys, ["verify", argv[1], "--set", "workload.concurrency=200", "--set", "workload.num_requests=200",
                            "--set", "verify.iterations=3", "--out", str(tmp_path / "o")], "workload",
                   "prompt tokens in one chunk")  # the batch and the prompts' length set it (campaign 27b)


@pytest.mark.parametrize("model, extra, key, word", [
    ("{from: llama-3.1-8b, hidden_size: 64}", "", "model.attention_kinds.gqa", "released models"),
    ("llama-3.1-8b", "engine: {prefix_cache: {block_tokens: 100000}}\n", "engine.prefix_cache.block_tokens",
     "nothing is cached"),
    ("llama-3.1-8b", "verify: {num_layers: 100}\n", "verify.num_layers", "builds those 32"),
])
def test_settings_that_cannot_act_warn(tmp_path, capsys, model, extra, key, word):
    lines = warnings_of(capsys, run(tmp_path, _scenario(model) + extra))
    assert any(f": {key}: " in line and word in line for line in lines), lines


def test_a_trace_without_blocks_does_not_read_block_size_and_one_with_them_no_shared_prefix(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,64,8\n1,64,8\n")
    text = _scenario("llama-3.1-8b").replace(TAIL, "workload: {arrival: trace, trace: {path: t.csv, block_size: 16}}\n")
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": workload.trace.block_size: " in line for line in lines), lines
    rows = "".join(json.dumps({"timestamp": i * 1000, "input_length": 1024, "output_length": 8, "hash_ids": [i, 9]}) + "\n"
                   for i in range(2))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "t.jsonl").write_text(rows)
    text = _scenario("llama-3.1-8b").replace(TAIL, "workload: {arrival: trace, trace: {path: t.jsonl}, "
                                             "shared_prefix: {tokens: 512}}\n")
    lines = warnings_of(capsys, run(tmp_path / "m", text))
    assert any(": workload.shared_prefix: " in line and "hash_ids" in line for line in lines), lines


def test_a_length_distribution_its_bounds_reshape_warns(tmp_path, capsys):
    """Before: a lognormal of mean 100 and std 1e6 clipped to 1..200 drew prompts averaging ~5
    tokens without a word (its mean lay inside the bounds, so the bounds check passed)."""
    text = _scenario("llama-3.1-8b").replace("input_len: 64", "input_len: {dist: lognormal, mean: 100, std: 1000000, "
                                             "max: 200}")
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": workload.input_len.std: " in line and "average about 5" in line for line in lines), lines


def test_a_reshaped_length_warns_where_the_sweep_varies_the_whole_workload(tmp_path, capsys):
    """advise() leaves warnings on swept keys alone, and advise_sweep says only those every point
    has: a sweep over the workload section whose second point alone draws prompts averaging 5
    tokens said nothing of them."""
    load = "{arrival: closed, concurrency: 1, num_requests: 4, input_len: %s, output_len: 8}"
    reshaped = "{dist: lognormal, mean: 100, std: 1000000, max: 200}"
    text = _scenario("llama-3.1-8b") + f"sweep:\n  workload: [{load % 64}, {load % reshaped}]\n"
    lines = warnings_of(capsys, run(tmp_path, text))
    assert any(": workload.input_len.std: " in line and "average about 5" in line for line in lines), lines


@pytest.mark.parametrize("dist", [{"dist": "normal", "mean": 500, "std": 300, "min": 100, "max": 900},
                                  {"dist": "lognormal", "mean": 1000, "std": 500, "max": 4096},
                                  {"dist": "lognormal", "mean": 100, "std": 1000000, "max": 200}])
def test_the_clipped_mean_is_the_drawn_mean(dist):
    import numpy as np

    from mtpsim.schema import LengthDist
    from mtpsim.sim.workload import sample_lengths
    from mtpsim.workload_advice import clipped_mean
    length = LengthDist(**dist)
    drawn = sample_lengths(np.random.default_rng(0), length, 200_000).mean()
    assert clipped_mean(length) == pytest.approx(drawn, rel=0.01, abs=0.5)  # rounding to whole tokens aside


def test_a_heavy_search_point_is_blamed_on_the_size_the_section_sets(tmp_path, capsys, monkeypatch):
    """Before: `search.rates`, though requests_per_rate_s made the points long."""
    from mtpsim import heaviness
    monkeypatch.setattr(heaviness, "HEAVY_POINT_REQUESTS", 10)
    text = _scenario("llama-3.1-8b", "{design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}", "h100-sxm") + \
        "search: {rates: [2], requests_per_rate_s: 10, tp: [1]}\n"
    argv = run(tmp_path, text)
    lines = warnings_of(capsys, ["search", argv[1], "--gpus", "1", "--no-cache", "--no-plot", "--out", str(tmp_path / "o")])
    assert any(": search.requests_per_rate_s: a point of this load simulates 20 requests" in line for line in lines), lines
