"""Bad-input campaign 18: the last stop's CUDA graphs and running caps (engine.graph_padding,
engine.max_graph_batch defaulting to the engine's own, engine_sections.py GraphCapture and RunningCap,
costs/host.py host_model), engine files in a user catalog with cuda_graph, running_cap and
lacks_methods sections or rules setting them, and the commands' flags (search, recommend, cost,
plot, verify, calibrate, run's --set / --seeds / --jobs / --out).

Probed, and already one line naming the key (or fine): --set values with anchors, undefined aliases,
!!python/!!str/!!float tags, `? 5` and `{5}` mappings, 0x10 / 1_000 / 0o17 / dates, NaN and huge
ints, keys with spaces, empty parts, 5,000 levels or a 2,000-deep flow value, one key given 3,000
times; engine.ignore_rules as a string or listed twice; seeds past 2**63 with --seeds or a swept
seed; sweeps listing a value twice or two seeds that share replicates; search --gpus / --seeds /
--jobs / --max-steps out of range or not whole, --concurrency / --rates empty, 0, nan, inf, 1e-300
or repeated, --ttft / --tpot / --min-user-tps in odd units and percentiles, --cache a file, a device,
a link loop or a run folder, --out a file, a device, a path through a file or a link loop, search
bounds admitting no layout, --disagg on one GPU; recommend --batch 0, 1,1 and 100000; cost --batch
and --context at and past their bounds; plot on a file, a missing, empty, half-written, search or
recommend folder, or one with a broken scenario.resolved.yaml or summary.csv (a column dropped,
extra, shifted, no rows); run --out inside the package's data (catalog lookups name the folder);
calibrate's --threads, --visits, --out and every --from aiconfigurator flag; verify with
verify.device cuda on no GPU; torch missing outright; MTPSIM_CATALOG missing, empty, a file, a
link; --backend ray addresses; engine files with cuda_graph or running_cap null, empty, of the
wrong type, NaN, 0, two cap forms, empty by_gpu, float bounds, lacks_methods naming nextn, a
string, a mapping, a repeat, in the file or set by a rule.

Found and fixed:
- vLLM's token-budget warning read the running cap without the GPU: its first class below any size
  (256, the < 70 GiB GPUs'), not the 1024 an 80 GB H100 admits, so 900 users x 10 tokens went
  unwarned (budget_advice.budget_below_decode);
- on an engine whose memory classes give the largest CUDA graph (SGLang's kv_pool.reserved), a
  `cuda_graph: {unit: tokens}` took graph_batch, a request count, as tokens, and a cuda_graph.max
  captured graphs the memory reserve was not sized for (engines.py);
- verify and calibrate checked only that torch is found: one whose import fails (a CUDA library it
  cannot load, a NumPy it was not built for) was a traceback (commands.torch_command);
- `cost` warned of SGLang's per-context running cap at its floor, 2048, without the KV pool: a
  40,960-token model on an H200 admits 4096, and `cost` said `run` queues users it runs (cost_command.py);
- a GPU-class list (running_cap.by_gpu, prefill_chunk, kv_pool.reserved.classes) without a class
  of any GPU gave a GPU no class holds the last class, whose below_mib or gpus it does not meet;
- SGLang gives each attention-DP rank max_running_requests // ranks: a cap below the ranks ran
  where the engine runs none (refused; search now rounds its caps up to a multiple of the
  ranks), and one not a multiple ran more at once than the engine admits (warned);
- a rule's dotted field into a section (cuda_graph.max, kv_pool.knob) was refused with the 27
  fields a rule sets cut in the middle: now it says the section is set whole, or which keys of it
  a rule sets;
- `search` with search.designs naming a design the release has no method for (lacks_methods)
  picked it and printed its launch flags without the warning `run` and `recommend` give;
- `verify` predicts its loop with an engine section of its own and said nothing of the scenario's
  engine settings (engine.kind, engine.max_graph_batch, ...), as it does of cost, seeds, arrivals.
"""
from __future__ import annotations

import sys

import pytest

from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_9e import _refused, _scenario
from tests.test_bad_input_11p import _stub_verify

VLLM_STEPS_9 = """\
name: r
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: vllm}
speculative: {design: nextn, steps: 9, draft: eagle3-llama-3.1-8b}
acceptance: {per_depth: [0.9, 0.6, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]}
workload: {arrival: closed, concurrency: 900, num_requests: 900, input_len: 64, output_len: 4}
"""


def _swap(old: str, new: str):
    return lambda t: t.replace(old, new, 1)


# ------------------------------------------------------------- 1. the running cap on no GPU

def test_a_batch_past_vllms_budget_on_an_h100_is_warned_of(tmp_path, capsys):
    """Before: the budget check took vLLM's running cap without the GPU, so its first class below
    any size (256, the < 70 GiB GPUs'), not the 1024 an 80 GB H100 admits: 900 users x 10 tokens
    (9,000 past the 8,192-token budget) ran without the warning `engine.max_running_requests: 1024`
    gives."""
    lines = warnings_of(capsys, ["run", _scenario(tmp_path, VLLM_STEPS_9), "--out", str(tmp_path / "out")])
    assert any("workload.concurrency: 900 running requests x 10 tokens each exceed vllm's 8192-token budget" in x
               for x in lines), lines


# ------------------------------------------------------------- 2. graphs the memory classes do not size

@pytest.mark.parametrize("section, key, word", [
    # 256 requests (the H100's graph_batch) read as 256 tokens: a verify of 4 tokens a request
    # replayed graphs up to 64 requests
    ("{unit: tokens, padded: true}", "cuda_graph.unit", "their graph_batch counts requests"),
    ("{unit: tokens, max: 1024, padded: true}", "cuda_graph.unit", "their graph_batch counts requests"),
    # graphs up to 1024 requests, the reserve sized for the class's 256
    ("{unit: requests, max: 1024, padded: true}", "cuda_graph.max", "the reserve does not hold"),
])
def test_a_graph_the_memory_classes_do_not_size_is_refused(tmp_path, capsys, monkeypatch, section, key, word):
    """Before: SGLang's file (memory classes in kv_pool.reserved) with `cuda_graph: {unit: tokens}`
    took the class's graph_batch, a request count, as tokens; with a cuda_graph.max it captured graphs
    up to that max while the default memory fraction reserved for the class's graph_batch, without a word."""
    keys = "".join(f"  {pair.strip()}\n" for pair in section.strip("{}").split(","))  # the block form the file has
    _refused(tmp_path, capsys, monkeypatch, _swap("cuda_graph:\n  unit: requests\n  padded: true\n", f"cuda_graph:\n{keys}"),
             key, word)


def test_a_rule_making_graphs_of_tokens_on_memory_classes_is_refused(tmp_path, capsys, monkeypatch):
    rule = '  - {name: tok, field: cuda_graph, value: {unit: tokens}, since: "0.5.0", source: x}\n'
    line = _refused(tmp_path, capsys, monkeypatch, _swap("  - name: spec_v2_overlap\n", rule + "  - name: spec_v2_overlap\n"),
                    "rules.3.value", "graph_batch counts requests")
    assert "sets cuda_graph.unit" in line, line


# ------------------------------------------------------------- 3. a torch that is there but broken

@pytest.mark.parametrize("command", [["verify", "s.yaml"], ["calibrate", "--device", "cpu", "--quick"]])
@pytest.mark.parametrize("failure", ['OSError("libcudnn.so.9: cannot open shared object file")',
                                     'ImportError("numpy.core.multiarray failed to import")'])
def test_a_torch_that_fails_to_import_is_one_line(tmp_path, capsys, monkeypatch, command, failure):
    """Before: find_spec found torch, so `verify` and `calibrate` imported their modules and a torch
    whose import fails (a CUDA library it cannot load, a NumPy it was not built for) was a traceback."""
    fake = tmp_path / "site"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(f"raise {failure}\n")
    monkeypatch.syspath_prepend(str(fake))
    for name in [m for m in sys.modules if m == "torch" or m.startswith(("torch.", "mtpsim.verify", "mtpsim.calibration",
                                                                            "mtpsim.torchkit"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, command, "", "`import torch` fails")
    assert failure.split('"')[1].split(":")[0] in line, line


# ------------------------------------------------------------- 4. the cap `cost` says `run` holds

SHORT_CONTEXT = """\
name: q
model: qwen3-30b-a3b
hardware: h200
cost: {model: roofline}
speculative: {design: none}
workload: {arrival: closed, concurrency: 3000, num_requests: 3000, input_len: 64, output_len: 2}
"""


def test_cost_says_the_running_cap_run_holds(tmp_path, capsys):
    """Before: `cost` took SGLang's per-context cap without the KV pool, its floor: `3000 requests is
    past the running-request cap of 2048 ... mtpsim run runs at most 2048 at once`, where a 40,960-token
    model's pool on an H200 admits 4096 and `run` ran all 3000 at once."""
    path = _scenario(tmp_path, SHORT_CONTEXT)
    assert warnings_of(capsys, ["cost", path]) == []
    lines = warnings_of(capsys, ["cost", path, "--batch", "5000"])
    assert any("past the running-request cap of 4096, set by sglang 0.5.12's default cap:" in x for x in lines), lines


# ------------------------------------------------------------- 5. a GPU no class holds

@pytest.mark.parametrize("old, new, key, kind", [
    # an 80 GB H100 took the < 70 GiB class's 256 requests, vLLM's 1024 for it gone
    ("    - {requests: 1024}\n", "", "running_cap.by_gpu.1", "vllm"),
    ("    - {requests: 1024}\n", "    - {gpus: [b200], requests: 1024}\n", "running_cap.by_gpu.2", "vllm"),
    ("  - {tokens: 8192}\n", "", "prefill_chunk.1", "vllm"),
    # a B200 took the H200's class (chunk 8192, 256 graphs), past its below_mib of 160 GiB
    ("      - {chunked_prefill_tokens: 16384, graph_batch: 512, graph_batch_tp4: 512}                   # B200", "#",
     "kv_pool.reserved.classes.4", "sglang"),
])
def test_a_class_list_without_a_class_of_any_gpu_is_refused(tmp_path, capsys, monkeypatch, old, new, key, kind):
    """Before: first_holding (and memory_class) gave a GPU that no class holds the last class, whose
    below_mib or gpus it does not meet, without a word."""
    _refused(tmp_path, capsys, monkeypatch, _swap(old, new), key, "the last class is taken by every GPU",
             kind=kind, argv=("--set", f"engine.kind={kind}"))


# ------------------------------------------------------------- 6. a cap over SGLang's attention-DP ranks

ADP = """\
name: d
model: deepseek-v3
hardware: h200
cost: {model: roofline}
parallel: {tp: 8, ep: 8, attention_dp: 8}
speculative: {design: nextn, steps: 2}
acceptance: {per_depth: [0.8, 0.7]}
engine: {max_running_requests: CAP}
workload: {arrival: closed, concurrency: 16, num_requests: 32, input_len: 64, output_len: 4}
"""


def test_a_running_cap_below_sglangs_attention_dp_ranks_is_refused(tmp_path, capsys):
    """Before: max_running_requests 4 over 8 attention-DP ranks ran 4 requests at once; SGLang gives
    each rank 4 // 8 = 0 (model_runner.py), and runs none."""
    one_line_error(capsys, ["run", _scenario(tmp_path, ADP.replace("CAP", "4")), "--out", str(tmp_path / "out")],
                   "engine.max_running_requests", "4 // 8 = 0 requests")


def test_a_running_cap_not_a_multiple_of_the_ranks_is_warned_of(tmp_path, capsys):
    """Before: 12 over 8 ranks ran 12 at once without a word; SGLang runs 1 a rank, 8 in all."""
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, ADP.replace("CAP", "12"))])
    assert any("engine.max_running_requests: SGLang gives each of its 8 attention-DP ranks 12 // 8 = 1" in x
               for x in lines), lines
    assert warnings_of(capsys, ["cost", _scenario(tmp_path, ADP.replace("CAP", "16"))]) == []


# ------------------------------------------------------------- 7. a dotted rule field into a section

@pytest.mark.parametrize("field, word", [
    ("cuda_graph.max", "a rule sets cuda_graph whole, not one key of it (field: cuda_graph"),
    ("running_cap.fixed", "a rule sets running_cap whole"),
    ("dp_routing.cache_threshold", "inside dp_routing a rule sets only dp_routing.waiting_weight"),
    ("kv_pool.reserved.base_mib", "inside kv_pool a rule sets only kv_pool.reserved.speculative_mib"),
])
def test_a_dotted_rule_field_no_rule_sets_says_what_does(tmp_path, capsys, monkeypatch, field, word):
    """Before: `Input should be 'speculative_max_running_requests', ... 's ... _pool.margin_activation_share',
    ...`: the 27 fields a rule sets, cut in the middle, where the file meant a key of a section that
    a rule sets whole (cuda_graph, running_cap) or one of the few keys a rule sets inside it."""
    rule = f'  - {{name: cg, field: {field}, value: 64, since: "0.5.0", source: x}}\n'
    line = _refused(tmp_path, capsys, monkeypatch, _swap("  - name: spec_v2_overlap\n", rule + "  - name: spec_v2_overlap\n"),
                    "rules.3.field", word)
    assert "Input should be" not in line, line


# ------------------------------------------------------------- 8. a searched design the release lacks

STEP = """\
name: st
model: step-3.5-flash
hardware: h200
cost: {model: roofline}
parallel: {tp: 8, ep: 8}
speculative: {design: nextn, steps: 1}
acceptance: {per_depth: [0.8, 0.7, 0.6]}
engine: {version: "0.5.6"}
workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 4}
search: {gpus: 8, tp: [8], ep: [8], attention_dp: [1], concurrency: [1], requests_per_user: 1, designs: [none, multi_layer]}
"""


def test_a_searched_design_the_release_has_no_method_for_is_warned_of(tmp_path, capsys):
    """Before: `run` and `recommend` warned that SGLang 0.5.6 has no multi_layer method, while
    `search` with search.designs [none, multi_layer] picked `multi_layer S=2` and printed its launch
    flags for that release without a word (as_design's trial point is validated silently)."""
    lines = warnings_of(capsys, ["search", _scenario(tmp_path, STEP), "--no-cache", "--no-plot", "--jobs", "1",
                                 "--out", str(tmp_path / "out")])
    assert any(": search.designs: multi_layer: sglang 0.5.6 has no speculative method for design multi_layer" in x
               for x in lines), lines


# ------------------------------------------------------------- 9. verify and the engine section

def test_verify_says_it_reads_no_engine_setting(tmp_path, capsys, monkeypatch):
    """Before: `verify --set engine.kind=vllm --set engine.max_graph_batch=8` predicted its loop with
    an engine section of its own (compare.simulated_mapping: SGLang's default, eager, no overlap)
    and said nothing of the two settings, as it says of the cost section, seeds and arrivals."""
    from tests.test_bad_input_11p import _verify_warnings
    from tests.test_bad_input_15 import VERIFY_H200
    _stub_verify(monkeypatch)
    lines = _verify_warnings(tmp_path, capsys, VERIFY_H200 + "engine: {kind: vllm, max_graph_batch: 8}\n")
    assert any(": engine.kind: verify times its own loop" in x and "engine.kind, engine.max_graph_batch are not read"
               in x for x in lines), lines
    (tmp_path / "plain").mkdir()
    assert not any("engine." in x for x in _verify_warnings(tmp_path / "plain", capsys, VERIFY_H200)), lines
