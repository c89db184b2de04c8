#!/usr/bin/env bash
# Issue 41 on a GPU: the tolerance corpus (tests/corpus: twelve ops that cancel or accumulate,
# no tolerance() in any) through `cudabench run` on the cupy backend - CUDA and Triton
# variants, torch baselines, planted CUDA faults - in float32, float16 and bfloat16
# (tests/test_verdicts_gpu.py: zero false FAILs, every planted fault caught where it is above
# rounding). Writes to $OUT (default ./verdicts_gpu): pytest.log, tests.log (seconds per test),
# verdicts_gpu.json/.csv (the sweep's rows), verdicts_gpu.md (`cudabench report`) and
# verdicts_informative.md (every planted fault's and torch_native's verdict, cell by cell).
# Run from the repository root on a machine with a GPU, nvcc, CuPy, torch and Triton.
set -uo pipefail
OUT=${OUT:-verdicts_gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_VERDICTS_OUT="$OUT" CUDABENCH_TEST_LOG="$OUT/tests.log"
rm -f "$OUT/tests.log"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import cupy, torch, triton; print("cupy", cupy.__version__, "torch", torch.__version__, "triton", triton.__version__)'
  start=$(date +%s)
  python3 -m pytest -q -p no:cacheprovider -rfE tests/test_verdicts_gpu.py
  echo "pytest rc=$? in $(($(date +%s) - start)) s"
} > "$OUT/pytest.log" 2>&1
if [ -f "$OUT/verdicts_gpu.json" ]; then
  python3 -m cudabench report "$OUT/verdicts_gpu.json" --format markdown --output "$OUT/verdicts_gpu.md" \
    >> "$OUT/pytest.log" 2>&1
fi
tail -n 25 "$OUT/pytest.log"
