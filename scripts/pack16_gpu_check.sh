#!/usr/bin/env bash
# Issue 35 on the GPU, in one run (its odd-shape step alone took over 290 s on an H100:
# SKIP_ODD=1 runs the rest, about 2.5 minutes there on 2026-11-25): the 16-bit variants of this
# pass - softmax block_pack16 (rows of ~4096) and block_hybrid16 (rows of up to 32768),
# transpose pack16 - beside the best variants before them and torch.
#
#   . .whl/install.sh && bash scripts/pack16_gpu_check.sh
#
#  1. every configuration of the variants the runs below use, compiled first by parallel nvcc
#     processes (the runs then load them from the compile cache);
#  2. correctness in bfloat16 and float16 on odd shapes (1x1, 31x33, 33x4097, 65537x3,
#     442367x129, 7x32769, and whole-pack rows that take the fast paths; transpose 1x1, 33x65,
#     4097x4095 and partial tiles of whole packs), the new variants at several configurations
#     (one config file, work/odd.yaml in the tarball, one process);
#  3. the issue's cases timed, each next to torch in the same run (13824x4096 and 1728x32768
#     softmax, 8192x8192 transpose, both dtypes), with
#  4. a copy of the same bytes (stream_copy: cudaMemcpy and the copy kernels) in that run too
#     (time.yaml), then the new variants' parameters swept on the same cases (sweep.yaml);
#  5. ncu: the new variants against the best before and torch's kernel (13824x4096 bf16,
#     1728x32768 bf16, 8192x8192 bf16): DRAM %, SM %, warps stalled per instruction by reason.
#
# $OUT (default ./pack16_check) gets three files: summary.txt (the tables and the verdicts,
# also printed last), log.txt (every command, set -x, and its output, written as it goes) and
# pack16_check.tar.gz (work/: the result files of every run, each command's own log, the
# config files, the history database; not the .ncu-rep reports; the ncu tables are in
# work/ncu_*.log), made at the end from a folder under $TMPDIR. The shapes can be overridden (SM_ODD, TR_ODD, SM_4K, SM_32K, TR_BIG)
# and CUDABENCH_BACKEND=fake, with NCU naming an executable wrapper of tests/fake_ncu.py
# (`exec python3 tests/fake_ncu.py "$@"`), runs the whole script without a GPU: how its
# command lines were checked (every command exit 0 on small shapes).
set -uo pipefail
OUT=${OUT:-pack16_check}
mkdir -p "$OUT"
# the runs' own files live outside $OUT (at most 8 files come back) and travel as one tarball
W="$(mktemp -d "${TMPDIR:-/tmp}/pack16_check.XXXXXX")/work"
mkdir -p "$W"
export PYTHONUNBUFFERED=1 CUDABENCH_DB="$W/history.db" CUDABENCH_CEILINGS=off
SM_ODD=${SM_ODD:-"1x1 31x33 33x4097 65537x3 442367x129 7x32769 1001x4096 3x8192 5x32768"}
SM_NEW_ODD=${SM_NEW_ODD:-"33x4097 442367x129 7x32769 1001x4096 5x32768"}
TR_ODD=${TR_ODD:-"1x1 33x65 4097x4095 4096x4104 1000x64 8x8 65537x3 3x65537"}
TR_NEW_ODD=${TR_NEW_ODD:-"33x65 4096x4104 1000x64 4097x4095"}
SM_4K=${SM_4K:-13824x4096}
SM_32K=${SM_32K:-1728x32768}
TR_BIG=${TR_BIG:-8192x8192}
# a copy of the same bytes as float32 elements (stream_copy is float32): 2 x 13824 x 4096 x
# 2 bytes / 4 (1728x32768 moves the same) and 2 x 8192^2 x 2 / 4
COPY_SM=${COPY_SM:-28311552}
COPY_TR=${COPY_TR:-33554432}
QUICK=(--warmup 0 --min-samples 2 --min-time 0 --max-time 0.05)
SHORT=(--min-samples 5 --min-time 0.1)
NCU_ARG=()
[ -n "${NCU:-}" ] && NCU_ARG=(--ncu "$NCU")
yl() { local a=($1); local IFS=,; echo "[${a[*]}]"; }  # "1x1 31x33" -> [1x1,31x33]
# warps stalled per issued instruction, by reason (as scripts/dram_limit_check.sh asks)
STALLS=$(for r in long_scoreboard lg_throttle barrier drain short_scoreboard mio_throttle \
  math_pipe_throttle wait membar; do printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' $r; done)
STALLS=${STALLS%,}

# cb NAME ARGS...: `cudabench ARGS` with its output in $W/NAME.log (and in log.txt), its
# results under $W/NAME.*; the exit status is recorded, never fatal
cb() {
  local name=$1
  shift
  echo "== $(date -u +%T) cudabench $*"
  python3 -m cudabench "$@" 2>&1 | tee "$W/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== rc $rc ($name)"
  echo "$name $rc" >>"$W/exit_codes.txt"
}

{
  set -x
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  git rev-parse HEAD
  git status --short
  nvcc --version | tail -1
  python3 -c "import cupy, sys; print('cupy', cupy.__version__, 'python', sys.version.split()[0])"
  python3 -c "import torch; print('torch', torch.__version__)"

  # 1. compile ahead: every configuration below, both dtypes, all CPUs at once
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  ARCH=sm_${cc:-90}
  python3 - "$ARCH" <<'EOF'
import os, sys, time
from concurrent.futures import ThreadPoolExecutor
from cudabench.build.nvcc import CompileError
from cudabench.build.compile import compile_variant
from cudabench.ops.discovery import BUILTIN_KERNELS, discover
from cudabench.ops.space import grid

arch = sys.argv[1]
spaces = {  # op -> variant -> the grid the runs below sweep (None: the defaults)
    "softmax": {"block_pack16": {"BLOCK": (128, 256, 512), "KEEP": (0, 1)},
                "block_hybrid16": {"BLOCK": (256, 512, 1024), "REG_PACKS": (1, 2, 4),
                                   "ROWS_SM": (2, 3, 4)},
                "block_smem": None, "block_hybrid": None, "warp_pack16": None},
    "transpose": {"pack16": {"TILE": (64, 128), "BLOCK": (32, 64, 128, 256), "GROUP": (0, 8, 16)},
                  "vec": None},
    "stream_copy": {"tile": None, "vec4": None, "bulk": None},
}
jobs = []
for op, chosen in spaces.items():
    for v in discover(op, [BUILTIN_KERNELS])[0]:
        if v.name in chosen and v.kind == "cuda":
            configs = grid(v, chosen[v.name]) if chosen[v.name] else [v]
            if op == "softmax" and v.name in ("block_pack16", "block_hybrid16"):
                configs += grid(v, {"STREAM": (1,)})
            jobs += [(c, d) for c in configs for d in c.dtypes if d in ("bfloat16", "float16", "float32")
                     and (op != "stream_copy" or d == "float32")]

def build(job):
    try:
        compile_variant(job[0], arch, job[1])
        return None
    except CompileError as exc:
        return f"{job[0].label} {job[1]}: {str(exc)[:300]}"

start = time.time()
with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
    errors = [e for e in pool.map(build, jobs) if e]
print(f"compiled {len(jobs)} configurations for {arch} in {time.time() - start:.0f} s; "
      f"{len(errors)} errors")
for e in errors:
    print("COMPILE ERROR", e)
EOF

  # 2. correctness on odd shapes, both dtypes, in one process (QUICK timing: a check, not a
  #    measurement); the new variants at several configurations
  cat >"$W/odd.yaml" <<YAML
dtypes: [bfloat16, float16]
benchmarks:
  - {op: softmax, shapes: $(yl "$SM_ODD"), variants: [block_pack16, block_hybrid16, block_smem, block_hybrid, warp_pack16]}
  - {op: softmax, shapes: $(yl "$SM_NEW_ODD"), variants: [block_pack16], params: {BLOCK: [128, 256, 512], KEEP: [0, 1]}}
  - {op: softmax, shapes: $(yl "$SM_NEW_ODD"), variants: [block_hybrid16], params: {BLOCK: [256, 512, 1024], REG_PACKS: [1, 2, 4], ROWS_SM: [2, 4]}}
  - {op: softmax, shapes: $(yl "$SM_NEW_ODD"), variants: [block_pack16, block_hybrid16], params: {STREAM: [1]}}
  - {op: transpose, shapes: $(yl "$TR_ODD"), variants: [pack16, vec]}
  - {op: transpose, shapes: $(yl "$TR_NEW_ODD"), variants: [pack16], params: {TILE: [64, 128], BLOCK: [32, 64, 128, 256], GROUP: [0, 16]}}
YAML
  cat "$W/odd.yaml"
  # SKIP_ODD=1 leaves this step out (it took over 290 s on an H100: 528 rows and more)
  [ -n "${SKIP_ODD:-}" ] || cb odd run "$W/odd.yaml" --no-ceilings --no-tuned "${QUICK[@]}" -o "$W/odd"

  # 3. the issue's cases beside torch (hot L2, CUDA events, the default stopping rule, the
  #    variants of a shape sampled in turn), the new variants' parameters swept there, and
  # 4. a copy of the same bytes (stream_copy is float32: the same byte count)
  cat >"$W/time.yaml" <<YAML
dtypes: [bfloat16, float16]
benchmarks:
  - {op: softmax, shapes: [$SM_4K, $SM_32K], variants: [block_pack16, block_hybrid16, block_smem, block_hybrid]}
  - {op: transpose, shapes: [$TR_BIG], variants: [pack16, vec]}
  - {op: stream_copy, shapes: [$COPY_SM, $COPY_TR], dtypes: [float32]}
YAML
  cat >"$W/sweep.yaml" <<YAML
dtypes: [bfloat16]
benchmarks:
  - {op: softmax, shapes: [$SM_4K], variants: [block_pack16], params: {BLOCK: [128, 256, 512], KEEP: [0, 1]}}
  - {op: softmax, shapes: [$SM_32K], variants: [block_hybrid16], params: {BLOCK: [256, 512, 1024], REG_PACKS: [1, 2, 4], ROWS_SM: [2, 3, 4]}}
  - {op: softmax, shapes: [$SM_4K, $SM_32K], variants: [block_pack16, block_hybrid16], params: {STREAM: [0, 1]}, dtypes: [bfloat16]}
  - {op: transpose, shapes: [$TR_BIG], variants: [pack16], params: {TILE: [64, 128], BLOCK: [32, 64, 128, 256], GROUP: [0, 8, 16]}}
YAML
  cat "$W/time.yaml" "$W/sweep.yaml"
  cb time run "$W/time.yaml" --no-ceilings --no-tuned --interleave -o "$W/time"
  cb sweep run "$W/sweep.yaml" --no-ceilings --no-tuned "${SHORT[@]}" -o "$W/sweep"

  # 5. ncu, bf16, the header defaults: the new variant, the best before, torch's kernel
  cb ncu_softmax_4k profile softmax -s "$SM_4K" -v block_pack16 -v block_smem -d bfloat16 \
    --metrics "$STALLS" --no-time "${NCU_ARG[@]}" -o "$W/ncu_softmax_4k"
  cb ncu_softmax_32k profile softmax -s "$SM_32K" -v block_hybrid16 -v block_hybrid -d bfloat16 \
    --metrics "$STALLS" --no-time "${NCU_ARG[@]}" -o "$W/ncu_softmax_32k"
  cb ncu_transpose profile transpose -s "$TR_BIG" -v pack16 -v vec -d bfloat16 \
    --metrics "$STALLS" --no-time "${NCU_ARG[@]}" -o "$W/ncu_transpose"
  set +x
  date -u
} 2>&1 | tee "$OUT/log.txt" | grep --line-buffered -E '^== |^compiled |^COMPILE ERROR'

# the tables and the verdicts, from the result files
python3 - "$W" "$SM_4K" "$SM_32K" "$TR_BIG" <<'EOF' | tee "$OUT/summary.txt"
import glob, json, sys
from collections import defaultdict

work, sm4k, sm32k, trbig = sys.argv[1:5]
rows = []
for path in sorted(glob.glob(f"{work}/**/*.json", recursive=True)):
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        continue
    if not isinstance(data, dict) or "rows" not in data:
        continue
    run = path.split("/")[-2] if path.count("/") > work.count("/") + 1 else path
    for r in data["rows"]:
        r["_run"] = run
        rows.append(r)

def label(r):
    return r["variant"] + (f"[{r['params']}]" if r.get("params") else "")

print("== correctness: every row of the new and the old variants (baselines only noted)")
bad = [r for r in rows if not r.get("is_baseline") and r["status"] not in ("OK", "N/A")]
ok = [r for r in rows if not r.get("is_baseline") and r["status"] == "OK"]
print(f"{len(ok)} rows OK, {len(bad)} not OK")
for r in bad:
    print(f"  NOT OK {r['_run']}: {r['op']} {r['shape']} {r['dtype']} {label(r)}: {r['status']} {r.get('error', '')[:200]}")
failed = defaultdict(int)
for r in rows:
    if r.get("is_baseline") and r["status"] not in ("OK", "N/A"):
        failed[(r["op"], r["variant"], r["dtype"])] += 1
for (op, name, dtype), n in sorted(failed.items()):
    print(f"  (baseline, not asserted) {op} {name} {dtype}: {n} row(s) not OK")

print("\n== the issue's cases (us, % of the DRAM peak; torch and the copy in the same session)")
best = {}
copies = {}
for r in rows:
    if r["op"] == "stream_copy" and r["status"] == "OK":
        copies.setdefault(r["shape"], []).append(r)
targets = [("softmax", sm4k, 84.0), ("softmax", sm32k, 85.0), ("transpose", trbig, 85.0)]
for op, shape, goal in targets:
    for dtype in ("bfloat16", "float16"):
        case = [r for r in rows if r["op"] == op and r["shape"] == shape and r["dtype"] == dtype
                and r["status"] == "OK" and r.get("time_us") and not r["_run"].startswith("ncu_")]
        if not case:
            continue
        print(f"\n{op} {shape} {dtype} (target >= {goal}% of peak)")
        seen = defaultdict(list)
        for r in case:
            seen[(label(r), r.get("is_baseline"))].append(r)
        table = sorted(seen.items(), key=lambda kv: min(x["time_us"] for x in kv[1]))
        shown = [kv for kv in table if not kv[0][1]][:8] + [kv for kv in table if kv[0][1]]
        for (name, base), rs in sorted(shown, key=lambda kv: min(x["time_us"] for x in kv[1])):
            t = [x["time_us"] for x in rs]
            p = max(x.get("pct_peak") or 0 for x in rs)
            runs = ",".join(sorted({x["_run"] for x in rs}))
            print(f"  {name:44s} {min(t):9.1f} us {p:6.1f}%  ({len(t)} run(s): {runs})")
        variants = [(k, v) for k, v in table if not k[1]]
        torch = [x["time_us"] for (n, b), rs in table if b and n == "torch" for x in rs]
        if variants:
            (name, _), rs = variants[0]
            t, p = min(x["time_us"] for x in rs), max(x.get("pct_peak") or 0 for x in rs)
            vs = f", {min(torch) / t:.2f}x torch" if torch else ""
            verdict = "MET" if p >= goal else "NOT MET"
            print(f"  -> best {name}: {t:.1f} us, {p:.1f}% of peak{vs}: {verdict}")
            best[(op, shape, dtype)] = (name, t, p, verdict)
print("\n== a copy of the same bytes (stream_copy, float32 elements)")
for shape, rs in sorted(copies.items()):
    for r in sorted(rs, key=lambda x: x["time_us"]):
        print(f"  {shape:12s} {label(r):40s} {r['time_us']:9.1f} us {r.get('pct_peak') or 0:6.1f}%")
print("\n== ncu (one launch each, caches flushed): us, DRAM %, SM %, occupancy, registers, "
      "DRAM MB read / written, warps stalled per issued instruction by reason")
for r in rows:
    n = r.get("ncu")
    if not r["_run"].startswith("ncu_") or not n:
        continue
    stalls = {k.split("issue_stalled_")[-1].replace("_per_issue_active.ratio", ""): v
              for k, v in (n.get("extra") or {}).items()}
    top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(stalls.items(), key=lambda kv: -kv[1]) if v)
    mb = lambda key: (n.get(key) or 0) / 1e6
    print(f"  {r['op']} {r['shape']} {r['dtype']} {label(r)}: {n.get('duration_us') or 0:.1f} us, "
          f"DRAM {n.get('dram_pct') or 0:.1f}%, SM {n.get('sm_pct') or 0:.1f}%, "
          f"occ {n.get('achieved_occupancy_pct') or 0:.0f}%, {n.get('registers')} regs, "
          f"{mb('dram_read_bytes'):.1f} / {mb('dram_write_bytes'):.1f} MB; stalls: {top or '-'}")
print("\n== verdicts")
for (op, shape, dtype), (name, t, p, verdict) in best.items():
    print(f"  {op} {shape} {dtype}: {name} {t:.1f} us {p:.1f}%: {verdict}")
EOF

{
  echo "== exit codes (0 all OK, 1 some row failed, 2 usage; the ncu tables: work/ncu_*.log in the tarball)"
  cat "$W/exit_codes.txt"
} | tee -a "$OUT/summary.txt"

# one archive of the rest (at most 8 files come back): result files and logs, no ncu reports;
# a config over two ops names its results softmax+transpose: no '+' in names that travel
find "$W" -name '*+*' | while read -r f; do mv "$f" "${f//+/_}"; done
tar --exclude='*.ncu-rep' -czf "$OUT/pack16_check.tar.gz" -C "$(dirname "$W")" work
ls -la "$OUT"
