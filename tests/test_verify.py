"""Verification loops on CPU with tiny models: KV bookkeeping, forced acceptance, lossless verify
and rollback (an oracle draft that copies the target), and the end-to-end command.

Models are catalog entries shrunk to 2 layers at 1/32 width (windows cut to 8 tokens so sliding
rings wrap), run in fp64 so that verify over N tokens and plain decoding pick the same argmax.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml

torch = pytest.importorskip("torch")

from mtpsim import catalog  # noqa: E402
from mtpsim.acceptance import AcceptanceProfile  # noqa: E402
from mtpsim.scenario import Verify  # noqa: E402
from mtpsim.shrink import shrink_assistant, shrink_block_drafter, shrink_model  # noqa: E402
from mtpsim.specs import ModelSpec  # noqa: E402
from mtpsim.torchkit import loops  # noqa: E402
from mtpsim.torchkit.measure import Setup, measure, start  # noqa: E402

SMALL = Verify(num_layers=2, hidden_scale=1 / 32, num_experts=4)
STEPS = 3
# design -> (model overrides, assistant); windows of 8 make the sliding rings wrap
MODELS = {
    "none": ({"from": "deepseek-v3"}, None),
    "nextn": ({"from": "deepseek-v3"}, None),
    "multi_layer": ({"from": "mimo-v2-flash", "attention_kinds": {"swa": {"window": 8}}}, None),
    "frozen_kv": ({"from": "gemma-4-e2b", "attention_kinds": {"sliding": {"window": 8}}}, "gemma-4-e2b-assistant"),
    "parallel_heads": ({"from": "meta-mtp-7b"}, None),
    "nextn_linear": ({"from": "qwen3-next-80b-a3b"}, None),
    "block": ({"from": "qwen3-8b"}, "dflash-qwen3-8b-block7"),  # its drafter rides in the assistant slot
}
DESIGNS = ["none", "nextn", "multi_layer", "frozen_kv", "parallel_heads", "nextn_linear", "block"]
PROFILE = AcceptanceProfile((0.8, 0.6, 0.5))


@pytest.fixture(autouse=True)
def one_thread():
    """Shared 2-core CI machines: one thread is faster and steadier for these tiny models."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def setup(key: str, batch: int, iterations: int = 6, acceptance: str = "forced", design: str | None = None) -> Setup:
    ref, assistant = MODELS[key]
    model = shrink_model(ModelSpec.model_validate(catalog.resolve("models", ref, "test")), SMALL)
    design = design or key.removesuffix("_linear")
    shrink = shrink_block_drafter if key == "block" else shrink_assistant
    small_assistant = shrink(catalog.load_model(assistant), model, SMALL) if assistant and design != "none" else None
    prompts = [20, 33, 27, 40][:batch]
    return Setup(model, small_assistant, design, STEPS if design != "none" else 0, prompts, iterations, 0,
                 acceptance, PROFILE, "cpu", "fp64", seed=3)


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("key", DESIGNS)
def test_kv_lengths_follow_emitted_tokens(key, batch):
    m = measure(setup(key, batch))
    emitted = np.array([len(e) for e in m.emitted])
    prompts = np.array(setup(key, batch).prompt_lens)
    # committed KV = prompt + every emitted token but the root (emitted, not yet fed back)
    np.testing.assert_array_equal(m.run.target_cache.lens, prompts + emitted - 1)
    for cache in m.run.draft_caches:
        np.testing.assert_array_equal(cache.lens, prompts + emitted - 1)
    assert m.iterations.emitted.sum() == emitted.sum() - batch  # minus the prefill's root
    assert (m.iterations[["draft_s", "verify_s", "extend_s"]].sum(axis=1) <= m.iterations.iteration_s).all()


def test_measure_ticks_once_per_iteration_warm_up_included():
    """The verify command's progress bar moves with the loop (verify/command.py verify_point)."""
    ticks = []
    s = setup("nextn", 2, iterations=3)
    m = measure(replace(s, warmup_iterations=2), tick=lambda: ticks.append(1))
    assert len(ticks) == 5 and len(m.iterations) == 3


def test_forced_histogram_matches_profile():
    """P(at least k accepted) from 4 x 60 request-iterations within 4 standard errors."""
    m = measure(setup("nextn", 4, iterations=60))
    counts = m.accept_counts
    n = counts.sum()
    at_least = counts[::-1].cumsum()[::-1][1:] / n
    expected = np.cumprod(PROFILE.alphas)
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(at_least - expected) <= 4 * se + 1e-9), (at_least, expected)


def _reference(key: str, batch: int, tokens: int) -> list[list[int]]:
    """Plain greedy decoding with the same target and prompts."""
    s = setup(key, batch, iterations=tokens, acceptance="greedy", design="none")
    return measure(s).emitted


def _oracle(reference, prompt_lens, corrupt: float, vocab: int, seed: int = 0):
    """A draft that proposes the target's own greedy tokens; with probability `corrupt` a wrong one."""
    rng = np.random.default_rng(seed)

    def propose(tokens, positions, requests=None):
        requests = range(len(tokens)) if requests is None else requests
        out = [reference[b][p - prompt_lens[b]] for b, p in zip(requests, np.broadcast_to(positions, len(tokens)))]
        out = [(t + 1) % vocab if rng.random() < corrupt else t for t in out]
        return torch.tensor(out, dtype=tokens.dtype, device=tokens.device)
    return propose


def _run_with_poison(s: Setup, propose):
    """Iterations with every slot beyond the committed lengths overwritten by a huge value between
    iterations: if any pass read KV a rejected draft left behind, the tokens would change."""
    run = start(s, propose)
    counts = np.zeros(STEPS + 1, dtype=np.int64)
    with torch.inference_mode():
        for _ in range(s.iterations):
            row = loops.step(run)
            counts += np.bincount(row["accepted"], minlength=STEPS + 1)
            for cache in [run.target_cache, *run.draft_caches]:
                cache.poison(1e4)
    return run, counts


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("key", [k for k in DESIGNS if k != "none"])
def test_oracle_draft_is_fully_accepted_and_lossless(key, batch):
    iterations = 4
    s = setup(key, batch, iterations=iterations, acceptance="greedy")
    reference = _reference(key, batch, iterations * (STEPS + 1) + STEPS + 2)
    run, counts = _run_with_poison(s, _oracle(reference, s.prompt_lens, 0.0, s.model.vocab_size))
    assert counts[STEPS] == counts.sum() == batch * iterations
    assert len(run.emitted) == batch and all(len(got) >= iterations * (STEPS + 1) for got in run.emitted)
    for got, want in zip(run.emitted, reference):
        assert got == want[: len(got)]


@pytest.mark.parametrize("key", [k for k in DESIGNS if k != "none"])
def test_rejected_drafts_roll_back_losslessly(key):
    """A draft wrong 30% of the time: partial accepts, and still exactly plain greedy decoding."""
    iterations, batch = 6, 4
    s = setup(key, batch, iterations=iterations, acceptance="greedy")
    reference = _reference(key, batch, iterations * (STEPS + 1) + STEPS + 2)
    run, counts = _run_with_poison(s, _oracle(reference, s.prompt_lens, 0.3, s.model.vocab_size))
    assert counts[:STEPS].sum() > 0 and counts[1:].sum() > 0  # some rejected, some accepted
    # every request emitted at least a token an iteration: the prefix check below is not over nothing
    assert len(run.emitted) == batch and all(len(got) >= iterations for got in run.emitted)
    for got, want in zip(run.emitted, reference):
        assert got == want[: len(got)]


def test_random_weights_greedy_acceptance_is_near_zero():
    m = measure(setup("nextn", 4, iterations=4, acceptance="greedy"))
    assert m.accept_counts[0] >= 0.75 * m.accept_counts.sum()


def test_verify_command_end_to_end(write_scenario, tmp_path, capsys):
    from mtpsim.cli import main
    path = write_scenario({
        "name": "tiny", "model": "mimo-7b", "hardware": "cpu",
        "speculative": {"design": "nextn", "steps": 2}, "acceptance": {"per_depth": [0.7, 0.5]},
        "workload": {"arrival": "batch", "concurrency": 2, "num_requests": 2,
                     "input_len": {"dist": "uniform", "min": 16, "max": 24}, "output_len": 16},
        "verify": {"num_layers": 1, "hidden_scale": 0.03125, "iterations": 4, "warmup_iterations": 1,
                   "device": "cpu"},
        "sweep": {"speculative.design": ["none", "nextn"]},
    })
    assert main(["verify", str(path), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "verify.csv")
    assert list(table.columns) == ["design", "batch", "kind", "predicted", "measured", "rel_error",
                                   "machine_level", "rel_error_at_level"]  # CPU with a profile: its level
    assert set(table.kind) == {"tps", "iteration_s", "draft_s", "verify_s", "extend_s"}
    assert table.machine_level.nunique() == 1 and 0.2 < table.machine_level[0] < 5
    assert (tmp_path / "out" / "verify.png").is_file()
    tps = table[table.kind == "tps"]
    print(tps.to_string(index=False))  # prediction error, for the log
    assert (tps.measured > 0).all() and (tps.predicted > 0).all()
    assert (tps.rel_error.abs() < 20).all()  # CPU timing in CI is noisy: only a loose bound
    # what the noise cannot excuse: each error is its row's prediction against its measurement, and the
    # level-scaled one the same with the prediction moved by the machine level (TPS / level, times x level)
    timed = table[table.measured > 0]
    assert len(timed) >= len(tps)
    assert timed.rel_error.to_numpy() == pytest.approx((timed.predicted / timed.measured - 1).to_numpy(), rel=1e-9, abs=1e-12)
    level = np.where(timed.kind == "tps", 1 / timed.machine_level, timed.machine_level)
    assert timed.rel_error_at_level.to_numpy() == pytest.approx(
        (timed.predicted * level / timed.measured - 1).to_numpy(), rel=1e-9, abs=1e-12)
    printed = capsys.readouterr().out
    assert "accept histogram" in printed and "this CPU ran at" in printed


def test_verify_calibrate_writes_a_quick_profile_through_calibration(tmp_path, monkeypatch):
    """--calibrate: calibration's public write_profile, quick, into the run folder (grid not run here)."""
    from mtpsim.calibration import command as calibration
    from mtpsim.verify.device import cost_source
    seen = []
    monkeypatch.setattr(calibration, "calibrate", lambda device, quick, folder, visits: seen.append(
        (device, quick, visits)) or {"device": device, "quick": quick})
    hardware, folder = cost_source("cpu", True, tmp_path)
    assert (hardware, folder) == ("cpu", str(tmp_path / "profile")) and seen == [("cpu", True, None)]
    assert yaml.safe_load((tmp_path / "profile" / "meta.yaml").read_text())["quick"] is True


def test_machine_level_scales_predictions():
    from mtpsim.verify.device import at_level
    table = pd.DataFrame({"kind": ["tps", "iteration_s", "draft_s"], "predicted": [100.0, 0.010, 0.0],
                          "measured": [80.0, 0.0125, 0.0]})
    assert at_level(table.copy(), [1.2, None]) is None
    level = at_level(table, [1.21, 1.0])
    assert level == pytest.approx(1.1)
    assert table.rel_error_at_level.tolist() == pytest.approx([100 / 1.1 / 80 - 1, 0.011 / 0.0125 - 1, 0.0])


def test_shrink_keeps_kinds_and_scales_widths():
    v = Verify(num_layers=2, hidden_scale=0.0625, num_experts=8)
    ds = shrink_model(catalog.load_model("deepseek-v3"), v)
    assert [(g.ffn, g.count) for g in ds.layers] == [("dense", 1), ("moe", 1)]
    assert ds.hidden_size == 448 and ds.ffn_kinds["moe"].num_experts == 8 and ds.ffn_kinds["moe"].top_k == 8
    assert ds.attention_kinds["mla"].qk_nope_head_dim == 128  # head dims stay real
    assert set(ds.dtypes.model_dump().values()) == {"fp32"}
    gemma = shrink_model(catalog.load_model("gemma-4-e2b"), v)
    assert {gemma.attention_kinds[r.attention].window is None for r in gemma.expanded_layers} == {True, False}
    assistant = shrink_assistant(catalog.load_model("gemma-4-e2b-assistant"), gemma, v)
    assert assistant.backbone_hidden_size == gemma.hidden_size


def test_torch_free_imports():
    code = ("import sys, mtpsim, mtpsim.sim, mtpsim.shrink, mtpsim.verify.compare; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("key", [k for k in DESIGNS if k != "none"])
def test_dead_slots_are_never_read(key):
    """Forced acceptance, twice: once clean, once with every slot past the committed lengths of
    every cache (target and draft) overwritten between iterations. Any pass reading KV that a
    rejected draft left behind would propose different draft tokens."""
    def proposals(poison: bool):
        seen = []

        def spy(tokens, positions, requests=None):
            seen.append(tokens.tolist())
            return tokens
        s = setup(key, 4, iterations=5)
        run = start(s, spy)
        with torch.inference_mode():
            for _ in range(s.iterations):
                loops.step(run)
                for cache in [run.target_cache, *run.draft_caches]:
                    cache.poison(1e4 if poison else 0.0)
        return seen, run.emitted
    assert proposals(True) == proposals(False)


def test_verify_of_an_external_draft_is_one_line_exit_2(write_scenario, tmp_path, capsys):
    """verify builds a model's own MTP layers; an external draft (EAGLE-3) is refused, not guessed."""
    from mtpsim.cli import main
    path = write_scenario({
        "name": "eagle", "model": "llama-3.1-8b", "hardware": "cpu",
        "speculative": {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"},
        "acceptance": {"per_depth": [0.7, 0.5]},
        "workload": {"arrival": "batch", "concurrency": 1, "num_requests": 1, "input_len": 16, "output_len": 8},
        "verify": {"num_layers": 1, "hidden_scale": 0.03125, "iterations": 2, "device": "cpu"}})
    assert main(["verify", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "speculative.draft: verify builds a model's own MTP layers" in err


def test_verify_command_runs_a_block_drafter(write_scenario, tmp_path, monkeypatch, capsys):
    """The block design end to end: its shrunken drafter built beside the target and written
    inline into simulated.yaml, so the prediction is of the same drafter (the CPU's level is
    the test above's: not re-timed here)."""
    from mtpsim.cli import main
    from mtpsim.verify import command
    monkeypatch.setattr(command, "machine_level", lambda device, profile: None)
    path = write_scenario({
        "name": "blk", "model": "qwen3-8b", "hardware": "cpu",
        "speculative": {"design": "block", "steps": 3, "draft": "dflash-qwen3-8b-block7"},
        "acceptance": {"per_depth": [0.7, 0.5, 0.4]},
        "workload": {"arrival": "batch", "concurrency": 2, "num_requests": 2, "input_len": 16, "output_len": 16},
        "verify": {"num_layers": 1, "hidden_scale": 0.03125, "iterations": 3, "warmup_iterations": 1, "device": "cpu"}})
    assert main(["verify", str(path), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "verify.csv")
    row = table.set_index("kind")
    assert row.loc["draft_s", "measured"] > 0 and row.loc["draft_s", "predicted"] > 0
    assert row.loc["extend_s", "measured"] == row.loc["extend_s", "predicted"] == 0
    simulated = next((tmp_path / "out").glob("*/simulated.yaml"))
    assert yaml.safe_load(simulated.read_text())["speculative"]["draft"]["block"]["target_layer_ids"] == [0]  # 1 kept
    # simulated.yaml is a scenario to run again: no key its trace load does not read (num_requests,
    # concurrency) and no dtype of a part its models lack (campaign 38: each was a warning about it)
    from mtpsim import errors
    errors._warned.clear()
    capsys.readouterr()
    assert main(["run", str(simulated), "--out", str(tmp_path / "again")]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mtpsim: warning:")]
    assert not [line for line in said if ": workload." in line or ".dtypes." in line], said
