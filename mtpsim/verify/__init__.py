"""Verification mode: a scenario's real PyTorch decode loop, timed, beside the prediction.

command.py  `mtpsim verify`: shrink the scenario's model (mtpsim/shrink.py), run the design's
            decode loop (mtpsim/torchkit: measure, loops, models), simulate the same shrunken
            configuration and compare
setup.py    what a scenario point asks it to run: the refusals, the shrunken models, the prompts, as
            a torchkit Setup
compare.py  the simulated side: the scenario mapping, the prediction, the comparison table

The decode loop itself lives in mtpsim/torchkit, shared with calibration (which times its host
work). From calibration/ verification uses only its public entry points: `command.write_profile`
(`--calibrate`) and `level.machine_level` (a shared CPU's speed against its profile);
calibration never imports verify/. Only `compare` may be imported without torch.
"""
