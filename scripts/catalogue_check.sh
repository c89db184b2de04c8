#!/usr/bin/env bash
# The catalogue on the GPU: every op's variants on odd shapes (GPU tests), then the seeds'
# experiments (configs/seeds.yaml) with each row's sampling capped at 2 s of GPU time. Logs
# and result files go to $OUT (default ./catalogue_check).
set -uo pipefail
OUT=${OUT:-catalogue_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -m pytest -m gpu -q -rs -k "catalogue or flt_min or planted_faults" 2>&1 | tail -40
} 2>&1 | tee "$OUT/tests.log"
python3 -m cudabench run configs/seeds.yaml --max-time 2 -o "$OUT/seeds.json" 2>&1 \
  | tee "$OUT/seeds.log"
