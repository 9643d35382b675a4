"""Bad-input campaign 35: ~380 probes of the code the previous stop changed (DeepSeek-V4's engine
rules, the measured mHC and Gated DeltaNet families, quantization patterns on `regex`, tagged YAML
values, one-point sweeps, trees in recommend). The holes taken, each tested below:
- an explicit !!bool / !!timestamp tag on a value that is none ended in a Python traceback in
  every YAML reader; !!int abc was called "a YAML 1.1 number spelling" (H1, H16);
- quantization patterns: a huge repeat count expanded at compile time (gigabytes, minutes), one
  past the C int range or an invalid MIXED_PRECISION key ended in a traceback, regex-only syntax
  (fuzzy matches, POSIX classes) was validated by `re` and run by `regex` with another meaning, and
  each sweep point matched the patterns again under a budget of its own (H2-H6);
- benchmarks/deepseek_v4_cookbook.py --jobs 0 ended in a traceback (H15).
"""
from __future__ import annotations

import json

import pytest

from tests.test_bad_input import one_line_error, run
from tests.test_hfconfig import LLAMA_31_8B, read

HEAD = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
        "workload: {arrival: closed, concurrency: VALUE, num_requests: 4, input_len: 64, output_len: 4}\n")


@pytest.mark.parametrize("value, word", [("!!bool 2", "tagged !!bool but is not true or false"),
                                         ("!!timestamp notadate", "tagged !!timestamp but is not a date"),
                                         ("!!int abc", "tagged !!int but is not a number"),
                                         ('!!float "nan"', "tagged !!float but is not a number")])
def test_a_tag_on_a_value_that_is_none_is_one_line(tmp_path, capsys, value, word):
    one_line_error(capsys, run(tmp_path, HEAD.replace("VALUE", value)), "workload.concurrency", word)


def test_a_date_past_the_calendar_is_one_line(tmp_path, capsys):
    one_line_error(capsys, run(tmp_path, HEAD.replace("VALUE", "!!timestamp 2001-13-45")), "workload.concurrency",
                   "month must be")


FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}


@pytest.mark.parametrize("pattern, word", [
    ("re:x{100000000}", "more than 10,000 times"),        # compiled to gigabytes before any budget
    ("re:a{4294967295}", "more than 10,000 times"),       # an OverflowError traceback
    ("re:(?:k_proj){e<=1}", "only the regex package reads"),  # a fuzzy match under regex, a literal under re
    ("re:layers\\.[[:digit:]]+\\.self_attn", "only the regex package reads"),
    ("re:[[]", "only the regex package reads"),           # re's FutureWarning printed raw
])
def test_an_expression_the_two_matchers_read_apart_or_that_cannot_compile_is_refused(tmp_path, pattern, word):
    from mtpsim.errors import ScenarioError
    with pytest.raises(ScenarioError) as err:
        read(tmp_path, {**LLAMA_31_8B, "quantization_config": {**FP8, "modules_to_not_convert": [pattern]}})
    assert err.value.key == "quantization_config.modules_to_not_convert.0" and word in err.value.reason


def test_a_mixed_precision_key_is_checked_as_a_pattern(tmp_path, capsys):
    """`quantized_layers: {"re:(": ...}` ended in a regex.error traceback: its keys were never checked."""
    quant = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {"re:(": {"quant_algo": "FP8"}}}}
    files = {"config.json": json.dumps(LLAMA_31_8B), "hf_quant_config.json": json.dumps(quant)}
    text = HEAD.replace("VALUE", "1").replace("model: llama-3.1-8b", "model: {hf_config: ./config.json}")
    one_line_error(capsys, run(tmp_path, text, files), "quantization.quantized_layers.re:(", "not a regular expression")


def test_a_sweep_matches_a_configs_patterns_once(tmp_path):
    """Each sweep point read its config.json again and matched its patterns under a budget of its
    own: a pattern list taking seconds took a sweep's points times that (a hang at 20 points)."""
    from mtpsim.hfconfig import patterns as quant
    quant.patterns_of.cache_clear()
    config = {**LLAMA_31_8B, "quantization_config": {**FP8, "modules_to_not_convert": ["re:lm_head", "*.mlp.gate*"]}}
    read(tmp_path, config)
    first = quant.patterns_of.cache_info()
    read(tmp_path, config)
    again = quant.patterns_of.cache_info()
    assert again.hits > first.hits and again.misses == first.misses


def test_the_v4_benchmark_refuses_a_job_count_it_cannot_run(capsys):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import deepseek_v4_cookbook
    for bad in ("0", "-3", "abc"):
        with pytest.raises(SystemExit) as exit_:
            deepseek_v4_cookbook.main(["--jobs", bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--jobs" in err[0], err


def test_a_one_point_sweep_warns_what_depends_on_its_key(tmp_path, capsys):
    """`sweep: {speculative.design: [none]}` lost the warnings of the acceptance and draft it
    ignores, which setting the design directly gives (H7)."""
    from mtpsim import cli, errors
    errors._warned.clear()
    text = ("name: s\nmodel: llama-3.1-8b\nhardware: h100-sxm\n"
            "speculative: {design: nextn, steps: 2, draft: eagle3-llama-3.1-8b}\nacceptance: {accept_length: 2.0}\n"
            "workload: {arrival: closed, concurrency: 1, num_requests: 2, input_len: 64, output_len: 4}\n"
            "sweep: {speculative.design: [none]}\n")
    assert cli.main(["cost", run(tmp_path, text)[1]]) == 0
    err = capsys.readouterr().err
    assert "sweep.speculative.design: acceptance: design none drafts nothing" in err
    assert "sweep.speculative.design: speculative.draft: design none takes no external draft" in err
