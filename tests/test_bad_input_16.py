"""Bad-input campaign 16: DeepSeek-V4.1 (hfconfig/deepseek_v4.py's deepseek_v41 reader, the
CSA2 modes of CompressedAttention, EngramSpec and the catalog entries deepseek-v4.1-flash and
dspark-deepseek-v4.1-flash).

Covered: every new config.json key (compress_ratios 0/1/2/4/128, kv_source_layer_ids,
index_source_layer_ids, candidate_source_layer_id, candidate_topk_blocks, candidate_block_size,
engram_layer_ids, engram_num_embeddings, engram_n_heads, engram_max_ngram_size, engram_head_dim,
quantization_config.expert_dtype, dspark_*) given as strings, floats, bools, nested lists,
mappings, null, empty lists, negative, zero and huge values, duplicates; a V4.1 config without
text_config and with text_config not a mapping; the same for a catalog-style override (`model:
{from: deepseek-v4.1-flash, ...}`: engram fields, mode strings, candidate_pool with mode reuse,
engram flags on MTP layers and on a drafter, taps past the 40 layers); `mtpsim cost`, `run`,
`recommend` and `search` on both; and that the numbers are right (FP8 KV on B200 is 1770 B a
token, the Engram tables are in the weights). Most of it was already one line naming the key.

Found and fixed:
- engram_layer_ids given as {}, 0, false or "" was read as "no Engram" (`if not ids`), silently;
- an engram_num_embeddings entry past 2**40 was refused at the scenario's model.engram.rows.N,
  an index in layer order, not the config's key;
- candidate_topk_blocks x candidate_block_size past the longest context was refused at the
  derived model.attention_kinds.c1_reindex.compressed.candidate_pool, a key no file holds;
- compress ratio 1 or 2 in the MTP tail was read as a CSA2 layer that owns its entries and runs
  no indexer (dense attention over every token), which nothing runs: refused at its entry;
- a catalog MTP layer of mode reuse or reindex was accepted (the order check saw trunk layers only);
- `mtpsim recommend` on a V4.1 config.json (a folder not named deepseek-v4.1-flash) with design
  block died with an IndexError traceback, and `mtpsim search` refused it ("was built for"),
  as did `run` given an accept_length_by_steps curve, while `run` with per_depth accepted it:
  those steps checks skipped checks.as_built_for.
"""
from __future__ import annotations

import json

import pytest

from mtpsim import cli
from tests.test_bad_input import one_line_error, run
from tests.test_deepseek_v41 import MODEL, TEXT, _config

HF = ("name: m\nmodel: {hf_config: ckpt/config.json, name: v41}\nhardware: b200\nparallel: {tp: 8}\n"
      "speculative: {design: none}\nworkload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
DSPARK = ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id", "dspark_target_layer_ids")
TAIL = TEXT["compress_ratios"][:40]

READER = [  # (id, text_config changes (None: the key left out), key, word)
    ("engram-ids-a-mapping", {"engram_layer_ids": {}}, "text_config.engram_layer_ids", "expected a list"),
    ("engram-ids-zero", {"engram_layer_ids": 0}, "text_config.engram_layer_ids", "expected a list"),
    ("engram-ids-false", {"engram_layer_ids": False}, "text_config.engram_layer_ids", "expected a list"),
    ("engram-ids-empty-string", {"engram_layer_ids": ""}, "text_config.engram_layer_ids", "expected a list"),
    ("engram-rows-huge", {"engram_num_embeddings": [384006168, 10**15]}, "text_config.engram_num_embeddings.1",
     "not a row count"),
    ("engram-rows-huge-unsorted-layers", {"engram_layer_ids": [14, 1], "engram_num_embeddings": [10**15, 5]},
     "text_config.engram_num_embeddings.0", "not a row count"),
    ("candidate-pool-huge", {"candidate_topk_blocks": 2**20, "candidate_block_size": 2**20},
     "text_config.candidate_topk_blocks", "candidate pool past"),
    ("ratio-1-in-the-mtp-tail", {"compress_ratios": TAIL + [0, 1, 0], **dict.fromkeys(DSPARK)},
     "text_config.compress_ratios.41", "past the trunk"),
    ("ratio-2-in-the-dspark-tail", {"compress_ratios": TAIL + [2, 0, 0]}, "text_config.compress_ratios.40",
     "past the trunk"),
]


@pytest.mark.parametrize("case,changes,key,word", READER, ids=[c[0] for c in READER])
def test_v41_config_is_one_line_naming_its_key(tmp_path, capsys, case, changes, key, word):
    text = {k: v for k, v in {**TEXT, **changes}.items() if v is not None}
    line = one_line_error(capsys, run(tmp_path, HF, {"ckpt/config.json": json.dumps(_config(text))}), key, word)
    assert "config.json" in line


def test_empty_engram_list_is_still_no_engram(tmp_path, capsys):
    text = {**TEXT, "engram_layer_ids": []}
    assert cli.main(run(tmp_path, HF, {"ckpt/config.json": json.dumps(_config(text))})) == 0
    assert "error" not in capsys.readouterr().err


def _catalog(override: dict, speculative: str = "{design: none}", acceptance: str = "") -> str:
    return (f"name: m\nmodel: {json.dumps({'from': MODEL, **override})}\nhardware: b200\nparallel: {{tp: 8}}\n"
            f"speculative: {speculative}\n{acceptance}"
            "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")


@pytest.mark.parametrize("kind", ["c1_reuse", "c1_reindex"])
def test_an_mtp_layer_that_shares_compressed_entries_is_one_line(tmp_path, capsys, kind):
    mtp = {"num_layers": 1, "layer": {"attention": kind, "ffn": "moe"}}
    text = _catalog({"mtp": mtp, "block_draft": None}, "{design: nextn, steps: 1}", "acceptance: {per_depth: [0.8]}\n")
    one_line_error(capsys, run(tmp_path, text), "model.mtp.layer.attention", "only trunk layers share")


BLOCK = HF.replace("{design: none}", "{design: block, steps: 5}\nacceptance: {per_depth: [0.8, 0.7, 0.6, 0.5, 0.4]}")


def test_recommend_and_search_take_a_config_json_target_with_its_bundled_drafter(tmp_path, capsys):
    """The reader names the model by its folder or model.name, and `run` takes the matching DSpark
    drafter as built for it (checks.as_built_for): recommend and search compare its steps too."""
    argv = run(tmp_path, BLOCK, {"ckpt/config.json": json.dumps(_config())})
    scenario = argv[1]
    assert cli.main(["recommend", scenario, "--batch", "1", "--jobs", "1", "--seeds", "1",
                     "--out", str(tmp_path / "rec")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    grid = (tmp_path / "rec" / "grid.csv").read_text().splitlines()
    assert sorted({int(line.split(",")[2]) for line in grid[1:]}) == [0, 1, 2, 3, 4, 5]
    from mtpsim import scenario as sc
    from mtpsim.search.space import candidate_steps
    s = sc.load(scenario, [], advise_points=False, first_only=True)[0]
    assert candidate_steps(s, None) == [1, 2, 3, 4, 5]


def _cost(tmp_path, capsys, override: dict) -> dict:
    text = _catalog(override)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert cli.main(["cost", str(path)]) == 0
    header, row = capsys.readouterr().out.split("== Memory budget per GPU")[1].strip().splitlines()[:2]
    return {name: row[:header.index(name) + len(name)].split()[-1] for name in header.split()}  # right-aligned


def test_fp8_kv_override_and_engram_tables_are_priced(tmp_path, capsys):
    """A V4.1 scenario with its KV cache as FP8 on B200 keeps V4's 1770 B a token (the FP8 layout);
    the Engram tables (202.76 GB, rows sharded over tp 8) are in the target's weights."""
    assert float(_cost(tmp_path, capsys, {"dtypes": {"kv_cache": "fp8"}})["kv_bytes_per_token"]) == 1770
    full = float(_cost(tmp_path, capsys, {})["target_weights_GB"])
    tiny = float(_cost(tmp_path, capsys, {"engram": {"rows": [1, 1]}})["target_weights_GB"])
    assert full - tiny == pytest.approx((384006168 + 384016682) * 256 * (1 + 1 / 32) / 8 / 1e9, rel=1e-3)


def test_an_accept_length_curve_takes_a_config_json_target_with_its_bundled_drafter(tmp_path, capsys):
    """acceptance_checks._check_curve (checks.py then) tried each step against the model by its own name: 'steps 1 is beyond
    what block runs', for the drafter `run` itself took as built for it."""
    text = BLOCK.replace("{design: block, steps: 5}", "{design: block, steps: 3}").replace(
        "per_depth: [0.8, 0.7, 0.6, 0.5, 0.4]", "accept_length_by_steps: {1: 1.7, 2: 2.2, 3: 2.6}")
    assert cli.main(run(tmp_path, text, {"ckpt/config.json": json.dumps(_config())})) == 0
    assert "error" not in capsys.readouterr().err
