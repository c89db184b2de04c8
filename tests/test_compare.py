"""compare and report on result files written here: verdicts, matching, exits, exports, plots."""

import dataclasses
import json
import random

import pytest
from conftest import flat
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.records import ResultRow, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.record.compare import (
    CompareError,
    Verdict,
    compare_rows,
    relative_standard_error,
    run_differences,
    speedup_matrix,
    verdict_for,
)
from cudabench.record.results import read_results, write_results

runner = CliRunner()


META = RunMeta(
    device=FAKE_DEVICE,
    timing_mode="hot",
    command="cudabench run reduce",
    started="2026-11-21T22:00:00+00:00",
    cudabench_version="0.1.0",
    cupy_version="14.2.0",
    nvcc_version="13.0.88",
    git_sha="",
    timing=TimingOptions(),
)


def samples(median, rel_noise, n=30, seed=0):
    rng = random.Random(seed)
    return tuple(median * (1 + rng.gauss(0, rel_noise)) for _ in range(n))


def row(
    variant,
    time_us,
    noise=0.002,
    shape="442368x128",
    status=Status.OK,
    n=30,
    seed=0,
    baseline=False,
    bytes_moved=None,
):
    s = samples(time_us, noise, n, seed) if time_us else ()
    median = sorted(s)[len(s) // 2] if s else None
    gbps = bytes_moved / (median * 1e-6) / 1e9 if bytes_moved and median else None
    return ResultRow(
        "reduce",
        shape,
        "float32",
        variant,
        status,
        time_us=median,
        samples_us=s,
        is_baseline=baseline,
        gbps=gbps,
        bytes_moved=bytes_moved,
    )


def test_verdict_rule_on_known_answers():
    clean_a, clean_b = row("v", 100.0, seed=1), row("v", 110.0, seed=2)
    assert verdict_for(clean_a, clean_b).verdict is Verdict.SLOWER
    assert verdict_for(clean_b, clean_a).verdict is Verdict.FASTER
    assert verdict_for(clean_a, row("v", 101.0, seed=3)).verdict is Verdict.SAME  # < 2%
    noisy = verdict_for(row("v", 100.0, 0.3, n=5, seed=4), row("v", 105.0, 0.3, n=5, seed=5))
    assert noisy.verdict is Verdict.UNSURE and noisy.noise > abs(noisy.change) > 0.02
    tight = verdict_for(row("v", 100.0, seed=6), row("v", 103.0, seed=7), threshold=0.01)
    assert tight.verdict is Verdict.SLOWER and tight.ratio == pytest.approx(1 / 1.03, rel=0.01)


def test_a_host_bound_row_must_clear_its_own_spread():
    """Two runs of the same host-bound baseline (torch's loop-timed 2^24 sum on an H100,
    2026-11-23): most samples near 64 us in one run and near 118 us in the other, both runs
    spanning both modes. The medians' standard errors are a few percent; the spread is
    ~85%, so the verdict is UNSURE, not SLOWER. A narrow row's real 11% change still is."""
    from cudabench.core.timing import Measurement

    def bimodal(low, high, seed):
        rng = random.Random(seed)
        return tuple(rng.gauss(64.0, 1.0) for _ in range(low)) + tuple(
            rng.gauss(118.0, 2.0) for _ in range(high)
        )

    def host_row(s):
        m = Measurement(tuple(x / 1e3 for x in s), 1, "loop")
        return dataclasses.replace(
            row("torch", 1.0), time_us=m.median_ms * 1e3, samples_us=s, spread=m.spread
        )

    a, b = host_row(bimodal(30, 15, 1)), host_row(bimodal(10, 17, 2))
    assert b.time_us / a.time_us > 1.7 and a.spread > 0.5
    pair = verdict_for(a, b)
    assert pair.verdict is Verdict.UNSURE and pair.noise >= a.spread
    bare = [dataclasses.replace(r, spread=None) for r in (a, b)]
    assert verdict_for(*bare).verdict is Verdict.SLOWER  # the standard error alone is fooled
    narrow_a, narrow_b = row("v", 25.4, seed=8), row("v", 28.2, seed=9)
    narrow_a = dataclasses.replace(narrow_a, spread=0.01)
    narrow_b = dataclasses.replace(narrow_b, spread=0.08)
    assert verdict_for(narrow_a, narrow_b).verdict is Verdict.SLOWER


def test_rows_of_different_clocks_get_no_verdict_unless_allowed(tmp_path):
    """A CUPTI-timed row leaves out the launch gaps that an events-timed row holds: 8.5 against
    6.4 us is a change of clock, not of the kernel. The rows' own clocks are a fingerprint
    key (timer) even where the two runs' metadata agree (a file can mix clocks)."""
    events = row("float4", 8.5, seed=1)
    cupti = dataclasses.replace(row("float4", 6.4, seed=2), timer="cupti")
    pair = verdict_for(events, cupti)
    assert pair.verdict is Verdict.NOT_COMPARABLE and not pair.regressed
    assert pair.mismatch == (("timer", "events", "cupti"),)
    allowed = verdict_for(events, cupti, allow={"timer"})
    assert allowed.verdict is Verdict.FASTER and allowed.marked
    assert verdict_for(events, cupti, allow={"driver"}).verdict is Verdict.NOT_COMPARABLE
    assert verdict_for(cupti, dataclasses.replace(cupti, time_us=6.45)).verdict is Verdict.SAME
    write_results(tmp_path / "a", META, [events])
    write_results(tmp_path / "b", META, [cupti])
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    shown = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "NOT COMPARABLE: timer events != cupti" in shown.stdout
    for allow in ("--allow-mixed-timers", "--allow-mismatch"):  # the old name: timer alone
        mixed = runner.invoke(app, [*args, allow, "--json"])
        assert [r["verdict"] for r in json.loads(mixed.stdout)] == ["FASTER"]


def test_an_old_results_file_reads_as_events_timed(tmp_path):
    write_results(tmp_path / "r", META, [row("float4", 5.0)])
    document = json.loads((tmp_path / "r.json").read_text())
    del document["meta"]["timing"]["timer"], document["rows"][0]["timer"]
    (tmp_path / "r.json").write_text(json.dumps(document))
    _, rows = read_results(tmp_path / "r.json")
    assert rows[0].timer == "events"


def test_standard_error_of_the_median():
    assert relative_standard_error(()) == 0.0 and relative_standard_error((5.0,)) == 0.0
    wide = relative_standard_error(samples(100.0, 0.10, 100, 1))
    narrow = relative_standard_error(samples(100.0, 0.01, 100, 1))
    assert 0.008 < wide < 0.02 and narrow == pytest.approx(wide / 10, rel=0.2)


def test_matching_status_changes_first_and_unmatched_kept():
    a = [row("fast", 50.0), row("gone", 70.0), row("breaks", 60.0), row("cupy", 100.0)]
    b = [
        row("fast", 50.2, seed=9),
        row("breaks", None, status=Status.FAIL),
        row("cupy", 100.1, seed=8),
        row("new", 40.0),
    ]
    pairs = compare_rows(a, b)
    assert [p.verdict for p in pairs] == [
        Verdict.STATUS,
        Verdict.SAME,
        Verdict.SAME,
        Verdict.ONLY_A,
        Verdict.ONLY_B,
    ]
    assert pairs[0].key.variant == "breaks" and pairs[0].regressed
    assert [p.key.variant for p in pairs[3:]] == ["gone", "new"]


def test_different_gpu_or_mode_are_fingerprint_differences():
    other = dataclasses.replace(META, device=dataclasses.replace(FAKE_DEVICE, name="Other GPU"))
    assert run_differences(META, other) == [("gpu", FAKE_DEVICE.name, "Other GPU")]
    cold = dataclasses.replace(META, timing_mode="cold")
    assert run_differences(META, cold) == [("flush", "hot", "cold")]
    assert run_differences(META, META) == []
    pair = verdict_for(row("v", 100.0, seed=1), row("v", 150.0, seed=2), mismatch=run_differences(META, cold))
    assert pair.verdict is Verdict.NOT_COMPARABLE and not pair.regressed


def test_speedup_matrix_against_baseline_or_named_variant():
    rows = [
        row("naive", 400.0),
        row("float4", 50.0),
        row("cupy", 100.0, baseline=True),
        row("naive", 40.0, shape="7"),
        row("cupy", 10.0, shape="7", baseline=True),
    ]
    matrix = speedup_matrix(rows)
    assert matrix.against == "cupy"
    assert matrix.speedup[("442368x128", "float4")] == pytest.approx(2.0, rel=0.01)
    assert ("7", "float4") not in matrix.speedup
    assert ("442368x128", "float4") in matrix.best and ("7", "naive") in matrix.best
    assert speedup_matrix(rows, "naive").speedup[("442368x128", "float4")] == pytest.approx(8, rel=0.02)
    with pytest.raises(CompareError, match="no row named 'nope'"):
        speedup_matrix(rows, "nope")


@pytest.fixture
def runs(tmp_path):
    a = [row("float4", 50.0, seed=1), row("shuffle", 60.0, seed=2), row("cupy", 100.0, seed=3, baseline=True)]
    b = [row("float4", 50.1, seed=4), row("shuffle", 70.0, seed=5), row("cupy", 100.2, seed=6, baseline=True)]
    write_results(tmp_path / "results" / "20261121T220000_reduce", META, a)
    write_results(
        tmp_path / "results" / "20261121T230000_reduce",
        dataclasses.replace(META, started="2026-11-21T23:00:00+00:00"),
        b,
    )
    return tmp_path


def test_compare_cli_latest_two_and_exit_statuses(runs, monkeypatch):
    monkeypatch.chdir(runs)
    plain = runner.invoke(app, ["compare"])
    assert plain.exit_code == 0, plain.output
    assert "SLOWER" in plain.stdout and "shuffle" in plain.stdout
    gate = runner.invoke(app, ["compare", "--fail-on-regression"])
    assert gate.exit_code == 1 and "regression" in gate.stderr and "shuffle" in gate.stderr
    loose = runner.invoke(app, ["compare", "--threshold", "20%", "--fail-on-regression"])
    assert loose.exit_code == 0
    js = runner.invoke(
        app,
        ["compare", "results/20261121T220000_reduce.csv", "results/20261121T230000_reduce.json", "--json"],
    )
    verdicts = {r["variant"]: r["verdict"] for r in json.loads(js.stdout)}
    assert verdicts == {"float4": "SAME", "shuffle": "SLOWER", "cupy": "SAME"}


def test_gate_fails_when_nothing_matched_or_rows_went_missing(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(runs)
    a = "results/20261121T220000_reduce.json"
    other_op = [dataclasses.replace(row("float4", 50.0), op="add")]
    write_results(tmp_path / "add_run", META, other_op)
    nothing = runner.invoke(app, ["compare", a, str(tmp_path / "add_run.json"), "--fail-on-regression"])
    assert nothing.exit_code == 1 and "no rows matched" in nothing.stderr
    assert runner.invoke(app, ["compare", a, str(tmp_path / "add_run.json")]).exit_code == 0
    lost = [row("float4", 50.0, seed=7), row("cupy", 100.0, seed=8, baseline=True)]  # shuffle gone
    write_results(tmp_path / "lost", META, lost)
    gate = runner.invoke(app, ["compare", a, str(tmp_path / "lost.json"), "--fail-on-regression"])
    assert gate.exit_code == 1 and "missing from B" in gate.stderr and "shuffle" in gate.stderr
    allowed = runner.invoke(
        app, ["compare", a, str(tmp_path / "lost.json"), "--fail-on-regression", "--allow-missing"]
    )
    assert allowed.exit_code == 0, allowed.output
    nothing_allowed = runner.invoke(
        app, ["compare", a, str(tmp_path / "add_run.json"), "--fail-on-regression", "--allow-missing"]
    )
    assert nothing_allowed.exit_code == 1


def test_a_slower_library_baseline_is_shown_but_fails_no_gate(tmp_path):
    """torch's host-bound timing moved 64 -> 118 us between two runs of the same code on an
    H100: the table says so, the CI gate (about the kernels under test) does not fail."""
    a = [row("float4", 50.0, seed=1), row("torch", 64.0, seed=2, baseline=True)]
    b = [row("float4", 50.1, seed=3), row("torch", 118.0, seed=4, baseline=True)]
    write_results(tmp_path / "a", META, a)
    write_results(tmp_path / "b", META, b)
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    shown = runner.invoke(app, [*args, "--json"])
    verdicts = {r["variant"]: r["verdict"] for r in json.loads(shown.stdout)}
    assert verdicts == {"float4": "SAME", "torch": "SLOWER"}
    assert runner.invoke(app, [*args, "--fail-above", "3%"]).exit_code == 0
    b[0] = row("float4", 60.0, seed=5)  # the kernel itself: the gate fails
    write_results(tmp_path / "b", META, b)
    gate = runner.invoke(app, [*args, "--fail-above", "3%"])
    assert gate.exit_code == 1 and "float4" in gate.stderr and "torch" not in gate.stderr


def test_compare_cli_judges_no_row_of_another_gpu_unless_asked(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(runs)
    other = dataclasses.replace(META, device=dataclasses.replace(FAKE_DEVICE, name="Other GPU"))
    write_results(tmp_path / "other", other, [row("float4", 40.0)])
    args = ["compare", "results", str(tmp_path / "other.json")]
    shown = runner.invoke(app, [*args, "--json"])
    assert shown.exit_code == 0, shown.output
    (pair,) = [p for p in json.loads(shown.stdout) if p["variant"] == "float4"]
    assert pair["verdict"] == "NOT_COMPARABLE"
    assert pair["mismatch"] == [{"key": "gpu", "a": FAKE_DEVICE.name, "b": "Other GPU"}]
    assert "NOT COMPARABLE: 1 row(s) got no verdict" in flat(shown.stderr)
    for allow in ("--allow-mismatch", "--ignore-device"):  # the old name still works
        forced = runner.invoke(app, [*args, allow], env={"COLUMNS": "200"})
        assert forced.exit_code == 0 and "FASTER*" in forced.stdout
        assert f"gpu {FAKE_DEVICE.name} != Other GPU" in flat(forced.stderr)


@pytest.mark.parametrize(
    "args, message",
    [
        (["compare", "--threshold", "lots"], "not a fraction"),
        (["compare", "--threshold", "150%"], "between 0% and 100%"),
        (["compare", "nope.json", "nope2.json"], "no such results file"),
        (["compare", "--by", "shape"], "only 'variant'"),
        (["report", "-f", "pdf"], "not one of"),
        (["report", "-s", "5"], "give it with --plot"),  # it picked nothing, silently
        (["report", "--plot", "p.png", "-s", "abc"], "not a number"),
    ],
)
def test_compare_and_report_bad_usage(runs, monkeypatch, args, message):
    monkeypatch.chdir(runs)
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and message in result.stderr


def test_compare_rejects_files_that_are_not_results(tmp_path, monkeypatch):
    (tmp_path / "x.json").write_text('{"rows": 3}')
    result = runner.invoke(app, ["compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "not a cudabench results file" in result.stderr


def test_by_variant_matrix_cli(runs, monkeypatch):
    monkeypatch.chdir(runs)
    result = runner.invoke(app, ["compare", "--by", "variant"])
    assert result.exit_code == 0 and "speedup over cupy" in result.stdout and "★" in result.stdout


def test_report_formats(runs, monkeypatch):
    monkeypatch.chdir(runs)
    md = runner.invoke(app, ["report", "-f", "markdown"])
    assert md.exit_code == 0 and "| op " in md.stdout and "**float4**" in md.stdout
    assert "Fake GPU" in md.stdout
    csv = runner.invoke(app, ["report", "-f", "csv"]).stdout.splitlines()
    assert csv[0].startswith("op,shape,dtype,variant,status") and len(csv) == 4
    doc = json.loads(runner.invoke(app, ["report", "-f", "json"]).stdout)
    assert len(doc["rows"]) == 3 and doc["meta"]["device"]["name"] == "Fake GPU (no hardware)"
    html = runner.invoke(app, ["report", "-f", "html", "-o", "r.html"])
    assert html.exit_code == 0 and "<table" in (runs / "r.html").read_text()
    assert "float4" in runner.invoke(app, ["report"]).stdout


def test_report_plot_reads_the_shape_as_run_does(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    rows = [
        row(v, t, shape="1073741824", bytes_moved=4 << 30) for v, t in (("float4", 950.0), ("naive", 9e5))
    ]
    rows += [row(v, t, shape="1048576", bytes_moved=4 << 20) for v, t in (("float4", 9.0), ("naive", 900.0))]
    write_results(tmp_path / "run", META, rows)
    for text in ("2^20", "1048576", "1.048576e6"):  # one shape, written three ways
        drawn = runner.invoke(
            app, ["report", str(tmp_path / "run.json"), "--plot", str(tmp_path / "p.png"), "-s", text]
        )
        assert drawn.exit_code == 0, drawn.output
        assert "bars: shape 1048576" in flat(drawn.stderr)


def test_plot_has_the_right_axes_and_opens(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib import image

    from cudabench.present.plots import draw_run, plot_run

    rows = [
        row(v, t * k, shape=s, bytes_moved=b, baseline=(v == "cupy"))
        for s, b, k in (
            ("1048576", 4 << 20, 0.01),
            ("1073741824", 4 << 30, 1.0),
            ("442368x128", 226 << 20, 0.06),
        )
        for v, t in (("float4", 950.0), ("naive", 9e5), ("cupy", 945.0))
    ]
    fig, shape = draw_run(rows, META)
    left, right = fig.axes
    assert shape == "1073741824"  # the largest problem by default
    assert left.get_xscale() == "log" and "bytes moved" in left.get_xlabel()
    assert "GB/s" in left.get_ylabel() and "GB/s" in right.get_ylabel()
    assert [line.get_label() for line in left.get_lines()[:3]] == ["float4", "naive", "cupy"]
    peak = FAKE_DEVICE.dram_peak_gbps
    assert any(list(line.get_ydata()) == [peak, peak] for line in left.get_lines())
    assert [t.get_text() for t in right.get_xticklabels()] == ["float4", "naive", "cupy"]
    assert "Fake GPU" in fig._suptitle.get_text()
    path = tmp_path / "plot.png"
    assert plot_run(rows, META, path, shape="442368x128") == "442368x128"
    pixels = image.imread(path)  # the file opens as an image
    assert pixels.shape[0] > 400 and pixels.shape[1] > 1000
    with pytest.raises(ValueError, match="no timed row at shape"):
        plot_run(rows, META, path, shape="3x5")


def test_rows_from_before_parameters_match_the_one_configuration():
    import dataclasses as dc

    from cudabench.core.records import ResultRow, Status
    from cudabench.record.compare import Verdict, compare_rows

    old = ResultRow("reduce", "7", "float32", "float4", Status.OK, time_us=10.0, samples_us=(10.0,) * 5)
    new = dc.replace(old, params="BLOCK=256,ITEMS=64")
    (pair,) = compare_rows([old], [new])
    assert pair.verdict is Verdict.SAME and pair.key.params == "BLOCK=256,ITEMS=64"
    two = [new, dc.replace(new, params="BLOCK=128,ITEMS=64")]  # a grid: no guessing
    assert {p.verdict for p in compare_rows([old], two)} == {Verdict.ONLY_A, Verdict.ONLY_B}
