"""Calibration: time the cost model's ops with PyTorch and write a profile.

grid.py            the documented shapes per op family and device, and each row's `Op` (op_of)
timing.py          warm-up, rotated inputs, medians over interleaved visits; CUDA events and graphs
kernels.py         timed cases per op family over torchkit's primitives (mtpsim/torchkit/kernels.py)
layers.py          whole layers: torchkit's `DecoderLayer` timed (their ops: mtpsim/costs/layer.py)
host.py            host time per iteration around torchkit's decode loop (mtpsim/torchkit/measure.py)
command.py         `mtpsim calibrate`: run the grid with a progress bar, write the profile folder
level.py           a CPU's speed now against its profile's (re-timed held-out shapes), for verification
aiconfigurator.py  `--from aiconfigurator`: measured GPU tables converted (aic_sources.py: which table
                   serves each family, read; aic_database.py: where a table is and its own rows;
                   aic_rows.py: table -> rows; aic_kernels.py: kernels borrowed)

Layering: the torch code calibration times is torchkit's, the code verification runs, so calibration
never imports verify/; what the simulator needs to read a profile (the ops of a whole layer, the
held-out width, the shrink rule) lives torch-free in mtpsim/costs/layer.py and mtpsim/shrink.py, so
the cost model imports nothing from here. Verification calls two public entry points:
`command.write_profile` and `level.machine_level`.

Importable without torch: grid.py, aiconfigurator.py and its aic_*.py.
"""
