#!/usr/bin/env bash
# Verification on a CUDA machine, in one call, within 8 minutes: the real decode loops of
# nextn / multi_layer / frozen_kv / none at batch 1, 8, 32, 128, measured against the prediction
# with this GPU's committed profile (mtpsim/data/profiles/<hardware>/), or a quick profile measured
# on the spot when there is none. Writes $OUT (or runs/gpu-verify) /all.csv and one folder per design.
#
#   calibrate/gpu_verify.sh                 # on the GPU box, from the repository root
#   calibrate/gpu_verify.sh --small         # the same on CPU, tiny: checks the script (~1 minute)
#
# Budget on an H200 (bf16, 4 target layers at 1/4 width): 15 points of 20 timed iterations took
# 18 s on 2026-12-04, a quick calibration 26 s (calibrate/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/gpu-verify}

if [[ "${1:-}" == "--small" ]]; then
  exec timeout 300 "$PY" benchmarks/verify_accuracy.py --device cpu --batches 1 2 \
    --hidden-scale 0.03125 --num-layers 2 --iterations 4 --out "$OUT-small"
fi

"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible')"
hardware=$("$PY" - <<'PYEOF'
import torch
from mtpsim.catalog import hardware_for_device
name = torch.cuda.get_device_name()
print(hardware_for_device(name) or "")
PYEOF
)
extra=()
if [[ -z "$hardware" || ! -f "mtpsim/data/profiles/$hardware/meta.yaml" ]]; then
  echo "no committed profile for '${hardware:-this GPU}': measuring a quick one first"
  extra=(--calibrate)
fi
timeout 480 "$PY" benchmarks/verify_accuracy.py --device cuda --batches 1 8 32 128 \
  --hidden-scale 0.25 --num-layers 4 --iterations 40 --out "$OUT" "${extra[@]}"
