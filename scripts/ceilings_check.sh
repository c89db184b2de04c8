#!/usr/bin/env bash
# Issue 19 on the GPU: this card's ceilings (`cudabench ceilings`: read, write, copy, triad,
# fp32 FMA, launch floor) with the library references measured beside them in the same
# process (CUB's sum, cudaMemset, cudaMemcpy), the GPU tests of the ceilings' ops, and the
# seeds with their `% ceiling` column and a roofline. Logs under $OUT (default ./ceilings_check).
# First run: 2026-11-23 17:56 UTC on a lent H200 (docs/performance/ceilings.md, "Two layouts");
# how long it took was not recorded.
set -uo pipefail
OUT=${OUT:-ceilings_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cb() { echo "== cudabench $*"; CUDABENCH_CEILINGS="$OUT/ceilings.json" python3 -m cudabench "$@"; echo "== rc $?"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "ceilings"
  cb ceilings -o "$OUT/ceilings_rows.json"
  cb ceilings                                        # kept now: shown, not measured
  cb run configs/seeds.yaml --no-tuned -o "$OUT/seeds.json"
  cb report "$OUT/seeds.json" --roofline "$OUT/roofline.png" -f markdown -o "$OUT/seeds.md"
} 2>&1 | tee "$OUT/log.txt"
