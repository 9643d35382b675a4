"""The size limits of a scenario (docs/limits.md lists them; `mtpsim schema` gives each field's
range): past them a run would take hours or more memory than a workstation has, so they are
refused up front rather than left to hang. A module of constants only, so the command line can
name them without importing the schema.
"""
MAX_SEEDS = 1000                # replicates per point; past this a run is better split into several
MAX_REQUESTS = 1_000_000        # requests per run (~200 B of records each; a trace holds at most this)
MAX_TOKENS = 2**24              # any one length (input, output, chunk); models' max_context binds first
MAX_USERS = 100_000             # closed-loop users (one simpy process each), running requests
MAX_GRAPHS = 100_000           # sizes one CUDA-graph list of an engine file captures (engines capture tens to hundreds)
MAX_GPUS = 4096                 # tp, ep, dp
MAX_SWEEP_POINTS = 10_000       # points per scenario (split larger studies over several files)
MAX_POINT_RUNS = 20_000         # point runs of one `mtpsim run`, every point's seeds counted (baselines not)
MAX_RATE = 1e6                  # requests per second
MAX_SIM_S = 1e9                 # simulated seconds (~32 years): arrival times, schedule phases, a load's span
MAX_SCHEDULE_DRAWS = 1_000_000  # phases a rate schedule's arrivals are drawn over, repeats included
MAX_SEED = 2**63 - 1
MAX_STEPS = 64                  # draft steps per iteration; a chain past this accepts nothing more
# `calibrate --visits`: each visit times a shape at least twice, and a shape's repeats stop mattering
# at 200 (calibration/timing.py VISIT_MIN_REPS, MAX_REPS), so visits past 100 only add time
MAX_VISITS = 100
MAX_TPS = 1e12                  # tokens per second a run folder may report (a whole cluster reaches ~1e7): bounds plot axes
MIN_DEVICE_RATE, MAX_DEVICE_RATE = 1e6, 1e18  # FLOP/s and bytes/s of one device or link (hardware, profile ceilings)
MAX_DEVICE_LATENCY_S = 1.0   # a launch, hop or per-iteration host cost; past a second no GPU step means anything
