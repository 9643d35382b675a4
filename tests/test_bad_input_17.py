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
"""
from __future__ import annotations

import pytest

from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_9e import _refused

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
