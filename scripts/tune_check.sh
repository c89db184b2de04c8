#!/usr/bin/env bash
# `cudabench tune` on the GPU: Kernel Tuner side by side (cold caches), the tuned-vs-default
# searches of issue 12, `run` picking the saved configurations, ncu on a configured variant's
# NVTX range, and the GPU tests. Logs and results go to $OUT (default ./tune_check).
set -uo pipefail
OUT=${OUT:-tune_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUDABENCH_TUNING="$OUT/tuning.json"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv; } > "$OUT/gpu.txt"
step() { echo "== $1"; shift; local t0=$(date +%s.%N); "$@"; echo "== rc $? wall $(echo "$(date +%s.%N) - $t0" | bc) s"; }
for what in ${TUNE_STEPS:-kt tune run profile tests}; do
  case $what in
    kt) step "kernel tuner side by side (cold)" python3 scripts/kt_side_by_side.py "$OUT/kt_cold" --cold > "$OUT/kt_cold.log" 2>&1
        step "kernel tuner side by side (warm)" python3 scripts/kt_side_by_side.py "$OUT/kt_warm" > "$OUT/kt_warm.log" 2>&1 ;;
    tune) step "tune reduce float4" python3 -m cudabench tune reduce -v float4 -s 2^20 -s 2^24 -s 442368x128 -o "$OUT/tune_reduce" > "$OUT/tune_reduce.log" 2>&1 ;;
    run) step "run tuned" python3 -m cudabench run reduce -v float4 -s 2^20 -s 2^24 -s 442368x128 --interleave -o "$OUT/run_tuned" > "$OUT/run_tuned.log" 2>&1
         step "run default" python3 -m cudabench run reduce -v float4 -s 2^20 -s 2^24 -s 442368x128 --interleave --no-tuned -o "$OUT/run_default" > "$OUT/run_default.log" 2>&1 ;;
    profile) step "profile a configured variant" python3 -m cudabench profile reduce -v float4 -s 2^24 -p BLOCK=512 -o "$OUT/profile" > "$OUT/profile.log" 2>&1 ;;
    tests) step "gpu tests" python3 -m pytest -m gpu -q -x -rs -p no:cacheprovider > "$OUT/tests.log" 2>&1 ;;
  esac
done 2>&1 | tee "$OUT/steps.log"
