"""`mtpsim cost --prompt N`: the prefill of one prompt of N tokens, pass by pass (and op by op with
--ops), in the engine's prefill chunks, each after the ones before it in KV; on the prefill pool
where the scenario disaggregates."""
from __future__ import annotations

import numpy as np
import pytest

from mtpsim import cli, errors
from mtpsim.costs import build_pricer
from mtpsim.designs import DesignShape, prefill_passes
from mtpsim.report import prefill_table
from mtpsim.scenario import validate
from tests.test_bad_input_2 import parse_error

QUICKSTART = "scenarios/quickstart.yaml"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    errors._warned.clear()  # warn() says each message once per process


def scenario():
    return validate({"name": "p", "model": "llama-3.1-8b", "hardware": "h100-sxm",
                     "speculative": {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b"},
                     "acceptance": {"per_depth": [0.8, 0.6]},
                     "workload": {"concurrency": 4, "num_requests": 8, "input_len": 1000, "output_len": 100}})


def test_a_prompt_is_priced_in_chunks_each_after_the_ones_before():
    s = scenario()
    pricer, design = build_pricer(s), DesignShape.of(s.speculative)
    passes, ops = prefill_table(pricer, design, 20000, 8192)
    target = passes[passes["pass"] == "prefill:target"].iloc[0]
    assert target.chunks == 3
    shape = next(p for p in prefill_passes(design) if p.part == "target")
    chunks = [(8192, 0), (8192, 8192), (3616, 16384)]
    want = sum(pricer.price(shape, np.array([n]), np.array([done])).time_s for n, done in chunks)
    assert target.time_ms == pytest.approx(want * 1e3, rel=1e-12)
    # each chunk attends to more cached KV: the last full chunk costs more than the first
    first, second = (pricer.price(shape, np.array([8192]), np.array([done])).time_s for done in (0, 8192))
    assert second > first
    # every chunk's ops are listed: the op counts of one layer kind add up over the three chunks
    cores = ops[(ops["pass"] == "prefill:target") & (ops.op == "attn.core")]
    assert int(cores["count"].sum()) == 3 * s.specs.model.num_layers
    assert set(passes["pass"]) == {"prefill:target", "prefill:mtp"}  # the draft prefills its own KV too


def test_cost_prints_the_prefill_section_and_its_ops(capsys):
    assert cli.main(["cost", QUICKSTART, "--prompt", "3000", "--ops"]) == 0
    out = capsys.readouterr().out
    assert "== Prefill of one 3000-token prompt" in out
    assert "== Ops of that prefill" in out
    section = out[out.index("== Prefill of one"):]
    assert "prefill:target" in section and "attn.core" in section


def test_without_the_flag_there_is_no_prefill_section(capsys):
    assert cli.main(["cost", QUICKSTART]) == 0
    assert "Prefill of one" not in capsys.readouterr().out


def test_a_disaggregated_scenario_prefills_on_its_prefill_pool(capsys):
    assert cli.main(["cost", "scenarios/disagg-gb200-1p3d.yaml", "--prompt", "2000"]) == 0
    out = capsys.readouterr().out
    assert "and a prompt on the prefill pool" in out and "prompt on the prefill pool (" in out


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "many", "99999999999"])
def test_a_bad_prompt_is_one_line(capsys, value):
    assert "--prompt" in parse_error(capsys, ["cost", QUICKSTART, "--prompt", value])


def test_a_prompt_past_the_context_limit_is_warned(capsys):
    assert cli.main(["cost", QUICKSTART, "--prompt", "200000"]) == 0
    err = capsys.readouterr().err
    assert "--prompt" in err and "max_context" in err
