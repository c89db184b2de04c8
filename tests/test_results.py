import dataclasses
import json
import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.errors import ResultsError
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.present.reports import report_markdown
from cudabench.present.tables import failure_summary, results_table
from cudabench.record.results import fastest_per_shape, read_results, rows_frame, write_results
from cudabench.record.stems import result_stem

META = RunMeta(
    device=FAKE_DEVICE,
    timing_mode="hot",
    command="cudabench run reduce",
    started="2026-11-21T22:19:24+00:00",
    cudabench_version="0.1.0",
    cupy_version="14.2.0",
    nvcc_version="13.0.88",
    git_sha="abc",
    timing=TimingOptions(),
)
ROWS = [
    ResultRow(
        "reduce",
        "3x5",
        "float32",
        "fast",
        Status.OK,
        time_us=10.0,
        gbps=5.0,
        speedup=2.0,
        samples_us=(9.0, 10.0, 11.0),
    ),
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


def test_a_fail_row_with_an_infinite_error_reads_back_and_reports(tmp_path):
    """A NaN output's error is +inf (check_output): the verdicts sweep wrote such a row and
    `report` refused its own file. NaN and negative errors are still refused."""
    poisoned = ResultRow(
        "reduce",
        "1",
        "float32",
        "nan_out",
        Status.FAIL,
        max_abs_err=float("inf"),
        tolerance=1.7e-6,
        error="1 of 1 outputs wrong",
    )
    _, json_path = write_results(tmp_path / "run", META, [*ROWS, poisoned])
    assert read_results(json_path)[1][-1] == poisoned
    result = CliRunner().invoke(app, ["report", str(json_path), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "nan_out" in result.stdout
    for bad in ("NaN", "-1.0"):
        doc = json.loads(json_path.read_text())
        doc["rows"][-1]["max_abs_err"] = float(bad)
        json_path.write_text(json.dumps(doc))
        with pytest.raises(ResultsError, match=r"rows\[6\]\.max_abs_err: .* is not a number >= 0"):
            read_results(json_path)


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
    assert fastest_per_shape(ROWS) == {
        RowKey("reduce", "fast", "3x5", "float32"),
        RowKey("reduce", "slow", "7", "float32"),
    }
    console = Console(width=200, record=True)
    console.print(results_table(ROWS, META, "reduce"))
    text = console.export_text()
    assert "★ fast" in text and "★ slow" in text and "★ cupy" not in text
    assert "Fake GPU" in text and "hot L2" in text and "vs cupy" in text
    assert "FAIL 1 of 3 outputs wrong" in text


def test_a_long_starred_label_stays_on_its_row_in_a_narrow_terminal():
    long = [dataclasses.replace(r, variant=r.variant + "_x[LHINT=0,SHINT=0,BLOCK=512]") for r in ROWS]
    console = Console(width=100, record=True)
    console.print(results_table(long, META, "reduce"))
    starred = [line for line in console.export_text().splitlines() if "★" in line]
    assert len(starred) == 2 and all("fast_x" in line or "slow_x" in line for line in starred)
    assert all(any(ch.isdigit() for ch in line.split("│")[4]) for line in starred)  # its time


def test_failure_summary_names_failed_rows_only():
    assert failure_summary(ROWS) == ["reduce 3x5 float32 bad: FAIL (1 of 3 outputs wrong)"]
    failed_library = dataclasses.replace(ROWS[3], status=Status.FAIL, error="2 of 3 outputs wrong")
    assert failure_summary([*ROWS, failed_library], baselines=True) == [
        "reduce 3x5 float32 cupy: FAIL (2 of 3 outputs wrong)"
    ]


# --- the validating reader: any malformed file is one ResultsError naming file and field ---


def _doc(tmp_path):
    _, json_path = write_results(tmp_path / "run", META, ROWS)
    return json_path, json.loads(json_path.read_text())


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["rows"][1].__setitem__("time_us", "fast"), "rows[1].time_us"),
        (lambda d: d["rows"][0].__setitem__("status", "GREAT"), "rows[0].status"),
        (lambda d: d["rows"][0].__setitem__("samples_us", [1.0, "x"]), "rows[0].samples_us[1]"),
        (lambda d: d["rows"][0].__setitem__("registers", 3.5), "rows[0].registers"),
        (lambda d: d["rows"][0].__setitem__("time_us", -1.0), "rows[0].time_us"),
        (lambda d: d["rows"][0].__setitem__("sm_mhz", [1980]), "rows[0].sm_mhz"),
        (lambda d: d["rows"][2].pop("variant"), "rows[2].variant"),
        (lambda d: d["rows"][2].__setitem__("speed", 1), "rows[2].speed"),
        (lambda d: d["meta"]["device"].__setitem__("sm_count", "many"), "meta.device.sm_count"),
        (lambda d: d["meta"]["timing"].__setitem__("cold", "yes"), "meta.timing.cold"),
        (lambda d: d["meta"].__setitem__("format_version", 99), "meta.format_version"),
        (lambda d: d.__setitem__("rows", {"a": 1}), "rows"),
        (lambda d: d["meta"].__setitem__("a\nb", 1), "meta['a\\nb']"),  # a key that is not a name
        (lambda d: d["rows"][0].__setitem__("", 1), "rows[0]['']"),
    ],
)
def test_reader_names_the_field(tmp_path, edit, field):
    path, doc = _doc(tmp_path)
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as info:
        read_results(path)
    message = str(info.value)
    assert message.startswith(str(path)) and field in message and "\n" not in message


def test_truncated_file_and_csv_without_json(tmp_path):
    path, _ = _doc(tmp_path)
    path.write_text(path.read_text()[:100])
    with pytest.raises(ResultsError, match="not JSON"):
        read_results(path)
    path.unlink()
    with pytest.raises(ResultsError, match=r"run\.csv: .*run\.json.*there is none"):
        read_results(tmp_path / "run.csv")


def test_report_and_compare_say_one_line_for_a_bad_field(tmp_path):
    path, doc = _doc(tmp_path)
    doc["rows"][1]["time_us"] = "fast"
    path.write_text(json.dumps(doc))
    cli = CliRunner()
    for args in (["report", str(path)], ["compare", str(path), str(path)]):
        result = cli.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "rows[1].time_us" in lines[0]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_files_read_or_fail_with_one_line(tmp_path, data):
    """Replace, drop or add one value anywhere in a valid file, or cut it short: the reader
    returns records or raises ResultsError, never anything else."""
    path, doc = _doc(tmp_path)
    containers = []

    def walk(node):
        if isinstance(node, dict):
            containers.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            containers.append(node)
            for v in node:
                walk(v)

    walk(doc)
    target = data.draw(st.sampled_from(containers))
    keys = list(target) if isinstance(target, dict) else list(range(len(target)))
    action = data.draw(st.sampled_from(["replace", "drop", "add", "cut"]))
    if action == "replace" and keys:
        target[data.draw(st.sampled_from(keys))] = data.draw(_JSON)
    elif action == "drop" and keys:
        key = data.draw(st.sampled_from(keys))
        del target[key]
    elif action == "add" and isinstance(target, dict):
        target[data.draw(st.text(max_size=6))] = data.draw(_JSON)
    text = json.dumps(doc)
    if action == "cut":
        text = text[: data.draw(st.integers(0, len(text)))]
    path.write_text(text)
    try:
        meta, rows = read_results(path)
    except ResultsError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    assert isinstance(meta, RunMeta) and all(isinstance(r, ResultRow) for r in rows)
    results_table(rows, meta, "fuzz")  # a file that reads also renders
    report_markdown(rows, meta, "fuzz")
    rows_frame(rows).to_csv(index=False)


def test_csv_keeps_integers_and_splits_clock_pairs(tmp_path):
    rows = [dataclasses.replace(ROWS[0], registers=32, sm_mhz=(1980, 1965), mem_mhz=(3201, 3201)), *ROWS[1:]]
    csv_path, _ = write_results(tmp_path / "run", META, rows)
    lines = csv_path.read_text().splitlines()
    header = lines[0].split(",")
    first = dict(zip(header, lines[1].split(",")))
    assert first["registers"] == "32" and first["sm_mhz_before"] == "1980"
    assert first["sm_mhz_after"] == "1965" and "sm_mhz" not in header
    assert re.search(r"\|\s+32\s+\|", report_markdown(rows, META, "reduce"))


def test_each_dtype_has_its_own_star_and_label():
    half = [dataclasses.replace(r, dtype="bfloat16", time_us=(r.time_us or 0) / 2 or None) for r in ROWS[:4]]
    rows = [*ROWS[:4], *half]
    assert {k.dtype for k in fastest_per_shape(rows)} == {"float32", "bfloat16"}
    console = Console(width=200, record=True)
    console.print(results_table(rows, META, "reduce"))
    text = console.export_text()
    assert "3x5 float32" in text and "3x5 bfloat16" in text and text.count("★ fast") == 2


def test_the_speedup_heading_names_the_library_the_speedups_are_over():
    from cudabench.core.records import ResultRow, Status
    from cudabench.present.tables import speedup_label

    def row(variant, shape, dtype, time_us, baseline=True):
        status = Status.OK if time_us else Status.FAIL
        return ResultRow("softmax", shape, dtype, variant, status, time_us=time_us, is_baseline=baseline)

    float32 = [
        row("k", "8", "float32", 1.0, False),
        row("cupyx", "8", "float32", 2.0),
        row("torch", "8", "float32", 3.0),
    ]
    bf16 = [
        row("k", "8", "bfloat16", 1.0, False),
        row("cupyx", "8", "bfloat16", None),
        row("torch", "8", "bfloat16", 3.0),
    ]
    assert speedup_label(float32) == "vs cupyx"
    assert speedup_label(bf16) == "vs torch"  # cupyx failed: the speedups are over torch
    assert speedup_label(float32 + bf16) == "vs library"
    assert speedup_label([row("k", "8", "float32", 1.0, False)]) == "speedup"


def test_a_sweeps_rewrites_are_byte_for_byte_what_write_results_writes(tmp_path):
    """record/rowcache.py joins each row's CSV line and JSON text made once; the files are
    exactly write_results's, as rows end one by one, as a row is replaced (its speedup
    filled), with text a CSV must quote, and when a profiled row adds the ncu columns."""
    from cudabench.core.timing import ProfileMetrics
    from cudabench.record.rowcache import RowCache

    odd = ResultRow(
        "reduce",
        "3x5",
        "bfloat16",
        "mine",
        Status.FAIL,
        error='a "quoted", comma\nand a line',
        sm_mhz=(1980, 1755),
        registers=32,
        notes="ünïcode",
        time_us=3,  # an int in a float column: written as pandas writes it, 3.0
        max_abs_err=1e-07,
    )
    profiled = ResultRow(
        "reduce",
        "7",
        "float32",
        "fast",
        Status.OK,
        time_us=1.5,
        ncu=ProfileMetrics(kernels=2, duration_us=1.25),
    )
    cache = RowCache()
    whole, joined = tmp_path / "whole", tmp_path / "joined"
    sequence = [[], ROWS[:1], ROWS[:3], [*ROWS[:2], dataclasses.replace(ROWS[2], speedup=0.5)], [*ROWS, odd]]
    sequence.append([*ROWS, odd, profiled])
    for rows in sequence:
        write_results(whole, META, rows)
        cache.write(joined, META, rows)
        for suffix in (".csv", ".json"):
            assert (tmp_path / f"joined{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
    assert read_results(tmp_path / "joined.json")[1] == [*ROWS, odd, profiled]
