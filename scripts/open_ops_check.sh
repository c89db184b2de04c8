#!/usr/bin/env bash
# Issue 34 on a GPU: an op outside the package, written from docs/guide/ops.md (rmsnorm: op.py,
# naive.cu, the planted-wrong wrong.cu, the Python variants xp_rows.py and triton_rows.py, N/A
# without Triton), run, profiled under ncu and (the scaffold's starter) tuned through --ops;
# then the Triton softmax variant beside
# the CUDA C variants and torch, and under ncu. Logs and results under $OUT (default
# ./open_ops_check). Run from the repository root on a machine with a GPU.
set -uo pipefail
OUT=${OUT:-open_ops_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
WORK=$(mktemp -d)
python3 - "$WORK/myops" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "tests")
from test_own_op import files_from_docs
print(*files_from_docs(Path(sys.argv[1])), sep="\n")
PY
python3 -m cudabench new op rms_lite --in "$WORK/myops" > /dev/null
{
  echo "== run: rmsnorm from the docs (naive and xp_rows right, wrong planted), rms_lite"
  python3 -m cudabench run rmsnorm --ops "$WORK/myops" -s 4096x8192 -s 1000x333 -s 3x4x100 \
    -d float32 -d bfloat16 --no-ceilings -o "$OUT/own.json"
  echo "rc=$?"
  python3 -m cudabench run rms_lite --ops "$WORK/myops" -s 4096x8192 -d float32 -d bfloat16 \
    --no-ceilings -o "$OUT/lite.json"
  echo "rc=$?"
  echo "== tune: rms_lite's BLOCK"
  python3 -m cudabench tune rms_lite --ops "$WORK/myops" -v naive -s 4096x8192 --no-save \
    --no-plot -o "$OUT/tune_lite.json"
  echo "rc=$?"
  echo "== profile: rmsnorm naive, xp_rows and the baselines under ncu"
  python3 -m cudabench profile rmsnorm --ops "$WORK/myops" -s 4096x8192 -v naive -v xp_rows \
    --hot -o "$OUT/profile_own.json"
  echo "rc=$?"
  echo "== Triton: softmax triton_rows beside warp_xor, warp_pack16, block_smem and torch"
  python3 -m cudabench run softmax -s 442368x128 -s 13824x4096 -s 1000x333 -d float32 \
    -d bfloat16 -v triton_rows -v warp_xor -v warp_pack16 -v block_smem --no-ceilings \
    -o "$OUT/triton.json"
  echo "rc=$?"
  python3 -m cudabench profile softmax -s 13824x4096 -s 442368x128 -v triton_rows \
    -v block_smem --hot -o "$OUT/profile_triton.json"
  echo "rc=$?"
} > "$OUT/open_ops.log" 2>&1
rm -rf "$WORK"
