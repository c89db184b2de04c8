#!/usr/bin/env bash
# `cudabench tune` on the GPU: the tuned-vs-default searches of issue 12 and `run` picking
# the saved configurations, Kernel Tuner's best against cudabench's (interleaved and under
# ncu; `kt` reruns the whole side by side from cold caches), the seeds' tuning configs,
# ncu on a configured variant's NVTX range, and the GPU tests. Logs and results go to $OUT (default ./tune_check).
set -uo pipefail
OUT=${OUT:-tune_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUDABENCH_TUNING="$OUT/tuning.json"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv; } > "$OUT/gpu.txt"
step() { echo "== $1"; shift; local t0=$(date +%s%N); "$@"; local rc=$?; echo "== rc $rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"; }
CASES=(
  "reduce -v float4 -s 2^20 -s 2^24"
  "softmax -v block_uncached -s 1728x32768"
  "transpose -v smem64 -s 8192x8192"
  "sgemm -v warptile -s 4096x4096x4096"
)
# Kernel Tuner's and cudabench's best of the 200-configuration reduce search (docs/guide/tuning.md)
H2H=(-p BLOCK=1024,256 -p ITEMS=64,128 -p GRID_K=2,16 -p LOADS=4)
for what in ${TUNE_STEPS:-tune run h2h seeds profile tests}; do
  case $what in
    kt) step "kernel tuner side by side (cold)" python3 scripts/kt_side_by_side.py "$OUT/kt_cold" --cold > "$OUT/kt_cold.log" 2>&1 ;;
    tune) i=0
          for c in "${CASES[@]}"; do
            i=$((i + 1))
            extra=(); [[ $c == sgemm* ]] && extra=(--strategy optuna --budget 120)
            step "tune $c" python3 -m cudabench tune $c "${extra[@]}" -o "$OUT/tune_$i" > "$OUT/tune_$i.log" 2>&1
          done
          # many sgemm configurations checked on an odd shape (edge tiles in both directions)
          step "tune sgemm odd" python3 -m cudabench tune sgemm -v warptile -s 1000x300x70 --strategy random --budget 40 --no-save -o "$OUT/tune_odd" > "$OUT/tune_odd.log" 2>&1 ;;
    run) i=0
         for c in "${CASES[@]}"; do
           i=$((i + 1))
           step "run tuned $c" python3 -m cudabench run $c --interleave -o "$OUT/run_tuned_$i" > "$OUT/run_tuned_$i.log" 2>&1
           step "run default $c" python3 -m cudabench run $c --interleave --no-tuned -o "$OUT/run_default_$i" > "$OUT/run_default_$i.log" 2>&1
         done ;;
    h2h) step "head to head, interleaved" python3 -m cudabench run reduce -v float4 -s 2^24 "${H2H[@]}" --interleave --no-tuned -o "$OUT/h2h" > "$OUT/h2h.log" 2>&1
         step "head to head, ncu" python3 -m cudabench profile reduce -v float4 -s 2^24 "${H2H[@]}" --hot -o "$OUT/h2h_ncu" > "$OUT/h2h_ncu.log" 2>&1 ;;
    seeds) step "tune seeds" python3 -m cudabench tune configs/tune_seeds.yaml --no-save -o "$OUT/tune_seeds" > "$OUT/tune_seeds.log" 2>&1 ;;
    profile) step "profile a configured variant" python3 -m cudabench profile reduce -v float4 -s 2^24 -p BLOCK=512 -o "$OUT/profile" > "$OUT/profile.log" 2>&1 ;;
    tests) step "gpu tests" python3 -m pytest -m gpu -q -rs -p no:cacheprovider > "$OUT/tests.log" 2>&1 ;;
  esac
done 2>&1 | tee "$OUT/steps.log"
