"""torchkit: the PyTorch decode machinery that calibration and verification share.

One implementation of every torch call a decode pass makes, so the op `mtpsim calibrate` times
is the op `mtpsim verify` runs, and the host time calibration measures around the decode loop is
that of the loop verification times:

kernels.py  the primitive calls: attend_cache, rope / rope_table, glu, moe_experts,
            centroid_logits; keep_freed_memory (glibc keeps freed pages, as CUDA's allocator does)
cache.py    KV slots with per-request lengths (KVSlots, LinearState, Cache) and a pass's
            positions and masks (Batch)
layers.py   decoder-layer modules (attention kinds, FFN kinds, LM heads, DecoderLayer)
models.py   the target and draft parts built from (shrunken) catalog specs, random weights
loops.py    the decode loop of each design, pass by pass, timed per pass kind
measure.py  build, prefill, warm up, run and record: `measure(Setup) -> Measurement`

Layering: torchkit imports torch, the catalog and the torch-free shrink rule (mtpsim/shrink.py),
never calibration/ or verify/; calibration/ (timed cases, whole layers, host time) and verify/
(a scenario's run beside its simulation) both build on it and not on each other's internals
(tests/test_imports.py checks this). Every module here imports torch.
"""
