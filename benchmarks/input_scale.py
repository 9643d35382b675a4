"""Large but legal inputs: how long mtpsim takes to accept or refuse them (the bad-input campaigns'
scaling cases, whose tests check what the answer is; the time is measured here, not asserted in
a test, where a loaded machine made it flake).

    .venv/bin/python benchmarks/input_scale.py [--repeats 3]

- an engine file of 200 rules over 201 releases (each rule holding at its own release), resolved
  for `mtpsim cost`: 47 s when the rules were checked pairwise at every release (campaign 13);
- a search section of 50,000 loads, refused as over the limit of points: 26 s when every list
  was checked for repeats against every earlier entry (campaign 13);
- a steps_by_batch policy listing every batch from 1 to 20,000, looked up at each batch: the
  lookup bisects (a scan took 19 s of a run over 90,000 keys; campaign 13).
Prints the median seconds of each over the repeats.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mtpsim  # noqa: E402
from mtpsim import cli  # noqa: E402
from mtpsim.packagedata import data_dir  # noqa: E402
from mtpsim.yamlfiles import parse_yaml  # noqa: E402

QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def engine_file(folder: Path, releases: int = 201, rules: int = 200) -> Path:
    """A user catalog whose engines/trtllm.yaml knows `releases` releases and holds `rules` rules,
    rule i holding at release 1.i.0 only; the catalog folder."""
    text = (data_dir() / "engines" / "trtllm.yaml").read_text()
    known = "known: [" + ", ".join(f'"1.{i}.0"' for i in range(releases)) + "]"
    text = re.sub(r"known: \[[^\]]*\].*", lambda _: known, text, count=1).replace('default: "1.3.0"', 'default: "1.0.0"')
    text = text[:text.index("rules:")] + "rules:\n" + "".join(
        f'  - {{name: r{i}, field: shared_expert_stream, value: graphs, since: "1.{i}.0", until: "1.{i + 1}.0", '
        "source: x}\n" for i in range(rules)) + text[text.index("# KV pool"):]
    path = folder / "cat" / "engines" / "trtllm.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return folder / "cat"


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(argv)


def time_engine_file(folder: Path) -> float:
    os.environ["MTPSIM_CATALOG"] = str(engine_file(folder))
    scenario = folder / "s.yaml"
    scenario.write_text(QUICKSTART.read_text().replace("engine: {", "engine: {kind: trtllm, "))
    try:
        started = time.perf_counter()
        code = quiet(["cost", str(scenario)])
        took = time.perf_counter() - started
    finally:
        del os.environ["MTPSIM_CATALOG"]
    assert code == 0, code
    return took


def time_search_refusal(folder: Path) -> float:
    scenario = folder / "search.yaml"
    scenario.write_text(QUICKSTART.read_text() + "search: {concurrency: [" + ", ".join(map(str, range(1, 50_001)))
                        + "]}\n")
    started = time.perf_counter()
    code = quiet(["search", str(scenario), "--gpus", "8", "--no-cache", "--no-plot"])
    took = time.perf_counter() - started
    assert code == 2, code
    return took


def time_policy_lookups() -> float:
    table = {batch: 1 + batch % 2 for batch in range(1, 20_001)}
    with contextlib.redirect_stderr(io.StringIO()):  # the entries past the workload's batch, warned of
        policy = mtpsim.load({**parse_yaml(QUICKSTART.read_text(), str(QUICKSTART)), "model": "llama-3.1-8b",
                              "parallel": {"tp": 1},
                              "speculative": {"design": "nextn", "steps": 2, "draft": "eagle3-llama-3.1-8b",
                                              "policy": {"steps_by_batch": table}}})[0].speculative.policy
    started = time.perf_counter()
    found = [policy.steps_for(batch) for batch in range(1, 20_001)]
    took = time.perf_counter() - started
    assert found == [1 + batch % 2 for batch in range(1, 20_001)]
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cases = {"engine file, 200 rules x 201 releases (cost)": time_engine_file,
             "search of 50,000 loads, refused": time_search_refusal,
             "steps_by_batch, 20,000 lookups": lambda _folder: time_policy_lookups()}
    for name, case in cases.items():
        times = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                times.append(case(Path(folder)))
        print(f"{name}: {statistics.median(times):.2f} s (median of {args.repeats})")


if __name__ == "__main__":
    main()
