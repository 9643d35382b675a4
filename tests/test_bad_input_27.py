"""Bad-input campaign 27 (a), semantic: results and advice of the newest features that were wrong
without a word, each input valid on its own.

Probed, and already fine (about 130 variants, no traceback or hang): block drafters' block sizes,
targets and taps; DeepSeek-V4.1's designs, Engram placements and KV dtypes; kept-length curves and
controllers; steps_by_batch policies under search and recommend; disaggregated pools, links and
loads; NVL72 layouts; traces (zero rows, one-token outputs, hash_ids) and shared prefixes; `cost
--prompt`; and monotonicity in acceptance, batch and (for plain decoding) context.

Found and fixed:
- `plot` / `run --plot` drew a disaggregated run's memory as the whole model on one GPU (674 GB
  of DeepSeek-V3 weights on a 199 GB GB200, no request fitting), reading the unread top-level
  `parallel`: the budget is now a decode-pool GPU's on that pool's layout, as `cost` prices it;
- the same plot sized a trace's requests at input_len / output_len's defaults (1,024 + 256 tokens)
  where the trace's prompts held 30,000: it takes the trace's mean lengths, as `cost` and `search`
  do (one home: tracefiles.mean_lengths);
- under `arrival: batch` a steps_by_batch entry was said `never used` (bounded by concurrency's
  default 1, which a batch load does not read) while it was the one that turned speculation off
  (0.82x); the results table labelled the 64-request batch `conc 1`, and `cost` priced batch 1:
  the batch is the num_requests sent at once, dealt over the replicas;
- entries past a closed loop's share of one replica (64 users over dp 4, an entry at 32: the
  policy keys on a replica's batch) ran silently: one warning says they are reached only where the
  router piles requests up (not certain, so not `never`);
- a named acceptance curve measured on another model or drafter (DeepSeek-V4-Pro's MTP curve on a
  Qwen3-8B DFlash drafter) applied without a word: each curve names its model and method;
- `accept_length: 5` beside a kept-length rule that keeps at most one draft ran at AL 1.43 and
  0.89x: beside a kept-length rule the accept length is the one measured with it on (fitted so),
  and one above 1 + the mean drafts kept is refused;
- (questionable, mended) `raise engine.mem_fraction` was advised where the weights alone exceed
  the GPU; search's `no shard fits` left out keeping the Engram tables in host memory, which run's
  error names; a shared prompt drawn from more groups than requests share changed nothing without
  a word.

Noticed, and left alone: search's launch.txt prints its fixed releases' flags (documented) and no
form for host Engram tables or a kept-length rule; a ~2% cheaper nextn iteration at context 100
than at 0 on three models (table interpolation between measured KV lengths); `spread` lowers the
run's iteration-weighted AL below the per-depth input's E[A] (slow requests run more iterations).
"""
from __future__ import annotations

import pytest

from mtpsim import cli
from mtpsim import scenario as sc
from mtpsim.runfolder import memory_frame
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

BLOCK = """\
name: b
model: qwen3-8b
hardware: b200
speculative: {design: block, steps: 6, draft: dflash-qwen3-8b-block7}
acceptance: {accept_length: 3}
"""


def _file(tmp_path, text: str, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _about(warned: list[str], key: str) -> list[str]:
    return [w for w in warned if f": {key}: " in w]


# ------------------------------------------------------------- 1. the memory plot's budget

def test_a_disaggregated_runs_memory_is_a_decode_pool_gpus():
    """Before: 674 GB of target weights per GPU and 0 requests fitting (tp 1 of the unread
    top-level parallel)."""
    frame = memory_frame(sc.load("scenarios/disagg-gb200-1p3d.yaml"))
    assert set(frame.gpu) == {"decode-pool GPU"}
    assert (frame.target_weights_GB < 150).all() and (frame.max_requests > 100).all(), frame


def test_a_traces_memory_is_sized_at_its_requests_lengths(tmp_path):
    """Before: 1,280 tokens a request (input_len and output_len's defaults): 773 requests fit where
    about 30 of the trace's 30k-token prompts do."""
    rows = "".join(f'{{"timestamp": {i * 1000}, "input_length": 30000, "output_length": 16}}\n' for i in range(4))
    trace = _file(tmp_path, rows, "t.jsonl")
    frame = memory_frame(sc.load(_file(tmp_path, BLOCK + f"workload: {{arrival: trace, trace: {trace}}}\n")))
    assert set(frame.context) == {30016} and (frame.max_requests < 60).all(), frame


# ------------------------------------------------------------- 2. a batch load's batch

BATCH = BLOCK.replace("acceptance: {accept_length: 3}", "acceptance: {accept_length: 4}").replace(
    "dflash-qwen3-8b-block7}", "dflash-qwen3-8b-block7, policy: {steps_by_batch: {1: 6, 32: 0}}}") + \
    "workload: {arrival: batch, num_requests: 64, input_len: 512, output_len: 16}\n"


def test_a_batch_loads_policy_entry_is_not_called_unused(tmp_path, capsys):
    """Before: `steps_by_batch.32: no iteration of this workload runs more than 1 requests
    (workload.concurrency), so this entry is never used`, while the run reached 48."""
    warned = warnings_of(capsys, ["run", _file(tmp_path, BATCH), "--out", str(tmp_path / "o")])
    assert _about(warned, "speculative.policy.steps_by_batch.32") == [], warned
    import pandas as pd
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    assert set(summary.concurrency) == {64}  # the conc column: the batch sent at once (was 1)


def test_a_batch_load_dealt_over_replicas_bounds_each_replicas_batch(tmp_path, capsys):
    text = BATCH.replace("num_requests: 64", "num_requests: 40") + "parallel: {dp: 4}\n"
    warned = warnings_of(capsys, ["cost", _file(tmp_path, text)])
    said = _about(warned, "speculative.policy.steps_by_batch.32")
    assert said and "more than 10 requests (workload.num_requests 40 sent at once, dealt over parallel.dp 4)" in said[0]


def test_cost_prices_a_batch_load_at_the_requests_it_sends(tmp_path, capsys):
    """Before: batch 1 (concurrency's default), which the load never runs."""
    assert cli.main(["cost", _file(tmp_path, BATCH)]) == 0
    assert ", batch 64, context 512," in capsys.readouterr().out


def test_entries_past_a_replicas_share_of_the_users_are_said_apart(tmp_path, capsys):
    """Before: silent, and every figure equal to the run without the policy."""
    text = BATCH.replace("arrival: batch, num_requests: 64", "arrival: closed, concurrency: 64, num_requests: 128") \
        + "parallel: {dp: 4}\n"
    said = _about(warnings_of(capsys, ["cost", _file(tmp_path, text)]), "speculative.policy.steps_by_batch.32")
    assert said and "16 users a replica" in said[0] and "never used" not in said[0], said
    one_replica = text.replace("parallel: {dp: 4}\n", "")
    assert _about(warnings_of(capsys, ["cost", _file(tmp_path, one_replica)]), "speculative.policy.steps_by_batch.32") == []


# ------------------------------------------------------------- 3. acceptance

@pytest.mark.parametrize("model, design, profile, word", [
    ("qwen3-8b", "block", "deepseek-v4-pro-mtp-thinking-on", "targets 'qwen3-8b' and drafts with dflash"),
    ("deepseek-v4-pro", "nextn", "kimi-k2.5-nvfp4-eagle3-thinking-on", "targets 'deepseek-v4-pro' and drafts with mtp"),
    ("deepseek-v4-pro", "nextn", "glm-5.2-fp8-mtp-thinking-on", "measured on a model not in the catalog"),
])
def test_a_named_curve_of_another_model_or_drafter_is_warned_of(tmp_path, capsys, model, design, profile, word):
    text = (f"name: p\nmodel: {model}\nhardware: b200\nparallel: {{tp: {8 if model != 'qwen3-8b' else 1}}}\n"
            f"speculative: {{design: {design}, steps: 3}}\nacceptance: {{profile: {profile}}}\n"
            "workload: {concurrency: 2, num_requests: 4, input_len: 256, output_len: 16}\n")
    said = _about(warnings_of(capsys, ["cost", _file(tmp_path, text)]), "acceptance.profile")
    assert said and word in said[0] and "stands in as an assumption" in said[0], said


def test_a_named_curve_of_the_scenarios_own_model_and_drafter_is_quiet(tmp_path, capsys):
    text = ("name: p\nmodel: deepseek-v4-pro\nhardware: b200\nparallel: {tp: 8}\n"
            "speculative: {design: nextn, steps: 3}\nacceptance: {profile: deepseek-v4-pro-mtp-thinking-on}\n"
            "workload: {concurrency: 2, num_requests: 4, input_len: 256, output_len: 16}\n")
    assert _about(warnings_of(capsys, ["cost", _file(tmp_path, text)]), "acceptance.profile") == []


KEPT = BLOCK + "workload: {arrival: closed, concurrency: 4, num_requests: 16, input_len: 512, output_len: 64}\n"


def test_an_accept_length_past_what_a_kept_length_rule_keeps_is_refused(tmp_path, capsys):
    """Before: ran at AL 1.43 and 0.89x for a stated accept length of 5."""
    text = KEPT.replace("{accept_length: 3}", "{accept_length: 5, kept_length: [0.5, 0.5]}")
    one_line_error(capsys, ["run", _file(tmp_path, text)], "acceptance.accept_length", "exceeds 1.5")


def test_an_accept_length_beside_a_kept_length_rule_is_the_one_measured_with_it():
    from mtpsim.acceptance import AcceptanceProfile
    kept = (0.2, 0.3, 0.1, 0.4)  # at most 3 of 6 drafts kept: 1 + E[kept] = 2.7 at most
    profile = AcceptanceProfile.from_accept_length(2.1, 6, kept=kept)
    weights = [0.8, 0.5, 0.4, 0.0, 0.0, 0.0]  # P(kept >= k)
    reached = 1 + sum(w * profile.alphas[0] ** k for k, w in enumerate(weights, start=1))
    assert reached == pytest.approx(2.1, abs=1e-9)
    assert AcceptanceProfile.most_with_kept(6, kept) == pytest.approx(2.7)
    assert AcceptanceProfile.from_accept_length(2.1, 6).alphas == AcceptanceProfile.from_accept_length(
        2.1, 6, kept=(0, 0, 0, 0, 0, 0, 1)).alphas  # keeping all is no rule


def test_a_run_reaches_the_accept_length_stated_beside_a_kept_length_rule(tmp_path, capsys):
    text = KEPT.replace("{accept_length: 3}", "{accept_length: 1.4, kept_length: [0.5, 0.5]}").replace(
        "num_requests: 16", "num_requests: 64").replace("output_len: 64", "output_len: 128")
    assert cli.main(["run", _file(tmp_path, text), "--out", str(tmp_path / "o")]) == 0
    import pandas as pd
    summary = pd.read_csv(tmp_path / "o" / "summary.csv").set_index("design")
    assert summary.accept_length["block"] == pytest.approx(1.4, abs=0.05)


# ------------------------------------------------------------- 4. remedies that help, and a shared prompt

def test_weights_past_the_gpu_are_not_told_to_raise_the_fraction(tmp_path, capsys):
    text = ("name: v\nmodel: deepseek-v4.1-flash\nhardware: b200\nengine: {engram_tables: gpu, mem_fraction: 0.99}\n"
            "speculative: {design: none}\nworkload: {concurrency: 1, num_requests: 2, input_len: 256, output_len: 16}\n")
    line = one_line_error(capsys, ["run", _file(tmp_path, text)], "parallel.tp", "more than the GPU's")
    assert "raise engine.mem_fraction" not in line and "engine.engram_tables: host" in line


def test_searchs_no_shard_names_the_engram_tables(tmp_path, capsys):
    text = ("name: v\nmodel: deepseek-v4.1-flash\nhardware: b200\nspeculative: {design: none}\n"
            "workload: {concurrency: 1, num_requests: 2, input_len: 256, output_len: 16}\n")
    one_line_error(capsys, ["search", _file(tmp_path, text), "--gpus", "2", "--no-cache", "--no-plot", "--out",
                            str(tmp_path / "o")], "", "engine.engram_tables: host")


def test_a_shared_prompt_of_more_groups_than_requests_is_warned_of(tmp_path, capsys):
    text = KEPT.replace("input_len: 512, output_len: 64}", "input_len: 2048, output_len: 32, "
                        "shared_prefix: {tokens: 1024, groups: 1000000}}")
    said = _about(warnings_of(capsys, ["cost", _file(tmp_path, text)]), "workload.shared_prefix.groups")
    assert said and "changes almost nothing" in said[0], said
    few = text.replace("groups: 1000000", "groups: 4")
    assert _about(warnings_of(capsys, ["cost", _file(tmp_path, few)]), "workload.shared_prefix.groups") == []
