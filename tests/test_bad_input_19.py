"""Bad-input campaign 19: the newest features: `cost --prompt N [--ops]` (report.py prefill_table,
_print_prefill), profiles' prefill_attention family (a user profile's tables and meta.yaml), engine
files in a user catalog (version rules, sections), the engine keys, block drafters with kept-length
curves and steps_by_batch, Qwen3.8-Flash-Next's and DeepSeek-V4.1's Engram and hyper-connections
with `{from: X, ...}` overrides and config.json, and trace files.

Probed, and already one line naming the key (or fine): --prompt 0, -5, 1.5, many, past 2**24 and
past max_context, with --ops, --batch and --context, on a disaggregated scenario and on every
committed scenario (trees, blocks, frozen_kv, multi_layer, parallel_heads, Engram host tables, CPU
profiles without prefill rows); prefill_attention tables with NaN, inf, negative, 0, huge or text
times, q 0 or 16.5, heads 0, kind swa, kv_dtype int3, the heads column missing, a header alone,
one shape twice, the MLA rows dropped or cut to one or to q <= 64 (decode rows, labelled), times
falling with q, families.prefill_attention null, -5, true, text, left out beside its file
(warned), families as a list; engine-file rules since past until, equal, unknown, a float,
`latest`, a post release, values of the wrong type, NaN, null, true for an int, a rule not a
mapping, rules as a mapping, no field, fields into host or a deep or empty path, into
prefix_cache / dp_routing / kv_pool null or missing, empty names and sources, extra keys;
versions.default unknown, known unsorted, twice or `v0.4.x`; engine.mem_fraction 0, 1.5, NaN,
text, true, 1e-300 (warned); engine.version 0.5, 0.512, v/V, rc, dev, +local, epoch, post,
fullwidth or Arabic digits, a trailing space, 0.5.012, 0.5.12.0, 50 digits, a list;
engram_tables text, on a model without tables (warned), each value with each engine kind, with
no or a slow host link; chunked_prefill_tokens 0, 8192.0, 8192.5; mixed_batches true, text or a
mapping with each engine kind; ignore_rules unknown or twice; graph, EPLB, two-batch-overlap,
routing and overlap settings where moot (warned); a user vLLM file's cuda_graph.max 2**24
unpadded (6 s); block drafters with steps past or under the block, topk 2, no draft, another
role's draft, built_for, target_num_layers, backbone or vocabulary of another target, taps -2,
-1, unsorted; kept_length longer than the steps (warned), all on 0 (warned), NaN, negative, with
a controller, a tree, forced acceptance, a 0-step policy (warned), spread or a steps sweep;
steps_by_batch keys 0, "1", 1.0, true, 0x1, " 1", 100,001, unsorted, twice, no 1, empty, values
past the steps, null; accept_length 7.5 over 6 steps, accept_length_by_steps short or with gaps;
overrides of the Engram (rows 2, 0, 3, null; engram null; no Engram layer; scale_block 7 or
1000), mtp (null, 0 layers, an unknown kind), hc_lowrank without hc_mult; V4.1 config.json with
hc_mult "4", 0 or 4.0, Engram heads, widths, orders and rows wrong or past the ids (warned),
dspark_block_size 0, no taps, index_topk 0 or 1e12, a qwen4_exp config; traces with a BOM, in
UTF-16 or Latin-1, unsorted, negative, huge, 10.5 or 0-token lengths, a header alone, empty,
fields extra or missing, NaN or inf times, quoted cells, CRLF or CR, a column twice, tabs,
semicolons; JSON lines broken, hash_ids short, text, negative, 1.5, true, 1e400 or huge, keys
twice, arrays, 100,000-deep nesting, text times, NaN; Azure dates invalid or with mixed zones;
requests at the KV pool's edge with shared prefixes, vLLM, TensorRT-LLM, batch and Poisson loads.

Found and fixed:
- `cost --prompt` priced each prefill chunk in turn: chunks of 1 token made a 100,000-token
  prompt 30 s (and millions of op rows), the flag's longest hours; refused past 10,000 chunks, at
  engine.chunked_prefill_tokens where the scenario gives the chunk (cost_command.py _prefill_chunks);
- `cost --prompt` past the KV pool that prefills it (24,289 tokens of 130,000) printed the prefill
  without the warning --context gets; and past a draft's max_context (as --context) without a word,
  where `run` refuses both;
- a model whose layer kinds keep different hyper-connection copies (hc_mult 2 and 4) priced each
  layer's residual mix and Engram with its own count: the copies are the model's (specs.py);
- a QSA index_block that does not divide index_topk (4096 over 2048) ran, the attention still
  reading index_topk tokens (layer_specs.py);
- a profile's families.<family>.rows of `many` or 15342.0 turned off the check that the table
  holds the rows meta.yaml lists, without a word (profile.py check_rows);
- a normal or lognormal length whose mean lies outside min..max (warned: every draw is clipped)
  was still the length cost priced (a context of 100,000 where every prompt is 10 tokens; 0 for a
  mean of 0.5) and search's memory fit read (workload_schema.mean_length);
- TensorRT-LLM prefills a prompt whole and refuses one past its token budget (engines/trtllm.yaml);
  a workload's, a trace's or `cost --prompt`'s prompt past the whole budget ran cut at it without
  a word, and the batch-wait warning cut it too (`prompts of up to 16 tokens` of 200-token ones);
- a disaggregated run checked its prefill pool with the prompt of a trace's longest request, not
  its longest prompt: a 30,000-token prompt past the pool beside a short prompt with a long answer
  was a RuntimeError traceback, `2 requests never finished` (sim/arrivals.py, sim/preflight.py);
- a request a few tokens past the KV pool was refused with two equal figures (`needs 3.98 GB ...,
  more than the 3.98 GB`);
- engine.batch_wait (merged from main during the campaign) with max_tokens_ratio 0 ran without a
  word, where every step mixing a prompt into decoding reaches 0 x the budget and releases it at
  once, as a timeout of 0 is warned of (its timeout_iters -1, 40.5, text, a ratio of NaN or 1.5,
  true, unknown keys, vLLM and SGLang, attention DP, disaggregation, mixing off, a sweep, seeds,
  search, recommend and a steps policy were already fine).
"""
from __future__ import annotations

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_9e import _scenario

QUICKSTART = "scenarios/quickstart.yaml"
SEVENTY_B = """\
name: l
model: llama-3.1-70b
hardware: h100-sxm
parallel: {tp: 2}
speculative: {design: none}
engine: {mem_fraction: 0.9}
workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 1000, output_len: 10}
"""


# ------------------------------------------------------------- 1. a prompt of more chunks than cost can price

def test_a_prompt_of_too_many_chunks_names_the_chunk(tmp_path, capsys):
    """Before: `cost --prompt 100000` with chunks of 1 token priced each pass 100,000 times, one
    chunk after another (30 s, and millions of op rows with --ops); the flag's longest prompt,
    2**24 tokens, took hours."""
    text = SEVENTY_B.replace("engine: {mem_fraction: 0.9}", "engine: {chunked_prefill_tokens: 8}")
    line = one_line_error(capsys, ["cost", _scenario(tmp_path, text), "--prompt", "100000"],
                          "engine.chunked_prefill_tokens", "into 12,500, each priced in turn")
    assert line.startswith(f"mtpsim: error: {tmp_path / 's.yaml'}: "), line
    one_line_error(capsys, ["cost", QUICKSTART, "--prompt", "100000", "--set", "engine.chunked_prefill_tokens=1"],
                   "engine.chunked_prefill_tokens", "cost prices at most 10,000")


# ------------------------------------------------------------- 2. a prompt the KV pool cannot hold

@pytest.mark.parametrize("layout, pool", [("parallel: {tp: 2}\n", "the KV pool"),
                                          ("disaggregation: {prefill: {tp: 2}, decode: {tp: 4}, link: free}\n",
                                           "the prefill GPUs' KV pool")])
def test_a_prompt_past_the_kv_pool_is_warned_of(tmp_path, capsys, layout, pool):
    """Before: `cost --prompt 130000` where the KV pool holds 24,289 tokens printed the prefill of a
    prompt no engine admits, without the word --context gets (and --prompt past max_context gets)."""
    text = SEVENTY_B.replace("parallel: {tp: 2}\n", layout)
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, text), "--prompt", "130000"])
    said = f"mtpsim: warning: --prompt: 130000 tokens do not fit {pool} (3.98 GB per GPU, 24289 tokens)"
    assert any(x.startswith(said) for x in lines), lines
    assert warnings_of(capsys, ["cost", _scenario(tmp_path, text), "--prompt", "20000"]) == []


# ------------------------------------------------------------- 3. hyper-connection copies that differ by layer

P7 = """\
name: p7
model: {from: qwen3.8-flash-next, attention_kinds: {linear: {hc_mult: 2}}}
hardware: h100-sxm
engine: {kind: vllm, engram_tables: host_per_rank}
parallel: {tp: 4}
speculative: {design: nextn, steps: 2}
acceptance: {accept_length: 1.37}
workload: {arrival: closed, concurrency: 8, num_requests: 16, input_len: 1024, output_len: 256}
"""


@pytest.mark.parametrize("model, key", [
    ("{from: qwen3.8-flash-next, attention_kinds: {linear: {hc_mult: 2}}}", "model.attention_kinds.qsa.hc_mult"),
    ("{from: deepseek-v4.1-flash, attention_kinds: {c2: {compressed: {hc_mult: 2}}}}",
     "model.attention_kinds.c2.compressed.hc_mult"),
])
def test_hyper_connection_copies_that_differ_by_layer_are_refused(tmp_path, capsys, model, key):
    """Before: Qwen3.8-Flash-Next with its Gated DeltaNet layers at hc_mult 2 and its QSA layers at
    4 ran, each layer's gated residual (and the Engram's wkv) priced with its own count of
    residual copies, where the copies are the model's, carried from one layer to the next."""
    text = P7.replace("{from: qwen3.8-flash-next, attention_kinds: {linear: {hc_mult: 2}}}", model)
    if "deepseek" in model:
        text = text.replace("hardware: h100-sxm", "hardware: b200").replace("speculative: {design: nextn, steps: 2}",
                                                                          "speculative: {design: block, steps: 5}")
    one_line_error(capsys, ["cost", _scenario(tmp_path, text)], key, "copies of the residual stream where kind")


@pytest.mark.parametrize("block", [4096, 3])
def test_a_qsa_block_that_does_not_divide_its_budget_is_refused(tmp_path, capsys, block):
    """Before: index_block 4096 over index_topk 2048 ran, the indexer keeping half a block a query
    and the attention still reading 2048 tokens; 3 left 2 tokens no block brings."""
    text = P7.replace("attention_kinds: {linear: {hc_mult: 2}}", f"attention_kinds: {{qsa: {{index_block: {block}}}}}")
    one_line_error(capsys, ["cost", _scenario(tmp_path, text)], "model.attention_kinds.qsa.index_block",
                   f"{block} does not divide index_topk 2048")


# ------------------------------------------------------------- 4. a table's row count in another form

@pytest.mark.parametrize("rows", ["many", "15342.0", "0"])
def test_a_families_row_count_that_is_no_count_is_refused(tmp_path, capsys, rows):
    """Before: meta.yaml's `families.prefill_attention.rows: many` (or 15342.0) passed, and the check
    that the table holds the rows meta.yaml lists (a table cut short or edited) was off without a word."""
    from tests.test_bad_input_7 import _profile
    scenario = _profile(tmp_path, "prefill_attention", lambda table: None)
    meta = tmp_path / "prof" / "meta.yaml"
    text = meta.read_text()
    assert "  prefill_attention:\n    rows: 15342\n" in text
    meta.write_text(text.replace("  prefill_attention:\n    rows: 15342\n", f"  prefill_attention:\n    rows: {rows}\n"))
    one_line_error(capsys, ["cost", scenario, "--prompt", "3000"], "families.prefill_attention.rows",
                   "is not a count of rows")


# ------------------------------------------------------------- 5. a context past the draft's window

@pytest.mark.parametrize("flag", ["--prompt", "--context"])
def test_cost_past_the_drafts_context_window_is_warned_of(tmp_path, capsys, flag):
    """Before: `cost --prompt 20000` (or --context) with a draft of max_context 8192 priced the
    draft's passes over 20,000 tokens without a word, where `run` refuses such a request at
    workload.input_len (checks.py reads the draft's window as well as the target's)."""
    from tests.test_bad_input_7 import DENSE
    text = DENSE.replace("draft: eagle3-llama-3.1-8b", "draft: {from: eagle3-llama-3.1-8b, max_context: 8192}")
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, text), flag, "20000"])
    assert any(f"{flag}: 20000 is past the max_context 8192 of the draft 'eagle3-llama-3.1-8b' (speculative.draft)"
               in x for x in lines), lines


# ------------------------------------------------------------- 6. a mean length outside its own bounds

@pytest.mark.parametrize("length, context", [("{dist: normal, mean: 100000, std: 1, max: 10}", 10),
                                             ("{dist: lognormal, mean: 0.5, std: 0.1, max: 10}", 1)])
def test_cost_prices_a_context_the_clipped_lengths_reach(tmp_path, capsys, length, context):
    """Before: a normal input_len of mean 100,000 and max 10 (every draw clipped to 10, as the
    warning says) was priced by `cost` at a context of 100,000 tokens, and a mean of 0.5 at a
    context of 0 (schema.mean_length took int(mean), read by cost, search's memory fit and the
    run's load estimate alike)."""
    from tests.test_bad_input_7 import DENSE
    text = DENSE.replace("input_len: 64", f"input_len: {length}")
    assert cli.main(["cost", _scenario(tmp_path, text)]) == 0
    out, err = capsys.readouterr()
    assert "workload.input_len.mean" in err and "lies outside min" in err, err
    assert f", context {context}, engine" in out.splitlines()[0], out[:300]


# ------------------------------------------------------------- 7. a prompt past TensorRT-LLM's whole budget

TRT = """\
name: t
model: llama-3.1-8b
hardware: h100-sxm
cost: {model: roofline}
engine: {kind: trtllm}
speculative: {design: none}
workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 20000, output_len: 8}
"""


@pytest.mark.parametrize("edit, key, budget", [
    (lambda t: t, "workload.input_len", 8192),
    (lambda t: t.replace("{kind: trtllm}", "{kind: trtllm, chunked_prefill_tokens: 4096}"), "engine.chunked_prefill_tokens",
     4096),
    (lambda t: t.replace("workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 20000, output_len: 8}",
                         "workload: {arrival: trace, trace: t.csv}"), "workload.trace", 8192),
])
def test_a_prompt_past_an_engines_whole_budget_is_warned_of(tmp_path, capsys, edit, key, budget):
    """Before: TensorRT-LLM (no chunked context: it prefills a prompt whole, and refuses one past
    max_num_tokens, engines/trtllm.yaml) ran 20,000-token prompts cut into chunks of its 8,192-token
    budget without a word; whole_prompts_past_budget judged only the prompts within the budget."""
    def warned(longest: int) -> list[str]:
        # the longest prompt is not the longest request (10 + 30,000)
        (tmp_path / "t.csv").write_text(f"arrival_s,input_len,output_len\n0,{longest},5\n1,10,30000\n")
        return warnings_of(capsys, ["cost", _scenario(tmp_path, edit(TRT).replace("20000", str(longest)))])
    said = (f": {key}: prompts of up to 20000 tokens are past trtllm's {budget}-token budget a step, and it prefills "
            "a prompt whole: the engine refuses such a prompt")
    assert any(said in x for x in warned(20000)), warned(20000)
    assert warned(4000) == []


def test_cost_prompt_past_an_engines_whole_budget_is_warned_of(tmp_path, capsys):
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, TRT.replace("input_len: 20000", "input_len: 64")),
                                 "--prompt", "20000"])
    assert any("--prompt: 20000 tokens are past trtllm's 8192-token budget a step" in x for x in lines), lines


# ------------------------------------------------------------- 8. a trace's longest prompt on the prefill pool

def test_a_traces_longest_prompt_is_checked_against_the_prefill_pool(tmp_path, capsys):
    """Before: a disaggregated run checked its prefill pool with the prompt of the trace's longest
    request (10 tokens, with a 60,000-token answer), not its longest prompt (30,000 tokens, past
    the pool's 24,289): a RuntimeError traceback, `2 requests never finished`."""
    text = SEVENTY_B.replace("parallel: {tp: 2}\n", "disaggregation: {prefill: {tp: 2}, decode: {tp: 4}, link: free}\n").replace(
        "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 1000, output_len: 10}",
        "workload: {arrival: trace, trace: t.csv}")
    (tmp_path / "t.csv").write_text("arrival_s,input_len,output_len\n0,30000,5\n1,10,60000\n")
    one_line_error(capsys, ["run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")], "disaggregation.prefill",
                   "a request of 30000 tokens needs 4.92 GB of KV per GPU")


def test_the_batch_wait_warning_no_longer_cuts_the_prompt_at_the_budget(tmp_path, capsys):
    """Before: beside the running batch, whole_prompts_past_budget took 200-token prompts as 16 (cut
    at a 16-token budget) and said `prompts of up to 16 tokens ... (a budget of 268 tokens admits
    every prompt beside a full batch)`, a budget that admits none of them."""
    text = TRT.replace("concurrency: 1, num_requests: 2, input_len: 20000", "concurrency: 64, num_requests: 64, input_len: 200")
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, text.replace("{kind: trtllm}",
                                                                          "{kind: trtllm, chunked_prefill_tokens: 16}"))])
    assert not any("prompts of up to 16 tokens" in x for x in lines), lines
    assert any("prompts of up to 200 tokens are past trtllm's 16-token budget" in x for x in lines), lines


# ------------------------------------------------------------- 9. a request a token past the pool

def test_a_request_a_token_past_the_pool_says_how_far(tmp_path, capsys):
    """Before: `a request of 24289 tokens needs 3.98 GB of KV per GPU, more than the 3.98 GB the
    engine's KV pool holds`: two equal figures for the reason."""
    text = SEVENTY_B.replace("input_len: 1000, output_len: 10", "input_len: 24279, output_len: 10")
    one_line_error(capsys, ["run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")], "workload",
                   "needs 3.97967 GB of KV per GPU, more than the 3.97966 GB the engine's KV pool holds")


# ------------------------------------------------------------- 10. a batch wait that never holds a prompt

@pytest.mark.parametrize("ratio", ["0", "1.0e-9"])
def test_a_batch_wait_ratio_every_step_reaches_is_warned_of(tmp_path, capsys, ratio):
    """Before: engine.batch_wait {timeout_iters: 40, max_tokens_ratio: 0} ran without a word, where
    every step that mixes a prompt into decoding holds at least 0 x 8192 tokens and releases its
    prompts at once (PyExecutor._waiting_requests waits only below the ratio), as a timeout of 0 is
    warned of."""
    text = TRT.replace("{kind: trtllm}", f"{{kind: trtllm, batch_wait: {{timeout_iters: 40, max_tokens_ratio: {ratio}}}}}")
    text = text.replace("concurrency: 1, num_requests: 2, input_len: 20000", "concurrency: 16, num_requests: 16, input_len: 1000")
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, text)])
    assert any(": engine.batch_wait: max_tokens_ratio " in x and "x the 8192-token budget" in x
               and "it changes nothing" in x for x in lines), lines
