"""`mtpsim search`'s flags and how they reach command.run_search (cli.py adds the subcommand)."""
from __future__ import annotations

from mtpsim.cli_types import MAX_JOBS, Once, address, bounded, folder, output_path
from mtpsim.errors import ScenarioError
from mtpsim.limits import MAX_SEEDS, MAX_USERS
from mtpsim.search import DEFAULT_CACHE

# Only the limits (and the package's DEFAULT_CACHE) at import: cli.py adds these flags for every
# command (`mtpsim --help` too), and recommend and the targets bring pandas and the scenario schema,
# which only the search needs.


def add_arguments(p) -> None:
    """`mtpsim search`'s flags (the types: mtpsim/cli_types.py)."""
    p.add_argument("--gpus", type=bounded(1, 4096), help="GPUs to deploy on (or search.gpus in the scenario)")
    p.add_argument("--concurrency", metavar="C1,C2,...", help="closed-loop users over all replicas "
                   "(default search.concurrency, else 1,2,4,...,256)")
    p.add_argument("--rates", metavar="R1,R2,...", help="Poisson loads in requests per second, instead of users")
    p.add_argument("--max-steps", type=bounded(1, 64), help="most draft steps to try (default: what the design, "
                   "model and acceptance allow)")
    p.add_argument("--disagg", action="store_true", default=None, help="also try disaggregated prefill / decode pools "
                   "(xPyD) of the same GPUs, the ratio matched to the load (or search.disaggregated)")
    p.add_argument("--topk", metavar="K1,K2,...", help="topk values, for designs that draft trees (default: chains, "
                   "plus trees up to 4 wide and the scenario's own where the acceptance gives per-rank columns and the "
                   "engine runs trees)")
    for flag, what in (("--ttft", "time to first token at most, e.g. p99:2s (ms when no unit)"),
                       ("--tpot", "time per output token at most, e.g. p50:20ms (ms when no unit)"),
                       ("--min-user-tps", "tokens per second per user (1 / TPOT) at least, e.g. p99:40")):
        p.add_argument(flag, metavar="[p50:|p99:]VALUE", action=Once,
                       help=f"target: {what} (p50 when no percentile given)")
    p.add_argument("--seeds", type=bounded(1, MAX_SEEDS), help="rerun the two finalists over N seeds and call a "
                   "tie when their 95%% intervals overlap (default: the scenario's `seeds`, 1)")
    p.add_argument("--jobs", type=bounded(1, MAX_JOBS), help="worker processes (default: one per core)")
    p.add_argument("--backend", choices=["pool", "ray"], default="pool", help="worker processes (pool) or Ray tasks")
    p.add_argument("--address", type=address,
                   help="with --backend ray: the cluster (default RAY_ADDRESS, else a local Ray)")
    p.add_argument("--cache", type=output_path("name the cache folder, or pass --no-cache"),
                   help="folder of finished points, so an interrupted or "
                   f"widened search resumes (default {DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="run every point, reading and writing no cache")
    p.add_argument("--no-plot", action="store_true", help="skip frontier.png")
    p.add_argument("--peer", action="store_true", help="also ask aiconfigurator 0.12.0 (pip install 'mtpsim[peer]') "
                   "for the chosen deployment and the best without MTP, beside mtpsim's figures (peer.csv)")
    p.add_argument("--out", type=folder,
                   help="output folder (default runs/<name>-search-<timestamp>; must not hold files)")


def run_from_args(args):
    import importlib.util

    from mtpsim.cli_types import parse_sizes
    from mtpsim.search.command import parse_rates, run_search
    from mtpsim.search.targets import parse_target
    if args.address and args.backend != "ray":
        raise ScenarioError("--address", "", "names a Ray cluster: use it with --backend ray")
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        raise ScenarioError("--backend", "", "ray needs Ray installed: pip install 'mtpsim[ray]'")
    # a flag given blank is read (and refused there), never taken as left out
    if args.concurrency is not None and args.rates is not None:
        raise ScenarioError("--rates", "", "give --concurrency (closed loop) or --rates (Poisson), not both")
    if args.peer:
        from mtpsim.peer_compare import require
        require()
    if args.no_cache and args.cache is not None:
        raise ScenarioError("--cache", "", "give --cache (a folder of finished points) or --no-cache, not both")
    flags = {"gpus": args.gpus,
             "concurrency": parse_sizes(args.concurrency, "--concurrency", MAX_USERS) if args.concurrency is not None else None,
             "rates": parse_rates(args.rates) if args.rates is not None else None, "max_steps": args.max_steps,
             "disaggregated": args.disagg, "topk": parse_sizes(args.topk, "--topk", 64) if args.topk is not None else None}
    targets = [parse_target(text, metric) for text, metric in
               ((args.ttft, "ttft"), (args.tpot, "tpot"), (args.min_user_tps, "user_tps")) if text is not None]
    return run_search(args.scenario, args.sets, flags, targets, args.seeds, args.out, args.jobs, args.backend,
                      args.address, None if args.no_cache else args.cache or DEFAULT_CACHE, plot=not args.no_plot,
                      peer=args.peer)
