"""Command line: `mtpsim run | recommend | search | cost | plot | calibrate | verify | models | hardware | schema`.

The parser (every command's flags) and the process around a command: its one-line errors
(status 2), SIGTERM, a closed or full stdout. What each command does is commands.py's.

Bad input of any kind exits with status 2 and one line naming the file, the key and the reason.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys

from mtpsim import commands, interrupts
from mtpsim.cli_types import MAX_BATCH, MAX_CONTEXT, MAX_JOBS, address, bounded, folder, input_path, named
from mtpsim.errors import MAX_WHERE, ScenarioError, cut_middle, line
from mtpsim.limits import MAX_SEEDS, MAX_VISITS

# The command line imports only what the command given needs: `mtpsim --help` or a one-line
# argument error stays quick, and pandas, pydantic and the simulator load with the commands.


def _add_scenario(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=input_path("name the scenario YAML file"), help="scenario YAML file")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a key (value parsed as YAML); repeatable")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (not the usage text), status 2, like every other bad input;
    and no abbreviated flags: argparse would read `--seed 2` (the scenario's seed) as `--seeds 2`
    and run two replicates without a word."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def _print_message(self, message: str, file=None) -> None:
        """As argparse's, without swallowing an OSError: --help to a full device is an error too."""
        if message:
            (file or sys.stderr).write(message)

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but a flag that takes one value, given twice, is an error (argparse keeps
        the last without a word); --set and other repeatable flags repeat as they should."""
        self._given = list(sys.argv[1:] if args is None else args)  # for an unknown flag's hint (_meant)
        seen = set()
        for token in args or ():
            flag = token.split("=", 1)[0] if token.startswith("--") else None
            action = self._option_string_actions.get(flag) if flag else None
            if action is None or action.nargs == 0 or isinstance(action, argparse._AppendAction):
                continue
            if flag in seen:
                self.error(f"argument {flag}: given more than once: give it once")
            seen.add(flag)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        if message.startswith("unrecognized arguments: "):
            message += self._meant(message.removeprefix("unrecognized arguments: ").split())
        with contextlib.suppress(OSError):
            print(line("error", f"{message} (see {self.prog} --help)", self.prog), file=sys.stderr)
        sys.exit(2)

    def _meant(self, tokens: list[str]) -> str:
        """` (did you mean --seeds? ...)` for the first unknown flag that starts a known one, or is
        close to one: flags are never abbreviated, so `--seed` stops here instead."""
        import difflib  # an unknown flag's hint only: not every command's start-up

        known = set(self._option_string_actions)
        given = getattr(self, "_given", [])
        for action in self._actions:  # and the flags of the command given
            if isinstance(action, argparse._SubParsersAction):
                command = next((t for t in given if t in action.choices), None)
                if command is not None:
                    known |= set(action.choices[command]._option_string_actions)
        for token in tokens:
            flag = token.split("=", 1)[0]
            if not flag.startswith("--"):
                continue
            close = sorted(k for k in known if k.startswith(flag)) or difflib.get_close_matches(flag, sorted(known), 3)
            if close:
                return f" (did you mean {' or '.join(close[:3])}? flags are given whole, not abbreviated)"
        return ""


class _Version(argparse._VersionAction):
    """--version, the installed version looked up when the flag is given: importlib.metadata's
    distribution scan (~5 ms, ~20 ms with its import) is no part of building every command's parser."""

    def __call__(self, parser, namespace, values, option_string=None):
        from mtpsim import __version__
        self.version = f"mtpsim {__version__}"
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mtpsim", description="Predict MTP speculative-decoding speed.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_run, _add_recommend, _add_search, _add_plot, _add_cost, _add_calibrate, _add_verify, _add_catalog_commands):
        add(sub)
    return parser


def _add_run(sub) -> None:
    """`mtpsim run`: simulate a scenario's points and their baselines."""
    p = sub.add_parser("run", help="simulate every sweep point and its no-speculation baseline")
    _add_scenario(p)
    p.add_argument("--out", type=folder, help="run folder (default runs/<name>-<timestamp>; must not hold files)")
    p.add_argument("--jobs", type=bounded(1, MAX_JOBS), help=f"worker processes for the runs (each point, its seeds "
                   f"and baselines), 1..{MAX_JOBS} (default: one per core; 1 runs them one after the other)")
    p.add_argument("--seeds", metavar="N", help=f"run every point and baseline over N seeds (seed, seed + 1, ...), "
                   f"1..{MAX_SEEDS}, and report means with 95%% intervals (default: the scenario's seeds, 1)")
    p.add_argument("--backend", choices=["pool", "ray"], default="pool", help="where the runs go: worker "
                   "processes on this machine (pool), or Ray tasks (ray; needs pip install 'mtpsim[ray]')")
    p.add_argument("--address", type=address, help="with --backend ray: the cluster (host:port, or ray://host:10001; "
                   "default RAY_ADDRESS, else a local Ray with --jobs CPUs)")
    p.add_argument("--plot", action="store_true", help="also draw PNGs into the run folder")
    p.add_argument("--trace", action="store_true",
                   help="also record every pass: passes.csv and trace.json (Chrome/Perfetto timeline)")
    p.add_argument("--peer", action="store_true", help="also ask aiconfigurator 0.12.0 (pip install 'mtpsim[peer]') "
                   "for each point it can express, and print its TPOT, tokens/s and speedup beside mtpsim's "
                   "(peer.csv)")
    p.set_defaults(func=commands.run)


def _add_recommend(sub) -> None:
    """`mtpsim recommend`: the best steps per batch size, the break-even batch, a policy."""
    p = sub.add_parser("recommend", help="the steps maximising TPS and per-user TPS at each batch size, "
                       "the break-even batch, and a steps_by_batch policy")
    _add_scenario(p)
    p.add_argument("--batch", metavar="B1,B2,...", help="batch sizes (closed-loop concurrency), comma-separated "
                   "(default 1,2,4,8,16,32,64)")
    p.add_argument("--topk", metavar="K1,K2,...", help="topk values to try, for designs that draft trees (default: "
                   "chains, plus trees up to 4 wide and the scenario's own where the acceptance gives per-rank columns and the "
                   "engine runs trees)")
    p.add_argument("--max-steps", type=bounded(1, 64), help="most steps to try (default: as many as the "
                   "acceptance profile's depths and the design allow)")
    p.add_argument("--jobs", type=bounded(1, MAX_JOBS), help=f"worker processes, 1..{MAX_JOBS} (default: one per core)")
    p.add_argument("--out", type=folder, help="output folder (default runs/<name>-recommend-<timestamp>; must not hold files)")
    p.add_argument("--seeds", type=bounded(1, MAX_SEEDS), help="run every setting over N seeds and pick, at each "
                   "batch, the fewest steps that no other setting beats beyond the TPS intervals (default: the "
                   "scenario's `seeds` when it sets them, else 3; 1: the argmax)")
    p.add_argument("--peer", action="store_true", help="also ask aiconfigurator 0.12.0 (pip install 'mtpsim[peer]') "
                   "every setting at every batch, and print its pick and break-even beside mtpsim's (peer.csv)")
    p.set_defaults(func=commands.recommend)


def _add_search(sub) -> None:
    """`mtpsim search`: the best deployment of N GPUs under latency targets (mtpsim/search/cli.py)."""
    from mtpsim.search.cli import add_arguments
    p = sub.add_parser("search", help="which deployment of N GPUs to run: layouts x MTP steps x load under "
                       "latency targets, the Pareto frontier with and without MTP, launch flags")
    _add_scenario(p)
    add_arguments(p)
    p.set_defaults(func=commands.search)


def _add_plot(sub) -> None:
    """`mtpsim plot`: redraw a run folder's figures."""
    p = sub.add_parser("plot", help="draw the PNGs of a finished run folder")
    p.add_argument("run_dir", type=input_path("name the folder `mtpsim run` wrote"), help="a folder written by `mtpsim run`")
    p.set_defaults(func=commands.plot)


def _add_cost(sub) -> None:
    """`mtpsim cost`: one iteration priced pass by pass."""
    p = sub.add_parser("cost", help="price one iteration pass by pass, with the memory budget")
    _add_scenario(p)
    p.add_argument("--batch", type=bounded(1, MAX_BATCH), help=f"running requests on one replica, 1..{MAX_BATCH} "
                   "(default: a replica's share of workload.concurrency, as run spreads it over parallel.dp; "
                   "a batch load without concurrency: its num_requests)")
    p.add_argument("--context", type=bounded(0, MAX_CONTEXT), help=f"committed KV length per request, "
                   f"0..{MAX_CONTEXT} (default: the mean prompt, input_len's or a trace's)")
    p.add_argument("--ops", action="store_true", help="also list every op: time, bound, and which model priced it")
    p.add_argument("--prompt", type=bounded(1, MAX_CONTEXT), help=f"also price the prefill of one prompt of this "
                   f"many tokens, 1..{MAX_CONTEXT}, in the engine's prefill chunks (with --ops, op by op)")
    p.set_defaults(func=commands.cost)


def _add_calibrate(sub) -> None:
    """`mtpsim calibrate`: time this machine, or convert a measured database."""
    p = sub.add_parser("calibrate", help="time the ops on this machine's device and write a profile (needs torch)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="the device to time (default: auto)")
    p.add_argument("--quick", action="store_true", help="a small grid (about a sixth of the full grid's shapes)")
    p.add_argument("--out", type=folder, help="profile folder (default profiles/<device> in the current folder)")
    p.add_argument("--threads", type=bounded(1, 4096), help="CPU threads for torch, 1..4096 (default: all cores)")
    p.add_argument("--visits", type=bounded(1, MAX_VISITS), help="passes over the shapes, each taking a share of "
                   "every shape's repeats, so a slow spell of a shared machine is spread over all shapes, "
                   f"1..{MAX_VISITS} (default: CPU 6, CPU --quick 3, CUDA 1)")
    p.add_argument("--from", dest="source", choices=["aiconfigurator"],
                   help="convert a public measured kernel database instead of timing this machine "
                        "(needs: pip install 'mtpsim[aiconfigurator]')")
    p.add_argument("--system", type=named("name the GPU system, e.g. h200_sxm"),
                   help="with --from aiconfigurator: the GPU system, e.g. h200_sxm or b200_sxm "
                   "(default h200_sxm; an unknown one is refused with the list)")
    p.add_argument("--backend", choices=["sglang", "trtllm", "vllm"],
                   help="with --from aiconfigurator: the engine the kernels were measured under (default sglang)")
    p.add_argument("--version", type=named("name the engine version, or leave --version out for the database's current one"),
                   help="with --from aiconfigurator: the engine version (default: the "
                   "database's current one; older versions fill the families it lacks)")
    p.add_argument("--archive", type=input_path("name an aiconfigurator systems folder"),
                   help="with --from aiconfigurator: an older aiconfigurator systems folder "
                   "(aic-core/src/aiconfigurator_core/systems of a checkout) for the tables the installed "
                   "package no longer ships: SGLang's Triton fused-MoE rows (moe_triton); without it that "
                   "family is left out")
    p.set_defaults(func=commands.calibrate)


def _add_verify(sub) -> None:
    """`mtpsim verify`: the real decode loop against the prediction."""
    p = sub.add_parser("verify", help="run the real decode loop in PyTorch and compare it with the prediction")
    _add_scenario(p)
    p.add_argument("--out", type=folder, help="output folder (default runs/<name>-verify-<timestamp>)")
    p.add_argument("--calibrate", action="store_true", help="measure a profile on the spot instead of the committed one")
    p.set_defaults(func=commands.verify)


def _add_catalog_commands(sub) -> None:
    """`mtpsim models | hardware | engines | schema`: what the catalog and the schema hold."""
    for kind, what in (("models", "models: layers, width, experts, draft layers"),
                       ("hardware", "GPUs: memory, bandwidth, default pricing")):
        p = sub.add_parser(kind, help=f"list the catalog's {what} (MTPSIM_CATALOG's folders first)")
        p.set_defaults(func=commands.list, kind=kind)

    p = sub.add_parser("engines", help="list the serving engines: known releases and version rules")
    p.set_defaults(func=commands.engines)

    p = sub.add_parser("schema", help="print the JSON Schema of a scenario file")
    p.set_defaults(func=commands.schema)


def main(argv: list[str] | None = None) -> int:
    # the commands draw into files only (plots.py uses Agg): a user's MPLBACKEND, which
    # `import matplotlib` reads and refuses when unknown, names no backend they use
    os.environ["MPLBACKEND"] = "Agg"
    if argv is None:  # the command itself (not a caller's in-process call): a kill cleans up as Ctrl-C does
        interrupts.on_sigterm()
    if sys.stderr is None:  # started with 2>&-: errors go nowhere rather than fail
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 -- the process's stderr from here on
    if sys.stdout is None:  # started with >&-: every command prints
        return _fail("<stdout>: closed (started with >&-): redirect it to a file or /dev/null")
    _escape_unencodable()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except OSError as err:  # --help or --version to a full device
        _drop_stdout()
        raise SystemExit(_fail(f"<stdout>: cannot write: {err.strerror or err}")) from None
    except SystemExit as exc:  # --help, --version: what they printed must reach stdout too
        if exc.code == 0:
            try:
                sys.stdout.flush()
            except OSError as err:
                _drop_stdout()
                raise SystemExit(_fail(f"<stdout>: cannot write: {err.strerror or err}")) from None
        raise
    try:
        code = args.func(args)
        sys.stdout.flush()  # a full or closed stdout fails here at the latest, not at exit
        return code
    except ScenarioError as exc:
        return _fail(exc.message)
    except KeyboardInterrupt as exc:  # its message, where given, says what the stop left behind
        print("mtpsim: interrupted" + (f": {exc.args[0]}" if exc.args else ""), file=sys.stderr)
        return interrupts.exit_status()
    except BrokenPipeError:  # `mtpsim ... | head`: the reader left; say nothing more
        _drop_stdout()
        return 0
    except OSError as exc:  # files are named by outputs.writing; what is left is stdout (> /dev/full)
        if exc.filename is None:
            _drop_stdout()
            return _fail(f"<stdout>: cannot write: {exc.strerror or exc}")
        return _fail(f"{cut_middle(str(exc.filename), MAX_WHERE)}: {exc.strerror or exc}")


def _escape_unencodable() -> None:
    """Text a stream's encoding cannot hold (a scenario's `question` in a cp1252 console, a file
    name under PYTHONIOENCODING=ascii) printed as backslash escapes, not a UnicodeEncodeError
    halfway through a report: the run folder's files keep it as written."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):  # a capture, a closed stream
            stream.reconfigure(errors="backslashreplace")


def _fail(message: str) -> int:
    with contextlib.suppress(OSError):  # stderr itself full: the status still says it
        print(line("error", message), file=sys.stderr)
    return 2


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so what is left in its buffer is not written (and failed) at exit."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):  # a test's capture is no file
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
