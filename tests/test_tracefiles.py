"""mtpsim/tracefiles: each public format read from a small file the test writes, the selection
options (speed, window, first N, caps reported), streaming, and a trace run end to end."""
from __future__ import annotations

import gzip
import itertools

import numpy as np
import pytest

from mtpsim import cli
from mtpsim.errors import ScenarioError
from mtpsim.scenario import validate
from mtpsim.schema import TraceFile
from mtpsim.sim import simulate
from mtpsim.tracefiles import readers, scan, stream
from mtpsim.tracefiles.formats import FORMATS, detect, sniff
from mtpsim.tracefiles.readers import read_chunks

AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,4808,10
2023-11-16 18:15:47.1805900,110,27
2023-11-16 18:15:50.9951690,3180,8
2023-11-16 18:15:56.6805900,7433,14
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
110.5,GPT-4,417,505,922,API log
"""
MOONCAKE = """{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}
{"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46, 47]}

{"timestamp": 27482, "input_length": 1200, "output_length": 52, "hash_ids": [46, 47, 48]}
"""
NATIVE = "arrival_s,input_len,output_len\n0.5,10,4\n0.5,20,5\n2.0,30,6\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def selection(path, **options):
    """(arrival_s, input_len, output_len, hash_ids) of the whole selection, concatenated."""
    chunks = list(stream(TraceFile(path=path, **options)))
    blocks = [b for c in chunks if c.hash_ids is not None for b in c.hash_ids]
    return (*(np.concatenate([getattr(c, k) for c in chunks]) for k in ("arrival_s", "input_len", "output_len")),
            blocks or None)


@pytest.mark.parametrize("name,text,fmt", [("a.csv", AZURE, "azure"), ("b.csv", BURSTGPT, "burstgpt"),
                                            ("m.jsonl", MOONCAKE, "mooncake"), ("n.csv", NATIVE, "mtpsim")])
def test_each_format_is_recognised_from_its_header(tmp_path, name, text, fmt):
    path = write(tmp_path, name, text)
    assert detect(path, sniff(path), "auto").name == fmt
    assert scan(TraceFile(path=path)).format == fmt


def test_azure_datetimes_are_seconds_from_the_first_row(tmp_path):
    t, inputs, outputs, blocks = selection(write(tmp_path, "a.csv", AZURE))
    assert np.allclose(t, [0.0, 0.5, 4.314579, 10.0])
    assert inputs.tolist() == [4808, 110, 3180, 7433] and outputs.tolist() == [10, 27, 8, 14] and blocks is None


def test_mooncake_milliseconds_and_block_ids(tmp_path):
    t, inputs, _, blocks = selection(write(tmp_path, "m.jsonl", MOONCAKE))
    assert np.allclose(t, [0.0, 10.535, 27.482]) and inputs.tolist() == [655, 672, 1200]
    assert blocks == [[46, 47], [46, 47], [46, 47, 48]]
    stats = scan(TraceFile(path=write(tmp_path, "m.jsonl", MOONCAKE)))
    assert stats.has_blocks and stats.longest == 1252 and stats.longest_row == 4  # the blank line 3 counts


def test_burstgpt_failed_requests_are_skipped_and_counted(tmp_path):
    path = write(tmp_path, "b.csv", BURSTGPT)
    t, inputs, outputs, _ = selection(path)
    assert t.tolist() == [5.0, 110.5] and inputs.tolist() == [472, 417] and outputs.tolist() == [18, 505]
    stats = scan(TraceFile(path=path))
    assert stats.num_skipped == 1 and stats.num_requests == 2
    assert stats.rate_per_s == pytest.approx(1 / 105.5)


def test_speed_window_first_n_and_caps(tmp_path):
    rows = "".join(f"{i},{100 * (i + 1)},{10 * (i + 1)}\n" for i in range(10))
    path = write(tmp_path, "n.csv", "arrival_s,input_len,output_len\n" + rows)
    t, inputs, outputs, _ = selection(path, speed=2.0, start_s=3, end_s=7)
    assert t.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0] and inputs.tolist() == [400, 500, 600, 700, 800]
    t, *_ = selection(path, start_s=3, max_requests=2)
    assert t.tolist() == [0.0, 1.0]
    spec = TraceFile(path=path, max_input_len=550, max_output_len=25)
    _, inputs, outputs, _ = selection(path, max_input_len=550, max_output_len=25)
    assert inputs.max() == 550 and outputs.max() == 25
    stats = scan(spec)
    assert (stats.num_capped_inputs, stats.num_capped_outputs) == (5, 8)  # 600..1000 and 30..100


def test_capped_prompts_keep_only_the_blocks_they_still_fill(tmp_path):
    path = write(tmp_path, "m.jsonl", MOONCAKE)
    *_, blocks = selection(path, max_input_len=600)
    assert blocks == [[46, 47], [46, 47], [46, 47]]  # 1200 tokens cut to 600 fill 2 blocks of 512


@pytest.mark.parametrize("jsonl", [False, True])
def test_streamed_in_chunks_and_read_no_further_than_the_selection(tmp_path, monkeypatch, jsonl):
    monkeypatch.setattr(readers, "CHUNK_ROWS", 100)
    if jsonl:
        lines = [f'{{"timestamp": {i * 250}, "input_length": {1 + i % 7}, "output_length": {1 + i % 5}}}\n'
                 for i in range(1000)]
        path = write(tmp_path, "n.jsonl", "".join(lines) + '{"timestamp": 300000, "input_length": "oops"}\n')
    else:
        rows = "".join(f"{i * 0.25},{1 + i % 7},{1 + i % 5}\n" for i in range(1000))
        path = write(tmp_path, "n.csv", "arrival_s,input_len,output_len\n" + rows + "300,oops,1\n")
    chunks = list(itertools.islice(read_chunks(path, FORMATS["mooncake" if jsonl else "mtpsim"]), 10))
    assert [len(c.time_s) for c in chunks] == [100] * 10 and chunks[3].row(0) == 301 + (not jsonl)
    # the bad row past the window's end (or the N-th request) is never read
    for options in ({"end_s": 200}, {"max_requests": 801}):
        t, inputs, _, _ = selection(path, **options)
        assert len(t) == 801 and inputs.sum() == sum(1 + i % 7 for i in range(801))
    with pytest.raises(ScenarioError, match="row 1002" if not jsonl else "row 1001"):
        scan(TraceFile(path=path))


def test_gzipped_trace_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "a.csv.gz"
    path.write_bytes(gzip.compress(AZURE.encode()))
    assert scan(TraceFile(path=str(path))).num_requests == 4
    marked = tmp_path / "b.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + BURSTGPT.encode())  # as a spreadsheet saves it
    assert scan(TraceFile(path=str(marked))).format == "burstgpt"


def test_trace_run_replays_arrivals_and_reports_what_it_changed(tmp_path, capsys):
    path = write(tmp_path, "b.csv", BURSTGPT)
    s = validate({"name": "t", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"},
                  "workload": {"arrival": "trace", "trace": {"path": path, "speed": 5.0, "max_output_len": 100}}})
    r = simulate(s)
    assert np.allclose(r.requests.arrival_s, [1.0, 22.1]) and r.requests.output_len.tolist() == [18, 100]
    row = r.summary.iloc[0]
    assert np.isnan(row.concurrency) and row.rate_per_s == pytest.approx(1 / 21.1) and row.num_requests == 2
    assert (row.trace_format, row.trace_skipped, row.trace_capped_outputs) == ("burstgpt", 1, 1)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: t\nmodel: llama-3.1-8b\nhardware: h100-sxm\ncost: {{model: roofline}}\n"
                        f"workload: {{arrival: trace, trace: {{path: {path}, max_output_len: 100}}}}\n")
    assert cli.main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "rate/s" in out and "conc" not in out
    assert "1 rows with 0 input or output tokens skipped" in out and "1 outputs cut to max_output_len 100" in out


def test_open_loads_show_their_rate_not_a_concurrency():
    base = {"name": "t", "model": "llama-3.1-8b", "hardware": "h100-sxm", "cost": {"model": "roofline"}}
    poisson = simulate(validate({**base, "workload": {"arrival": "poisson", "rate_per_s": 5.0, "num_requests": 8,
                                                      "input_len": 32, "output_len": 4}})).summary.iloc[0]
    assert np.isnan(poisson.concurrency) and poisson.rate_per_s == 5.0
    schedule = [{"until_s": 1.0, "rate_per_s": 2.0}, {"until_s": 4.0, "rate_per_s": 6.0}]
    swings = simulate(validate({**base, "workload": {"arrival": "poisson", "rate_schedule": schedule, "num_requests": 8,
                                                     "input_len": 32, "output_len": 4}})).summary.iloc[0]
    assert swings.rate_per_s == pytest.approx((2 * 1 + 6 * 3) / 4)  # the cycle's mean rate
    closed = simulate(validate({**base, "workload": {"concurrency": 2, "num_requests": 4, "input_len": 32,
                                                     "output_len": 4}})).summary.iloc[0]
    assert closed.concurrency == 2 and np.isnan(closed.rate_per_s)
