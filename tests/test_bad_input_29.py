"""Bad-input campaign 29: the files that describe a deployment beside the scenario: config.json
(`model.hf_config`), spec files and `from:` specs, acceptance histograms, traces, and `--peer`.

Probed, and already fine (about 330 probes, no traceback or hang): weights priced against hand
counts (Llama-3.1-8B 16.06 GB, tied 15.01, FP8 9.08; DeepSeek-V2-Lite 31.41 GB); every supported
family's released config pricing as its catalog entry; missing, mistyped, zero, huge and
non-dividing sizes; quantization configs that need `model.dtypes`; layer_types of the wrong length
or kind; odd hardware figures; histogram and trace cells of every bad kind, in every format;
a 1,000,000-row trace; and `--peer` notes for what aiconfigurator cannot express.

Found and fixed:
- a qwen3 config without head_dim was priced at hidden_size / heads (80-wide heads for a
  Qwen3-32B shape: 61 GB of weights and 1.6e5 KV bytes a token, where the catalog's qwen3-32b
  holds 65.5 GB and 2.6e5): transformers' Qwen3Config defaults it to 128, and so does the reader;
- `hardware: {from: ./my-gpu.yaml}` dropped the file's `profiles` without a word and priced by the
  roofline, where `hardware: ./my-gpu.yaml` refused the same file (a renamed copy of h200.yaml
  naming h200's profiles): refused alike;
- a model_type mtpsim does not read fell back to architectures[0]'s reader in silence, so
  `model_type: qwen3_moe` under `Qwen3ForCausalLM` was priced as a 6.7 GB dense model (the real one
  is ~61 GB): the fallback stays (a fine-tune's own model_type) and is said at `model_type`;
- (questionable, mended) Mooncake rows naming fewer block ids than their prompt's full blocks
  were read as given without a word (the blocks past the ids never cached): one warning counts them;
- (questionable, mended) a CSV column missing only by spaces or case (`accepted , COUNT`) was
  `missing column` beside a header that visibly held it: the error names the header it found.

Noticed, and left alone: a histogram header with spaces is still refused (the reader's per-cell
error lookup keys on the header as written), where a trace's is stripped; a ragged CSV row's error quotes pandas' text
and names no row; a trace whose span dwarfs its busy time (28 years between two rows, speed 1e-9)
gets no warning; a `--peer` note
lists `aliases` among the differences of a config-read model; FP8's modules_to_not_convert is not
read (every linear priced FP8); a draft's gqa input_size 1 is accepted; a hardware file without an
FP8 rate prices FP8 GEMMs at BF16's without a note; a Qwen3-Next full_attention_interval past the
layers gives an all-linear model (transformers' rule) without a word.
"""
from __future__ import annotations

import json
import shutil

from mtpsim import catalog_lookup, cli
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

LOAD = "workload: {arrival: closed, concurrency: 4, num_requests: 8, input_len: 512, output_len: 64}\n"
QWEN3_32B_NO_HEAD_DIM = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 5120,
                         "intermediate_size": 25600, "num_attention_heads": 64, "num_key_value_heads": 8,
                         "num_hidden_layers": 64, "vocab_size": 151936, "max_position_embeddings": 40960,
                         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def _scenario(tmp_path, model: str, hardware: str = "h200") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: p\nmodel: {model}\nhardware: {hardware}\nparallel: {{tp: 1}}\n{LOAD}")
    return str(path)


def _memory(capsys, argv: list[str]) -> dict:
    """`cost`'s memory row for `none`, by column."""
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("== Memory budget per GPU")
    header, row = out[at + 1], out[at + 2]
    names = header.split()
    values = row.split()  # fraction_source holds spaces: read its neighbours from both ends
    return {"target_weights_GB": float(values[-8]), "kv_bytes_per_token": float(values[-5]), "names": names}


def test_a_qwen3_config_without_head_dim_has_qwen3s_heads(tmp_path, capsys):
    """Before: 60.99 GB and 1.638e+05 KV bytes a token against the catalog's 65.52 GB and 2.621e+05."""
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_32B_NO_HEAD_DIM))
    read = _memory(capsys, ["cost", _scenario(tmp_path, f"{{hf_config: {tmp_path / 'config.json'}}}")])
    catalogued = _memory(capsys, ["cost", _scenario(tmp_path, "qwen3-32b")])
    assert read["names"][-8:][0] == "target_weights_GB" and read["names"][-5] == "kv_bytes_per_token"
    assert read["target_weights_GB"] == catalogued["target_weights_GB"] == 65.52, (read, catalogued)
    assert read["kv_bytes_per_token"] == catalogued["kv_bytes_per_token"] == 2.621e5, (read, catalogued)


def test_a_from_file_naming_another_gpus_profiles_is_refused_as_the_file_is(tmp_path, capsys):
    """Before: the path form was refused, the `from:` form ran on the roofline without a word."""
    gpu = tmp_path / "my-gpu.yaml"
    shutil.copy(catalog_lookup.find("hardware", "h200"), gpu)
    gpu.write_text(gpu.read_text().replace("name: h200", "name: myh", 1))
    assert "profiles:" in gpu.read_text()
    for hardware in (str(gpu), f"{{from: {gpu}}}"):
        one_line_error(capsys, ["cost", _scenario(tmp_path, "llama-3.1-8b", hardware)], "profiles.sglang",
                       "was measured on 'h200', not on the scenario's hardware 'myh'")


def test_a_model_type_read_by_another_familys_reader_is_said(tmp_path, capsys):
    """Before: priced as a dense 6.7 GB model, the only warning an unrelated one."""
    config = {**QWEN3_32B_NO_HEAD_DIM, "model_type": "qwen3_omni_moe", "hidden_size": 2048, "head_dim": 128,
              "num_attention_heads": 32, "num_key_value_heads": 4, "num_hidden_layers": 48, "intermediate_size": 6144,
              "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8}
    (tmp_path / "config.json").write_text(json.dumps(config))
    warned = warnings_of(capsys, ["cost", _scenario(tmp_path, f"{{hf_config: {tmp_path / 'config.json'}}}")])
    said = [w for w in warned if ": model_type: 'qwen3_omni_moe' is not a family mtpsim reads" in w]
    assert said and "'Qwen3ForCausalLM' (qwen3)" in said[0], warned
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "qwen3"}))  # its own family: quiet
    assert not [w for w in warnings_of(capsys, ["cost", _scenario(tmp_path, f"{{hf_config: {tmp_path / 'config.json'}}}")])
                if ": model_type: " in w]


def test_a_csv_header_off_by_spaces_or_case_says_what_it_found(tmp_path, capsys):
    """Before: `accepted: missing column (columns needed: accepted, count)` beside a header that
    visibly holds `accepted ` (a trace's header is stripped; a histogram's is read as written)."""
    (tmp_path / "h.csv").write_text("accepted , COUNT\n0,10\n1,20\n")
    text = ("name: h\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
            "speculative: {design: nextn, steps: 1, draft: eagle3-llama-3.1-8b}\n"
            f"acceptance: {{histogram: {tmp_path / 'h.csv'}}}\n{LOAD}")
    (tmp_path / "s.yaml").write_text(text)
    one_line_error(capsys, ["cost", str(tmp_path / "s.yaml")], "accepted", "the header has 'accepted '")


def test_mooncake_rows_naming_fewer_blocks_than_their_prompt_fills_are_said(tmp_path, capsys):
    """Before: read as given without a word, the blocks past their ids never cached."""
    rows = ('{"timestamp": 0, "input_length": 1100, "output_length": 16, "hash_ids": [1]}\n'
            '{"timestamp": 10, "input_length": 1100, "output_length": 16, "hash_ids": [1, 2]}\n')
    (tmp_path / "t.jsonl").write_text(rows)
    text = f"name: m\nmodel: llama-3.1-8b\nhardware: h100-sxm\nspeculative: {{design: none}}\n" \
           f"workload: {{arrival: trace, trace: {tmp_path / 't.jsonl'}}}\n"
    (tmp_path / "s.yaml").write_text(text)
    said = [w for w in warnings_of(capsys, ["cost", str(tmp_path / "s.yaml")]) if ": hash_ids: " in w]
    assert len(said) == 1 and "1 row(s) name fewer block ids" in said[0], said
    (tmp_path / "t.jsonl").write_text(rows.replace('"hash_ids": [1]}', '"hash_ids": [1, 2]}'))
    (tmp_path / "s.yaml").write_text(text.replace("name: m", "name: m2"))  # a new file version: scanned again
    assert not [w for w in warnings_of(capsys, ["cost", str(tmp_path / "s.yaml")]) if ": hash_ids: " in w]
