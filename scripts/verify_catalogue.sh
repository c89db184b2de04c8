#!/usr/bin/env bash
# Issue 44 on a GPU: `cudabench verify` of every catalogue op (every variant, float32), each
# variant within BUDGET seconds (default 20) on every GPU of the machine (--devices all),
# one log per op in $OUT (default ./verify_catalogue) and a summary line per op in
# $OUT/summary.log: "OP: rc R wall S s" and each wrong variant's verdict and reproduce line.
# Not a test in the suite: the whole catalogue takes 10-20 minutes of GPU time, more than
# `pytest -m gpu` in one device call can hold. OPS="gemv sgemm" checks only those.
set -uo pipefail
OUT=${OUT:-verify_catalogue}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS=off
W=$(mktemp -d)
ops=${OPS:-$(for d in kernels/*/; do [ -f "$d/op.py" ] && basename "$d"; done)}
{ date -u; nvidia-smi --query-gpu=index,name --format=csv,noheader; } > "$OUT/summary.log"
for op in $ops; do
  SECONDS=0
  python3 -m cudabench verify "$op" --budget "${BUDGET:-20}" --examples 30 --devices all \
    -o "$W/$op" > "$OUT/$op.log" 2>&1
  rc=$?
  echo "$op: rc $rc wall ${SECONDS} s" >> "$OUT/summary.log"
  grep -E "^\S+ (float32|float16|bfloat16): wrong|^  reproduce:" "$OUT/$op.log" >> "$OUT/summary.log"
done
cat "$OUT/summary.log"
