"""A stand-in for Nsight Compute, for the GPU-free tests of `cudabench profile`.

Profiling (`fake_ncu.py --nvtx --nvtx-include F ... --export REPORT child...`): runs the child
command (cudabench with the fake backend), then writes REPORT as a raw CSV page built from a
real one (tests/fixtures/ncu/reduce_runs.csv): one kernel per `--nvtx-include` range whose
row the child ran OK, two for the `cupy` baseline. `--import REPORT ...` prints it back.
FAKE_NCU=refuse answers as ncu does without counter permissions, FAKE_NCU=none profiles
nothing.
"""

import csv
import io
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "ncu" / "reduce_runs.csv"
NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
TAKES_VALUE = {"--nvtx-include", "--clock-control", "--cache-control", "--set", "--section",
               "--metrics", "--export", "--import", "--page", "--print-units"}


def report(filters: list[str], ran: set[tuple[str, str]]) -> str:
    rows = list(csv.reader(FIXTURE.open()))
    header, units, template = rows[0], rows[1], rows[2]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    writer.writerow(units)
    for number, expression in enumerate(filters):
        # ncu reads a backslash as "the next character literally" ([, ], + and * are its
        # quantifiers): float4\[BLOCK=512\] names the range float4[BLOCK=512]
        names = [re.sub(r"\\(.)", r"\1", n)
                 for n in expression.split("@", 1)[1].strip("/").split("/")]
        if (names[1], names[2]) not in ran:  # validation failed: no launch in the range
            continue
        cell = "1  " + "  ".join(
            f'"cudabench:{n}:none:none:RGB:0xff:REGISTERED:{n}"' for n in names) + " "
        for kernel in range(2 if names[1] == "cupy" else 1):
            row = list(template)
            row[header.index(NVTX)] = cell
            row[header.index("Kernel Name")] = f"{names[1]}_kernel_{kernel}"
            row[header.index("gpu__time_duration.sum")] = f"{10_000 + 1_000 * number:,}"
            writer.writerow(row)
    return out.getvalue()


def main(args: list[str]) -> int:
    mode = os.environ.get("FAKE_NCU", "")
    if "--import" in args:
        sys.stdout.write(Path(args[args.index("--import") + 1]).read_text())
        return 0
    if mode == "refuse":
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
              "GPU Performance Counters on the target device 0.")
        return 1
    filters, i = [], 0
    while i < len(args) and args[i].startswith("--"):
        if args[i] == "--nvtx-include":
            filters.append(args[i + 1])
        i += 2 if args[i] in TAKES_VALUE else 1
    options, child = args[:i], args[i:]
    export = Path(options[options.index("--export") + 1])
    code = subprocess.run(child).returncode
    if mode == "none":
        print("==WARNING== No kernels were profiled.")
        return code
    request = pickle.loads(Path(child[-1]).read_bytes())  # cudabench.profiled REQUEST
    rows = json.loads(Path(request.rows).read_text())["rows"]
    ran = {(r["variant"] + (f"[{r['params']}]" if r.get("params") else ""), r["shape"])
           for r in rows if r["status"] == "OK"}  # the NVTX range holds the variant's label
    export.write_text(report(filters, ran))
    print(f"==PROF== Report: {export}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
