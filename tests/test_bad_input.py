"""Every bad input is one line on stderr, exit status 2, naming the file and the dotted key path
(issue 11 §2). One test per category; each case is the input, what the key path must be, and a
word the reason must hold. They run in-process through `cli.main`, as the command line does."""
from __future__ import annotations

from pathlib import Path

import pytest

from mtpsim import cli
from mtpsim.costs.profile import PROFILES_DIR
from mtpsim.packagedata import data_dir

BASE = """\
name: p
model: deepseek-v3
hardware: h200
parallel: {tp: 8}
speculative: {design: nextn, steps: 2}
acceptance: {per_depth: [0.8, 0.7]}
workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}
"""
LLAMA = BASE.replace("deepseek-v3", "llama-3.1-8b").replace("design: nextn", "design: none").replace(
    "acceptance: {per_depth: [0.8, 0.7]}\n", "")  # plain decoding has no acceptance (advice.py warns of one)


def one_line_error(capsys, argv: list[str], key: str, word: str) -> str:
    """Run argv; assert exit 2, exactly one stderr line, `key` as the dotted key path (`': key:`)
    and `word` in the reason. Returns the line."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("mtpsim: error: ") and "Traceback" not in line
    if key:
        assert f": {key}: " in line, line
    assert word.lower() in line.lower(), line
    assert len(line) < 500, "an error never echoes a huge value"
    return line


def run(tmp_path: Path, text: str | bytes, files: dict[str, str | bytes] | None = None) -> list[str]:
    for name, content in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    scenario = tmp_path / "s.yaml"
    scenario.write_bytes(text if isinstance(text, bytes) else text.encode())
    return ["run", str(scenario), "--out", str(tmp_path / "out")]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))

FILES = [  # (id, file content, key, word)
    ("not-utf8", b"name: \xff\xfe\n", "", "UTF-8"),
    ("binary", bytes(range(256)) * 4, "", "binary"),
    ("deep-flow", "a: " + "[" * 5000 + "]" * 5000, "", "nested deeper"),
    ("alias-bomb", BOMB, "", "expands to more than"),
    ("duplicate-key", BASE + "name: q\n", "name", "duplicate key"),
    ("duplicate-nested-key", BASE.replace("{tp: 8}", "{tp: 8, tp: 4}"), "parallel.tp", "duplicate key"),
    ("python-tag", "!!python/object/apply:os.system ['echo pwned']\n", "line 1", "tag not allowed"),
    ("custom-tag", BASE + "question: !foo bar\n", "line 8", "tag not allowed"),
    ("huge-value", BASE.replace("name: p", "name: " + "x" * 100_000), "name", "at most 120"),
    ("huge-integer", BASE.replace("steps: 2", "steps: " + "9" * 5000), "", "digits"),
    ("too-big", "# " + "x" * (5 * 2**20), "", "limit"),
    ("empty", "", "", "empty"),
    ("not-a-mapping", "- a\n- b\n", "", "mapping"),
]


@pytest.mark.parametrize("text,key,word", [c[1:] for c in FILES], ids=[c[0] for c in FILES])
def test_files(tmp_path, capsys, text, key, word):
    line = one_line_error(capsys, run(tmp_path, text), key, word)
    assert "s.yaml" in line


SIZES = [
    ("num-requests", BASE.replace("num_requests: 4", "num_requests: 1000000000000"), "workload.num_requests"),
    ("output-len", BASE.replace("output_len: 16", "output_len: 100000000000"), "workload.output_len"),
    ("concurrency", BASE.replace("concurrency: 2", "concurrency: 100000000"), "workload.concurrency"),
    ("tp", BASE.replace("tp: 8", "tp: 100000"), "parallel.tp"),
    ("sweep-points", BASE + "sweep:\n  seed: [" + ",".join(map(str, range(200))) + "]\n  workload.output_len: ["
     + ",".join(map(str, range(1, 201))) + "]\n", "sweep"),
    ("chunk", BASE + "engine: {chunked_prefill_tokens: 99999999999}\n", "engine.chunked_prefill_tokens"),
]


@pytest.mark.parametrize("text,key", [c[1:] for c in SIZES], ids=[c[0] for c in SIZES])
def test_sizes_are_refused_past_documented_limits(tmp_path, capsys, text, key):
    one_line_error(capsys, run(tmp_path, text), key, "")


H200 = "hardware: {from: h200, %s}"
VALUES = [
    ("nan-probability", BASE.replace("[0.8, 0.7]", "[.nan, 0.7]"), "acceptance.per_depth.0", "finite"),
    ("bool-for-int", BASE.replace("steps: 2", "steps: true"), "speculative.steps", "integer"),
    ("string-for-int", BASE.replace("tp: 8", "tp: '8'"), "parallel.tp", "integer"),
    ("float-for-int", BASE.replace("tp: 8", "tp: 8.0"), "parallel.tp", "integer"),
    ("mem-fraction-zero", BASE + "engine: {mem_fraction: 0.0}\n", "engine.mem_fraction", "greater than 0"),
    ("mem-fraction-above-one", BASE + "engine: {mem_fraction: 1.2}\n", "engine.mem_fraction", "less than or equal to 1"),
    ("mem-fraction-negative", BASE + "engine: {mem_fraction: -0.5}\n", "engine.mem_fraction", "greater than 0"),
    ("mem-fraction-string", BASE + "engine: {mem_fraction: '0.9'}\n", "engine.mem_fraction", "number"),
    ("inf-rate", BASE.replace("workload: {", "workload: {arrival: poisson, rate_per_s: .inf, "),
     "workload.rate_per_s", "finite"),
    ("negative-seed", BASE + "seed: -1\n", "seed", "greater than or equal"),
    ("hardware-nan", BASE.replace("hardware: h200", H200 % "memory_bandwidth_bytes_per_s: .nan"),
     "hardware.memory_bandwidth_bytes_per_s", "finite"),
    ("hardware-negative-flops", BASE.replace("hardware: h200", H200 % "peak_flops: {bf16: -1.0}"),
     "hardware.peak_flops.bf16", "greater than or equal to 1000000"),
    ("hardware-zero-flops", BASE.replace("hardware: h200", H200 % "peak_flops: {bf16: 0}"),
     "hardware.peak_flops.bf16", "greater than or equal to 1000000"),
    ("hardware-bool", BASE.replace("hardware: h200", H200 % "launch_overhead_s: true"),
     "hardware.launch_overhead_s", "number"),
    ("model-bool", BASE.replace("model: deepseek-v3", "model: {from: deepseek-v3, hidden_size: true}"),
     "model.hidden_size", "integer"),
    ("skew-nan", BASE + "cost: {moe_skew: .nan}\n", "cost.moe_skew", "finite"),
    ("ep-imbalance-below-one", BASE + "cost: {ep_imbalance: 0.5}\n", "cost.ep_imbalance", "greater than or equal to 1"),
    ("normal-without-max", BASE.replace("input_len: 64", "input_len: {dist: normal, mean: 100, std: 10}"),
     "workload.input_len", "max"),
    ("lognormal-inf", BASE.replace("input_len: 64", "input_len: {dist: lognormal, mean: .inf, std: 1, max: 9}"),
     "workload.input_len.mean", "finite"),
    ("prefix-cache-over-the-pool", BASE + "engine: {prefix_cache: {max_tokens: 1000000000000}}\n",
     "engine.prefix_cache.max_tokens", "KV pool holds"),
    ("prefix-cache-zero-block", BASE + "engine: {prefix_cache: {block_tokens: 0}}\n",
     "engine.prefix_cache.block_tokens", "greater than or equal"),
    ("shared-prefix-fraction", BASE.replace("output_len: 16}", "output_len: 16, shared_prefix: {tokens: 8, fraction: 1.5}}"),
     "workload.shared_prefix.fraction", "less than or equal to 1"),
    ("trace-window-backwards", BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                                            "workload: {arrival: trace, trace: {path: t.csv, start_s: 5, end_s: 2}}"),
     "workload.trace.end_s", "start_s"),
    ("trace-unknown-format", BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                                          "workload: {arrival: trace, trace: {path: t.csv, format: sharegpt}}"),
     "workload.trace.format", "azure"),
    ("trace-zero-speed", BASE.replace("workload: {concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}",
                                      "workload: {arrival: trace, trace: {path: t.csv, speed: 0}}"),
     "workload.trace.speed", "greater than 0"),
]


@pytest.mark.parametrize("text,key,word", [c[1:] for c in VALUES], ids=[c[0] for c in VALUES])
def test_values(tmp_path, capsys, text, key, word):
    one_line_error(capsys, run(tmp_path, text), key, word)


HIST = BASE.replace("per_depth: [0.8, 0.7]", "histogram: h.csv")
TRACE = BASE.replace("{concurrency: 2, num_requests: 4, input_len: 64, output_len: 16}", "{arrival: trace, trace: t.csv}")
TABLES = [  # (id, scenario, file, content, key, word)
    ("histogram-nan", HIST, "h.csv", "accepted,count\n0,nan\n1,5\n", "count", "row 2"),
    ("histogram-text", HIST, "h.csv", "accepted,count\n0,abc\n1,5\n", "count", "row 2"),
    ("histogram-inf", HIST, "h.csv", "accepted,count\n0,inf\n1,1\n", "count", "row 2"),
    ("histogram-zero", HIST, "h.csv", "accepted,count\n0,0\n1,0\n", "count", "positive total"),
    ("histogram-fraction", HIST, "h.csv", "accepted,count\n0.5,3\n1,5\n", "accepted", "integer"),
    ("histogram-huge-depth", HIST, "h.csv", "accepted,count\n1000000000,1\n0,1\n", "accepted", "<= 64"),
    ("histogram-empty", HIST, "h.csv", "", "", "empty"),
    ("histogram-binary", HIST, "h.csv", bytes(range(256)), "", "binary"),
    ("trace-nan", TRACE, "t.csv", "arrival_s,input_len,output_len\nnan,10,10\n", "arrival_s", "row 2"),
    ("trace-inf", TRACE, "t.csv", "arrival_s,input_len,output_len\ninf,10,10\n", "arrival_s", "row 2"),
    ("trace-text", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,abc,10\n", "input_len", "row 2"),
    ("trace-fraction", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,10.5,10\n", "input_len", "integer"),
    ("trace-bool", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,True,10\n", "input_len", "true/false"),
    ("trace-huge", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,10,100000000000000\n", "output_len", "row 2"),
    ("trace-header-only", TRACE, "t.csv", "arrival_s,input_len,output_len\n", "", "no rows"),
    ("trace-not-utf8", TRACE, "t.csv", b"arrival_s,input_len,output_len\n0,\xff,1\n", "", "UTF-8"),
    ("trace-missing-column", TRACE, "t.csv", "arrival_s,input_len\n0,1\n", "output_len", "missing column"),
    ("trace-negative-length", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,10,10\n1,-3,10\n", "input_len", "row 3"),
    ("trace-backwards", TRACE, "t.csv", "arrival_s,input_len,output_len\n0,10,10\n5,10,10\n4,10,10\n", "", "row 4"),
    ("trace-negative-time", TRACE, "t.csv", "arrival_s,input_len,output_len\n-1,10,10\n", "arrival_s", "row 2"),
    ("trace-time-out-of-range", TRACE, "t.csv", "arrival_s,input_len,output_len\n1e12,10,10\n", "arrival_s", "row 2"),
    ("trace-unrecognised", TRACE, "t.csv", "when,prompt,answer\n0,10,10\n", "", "cannot recognise"),
    ("azure-missing-column", TRACE, "t.csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.68,10\n", "GeneratedTokens",
     "missing column"),
    ("azure-bad-datetime", TRACE, "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\n"
     "yesterday,10,5\n", "TIMESTAMP", "row 3"),
    ("azure-fraction", TRACE, "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10.5,5\n",
     "ContextTokens", "integer"),
    ("azure-backwards", TRACE, "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\n"
     "2023-11-16 18:15:45,10,5\n", "", "row 3"),
    ("burstgpt-negative", TRACE, "t.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
     "5,ChatGPT,-4,18,14,API log\n", "Request tokens", "row 2"),
    ("mooncake-hash-ids-too-long", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'
     '{"timestamp": 3, "input_length": 600, "output_length": 5, "hash_ids": [1, 2, 3]}\n', "hash_ids", "row 2"),
    ("mooncake-missing-key", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 0, "input_length": 600, "output_length": 5}\n{"timestamp": 3, "input_length": 600}\n',
     "output_length", "row 2"),
    ("mooncake-not-json", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 0, "input_length": 600, "output_length": 5}\n{"timestamp": 3,\n', "", "row 2"),
    ("mooncake-fraction", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 0, "input_length": 60.5, "output_length": 5}\n', "input_length", "integer"),
    ("mooncake-bool", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 0, "input_length": true, "output_length": 5}\n', "input_length", "row 1"),
    ("mooncake-backwards", TRACE.replace("t.csv", "t.jsonl"), "t.jsonl",
     '{"timestamp": 10, "input_length": 6, "output_length": 5}\n\n{"timestamp": 3, "input_length": 6, '
     '"output_length": 5}\n', "", "row 3"),
    ("trace-format-mismatch", TRACE.replace("trace: t.csv", "trace: {path: t.csv, format: azure}"), "t.csv",
     "arrival_s,input_len,output_len\n0,10,10\n", "TIMESTAMP", "missing column"),
]


@pytest.mark.parametrize("text,file,content,key,word", [c[1:] for c in TABLES], ids=[c[0] for c in TABLES])
def test_traces_and_histograms(tmp_path, capsys, text, file, content, key, word):
    line = one_line_error(capsys, run(tmp_path, text, {file: content}), key, word)
    assert file in line


PARALLEL = [
    ("heads-not-divisible", BASE.replace("tp: 8", "tp: 7"), "parallel.tp", "query heads"),
    ("tp-beyond-heads", LLAMA.replace("tp: 8", "tp: 64"), "parallel.tp", "fewer than"),
    ("kv-heads", LLAMA.replace("tp: 8", "tp: 4").replace("llama-3.1-8b", "{from: llama-3.1-8b, attention_kinds: "
                                                         "{gqa: {num_heads: 24, num_kv_heads: 6}}}"),
     "parallel.tp", "KV heads"),
    ("ffn-width", LLAMA.replace("tp: 8", "tp: 32").replace("llama-3.1-8b", "{from: llama-3.1-8b, ffn_kinds: "
                                                          "{dense: {kind: dense, intermediate_size: 14340}}}"),
     "parallel.tp", "wide"),
    ("experts-over-ep", BASE.replace("tp: 8", "tp: 8, ep: 8").replace("deepseek-v3", "{from: deepseek-v3, ffn_kinds: "
                                                                   "{moe: {num_experts: 250}}}"), "parallel.ep", "250 experts"),
    ("expert-width", BASE.replace("deepseek-v3", "{from: deepseek-v3, ffn_kinds: {moe: {expert_intermediate_size: 2044}}}"),
     "parallel.tp", "tp / ep = 8"),
    ("ep-without-experts", LLAMA.replace("tp: 8", "tp: 8, ep: 2"), "parallel.ep", "no experts"),
]


@pytest.mark.parametrize("text,key,word", [c[1:] for c in PARALLEL], ids=[c[0] for c in PARALLEL])
def test_parallelism_against_the_model(tmp_path, capsys, text, key, word):
    one_line_error(capsys, run(tmp_path, text), key, word)


def test_context_longer_than_the_model(tmp_path, capsys):
    line = one_line_error(capsys, run(tmp_path, BASE.replace("input_len: 64", "input_len: 2000000")),
                          "workload.input_len", "max_context")
    assert "163840" in line  # deepseek-v3's max_position_embeddings
    trace = TRACE.replace("deepseek-v3", "llama-3.1-8b").replace("tp: 8", "tp: 1").replace("design: nextn", "design: none")
    # the prompt fits alone, its output takes it past: the output column is named (the prompt's where it alone overflows)
    one_line_error(capsys, run(tmp_path, trace, {"t.csv": "arrival_s,input_len,output_len\n0,10,10\n0,131000,100\n"}),
                   "output_len", "row 3")


def test_every_catalog_model_states_its_context():
    for path in sorted((data_dir() / "models").glob("*.yaml")):
        assert "max_context:" in path.read_text(), path.name


def cpu_profile(tmp_path: Path, **replace: str | bytes) -> dict[str, str | bytes]:
    """The committed CPU profile copied under prof/, with files replaced (`gemm__csv` -> gemm.csv)."""
    files = {f"prof/{p.name}": p.read_bytes() for p in (PROFILES_DIR / "cpu").glob("*") if p.is_file()}
    files.update({f"prof/{k.replace('__', '.')}": v for k, v in replace.items()})
    return files


META = (PROFILES_DIR / "cpu" / "meta.yaml").read_text()
PROFILES = [  # (id, replaced files, key, word)
    ("empty-csv", {"gemm__csv": ""}, "", "empty"),
    ("binary-csv", {"gemm__csv": bytes(range(256)) * 3}, "", "binary"),
    ("nan-time", {"gemm__csv": "dtype,m,k,n,flops,bytes,time_s\nfp32,1,16,8,256,608,nan\n"}, "time_s", "row 2"),
    ("negative-time", {"gemm__csv": "dtype,m,k,n,flops,bytes,time_s\nfp32,1,16,8,256,608,-1\n"}, "time_s", "row 2"),
    ("text-axis", {"gemm__csv": "dtype,m,k,n,flops,bytes,time_s\nfp32,x,16,8,256,608,1e-6\n"}, "m", "row 2"),
    ("bool-time", {"gemm__csv": "dtype,m,k,n,flops,bytes,time_s\nfp32,1,16,8,256,608,True\n"}, "time_s", "true/false"),
    ("missing-column", {"gemm__csv": "dtype,m,k,flops,bytes,time_s\nfp32,1,16,256,608,1e-6\n"}, "n", "missing"),
    ("meta-syntax", {"meta__yaml": "device: [cpu\n"}, "line 2", "syntax"),
    ("meta-binary", {"meta__yaml": bytes(range(256))}, "", "binary"),
    ("meta-ceiling-type", {"meta__yaml": META.replace("copy_bytes_per_s: 14730000000.0", "copy_bytes_per_s: fast")},
     "ceilings.copy_bytes_per_s", "number"),
    ("meta-launch-type", {"meta__yaml": META.replace("call_s: 9.380000000000001e-07", "call_s: abc")},
     "launch.call_s", "number"),
    ("meta-duplicate", {"meta__yaml": META + "device: cpu\n"}, "device", "duplicate"),
    ("layers-nan", {"layers__csv": "layer,scale,batch,q,kv,d,time_s\nassistant,0.0625,1,1,256,16,nan\n"}, "time_s", "row 2"),
    ("layers-missing-column", {"layers__csv": "layer,batch,q,kv,d,time_s\nassistant,1,1,256,16,1e-4\n"}, "scale", "missing"),
    ("layers-unknown-kind", {"layers__csv": "layer,scale,batch,q,kv,d,time_s\nbogus,0.0625,1,1,256,16,1e-4\n"},
     "layer", "unknown layer kind"),
]
PROFILED = LLAMA.replace("hardware: h200", "hardware: cpu").replace("tp: 8", "tp: 1") + \
    "cost: {model: calibrated, profile: ./prof}\n"


@pytest.mark.parametrize("replace,key,word", [c[1:] for c in PROFILES], ids=[c[0] for c in PROFILES])
def test_profiles(tmp_path, capsys, monkeypatch, replace, key, word):
    monkeypatch.chdir(tmp_path)
    one_line_error(capsys, run(tmp_path, PROFILED, cpu_profile(tmp_path, **replace)), key, word)


def test_profile_from_another_device(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = PROFILED.replace("hardware: cpu", "hardware: h200").replace("llama-3.1-8b", "deepseek-v3").replace("tp: 1", "tp: 8")
    one_line_error(capsys, run(tmp_path, text, cpu_profile(tmp_path)), "cost.profile", "measured on 'cpu'")


def test_set_values_follow_the_same_rules(tmp_path, capsys):
    argv = run(tmp_path, BASE)
    one_line_error(capsys, argv + ["--set", "parallel={tp: 8, tp: 4}"], "parallel.tp", "duplicate key")
    one_line_error(capsys, argv + ["--set", "speculative.steps=[1,"], "speculative.steps", "syntax")
    one_line_error(capsys, argv + ["--set", "speculative.steps=true"], "speculative.steps", "integer")


def test_a_user_catalog_file_follows_the_same_rules(tmp_path, capsys):
    model = (data_dir() / "models" / "llama-3.1-8b.yaml").read_text()
    text = LLAMA.replace("model: llama-3.1-8b", "model: ./m.yaml").replace("tp: 8", "tp: 1")
    one_line_error(capsys, run(tmp_path, text, {"m.yaml": model + "hidden_size: 4096\n"}), "hidden_size", "duplicate")
    one_line_error(capsys, run(tmp_path, text, {"m.yaml": bytes(range(256))}), "", "binary")


def test_yaml_12_floats_are_numbers(tmp_path, capsys):
    """`1e15` is a string to YAML 1.1 (PyYAML); users write it, so it reads as the number it is."""
    text = BASE.replace("hardware: h200", H200 % "peak_flops: {bf16: 1e15, fp8: 2e15}")
    assert cli.main(["cost", str(run(tmp_path, text)[1])]) == 0


def test_verify_refuses_a_folder_holding_files(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    scenario = Path(__file__).parent.parent / "scenarios" / "verify" / "deepseek-v3-none-cpu.yaml"
    one_line_error(capsys, ["verify", str(scenario), "--out", str(out)], "", "not empty")
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_calibrate_leaves_a_partial_folder_it_did_not_create(tmp_path, capsys):
    partial = tmp_path / "prof.partial"
    partial.mkdir()
    (partial / "mine.txt").write_text("keep")
    one_line_error(capsys, ["calibrate", "--device", "cpu", "--quick", "--out", str(tmp_path / "prof")], "", "exists")
    assert (partial / "mine.txt").read_text() == "keep"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    scenario = tmp_path_factory.mktemp("s") / "s.yaml"
    scenario.write_text(LLAMA.replace("tp: 8", "tp: 1"))
    assert cli.main(["run", str(scenario), "--out", str(out)]) == 0
    return out


BROKEN_RUNS = [  # (id, file, how it is broken, word)
    ("truncated-summary", "summary.csv", lambda t: t[: len(t) // 2], "truncated"),
    ("empty-summary", "summary.csv", lambda t: "", "empty"),
    ("header-only-summary", "summary.csv", lambda t: t.splitlines()[0] + "\n", "no rows"),
    ("foreign-summary", "summary.csv", lambda t: "a,b\n1,2\n", "missing column"),
    ("truncated-iterations", "iterations.csv", lambda t: t[:500], "truncated"),
    ("missing-iterations", "iterations.csv", None, "no iterations.csv"),
    ("binary-counts", "accept_counts.csv", lambda t: "\0" * 10, "binary"),
]


@pytest.mark.parametrize("file,breaks,word", [c[1:] for c in BROKEN_RUNS], ids=[c[0] for c in BROKEN_RUNS])
def test_plot_on_a_broken_run_folder(run_folder, tmp_path, capsys, file, breaks, word):
    import shutil
    folder = tmp_path / "copy"
    shutil.copytree(run_folder, folder)
    if breaks is None:
        (folder / file).unlink()
    else:
        (folder / file).write_text(breaks((folder / file).read_text()))
    one_line_error(capsys, ["plot", str(folder)], "", word)


def test_plot_on_a_whole_run_folder_draws(run_folder, tmp_path, capsys):
    import shutil
    shutil.copytree(run_folder, tmp_path / "copy")
    assert cli.main(["plot", str(tmp_path / "copy")]) == 0
    assert (tmp_path / "copy" / "speedup.png").is_file()


def _claim(args) -> bool:
    from mtpsim.errors import ScenarioError
    from mtpsim.runfolder import output_dir
    path, barrier = args
    barrier.wait()
    try:
        output_dir("race", path)
        return True
    except ScenarioError:
        return False


def test_two_runs_racing_into_one_folder_one_wins(tmp_path):
    """Processes released together at one --out: exactly one claims it, the others are refused."""
    import multiprocessing as mp
    with mp.Manager() as manager:
        barrier = manager.Barrier(6)
        with mp.get_context("spawn").Pool(6) as pool:
            won = pool.map(_claim, [(str(tmp_path / "run"), barrier)] * 6)
    assert sorted(won) == [False] * 5 + [True]


def test_a_run_that_fails_gives_its_folder_back(tmp_path, capsys, monkeypatch):
    """A point that fails while simulating (DeepSeek-V3 on 8 A100-80G: the weights fill the pool)
    leaves no claimed folder behind: none at all under runs/, no --out folder it created, and an
    --out folder that was there (empty) left for the same command to use once the scenario is mended."""
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.replace("hardware: h200", "hardware: a100-80g"))
    one_line_error(capsys, ["run", str(bad)], "", "leave no KV pool")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    one_line_error(capsys, ["run", str(bad), "--out", "mine"], "", "leave no KV pool")
    assert not (tmp_path / "mine").exists()
    (tmp_path / "mine").mkdir()
    one_line_error(capsys, ["run", str(bad), "--out", "mine"], "", "leave no KV pool")
    assert (tmp_path / "mine").is_dir() and not any((tmp_path / "mine").iterdir())
    good = tmp_path / "good.yaml"
    good.write_text(BASE)
    assert cli.main(["run", str(good), "--out", "mine", "--set", "cost.model=roofline"]) == 0
    assert (tmp_path / "mine" / "summary.csv").is_file()
