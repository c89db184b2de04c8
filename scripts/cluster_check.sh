#!/usr/bin/env bash
# Issue 16 on a host with two GPUs: the seeds sweep and a tune search on one GPU, on
# `--devices all`, on `--cluster local` (a LocalCUDACluster: a Dask worker per GPU) and on
# two `dask cuda worker` processes that join a scheduler as two nodes would; then a sweep
# during which one of those workers is killed. Wall times and logs under $OUT
# (default ./cluster_check); every run's rows compared with the one-GPU run's.
set -uo pipefail
OUT=${OUT:-cluster_check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# wall times of the sweep itself: no ceilings measured on a first run in between
export CUDABENCH_CEILINGS=off
SCHED=tcp://127.0.0.1:8786
SEEDS=configs/seeds.yaml
TUNE=(tune reduce -v float4 -s 2^24 --strategy exhaustive --budget 200 --no-save --no-plot)
timed() {  # label, command...: the command's output to $OUT/label.log, its wall time here
  local label=$1; shift
  local t0=$(date +%s%N)
  "$@" > "$OUT/$label.log" 2>&1
  local rc=$?
  printf '%-14s rc %s  wall %6d ms\n' "$label" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))"
}
rows() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['rows']))" "$1"; }
start_nodes() {
  python3 -m distributed.cli.dask_scheduler --port 8786 --no-dashboard > "$OUT/scheduler.log" 2>&1 &
  sleep 4
  for g in 0 1; do
    CUDA_VISIBLE_DEVICES=$g python3 -c "from dask_cuda.cli import worker; worker()" "$SCHED" \
      --resources GPU=1 --nthreads 1 --name "node$g" --no-dashboard > "$OUT/worker$g.log" 2>&1 &
  done
  sleep 10
}
{
  date -u; nvidia-smi -L
  for what in ${STEPS:-check one all local nodes killed}; do
    case $what in
      # the compile cache first, so no timed run below pays nvcc (tune's configurations too)
      check) timed check python3 -m cudabench check --arch sm_90
             timed tune_warm python3 -m cudabench "${TUNE[@]}" --devices all -o "$OUT/tune_warm" ;;
      one) timed seeds_one python3 -m cudabench run $SEEDS --devices 0 -o "$OUT/seeds_one"
           timed tune_one python3 -m cudabench "${TUNE[@]}" --devices 0 -o "$OUT/tune_one" ;;
      all) timed seeds_all python3 -m cudabench run $SEEDS --devices all -o "$OUT/seeds_all"
           timed tune_all python3 -m cudabench "${TUNE[@]}" --devices all -o "$OUT/tune_all" ;;
      local) timed seeds_local python3 -m cudabench run $SEEDS --cluster local -o "$OUT/seeds_local"
             timed tune_local python3 -m cudabench "${TUNE[@]}" --cluster local -o "$OUT/tune_local" ;;
      nodes) start_nodes
             timed status python3 -m cudabench cluster status --cluster $SCHED
             cat "$OUT/status.log"
             timed seeds_nodes python3 -m cudabench run $SEEDS --cluster $SCHED -o "$OUT/seeds_nodes"
             timed tune_nodes python3 -m cudabench "${TUNE[@]}" --cluster $SCHED -o "$OUT/tune_nodes" ;;
      # a node lost mid-sweep: kill -9 node1's processes (its nanny too) 8 s in
      killed) ( sleep 8; pkill -9 -f "name node1"; echo "killed node1 at $(date -u +%T)" ) &
              timed seeds_killed python3 -m cudabench run $SEEDS --cluster $SCHED -o "$OUT/seeds_killed"
              wait
              tail -5 "$OUT/seeds_killed.log" ;;
    esac
  done
  python3 - "$OUT" <<'PY'
import collections, json, pathlib, sys
out = pathlib.Path(sys.argv[1])
one = None
for run in ("seeds_one", "seeds_all", "seeds_local", "seeds_nodes", "seeds_killed",
            "tune_one", "tune_all", "tune_local", "tune_nodes"):
    files = sorted((out / run).glob("*.json"))
    if not files:
        continue
    doc = json.loads(files[0].read_text())
    rows = doc["rows"]
    where = collections.Counter(f"{r.get('host', '')}:{r.get('device')}" for r in rows)
    status = collections.Counter(r["status"] for r in rows)
    print(f"{run}: {len(rows)} rows {dict(status)}, complete {doc['meta'].get('complete')}, "
          f"rows per host:gpu {dict(where)}")
PY
  for run in seeds_all seeds_local seeds_nodes seeds_killed; do
    [ -d "$OUT/$run" ] || continue
    echo "== compare seeds_one $run"
    python3 -m cudabench compare "$OUT/seeds_one" "$OUT/$run" | tail -2
  done
} 2>&1 | tee "$OUT/cluster.log"
pkill -f dask_scheduler; pkill -f "dask_cuda.cli"
exit 0
