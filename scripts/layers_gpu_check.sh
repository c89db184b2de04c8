#!/usr/bin/env bash
# The GPU check behind the layered package (issue 42) and the verdicts (issue 41), for one
# device call each, logs to $OUT (default ./gpu_check):
#   STEP=tests  every GPU test (`pytest -m gpu`), with the 30 slowest listed
#   STEP=seeds  configs/seeds.yaml with the tool of commit $BEFORE (unpacked into
#               scratch/before by `git archive`) and with this tree, then `cudabench compare`
set -uo pipefail
OUT=${OUT:-gpu_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS=off
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.limit \
  --format=csv | tee "$OUT/gpu.txt"
case "${STEP:-tests}" in
  tests)
    SECONDS=0
    python3 -m pytest -m gpu -q -rs -p no:cacheprovider --durations=30 > "$OUT/pytest_gpu.log" 2>&1
    echo "rc=$? wall=${SECONDS}s" >> "$OUT/pytest_gpu.log"
    tail -45 "$OUT/pytest_gpu.log"
    ;;
  seeds)
    SECONDS=0
    (cd scratch/before && PYTHONPATH=$PWD python3 -m cudabench run configs/seeds.yaml --max-time 1 \
       -o "$OUT/before.json" --db "$OUT/before.db" > "$OUT/before.log" 2>&1)
    echo "before: ${SECONDS}s"
    SECONDS=0
    python3 -m cudabench run configs/seeds.yaml --max-time 1 -o "$OUT/after.json" --db "$OUT/after.db" \
      > "$OUT/after.log" 2>&1
    echo "after: ${SECONDS}s"
    python3 -m cudabench compare "$OUT/before.json" "$OUT/after.json" --threshold 3% > "$OUT/compare.log" 2>&1
    tail -5 "$OUT/compare.log"
    ;;
esac
