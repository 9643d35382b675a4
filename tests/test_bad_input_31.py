"""Bad-input campaign 31 (a): the code campaign 30's fixes added, attacked: the quantization reader
(hfconfig/quant.py), the new config.json families, the MoE lookup by work and the config choice by
top_k and width, and the new messages. The quantization reader's holes (tracebacks on a `re:` with
an inline flag, on two `re:` naming one group, on `targets: 5` and on lists where names go; a hang
on a backtracking `re:`; 40 s to read a 45k-entry per-module map; `Linear` beside other targets
dropped; `rope_parameters` unread) are tested in test_hfconfig.py; the MoE ones (a config timed at
a fraction of its neighbours' bandwidth chosen, rows of thousands of tokens read for a decode) in
test_moe_lookup.py and test_monotone_31.py. This file holds the messages.

Probed, and already fine: all 86 config.json files aiconfigurator-core 0.12.0 vendors read or stop
at one line for a family not read; per-part dtypes against the NVIDIA NVFP4 / MIXED_PRECISION and
gpt-oss exclusion lists; weights and KV bytes per token against hand counts (Qwen3-235B NVFP4,
Mixtral, gpt-oss); the qwen3_moe and mixtral readers' bad fields; every malformed
hf_quant_config.json tried; the method-name hints; expert times that never change with context.

Left alone: an hf_quant_config.json that is a folder, a broken link or a FIFO is not read (as
engines find none); quantization errors of a scheme mtpsim does not read ask for model.dtypes at
the scenario (the scheme is valid, only unpriced).
"""
from __future__ import annotations

import pytest

from tests.test_bad_input import LLAMA, one_line_error


def _file(tmp_path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, key, said", [
    (LLAMA.replace("hardware: h200", "hardware: B200"), "hardware", "did you mean b200"),
    (LLAMA.replace("hardware: h200", "hardware: H100"), "hardware", "did you mean h100-sxm"),
    (LLAMA.replace("design: none", "design: NEXTN"), "speculative.design", "lower case: nextn"),
])
def test_names_in_capitals_point_at_the_lower_case_one(tmp_path, capsys, text, key, said):
    one_line_error(capsys, ["run", _file(tmp_path, text)], key, said)


@pytest.mark.parametrize("extra, key", [
    ("engine: {dtype: fp8}\n", "engine.dtype"),
    ("workload: {num_hidden_layers: 4}\n", "workload.num_hidden_layers"),
])
def test_hugging_faces_names_are_pointed_at_in_model_specs_only(tmp_path, capsys, extra, key):
    text = LLAMA.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}\n", "") + extra
    line = one_line_error(capsys, ["run", _file(tmp_path, text)], key, "unknown key")
    assert "Hugging Face" not in line
