"""Options that contradict each other or that a command cannot use: each one line on stderr
and exit status 2 (a user audit's findings), on the fake backend."""

import json

import pytest
from typer.testing import CliRunner

from cudabench.cli import app

runner = CliRunner()
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")


def usage_error(*args: str) -> str:
    """The one line a command that is bad usage prints (exit 2, no traceback)."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["run", "tune"])
def test_cluster_with_explicit_devices_is_a_usage_error(command):
    """--cluster ran on the cluster and dropped --devices 0,1 without a word."""
    line = usage_error(
        command, "reduce", "-s", "2^10", "-v", "naive", "--cluster", "local", "--devices", "0,1"
    )
    assert "--cluster runs on the cluster's GPUs" in line and "--devices picks this host's" in line


def test_placement_takes_cluster_alone_and_devices_alone():
    from cudabench.cli.common import placement

    on_cluster = placement("0", 60.0, "local", devices_given=False)
    assert on_cluster.cluster == "local"
    assert placement("0,1", 60.0, devices_given=True).devices == (0, 1)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--min-time", "5", "--max-time", "1"], "--min-time 5 is above --max-time 1"),
        (["--max-time", "0"], "--max-time 0: a row needs some time"),
    ],
)
def test_run_refuses_sample_times_it_cannot_keep(args, message):
    assert message in usage_error("run", "reduce", "-s", "2^10", "-v", "naive", *args)


def test_a_short_max_time_alone_still_runs(tmp_path):
    """The default min time (0.2 s) yields to a shorter --max-time: only a min asked for
    above the max is a mistake."""
    result = runner.invoke(
        app,
        ["run", "reduce", "-s", "2^10", "-v", "naive", "--max-time", "0.01", "--min-samples", "2"]
        + ["--warmup", "0", "--no-ceilings", "-o", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r.json").read_text())["meta"]["timing"]["max_time_s"] == 0.01


def test_the_api_refuses_a_min_time_above_the_max_time_both_given(tmp_path):
    import cudabench
    from cudabench.core.errors import SweepError
    from cudabench.core.timing import TimingOptions
    from cudabench.execution.plan import checked_timing

    with pytest.raises(SweepError, match="above --max-time"):
        cudabench.run("reduce", shapes="2^10", min_time_s=5.0, max_time_s=1.0, output=tmp_path)
    # a min not asked for with it (the default, a config's) yields to a shorter max
    assert checked_timing(TimingOptions(min_time_s=5.0, max_time_s=1.0)).max_time_s == 1.0


def test_a_configs_min_time_yields_to_a_shorter_max_time_on_the_command_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("op: add\nshapes: [1024]\nvariants: [naive]\ntiming: {min_time_s: 0.5}\n")
    result = runner.invoke(
        app,
        ["run", str(config), "--max-time", "0.01", "--min-samples", "2", "--warmup", "0"]
        + ["--no-ceilings", "-o", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--recalibrate", "--no-ceilings"], "--recalibrate measures the ceilings"),
        (["--verify-budget", "1", "--no-verify"], "which --no-verify turns off"),
        (["--verify-budget", "1"], "which is off: add --verify"),
    ],
)
def test_an_option_that_another_turns_off_is_a_usage_error(args, message):
    assert message in usage_error("run", "reduce", "-s", "2^10", "-v", "naive", *QUICK, *args)


@pytest.mark.parametrize("value", ["abc", "0,1", "all", "-1"])
def test_ceilings_says_it_takes_one_gpu_index(value):
    line = usage_error("ceilings", "--devices", value)
    assert "give one GPU index" in line and "the ceilings are one GPU's" in line
    assert "0,1, or 'all'" not in line


@pytest.mark.parametrize("value", ["all", "abc", "0,1"])
def test_profile_says_it_takes_one_gpu_index(value):
    line = usage_error("profile", "reduce", "-s", "2^10", "--devices", value)
    assert "give one GPU index" in line and "ncu profiles one process" in line
    assert "Input should be" not in line


def test_profile_reads_one_device_index(monkeypatch):
    from cudabench.cli import profile_cmd

    seen = []
    monkeypatch.setattr(
        profile_cmd, "ncu_command", lambda profiling, terminal: seen.append(profiling) or ["ncu"]
    )
    result = runner.invoke(app, ["profile", "reduce", "-s", "2^10", "--devices", "1", "--print-command"])
    assert result.exit_code == 0, result.output
    assert seen[0].device == 1


def test_list_help_names_ops_folders():
    result = runner.invoke(app, ["list", "--help"])
    assert result.exit_code == 0
    assert "(built-in, --ops and --kernels)" in " ".join(result.stdout.split())


def test_an_empty_backend_variable_means_the_default(monkeypatch):
    """CUDABENCH_BACKEND= (set, empty) said `unknown backend ''`: it is the default, cupy."""
    from cudabench import backends
    from cudabench.execution.worker_process import visible_gpu_count_list

    monkeypatch.setenv("CUDABENCH_BACKEND", "")
    assert backends.backend_name() == "cupy"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert visible_gpu_count_list() == [0, 1]  # counted as cupy's, not the fake's own
    monkeypatch.setattr(backends, "driver_present", lambda: False)
    line = usage_error("run", "reduce", "-s", "2^10")
    assert "no NVIDIA driver found" in line and "unknown backend" not in line
