"""Issue 32, "what a new user still hits": each test names its item. GPU-free (the fake
backend or files written here)."""

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import flat
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.errors import ResultsError
from cudabench.core.records import ResultRow, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.record.compare import find_pair, find_run
from cudabench.record.results import read_results, write_results
from cudabench.record.stems import is_results_file, refuse_overwrite_stem, result_stem, stem_file

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


def row(variant, time_us, op="reduce", shape="1024", baseline=False):
    samples = tuple(time_us * (1 + 0.001 * i) for i in range(-5, 6))
    moved = 4 * 1024 + 4
    return ResultRow(
        op,
        shape,
        "float32",
        variant,
        Status.OK,
        time_us=time_us,
        samples_us=samples,
        is_baseline=baseline,
        bytes_moved=moved,
        gbps=moved / (time_us * 1e-6) / 1e9,
    )


def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and (
        result.exception is None or isinstance(result.exception, SystemExit)
    )
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------- 1: default runs by metadata


@pytest.fixture
def results_folder(tmp_path, monkeypatch):
    """What a first GPU run leaves: each run's rows, the ceilings run measured with it (same
    start), the ceilings and tuning files; names that sort in the wrong order."""
    folder = tmp_path / "results"
    early = dataclasses.replace(META, started="2026-11-21T22:00:00+00:00")
    late = dataclasses.replace(META, started="2026-11-21T23:00:00+00:00")
    ceil = [row("vec4", 10.0, op="stream_read"), row("cupy", 11.0, op="stream_read", baseline=True)]
    for meta, stamp, t in ((early, "20261121T220000", 50.0), (late, "20261121T230000", 70.0)):
        write_results(folder / f"{stamp}_reduce", meta, [row("float4", t), row("cupy", 100.0, baseline=True)])
        write_results(
            folder / f"{stamp}_ceilings", dataclasses.replace(meta, command="cudabench ceilings"), ceil
        )
    # a run named to sort last but started first: never the newest
    write_results(
        folder / "zz_old_reduce",
        dataclasses.replace(META, started="2026-11-20T10:00:00+00:00"),
        [row("float4", 10.0), row("cupy", 100.0, baseline=True)],
    )
    (folder / "ceilings.json").write_text(json.dumps({"version": 1, "entries": []}))
    (folder / "tuning.json").write_text(json.dumps({"version": 1, "entries": {}}))
    monkeypatch.chdir(tmp_path)
    return folder


def test_1_compare_and_report_pick_runs_by_their_metadata(results_folder):
    a, b = find_pair(results_folder)
    assert (a.name, b.name) == ("20261121T220000_reduce.json", "20261121T230000_reduce.json")
    assert find_run(results_folder).name == "20261121T230000_reduce.json"
    result = runner.invoke(app, ["compare", "--json"])
    assert result.exit_code == 0, result.output
    verdicts = {r["variant"]: r["verdict"] for r in json.loads(result.stdout)}
    assert verdicts == {"float4": "SLOWER", "cupy": "SAME"}
    shown = runner.invoke(app, ["report", "-f", "csv"])
    assert shown.exit_code == 0 and "float4" in shown.stdout and "stream_read" not in shown.stdout


def test_1_a_runs_kind_is_its_command_from_the_cli_or_the_api(tmp_path):
    from cudabench.record.compare import RunFile

    def kind(command):
        return RunFile(tmp_path / "x.json", "t", command, frozenset()).kind

    assert kind("cudabench run reduce -s 7") == kind("cudabench.run('reduce', shapes=['7'])") == "run"
    assert kind("cudabench ceilings") == "ceilings" and kind("/usr/bin/cudabench tune x") == "tune"


def test_1_no_earlier_run_of_the_same_kind_is_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    write_results(folder / "1_reduce", META, [row("float4", 50.0)])
    write_results(
        folder / "2_ceilings",
        dataclasses.replace(META, command="cudabench ceilings", started="2026-11-21T23:00:00+00:00"),
        [row("vec4", 10.0, op="stream_read")],
    )
    (folder / "ceilings.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    one_line_error(runner.invoke(app, ["compare"]), "no earlier run like the newest", "2_ceilings")


# ---------------------------------------------------------------- 3: an OK row needs its time


def test_3_an_ok_row_without_a_time_is_refused(tmp_path):
    path = write_results(tmp_path / "b", META, [row("float4", 50.0)])[1]
    doc = json.loads(path.read_text())
    doc["rows"][0]["time_us"] = None
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=r"rows\[0\]\.time_us: an OK row needs its time"):
        read_results(path)
    one_line_error(runner.invoke(app, ["report", str(path)]), "rows[0].time_us")
    good = write_results(tmp_path / "a", META, [row("float4", 50.0)])[1]
    one_line_error(
        runner.invoke(app, ["compare", str(good), str(path), "--fail-on-regression"]), "rows[0].time_us"
    )
    # profile's rows (method ncu) are untimed by design and still read
    doc["rows"][0]["method"] = "ncu"
    path.write_text(json.dumps(doc))
    assert read_results(path)[1][0].time_us is None


# ---------------------------------------------------------------- 4: report's output errors


@pytest.fixture
def one_run(tmp_path):
    return write_results(
        tmp_path / "run",
        META,
        [row("float4", 50.0, shape="1024"), row("cupy", 100.0, shape="1024", baseline=True)],
    )[1]


def test_4_report_output_errors_are_one_line(one_run, tmp_path, monkeypatch):
    one_line_error(
        runner.invoke(
            app, ["report", str(one_run), "-f", "csv", "-o", str(tmp_path / "no" / "such" / "r.csv")]
        ),
        "no such folder",
    )
    one_line_error(
        runner.invoke(app, ["report", str(one_run), "-f", "csv", "-o", str(tmp_path)]), "is a folder"
    )

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_text", refuse)  # a read-only folder (root ignores chmod)
    one_line_error(
        runner.invoke(app, ["report", str(one_run), "-f", "csv", "-o", str(tmp_path / "r.csv")]),
        "Permission denied",
    )


def test_report_output_takes_its_format_from_the_suffix(one_run, tmp_path):
    for name, starts in [("r.md", "**reduce"), ("r.csv", "op,"), ("r.json", "{"), ("r.html", "<")]:
        done = runner.invoke(app, ["report", str(one_run), "-o", str(tmp_path / name)])
        assert done.exit_code == 0, done.output
        assert (tmp_path / name).read_text().lstrip().startswith(starts), name
    one_line_error(runner.invoke(app, ["report", str(one_run), "-o", str(tmp_path / "r.txt")]), "--format")
    one_line_error(runner.invoke(app, ["report", str(one_run), "-o", str(tmp_path)]), "is a folder")
    table = runner.invoke(app, ["report", str(one_run), "-f", "table", "-o", str(tmp_path / "r.md")])
    one_line_error(table, "terminal")
    csv = runner.invoke(app, ["report", str(one_run), "-f", "csv", "-o", str(tmp_path / "r2.md")])
    assert csv.exit_code == 0 and (tmp_path / "r2.md").read_text().startswith("op,")  # -f wins


@pytest.mark.parametrize("option", ["--plot", "--roofline"])
def test_4_plots_into_a_folder_that_cannot_be_written_are_one_line(one_run, tmp_path, monkeypatch, option):
    import matplotlib.figure

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", refuse)
    one_line_error(
        runner.invoke(app, ["report", str(one_run), option, str(tmp_path / "p.png")]),
        option,
        "Permission denied",
    )
    monkeypatch.undo()
    one_line_error(runner.invoke(app, ["report", str(one_run), option, str(tmp_path)]), option, "folder")


# ---------------------------------------------------------------- 5: never overwrite results


QUICK_RUN = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01"]


@pytest.mark.parametrize(
    "command",
    [
        ["run", "reduce", "-s", "7", "-v", "float4", *QUICK_RUN],
        ["tune", "reduce", "-s", "7", "-v", "float4", "--budget", "2", "--no-plot", "--no-save"],
    ],
)
def test_5_run_and_tune_never_replace_an_earlier_run_unless_forced(one_run, command, monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    before = one_run.read_text()
    refused = runner.invoke(app, [*command, "-o", str(one_run)])
    one_line_error(refused, str(one_run), "--force")
    assert one_run.read_text() == before  # nothing ran, nothing was written
    forced = runner.invoke(app, [*command, "-o", str(one_run), "--force"])
    assert forced.exit_code == 0, forced.output
    assert one_run.read_text() != before


def test_5_report_never_replaces_a_results_file_unless_forced(one_run):
    before = one_run.read_text()
    one_line_error(
        runner.invoke(app, ["report", str(one_run), "-f", "csv", "-o", str(one_run)]), str(one_run), "--force"
    )
    other = one_run.with_suffix(".csv")  # the run's own CSV is a results file too
    one_line_error(
        runner.invoke(app, ["report", str(one_run), "-f", "markdown", "-o", str(other)]), "--force"
    )
    assert one_run.read_text() == before
    report = one_run.parent / "report.md"
    for _ in range(2):  # a report file is not a results file: writing it again is fine
        assert runner.invoke(app, ["report", str(other), "-f", "markdown", "-o", str(report)]).exit_code == 0
    forced = runner.invoke(app, ["report", str(one_run), "-f", "csv", "-o", str(one_run), "--force"])
    assert forced.exit_code == 0 and one_run.read_text().startswith("op,")


def test_5_refuse_overwrite_stem(tmp_path):
    stem = tmp_path / "keep"
    refuse_overwrite_stem(stem)  # nothing there yet
    write_results(stem, META, [row("float4", 50.0)])
    with pytest.raises(ResultsError, match=r"keep\.json is an existing results file.*--force"):
        refuse_overwrite_stem(stem)
    refuse_overwrite_stem(stem, force=True)
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    assert not is_results_file(tmp_path / "notes.json") and is_results_file(stem_file(stem, ".csv"))


# ---------------------------------------------------------------- 8: user text printed literally


def test_8_bracketed_text_is_printed_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one_line_error(runner.invoke(app, ["report", "[x].json"]), "[x].json")
    one_line_error(runner.invoke(app, ["run", "[x].yaml"], env={"CUDABENCH_BACKEND": "fake"}), "[x].yaml")
    helped = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    assert "pip install -e '.[cluster]'" in " ".join(helped.stdout.split())


# ---------------------------------------------------------------- 11: the umask's file mode


def test_11_results_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        paths = write_results(tmp_path / "run", META, [row("float4", 50.0)])
        os.umask(0o027)
        paths += write_results(tmp_path / "run2", META, [row("float4", 50.0)])
    finally:
        os.umask(old)
    modes = [stat.S_IMODE(p.stat().st_mode) for p in paths]
    assert modes == [0o644, 0o644, 0o640, 0o640]


# ---------------------------------------------------------------- 12: gate notes and blame


def test_12_compare_and_report_of_verify_checks_say_so(one_run, tmp_path):
    checks = [
        dataclasses.replace(row("float4", 1.0, shape=str(n)), time_us=None, method="verify") for n in (1, 33)
    ]
    verify_meta = dataclasses.replace(META, command="cudabench verify reduce")
    verified = write_results(tmp_path / "verify_reduce", verify_meta, checks)[1]
    compared = runner.invoke(app, ["compare", str(verified), str(one_run)])
    assert compared.exit_code == 0 and "note: A is verify's checks (untimed)" in flat(compared.stderr)
    timed = runner.invoke(app, ["compare", str(one_run), str(one_run.with_suffix(".csv"))])
    assert "verify's checks" not in timed.stderr
    report = runner.invoke(app, ["report", str(verified)])
    assert report.exit_code == 0
    assert "this run is verify's checks (2 checks of 2 shapes, untimed)" in flat(report.stderr)
    assert "verify's checks" not in runner.invoke(app, ["report", str(one_run)]).stderr


def test_12_a_run_compared_with_itself_is_said_and_fails_the_gate(one_run, tmp_path):
    plain = runner.invoke(app, ["compare", str(one_run), str(one_run)])
    assert plain.exit_code == 0 and "same run" in plain.stderr
    gate = runner.invoke(
        app, ["compare", str(one_run), str(one_run.with_suffix(".csv")), "--fail-on-regression"]
    )
    assert gate.exit_code == 1 and "same run" in gate.stderr
    copy = tmp_path / "copy.json"
    copy.write_text(one_run.read_text())
    assert runner.invoke(app, ["compare", str(one_run), str(copy), "--fail-above", "3%"]).exit_code == 1


def test_12_fail_above_names_itself():
    line = one_line_error(runner.invoke(app, ["compare", "--fail-above", "3x"]), "--fail-above '3x'")
    assert "--threshold" not in line


# ---------------------------------------------------------------- 13: help at 80 columns


@pytest.mark.parametrize(
    "command", [["run"], ["compare"], ["tune"], ["report"], ["history"], ["cluster"], []]
)
def test_13_help_is_not_cut_at_80_columns(command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    text = result.stdout
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    # a command list gives each command's first sentence whole, never cut with "..."
    if command == ["cluster"]:
        assert "its host and GPU (model, SMs," in flat and "SMs,..." not in flat
    if command == []:
        assert flat.count("...") == flat.count("[ARGS]...")


def test_13_the_no_driver_line_names_every_gpu_command():
    pytest.importorskip("cupy")
    from cudabench.backends import cupy_backend

    line = cupy_backend.no_gpu_reason(RuntimeError("cudaErrorInsufficientDriver"))
    if "no NVIDIA driver" in line:
        for name in ("run", "tune", "ceilings", "profile"):
            assert name in line


# ---------------------------------------------------------------- 15: odd files and paths


def test_15_deep_json_dev_null_and_dotted_stems(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultsError, match="nested too deep"):
        read_results(deep)
    one_line_error(runner.invoke(app, ["report", str(deep)]), "nested too deep")
    with pytest.raises(ResultsError, match="not a folder or a regular file"):
        result_stem(Path("/dev/null"), "reduce", "2026-11-21T22:00:00")
    one_line_error(
        runner.invoke(
            app,
            ["run", "reduce", "-s", "7", "-v", "float4", "-o", "/dev/null"],
            env={"CUDABENCH_BACKEND": "fake"},
        ),
        "/dev/null",
        "not a folder",
    )
    stem = result_stem(tmp_path / "bench_v1.2.json", "reduce", "t")
    assert stem.name == "bench_v1.2"
    written = write_results(stem, META, [row("float4", 50.0)])
    assert [p.name for p in written] == ["bench_v1.2.csv", "bench_v1.2.json"]
    assert read_results(tmp_path / "bench_v1.2.json")[1][0].variant == "float4"


# ---------------------------------------------------------------- 2: Ctrl-C stops check

_SLOW_NVCC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
echo $$ >> "{pids}"
exec sleep 120
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal-ctrl-c", "sigint-to-main"])
def test_2_ctrl_c_stops_check_at_once(tmp_path, terminal):
    import signal
    import subprocess
    import sys
    import time

    pids = tmp_path / "pids"
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(_SLOW_NVCC.format(pids=pids))
    nvcc.chmod(0o755)
    env = {
        **os.environ,
        "CUDABENCH_NVCC": str(nvcc),
        "CUDABENCH_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "cudabench", "check", "reduce", "-j", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own group: the "terminal" below
    try:
        deadline = time.monotonic() + 60
        while (not pids.exists() or len(pids.read_text().split()) < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        started = [int(p) for p in pids.read_text().split()]
        assert len(started) == 2
        begin = time.monotonic()
        if terminal:
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        else:
            os.kill(proc.pid, signal.SIGINT)
        out, errors = proc.communicate(timeout=30)
        took = time.monotonic() - begin
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, errors
    assert took < 10
    assert "COMPILE_ERROR" not in out + errors and "Traceback" not in errors
    assert "interrupted" in errors
    assert len(pids.read_text().split()) == 2  # nothing queued started afterwards
    time.sleep(0.2)
    assert not any(_alive(pid) for pid in started)  # the running compiles were stopped


# ---------------------------------------------------------------- 7: the right diagnosis


def test_7_an_nvcc_that_writes_no_cubin_is_not_a_cache_problem(tmp_path, monkeypatch):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'hello from a wrapper'\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CUDABENCH_NVCC", str(fake))
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    from cudabench.build import nvcc as nvcc_module

    nvcc_module.nvcc_version.cache_clear()
    try:
        line = one_line_error(
            runner.invoke(app, ["check", "reduce", "-j", "1"]), "wrote no cubin", "is it nvcc?"
        )
    finally:
        nvcc_module.nvcc_version.cache_clear()
    assert "compile cache" not in line
    monkeypatch.setenv("CUDABENCH_NVCC", str(tmp_path))
    one_line_error(runner.invoke(app, ["check", "reduce"]), "is a folder")


def test_7_history_reads_a_database_it_cannot_write(tmp_path):
    """As another user (nobody) on a database in a folder it cannot write."""
    import shutil
    import subprocess
    import sys
    import tempfile

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv, to read as another user (nobody)")
    from cudabench.record.history import History

    # in the machine's /tmp (nobody can reach it), not in the test's own folder (conftest)
    folder = Path(tempfile.mkdtemp(prefix="cudabench-ro-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        db = folder / "h.db"
        with History(db) as history:
            run = history.add_run(META, tag="t")
            history.add_row(run, row("float4", 50.0))
        os.chmod(db, 0o644)
        before = sorted(p.name for p in folder.iterdir())
        # this interpreter's whole path (a user-site install lives under $HOME, which changes here)
        paths = [str(Path(__file__).resolve().parent.parent), *(p for p in sys.path if p)]
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(paths), "HOME": str(folder)}
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        probe = subprocess.run([*nobody, "touch", str(folder / "probe")], capture_output=True, check=False)
        if probe.returncode == 0:
            pytest.skip("the folder is writable by nobody here")
        imports = subprocess.run(
            [*nobody, sys.executable, "-c", "import typer, rich, pandas"],
            env=env,
            capture_output=True,
            cwd=folder,
            check=False,
        )
        if imports.returncode != 0:
            pytest.skip("nobody cannot read this interpreter's installed packages here")
        proc = subprocess.run(
            [*nobody, sys.executable, "-m", "cudabench", "history", "reduce", "--db", str(db)],
            env=env,
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "float4" in proc.stdout and "50.00" in proc.stdout
        assert sorted(p.name for p in folder.iterdir()) == before  # nothing created
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_7_history_creates_no_database_as_a_side_effect(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDABENCH_DB")
    monkeypatch.chdir(tmp_path)
    one_line_error(runner.invoke(app, ["history", "reduce"]), "no history database at")
    one_line_error(runner.invoke(app, ["compare", "--against", "last"]), "no history database at")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 19: Ctrl-C at the start


def test_19_ctrl_c_while_the_cli_loads_is_one_line_and_130():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'cudabench.cli.tune_cmd':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['cudabench', 'list']\n"
        "from cudabench import _command\n"
        "_command()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert proc.returncode == 130 and proc.stderr.strip() == "interrupted"


def test_19_ctrl_c_at_the_start_of_run_is_one_line_and_130(monkeypatch, capsys):
    from cudabench.cli import main
    from cudabench.usecases import flow

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(flow, "plan", interrupt)
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    with pytest.raises(SystemExit) as info:
        main(["run", "reduce", "-s", "7"])
    assert info.value.code == 130
    assert capsys.readouterr().err.strip() == "interrupted"


# ---------------------------------------------------------------- 9: every header mistake


_THREE_MISTAKES = """\
// cudabench:
//   variant: mine
//   entry: reduce_sum_mine
//   block: 100
//   grid: segments
//   colour: blue
//   init: sometimes
//   about: three mistakes, each on its own line
"""


def test_9_check_reports_every_header_mistake_at_its_line(tmp_path, monkeypatch):
    from cudabench.ops.discovery import discover

    folder = tmp_path / "k" / "reduce"
    folder.mkdir(parents=True)
    path = folder / "mine.cu"
    path.write_text(_THREE_MISTAKES + "\n__global__ void reduce_sum_mine() {}\n")
    _, problems = discover("reduce", [tmp_path / "k"])
    assert sorted(p.split(": ")[0] for p in problems) == [f"{path}:4", f"{path}:6", f"{path}:7"]
    assert any("block 100" in p for p in problems) and any("colour" in p for p in problems)
    assert any("sometimes" in p for p in problems)
    monkeypatch.setenv("CUDABENCH_NVCC", str(tmp_path / "no-nvcc"))  # stop before compiling
    result = runner.invoke(app, ["check", "reduce", "--kernels", str(tmp_path / "k")])
    for where in (f"{path}:4", f"{path}:6", f"{path}:7"):
        assert f"error: {where}:" in result.stderr


# ---------------------------------------------------------------- 10: --param values checked


def test_10_param_values_are_checked_against_the_header():
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.ops.header import parse_header
    from cudabench.ops.space import SpaceError, grid

    float4 = parse_header(BUILTIN_KERNELS / "reduce" / "float4.cu", "reduce")
    for bad in ({"ITEMS": (0,)}, {"ITEMS": (10**9,)}, {"LOADS": (-4,)}):
        with pytest.raises(SpaceError, match="outside"):
            grid(float4, bad)
    assert len(grid(float4, {"ITEMS": (8, 16), "GRID_K": (0, 3)})) == 4  # around the header's values
    for value in ("0", "99999999"):
        one_line_error(
            runner.invoke(
                app,
                ["run", "reduce", "-s", "2^20", "-v", "float4", "-p", f"ITEMS={value}"],
                env={"CUDABENCH_BACKEND": "fake"},
            ),
            f"--param ITEMS={value}: outside",
        )


# ---------------------------------------------------------------- 16: the L2 flush is a step


def test_16_sample_steps_put_the_flush_before_a_cold_launch():
    from cudabench.backends.base import FLUSH, LAUNCH, RESET, SPIN, sample_steps

    assert sample_steps(cold=True, single=True) == (FLUSH, LAUNCH)
    assert sample_steps(cold=True, single=True, slow_caller=True, reset=True) == (RESET, FLUSH, SPIN, LAUNCH)
    assert sample_steps(cold=False, single=True) == (SPIN, LAUNCH)
    assert sample_steps(cold=False, single=False) == (LAUNCH,)


@pytest.mark.parametrize("slow", [False, True])
def test_16_the_cupy_backends_cold_sample_runs_its_flush(monkeypatch, slow):
    """Without a GPU: the CuPy backend's sampler with its kernels stood in for, and the
    sample's `before` (the untimed steps) run: a cold sample flushes, a hot one does not."""
    pytest.importorskip("cupy")
    from cudabench.backends import cupy_backend, cupy_timing
    from cudabench.backends.base import StepLog

    ran = []

    class Recorded:
        def __init__(self, backend, call, batch, method, scope, graph=None, before=None):
            self.before, self.method = before, method

    backend = object.__new__(cupy_backend.CupyBackend)
    backend.step_log = StepLog()
    samplers = cupy_timing.Samplers(backend)
    monkeypatch.setattr(cupy_timing, "Sampler", Recorded)
    monkeypatch.setattr(samplers, "_host_us", lambda call: 1000.0 if slow else 1.0)
    monkeypatch.setattr(samplers, "_hold", lambda us=0: lambda: ran.append("spin"))
    monkeypatch.setattr(samplers, "_flusher", lambda: lambda: ran.append("flush"))
    cold = samplers.make(lambda: None, 1, True, None, None)
    cold.before()
    assert ran == (["flush", "spin"] if slow else ["flush"])
    assert backend.step_log.samples == [["flush", "spin"] if slow else ["flush"]]
    ran.clear()
    hot = samplers.make(lambda: None, 1, False, None, None)
    hot.before()
    assert ran == ["spin"] and backend.step_log.samples[-1] == ["spin"]


def test_2_a_cancel_ends_with_its_check(tmp_path, monkeypatch):
    """cancel_compiles stops the compiles of its `check` only: later ones run."""
    from cudabench.build import nvcc as nvcc_module

    with nvcc_module.interruptible():
        nvcc_module.cancel_compiles()
        with pytest.raises(nvcc_module.CompileCancelled):
            nvcc_module.run_nvcc(["true", "x"])
    assert nvcc_module.run_nvcc(["true", "x"])[0] == 0
