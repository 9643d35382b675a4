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
"""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_9e import _engine, _refused, _rule_before, _scenario

VLLM = ("--set", "engine.kind=vllm")


def _swap(old: str, new: str):
    return lambda t: t.replace(old, new, 1)


# ------------------------------------------------------------- 1. a capability range that holds no GPU

@pytest.mark.parametrize("value", ["[12.0, 9.0]", "[9.0, 9.0]"])
def test_an_empty_fa4_capability_range_is_refused(tmp_path, capsys, monkeypatch, value):
    """Before: [12.0, 9.0] (low and high swapped) or [9.0, 9.0] passed, and Gemma 4 at v0.24.0+ was
    warned about as on Triton attention on every GPU, FlashAttention 4's [low, high) holding none."""
    line = _refused(tmp_path, capsys, monkeypatch, _swap("value: [9.0, 12.0]", f"value: {value}"), "rules.5.value",
                    "holds no compute capability", kind="vllm", argv=VLLM)
    assert "mixed_head_fa4_capability.1" in line, line


def test_an_empty_fa4_capability_range_in_the_base_file_is_refused(tmp_path, capsys, monkeypatch):
    _refused(tmp_path, capsys, monkeypatch, _swap("prefill_tail_replay: false\n", "prefill_tail_replay: false\n"
                                                  "mixed_head_fa4_capability: [10.0, 8.0]\n"),
             "mixed_head_fa4_capability.1", "8 is not above 10", kind="vllm", argv=VLLM)


# ------------------------------------------------------------- 2. a margin that nothing reads

MARGIN = '  - {name: marg, field: kv_pool.margin_mib, value: 4096, since: "0.5.0", source: x}\n'


@pytest.mark.parametrize("edit, key", [
    (_rule_before("spec_reserve_4gib", MARGIN), "rules.13.value"),
    (_rule_before("spec_reserve_4gib", MARGIN.replace("margin_mib, value: 4096", "margin_activation_share, value: 0.5")),
     "rules.13.value"),
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
                    "rules.9.value", "sets no activations aside", kind="vllm", argv=VLLM)
    assert "kv_pool.margin_activation_share" in line, line


def test_a_margin_of_zero_on_sglang_still_runs(tmp_path, capsys, monkeypatch):
    _engine(tmp_path, monkeypatch, _swap("  fraction_of: free_at_start\n", "  fraction_of: free_at_start\n"
                                         "  margin_mib: 0\n  margin_activation_share: 0\n"))
    assert cli.main(["cost", _scenario(tmp_path)]) == 0
