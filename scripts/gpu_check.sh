#!/usr/bin/env bash
# The whole GPU check behind docs/performance.md's timing checks, in one go: GPU tests, the
# reduce suite hot, cold and interleaved (compared with `cudabench compare`), the timing and
# NVTX checks against Nsight Compute, and `cudabench profile`. Logs and result files go to $OUT (default
# ./gpu_check). Run from the repository root on a machine with a GPU.
set -uo pipefail
OUT=${OUT:-gpu_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
    --format=csv
  python3 -m pytest -m gpu -q -rs 2>&1 | tail -20
} 2>&1 | tee "$OUT/gpu_and_tests.log"
python3 -m cudabench run configs/reduce.yaml -o "$OUT/reduce_hot.json" 2>&1 | tee "$OUT/reduce_hot.log"
python3 -m cudabench run reduce -s 442368x128 -s 2^30 -s 2^24 --cold -o "$OUT/reduce_cold.json" \
  2>&1 | tee "$OUT/reduce_cold.log"
python3 -m cudabench run reduce -s 442368x128 -s 2^24 --interleave \
  -o "$OUT/reduce_interleaved.json" 2>&1 | tee "$OUT/reduce_interleaved.log"
python3 -m cudabench compare "$OUT/reduce_hot.json" "$OUT/reduce_interleaved.json" 2>&1 \
  | tee "$OUT/compare.log"
python3 -m cudabench compare "$OUT/reduce_hot.json" --by variant 2>&1 | tee -a "$OUT/compare.log"
python3 scripts/ncu_check.py reduce:442368x128:float4 reduce:442368x128:cupy \
  reduce:1073741824:atomic reduce:1048576:atomic reduce:1048576:float4 reduce:1048576:cupy \
  --keep /tmp/ncu_check 2>&1 | tee "$OUT/ncu_check.log"
{
  python3 -m cudabench profile reduce --shape 442368x128 --print-command
  python3 -m cudabench profile reduce --shape 442368x128 -o "$OUT/profile"
  ncu --import "$OUT"/profile/*.ncu-rep --csv --page raw --print-units base \
    > "$OUT/profile/profile_reduce.csv"
  python3 -m cudabench profile reduce --shape 2^30 --variant shuffle --set full -o /tmp/profile_full
} 2>&1 | tee "$OUT/profile.log"
