"""The whole command-line pair against a fixed simpy reference loop, timed in the same run (issue 23).

    .venv/bin/python benchmarks/cli_pair.py [--repeats 3]

The pair: `mtpsim run` of nextn S=3 and its `none` baseline, 1,000 requests x 1,000 tokens at
concurrency 64 (sim_pair.py's scenario), as a whole process: interpreter start, imports, profile
load, both simulations, the table and the run folder.

The reference (reference_loop.py): what the simulator's loop must do for the same iterations and no more: one
`env.timeout` per iteration, each running request's accepted drafts drawn from the same
per-depth acceptance, its tokens committed in a Python loop, finished requests replaced from
the queue, and a fixed per-iteration cost lookup (an iteration's seconds by batch size, read
from a table built before the loop: the simulator prices its passes instead). No prompt
prefill, no records, no outputs. Two ratios, each the median CLI wall over a median reference
wall, of `--repeats` interleaved runs (the machine's load moves both alike):
- `ratio` (the issue's target, at most 1.6): against the reference loop timed in this process,
  so the CLI's interpreter start and imports count against it and the reference's do not;
- `ratio, both whole processes`: against the same loop run as a fresh `python` process that
  imports numpy and simpy first, so the two pay the same interpreter start. The first
  reference (before 2026-12-02) had no cost lookup; the lookup is a dict read per iteration,
  which moves the reference by well under 1%.

Measured 2026-12-04 on this project's 2-core machine, shared (load 2-3), --repeats 5, the tree
before the issue-23 pass (79b7394) and after it, one after the other:
    before   CLI pair 6.15 s, ratio 24.7x, both whole processes 8.96x, import mtpsim.run 1.16 s
    after    CLI pair 3.72 s, ratio 17.8x, both whole processes 7.98x, import mtpsim.run 0.59 s
    (CPU time of the pair, 6 alternating runs each, median: user 4.93 s -> 4.19 s)
The pass: no pandas, pyarrow, tqdm, hfconfig or process pool on the run's path (results keep
rows; mtpsim/rows.py writes the CSVs and the table as pandas did, byte for byte), the imports
frozen out of the cyclic collector's scans, less bookkeeping per decode iteration. Where the
rest goes: benchmarks/sim_phases.py (the two simulations ~70%, of which pricing in costs/ about
half; import mtpsim.run ~15%: numpy, simpy, pydantic and the schema's models).
Byte-compiled (`make install` now runs `python -m compileall mtpsim`: an editable install leaves
only sources, and these machines set PYTHONDONTWRITEBYTECODE, so every command recompiled every
module it imported), measured 2026-12-04 at load 0.6, back to back on the merged tree:
    sources only   CLI pair 4.26 s, ratio 15.0x, both whole processes 8.13x, import mtpsim.run 1.02 s
    byte-compiled  CLI pair 3.02 s, ratio 11.7x, both whole processes 5.75x, import mtpsim.run 0.42 s
Side by side (2026-12-04): `mtpsim run` now simulates a point and its `none` baseline in two
forked worker processes where there are two cores (run.py `_map`; before, a pair always ran one
after the other in the CLI's process), with the same rows bit for bit (tests/test_sim.py). On
this 2-core machine, 5 whole-process runs of this pair taken in turn with the tree before it:
wall 2.02 s against 2.70 s (median A/B 0.69), CPU 3.13 s against 2.80 s (two processes each load
the profile). cli_pair.py's ratio, noisy here (the reference loop alone took 0.19-0.31 s over the
day): 9.0-11.5x, from 11.7-12.0x.

Measured 2026-12-05 (the decode loop's pricing and bookkeeping, below), the same 2-core machine
shared with other sessions (load 2.0-2.5 throughout), the tree before (cf6c016) and after,
alternating, 6 runs each of `PYTHONPATH=<tree> .venv/bin/python benchmarks/cli_pair.py --repeats 1`
(medians; the reference loop took 0.25-0.26 s in both):
    before   CLI pair 3.73 s, ratio 14.7x, both whole processes 7.06x
    after    CLI pair 2.80 s, ratio 11.2x, both whole processes 5.38x
    (the pair as a whole process, 10 pairs run in turn at load ~2: wall 2.93 s against 3.98 s,
    median A/B 0.73; CPU 2.93 s against 4.00 s, 0.72. import mtpsim.run 0.49-0.56 s and
    `mtpsim --version` 0.09-0.11 s, either tree. At load 0.7, before: CLI pair 2.40 s, 9.5x.)
The pass: the common decode iteration (every request verifies what it drafted, no prompt chunk
rides along, no pass rows kept) is timed in one go (sim/timing.py IterationTiming, one per design
steps and batch size) by each pass's PassTimer (costs/pass_timer.py: plain_pass's time_s, the same
floats summed in the same order, from plain tuples: no PassCost, Work, OpTime or Hit per pass;
nextn's extend reuses its verify's attention core); prefill chunks of lengths seen before are not
priced again (Engine.prefill_memo); accept counts and a plain iteration's counts leave numpy
(bincount once per 65,536 drafts, an int). Rows bit for bit as before (tests/test_fast_paths.py
pins a timer against price_lens and a timed run against the same run priced pass by pass).
Where the rest goes, benchmarks/sim_phases.py at load 2.3 (one process, serially): interpreter
0.035 s, import mtpsim.run 0.53 s (numpy ~0.1-0.15, pydantic and building ~50 schema models ~0.2,
simpy and importlib.metadata ~0.05), scenario + baseline 0.06 s (~0.05 of it PyYAML parsing the
catalog files and the profile's meta.yaml in pure Python), profile load 0.03 s, simulate nextn
1.04 s (before: 1.64), none 0.77 s (1.28), table + run folder 0.17 s (mostly float reprs and
csv.writer for iterations.csv). In the nextn run ~43% is the passes' timing (~20 us a pass: the
attention core's table read, its split, the frame), ~16% records (ITL histograms, rows), the rest
the engine, simpy's event and numpy's acceptance draw and commit (~20 small array ops an
iteration); in the none run the timing is ~51%, records ~25%. With two workers the wall is the
parent's ~0.65 s before the fork and ~0.2 s after, plus the nextn worker's run.

Measured 2026-12-05 (start-up, YAML, the run folder and the acceptance draw, below), the same
2-core machine shared (load 1.4-2.1), the tree before (4c347ab) and after, each run twice in turn
as `MTPSIM_CACHE_DIR=<a folder of its own> PYTHONPATH=<tree> .venv/bin/python
benchmarks/cli_pair.py --repeats 3` (the cache folder: other sessions' runs on this machine
evicted the profile's entry from the shared one, and a miss re-parses the profile):
    before   CLI pair 2.56-2.59 s, ratio 10.6-10.9x, both whole processes 5.1-5.4x, import mtpsim.run 0.52-0.53 s
    after    CLI pair 2.40-2.41 s, ratio 9.8-9.9x,   both whole processes 4.8x,     import mtpsim.run 0.44-0.48 s
    (the pair as a whole process, 12 runs each taken in turn with the tree before: wall median
    A/B 0.93, CPU 2.52 -> 2.36 s; at load ~1.5 the pair's wall is ~1.5 s against ~1.6 s.
    `mtpsim --help` 0.088 -> 0.060 s; `mtpsim --version` 0.086-0.089 s either tree.)
benchmarks/sim_phases.py, the same runs in turn (`... benchmarks/sim_phases.py --repeats 3`, twice):
import mtpsim.run 0.44-0.48 -> 0.34-0.43 s, scenario + baseline 0.083-0.085 -> 0.041-0.044 s,
simulate nextn 0.93-1.01 -> 0.90-0.93 s, none ~0.7 s either, table + run folder 0.158 -> 0.126-0.135 s.
The pass: pydantic no longer reads the sections' field docstrings as each model is built (it
parsed every section's source at import: ~0.03-0.05 s); `mtpsim schema`, the only reader of
them, does (mtpsim/schema_json.py, the same text byte for byte). YAML is parsed by libyaml's C
parser where PyYAML has it, composed and checked by the same Python rules, and read again by the
pure-Python loader where it fails, so every error is worded as before (mtpsim/yamlfiles.py;
the engine catalog alone took ~0.02 s). --version looks the version up only when given
(importlib.metadata left every command's parser). The pool's shared tqdm lock (tqdm and
multiprocessing imported before the fork, ~0.013 s) only where a run's own bar can draw. The
acceptance draw skips the cap at the last token when every request has more than the steps
left, and counts the leading run of successes by one small matmul and a table lookup; the
per-token ITL reuses the tokens the commit worked out. rows.write_csv joins cells with commas
where csv.writer would quote none (its per-character scan was most of writing iterations.csv:
write_run 0.098 -> 0.076 s). Rows and files bit for bit as before (tests/test_fast_paths.py,
tests/test_sim.py, tests/test_yaml_parsers.py, tests/test_rows_csv.py).
Tried, not kept: the pair's second run in one forked child and the first in the CLI's own
process, no pool (saves the pool's start and one result's pickle, ~0.015-0.02 s on a timeline,
but no wall change over 12 runs in turn, median A/B 0.996, and +10 MB peak); pydantic
defer_build on every model (a run validates or dumps nearly every model anyway: import -0.01 s,
load +0.02 s); PYDANTIC_DISABLE_PLUGINS (the plugin scan is ~7 ms and importlib.metadata is
imported by pydantic regardless); gc thresholds in the workers (the nextn run sets off ~60
young collections: nothing to win); listing the package by os.walk for the profile cache's code
digest (no faster once the file system is warm).
Where the rest goes (after), one process serially (sim_phases.py): interpreter 0.03 s, import
mtpsim.run ~0.35 s (numpy ~0.08, pydantic and importlib.metadata ~0.07, building ~50 schema
models ~0.1), scenario + baseline ~0.04 s (of it ~0.025 s the profile's cache entry: the code
digest ~0.013 and unpickling ~0.01). With two workers: the pool's start ~0.02 s, the nextn run
~0.9 s (~0.14 of it the worker's cold start: tables, pass plans and frames built on first use,
numpy.random and numpy.ma imported; then ~150 us an iteration, ~50 of them the passes' timing),
its result's pickle ~0.015 s, the run folder ~0.07 s.

Measured 2026-12-05 (the decode loop's remembered plain iterations, the frame's pricer, below), the
same 2-core machine (load 1.1-1.3), the tree before (e26676c) and after (339e716), each with a
cache folder of its own (MTPSIM_CACHE_DIR) and warmed once. 5 runs each, alternating, of
`PYTHONPATH=<tree> .venv/bin/python benchmarks/sim_pair.py` (medians):
    before   nextn 0.85 s, none 0.64 s, pair 1.50 s (runs 1.47-1.55)
    after    nextn 0.81 s, none 0.35 s, pair 1.16 s (runs 1.12-1.18)
    (CPU seconds of simulate(nextn) in one process, 3 alternating: first run 0.84-0.87 -> 0.79-0.81,
    second 0.76-0.80 -> 0.69-0.73.)
`... benchmarks/cli_pair.py --repeats 3`, each tree twice in turn:
    before   CLI pair 1.60, 1.52 s, ratio 7.12x, 6.84x, both whole processes 4.10x, 4.05x
    after    CLI pair 1.49, 1.45 s, ratio 6.72x, 6.19x, both whole processes 3.88x, 3.87x
    (the nextn worker is the pair's wall; the none run, in the other worker, gained most.)
The pass, each step measured as the least CPU seconds of 5 simulates in one process, the tree
before the step and after it in turn, 3 rounds (medians): a plain iteration's seconds are
remembered by the batch's (KV sum, longest KV) in its IterationTiming (sim/timing.py; none
0.68 -> 0.40 s): with the timing's n requests and each pass's q and offset fixed, those two ints
give every BatchLens field a pass reads, so the key is complete where every core has a
CorePricer and no sparse top-k (PassTimer.by_sums: a window's or DSA's cap reads each request's
length, and those take no memo); the none pair run has 2.0k distinct of 16.0k iterations, the
nextn one 5,569 of 5,573, so speculative iterations take none (a memo of misses cost nextn ~6%).
A plain commit is a count until kv or remaining is read (RunningBatch properties; whole numbers,
so adding k at once is adding 1 k times), which a remembered iteration never does (none 0.41 ->
0.34 s). RunningBatch.all_beyond answers "no cap at the last token" and "no one finished" from a
floor (the last min, less steps + 1 a speculative commit, 1 a plain one) without numpy's min
(nextn 0.81 -> 0.78 s). The pass frame is priced by its longest KV without its Op (frame
pricers: roofline.py RooflineFrame, the frame's bytes over its group's rate, the only part that
moves with the KV; core_pricer.py FramePricer, a profile's pass table read along kv; ops.py
frame_bytes, pass_frame's bytes in its order, one home), ~3.2k frames in the nextn run at ~10 us
each before (nextn 0.78 -> 0.73 s, none 0.36 -> 0.33 s). PassTimer.total adds the frame's row
unrolled and builds no row tuple where a pass has no fixed rows; a pass without a KV offset is
not shifted (nextn 0.72 -> 0.70 s, 6 rounds). Rows and files bit for bit as before (run folders
of scenarios/quickstart.yaml and this pair diffed against the tree before, sim_wall_s and the
profile's path aside; tests/test_fast_paths.py pins the frame pricers against costs.time, the
floor against the arrays, and that the none scenario's timed run, remembered iterations
included, equals its run priced pass by pass).
Tried, not kept: the memo for speculative iterations too (above); the shared acceptance row as
a read-only contiguous copy rather than a broadcast view (the draw's comparison 2.1 -> 0.7 us
alone) with LEADING_RUN.take for the lookup (1.5 -> 1.2 us): nextn 0.684 -> 0.671 s over 5
rounds, -1.9%, within noise. Timed alone and left: np.add.reduce / np.maximum.reduce for the
commit's sum and max (~0.2 us less each); iteration_at, timing_at and kept_drafts (< 0.3 us each).
Where the rest goes (after, cProfile of the warm nextn run): the passes' timing ~39% (three
attention cores at ~4 us, CorePricer.split ~2.6 of it, read_slice ~1.3 of that; four pass totals
~1 us; the batch's lens and their shifts ~1.2 us each), the acceptance draw ~9 us (rng.random
~2.3, the comparison with the broadcast row ~2, the matmul and lookup ~1.5 each), the commit and
records ~15 numpy ops on 64-element arrays at ~1-2 us each, the simpy event and the generator
chain. The none run: ~17 us an iteration, its timing remembered 7 of 8 times; the rest records
(chunk gaps, two histogram sums, the iteration row), the event, the engine's bookkeeping.

The merged tree of that day (57c45d6: the speed pass above with the bad-input and MoE-runner work),
quiet machine (load 0.4), `MTPSIM_CACHE_DIR=/tmp/mcache .venv/bin/python benchmarks/cli_pair.py
--repeats 3`: CLI pair 1.34 s (runs 2.03, 1.34, 1.34; the first fills the cache folder), reference
0.22 s, ratio 6.03x, both whole processes 3.46x; import mtpsim.run 0.339 s, `mtpsim --version` 0.075 s.

Measured 2026-12-05 (imports only some runs need, below), the 2-core machine shared with another
job (load 2.0-2.2), both trees byte-compiled, the tree before (5b1606d) and after (8fcc2a8), each run
three times in turn as `MTPSIM_CACHE_DIR=<a folder per tree, warmed by one run> PYTHONPATH=<tree>
.venv/bin/python benchmarks/cli_pair.py --repeats 3`:
    before   CLI pair 1.71, 1.79, 1.64 s, ratio 7.78x, 8.25x, 7.38x, import mtpsim.run 0.439, 0.436, 0.389 s
    after    CLI pair 1.80, 1.77, 1.62 s, ratio 8.12x, 8.22x, 7.49x, import mtpsim.run 0.427, 0.382, 0.386 s
    (no change the pair's noise can show. `import mtpsim.run` alone, 25 runs each in turn at load
    ~2.2: -X importtime median 0.397 -> 0.389 s; CPU seconds of the whole process, 40 runs each in
    turn at load 2.4-4.2: median 0.382 -> 0.380 s, least 0.372 -> 0.366 s. What the modules left
    out cost, imported after mtpsim.run: 6.1-6.9 ms.)
The pass: `import mtpsim.run` no longer imports the trace reader (mtpsim.tracefiles: checks.py,
cache_settings.py, sim/__init__.py, sim/arrivals.py and run.py's heaviness check import it where a
workload is a trace, as workload_advice.py did), run_reader.py (--plot), tree.py (topk > 1),
shrink.py (a profile's layer rows) or difflib (an unknown catalog name's hint); the pair's run
imports none of them. Looked at and left: importlib.metadata (~18 ms with the email and zipfile
modules it pulls in) is imported by pydantic's plugin loader as the first model is built, whatever
mtpsim does, and its entry-point scan (~7 ms, in mtpsim.sections' time: the first model) is skipped only
by PYDANTIC_DISABLE_PLUGINS, which would switch off a user's own pydantic plugins; yaml.reader
(~7.5 ms: the regex it compiles at import) comes with `import yaml`, which every run needs for its
scenario; annotated_types (~9 ms) comes with pydantic; the own time of mtpsim.schema (~12 ms),
specs, sections, engines, engine_memory and the other schema modules (~5-7 ms each) is building
the pydantic models a run validates (defer_build only moves it, above); the simulator and
cost-model modules of features the pair leaves off (sim/mixed.py, sim/prefix_cache.py,
costs/dp_attention.py and the like, ~1 ms each) are imported by several simulator modules and
called inside the loop where the feature is on.

The floor (2026-12-05, two runs at load 0.7 and 1.6): the libraries a run cannot start without,
imported alone in a fresh interpreter, take 0.19-0.25 s (numpy 0.074, pydantic's BaseModel and
Field 0.095, simpy 0.035, PyYAML 0.017 s, each the least of 3 alone): at or above the 0.2 s
start-up target before mtpsim's own modules, which build ~50 pydantic models and ~80 dataclasses
(~0.1 s); and interpreter + libraries + the reference's own loop come to 1.98-2.19x that loop,
above the 1.6x target for a CLI that did nothing the reference does not. The script prints both
as `floor:` lines.

Start-up: `python -X importtime -c "import mtpsim.cli"`, `mtpsim --version` as a whole process
(what every command pays before it runs: building the parser included; target at most 0.2 s),
and the import time of mtpsim.run (what `mtpsim run` adds: numpy, pydantic, simpy and the
simulator; pandas no longer).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_loop  # noqa: E402 (the reference, importable alone: numpy and simpy only)
from sim_pair import NEXTN  # noqa: E402 (the pair's scenario, one home)

ROOT = Path(__file__).resolve().parent.parent
PER_DEPTH = NEXTN["acceptance"]["per_depth"]


def time_reference() -> float:
    started = time.perf_counter()
    reference_loop.pair(PER_DEPTH)
    return time.perf_counter() - started


def time_reference_process() -> float:
    """The reference loop as a whole process: interpreter start, numpy and simpy, the pair."""
    started = time.perf_counter()
    subprocess.run([sys.executable, str(Path(reference_loop.__file__)), ",".join(map(str, PER_DEPTH))], check=True)
    return time.perf_counter() - started


def time_version() -> float:
    """`mtpsim --version` as a whole process: what every command pays before it runs."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim.cli", "--version"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def time_cli(scenario: Path, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim.cli", "run", str(scenario), "--out", str(out)], check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def import_s(module: str) -> float:
    """The cumulative import time of `module` in a fresh interpreter (-X importtime's last line)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                          text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = [row for row in done.stderr.splitlines() if row.rstrip().endswith(f"| {module}")][-1]
    return int(line.split("|")[1]) / 1e6


# The libraries `mtpsim run` cannot start without: numpy (the acceptance draw), simpy (the loop),
# PyYAML (the scenario) and pydantic's models (the schema every scenario is checked against).
LIBRARIES = "import numpy, simpy, yaml; from pydantic import BaseModel, Field"


def floor_s() -> tuple[float, float]:
    """(a bare interpreter's start as a whole process, the libraries' import in a fresh one): what
    any CLI built on them pays before its first line of its own code runs."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - started
    done = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); " + LIBRARIES
                           + "; print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
    return bare, float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "pair.yaml"
        scenario.write_text(yaml.safe_dump({**NEXTN, "name": "cli-pair"}, sort_keys=False))
        cli, ref, ref_process = [], [], []
        for i in range(args.repeats):
            ref.append(time_reference())
            ref_process.append(time_reference_process())
            cli.append(time_cli(scenario, Path(tmp) / f"run{i}"))
    imports = {m: statistics.median(import_s(m) for _ in range(args.repeats)) for m in ("mtpsim.cli", "mtpsim.run")}
    version_s = statistics.median(time_version() for _ in range(args.repeats))
    floors = [floor_s() for _ in range(args.repeats)]
    bare_s, libraries_s = statistics.median(f[0] for f in floors), statistics.median(f[1] for f in floors)
    cli_s, ref_s, process_s = statistics.median(cli), statistics.median(ref), statistics.median(ref_process)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.repeats}")
    print(f"CLI pair (whole process)  {cli_s:.2f} s   runs: {', '.join(f'{x:.2f}' for x in cli)}")
    print(f"reference simpy loop      {ref_s:.2f} s   runs: {', '.join(f'{x:.2f}' for x in ref)}")
    print(f"  as a whole process      {process_s:.2f} s   runs: {', '.join(f'{x:.2f}' for x in ref_process)}")
    print(f"ratio                     {cli_s / ref_s:.2f}x   (target <= 1.6x)")
    print(f"ratio, both whole processes {cli_s / process_s:.2f}x")
    print(f"import mtpsim.cli         {imports['mtpsim.cli']:.3f} s")
    print(f"mtpsim --version          {version_s:.3f} s (whole process, parser included; target <= 0.2 s)")
    print(f"import mtpsim.run         {imports['mtpsim.run']:.3f} s (what `mtpsim run` adds before it reads the scenario)")
    # The floor under both targets: a CLI on these libraries that did no more than the reference
    # loop's work, and no work of its own at start-up, would still take interpreter + libraries + loop.
    print(f"floor: the libraries alone {libraries_s:.3f} s in a fresh interpreter ({LIBRARIES.removeprefix('import ')});"
          f" interpreter start {bare_s:.3f} s")
    print(f"  best ratio any CLI on them could reach: {(bare_s + libraries_s + ref_s) / ref_s:.2f}x"
          f" (interpreter + libraries + the reference's own loop, over the loop)")


if __name__ == "__main__":
    main()
