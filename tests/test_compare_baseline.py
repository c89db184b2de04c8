"""compare's default baseline, as the docs' CI gate uses it (`run ...; compare --against last
--fail-above 3%`): the run before of the same command and ops, never a verify pass, a
`cudabench verify` or a run of another op, from the results folder and the history database
alike; and the judged run is the newest that is not a verify pass."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cudabench.core.records import command_kind
from cudabench.record.compare import judged, runs_like

runner = CliRunner()
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("cudabench run reduce -s 2^24", "run"),
        ("/usr/bin/cudabench tune reduce", "tune"),
        ("cudabench.run('reduce', shapes=['2^24'])", "run"),
        ("cudabench run reduce -s 2^20 --verify --verify-budget 1 (verify pass)", "verify"),
        ("cudabench.run('reduce', shapes=None) (verify pass)", "verify"),
        ("cudabench verify reduce", "verify"),
        ("cudabench.verify('reduce')", "verify"),
        ("", ""),
    ],
)
def test_command_kind(command, kind):
    assert command_kind(command) == kind


def test_runs_like_prefers_the_same_ops_then_any_in_common():
    earlier = [
        ("run", frozenset({"add"})),
        ("tune", frozenset({"add", "relu"})),
        ("run", frozenset({"add", "relu"})),
    ]
    assert runs_like("run", frozenset({"add", "relu"}), earlier, lambda r: r) == [earlier[2]]
    assert runs_like("run", frozenset({"add", "x"}), earlier, lambda r: r) == [earlier[0], earlier[2]]
    assert runs_like("run", frozenset({"x"}), earlier, lambda r: r) == []
    assert judged(["run", "verify", "verify"], lambda r: r) == "run"
    assert judged(["verify", "verify"], lambda r: r) == "verify"  # only checks: the newest of them


def test_the_docs_gate_judges_a_run_against_the_run_before_it_of_the_same_op(tmp_path, monkeypatch):
    """The audit's case: a run of another op, a run, the same run with --verify (its verify
    pass is a results file and a history run of its own) and a `cudabench verify`: both the
    files' default pair and --against last pair the two timed runs of add, row for row."""
    from cudabench.cli import app

    monkeypatch.chdir(tmp_path)  # results/ and results/cudabench.db
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_MEMORY", str(100 << 20))
    steps = [
        ["run", "relu", "-s", "1024", *QUICK],
        ["run", "add", "-s", "1024", "-v", "naive", *QUICK],
        ["run", "add", "-s", "1024", "-v", "naive", "--verify", "--verify-budget", "1", *QUICK],
        ["verify", "add", "-v", "naive", "--budget", "1", "--examples", "3"],
    ]
    for step in steps:
        done = runner.invoke(app, step)
        assert done.exit_code == 0, (step, done.output)
    for gate in (["compare", "--against", "last", "--fail-above", "3%"], ["compare", "--fail-above", "3%"]):
        found = runner.invoke(app, gate)
        assert found.exit_code == 0, (gate, found.output)
        assert "SAME" in found.stdout and "ONLY" not in found.stdout, (gate, found.stdout)
    far = runner.invoke(app, ["compare", "--against", "last~1"])  # one earlier run of add
    assert far.exit_code == 2
    assert "holds 1 other run(s) like the run judged (run of add)" in " ".join(far.stderr.split())
