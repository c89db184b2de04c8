#!/usr/bin/env bash
# fp16 / bf16 on the GPU: every variant's correctness in every dtype (GPU tests, float32 too,
# since the kernels changed), then configs/dtypes.yaml with torch in the same run.
# Logs and results go to $OUT (default ./dtypes_check).
set -uo pipefail
OUT=${OUT:-dtypes_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -m pytest -m gpu -q -x -rs -p no:cacheprovider 2>&1 | tail -25
} 2>&1 | tee "$OUT/tests.log"
python3 -m cudabench run configs/dtypes.yaml --max-time 1 -o "$OUT/dtypes.json" 2>&1 \
  | tee "$OUT/dtypes.log" | tail -n 150
