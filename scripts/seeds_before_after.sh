#!/usr/bin/env bash
# No regression: configs/seeds.yaml (float32) with the kernels and tool of commit $BEFORE
# (unpacked beforehand into scratch/before by `git archive`) and with the working tree, on the
# same GPU, then `cudabench compare`. Results to $OUT (default ./seeds_check). AFTER=FILE
# reuses an "after" run made earlier on the same machine.
set -uo pipefail
OUT=${OUT:-seeds_check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
(cd scratch/before && PYTHONPATH=$PWD:${PYTHONPATH:-} python3 -m cudabench run configs/seeds.yaml \
   --max-time 1 -o "$OUT/before.json" > "$OUT/before.log" 2>&1)
[ -f "${AFTER:-}" ] && cp "$AFTER" "$OUT/after.json" || \
  python3 -m cudabench run configs/seeds.yaml --max-time 1 -o "$OUT/after.json" > "$OUT/after.log" 2>&1
python3 -m cudabench compare "$OUT/before.json" "$OUT/after.json" --threshold 3% 2>&1 \
  | tee "$OUT/compare.log"
python3 -m cudabench report "$OUT/before.json" -f markdown -o "$OUT/before.md"
python3 -m cudabench report "$OUT/after.json" -f markdown -o "$OUT/after.md"
