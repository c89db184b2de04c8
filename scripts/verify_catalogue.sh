#!/usr/bin/env bash
# Issue 44 on a GPU: `cudabench verify` of every catalogue op (every variant, float32), each
# variant within BUDGET seconds (default 20) on the GPUs DEVICES names (default all),
# one log per op in $OUT (default ./verify_catalogue) and a summary line per op in
# $OUT/summary.log: "OP: rc R wall S s" and each wrong variant's verdict and reproduce line;
# the exit status is the worst of the ops'.
# Not a test in the suite: 53 variants at up to 20 s each (an H200 took 6 to 8 s a variant)
# is more than `pytest -m gpu` in one device call can hold. OPS="gemv sgemm" checks only those.
set -uo pipefail
OUT=${OUT:-verify_catalogue}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS=off
W=$(mktemp -d)
worst=0
ops=${OPS:-$(for d in kernels/*/; do [ -f "$d/op.py" ] && basename "$d"; done)}
{ date -u; nvidia-smi --query-gpu=index,name --format=csv,noheader; } > "$OUT/summary.log"
for op in $ops; do
  SECONDS=0
  python3 -m cudabench verify "$op" --budget "${BUDGET:-20}" --examples 30 --devices "${DEVICES:-all}" \
    -o "$W/$op" > "$OUT/$op.log" 2>&1
  rc=$?
  [ $rc -gt $worst ] && worst=$rc
  echo "$op: rc $rc wall ${SECONDS} s" >> "$OUT/summary.log"
  grep -E "^\S+ (float32|float16|bfloat16): wrong|^  reproduce:|untested|does not compile|not on this machine" \
    "$OUT/$op.log" >> "$OUT/summary.log"
done
cat "$OUT/summary.log"
exit $worst  # 1: a variant is wrong somewhere, does not compile or is untested; 2: bad usage (as verify)
