#!/usr/bin/env bash
# One GPU lease, in one or two calls that each fit a 10-minute command: measure this GPU's profile, then
# check the verification loop's predictions against it. Every result lands under $OUT as a few
# files (a lease returns at most 8), so nothing depends on the machine staying up between calls.
#
#   calibrate/gpu_session.sh calibrate   # env.txt, calibrate.log, profile.tgz (runs/h200-profile)
#   calibrate/gpu_session.sh verify      # verify.log, verify.tgz, compare.txt; reads runs/h200-profile
#                                        #   when it is there (carried back), else predicts by the roofline
#   calibrate/gpu_session.sh loop        # loop_profile.txt: torch.profiler over the decode loop
#   calibrate/gpu_session.sh all         # loop, calibrate, verify, in one call
#   calibrate/gpu_session.sh verify --small   # the same on CPU, tiny: checks the script
#
# Measured on an H200 (2026-12-04, torch 2.11): the quick grid (QUICK=1) calibrates in 26 s, the
# full one is estimated at ~2.5 min (gpu_calibrate.py --dry-run); verification of 5 designs x 3
# batches takes 18 s. Knobs: QUICK, CALIBRATE_S, VERIFY_S, BATCHES, ITERATIONS, LOOP_DESIGNS, LOOP_S.
#
# On a machine whose python3 lacks mtpsim's pure-Python needs, carry them as wheels in .whl/
# (simpy, pydantic, pydantic_core, annotated_types, typing_inspection, typing_extensions):
# they are installed into /tmp/site first. To fetch them here (the device's python3 is 3.12):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl simpy pydantic pydantic_core annotated_types \
#     typing_inspection typing_extensions      # versions as in the project's .venv (pip list)
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-}
small=${2:-}
case "$phase" in
  loop|calibrate|verify|all) ;;
  *) echo "gpu_session.sh: the phase is loop, calibrate, verify or all, not '$phase'" >&2; exit 2 ;;
esac
PY=${PY:-python3}
OUT=${OUT:-runs/gpu-session}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
PROFILE=runs/h200-profile

case "$phase" in
calibrate)
  { date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    "$PY" -c "import torch, mtpsim.sim, mtpsim.calibration.command as c; print('torch', torch.__version__, torch.cuda.get_device_name())"
  } > "$OUT/env.txt" 2>&1 || { cat "$OUT/env.txt"; exit 1; }
  cat "$OUT/env.txt"
  rm -rf "$PROFILE" "$PROFILE.partial"
  start=$SECONDS
  timeout "${CALIBRATE_S:-340}" "$PY" calibrate/gpu_calibrate.py --out "$PROFILE" ${QUICK:+--quick} 2>&1 | tee "$OUT/calibrate.log"
  echo "calibrate: exit ${PIPESTATUS[0]} after $((SECONDS - start)) s" | tee -a "$OUT/calibrate.log"
  [[ -f $PROFILE/meta.yaml ]] && tar czf "$OUT/profile.tgz" -C runs h200-profile
  ;;
verify)
  if [[ $small == --small ]]; then
    OUT="$OUT" PY="$PY" calibrate/gpu_verify.sh --small 2>&1 | tee "$OUT/verify.log"
    tar czf "$OUT/verify.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")-small"
    exit 0
  fi
  extra=()
  if [[ -f $PROFILE/meta.yaml ]]; then
    rm -rf mtpsim/data/profiles/h200 && cp -r "$PROFILE" mtpsim/data/profiles/h200
  else
    echo "no profile measured: the predictions fall back to the roofline"
  fi
  start=$SECONDS
  timeout "${VERIFY_S:-250}" "$PY" benchmarks/verify_accuracy.py --device cuda --batches ${BATCHES:-1 8 32 128} \
    --hidden-scale 0.25 --num-layers 4 --iterations "${ITERATIONS:-40}" --out runs/gpu-verify 2>&1 | tee "$OUT/verify.log"
  echo "verify: exit ${PIPESTATUS[0]} after $((SECONDS - start)) s" | tee -a "$OUT/verify.log"
  tar czf "$OUT/verify.tgz" -C runs gpu-verify
  if [[ -f mtpsim/data/profiles/h200/meta.yaml ]]; then
    for peer in h200-sglang h200-trtllm; do
      "$PY" benchmarks/compare_profiles.py h200 "$peer"
    done > "$OUT/compare.txt" 2>&1
    cat "$OUT/compare.txt"
  fi
  ;;
loop)
  for design in ${LOOP_DESIGNS-none frozen_kv}; do
    timeout "${LOOP_S:-60}" "$PY" calibrate/gpu_profile_loop.py --design "$design" --batch 8
  done > "$OUT/loop_profile.txt" 2>&1
  tail -5 "$OUT/loop_profile.txt"
  ;;
all) bash "$0" loop; bash "$0" calibrate; bash "$0" verify ;;
esac
