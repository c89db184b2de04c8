"""Reading Nsight Compute's raw CSV pages (real ones, captured on an H200) and building its
command line. No GPU or ncu needed."""

import io
from pathlib import Path

import pandas as pd
import pytest

from cudabench.core.records import RowKey
from cudabench.core.timing import ProfileMetrics
from cudabench.execution.ncu import (
    COLD_L2_HIT_PCT,
    DURATION,
    L2_READ_HIT,
    L2_READ_MISS,
    KernelRecord,
    NcuError,
    bound_hint,
    cold_l2_note,
    import_command,
    metrics_by_case,
    ncu_messages,
    nvtx_ranges,
    parse_raw_csv,
    profile_command,
    summarize,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_real_page_groups_kernels_by_nvtx_range():
    kernels = parse_raw_csv(read("reduce_runs.csv"))
    assert len(kernels) == 20
    cases = metrics_by_case(kernels)
    assert set(cases) == {
        RowKey("reduce", "float4", "16777216", "float32"),
        RowKey("reduce", "cupy", "16777216", "float32"),
        RowKey("reduce", "atomic", "3x5", "float32"),
    }
    float4 = cases[RowKey("reduce", "float4", "16777216", "float32")]
    assert float4.kernels == 5
    # the five durations in the file: 21,408 + 20,512 + 20,544 + 20,416 + 20,416 ns
    assert float4.duration_us == pytest.approx(103.296)
    # each launch reads the 64 MiB input once (thousands separators parsed)
    assert float4.dram_read_bytes / 5 == pytest.approx(4 * 2**24, rel=0.01)
    assert float4.registers == 40 and float4.shared_mem_bytes == 132
    assert float4.theoretical_occupancy_pct == 75.0
    assert 1.9 < float4.sm_clock_ghz < 2.0
    assert float4.bound == "memory"


def test_multi_kernel_library_call_keeps_its_inner_range():
    kernels = parse_raw_csv(read("reduce_runs.csv"))
    cub = [k for k in kernels if k.ranges[:2] == ("reduce", "cupy")]
    assert len(cub) == 10  # two CUB kernels a call, 5 calls
    assert {k.name.split("<")[0] for k in cub} == {
        "void cub::DeviceReduceKernel",
        "void cub::DeviceReduceSingleTileKernel",
    }
    summary = metrics_by_case(kernels)[RowKey("reduce", "cupy", "16777216", "float32")]
    assert summary.kernels == 10
    assert summary.duration_us == pytest.approx(sum(k.metrics[DURATION] for k in cub) / 1e3)


def test_tiny_case_is_latency_bound():
    cases = metrics_by_case(parse_raw_csv(read("reduce_runs.csv")))
    summary = cases[RowKey("reduce", "atomic", "3x5", "float32")]
    assert summary.bound == "latency" and summary.dram_write_bytes == 0.0


def test_set_full_page_with_thousands_of_columns():
    kernels = parse_raw_csv(read("set_full.csv"))
    assert len(kernels) == 5 and all(k.ranges == ("reduce", "float4", "3x5") for k in kernels)
    assert all(DURATION in k.metrics for k in kernels)


def test_a_missing_metric_stays_none_and_the_rest_is_read():
    table = pd.read_csv(io.StringIO(read("reduce_runs.csv")), dtype=str, keep_default_na=False)
    text = table.drop(columns=["dram__bytes_read.sum"]).to_csv(index=False)
    summary = metrics_by_case(parse_raw_csv(text))[RowKey("reduce", "float4", "16777216", "float32")]
    assert summary.dram_read_bytes is None
    assert summary.duration_us == pytest.approx(103.296) and summary.registers == 40


def test_extra_metrics_are_summed_or_weighted():
    kernels = parse_raw_csv(read("reduce_runs.csv"), extra=["dram__bytes_read.sum", "launch__grid_size"])
    summary = metrics_by_case(kernels, ["dram__bytes_read.sum", "launch__grid_size"])
    float4 = summary[RowKey("reduce", "float4", "16777216", "float32")]
    assert float4.extra["dram__bytes_read.sum"] == float4.dram_read_bytes
    assert float4.extra["launch__grid_size"] == pytest.approx(792)


@pytest.mark.parametrize("text", ["", "hello\n", "==PROF== Connected\n"])
def test_not_a_raw_page(text):
    with pytest.raises(NcuError):
        parse_raw_csv(text)


def test_nvtx_cell():
    cell = (
        '550  "cudabench:reduce:none:none:RGB:0xff:REGISTERED:reduce"  '
        '"cudabench:cupy:none:none:RGB:0xff:REGISTERED:cupy"  '
        '"cudabench:16777216:none:none:RGB:0xff:REGISTERED:16777216"  '
        '"CCCL:cub::DeviceReduce::Sum:none:none:none:none:REGISTERED:cub::DeviceReduce::Sum" '
    )
    assert nvtx_ranges(cell) == ("reduce", "cupy", "16777216")
    assert nvtx_ranges(cell, "CCCL") == ("cub",)
    assert nvtx_ranges("") == ()


def test_kernels_outside_cudabench_ranges_are_ignored():
    outside = KernelRecord("k", ("reduce",), {DURATION: 1000.0})
    inside = KernelRecord("k", ("reduce", "v", "8"), {DURATION: 1000.0})
    assert set(metrics_by_case([outside, inside])) == {RowKey("reduce", "v", "8", "float32")}


def test_summary_weights_percentages_by_duration():
    a = KernelRecord(
        "a",
        (),
        {
            DURATION: 3000.0,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 90.0,
            "launch__registers_per_thread": 32,
            "dram__bytes_read.sum": 100.0,
        },
    )
    b = KernelRecord(
        "b",
        (),
        {
            DURATION: 1000.0,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 10.0,
            "launch__registers_per_thread": 64,
        },
    )
    s = summarize([a, b])
    assert s.kernels == 2 and s.duration_us == 4.0
    assert s.dram_pct == pytest.approx(70.0)  # (90*3 + 10*1) / 4
    assert s.registers == 64 and s.dram_read_bytes == 100.0 and s.sm_pct is None


@pytest.mark.parametrize(
    "memory,sm,hint",
    [
        (85.0, 20.0, "memory"),
        (20.0, 85.0, "compute"),
        (30.0, 40.0, "latency"),
        (70.0, 75.0, "compute"),
        (None, None, ""),
        (None, 90.0, "compute"),
    ],
)
def test_bound_hint(memory, sm, hint):
    assert bound_hint(memory, sm) == hint


def test_nvtx_filter_escapes_ncu_quantifiers_in_configured_labels():
    """A configured variant's range `float4[BLOCK=512,ITEMS=64]` must reach ncu as literal
    text: unescaped, `[` and `]` are its stack-bottom and stack-top quantifiers and the
    filter matches nothing (the GPU test of `profile` caught it)."""
    from cudabench.backends.nvtx import ncu_filter

    assert ncu_filter("reduce", "float4[BLOCK=512,ITEMS=64]", "16777216", "float32") == (
        r"cudabench@reduce/float4\[BLOCK=512,ITEMS=64\]/16777216/float32/"
    )
    assert ncu_filter("my_op", "a+b*c") == r"cudabench@my_op/a\+b\*c/"
    assert ncu_filter("reduce", "shuffle") == "cudabench@reduce/shuffle/"


def test_profile_command_line():
    child = ["python", "-m", "cudabench", "run", "reduce", "--profile-mode"]
    cmd = profile_command(
        "ncu",
        [("reduce", "float4", "442368x128", "float32"), ("reduce", "cupy", "442368x128", "float32")],
        Path("r.ncu-rep"),
        child,
        cold=True,
        section_set="full",
        sections=["MemoryWorkloadAnalysis"],
        metrics=["l1tex__t_bytes.sum"],
    )
    text = " ".join(cmd)
    assert cmd[:2] == ["ncu", "--nvtx"] and cmd[-len(child) :] == child
    assert text.count("--nvtx-include") == 2
    assert "--nvtx-include cudabench@reduce/float4/442368x128/float32/" in text
    assert "--clock-control none --cache-control all" in text
    assert "--set full" in text and "--section MemoryWorkloadAnalysis" in text
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in metrics and metrics[-1] == "l1tex__t_bytes.sum"
    assert cmd[cmd.index("--export") + 1] == "r.ncu-rep"
    assert L2_READ_HIT in metrics and L2_READ_MISS in metrics  # cold: was it really cold?
    hot = profile_command("ncu", [], Path("r"), child, cold=False)
    assert "--cache-control none" in " ".join(hot) and "--set" not in hot
    assert L2_READ_HIT not in hot[hot.index("--metrics") + 1]
    assert import_command("ncu", Path("r.ncu-rep"))[-5:] == [
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
    ]


def test_ncu_messages_prefers_errors():
    out = (
        "==PROF== Connected\n==WARNING== something\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n"
    )
    assert ncu_messages(out) == ["==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"]
    assert ncu_messages("==WARNING== No kernels were profiled.\n") == [
        "==WARNING== No kernels were profiled."
    ]


def test_profile_page_has_one_kernel_per_case():
    cases = metrics_by_case(parse_raw_csv(read("profile_reduce.csv")))
    variants = {"atomic", "float4", "naive", "shared", "shuffle", "cupy"}
    assert set(cases) == {RowKey("reduce", v, "442368x128", "float32") for v in variants}
    assert all(m.kernels == 1 for m in cases.values())
    float4 = cases[RowKey("reduce", "float4", "442368x128", "float32")]
    assert abs(float4.dram_read_bytes / (442368 * 128 * 4) - 1) < 0.01  # the input, once
    assert float4.bound == "memory"
    assert cases[RowKey("reduce", "naive", "442368x128", "float32")].bound == "latency"


def test_the_l2_hit_rate_of_a_cold_launch_counts_the_sms_reads_only():
    """The real --set full page of a cold 3x5 float4 launch (H200): L2's all-client hit rate
    (instruction and constant fetches, the other partition's requests) reads 54-67%, but
    none of the kernel's two read sectors hit; l2_hit_pct says 0 and no note is made."""
    table = pd.read_csv(io.StringIO(read("set_full.csv")), dtype=str, keep_default_na=False)
    all_clients = [float(v) for v in table["lts__t_sector_hit_rate.pct"].iloc[1:]]
    assert min(all_clients) > COLD_L2_HIT_PCT
    kernels = parse_raw_csv(read("set_full.csv"))
    assert all(k.metrics[L2_READ_HIT] == 0 and k.metrics[L2_READ_MISS] == 2 for k in kernels)
    (summary,) = metrics_by_case(kernels).values()
    assert summary.l2_hit_pct == 0.0 and cold_l2_note(summary) == ""
    assert (
        metrics_by_case(parse_raw_csv(read("reduce_runs.csv")))[
            RowKey("reduce", "float4", "16777216", "float32")
        ].l2_hit_pct
        is None
    )  # not asked


def test_l2_hits_are_summed_over_the_kernels_of_a_range():
    a = KernelRecord("a", (), {DURATION: 9000.0, L2_READ_HIT: 10.0, L2_READ_MISS: 990.0})
    b = KernelRecord("b", (), {DURATION: 1000.0, L2_READ_HIT: 1000.0, L2_READ_MISS: 0.0})
    assert summarize([a, b]).l2_hit_pct == pytest.approx(50.5)  # by sectors, not by time
    assert (
        summarize([KernelRecord("c", (), {DURATION: 1.0, L2_READ_HIT: 0.0, L2_READ_MISS: 0.0})]).l2_hit_pct
        is None
    )


@pytest.mark.parametrize(
    "hit, flagged",
    [(None, False), (0.0, False), (COLD_L2_HIT_PCT, False), (COLD_L2_HIT_PCT + 0.5, True), (97.0, True)],
)
def test_a_cold_launch_that_hit_l2_heavily_is_asked_about(hit, flagged):
    note = cold_l2_note(ProfileMetrics(kernels=1, duration_us=1.0, l2_hit_pct=hit))
    assert bool(note) == flagged
    if flagged:
        assert note.startswith(
            f"the cold launch hit L2 on {hit:.0f}% of its read sectors: was the flush effective?"
        )
    assert cold_l2_note(None) == ""
