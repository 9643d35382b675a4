"""Bad-input campaign 26, semantic: deployments each value of which is valid, priced without a word
although the engine could not run them, or run with a setting the release does not have.

Probed, and already fine: tp / ep / attention_dp that do not divide the model's heads or experts,
for the target and the draft; an NVLink domain wider than the GPUs; draft and vocabulary widths;
block drafters' built_for, taps and block size; frozen-KV assistants' KV shapes; context and KV
limits; running caps; acceptance past steps + 1; trees with too few draft tokens; the Python API
given dicts, mutated points and bad arguments; and monotonicity sweeps (context 0 to 130k,
acceptance 0.1 to 1.0, tp 1 to 16, batch 1 to 256, concurrency 16 to 1,024 under three engines),
where nothing moved the wrong way without a named bound.

Found and fixed:
- `run`, `cost` and `recommend` priced what the engine's launch options (search/flags.py) say it
  cannot run: a draft tree under vLLM or TensorRT-LLM (which then came out faster than SGLang,
  which can run it), vLLM with ep between 1 and the replica's GPUs, TensorRT-LLM with attention DP
  over part of tp, SGLang's DFLASH with DP attention, and one MTP layer reused on a model of three
  under vLLM or TensorRT-LLM. Each is now one warning at the key at fault, from one home that
  flags.py prints too (engine_forms.py);
- `search` under such an engine ranked and picked those deployments, then printed that the engine
  could not launch its pick: it leaves them out with one warning, or refuses a search of nothing else;
- `engine.speculative_overlap: true` on a release with no speculative overlap (SGLang before
  spec v2's switch in v0.5.5, vLLM before v0.14) hid all host time, +10% speedup, where a tree's
  `true` was already warned of and ignored: ignored and warned alike (rules spec_v2_opt_in,
  v1_spec_async_possible, read in the wheels);
- an EAGLE-3 head trained on another target (Qwen3-235B's, whose taps include layers 46 and 90,
  on 36-layer Qwen3-8B) ran without a word where only its widths matched: each catalog head names
  its target (`trained_for`), and another pairing is warned of.

- a closed loop of fewer users than replicas (dp 100 at 16 users) left replicas idle without a
  word, their GPUs counted in the per-GPU figures: said at parallel.dp (not where a sweep varies the
  load or the layout, whose low rungs are meant).

- an EAGLE-3 draft on a release with no EAGLE3 method (SGLang before 0.4.4.post2, vLLM before
  0.8.5, read in the wheels) ran without a word: `eagle3` joins lacks_methods. SGLang's came in a
  post release, which mtpsim compared as its release: a post release now sorts after its release
  (engine_releases.release), so a rule may name one, and 0.4.4.post2's own speculative CUDA-graph
  list (which it read as 0.4.4's) is its rule. P3, which names 0.4.4 and ran the paper's EAGLE-3
  branch, now says so in one warning (its file explains).

- (from a check of the README's commands) `verify.dtype: fp16` on a CPU was predicted faster than
  fp32 while the loop ran slower (+199% against +49%): warned of at verify.dtype.

Noticed, and left alone: a named acceptance profile of another model is applied without a word (an acceptance is
the user's assumption to give); hardware figures far past any GPU within the documented ranges
(what-if studies); engine.mem_fraction 1.0 (the documented range); FP4 weights on an A100 (Marlin's
W4A16 exists on Ampere).
"""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

TREE = "scenarios/tree-vs-chain.yaml"
TREE_SET = ["--set", "speculative={design: nextn, steps: 3, topk: 4, draft_tokens: 8, draft: eagle3-llama-3.1-8b}",
            "--set", "sweep=null"]
MOE = """\
name: moe
model: qwen3-30b-a3b
hardware: h100-sxm
parallel: {tp: 4, ep: 4}
speculative: {design: nextn, steps: 2, draft: eagle3-qwen3-30b-a3b-specforge}
acceptance: {per_depth: [0.8, 0.7]}
workload: {concurrency: 4, num_requests: 8, input_len: 256, output_len: 32}
"""


def _moe(tmp_path) -> str:
    path = tmp_path / "moe.yaml"
    path.write_text(MOE)
    return str(path)


def _about(warned: list[str], key: str) -> list[str]:
    return [w for w in warned if f": {key}: " in w]


# ------------------------------------------------------------- 1. what the engine cannot launch, warned where asked

@pytest.mark.parametrize("engine, word", [("vllm", "vllm 0.22.0 cannot run a draft tree"),
                                          ("trtllm", "trtllm 1.3.0 cannot run a draft tree")])
def test_a_tree_under_an_engine_of_chains_is_warned_of(capsys, engine, word):
    """Before: silent, and the tree came out faster under vLLM (1.81x) and TensorRT-LLM (1.85x) than
    under SGLang (1.62x), which runs it: their host rules hid what SGLang's tree worker pays."""
    warned = warnings_of(capsys, ["cost", TREE, *TREE_SET, "--set", f"engine.kind={engine}"])
    assert [w for w in _about(warned, "speculative.topk") if word in w and "prices it as if it could" in w], warned
    assert _about(warnings_of(capsys, ["cost", TREE, *TREE_SET]), "speculative.topk") == []  # SGLang runs trees


@pytest.mark.parametrize("sets, key, word", [
    (["engine.kind=vllm", "parallel.ep=2"], "parallel.ep", "cannot run ep 2 within 4 GPUs"),
    (["engine.kind=trtllm", "parallel.attention_dp=2"], "parallel.attention_dp", "cannot run attention_dp 2 of tp 4"),
])
def test_a_layout_the_engine_has_no_option_for_is_warned_of(tmp_path, capsys, sets, key, word):
    argv = ["cost", _moe(tmp_path)]
    for s in sets:
        argv += ["--set", s]
    warned = warnings_of(capsys, argv)
    assert [w for w in _about(warned, key) if word in w], warned
    assert warnings_of(capsys, ["cost", _moe(tmp_path), "--set", sets[0]]) == []  # ep 4 of tp 4: its form


def test_the_launch_options_and_the_warning_give_one_reason(tmp_path, capsys):
    """search/flags.py prints the same sentence engine_forms.py gives the warning."""
    import pandas as pd

    from mtpsim.engine_forms import Drafter
    from mtpsim.search.flags import launch_flags
    row = pd.Series({"design": "nextn", "steps": 3, "topk": 4, "tp": 1, "ep": 1, "attention_dp": 1, "replicas": 1,
                     "draft_tokens": 8})
    text = launch_flags(row, 16, Drafter(external=True))
    assert "[vllm 0.22.0]\nvLLM: cannot run a draft tree (topk > 1): its drafts are chains" in text
    assert "[sglang 0.5.12]\npython -m sglang.launch_server" in text


# ------------------------------------------------------------- 2. search leaves out what its engine cannot launch

def test_search_under_vllm_runs_no_point_vllm_cannot_launch(tmp_path, capsys):
    """Before: `search --set engine.kind=vllm` over ep 1, 2 and 4 on 4 GPUs ranked ep 2 points
    and could pick one, then printed `vLLM: cannot run ep 2 within 4 GPUs` under its pick."""
    code = cli.main(["search", _moe(tmp_path), "--gpus", "4", "--concurrency", "4", "--max-steps", "1",
                     "--set", "engine.kind=vllm", "--set", "search.tp=[4]", "--set", "search.ep=[1, 2, 4]",
                     "--set", "search.attention_dp=[1]", "--jobs", "1", "--no-cache",
                     "--out", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    warned = [w for w in captured.err.splitlines() if "cannot launch them" in w]
    assert len(warned) == 1 and "vllm 0.22.0 cannot launch them (e.g. 1x tp4 ep2" in warned[0], captured.err
    import pandas as pd
    frontier = pd.read_csv(tmp_path / "o" / "points.csv") if (tmp_path / "o" / "points.csv").exists() else None
    if frontier is not None and "layout" in frontier:
        assert not frontier.layout.astype(str).str.contains("ep2").any()
    assert "ep2" not in captured.out.split("best:")[1].splitlines()[0]


# ------------------------------------------------------------- 3. a speculative overlap the release does not have

@pytest.mark.parametrize("engine, version, rule", [("sglang", "0.4.4", "spec_v2_opt_in"),
                                                   ("vllm", "0.10.0", "v1_spec_async_possible")])
def test_a_speculative_overlap_the_release_lacks_is_ignored_and_said(capsys, engine, version, rule):
    """Before: `true` hid every host second of SGLang 0.4.4's and vLLM 0.10.0's speculative
    iterations (speedup 1.72 -> 1.90, 1.96 -> 2.16): a behaviour those releases never had."""
    base = ["cost", TREE, "--set", "sweep=null", "--set", f"engine={{kind: {engine}, version: '{version}'}}"]
    warned = warnings_of(capsys, [*base, "--set", "engine.speculative_overlap=true"])
    said = _about(warned, "engine.speculative_overlap")
    assert said and f"has no speculative overlap to turn on (rule {rule}): true changes nothing" in said[0], warned
    assert cli.main([*base, "--set", "engine.speculative_overlap=true"]) == 0
    with_true = capsys.readouterr().out
    assert cli.main(base) == 0
    assert capsys.readouterr().out.replace(" (with --set", "") == with_true.replace(" (with --set", "")


def test_a_speculative_overlap_the_release_can_turn_on_is_taken(capsys):
    """SGLang 0.5.5 to 0.5.10 have spec v2 behind SGLANG_ENABLE_SPEC_V2: `true` is that switch."""
    base = ["cost", TREE, "--set", "sweep=null", "--set", "engine={kind: sglang, version: '0.5.5'}"]
    assert _about(warnings_of(capsys, [*base, "--set", "engine.speculative_overlap=true"]),
                  "engine.speculative_overlap") == []


# ------------------------------------------------------------- 4. an EAGLE-3 head of another target

def test_an_eagle3_head_trained_on_another_target_is_warned_of(tmp_path, capsys):
    """Before: Qwen3-235B's head (its taps at layers 1, 46 and 90) on 36-layer Qwen3-8B ran without a
    word: only its widths were compared."""
    text = MOE.replace("qwen3-30b-a3b\n", "qwen3-8b\n").replace("tp: 4, ep: 4", "tp: 1").replace(
        "eagle3-qwen3-30b-a3b-specforge", "eagle3-qwen3-235b-a22b-specforge")
    path = tmp_path / "wrong.yaml"
    path.write_text(text)
    warned = _about(warnings_of(capsys, ["cost", str(path)]), "speculative.draft")
    assert len(warned) == 1 and "was trained on the hidden states of qwen3-235b-a22b (trained_for), not model " \
        "'qwen3-8b'" in warned[0], warned
    assert _about(warnings_of(capsys, ["cost", _moe(tmp_path)]), "speculative.draft") == []  # its own target


def test_trained_for_is_a_drafts_field_only(capsys):
    one_line_error(capsys, ["cost", "scenarios/quickstart.yaml", "--set", "model.trained_for=[llama-3.1-8b]"],
                   "model.trained_for", "")


# ------------------------------------------------------------- 5. replicas no request reaches

def test_replicas_a_closed_loop_cannot_reach_are_said(capsys):
    """Before: dp 100 at 16 users reported a deployment of 800 GPUs, 84 replicas of which never
    served a request, without a word: per-GPU figures count them."""
    warned = _about(warnings_of(capsys, ["cost", "scenarios/quickstart.yaml", "--set", "parallel.dp=100"]), "parallel.dp")
    assert warned == ["mtpsim: warning: --set: parallel.dp: 100 replicas for at most 16 requests at once: 84 replicas "
                      "never serve one, and the per-GPU figures count their GPUs"], warned
    assert _about(warnings_of(capsys, ["cost", "scenarios/quickstart.yaml", "--set", "parallel.dp=2"]), "parallel.dp") == []


# ------------------------------------------------------------- 6. an EAGLE-3 draft before the release that loads one

@pytest.mark.parametrize("engine, version, said", [
    ("sglang", "0.4.4", True), ("sglang", "0.4.4.post1", True), ("sglang", "0.4.4.post2", False),
    ("sglang", "0.4.5", False), ("vllm", "0.8.4", True), ("vllm", "0.8.5", False)])
def test_an_eagle3_draft_on_a_release_without_the_method_is_warned_of(capsys, engine, version, said):
    """Before: an EAGLE-3 head ran on SGLang 0.4.0-0.4.4.post1 (--speculative-algorithm EAGLE,
    NEXTN) and vLLM before 0.8.5 (no "eagle3" method) without a word. SGLang's came in a post
    release, which the rules now tell from its release (engine_releases.release)."""
    argv = ["cost", TREE, "--set", "sweep=null", "--set", f"engine={{kind: {engine}, version: '{version}'}}"]
    warned = [w for w in warnings_of(capsys, argv) if "EAGLE-3 draft" in w]
    assert bool(warned) is said, warned
    assert not said or f"speculative.draft: {engine} {version} has no speculative method for an EAGLE-3 draft " \
        "('eagle3-llama-3.1-8b')" in warned[0], warned


def test_a_post_release_sorts_between_its_release_and_the_next():
    from mtpsim.engine_releases import release
    order = ["0.4.4", "0.4.4.post1", "0.4.4.post2", "0.4.5"]
    assert sorted(order, key=release) == order and release("0.4.4.post2") > release("0.4.4.post1")


def test_sglang_0_4_4_post2_captures_its_own_speculative_graphs(capsys):
    """v0.4.4.post2 changed the speculative capture list (range(1, 9) + range(9, 33, 2) + 64..160),
    which mtpsim read as v0.4.4's range(1, 33) while it compared a post release as its release."""
    verify = {}
    for version in ("0.4.4", "0.4.4.post2"):
        assert cli.main(["cost", TREE, "--set", "sweep=null", "--set", f"engine.version={version}", "--batch", "10"]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if "verify:target" in line)
        verify[version] = int(row.split()[2])
    assert verify == {"0.4.4": 80, "0.4.4.post2": 88}  # 10 requests x 8 tokens, padded to 11 in post2


# ------------------------------------------------------------- 7. verify in fp16 on a CPU

@pytest.mark.parametrize("dtype, warned", [("fp16", True), ("fp32", False)])
def test_verify_in_fp16_on_a_cpu_is_warned_of(capsys, dtype, warned):
    """Before: `verify.dtype: fp16` on a CPU was predicted faster than fp32 (half the bytes) while
    the real loop ran slower: +199% against fp32's +49%, without a word."""
    import mtpsim
    from mtpsim.verify.setup import setup_of
    s = mtpsim.load("scenarios/verify/deepseek-v3-none-cpu.yaml", sets=[f"verify.dtype={dtype}"])[0]
    capsys.readouterr()
    setup_of(s, "cpu")
    said = [w for w in capsys.readouterr().err.splitlines() if ": verify.dtype: " in w]
    assert bool(said) is warned and (not warned or "expect the prediction too fast" in said[0]), said
