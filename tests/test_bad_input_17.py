"""Bad-input campaign 17: the engine releases to today (commits d789844, 641af64): version rules
that set one key inside a section by a dotted field (kv_pool.reserved.speculative_mib,
kv_pool.fraction, kv_pool.margin_mib, kv_pool.margin_activation_share, prefill_chunk,
prefix_cache.block_tokens, dp_routing.waiting_weight, mixes_as_decode, mixed_head_fa4_capability)
in a user catalog's engine file, and scenarios at the new releases (SGLang 0.5.20-0.5.23, vLLM
0.22.1-0.34.0) with their new rules.

Probed, and already one line naming the key: dotted fields into a section the file lacks; NaN,
inf, negative, huge, string and bool values of each new field; a 1- or 3-element capability; two
rules setting one dotted key at one release; kv_pool.fraction set by a rule on SGLang's pool of
`reserved`; a margin past the GPU; unknown releases (0.5.24, 0.20.3, 0.35.0); ignore_rules naming
the new rules where they do and do not hold.

Found and fixed:
- mixed_head_fa4_capability [12.0, 9.0] or [9.0, 9.0] held no GPU: the release's FlashAttention 4
  path was never taken, without a word;
- kv_pool.margin_mib / margin_activation_share on a pool not of fraction_of: capacity (SGLang's,
  TensorRT-LLM's), or a share on a pool that sets no activations aside, were read by nothing;
- a scenario's engine.chunked_prefill_tokens whose profiled activations (and, at vLLM 0.34.0, the
  margin's share of them) left no KV pool was blamed on engine.mem_fraction ("the weights leave no
  KV pool") or on a user engine file's kv_pool.margin_mib, a figure of 1 GiB there;
- dp_routing.waiting_weight had no upper bound: 1e308 x 2 waiting requests overflowed to inf;
- `mtpsim engines` printed a rule's string value raw: an escape sequence or newline a user file's
  mixed_head_attention carried reached the terminal, and a 30,000-class prefill_chunk one line of MBs;
- a prefill_chunk class after a catch-all, or after a class of any GPU with a bound at least its
  own, was never read (chunk_tokens takes the first that holds), nor was a class of `gpus: []`;
  `gpus: [A100]` matched no GPU (names were compared in lower case);
- a fraction_by_tp rule where a kv_pool.fraction rule holds (or fraction_by_tp in the file under
  any kv_pool.fraction rule) won there, the other rule's fraction never read;
- mixes_as_decode on an engine with mixed_batches.speculative: true was read by nothing;
- engine.speculative_overlap: true on a design the release runs unoverlapped (vLLM's Medusa from
  0.14.0, rule medusa_unoverlapped) or a tree wider than it overlaps priced as false, without a word.
"""
from __future__ import annotations

import pytest

from mtpsim import catalog, cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_7 import DENSE
from tests.test_bad_input_9e import _engine, _refused, _rule_before, _rule_index, _scenario

VLLM = ("--set", "engine.kind=vllm")


def _swap(old: str, new: str):
    return lambda t: t.replace(old, new, 1)


def _at(name: str, kind: str = "vllm") -> int:
    """The index of the shipped rule `name` in engines/<kind>.yaml (where a rule put before it lands)."""
    return _rule_index(name, kind)


# ------------------------------------------------------------- 1. a capability range that holds no GPU

@pytest.mark.parametrize("value", ["[12.0, 9.0]", "[9.0, 9.0]"])
def test_an_empty_fa4_capability_range_is_refused(tmp_path, capsys, monkeypatch, value):
    """Before: [12.0, 9.0] (low and high swapped) or [9.0, 9.0] passed, and Gemma 4 at v0.24.0+ was
    warned about as on Triton attention on every GPU, FlashAttention 4's [low, high) holding none."""
    line = _refused(tmp_path, capsys, monkeypatch, _swap("value: [9.0, 12.0]", f"value: {value}"),
                    f"rules.{_at('gemma4_fa4')}.value", "holds no compute capability", kind="vllm", argv=VLLM)
    assert "mixed_head_fa4_capability.1" in line, line


def test_an_empty_fa4_capability_range_in_the_base_file_is_refused(tmp_path, capsys, monkeypatch):
    _refused(tmp_path, capsys, monkeypatch, _swap("prefill_tail_replay: false\n", "prefill_tail_replay: false\n"
                                                  "mixed_head_fa4_capability: [10.0, 8.0]\n"),
             "mixed_head_fa4_capability.1", "8 is not above 10", kind="vllm", argv=VLLM)


# ------------------------------------------------------------- 2. a margin that nothing reads

MARGIN = '  - {name: marg, field: kv_pool.margin_mib, value: 4096, since: "0.5.0", source: x}\n'


@pytest.mark.parametrize("edit, key", [
    (_rule_before("spec_reserve_4gib", MARGIN), f"rules.{_at('spec_reserve_4gib', 'sglang')}.value"),
    (_rule_before("spec_reserve_4gib", MARGIN.replace("margin_mib, value: 4096", "margin_activation_share, value: 0.5")),
     f"rules.{_at('spec_reserve_4gib', 'sglang')}.value"),
    (_swap("  fraction_of: free_at_start\n", "  fraction_of: free_at_start\n  margin_mib: 50000\n"), "kv_pool.margin_mib"),
])
def test_a_margin_on_a_pool_not_of_capacity_is_refused(tmp_path, capsys, monkeypatch, edit, key):
    """Before: SGLang's pool (fraction_of: free_at_start) took a margin from a rule or its own
    kv_pool and sized the pool as without it: pool_bytes subtracts a margin from a capacity pool only."""
    _refused(tmp_path, capsys, monkeypatch, edit, key, "capacity pool only")


def test_a_margin_on_trtllm_pool_is_refused(tmp_path, capsys, monkeypatch):
    _refused(tmp_path, capsys, monkeypatch, _swap("  fraction_of: free_after_load\n",
                                                  "  fraction_of: free_after_load\n  margin_activation_share: 0.5\n"),
             "kv_pool.margin_activation_share", "free_after_load", kind="trtllm", argv=("--set", "engine.kind=trtllm"))


def test_a_margin_share_of_no_activations_is_refused(tmp_path, capsys, monkeypatch):
    """Before: vLLM's file with activations: false kept extensible_kv_margin_share, 0.75 x nothing."""
    line = _refused(tmp_path, capsys, monkeypatch, _swap("  activations: true\n", "  activations: false\n"),
                    f"rules.{_at('extensible_kv_margin_share')}.value", "sets no activations aside", kind="vllm", argv=VLLM)
    assert "kv_pool.margin_activation_share" in line, line


def test_a_margin_of_zero_on_sglang_still_runs(tmp_path, capsys, monkeypatch):
    _engine(tmp_path, monkeypatch, _swap("  fraction_of: free_at_start\n", "  fraction_of: free_at_start\n"
                                         "  margin_mib: 0\n  margin_activation_share: 0\n"))
    assert cli.main(["cost", _scenario(tmp_path)]) == 0


# ------------------------------------------------------------- 3. who leaves no KV pool

def _chunked(tmp_path, version: str, tokens: int) -> list[str]:
    text = DENSE + f'engine: {{kind: vllm, version: "{version}", chunked_prefill_tokens: {tokens}}}\n'
    return ["run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")]


@pytest.mark.parametrize("version, tokens, gb", [("0.34.0", 400_000, "83.1"), ("0.33.0", 1_000_000, "119")])
def test_a_prefill_chunk_whose_activations_fill_the_gpu_is_named(tmp_path, capsys, version, tokens, gb):
    """Before: at 0.34.0 `vllm sets aside 35.6 GB per GPU (kv_pool.margin_mib)` at engine.mem_fraction
    (the margin_mib of 1 GiB named for 0.75 x the activations, and mem_fraction already 1.0); at
    0.33.0 `the weights (16.9 GB per GPU) leave no KV pool ... raise engine.mem_fraction`, the
    activations of the scenario's own chunk unnamed."""
    line = one_line_error(capsys, _chunked(tmp_path, version, tokens), "engine.chunked_prefill_tokens",
                          f"{gb} GB per GPU for the activations of a {tokens:,}-token prefill chunk")
    assert line.startswith(f"mtpsim: error: {tmp_path / 's.yaml'}: "), line


def test_a_prefill_chunk_that_fits_before_the_margin_still_runs(tmp_path, capsys):
    """0.33.0 sets no margin aside: 400,000 tokens of activations fit an H100 beside the weights."""
    assert cli.main(_chunked(tmp_path, "0.33.0", 400_000)) == 0


def test_a_user_files_huge_margin_is_still_named_in_its_file(tmp_path, capsys, monkeypatch):
    path = _engine(tmp_path, monkeypatch, _swap("    value: 1024\n", "    value: 80000\n"), kind="vllm")
    text = DENSE + 'engine: {kind: vllm, version: "0.34.0"}\n'
    line = one_line_error(capsys, ["run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")],
                          "kv_pool.margin_mib", "83.9 GB per GPU")
    assert line.startswith(f"mtpsim: error: {path}: "), line


# ------------------------------------------------------------- 4. a routing weight past any queue

def test_a_huge_waiting_weight_is_refused(tmp_path, capsys, monkeypatch):
    """Before: 1e308 passed; two waiting requests weighed inf, as did three, and the router took the
    first replica of the tie."""
    line = _refused(tmp_path, capsys, monkeypatch, _swap('    value: 1.0\n    since: "0.27.0"',
                                                         '    value: 1.0e+308\n    since: "0.27.0"'),
                    f"rules.{_at('dp_routing_inflight')}.value", "less than or equal to 100000", kind="vllm", argv=VLLM)
    assert "dp_routing.waiting_weight" in line, line


# ------------------------------------------------------------- 5. a rule's value as `engines` lists it

def test_engines_lists_a_rules_value_as_one_printable_line(tmp_path, capsys, monkeypatch):
    """Before: `triton_attention_mixed_heads: mixed_head_attention = Triton<ESC>[31m` and `unified
    (from 0.19.0)` on the next line: the value printed raw, escape and newline included."""
    _engine(tmp_path, monkeypatch, _swap("    value: Triton unified attention\n", '    value: "Triton\\e[31m\\nunified"\n'),
            kind="vllm")
    assert cli.main(["engines"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "  triton_attention_mixed_heads: mixed_head_attention = Triton\\x1b[31m\\nunified (from 0.19.0)\n" in out, out


def test_engines_cuts_a_huge_rule_value(tmp_path, capsys, monkeypatch):
    classes = "".join(f"      - {{below_mib: {i + 1}, tokens: 2048}}\n" for i in range(2000))
    _engine(tmp_path, monkeypatch, _swap("    value:\n      - {gpus: [a100], tokens: 2048}\n",
                                         "    value:\n" + classes + "      - {gpus: [a100], tokens: 2048}\n"), kind="vllm")
    assert cli.main(["engines"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "batched_tokens_160gib" in x)
    assert len(line) < 1100 and " ... " in line and line.endswith("(from 0.28.0)"), line


# ------------------------------------------------------------- 6. prefill-chunk classes no GPU reads

ORDERED = ("  - {gpus: [a100], tokens: 2048}\n  - {below_mib: 71680, tokens: 2048}\n  - {tokens: 8192}\n")


@pytest.mark.parametrize("classes, key, word", [
    # the catch-all first: every GPU got 8192 tokens, the A100's 2048 and the small GPUs' never read
    ("  - {tokens: 8192}\n  - {gpus: [a100], tokens: 2048}\n  - {below_mib: 71680, tokens: 2048}\n",
     "prefill_chunk.1", "prefill_chunk.0 takes every GPU"),
    # falling bounds: nothing under 71680 MiB is not also under 163840
    ("  - {below_mib: 163840, tokens: 8192}\n  - {below_mib: 71680, tokens: 2048}\n  - {tokens: 16384}\n",
     "prefill_chunk.1", "rising below_mib"),
    ("  - {below_mib: 71680, tokens: 2048}\n  - {below_mib: 71680, tokens: 4096}\n  - {tokens: 8192}\n",
     "prefill_chunk.1", "no GPU reaches this class"),
    # a list of no GPU names matched no GPU
    ("  - {gpus: [], tokens: 2048}\n  - {below_mib: 71680, tokens: 2048}\n  - {tokens: 8192}\n",
     "prefill_chunk.0.gpus", "at least 1 item"),
    ('  - {gpus: [""], tokens: 2048}\n  - {below_mib: 71680, tokens: 2048}\n  - {tokens: 8192}\n',
     "prefill_chunk.0.gpus.0", "at least 1 character"),
])
def test_a_prefill_chunk_class_no_gpu_reaches_is_refused(tmp_path, capsys, monkeypatch, classes, key, word):
    """Before: each passed, and chunk_tokens took the first class that held, so the later one was
    never read, without a word."""
    _refused(tmp_path, capsys, monkeypatch, _swap(ORDERED, classes), key, word, kind="vllm", argv=VLLM)


def test_a_rules_prefill_chunk_class_no_gpu_reaches_is_refused(tmp_path, capsys, monkeypatch):
    line = _refused(tmp_path, capsys, monkeypatch, _swap("      - {gpus: [a100], tokens: 2048}\n",
                                                         "      - {tokens: 4096}\n      - {gpus: [a100], tokens: 2048}\n"),
                    f"rules.{_at('batched_tokens_160gib')}.value", "no GPU reaches this class", kind="vllm", argv=VLLM)
    assert "rule batched_tokens_160gib sets prefill_chunk.1" in line, line


def test_a_gpu_name_in_capitals_still_matches(tmp_path, monkeypatch):
    """Before: `gpus: [A100]` was compared with the GPU's name in lower case and matched no GPU: the
    A100 took 8192 tokens where the file said 2048."""
    _engine(tmp_path, monkeypatch, _swap("  - {gpus: [a100], tokens: 2048}\n", "  - {gpus: [A100], tokens: 2048}\n"),
            kind="vllm")
    assert catalog.load_engine("vllm", "0.22.0").chunk_tokens("a100-80g", 81920) == 2048


# ------------------------------------------------------------- 7. two rules, one default fraction

BY_TP = ("{small_gpu_mib: 100000, by_tp: {1: 0.5}, large: 0.5, raise_above_mib: 1000000, raise_mib: 0, "
         "cap_reserve_mib: 0}")


def test_a_fraction_table_where_a_fraction_rule_holds_is_refused(tmp_path, capsys, monkeypatch):
    """Before: a vLLM rule fraction_by_tp from 0.33.0 passed, and at 0.33.0 and 0.34.0 its table
    (resolve_pool reads it first) set the pool, utilization_092's 0.92 and extensible_kv_cache's
    1.0 never read, without a word."""
    rule = f'  - {{name: by_tp, field: fraction_by_tp, value: {BY_TP}, since: "0.33.0", source: x}}\n'
    line = _refused(tmp_path, capsys, monkeypatch, _rule_before("medusa_unoverlapped", rule),
                    f"rules.{_at('medusa_unoverlapped')}",
                    f"where rule utilization_092 (rules.{_at('utilization_092')}) sets kv_pool.fraction, at 0.33.0",
                    kind="vllm", argv=VLLM)
    assert "rule by_tp sets fraction_by_tp" in line, line


def test_a_fraction_rule_under_the_files_own_table_is_refused(tmp_path, capsys, monkeypatch):
    """Before: with fraction_by_tp in the file itself, every kv_pool.fraction rule was never read."""
    _refused(tmp_path, capsys, monkeypatch, _swap("prefill_tail_replay: false\n",
                                                  f"prefill_tail_replay: false\nfraction_by_tp: {BY_TP}\n"),
             f"rules.{_at('utilization_092')}.field", "would never be read", kind="vllm", argv=VLLM)


# ------------------------------------------------------------- 8. mixes_as_decode where nothing reads it

def test_mixes_as_decode_on_an_engine_that_mixes_speculative_iterations_is_refused(tmp_path, capsys, monkeypatch):
    """Before: vLLM's file (mixed_batches.speculative: true) took a rule mixes_as_decode: [block], and
    nothing read it: the mixed_batches warning that names it is for engines that keep prompts out."""
    rule = '  - {name: mad, field: mixes_as_decode, value: [block], since: "0.30.0", source: x}\n'
    line = _refused(tmp_path, capsys, monkeypatch, _rule_before("medusa_unoverlapped", rule),
                    f"rules.{_at('medusa_unoverlapped')}.value", "mixed_batches.speculative: true", kind="vllm", argv=VLLM)
    assert "rule mad sets mixes_as_decode:" in line, line


def test_a_prefill_chunk_that_fills_a_disaggregated_pool_names_the_pool(tmp_path, capsys):
    text = (DENSE + 'engine: {kind: vllm, version: "0.34.0", chunked_prefill_tokens: 400000}\n'
            "disaggregation: {prefill: {tp: 8}, decode: {tp: 1}, link: free}\n")
    one_line_error(capsys, ["run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")],
                   "engine.chunked_prefill_tokens", "83.1 GB per GPU of the decode pool for the activations")


# ------------------------------------------------------------- 9. an overlap the release never runs

PARALLEL_HEADS = DENSE.replace("model: llama-3.1-8b", "model: meta-mtp-7b").replace(
    "speculative: {design: nextn, steps: 3, draft: eagle3-llama-3.1-8b}", "speculative: {design: parallel_heads, steps: 3}")


@pytest.mark.parametrize("version, rule", [("0.22.0", "medusa_unoverlapped"), ("0.13.0", "v1_spec_async_possible")])
def test_speculative_overlap_on_a_design_the_release_never_overlaps_warns(tmp_path, capsys, version, rule):
    """Before: vLLM from 0.14.0 runs Medusa without async scheduling (rule medusa_unoverlapped), and
    engine.speculative_overlap: true priced exactly as false, without a word. Before 0.14 no
    speculative step overlaps at all (campaign 26: it was taken, and hid the host time)."""
    text = PARALLEL_HEADS + f'engine: {{kind: vllm, version: "{version}", speculative_overlap: true}}\n'
    said = [w for w in warnings_of(capsys, ["cost", _scenario(tmp_path, text)]) if "engine.speculative_overlap" in w]
    assert len(said) == 1 and f"rule {rule}): true changes nothing" in said[0], said


def test_speculative_overlap_on_a_tree_the_release_never_overlaps_warns(tmp_path, capsys):
    """Before: SGLang's spec v2 drafts chains only until 0.5.14, and a topk 2 tree with
    speculative_overlap: true priced as false, without a word."""
    text = DENSE.replace("steps: 3,", "steps: 3, topk: 2,").replace(
        "acceptance: {per_depth: [0.9, 0.6, 0.3]}", "acceptance: {per_depth_topk: [[0.7, 0.1], [0.6, 0.1], [0.5, 0.1]]}")
    said = {v: [w for w in warnings_of(capsys, ["cost", _scenario(tmp_path, text + f'engine: {{version: "{v}", '
                                                                  'speculative_overlap: true}\n')])
                if "engine.speculative_overlap" in w] for v in ("0.5.12", "0.5.14")}
    assert said["0.5.14"] == [] and "topk above 1 (this one's 2" in said["0.5.12"][0], said
