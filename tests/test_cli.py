"""The command line end to end: cost, run, the run folder, nothing overwritten."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from mtpsim.cli import main
from tests.conftest import BASE


def test_cost_prints_passes_iteration_and_memory(write_scenario, capsys):
    assert main(["cost", str(write_scenario(BASE)), "--batch", "8", "--context", "4096"]) == 0
    out = capsys.readouterr().out
    for text in ("verify:target", "draft:mtp", "extend:mtp", "decode:target", "iteration_ms", "max_kv_tokens",
                 "memory", "batch 8, context 4096"):
        assert text in out


def test_run_writes_folder_with_baseline(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(write_scenario(BASE)), "--out", str(out), "--set", "workload.output_len=16"]) == 0
    assert {"summary.csv", "requests.csv", "iterations.csv", "scenario.resolved.yaml", "accept_counts.csv"} <= {
        p.name for p in out.iterdir()}
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary.design) == {"nextn", "none"}
    assert summary.loc[summary.design == "none", "speedup"].iloc[0] == 1.0
    for col in ("name", "design", "steps", "topk", "draft_tokens", "concurrency", "rate_per_s", "num_requests",
                "tps", "per_user_tps", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_mean_s",
                "accept_length", "speedup", "per_user_speedup", "draft_share", "verify_share", "extend_share",
                "prefill_share", "host_share", "max_kv_tokens", "sim_wall_s"):
        assert col in summary.columns
    text = (out / "scenario.resolved.yaml").read_text()
    resolved = list(yaml.safe_load_all(text))
    assert resolved[0]["workload"]["output_len"] == 16 and resolved[0]["engine"]["cuda_graphs"] is True
    assert "max_graph_batch" not in resolved[0]["engine"]  # unset: the engine file's CUDA graphs apply
    assert text == yaml.safe_dump_all(resolved, sort_keys=False)  # libyaml's emitter writes what PyYAML's does
    assert "TPS" in capsys.readouterr().out


def test_run_refuses_a_folder_with_files(write_scenario, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert main(["run", str(write_scenario(BASE)), "--out", str(out)]) == 2
    assert (out / "mine.txt").read_text() == "keep me" and len(list(out.iterdir())) == 1
    assert "not empty" in capsys.readouterr().err


def test_sweep_runs_each_point_once_and_baselines_once(write_scenario, tmp_path):
    data = {**BASE, "sweep": {"speculative.steps": [1, 2], "workload.concurrency": [1, 4]}}
    data["workload"] = {**BASE["workload"], "output_len": 8}
    out = tmp_path / "sweep"
    assert main(["run", str(write_scenario(data)), "--out", str(out), "--jobs", "1"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert (summary.design == "nextn").sum() == 4 and (summary.design == "none").sum() == 2
    assert summary.speedup.notna().all()


def test_draft_only_sweeps_share_one_baseline(write_scenario, tmp_path, capsys):
    mtp = [{"num_layers": 1, "layer": {"attention": "mla", "ffn": "moe"}},
           {"num_layers": 1, "layer": {"attention": "mla", "ffn": "dense"}}]
    data = {**BASE, "sweep": {"model.mtp": mtp}, "workload": {**BASE["workload"], "output_len": 8}}
    out = tmp_path / "mtp"
    assert main(["run", str(write_scenario(data)), "--out", str(out), "--jobs", "1"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert (summary.design == "none").sum() == 1
    assert any(line.rstrip().endswith("mtp") for line in capsys.readouterr().out.splitlines())  # its own column


# ----------------------------------------------------------------------------- listings, version, schema

def test_models_and_hardware_list_one_line_each(capsys):
    from mtpsim import catalog_lookup
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == catalog_lookup.names("models")
    ds = next(line for line in lines if line.startswith("deepseek-v3 "))
    assert "61 layers" in ds and "hidden 7168" in ds and "256 experts" in ds and "MTP 1 layer" in ds
    assert main(["hardware"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == catalog_lookup.names("hardware")
    h200 = next(line for line in lines if line.startswith("h200 "))
    assert "151 GB" in h200 and "4.8 TB/s" in h200 and "h200-sglang" in h200


def test_version(capsys):
    import mtpsim
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"mtpsim {mtpsim.__version__}"
    assert mtpsim.__version__[0].isdigit()


def test_schema_is_the_scenario_json_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"model", "hardware", "speculative", "workload", "cost"} <= set(schema["properties"])
    assert schema["required"] == ["name", "model", "hardware"] and schema["additionalProperties"] is False


def test_package_api_is_lazy_and_torch_free(write_scenario):
    code = ("import sys, mtpsim; assert 'torch' not in sys.modules and 'pandas' not in sys.modules; "
            f"r = mtpsim.simulate(mtpsim.load({str(write_scenario(BASE))!r})[0]); "
            "assert isinstance(r, mtpsim.Results) and r.summary.tps.iloc[0] > 0; "
            "assert 'torch' not in sys.modules; print(mtpsim.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_parser_loads_no_pandas_or_pydantic():
    """Every command builds the whole parser before it runs: `mtpsim --help`, `--version` and an
    argument error stay quick when building it imports neither pandas nor the scenario schema."""
    code = ("import sys; from mtpsim.cli import build_parser; build_parser(); "
            "heavy = {'pandas', 'pydantic', 'numpy', 'mtpsim.schema'} & set(sys.modules); assert not heavy, heavy")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_sweep_point_failing_in_a_worker_is_one_line(tmp_path, capsys):
    """A point that does not fit in memory, simulated in a worker process, gives the same
    one-line error as a one-point run (not a BrokenProcessPool traceback)."""
    code = main(["run", "scenarios/deepseek-v3-h200-steps.yaml", "--set", "hardware=a100-80g",
                 "--jobs", "2", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("mtpsim: error: ") and "leave no KV pool" in err[-1]
    assert not any("Traceback" in line for line in err)


def test_scenario_error_survives_pickling():
    import pickle

    from mtpsim.errors import ScenarioError
    e = pickle.loads(pickle.dumps(ScenarioError("f.yaml", "workload.rate_per_s", "must be > 0")))
    assert (e.where, e.key, e.reason) == ("f.yaml", "workload.rate_per_s", "must be > 0")


def test_table_shows_rates_as_rates():
    import pandas as pd

    from mtpsim.run import format_table
    table = format_table(pd.DataFrame([{"design": "nextn", "rate_per_s": 2.5, "ttft_p50_s": 0.25}]))
    assert "2.5" in table and "2500" not in table and "250" in table  # TTFT in ms, the rate per second


def test_output_into_a_closed_pipe_ends_quietly():
    import subprocess
    import sys
    done = subprocess.run(f"{sys.executable} -m mtpsim.cli cost scenarios/quickstart.yaml --ops | head -1",
                          shell=True, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_run_folder_is_claimed_before_simulating(tmp_path):
    """Two runs into one --out: the second is refused at once, before it simulates anything."""
    from mtpsim.errors import ScenarioError
    from mtpsim.runfolder import output_dir
    first = output_dir("x", str(tmp_path / "run"))
    assert first.is_dir()
    with pytest.raises(ScenarioError, match="not empty"):
        output_dir("x", str(tmp_path / "run"))
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ScenarioError, match="cannot create"):
        output_dir("x", str(tmp_path / "file" / "run"))
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ScenarioError, match="not a folder"):
        output_dir("x", str(tmp_path / "dangling"))
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("argv", [["run", "scenarios/quickstart.yaml", "--jobs", "0"],
                                  ["run", "scenarios/quickstart.yaml", "--jobs", "100000"],
                                  ["cost", "scenarios/quickstart.yaml", "--batch", "99999999999"],
                                  ["cost", "scenarios/quickstart.yaml", "--context", "-1"]])
def test_sizes_past_their_limits_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "outside" in capsys.readouterr().err


def test_every_schema_field_has_a_description(capsys):
    """`mtpsim schema` says what each key is for, in every section."""
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    sections = {"scenario": schema, **schema["$defs"]}
    missing = [f"{name}.{key}" for name, section in sections.items()
               for key, field in section.get("properties", {}).items() if not field.get("description")]
    assert not missing, missing
    assert len(sections) >= 10
