import json

import pandas as pd
import pytest

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.report import failure_summary, fastest_per_shape, results_table
from cudabench.results import ResultsError, read_results, result_stem, rows_frame, write_results
from cudabench.spec import ResultRow, RunMeta, Status, TimingOptions
from rich.console import Console

META = RunMeta(device=FAKE_DEVICE, timing_mode="hot", command="cudabench run reduce",
               started="2026-11-21T22:19:24+00:00", cudabench_version="0.1.0", cupy_version="14.2.0",
               nvcc_version="13.0.88", git_sha="abc", timing=TimingOptions())
ROWS = [
    ResultRow("reduce", "3x5", "float32", "fast", Status.OK, time_us=10.0, gbps=5.0, speedup=2.0,
              samples_us=(9.0, 10.0, 11.0)),
    ResultRow("reduce", "3x5", "float32", "slow", Status.OK, time_us=30.0, speedup=0.66),
    ResultRow("reduce", "3x5", "float32", "bad", Status.FAIL, error="1 of 3 outputs wrong"),
    ResultRow("reduce", "3x5", "float32", "cupy", Status.OK, time_us=20.0, is_baseline=True),
    ResultRow("reduce", "7", "float32", "slow", Status.OK, time_us=3.0),
    ResultRow("reduce", "7", "float32", "cupy", Status.OK, time_us=1.0, is_baseline=True),
]


def test_roundtrip_keeps_every_row_and_figure(tmp_path):
    csv_path, json_path = write_results(tmp_path / "run", META, ROWS)
    meta, rows = read_results(json_path)
    assert meta == META and rows == ROWS
    frame = pd.read_csv(csv_path)
    assert list(frame["variant"]) == [r.variant for r in ROWS]
    assert list(frame["status"]) == ["OK", "OK", "FAIL", "OK", "OK", "OK"]
    doc = json.loads(json_path.read_text())
    assert doc["meta"]["device"]["dram_peak_gbps"] == pytest.approx(FAKE_DEVICE.dram_peak_gbps)
    assert doc["rows"][0]["samples_us"] == [9.0, 10.0, 11.0]
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_read_rejects_other_files(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(ResultsError, match="not a cudabench results file"):
        read_results(tmp_path / "x.json")
    with pytest.raises(ResultsError, match="no such results file"):
        read_results(tmp_path / "missing.json")


def test_result_stem(tmp_path):
    assert str(result_stem(None, "reduce", "2026-11-21T22:19:24+00:00")) == "results/20261121T221924_reduce"
    assert result_stem(tmp_path / "a.json", "reduce", "t") == tmp_path / "a"
    assert result_stem(tmp_path, "reduce", "2026-11-21T22:19:24").parent == tmp_path


def test_frame_has_no_raw_samples():
    assert "samples_us" not in rows_frame(ROWS).columns


def test_table_marks_fastest_correct_variant_per_shape():
    assert fastest_per_shape(ROWS) == {("reduce", "3x5", "fast"), ("reduce", "7", "slow")}
    console = Console(width=200, record=True)
    console.print(results_table(ROWS, META, "reduce"))
    text = console.export_text()
    assert "★ fast" in text and "★ slow" in text and "★ cupy" not in text
    assert "Fake GPU" in text and "hot L2" in text and "vs cupy" in text
    assert "FAIL 1 of 3 outputs wrong" in text


def test_failure_summary_names_failed_rows_only():
    assert failure_summary(ROWS) == ["reduce 3x5 bad: FAIL (1 of 3 outputs wrong)"]
