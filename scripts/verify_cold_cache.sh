#!/usr/bin/env bash
# `cudabench verify` twice on one CuPy kernel cache that starts empty (a fresh machine, a CI
# runner without ~/.cupy): the first pass says how long its warm-up took (CuPy compiling the
# checks' kernels, outside the budget), and both passes say how many shapes they checked.
# OP, VARIANT (empty: every variant), BUDGET (seconds a variant's search) choose it; logs and
# results in $OUT (default ./verify_cold_cache). Run from the repository root on a GPU machine.
set -uo pipefail
VARIANT=${VARIANT-float4}
OUT=${OUT:-verify_cold_cache}
mkdir -p "$OUT"
CUPY_CACHE_DIR=$(mktemp -d)
export CUPY_CACHE_DIR
for pass in first second; do
  SECONDS=0
  COLUMNS=250 python3 -m cudabench verify "${OP:-reduce}" ${VARIANT:+-v "$VARIANT"} --budget "${BUDGET:-60}" \
    -o "$OUT/$pass" --db "$OUT/history.db" > "$OUT/$pass.log" 2>&1
  rc=$?
  echo "== $pass pass: exit $rc, ${SECONDS} s wall"
  grep -E "not counted in the budget|verified|wrong at|untested" "$OUT/$pass.log"
done
