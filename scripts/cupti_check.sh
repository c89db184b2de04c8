#!/usr/bin/env bash
# Issue 13 on the GPU: the kernel clock (CUPTI records) against Nsight Compute, hot and cold,
# and what the clock costs a sweep. Logs and tables under $OUT (default ./cupti_check). One
# device call each: the cold half alone took 7.5 minutes on an H100 (2026-11-23; torch's 1-D
# softmax is 6 ms at 2^24, and `both` measures every case twice), the seeds runs 66-99 s each.
#   bash scripts/cupti_check.sh cold     # the kernel-clock GPU tests, scripts/cupti_cases.yaml cold
#   bash scripts/cupti_check.sh hot      # the same cases hot
#   bash scripts/cupti_check.sh sweep    # configs/seeds.yaml events, cupti, events (the first
#                                        # run pays the nvcc compiles), then profiled with cupti
set -uo pipefail
OUT=${OUT:-cupti_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SM=sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second
cb() { echo "== cudabench $*"; python3 -m cudabench "$@"; echo "== rc $?"; }
timed() { local t0 t1; t0=$(date +%s.%N); cb "$@"; t1=$(date +%s.%N); echo "== wall $(python3 -c "print(round($t1 - $t0, 1))") s: $*"; }
case "${1:-cold}" in
  cold)
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "kernel_clock or timer_both"
    cb profile scripts/cupti_cases.yaml --timer both --metrics "$SM" -o "$OUT/cold.json" | tail -45
    python3 scripts/cupti_vs_ncu.py "$OUT/cold.json" | tee "$OUT/cold_vs_ncu.md"
    rm -f "$OUT"/*.ncu-rep ;;
  hot)
    cb profile scripts/cupti_cases.yaml --hot --timer both --metrics "$SM" -o "$OUT/hot.json" | tail -45
    python3 scripts/cupti_vs_ncu.py "$OUT/hot.json" | tee "$OUT/hot_vs_ncu.md"
    rm -f "$OUT"/*.ncu-rep ;;
  sweep)
    for run in events cupti events2; do
      timer=${run%2}
      timed run configs/seeds.yaml --no-tuned --no-ceilings --timer "$timer" \
        -o "$OUT/seeds_$run.json" > "$OUT/seeds_$run.log" 2>&1
      grep "== wall" "$OUT/seeds_$run.log"
    done
    cb profile configs/seeds.yaml --timer cupti -o "$OUT/seeds_profile.json" | tail -120
    python3 scripts/cupti_vs_ncu.py "$OUT/seeds_profile.json" > "$OUT/seeds_vs_ncu.md"
    tail -1 "$OUT/seeds_vs_ncu.md"
    rm -f "$OUT"/*.ncu-rep ;;
esac 2>&1 | tee -a "$OUT/log.txt"
