"""The Python API through the fake backend: the same sweep as the CLI, the same rows."""

import pandas as pd
import pytest

import cudabench
from cudabench.execution.sweep import SweepError

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")


def test_run_returns_the_results_files_rows(tmp_path):
    df = cudabench.run(
        "reduce",
        shapes=["64x129", 1000, (8, 33)],
        variants=["float4"],
        dtypes=["float32", "bfloat16"],
        output=tmp_path,
        **QUICK,
    )
    (csv,) = tmp_path.glob("*.csv")
    assert df.to_csv(index=False) == csv.read_text()  # the same rows, column for column
    assert set(df["dtype"]) == {"float32", "bfloat16"} and set(df["shape"]) == {"64x129", "1000", "8x33"}
    kernels = df[~df["is_baseline"]]
    assert (kernels["status"] == "OK").all() and isinstance(df, pd.DataFrame)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(shapes=["8"], variants=["flaot4"]), "did you mean float4"),
        (dict(shapes=["8"], colder=True), "unknown keyword 'colder' \\(did you mean cold\\?\\)"),
        (dict(shape=["8"]), "unknown keyword 'shape' \\(did you mean shapes\\?\\)"),
        (dict(shapes=["8"], dtypes=["float61"]), "did you mean float16"),
    ],
)
def test_bad_input_is_one_sweep_error(kwargs, message):
    with pytest.raises(SweepError, match=message):
        cudabench.run("reduce", **kwargs)


def test_one_shape_alone_is_one_shape_and_dir_lists_the_api(tmp_path):
    df = cudabench.run(
        "reduce",
        shapes="1024",
        variants="float4",
        output=tmp_path,
        db=tmp_path / "h.db",
        ceilings=False,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
    assert set(df["shape"]) == {"1024"} and set(df[~df["is_baseline"]]["variant"]) == {"float4"}
    assert {"run", "tune", "timeit", "SweepError"} <= set(dir(cudabench))


def test_timeit_gives_the_measure_modules_samples():
    calls = []
    m = cudabench.timeit(lambda: calls.append(1), min_samples=5, min_time_s=0.0, warmup=2, backend="fake")
    assert len(m.samples_ms) >= 5 and m.median_ms > 0 and len(calls) >= 2 + 5


def test_tune_returns_one_row_per_search_and_saves(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "tuning.json"))
    df = cudabench.tune(
        "reduce",
        shapes=["64x129", "3x5"],
        variants=["float4"],
        params={"WARP_ROW_BYTES": [16, 32]},
        output=tmp_path / "res",
        **QUICK,
    )
    assert list(df["shape"]) == ["64x129", "3x5"] and (df["measured"] == 8).all()  # 4 x 2
    assert df["params"].str.startswith("BLOCK=").all() and (df["time_us"] > 0).all()
    from cudabench.record import tuning_file

    assert {e.shape for e in tuning_file.load()} == {"64x129", "3x5"}
    with pytest.raises(SweepError, match="no tunable parameters"):
        cudabench.tune("reduce", shapes=["8"], variants=["naive"])
