#!/usr/bin/env bash
# One device call on a machine of two or more GPUs for issues 43, 44 and 45; logs and
# results in $OUT (default ./pace_check), a line a step in $OUT/steps.log (tar $OUT before it
# comes back from a lent machine: tune_pace's folders are nested):
#   tune_pace  scripts/tune_pace.py --devices-all (43: the reduce search on one GPU and on
#              all, a user's kernel against Kernel Tuner from cold)
#   verify     scripts/verify_catalogue.sh for $OPS (default gemv) at $BUDGET s a variant
#              (default 45) on every GPU (44)
#   seeds      configs/seeds.yaml on every GPU once to fill the compile cache, then on GPU 0,
#              on GPUs 0,1 (where there are more than two) and on every GPU, and `compare` of
#              the one-GPU run with each (45)
# STEPS picks some of them (default "tune_pace verify seeds").
set -uo pipefail
OUT=${OUT:-pace_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS=off
W=$(mktemp -d)
{ date -u; nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv; } > "$OUT/gpu.txt"
step() { local log=$1; shift; local t0=$(date +%s%N); "$@" > "$OUT/$log.log" 2>&1; local rc=$?
  echo "$log: rc $rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/steps.log"; }
STEPS=" ${STEPS:-tune_pace verify seeds} "
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[[ $STEPS == *" tune_pace "* ]] && step tune_pace python3 scripts/tune_pace.py "$OUT/tune_pace" --devices-all
[[ $STEPS == *" verify "* ]] && step verify env OPS="${OPS:-gemv}" BUDGET="${BUDGET:-45}" DEVICES=all OUT="$OUT/verify" \
  bash scripts/verify_catalogue.sh
seeds() {
  local SEEDS=(run configs/seeds.yaml --max-time 1)
  step seeds_fill python3 -m cudabench "${SEEDS[@]}" --devices all -o "$W/seeds_fill.json"
  local runs=(one:0 all:all); [ "$GPUS" -gt 2 ] && runs=(one:0 two:0,1 all:all)
  for r in "${runs[@]}"; do
    step "seeds_${r%%:*}" python3 -m cudabench "${SEEDS[@]}" --devices "${r#*:}" -o "$W/seeds_${r%%:*}.json"
  done
  for r in "${runs[@]:1}"; do
    step "compare_${r%%:*}" python3 -m cudabench compare "$W/seeds_one.json" "$W/seeds_${r%%:*}.json" --threshold 3%
  done
  cp "$W"/seeds_one.* "$W"/seeds_two.* "$W"/seeds_all.* "$OUT"/ 2>/dev/null
}
[[ $STEPS == *" seeds "* ]] && seeds
true
