"""Which passes replay CUDA graphs, as each engine captures them by default (engines/<kind>.yaml
`cuda_graph`, engines.GraphCapture, costs/deployment.py host_model): SGLang up to its memory
class's cuda_graph_max_bs in requests, vLLM up to 512 tokens, TensorRT-LLM only its listed sizes
unless padding is on; `engine.max_graph_batch` and `engine.graph_padding` override."""
from __future__ import annotations

import pytest

from mtpsim import scenario as sc
from mtpsim.costs.host import host_model
from tests.test_bad_input import one_line_error


def host(kind: str, hardware: str = "h200", tp: int = 1, **engine):
    s = sc.validate({"name": "g", "model": "llama-3.1-8b", "hardware": hardware, "parallel": {"tp": tp},
                     "engine": {"kind": kind, **engine}, "cost": {"model": "roofline"}})
    return host_model(s)


@pytest.mark.parametrize("hardware, tp, largest", [("h200", 1, 256), ("h200", 8, 512), ("b200", 1, 512),
                                                   ("a100-80g", 1, 256)])
def test_sglang_graphs_reach_its_memory_class_cuda_graph_max_bs(hardware, tp, largest):
    h = host("sglang", hardware, tp)
    assert (h.max_graph_batch, h.graph_unit) == (largest, "requests")
    assert h.uses_graphs("decode", largest) and not h.uses_graphs("decode", largest + 1)
    assert h.uses_graphs("verify", largest, 4)  # requests: a verify's width does not count


def test_vllm_graphs_count_tokens_so_a_verify_fits_fewer_requests():
    h = host("vllm")
    assert (h.max_graph_batch, h.graph_unit) == (512, "tokens")
    assert h.uses_graphs("decode", 512) and not h.uses_graphs("decode", 513)
    assert h.uses_graphs("verify", 170, 3) and not h.uses_graphs("verify", 171, 3)
    assert h.padded_batch(150, 3) * 3 >= 450 and h.padded_batch(150, 3) >= 150
    old = host("vllm", version="0.7.3")  # V0 counted requests, up to 256
    assert (old.max_graph_batch, old.graph_unit) == (256, "requests") and old.uses_graphs("verify", 256, 3)


def test_tensorrt_llm_pads_as_deployed_and_its_library_list_runs_unpadded():
    padded = host("trtllm")  # every deployment read sets enable_padding: true
    assert all(padded.uses_graphs("decode", n) for n in (33, 40, 100, 128)) and not padded.uses_graphs("decode", 129)
    assert padded.padded_batch(40) == 40 and padded.padded_batch(41) == 48
    listed = host("trtllm", graph_padding=False)  # CudaGraphConfig's own: 1-31, 32, 64, 128
    assert [n for n in (31, 32, 33, 40, 64, 100, 128, 129) if listed.uses_graphs("decode", n)] == [31, 32, 64, 128]
    assert listed.padded_batch(40) == 40  # no padding: a batch runs as it is
    recipe = host("trtllm", max_graph_batch=180)  # InferenceX's cuda_graph_config max_batch_size: CONC
    assert recipe.uses_graphs("decode", 180) and not recipe.uses_graphs("decode", 181)
    unpadded = host("trtllm", max_graph_batch=180, graph_padding=False)  # the list to 128, then the largest
    assert [n for n in (128, 150, 180) if unpadded.uses_graphs("decode", n)] == [128, 180]


def test_sglang_without_padding_captures_every_size():
    h = host("sglang", graph_padding=False)
    assert all(h.uses_graphs("decode", n) for n in (1, 13, 255, 256)) and h.padded_batch(13) == 13


def test_a_scenarios_largest_graph_counts_requests_on_every_engine():
    h = host("vllm", max_graph_batch=64)
    assert (h.max_graph_batch, h.graph_unit) == (64, "requests") and h.uses_graphs("verify", 64, 16)


def test_graph_settings_are_checked(tmp_path, capsys):
    from tests.test_bad_input import BASE, run
    one_line_error(capsys, run(tmp_path, BASE + "engine: {graph_padding: 3}\n"), "engine.graph_padding", "bool")
    one_line_error(capsys, run(tmp_path, BASE + "engine: {max_graph_batch: 0}\n"), "engine.max_graph_batch", "")


@pytest.mark.parametrize("old, new, key, word", [
    ("cuda_graph: {unit: tokens, max: 512, padded: true}", "cuda_graph: {unit: tokens, padded: true}",
     "cuda_graph.max", "memory classes"),
    ("cuda_graph: {unit: tokens, max: 512, padded: true}", "cuda_graph: {unit: tokens, max: 512, padded: false}",
     "cuda_graph.sizes", "give them"),
    ("cuda_graph: {unit: tokens, max: 512, padded: true}", "cuda_graph: {unit: pages, max: 512, padded: true}",
     "cuda_graph.unit", ""),
])
def test_an_engine_files_graph_rule_is_checked(tmp_path, capsys, monkeypatch, old, new, key, word):
    from tests.test_bad_input_9e import _engines_refuses
    _engines_refuses(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, word, kind="vllm")


def test_graph_settings_without_graphs_are_one_warning_each(tmp_path, capsys):
    from tests.test_bad_input import BASE
    from tests.test_bad_input_5 import warnings_of
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "engine: {cuda_graphs: false, max_graph_batch: 64, graph_padding: true}\n")
    found = warnings_of(capsys, ["cost", str(path)])
    assert [w for w in found if "engine.max_graph_batch" in w and "changes nothing" in w]
    assert [w for w in found if "engine.graph_padding" in w and "padding changes nothing" in w]


def test_search_builds_a_pricer_per_graph_padding_and_engram_placement():
    """search/worker.pricer_key: points that differ in what prices a pass get pricers of their own
    (graph_padding and engram_tables were left out: a padded point reused an unpadded one's)."""
    from mtpsim.search.worker import pricer_key

    def point(**engine):
        return sc.validate({"name": "g", "model": "llama-3.1-8b", "hardware": "b200",
                            "engine": {"kind": "trtllm", **engine}, "cost": {"model": "roofline"}})
    assert pricer_key(point()) != pricer_key(point(graph_padding=True))
    assert pricer_key(point()) == pricer_key(point(max_running_requests=7))  # no pass prices it


def test_sglang_pads_to_its_releases_captured_sizes():
    """engines/sglang.yaml: v0.5.10 on, plain decode pads to [1, 2, 4, 8, 12] + 16..256 by 8 and a
    speculative iteration's passes to 1..8, 10..32 by 2, 40..64 by 4, 72..256 by 8 (server_args.py
    _generate_cuda_graph_batch_sizes); older releases by the graph_sizes_* rules."""
    h = host("sglang", version="0.5.12")
    assert [h.padded_batch(n) for n in (3, 5, 9, 13, 33, 60)] == [4, 8, 12, 16, 40, 64]
    assert [h.padded_batch(n, 4, "verify") for n in (3, 5, 9, 13, 33, 41, 57)] == [3, 5, 10, 14, 40, 44, 60]
    assert h.padded_batch(5, 1, "draft") == 5 and h.padded_batch(5, 1, "decode") == 8
    capped = host("sglang", version="0.5.12", max_graph_batch=100)  # a named largest graph is captured
    assert capped.uses_graphs("verify", 100, 4) and capped.padded_batch(97, 4, "verify") == 100
    assert host("sglang", version="0.5.7", max_graph_batch=100).padded_batch(97, 4, "verify") == 100
    assert host("sglang", version="0.5.4").padded_batch(61, 4, "verify") == 72  # range(40, 64, 4): no 64
    old = host("sglang", version="0.5.2")  # v0.4.8-v0.5.2: no 64 either, and graphs end at 160 on an H100
    assert old.padded_batch(60, 4, "verify") == 80 and old.padded_batch(60) == 64
    assert host("sglang", "h100-sxm", version="0.5.2").graph_label == "160"  # its own list's last, not max_bs's 256
    assert host("sglang", "h100-sxm", version="0.4.6", max_graph_batch=256).uses_graphs("decode", 256)  # --cuda-graph-bs 256
    assert not host("sglang", "h100-sxm", version="0.5.2").uses_graphs("decode", 161)
    assert host("sglang", "h200", version="0.5.2").uses_graphs("decode", 256)  # "H200, H20": past 90 GiB
    eagle = host("sglang", version="0.4.4")  # speculative graphs 1..32 only
    assert eagle.padded_batch(17, 4, "verify") == 17 and not eagle.uses_graphs("verify", 33, 4)
    assert eagle.uses_graphs("decode", 160) and eagle.padded_batch(17) == 24


def test_an_engine_file_with_padded_lists_is_checked():
    from mtpsim.engine_sections import GraphCapture
    with pytest.raises(ValueError, match="below first"):
        GraphCapture(pads_to=[[16, 8, 8]])
    with pytest.raises(ValueError, match="plain list"):
        GraphCapture(speculative_pads_to=[1, 2])
    g = GraphCapture(pads_to=[1, [8, None, 8]], gpu_pads_to=[{"above_mib": 1000, "sizes": [[300, 320, 10]]}], adds_max=False)
    assert g.padded_sizes(40, 500, False) == (1, 8, 16, 24, 32, 40)
    assert g.padded_sizes(310, 2000, True)[-4:] == (296, 300, 304, 310)  # the GPU sizes, capped at the largest


BASE = "  unit: requests\n  padded: true\n  pads_to: [1, 2, 4, 8, 12,"  # the file's own section, not a rule's


@pytest.mark.parametrize("new, key, word", [
    ("  unit: requests\n  padded: true\n  pads_to: [[16, 8, 8], 2, 4, 8, 12,", "cuda_graph.pads_to.0.last", "below first"),
    ("  unit: requests\n  padded: true\n  pads_to: [0, 2, 4, 8, 12,", "cuda_graph.pads_to.0.first",
     "greater than or equal to 1"),
    ("  unit: requests\n  padded: true\n  pads_to: [[1, 8, 0], 12,", "cuda_graph.pads_to.0.step",
     "greater than or equal to 1"),
])
def test_a_user_engine_files_bad_padded_list_is_one_line(tmp_path, capsys, monkeypatch, new, key, word):
    """An engine file in a user catalog with an empty range, a size of 0 or a step of 0 in its
    padded lists: one line naming the file and the key."""
    from tests.test_bad_input_9e import _refused

    def edit(text):
        assert BASE in text
        return text.replace(BASE, new, 1)
    _refused(tmp_path, capsys, monkeypatch, edit, key, word)
