#!/usr/bin/env bash
# `pytest -m gpu` spread over the host's GPUs: tests/test_gpu.py's tests dealt out in turn, one
# pytest a GPU (CUDA_VISIBLE_DEVICES), the other GPU test files on the last; a log a GPU in
# $OUT (default ./gpu_tests). Exit status: the worst of the parts'. On two H200s the suite
# took 4 min 47 s this way, on four 5 min 8 s (the last part, which holds the other files,
# is the long one). A test that needs several GPUs skips here (each part sees one).
set -uo pipefail
OUT=${OUT:-gpu_tests}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
gpus=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)}
ids=$(mktemp)
python3 -m pytest -m gpu --collect-only -q tests/test_gpu.py 2>/dev/null | grep '::' > "$ids"
others=$(ls tests/test_*.py | grep -v '^tests/test_gpu.py$')
part() {  # part GPU: its share of test_gpu.py's tests (and, on the last GPU, the other files)
  local share; share=$(mktemp)
  awk -v n="$gpus" -v k="$1" 'NR % n == k' "$ids" > "$share"
  local rest=""; [ "$1" -eq $((gpus - 1)) ] && rest=$others
  CUDA_VISIBLE_DEVICES=$1 python3 - "$share" $rest > "$OUT/gpu$1.log" 2>&1 <<'PY'
import sys, pytest
ids = open(sys.argv[1]).read().splitlines()
sys.exit(pytest.main(["-m", "gpu", "-q", "-p", "no:cacheprovider", "-rs", *ids, *sys.argv[2:]]))
PY
}
pids=()
for ((g = 0; g < gpus; g++)); do part "$g" & pids+=($!); done
worst=0
for p in "${pids[@]}"; do wait "$p"; rc=$?; [ $rc -gt $worst ] && worst=$rc; done
tail -n 2 "$OUT"/gpu*.log
exit $worst
