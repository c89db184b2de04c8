#!/usr/bin/env bash
# Issue 14 on the GPU, in device-sized parts (each well under 10 minutes on an H200):
#   bash scripts/dram_limit_check.sh sweep    # the new variants across their parameters, beside the old best and the libraries
#   bash scripts/dram_limit_check.sh profile  # the same cases at the header defaults under ncu, the old best beside
#   bash scripts/dram_limit_check.sh tests    # the GPU tests of every new variant on the odd shapes, every dtype
#   bash scripts/dram_limit_check.sh seeds    # configs/seeds.yaml (header defaults, --no-tuned) and its compare against BEFORE
#   bash scripts/dram_limit_check.sh targets  # each issue case's best variant and its libraries under ncu, with stall reasons
# Logs and result files under $OUT (default ./dram_limit_check); the ceilings measured first
# (or kept in $OUT/ceilings.json) give every table its % ceiling column.
set -uo pipefail
OUT=${OUT:-dram_limit_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUDABENCH_CEILINGS="${CUDABENCH_CEILINGS:-$OUT/ceilings.json}"
cb() { echo "== cudabench $*"; python3 -m cudabench "$@"; echo "== rc $?"; }
part=${1:?sweep, profile, tests, seeds or targets}
# warps stalled per issued instruction, by reason (the `targets` part)
STALLS=$(for r in long_scoreboard lg_throttle barrier drain short_scoreboard mio_throttle \
  math_pipe_throttle wait membar; do printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' $r; done)
stalls() { cb profile "$@" --metrics "${STALLS%,}"; }  # `cudabench profile` with the stall ratios
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  date -u
  case $part in
    sweep)   # the variants of this session across their parameters, beside the old best and the libraries
      cb run softmax -s 1728x32768 -v block_reg -v block_hybrid -p BLOCK=256,512 -p REG_PACKS=4,8 -o "$OUT/softmax_long"
      cb run softmax -s 1728x32768 -v block_reg -v block_hybrid -v cluster -d bfloat16 -d float16 -o "$OUT/softmax_long16"
      cb run softmax -s 1728x32768 -v block_reg -p STAGGER_NS=0,500,1000,2000 -p PHASES=2,4,8 --interleave -o "$OUT/softmax_stagger"
      cb run softmax -s 2^28 -v online_tile -p UNROLL=1,2,4,8 -p NORM_HINTS=0,1 -o "$OUT/softmax1d"
      cb run softmax -s 2^28 -v online_vec -v online_tile -p STATS_UNROLL=4,8,16 -o "$OUT/softmax1d_stats"
      cb run softmax -s 2^28 -v online_vec -v online_tile -d bfloat16 -o "$OUT/softmax1d_16"
      ;;
    profile)  # ncu (the GPU's own clocks) per kernel: duration, DRAM throughput, occupancy
      cb profile softmax -s 1728x32768 -v block_reg -v block_hybrid -v cluster -o "$OUT/profile_long"
      cb profile softmax -s 2^28 -v online_tile -o "$OUT/profile_1d"
      ;;
    tests)
      timeout ${TESTS_TIMEOUT:-900} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "${TESTS:-issue_14 or cluster or catalogue or every_builtin or 16_bit or backend_made_later}"
      ;;
    targets)  # the "under ncu" columns of docs/performance/<op>.md: cold, one launch each (2^20 hot)
      stalls softmax -s 442368x128 -v warp_xor -o "$OUT/softmax_rows"
      stalls softmax -s 1728x32768 -v block_reg -o "$OUT/softmax_long"
      stalls softmax -s 2^28 -v online_tile -o "$OUT/softmax_1d"
      stalls reduce_scale -s 442368x128 -v warp -o "$OUT/reduce_scale"
      stalls transpose -s 8192x8192 -v vec -o "$OUT/transpose"
      stalls reduce -s 2^30 -s 442368x128 -v float4 -o "$OUT/reduce"
      stalls reduce -s 2^20 -v float4 --hot -o "$OUT/reduce_hot"
      for op in add sigmoid relu; do
        stalls $op -s 2^28 -v float4 -o "$OUT/$op"
      done
      stalls gemv -s 16384x16384 -v vec4 -o "$OUT/gemv"
      stalls sgemm -s 4096x4096x4096 -v warptile -o "$OUT/sgemm"
      # what the card reads of the 442368x128 row sums' 226 MB: a 1-D sum and a plain read of the same bytes
      for mode in hot cold; do
        cb run reduce -s 56623104 -s 442368x128 -v float4 --interleave --$mode -o "$OUT/read_$mode"
        cb run stream_read -s 56623104 --interleave --$mode -o "$OUT/read_$mode"
      done
      ;;
    seeds)
      cb run configs/seeds.yaml --no-tuned -o "$OUT/seeds_after.json"
      cb report "$OUT/seeds_after.json" -f markdown -o "$OUT/seeds_after.md"
      [ -n "${BEFORE:-}" ] && cb compare "$BEFORE" "$OUT/seeds_after.json"
      ;;
  esac
  date -u
} 2>&1 | tee "$OUT/log_$part.txt"
