#!/usr/bin/env bash
# The telemetry measurements docs/guide/telemetry.md records, on a GPU machine, from the repo
# root (after `. .whl/install.sh` on a lent one). Logs go to $TEL_LOG (default /tmp/tel), packed
# at the end into $OUT/tel.tar.gz (default OUT /tmp/tel_out).
# It never changes the card's clocks or power limit (--clocks is not run here: a lent machine's
# settings are not ours to change); the locking rules are tested GPU-free (tests/test_telemetry.py).
#
#   bash scripts/telemetry_check.sh
#   TEL_STEPS="probe five" bash scripts/telemetry_check.sh   # only the steps named
set -u
OUT=${OUT:-/tmp/tel_out}
LOG=${TEL_LOG:-/tmp/tel}
export TEL_LOG="$LOG"
mkdir -p "$LOG" "$OUT"
export CUDABENCH_DB="$LOG/history.db"
CB=(python3 -m cudabench)
step() {  # step NAME SECONDS COMMAND...: its output, wall time and exit status in NAME.log
  local name=$1 limit=$2
  shift 2
  [ -z "${TEL_STEPS:-}" ] || [[ " $TEL_STEPS " == *" $name "* ]] || return 0
  echo "=== $name: $*"
  local start=$EPOCHREALTIME
  timeout "$limit" "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  echo "rc=$rc wall_s=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.2f}')")" | tee -a "$LOG/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv > "$LOG/gpu.csv" 2>&1

# 1. what NVML can tell here: the energy counter's update period, a poll's cost
step probe 60 python3 scripts/nvml_probe.py --seconds 1.0

# 2. energy per call: the catalogue's sums against CUB/CuPy and torch (a table with mJ, W, GB/J);
#    a fresh machine measures its ceilings first (issue 35's rule: every row of a mix counts)
step ceilings_reduce 240 "${CB[@]}" run reduce -s 2^30 -s 442368x128 --energy -o "$LOG/reduce_energy.json"
step ceilings_add 120 "${CB[@]}" run add -s 2^28 --dtype bfloat16 --energy -o "$LOG/add_bf16.json"
cp results/ceilings.json "$LOG/" 2>/dev/null

# 3. one case's energy measured five times (its spread)
step five 120 python3 - <<'EOF'
import statistics
import cudabench
rows = []
for i in range(5):
    frame = cudabench.run("reduce", shapes=["2^30"], variants=["float4"], ceilings=False, energy=True,
                          output=f"{__import__('os').environ.get('TEL_LOG', '/tmp/tel')}/five_{i}.json")
    row = frame[frame.variant == "float4"].iloc[0]
    rows.append((row.time_us, row.energy_mj, row.power_w, row.gb_per_j, row.sm_mhz_median))
    print(f"run {i}: {row.time_us:.1f} us, {row.energy_mj:.3f} mJ, {row.power_w:.0f} W, "
          f"{row.gb_per_j:.1f} GB/J, SM {row.sm_mhz_median} MHz")
energies = [r[1] for r in rows]
print(f"energy: median {statistics.median(energies):.3f} mJ, min {min(energies):.3f}, "
      f"max {max(energies):.3f}, spread (max-min)/median "
      f"{100 * (max(energies) - min(energies)) / statistics.median(energies):.1f}%")
EOF

# 4. the cost, over configs/seeds.yaml (the kernels compiled first, so no run pays nvcc):
#    telemetry off (CUDABENCH_NVML=off: no watch), on (the default: the watch's clocks,
#    temperatures and slowed samples) and with --energy, whose rows are also the energy per call
#    of the seeds' best variants and their libraries
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
#    A quick sweep first compiles the tuned configurations `check` does not; then off and on
#    alternate twice, so that neither pays for a cold start and the noise shows.
step precompile 240 "${CB[@]}" check --arch "sm_${cc:-90}"
SEEDS=(run configs/seeds.yaml --max-time 1 --no-ceilings)
step cost_warm 240 "${CB[@]}" run configs/seeds.yaml --no-ceilings --warmup 0 --min-samples 2 \
  --min-time 0 --max-time 0.05 -o "$LOG/seeds_warm.json"
for i in 1 2; do
  step cost_off$i 300 env CUDABENCH_NVML=off "${CB[@]}" "${SEEDS[@]}" -o "$LOG/seeds_off$i.json"
  step cost_on$i 300 "${CB[@]}" "${SEEDS[@]}" -o "$LOG/seeds_on$i.json"
done
step seeds_energy 360 "${CB[@]}" "${SEEDS[@]}" --energy -o "$LOG/seeds_energy.json"

# 5. zero against random fill on a compute-heavy case, and compare refusing the pair
step sgemm_random 120 "${CB[@]}" run sgemm -s 4096x4096x4096 -v warptile --no-ceilings --energy -o "$LOG/sgemm_random.json"
step sgemm_zeros 120 "${CB[@]}" run sgemm -s 4096x4096x4096 -v warptile --no-ceilings --energy --fill zeros -o "$LOG/sgemm_zeros.json"
step compare_fill 60 "${CB[@]}" compare "$LOG/sgemm_random.json" "$LOG/sgemm_zeros.json"
step compare_fill_allowed 60 "${CB[@]}" compare "$LOG/sgemm_random.json" "$LOG/sgemm_zeros.json" --allow-mismatch

# 6. a planted slowdown: a long hot run of a 16-bit matmul on the tensor cores (a user op,
#    scripts/hot_ops/hgemm) draws the card's whole power limit, so the driver holds the clock
#    back; the watch marks those samples, the row gets its note, --drop-throttled leaves them out
HOT=(run hgemm --ops scripts/hot_ops -s 8192x8192x8192 -d bfloat16 --no-ceilings --min-time 8 --max-time 8)
step hot 120 "${CB[@]}" "${HOT[@]}" --energy -o "$LOG/hot.json"
step hot_drop 120 "${CB[@]}" "${HOT[@]}" --drop-throttled --settle on -o "$LOG/hot_drop.json"
#    and a slowdown over part of a row: another process (scripts/heater.py) runs that matmul for
#    4 s in the middle of the float4 sum's interleaved rows (18 s of samples, which start about
#    8 s in on a warm machine): first no heat (also the warm-up), then the slowed samples kept,
#    then left out
MIX=(run reduce -s 2^30 -v float4 --no-ceilings --interleave --min-time 6 --max-time 6)
HEAT=(python3 scripts/heater.py --delay 12 --seconds 4 --)
step mix_clean 120 "${CB[@]}" "${MIX[@]}" -o "$LOG/mix_clean.json"
step mix_keep 120 "${HEAT[@]}" "${CB[@]}" "${MIX[@]}" -o "$LOG/mix_keep.json"
step mix_drop 120 "${HEAT[@]}" "${CB[@]}" "${MIX[@]}" --drop-throttled -o "$LOG/mix_drop.json"

# 7. a row that asked for energy and has none says why (reduce_scale works in place)
step inplace_note 120 "${CB[@]}" run reduce_scale -s 442368x128 --energy --no-ceilings -o "$LOG/inplace.json"

# 8. is the cold L2 cold? ncu's L2 hit rate of cold launches, and their time against ncu's
step profile_cold 180 "${CB[@]}" profile softmax -s 13824x4096 -v block_smem --cold -o "$LOG/profile_cold.json"

tar -C "$(dirname "$LOG")" -czf "$OUT/tel.tar.gz" "$(basename "$LOG")" && echo "packed $OUT/tel.tar.gz"
