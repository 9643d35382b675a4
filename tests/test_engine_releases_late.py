"""The releases read for the second half of 2026 (SGLang v0.5.13-v0.5.23, vLLM v0.22.1-v0.34.0):
what each new rule changes in a scenario, at the release it starts and the one before
(engines/sglang.yaml, engines/vllm.yaml; each rule's source quotes the wheel it was read in)."""
from __future__ import annotations

import pytest

from mtpsim import catalog, cli
from mtpsim import scenario as sc
from mtpsim.memory import prefill_chunk_tokens
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

GEMMA = """name: g
model: gemma-4-26b-a4b
hardware: {hardware}
engine: {{kind: vllm, version: "{version}"}}
speculative: {{design: none}}
workload: {{arrival: batch, concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}}
"""


def _triton_warned(tmp_path, capsys, hardware: str, version: str) -> bool:
    path = tmp_path / f"{hardware}-{version}.yaml"
    path.write_text(GEMMA.format(hardware=hardware, version=version))
    return any("Triton unified attention" in w for w in warnings_of(capsys, ["cost", str(path)]))


@pytest.mark.parametrize("hardware, version, warned", [
    ("h100-sxm", "0.21.0", True),   # TRITON_ATTN forced for Gemma 4's mixed head sizes
    ("h100-sxm", "0.23.0", True),
    ("h100-sxm", "0.24.0", False),  # FlashAttention 4 on compute capability 9.x-11.x (rule gemma4_fa4)
    ("b200", "0.34.0", False),
    ("a100-80g", "0.24.0", True),   # no FA4 on sm80: still Triton
])
def test_vllm_names_triton_attention_only_where_it_still_runs(tmp_path, capsys, hardware, version, warned):
    assert _triton_warned(tmp_path, capsys, hardware, version) is warned


@pytest.mark.parametrize("version, tokens", [("0.27.1", 8192), ("0.28.0", 16384)])
def test_vllm_batches_16k_tokens_on_160_gib_gpus_from_0280(version, tokens):
    """B200 (183,359 MiB) crosses get_batch_defaults' new 160 GiB tier; H200 (143,771 MiB) does not."""
    def chunk(hardware):
        return prefill_chunk_tokens(sc.validate({"name": "c", "model": "llama-3.1-8b", "hardware": hardware,
                                                 "engine": {"kind": "vllm", "version": version},
                                                 "cost": {"model": "roofline"}}))
    assert (chunk("b200"), chunk("h200"), chunk("a100-80g")) == (tokens, 8192, 2048)


def test_vllm_late_releases_change_blocks_routing_and_pool():
    at = {v: catalog.load_engine("vllm", v) for v in ("0.19.1", "0.20.0", "0.26.0", "0.27.0", "0.33.0", "0.34.0")}
    assert [at[v].kv_pool.fraction for v in at] == [0.9, 0.92, 0.92, 0.92, 0.92, 1.0]
    assert [at[v].prefix_cache.block_tokens for v in at] == [16, 16, 16, 16, 16, 64]
    assert [at[v].dp_routing.waiting_weight for v in at] == [4.0, 4.0, 4.0, 1.0, 1.0, 1.0]
    assert (at["0.33.0"].kv_pool.margin_mib, at["0.34.0"].kv_pool.margin_mib) == (0.0, 1024.0)


def test_vllm_runs_parallel_heads_without_async_scheduling():
    """Medusa is outside EagleModelTypes: async scheduling stays off for it, while MTP overlaps."""
    engine = catalog.load_engine("vllm", "0.22.0")
    assert engine.hidden_by("parallel_heads", topk=1) == ()
    assert engine.hidden_by("nextn", topk=1) == ("draft", "verify", "extend")
    assert catalog.load_engine("vllm", "0.13.0").hidden_by("nextn", topk=1) == ()


MIXED = """name: m
model: llama-3.1-8b
hardware: h100-sxm
engine: {{kind: sglang, version: "{version}", mixed_batches: true}}
speculative: {{design: nextn, steps: 2, topk: 1, draft: eagle3-llama-3.1-8b}}
acceptance: {{per_depth: [0.8, 0.6]}}
workload: {{arrival: batch, concurrency: 2, num_requests: 2, input_len: 64, output_len: 4}}
"""


@pytest.mark.parametrize("version, says", [("0.5.18", "mixes no prompt chunks"), ("0.5.19", "plain one-token decodes")])
def test_sglang_mixing_under_speculation_is_named_as_the_release_runs_it(tmp_path, capsys, version, says):
    path = tmp_path / "m.yaml"
    path.write_text(MIXED.format(version=version))
    found = [w for w in warnings_of(capsys, ["cost", str(path)]) if "engine.mixed_batches" in w]
    assert len(found) == 1 and says in found[0], found


def test_every_new_release_runs_a_scenario(tmp_path):
    """The releases added resolve and price a speculative scenario end to end."""
    for kind, version in (("sglang", "0.5.20"), ("sglang", "0.5.23"), ("vllm", "0.25.1"), ("vllm", "0.34.0")):
        path = tmp_path / f"{kind}-{version}.yaml"
        path.write_text(MIXED.format(version=version).replace("kind: sglang", f"kind: {kind}")
                        .replace(", mixed_batches: true", ""))
        assert cli.main(["cost", str(path)]) == 0


@pytest.mark.parametrize("scenario, sets, says", [
    ("p4-meta-mtp-7b.yaml", [], "sglang 0.5.12 has no speculative method for design parallel_heads"),
    ("p4-meta-mtp-7b.yaml", ["engine.kind=vllm", "engine.version=0.34.0"],
     "vllm 0.34.0 has no speculative method for design parallel_heads"),
    ("d1-deepseek-v4-flash-dspark-sglang-8xb200.yaml", ["engine.version=0.5.15"],
     "sglang 0.5.15 has no speculative method for a dspark block drafter"),
    ("d1-deepseek-v4-flash-dspark-sglang-8xb200.yaml", ["engine.version=0.5.16"], None),
    ("p4-meta-mtp-7b.yaml", ["engine.kind=vllm", "engine.version=0.32.0"], None),
    ("d6-gemma-4-31b-mtp-vllm-h100.yaml", ["engine.version=0.20.2"],
     "vllm 0.20.2 has no speculative method for design frozen_kv"),
    ("d6-gemma-4-31b-mtp-vllm-h100.yaml", [], None),  # 0.21.0 runs the assistant
    ("d6-gemma-4-31b-dflash-vllm-h100.yaml", ["engine.version=0.19.1"],
     "vllm 0.19.1 has no speculative method for a dflash block drafter"),
])
def test_a_design_the_release_has_no_method_for_is_one_warning(capsys, scenario, sets, says):
    """engines/<kind>.yaml lacks_methods, by release where its code was read (SGLang's algorithms,
    vLLM's DSpark from 0.25.0 and Medusa to 0.32.0)."""
    from mtpsim.packagedata import data_dir
    path = data_dir().parent.parent / "scenarios" / "published" / scenario
    argv = ["cost", str(path)] + [a for kv in sets for a in ("--set", kv)]
    found = [w for w in warnings_of(capsys, argv) if "has no speculative method" in w]
    assert (found == [] if says is None else len(found) == 1 and says in found[0]), found
