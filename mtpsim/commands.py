"""What each command does once its flags are parsed (cli.py builds the parser and runs the
process: its errors, signals and stdout): each handler takes argparse's namespace, imports what
its command needs when it runs (so `mtpsim --help` and a one-line argument error stay quick), and
returns the exit status.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import sys

from mtpsim.errors import ScenarioError, cut_middle, line


@contextlib.contextmanager
def _imported_frozen(module: str):
    """`module`, imported with the cyclic collector paused (an import builds many objects and no
    garbage: the collections it would set off find nothing), then frozen (gc.freeze) while the
    command runs, so that a full collection scans what the command makes, not every class and
    function the imports left (pandas, pydantic, the simulator). Unfrozen after, for a caller
    that goes on in the same process."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        imported = importlib.import_module(module)
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    try:
        yield imported
    finally:
        gc.unfreeze()


def run(args) -> int:
    with _imported_frozen("mtpsim.run") as module:
        module.run_scenario(args.scenario, args.sets, args.out, args.jobs, plot=args.plot, trace=args.trace,
                         seeds=args.seeds, backend=args.backend, address=args.address, peer=args.peer)
    return 0


def recommend(args) -> int:
    from mtpsim.recommend_command import run_recommend
    run_recommend(args.scenario, args.sets, args.batch, args.topk, args.max_steps, args.jobs, args.out,
                  seeds=args.seeds, peer=args.peer)
    return 0


def search(args) -> int:
    from mtpsim.search.cli import run_from_args
    run_from_args(args)
    return 0


def plot(args) -> int:
    from mtpsim.run_reader import plot_run
    plot_run(args.run_dir)
    return 0


def cost(args) -> int:
    from mtpsim.cost_command import cost_command
    return cost_command(args.scenario, args.sets, args.batch, args.context, args.ops, args.prompt)


def list(args) -> int:
    from mtpsim.listing import list_entries
    return list_entries(args.kind)


def engines(args) -> int:
    from mtpsim.listing import list_engines
    return list_engines()


def schema(args) -> int:
    from mtpsim.listing import print_schema
    return print_schema()


# calibrate's flags that belong to one of its two jobs: given to the other, they would do nothing
CONVERTING, TIMING = ("system", "backend", "version", "archive"), ("device", "quick", "threads", "visits")


def calibrate(args) -> int:
    """Time this machine (torch), or convert a measured database (torch-free)."""
    converting = args.source == "aiconfigurator"
    for flag in TIMING if converting else CONVERTING:
        if getattr(args, flag) not in (None, False):
            raise ScenarioError(f"--{flag}", "", "times this machine; it does nothing with --from aiconfigurator"
                                if converting else "goes with --from aiconfigurator")
    if converting:
        from mtpsim.calibration import aiconfigurator
        args.system, args.backend = args.system or "h200_sxm", args.backend or "sglang"
        return aiconfigurator.main(args)
    args.device = args.device or "auto"
    return torch_command("mtpsim.calibration.command", args)


def torch_command(module: str, args) -> int:
    """calibrate and verify import torch; say how to get it rather than fail with ImportError."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        print("mtpsim: error: this command needs PyTorch: pip install 'mtpsim[torch]'", file=sys.stderr)
        return 2
    try:  # installed, but broken: a CUDA library it cannot load, a NumPy it was not built for
        importlib.import_module("torch")  # by name: only these two commands import it (tests/test_imports.py)
    except (ImportError, OSError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        print(line("error", f"this command needs PyTorch, and `import torch` fails: {cut_middle(reason, 200)} "
                   "(reinstall it: pip install 'mtpsim[torch]')"), file=sys.stderr)
        return 2
    return importlib.import_module(module).main(args)


def verify(args) -> int:
    return torch_command("mtpsim.verify.command", args)
