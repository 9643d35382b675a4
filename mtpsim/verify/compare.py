"""The simulated side of `mtpsim verify`, without torch: the same shrunken configuration as a
scenario mapping, simulated, and set beside the measurement.

Predicted and measured are compared over the same decode iterations: the simulation admits the
B requests at once (one prefill), then runs decode iterations with all B running; rows
warmup..warmup+iterations of those are the ones the measurement timed. Per pass kind the
comparison is the mean seconds per iteration; TPS is tokens emitted / summed iteration time.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mtpsim import scenario as sc
from mtpsim.acceptance_histogram import write_histogram
from mtpsim.designs import DesignShape

KINDS = ("iteration_s", "draft_s", "verify_s", "extend_s")


def simulated_mapping(s, model: dict, prompt_lens: list[int], accept_counts, folder: Path, hardware: str,
                      profile: str | None, total_iterations: int) -> dict:
    """A scenario mapping for the simulator describing what verification built and ran."""
    steps = s.speculative.steps
    out_len = 2 + (total_iterations + 2) * (steps + 1)  # nobody finishes inside the compared window
    trace = folder / "trace.csv"
    pd.DataFrame({"arrival_s": 0.0, "input_len": prompt_lens, "output_len": out_len}).to_csv(trace, index=False)
    mapping = {
        "name": f"{s.name}-simulated", "model": model, "hardware": hardware,
        # the loop drafts speculative.steps every iteration: a steps policy would predict another loop
        "speculative": s.speculative.model_dump(exclude_none=True, exclude={"policy"}),
        "workload": {"arrival": "trace", "trace": str(trace)},  # the trace's rows are the requests
        # the loop runs eagerly and synchronously: no graphs, no host/device overlap
        "engine": {"max_running_requests": len(prompt_lens), "cuda_graphs": False, "overlap_schedule": False,
                   "chunked_prefill_tokens": max(sum(prompt_lens), 1)},
        "cost": {"model": "calibrated", "profile": profile} if profile else {"model": "roofline"},
        "seed": s.seed,
    }
    if DesignShape.of(s.speculative).steps:  # a design with drafts: the measured accept histogram
        hist = folder / "accept_histogram.csv"
        write_histogram(accept_counts, hist)
        mapping["acceptance"] = {"histogram": str(hist)}
    return mapping


def fits_memory(mapping: dict, where: str) -> None:
    """The simulated deployment's KV pool holds its longest request, or the ScenarioError the
    simulation would raise (memory.check_fits): found before the real loop runs, not after."""
    from mtpsim.costs import build_pricer
    from mtpsim.memory import check_fits, memory_budget, pool_rule
    from mtpsim.tracefiles import scan
    scenario = sc.validate(mapping, where)
    budget = memory_budget(build_pricer(scenario), DesignShape.of(scenario.speculative), pool_rule(scenario))
    check_fits(scenario, budget, scan(scenario.workload.trace).longest)


def predict(mapping: dict, where: str, warmup: int, iterations: int) -> pd.DataFrame:
    """Simulated decode iterations warmup..warmup+iterations (kind, duration, pass times)."""
    from mtpsim.sim import simulate
    scenario = sc.validate(mapping, where)
    decode = simulate(scenario).iterations.query("kind == 'decode'")
    return decode.iloc[warmup:warmup + iterations].rename(columns={"duration_s": "iteration_s"})


def comparison(design: str, batch: int, measured: pd.DataFrame, predicted: pd.DataFrame) -> pd.DataFrame:
    """Rows design,batch,kind,predicted,measured,rel_error; rel_error = (predicted - measured) / measured."""
    rows = [{"kind": "tps", "predicted": predicted.emitted.sum() / predicted.iteration_s.sum(),
             "measured": measured.emitted.sum() / measured.iteration_s.sum()}]
    rows += [{"kind": k, "predicted": predicted[k].mean(), "measured": measured[k].mean()} for k in KINDS]
    df = pd.DataFrame(rows)
    both_zero = (df.measured == 0) & (df.predicted == 0)  # a pass kind the design does not run
    df["rel_error"] = np.where(df.measured > 0, (df.predicted - df.measured) / df.measured.where(df.measured > 0, 1),
                               np.where(both_zero, 0.0, np.nan))
    df.insert(0, "batch", batch)
    df.insert(0, "design", design)
    return df


def plot(table: pd.DataFrame, path: Path) -> None:
    """Predicted vs measured per pass kind (ms per iteration) and TPS, one panel per design x batch."""
    from mtpsim.mpl import pyplot
    plt = pyplot()
    groups = list(table.groupby(["design", "batch"], sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.2), squeeze=False)
    for ax, ((design, batch), g) in zip(axes[0], groups):
        g = g[(g.kind != "tps") & (g.measured > 0)]
        x = np.arange(len(g))
        ax.bar(x - 0.2, g.predicted * 1e3, 0.4, label="predicted")
        ax.bar(x + 0.2, g.measured * 1e3, 0.4, label="measured")
        ax.set_xticks(x, [k.removesuffix("_s") for k in g.kind])
        tps = table[(table.design == design) & (table.batch == batch) & (table.kind == "tps")].iloc[0]
        ax.set_title(f"{design} B={batch}: TPS err {tps.rel_error:+.0%}", fontsize=9)
        ax.set_ylabel("ms per iteration")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
