"""Verification mode (DESIGN §8): real PyTorch decode loops per design, timed, beside the prediction.

Only `shrink` and `compare` may be imported without torch; everything else here imports it.
"""
