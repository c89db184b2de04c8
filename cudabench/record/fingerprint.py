"""A run's fingerprint: what it ran on and how, in the terms that move its times, and the one
rule `compare` and `history` share: no verdict between runs whose fingerprints differ.

    fingerprint(meta)  -> {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.95.05", ...}
    differences(a, b)  -> [("driver", "580.95.05", "575.57.08"), ...]
    describe(diffs)    -> "driver 580.95.05 != 575.57.08"

The keys (KEYS, in this order), each read from the run's metadata (spec.RunMeta):

    gpu            device.name              the GPU model
    driver         device.driver_version
    cuda           device.runtime_version   the CUDA runtime the kernels launched through
    nvcc           nvcc_version             the compiler that built the kernels
    power_limit_w  device.power_limit_w     the board power limit the card was set to (NVML)
    ecc            device.ecc               ECC on or off (NVML)
    mig            device.mig               MIG mode (NVML)
    clocks         timing.clocks            the SM clock policy asked: default, base, max, MHz
    fill           timing.fill              the inputs: random, zeros, ones
    timer          timing.timer             the clock of the rows' times: events or cupti
    flush          timing_mode              cold (L2 flushed before each sample) or hot
    compile_flags  compile_flags            nvcc's flags (compile.NVCC_FLAGS)
    cudabench      cudabench_version        how it measured

Each of them can move a kernel's time (a newer driver or nvcc, a lower power cap, ECC's DRAM
overhead, a MIG slice, locked clocks, a zero fill's lower power draw, the events clock's
launch gaps, a warm L2, a change in how cudabench measures) and none of them is the kernel
under test, so a change in any one is a change of the machine or the method, not of the
code. The commit
(git_sha) and the CuPy version are not keys: the first is what is being measured, the second
moves the library baselines only, which no gate judges.

Unknown is not a mismatch: a key whose value is '' on either side (a GPU or driver that does
not say, a results file or history database from before the key existed, which reads it as
'') and a key only one side has (a fingerprint stored by an older cudabench) are left out of
`differences`. A missing key would otherwise make every run made before this module
NOT COMPARABLE with every run after it. `timing.fill` and `timing.clocks` read from an older
file take their defaults (random, default), which is what older runs did.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

from cudabench.core.records import ResultRow, RunMeta

KEYS = (
    "gpu",
    "driver",
    "cuda",
    "nvcc",
    "power_limit_w",
    "ecc",
    "mig",
    "clocks",
    "fill",
    "timer",
    "flush",
    "compile_flags",
    "cudabench",
)
ALL = "*"  # in an `allow` collection: every key (--allow-mismatch)

Difference = tuple[str, str, str]  # (key, A's value, B's value)


def timer_of(timer: str) -> str:
    """The clock a row's time comes from: `--timer both` times with CUPTI (the events
    clock's figure is kept beside it), so a both run and a cupti run agree."""
    return "cupti" if timer == "both" else timer


def fingerprint(meta: RunMeta) -> dict[str, str]:
    """The run's fingerprint, every value text ('' where unknown)."""
    d, t = meta.device, meta.timing
    return {
        "gpu": d.name,
        "driver": d.driver_version,
        "cuda": d.runtime_version,
        "nvcc": meta.nvcc_version,
        "power_limit_w": d.power_limit_w,
        "ecc": d.ecc,
        "mig": d.mig,
        "clocks": t.clocks,
        "fill": t.fill,
        "timer": timer_of(t.timer),
        "flush": meta.timing_mode,
        "compile_flags": meta.compile_flags,
        "cudabench": meta.cudabench_version,
    }


def _same(a: str, b: str) -> bool:
    """Equal text, or equal numbers (a power limit of `700` and `700.0`)."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def differences(a: Mapping[str, str], b: Mapping[str, str]) -> list[Difference]:
    """The keys whose values differ, as (key, a, b), in KEYS order (then any other key both
    have, by name). Unknown values ('' or absent on either side) are not differences."""
    keys = [*KEYS, *sorted((set(a) & set(b)) - set(KEYS))]
    return [(key, a[key], b[key]) for key in keys if a.get(key) and b.get(key) and not _same(a[key], b[key])]


def row_differences(a: ResultRow, b: ResultRow) -> list[Difference]:
    """What two rows' own records say differs: the clock each was timed by (a results file
    can hold rows of both clocks)."""
    ta, tb = timer_of(a.timer), timer_of(b.timer)
    return [("timer", ta, tb)] if ta and tb and ta != tb else []


def pair_differences(
    run: list[Difference] | tuple[Difference, ...], a: ResultRow, b: ResultRow
) -> tuple[Difference, ...]:
    """The runs' differences and the two rows' own, each key once."""
    keys = {key for key, _, _ in run}
    return (*run, *(d for d in row_differences(a, b) if d[0] not in keys))


def blocking(diffs: Collection[Difference], allow: Collection[str]) -> list[Difference]:
    """The differences that `allow` (key names, or ALL) does not let through."""
    return [] if ALL in allow else [d for d in diffs if d[0] not in allow]


def describe(diffs: Collection[Difference]) -> str:
    """`driver 580.95 != 575.57, power_limit_w 700 != 500`."""
    return ", ".join(f"{key} {a} != {b}" for key, a, b in diffs)


def short_line(fp: Mapping[str, str]) -> str:
    """The known keys on one line, for a report's header: `gpu NVIDIA H100, driver ...`."""
    return ", ".join(f"{key} {value}" for key, value in fp.items() if value)


def dumps(fp: Mapping[str, str]) -> str:
    """As stored in the history database (runs.fingerprint)."""
    return json.dumps(dict(fp), sort_keys=False)


def loads(text: str) -> dict[str, str]:
    """The stored form read back; {} (every key unknown) for '' or anything unreadable."""
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, str)}
