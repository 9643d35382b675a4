"""`mtpsim search SCENARIO --gpus N`: which deployment of N GPUs to run, with and without MTP.

bounds.py   the `search:` section (and the flags that override it)
layouts.py  deployments (replicas x tp x ep x attention_dp) of N GPUs, and those that run the scenario
space.py    the kept deployments x designs x steps x loads, as points
rankable.py whether a scenario can be ranked (search and recommend), and under which lengths
execute.py  points -> summary rows: a resumable on-disk cache, the process pool or Ray, one
            priced Pricer per layout in each worker
targets.py  latency targets at p50 / p99, the best point by tok/s per GPU and its margin
frontier.py frontier.csv (Pareto flags per design family) and frontier.png
command.py  the command itself: check, run, print, write

Nothing here imports at package import time (schema.py reads bounds.py's section).
"""

DEFAULT_CACHE = "runs/search-cache"  # finished points, so an interrupted or widened search resumes
