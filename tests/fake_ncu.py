"""A stand-in for Nsight Compute, for the GPU-free tests of `cudabench profile`.

Profiling (`fake_ncu.py --nvtx --nvtx-include F ... --export REPORT child...`): runs the child
command (cudabench with the fake backend), then writes REPORT as a raw CSV page built from a
real one (tests/fixtures/ncu/reduce_runs.csv): one kernel per `--nvtx-include` range whose
row the child ran OK, two for the `cupy` baseline. `--import REPORT ...` prints it back.
FAKE_NCU=refuse answers as ncu does without counter permissions, FAKE_NCU=none profiles
nothing. When `--metrics` asks for the L2 read lookups (a cold profile), each kernel row gets
them: 1,000 sectors, of which FAKE_NCU_L2_HIT percent hit (`float4=80,shuffle=10`: by variant
name or label; 3% for one not named, a launch that found L2 cold).
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
TAKES_VALUE = {
    "--nvtx-include",
    "--clock-control",
    "--cache-control",
    "--set",
    "--section",
    "--metrics",
    "--export",
    "--import",
    "--page",
    "--print-units",
}


L2 = (
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
)


def l2_hits(label: str) -> int:
    """The percent of the variant's read sectors that hit L2 (FAKE_NCU_L2_HIT)."""
    asked = dict(
        item.split("=", 1) for item in os.environ.get("FAKE_NCU_L2_HIT", "").split(",") if "=" in item
    )
    return int(asked.get(label, asked.get(label.split("[")[0], 3)))


def report(filters: list[str], ran: set[tuple[str, str]], metrics: list[str]) -> str:
    rows = list(csv.reader(FIXTURE.open()))
    header, units, template = rows[0], rows[1], rows[2]
    l2 = all(m in metrics for m in L2)
    if l2:  # the fixture was captured without them
        header, units, template = header + list(L2), units + ["sector"] * 2, template + ["", ""]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    writer.writerow(units)
    for number, expression in enumerate(filters):
        # ncu reads a backslash as "the next character literally" ([, ], + and * are its
        # quantifiers): float4\[BLOCK=512\] names the range float4[BLOCK=512]
        names = [re.sub(r"\\(.)", r"\1", n) for n in expression.split("@", 1)[1].strip("/").split("/")]
        if (names[1], names[2]) not in ran:  # validation failed: no launch in the range
            continue
        cell = "1  " + "  ".join(f'"cudabench:{n}:none:none:RGB:0xff:REGISTERED:{n}"' for n in names) + " "
        for kernel in range(2 if names[1] == "cupy" else 1):
            row = list(template)
            row[header.index(NVTX)] = cell
            row[header.index("Kernel Name")] = f"{names[1]}_kernel_{kernel}"
            row[header.index("gpu__time_duration.sum")] = f"{10_000 + 1_000 * number:,}"
            if l2:
                hit = 10 * l2_hits(names[1])
                row[-2:] = [f"{hit:,}", f"{1_000 - hit:,}"]
            writer.writerow(row)
    return out.getvalue()


def main(args: list[str]) -> int:
    mode = os.environ.get("FAKE_NCU", "")
    if "--import" in args:
        sys.stdout.write(Path(args[args.index("--import") + 1]).read_text())
        return 0
    if mode == "refuse":
        print(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
            "GPU Performance Counters on the target device 0."
        )
        return 1
    filters, metrics, i = [], [], 0
    while i < len(args) and args[i].startswith("--"):
        if args[i] == "--nvtx-include":
            filters.append(args[i + 1])
        if args[i] == "--metrics":
            metrics += args[i + 1].split(",")
        i += 2 if args[i] in TAKES_VALUE else 1
    options, child = args[:i], args[i:]
    export = Path(options[options.index("--export") + 1])
    code = subprocess.run(child).returncode
    if mode == "none":
        print("==WARNING== No kernels were profiled.")
        return code
    request = pickle.loads(Path(child[-1]).read_bytes())  # cudabench.profiled REQUEST
    rows = json.loads(Path(request.rows).read_text())["rows"]
    ran = {
        (r["variant"] + (f"[{r['params']}]" if r.get("params") else ""), r["shape"])
        for r in rows
        if r["status"] == "OK"
    }  # the NVTX range holds the variant's label
    export.write_text(report(filters, ran, metrics))
    print(f"==PROF== Report: {export}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
