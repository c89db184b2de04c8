"""The sweep below the CLI (cudabench/execution/sweep.py): plan, run in process through the fake
backend, rows streamed and saved as they end, Ctrl-C kept; no typer, no printing."""

import json

import pytest
from conftest import StopAfter, run_in_process

from cudabench.core.shapes import parse_shape
from cudabench.execution import sweep
from cudabench.execution.plan import plan

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)


def test_plan_is_one_job_per_dtype_and_shape():
    work = plan("reduce", [(64, 129), (1000,)], ["float4", "atomic"], None, ["float32", "bfloat16"], **QUICK)
    assert [(j.case.dtype, j.case.shape_text) for j in work.jobs] == [
        ("float32", "64x129"),
        ("float32", "1000"),
        ("bfloat16", "64x129"),
        ("bfloat16", "1000"),
    ]
    assert [v.name for v in work.jobs[2].variants] == ["float4"]  # atomic is float32 only
    assert work.timing.min_samples == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (("nosuch", [(8,)], None, None), "unknown op 'nosuch'"),
        (("reduce", [(8,)], ["flaot4"], None), "did you mean float4"),
        (("reduce", [(8,)], ["atomic"], None, ["float16"]), "no chosen variant of reduce runs in float16"),
    ],
)
def test_bad_usage_is_a_sweep_error(args, message):
    with pytest.raises(sweep.SweepError, match=message):
        plan(*args)


def _run(tmp_path, work, listener=None):
    sweep_ = run_in_process(tmp_path, work, listener)
    return sweep_.stem, sweep_.rows


def test_rows_stream_to_the_listener_and_the_files_as_they_end(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)
    seen = []

    class Listener:
        def started(self, case, name, device):
            pass

        def finished(self, row):
            saved = json.loads(next(tmp_path.glob("*_reduce.json")).read_text())["rows"]
            seen.append((row.variant, len(saved)))

    rows = run_in_process(tmp_path, work, Listener()).rows
    assert [r.variant for r in rows] == ["float4", "cupy", "float4", "cupy"]
    assert [n for _, n in seen] == [1, 2, 3, 4]  # each row was on disk when it was reported


def test_ctrl_c_keeps_the_finished_rows(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)

    with pytest.raises(sweep.Interrupted) as info:
        _run(tmp_path, work, StopAfter(2))
    doc = json.loads(info.value.path.read_text())
    assert doc["meta"]["complete"] is False and len(doc["rows"]) == 2 == len(info.value.rows)


def test_one_shape_in_two_spellings_runs_once():
    work = plan(
        "reduce", [parse_shape(s) for s in ("1024", "2^10", "1e3", "1000")], ["float4"], None, None, **QUICK
    )
    assert [j.case.shape_text for j in work.jobs] == ["1024", "1000"]
