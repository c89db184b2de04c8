"""float16 and bfloat16: the dtype axis from the header and the command line to the rows, and
tolerances tight enough to catch planted faults yet loose enough for float32 accumulation."""

import json

import ml_dtypes
import numpy as np
import pytest
from typer.testing import CliRunner

from cudabench.backends.fake import FakeBackend
from cudabench.cli import app
from cudabench.core.dtypes import (
    BFLOAT16,
    DTYPES,
    FLOAT16,
    FLOAT32,
    UnknownDType,
    get_dtype,
    output_tolerance,
)
from cudabench.core.records import Case, KernelVariant, Launch, ResultRow, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.ops.header import KernelHeaderError, instantiate, parse_header
from cudabench.record.compare import Verdict, compare_rows

QUICK = TimingOptions(warmup=1, min_samples=3, min_time_s=0.0, max_time_s=1.0)
SIXTEEN = ["float16", "bfloat16"]
cli = CliRunner()
FAKE = {"CUDABENCH_BACKEND": "fake"}
CLI_QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]


def test_registry_and_did_you_mean():
    assert [d.itemsize for d in DTYPES.values()] == [4, 2, 2]
    assert BFLOAT16.array_type() == np.dtype(ml_dtypes.bfloat16)
    assert FLOAT16.defines == ("-DCB_T=__half", "-DCB_DTYPE_F16")
    with pytest.raises(UnknownDType, match=r"did you mean bfloat16"):
        get_dtype("bfloat61")


def test_output_tolerance_adds_one_rounding_and_the_subnormal_step():
    ref, tol = np.array([1.0, -3.0, 0.0]), np.zeros(3)
    assert output_tolerance(np, FLOAT32, ref, tol) is tol
    assert output_tolerance(np, BFLOAT16, ref, tol)[1] == pytest.approx(3 * 2**-8)
    assert output_tolerance(np, FLOAT16, ref, tol)[2] == pytest.approx(2**-25)


def test_instantiate_binds_t_by_name_only():
    assert instantiate("k<T, 4>", "__half") == "k<__half, 4>"
    assert instantiate("kernel<T, TT, long long>", "float") == "kernel<float, TT, long long>"
    assert instantiate("plain_T_name", "float") == "plain_T_name"


HEADER = """// cudabench:
//   variant: v
//   entry: reduce_sum_float4
//   block: 256
//   grid: segments
//   dtypes: {dtypes}
//   about: x
"""


@pytest.mark.parametrize(
    "dtypes, expected",
    [
        ("[float32, bfloat16]", ("float32", "bfloat16")),
        ("float16", ("float16",)),
    ],
)
def test_header_dtypes(tmp_path, dtypes, expected):
    assert parse_header(tmp_path / "k.cu", "reduce", HEADER.format(dtypes=dtypes)).dtypes == expected


@pytest.mark.parametrize(
    "dtypes, message",
    [
        ("[float32, bf16]", r"k.cu:6: unknown dtype 'bf16'"),
        ("[]", r"k.cu:6: dtypes must be a list"),
        ("[float32, half]", r"k.cu:6: unknown dtype 'half'"),
    ],
)
def test_header_dtype_errors_name_the_line(tmp_path, dtypes, message):
    with pytest.raises(KernelHeaderError, match=message):
        parse_header(tmp_path / "k.cu", "reduce", HEADER.format(dtypes=dtypes))


def test_template_entries_parse_and_junk_does_not(tmp_path):
    text = HEADER.format(dtypes="[float32]").replace("reduce_sum_float4", "Reduce<T,  long long>")
    assert parse_header(tmp_path / "k.cu", "reduce", text).entries == ("Reduce<T, long long>",)
    with pytest.raises(KernelHeaderError, match="template instantiation"):
        parse_header(tmp_path / "k.cu", "reduce", text.replace("Reduce<T,  long long>", "a;b<T>"))


# --- planted kernels, in the element type the runner hands them ---------------------------


def f32_sum(grid, block, x, out, *rest):  # what the real kernels do: float accumulation
    out[...] = x.astype(np.float32).sum(axis=-1)


def drop_tail(grid, block, x, out, *rest):
    out[...] = x[..., :-1].astype(np.float32).sum(axis=-1)


def start_at_one(grid, block, x, out, *rest):
    out[...] = x.astype(np.float32).sum(axis=-1) + 1


def write_nothing(grid, block, x, out, *rest):
    pass


def half_accumulator(grid, block, x, out, *rest):
    """Accumulates in the 16-bit type, one element after another: the mistake the issue asks
    a fixture of."""
    acc = np.zeros(x.shape[:-1] or (1,), dtype=x.dtype)
    for column in np.moveaxis(x.reshape(acc.shape + (x.shape[-1],)), -1, 0):
        acc = (acc + column).astype(x.dtype)
    out[...] = acc.reshape(out.shape)


KERNELS = {
    "good": f32_sum,
    "drop": drop_tail,
    "start": start_at_one,
    "none": write_nothing,
    "half": half_accumulator,
}


def _variant(name):
    return KernelVariant(
        "reduce",
        name,
        f"/k/{name}.cu",
        (Launch(name, 256, "segments"),),
        "t",
        dtypes=("float32", "float16", "bfloat16"),
    )


def _rows(shape, dtype, *names):
    job = CaseJob(Case("reduce", shape, dtype), tuple(_variant(n) for n in names), (), QUICK)
    return {r.variant: r for r in Runner(FakeBackend(kernels=KERNELS)).run_job(job)}


@pytest.mark.parametrize("dtype", SIXTEEN)
@pytest.mark.parametrize("shape", [(1,), (31,), (33,), (65537, 3), (442367 // 1000, 129)])
def test_float_accumulation_passes_on_odd_shapes(dtype, shape):
    row = _rows(shape, dtype, "good")["good"]
    assert row.status is Status.OK, row.error
    assert row.dtype == dtype and row.bytes_moved == 2 * (np.prod(shape) + np.prod(shape[:-1]))


@pytest.mark.parametrize("dtype", SIXTEEN)
def test_planted_faults_are_caught_in_16_bit(dtype):
    rows = _rows((1000, 128), dtype, "drop", "start", "none")
    for name in ("drop", "start", "none"):
        assert rows[name].status is Status.FAIL, (name, rows[name])


@pytest.mark.parametrize("dtype", SIXTEEN)
def test_a_16_bit_accumulator_fails_on_long_rows(dtype):
    assert _rows((4, 32768), dtype, "half")["half"].status is Status.FAIL
    assert _rows((4, 32768), dtype, "good")["good"].status is Status.OK


# --- the command line ----------------------------------------------------------------------


def test_run_in_several_dtypes_keys_every_row_by_its_dtype(tmp_path):
    result = cli.invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "64x129",
            "--dtype",
            "bfloat16",
            "--dtype",
            "float32",
            *CLI_QUICK,
            "-o",
            str(tmp_path),
        ],
        env=FAKE,
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    bf16 = {r["variant"] for r in rows if r["dtype"] == "bfloat16"}
    assert "atomic" not in bf16 and {"float4", "shuffle", "shared", "cupy"} <= bf16
    assert "64x129 bfloat16" in result.stdout and "64x129 float32" in result.stdout


def test_dtype_all_runs_each_variant_in_what_it_declares(tmp_path):
    result = cli.invoke(
        app, ["run", "reduce", "-s", "100", "--dtype", "all", *CLI_QUICK, "-o", str(tmp_path)], env=FAKE
    )
    assert result.exit_code == 0, result.output  # a library baseline failing in 16-bit is a note
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    assert {r["dtype"] for r in rows} == {"float32", "float16", "bfloat16"}
    assert {r["dtype"] for r in rows if r["variant"] == "naive"} == {"float32"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dtype", "nosuch"], "unknown dtype 'nosuch'"),
        (["--dtype", "bfloat61"], "did you mean bfloat16"),
        (
            ["-v", "atomic", "--dtype", "bfloat16"],
            "no chosen variant of reduce runs in bfloat16 (atomic: float32)",
        ),
    ],
)
def test_bad_dtype_is_one_line_exit_2(args, message):
    result = cli.invoke(app, ["run", "reduce", "-s", "8", *args], env=FAKE)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_float16_row_never_matches_a_float32_row():
    a = ResultRow("reduce", "8", "float32", "float4", Status.OK, time_us=1.0)
    b = ResultRow("reduce", "8", "float16", "float4", Status.OK, time_us=1.0)
    assert [p.verdict for p in compare_rows([a], [b])] == [Verdict.ONLY_A, Verdict.ONLY_B]


def test_list_shows_dtypes():
    result = cli.invoke(app, ["list", "softmax"])
    assert "f32, f16, bf16" in result.stdout
