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
