"""A twelfth adversarial campaign (about 600 inputs over cost.moe_stream_overlap, YAML and file
oddities, numbers at the edges of every section, inline catalog entries, config.json files,
acceptance histograms, traces, profile folders, flags, output paths, large sweeps and the Python
API; the inputs and what each did are kept out of the repo), one test per class found failing.
Each test's docstring says what happened before the fix."""
from __future__ import annotations

from tests.test_bad_input import BASE, run
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

OVERLAP = "cost: {moe_stream_overlap: 0.5}\n"
DISAGG = "disaggregation: {prefill: {tp: 8}, decode: {tp: 8, attention_dp: 8}, link: free}"


def _overlap_warnings(tmp_path, capsys, text: str) -> list[str]:
    tmp_path.mkdir()
    return [w for w in warnings_of(capsys, run(tmp_path, text + OVERLAP)) if ": cost.moe_stream_overlap: " in w]


def test_a_stream_overlap_no_pass_can_use_warns(tmp_path, capsys):
    """Before: the warning looked at whether the deployment runs the shared experts on a second
    stream at all, not whether any pass reaches it: TensorRT-LLM takes the stream only in CUDA
    graphs, so with engine.cuda_graphs off the overlap changed no figure, without a word; and a
    disaggregated scenario was never checked (here the decode pool's DP attention has no stream
    and the prefill pool runs no graph)."""
    trtllm = BASE + "engine: {kind: trtllm, cuda_graphs: false}\n"
    assert len(_overlap_warnings(tmp_path / "a", capsys, trtllm)) == 1
    disagg = BASE.replace("parallel: {tp: 8}", DISAGG) + "engine: {kind: trtllm}\n"
    found = _overlap_warnings(tmp_path / "b", capsys, disagg)
    assert len(found) == 1 and "either pool" in found[0], found
    # where a pass does take the stream the overlap prices it, and nothing is said
    assert _overlap_warnings(tmp_path / "c", capsys, BASE + "engine: {kind: trtllm}\n") == []
    assert _overlap_warnings(tmp_path / "d", capsys, disagg.replace("attention_dp: 8", "attention_dp: 1")) == []
    small = BASE + "engine: {version: '0.5.5', cuda_graphs: false, ignore_rules: [shared_expert_fusion]}\n"
    assert _overlap_warnings(tmp_path / "e", capsys, small) == []  # SGLang 0.5.5: any pass of <= 1024 tokens
