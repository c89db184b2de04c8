#!/usr/bin/env bash
# Issue 13 on the GPU: the kernel clock (CUPTI records) against Nsight Compute, hot and cold,
# and what the clock costs a sweep. Logs and tables under $OUT (default ./cupti_check).
# `ncu` takes about 15 minutes on an H100 (torch's 1-D softmax alone is 6 ms at 2^24 and
# every case is measured twice, by each clock); `sweep` about 6.
#   bash scripts/cupti_check.sh ncu       # GPU tests, scripts/cupti_cases.yaml profiled cold and hot
#   bash scripts/cupti_check.sh sweep     # configs/seeds.yaml with each clock (wall time), and profiled
set -uo pipefail
OUT=${OUT:-cupti_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SM=sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second
cb() { echo "== cudabench $*"; python3 -m cudabench "$@"; echo "== rc $?"; }
timed() { local t0 t1; t0=$(date +%s.%N); cb "$@"; t1=$(date +%s.%N); echo "== wall $(python3 -c "print(round($t1 - $t0, 1))") s: $*"; }
case "${1:-ncu}" in
  ncu)
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "kernel_clock or timer_both"
    cb profile scripts/cupti_cases.yaml --timer both --metrics "$SM" -o "$OUT/cold.json" | tail -45
    cb profile scripts/cupti_cases.yaml --hot --timer both --metrics "$SM" -o "$OUT/hot.json" | tail -45
    python3 scripts/cupti_vs_ncu.py "$OUT/cold.json" "$OUT/hot.json" | tee "$OUT/cupti_vs_ncu.md"
    rm -f "$OUT"/*.ncu-rep ;;
  sweep)
    for timer in events cupti; do
      timed run configs/seeds.yaml --no-tuned --timer "$timer" -o "$OUT/seeds_$timer.json" > "$OUT/seeds_$timer.log" 2>&1
      grep "== wall" "$OUT/seeds_$timer.log"
    done
    cb profile configs/seeds.yaml --timer cupti -o "$OUT/seeds_profile.json" | tail -120
    python3 scripts/cupti_vs_ncu.py "$OUT/seeds_profile.json" > "$OUT/seeds_vs_ncu.md"
    tail -1 "$OUT/seeds_vs_ncu.md"
    rm -f "$OUT"/*.ncu-rep ;;
esac 2>&1 | tee -a "$OUT/log.txt"
