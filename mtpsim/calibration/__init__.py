"""Calibration: time the cost model's ops with PyTorch and write a profile (DESIGN §6).

grid.py     the documented shapes per op family and device (torch-free: the benchmark reads it)
timing.py   warm-up, rotated inputs, medians over interleaved visits; CUDA events and graphs
kernels.py  timed cases per op family over the verification mode's own primitives (mtpsim/verify/kernels.py)
layers.py   whole layers built from those calls, and their ops as the simulator prices them
command.py  `mtpsim calibrate`: run the grid with a progress bar, write the profile folder
level.py    a CPU's speed now against its profile's (re-timed held-out shapes), for verification

Only grid.py is importable without torch.
"""
