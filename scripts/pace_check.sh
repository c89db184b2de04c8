#!/usr/bin/env bash
# One device call on a two-GPU machine for issues 43, 44 and 45 (logs and results to $OUT):
#   GPU 1: scripts/verify_catalogue.sh for gemv, sgemm and softmax (the ops whose catalogue-wide
#          verify test failed), 8 s a variant, into $OUT/verify;
#   GPU 0 meanwhile: the 200-configuration reduce float4 2^24 exhaustive search twice (the
#          first compiles, the second is the "compiled beforehand" figure), then
#          configs/seeds.yaml on one GPU;
#   then both GPUs: the same search and the seeds sweep with --devices all, and `compare`
#   of the two seeds runs.
set -uo pipefail
OUT=${OUT:-pace_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS=off
W=$(mktemp -d)
{ date -u; nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv; } > "$OUT/gpu.txt"
step() { local log=$1; shift; local t0=$(date +%s%N); "$@" > "$OUT/$log.log" 2>&1; local rc=$?
  echo "$log: rc $rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/steps.log"; }
SEARCH=(tune reduce -v float4 -s 2^24 --strategy exhaustive --budget 200 --no-save)
step verify env OPS="gemv sgemm softmax" BUDGET=8 DEVICES=1 OUT="$OUT/verify" bash scripts/verify_catalogue.sh &
step tune_compile python3 -m cudabench "${SEARCH[@]}" --devices 0 -o "$W/tune_a"
step tune_1gpu python3 -m cudabench "${SEARCH[@]}" --devices 0 -o "$W/tune_b"
step seeds_1gpu python3 -m cudabench run configs/seeds.yaml --max-time 1 --devices 0 -o "$W/seeds_1.json"
wait
step tune_2gpu python3 -m cudabench "${SEARCH[@]}" --devices all -o "$W/tune_c"
step seeds_2gpu python3 -m cudabench run configs/seeds.yaml --max-time 1 --devices all -o "$W/seeds_2.json"
step compare python3 -m cudabench compare "$W/seeds_1.json" "$W/seeds_2.json" --threshold 3%
cp "$W"/seeds_*.json "$W"/seeds_*.csv "$OUT"/ 2>/dev/null
