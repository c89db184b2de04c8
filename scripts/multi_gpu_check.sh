#!/usr/bin/env bash
# Several GPUs: the same sweep (16 cases: reduce and reduce_max over 8 shapes) on one GPU and
# on all of them, twice each, after `cudabench check` fills the compile cache; and a one-row
# run each way for the fixed cost (start-up). Wall times and the runs' comparison go to $OUT.
set -uo pipefail
OUT=${OUT:-multi_gpu_check}
mkdir -p "$OUT"
# wall times of the sweep itself: no ceilings measured on a first run in between
export CUDABENCH_CEILINGS=off
cat > "$OUT/sweep.yaml" <<'YAML'
benchmarks:
  - {op: reduce, variants: [float4, shuffle, shared, atomic],
     shapes: [2^24, 2^25, 2^26, 2^27, 2^28, 442368x128, 442367x129, 1000003]}
  - {op: reduce_max, shapes: [2^24, 2^25, 2^26, 2^27, 2^28, 442368x128, 442367x129, 1000003]}
YAML
{
  nvidia-smi -L
  python3 -m cudabench check > /dev/null
  for devices in 0 all; do
    /usr/bin/time -f "one row, --devices $devices: %e s" \
      python3 -m cudabench run reduce -s 1 -v float4 --devices "$devices" -o "$OUT/one_$devices.json" > /dev/null
  done
  for round in 1 2; do
    for devices in 0 all; do
      /usr/bin/time -f "sweep round $round, --devices $devices: %e s" \
        python3 -m cudabench run "$OUT/sweep.yaml" --devices "$devices" -o "$OUT/sweep_$devices.json" > /dev/null
    done
  done
  python3 -m cudabench compare "$OUT/sweep_0.json" "$OUT/sweep_all.json" | tail -4
  python3 -c "import json; d = json.load(open('$OUT/sweep_all.json')); print('rows per GPU:', {g: sum(r['device'] == g for r in d['rows']) for g in d['meta']['devices']})"
} 2>&1 | tee "$OUT/multi_gpu.log"
