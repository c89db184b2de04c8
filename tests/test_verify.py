"""`cudabench verify` without a GPU: the domain's edge shapes (requires:, the launch, the
memory), the search and its shrinking against an oracle that is a plain predicate, the
budget, Hypothesis's random phase, the check-only jobs, and the whole command on the fake
backend with faults planted by shape ($CUDABENCH_FAKE_PLANT): the verdicts, the rows, the
reproduce line, `run --verify`, the API and the exit codes. The `gpu` tests at the end run
the planted CUDA kernels of tests/fixtures/planted and the catalogue on a real GPU."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import textwrap
import time
from pathlib import Path

import pytest
from conftest import StopAfter, flat, patch_on_import
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE, FakeBackend
from cudabench.backends.fake_kernels import Planting, plantings
from cudabench.build.nvcc import CompileError
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution import sweep as sweeps
from cudabench.execution.session import InProcess, Local
from cudabench.measure import problem as problem_module
from cudabench.measure.runner import CHECKED_NOTE, UNCHECKED_NOTE, CaseJob, Runner
from cudabench.ops.discovery import discover
from cudabench.ops.registry import get_op
from cudabench.record.results import read_results
from cudabench.usecases import verify as usecase
from cudabench.usecases.flow import Placement, Recording
from cudabench.usecases.observe import Silent
from cudabench.verification import warm
from cudabench.verification.domain import INT32, Domain, size
from cudabench.verification.search import BROKEN, VERIFIED, WRONG_AT, Probe, Search, within

PLANTED = Path(__file__).parent / "fixtures" / "planted"
runner = CliRunner()


def variant_of(op: str, name: str):
    return next(v for v in discover(op, [BUILTIN_KERNELS])[0] if v.name == name)


def domain(op="add", name="naive", memory=80 << 30, dtype="float32") -> Domain:
    return Domain(get_op(op), variant_of(op, name), dtype, memory, FAKE_DEVICE)


def oracle(wrong, status=Status.FAIL, asked=None, other=None):
    """Shapes where `wrong(shape)` holds are `status`; `other(shape)` may name another."""

    def answer(shapes):
        if asked is not None:
            asked.extend(shapes)
        found = []
        for shape in shapes:
            given = other(shape) if other else None
            found.append(Probe(shape, given or (status if wrong(shape) else Status.OK)))
        return found

    return answer


def last(shape):
    return shape[-1]


# ---------------------------------------------------------------------------- the domain


def test_edges_hold_the_shapes_that_break_kernels():
    d = domain("add", "float4")
    ones = {last(s) for s in d.edges() if len(s) == 1}
    assert {1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 1000003} <= ones  # warp, block
    assert {5, 6, 7, 13, 14, 15} <= ones  # not multiples of the vector width (4 floats)
    assert {INT32 - 1, INT32, INT32 + 1} <= ones  # 32-bit indices, the memory allowing
    assert d.edges() == sorted(d.edges(), key=lambda s: (size(s), len(s), s))  # smallest first
    assert {(3, 33), (33, 3), (1, 257)} <= set(d.edges())  # the other dims: 1, 3, 33
    assert (33, INT32 + 1) not in d.edges()  # a large dim walks with the others at 1


def test_pairs_cross_two_dims_for_the_bugs_that_need_both():
    d = domain("reduce", "float4")  # rows x cols, float32: a 16-byte vector is 4 floats
    pairs, edges = d.pairs(), d.edges()
    assert pairs == sorted(pairs, key=lambda s: (size(s), len(s), s)) and set(pairs) <= set(edges)
    assert {(257, 32), (257, 34), (257, 35), (34, 257), (1025, 32)} <= set(pairs)  # every remainder mod 4
    assert all(d.allows(s) for s in pairs) and max(max(s) for s in pairs) <= 65537
    assert edges.index((1025, 34)) < edges.index((INT32 + 1,))  # small: before the sizes past 2^31
    halves = domain("add", "naive", dtype="float16").pairs()  # 8 halves a vector
    assert {s[1] for s in halves if s[0] == 257} == set(range(32, 40))
    assert domain("add", "naive").pairs() and not domain("stream_copy", "vec4").pairs()  # 1-D only
    sgemm = domain("sgemm", "naive").pairs()  # three dims: each pair, the third at 1
    assert {(257, 34, 1), (1, 257, 34), (34, 1, 257)} <= set(sgemm)


def test_edges_follow_the_launch_and_its_geometry():
    # the float4 variant of add: a thread per 16 bytes, blocks of 256: one block covers 1024
    d = domain("add", "float4")
    assert {1024, 1025} <= set(d.values("cols"))
    # transpose's tiles: the largest rows a grid's y dimension (65,535 tiles) takes
    t = domain("transpose", "smem")
    tile = next((v for v in t.values("M") if v > 65535 and v % 65535 == 0), None)  # 65535 x the tile's rows
    assert tile is not None
    assert not t._grid((tile + 64, 1), one_block=False)  # one tile more is past the limit


def test_edges_respect_requires_and_the_memory():
    d = domain("softmax", "block_reg")  # requires: {max_cols: 32768, cols_multiple_of: 8}
    assert all(s[-1] % 8 == 0 and s[-1] <= 32768 for s in d.edges())
    assert {8, 40, 32768} <= {s[-1] for s in d.edges()}
    assert d.why_not((4, 33)) and "cols % 8" in d.why_not((4, 33))
    small = domain("add", "naive", memory=256 << 20)
    assert max(get_op("add").device_bytes(s) for s in small.edges()) <= 256 << 20
    assert INT32 + 1 not in small.values("cols")
    assert small.why_not((1 << 26,)).startswith("needs")


def test_shrinking_steps_are_smaller_and_allowed():
    d = domain("softmax", "block_reg")
    steps = d.smaller((3, 4104))
    assert steps and all(size(s) < size((3, 4104)) for s in steps)
    assert all(s[-1] % 8 == 0 for s in steps)
    assert (1, 4104) in steps and (3, 2056) in steps and (3, 8) in steps


# ---------------------------------------------------------------------------- the search


@pytest.mark.parametrize(
    "wrong, smallest",
    [
        (lambda s: last(s) % 256 != 0 and last(s) > 256, (257,)),  # a dropped tail
        (lambda s: last(s) > 32 and last(s) % 32 != 0, (33,)),  # a reduction at 33
        (lambda s: last(s) > 1024 and last(s) % 4 != 0, (1025,)),  # a vector path, no tail
        (lambda s: math.prod(s) > INT32, (INT32 + 1,)),  # a 32-bit index
        (lambda s: len(s) == 2 and s[0] > 1 and s[0] % 2 == 1, (3, 1)),  # the last row
    ],
)
def test_finds_the_smallest_wrong_shape(wrong, smallest):
    verdict = Search(domain(), oracle(wrong), budget_s=60).run()
    assert verdict.state == WRONG_AT and verdict.wrong is not None
    assert verdict.wrong.shape == smallest and verdict.phase == "edge"


def test_finds_a_bug_that_needs_two_dims_among_the_edges():
    # wrong only where rows is 257 and cols leaves 2 past a float4: the pairs of dims hold it
    def wrong(s):
        return len(s) == 2 and s[0] == 257 and s[1] % 4 == 2

    verdict = Search(domain("reduce", "float4"), oracle(wrong), budget_s=60, examples=0).run()
    assert verdict.state == WRONG_AT and verdict.phase == "edge"
    assert verdict.found.shape == (257, 34) and verdict.wrong.shape == (257, 2)


def test_shrinks_to_within_twice_the_smallest():
    # wrong from 5001 up where n % 7 == 3: no edge shape is the smallest (5001)
    def wrong(s):
        return len(s) == 1 and s[0] > 5000 and s[0] % 7 == 3

    verdict = Search(domain(), oracle(wrong), budget_s=60).run()
    assert verdict.wrong is not None and wrong(verdict.wrong.shape)
    assert within(verdict.wrong.shape, (5001,)) and size(verdict.found.shape) > size(verdict.wrong.shape)


def test_random_phase_finds_what_no_edge_hits_and_shrinks_it():
    def wrong(s):
        return len(s) == 1 and 200_000 < s[0] < 1_000_000 and s[0] % 2 == 1

    verdict = Search(domain(memory=1 << 30), oracle(wrong), budget_s=60, seed=3).run()
    assert verdict.state == WRONG_AT and verdict.phase == "random"
    assert wrong(verdict.wrong.shape) and within(verdict.wrong.shape, (200_001,))


def test_verified_over_every_shape_tried():
    asked: list = []
    verdict = Search(domain(memory=100 << 20), oracle(lambda s: False, asked=asked), 60, examples=20).run()
    assert verdict.state == VERIFIED and verdict.complete and verdict.wrong is None
    assert verdict.tried == len(set(asked)) == len(asked)  # every shape asked once
    assert verdict.smallest == (1,) and size(verdict.largest) == max(size(s) for s in asked)


def test_na_and_skipped_are_not_wrong_and_not_counted():
    def other(shape):
        return Status.N_A if last(shape) > 100 else Status.SKIPPED if last(shape) == 7 else None

    verdict = Search(domain(memory=100 << 20), oracle(lambda s: False, other=other), 60, examples=10).run()
    assert verdict.state == VERIFIED and verdict.untried > 0
    assert all(last(s) <= 100 and last(s) != 7 for s in (verdict.smallest, verdict.largest))


def test_a_compile_error_ends_the_search():
    asked: list = []
    verdict = Search(domain(), oracle(lambda s: True, Status.COMPILE_ERROR, asked), 60).run()
    assert verdict.state == BROKEN and verdict.is_wrong and len(asked) == 1


def test_the_budget_stops_the_search():
    now = [0.0]

    def clock():
        return now[0]

    def slow(shapes):
        now[0] += 1.0  # a second a shape
        return [Probe(s, Status.OK) for s in shapes]

    verdict = Search(domain(), slow, budget_s=10, clock=clock).run()
    assert verdict.state == VERIFIED and not verdict.complete and verdict.tried == 10
    assert verdict.elapsed_s == 10


def test_crash_and_timeout_are_wrong():
    for status in (Status.CRASH, Status.TIMEOUT, Status.ERROR):
        verdict = Search(domain(), oracle(lambda s: last(s) >= 100, status), 60).run()
        assert verdict.wrong is not None and verdict.wrong.shape == (100,)


# ---------------------------------------------------------------------------- the fake's plantings


def test_plantings_read_and_hold():
    (p, q) = plantings("float4: cols % 4 != 0 and n > 100 -> wrong; *: rows == 3 -> crash")
    assert p == Planting("float4", "cols % 4 != 0 and n > 100", "wrong")
    assert p.holds({"rows": 1, "cols": 101}) and not p.holds({"rows": 1, "cols": 100})
    assert q.variant == "*" and q.holds({"rows": 3, "cols": 1})
    for bad in ("float4 cols > 1 -> wrong", "float4: cols > 1 -> melt", "float4: -> wrong"):
        with pytest.raises(CompileError, match="CUDABENCH_FAKE_PLANT"):
            plantings(bad)


def test_check_only_jobs_are_validated_not_timed(monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: n == 5 -> wrong")
    float4 = variant_of("add", "float4")
    timing = TimingOptions(interleave=True)
    runner_ = Runner(FakeBackend())
    (ok,) = runner_.run_job(CaseJob(Case("add", (4,)), (float4,), (), timing, check_only=True))
    (bad,) = runner_.run_job(CaseJob(Case("add", (5,)), (float4,), (), timing, check_only=True))
    assert ok.status is Status.OK and ok.time_us is None and ok.samples is None
    assert ok.max_abs_err == 0 and ok.notes == CHECKED_NOTE
    assert bad.status is Status.FAIL and "1 of 5 outputs wrong" in bad.error and bad.notes == CHECKED_NOTE
    future = dataclasses.replace(float4, requires=(("min_sm", 200),))
    (na,) = runner_.run_job(CaseJob(Case("add", (4,)), (future,), (), timing, check_only=True))
    assert na.status is Status.N_A and na.notes == UNCHECKED_NOTE  # not "validated once"


# ---------------------------------------------------------------------------- the warm-up


@pytest.mark.parametrize(
    "n, block",
    [(1, 32), (128, 32), (129, 64), (256, 64), (257, 128), (1024, 256), (1025, 512), (1 << 30, 512)],
)
def test_block_size_follows_cupys_cub_rule(n, block):
    # cupy/_core/_cub_reduction.pyx: clp2(ceil(n / 4)) from 32 to 512
    assert warm.block_size(n) == block


def test_a_later_variant_warms_only_the_kinds_an_earlier_one_lacked():
    first = warm.warm_shapes(domain("softmax", "block_hybrid").edges())
    done = {warm.kind(s) for s in first}
    later = warm.warm_shapes(domain("softmax", "warp_xor").edges(), done)
    assert later and not {warm.kind(s) for s in later} & done
    assert warm.warm_shapes(domain("softmax", "block_hybrid").edges(), done) == []


def test_warm_shapes_keep_the_smallest_edge_of_each_kind():
    edges = domain("reduce", "float4").edges()
    chosen = warm.warm_shapes(edges)
    kinds = {warm.kind(s) for s in edges if size(s) <= warm.WARM_ELEMENTS}
    assert len(chosen) == len(kinds) and {warm.kind(s) for s in chosen} == kinds
    for shape in chosen:  # none smaller of its kind
        assert not [e for e in edges if warm.kind(e) == warm.kind(shape) and size(e) < size(shape)]
    assert (1, 129) in chosen and (1, 130) not in chosen  # one row: 129 and 130 share a block
    assert max(size(s) for s in chosen) <= warm.WARM_ELEMENTS < max(size(e) for e in edges)


def test_a_warm_up_comes_before_its_jobs_check_and_its_row_says_so(monkeypatch):
    made = []
    real = problem_module.problem

    def failing_once(xp, op, case, seed, fill="random"):
        made.append(case.shape)
        if case.shape == (3, 129) and len(made) == 1:
            raise ValueError("no inputs")
        return real(xp, op, case, seed, fill)

    monkeypatch.setattr("cudabench.measure.problem.problem", failing_once)
    float4 = variant_of("reduce", "float4")
    job = CaseJob(
        Case("reduce", (2, 3)), (float4,), (), TimingOptions(), check_only=True, warm_up=((3, 129), (1, 1))
    )
    (row,) = Runner(FakeBackend()).run_job(job)
    assert made == [(3, 129), (1, 1)]  # a shape that fails is passed over, the next made
    assert row.status is Status.OK and row.shape == "2x3" and row.time_us is None
    said = "warm-up: 1 of 2 small shapes' references and checks made first"
    first = f"{CHECKED_NOTE}; {said} (the first not made at 3x129: ValueError: no inputs ("
    assert row.notes.startswith(first) and row.notes.endswith(", in failing_once))")  # where it raised


def test_the_first_checks_and_warm_up_come_before_the_budget(tmp_path, small_card, monkeypatch):
    warmed, notes = [], []
    real = problem_module.warm

    def slow_warm(xp, op, dtype, shapes):
        if dtype not in [d for d, _ in warmed]:
            time.sleep(1.1)  # longer than a budget: a search whose clock ran meanwhile checks nothing
        warmed.append((dtype, shapes))
        return real(xp, op, dtype, shapes)

    class Notes(Silent):
        def note(self, text):
            notes.append(text)

    monkeypatch.setattr("cudabench.measure.runner.warm", slow_warm)
    chosen = dict(variants=("float4", "shuffle"), dtypes=("float32", "float16"), budget_s=0.3)
    outcome = usecase.verify(request(tmp_path, "reduce", **chosen), Notes())
    assert list(dict.fromkeys(d for d, _ in warmed)) == ["float32", "float16"]  # once an op and dtype
    for dtype in ("float32", "float16"):
        shapes = [s for d, part in warmed if d == dtype for s in part]
        assert (1, 1) in shapes and (1, 129) in shapes and len(set(shapes)) == len(shapes)
    assert all(len(part) <= warm.WARM_CHUNK for _, part in warmed)
    meta, rows = read_results(outcome.json)
    for v in outcome.verdicts:  # more than its first checks (each part rides one): the search ran
        firsts = [r for r in rows if r.variant == v.label and r.dtype == v.dtype and "warm-up:" in r.notes]
        assert v.verdict.tried > max(1, len(firsts))
    said = [n for n in notes if "and a warm-up of" in n]
    assert said and said[0].startswith("reduce float4[") and "] float32: " in said[0]
    assert "not counted in the budget" in said[0]
    assert all(v.verdict.elapsed_s > 1.1 for v in outcome.verdicts[::2])  # the seconds count them
    meta, rows = read_results(outcome.json)
    assert len(rows) == sum(v.verdict.tried + v.verdict.untried for v in outcome.verdicts)
    assert sum("warm-up:" in r.notes for r in rows) == len(warmed)  # a part a first check


def test_first_checks_carry_the_warm_up_in_parts_one_at_a_time_until_one_is_wrong():
    asked = []
    wrong_at = {(2,)}

    def oracle(shapes, parts):
        asked.append((list(shapes), [len(p) for p in parts]))
        return [Probe(s, Status.TIMEOUT if s in wrong_at else Status.OK) for s in shapes]

    edges = [(n,) for n in range(1, 40)]
    chunk = warm.WARM_CHUNK
    warm_up = [(n,) for n in range(100, 100 + 2 * chunk + 3)]
    known, sent = warm.first_checks(oracle, edges, warm_up)
    # a hang at (2,) costs one --timeout: the third part is never sent, the second's worker was
    # killed, so a later variant warms both
    assert asked == [([(1,)], [chunk]), ([(2,)], [chunk])]
    assert [(p.shape, p.status) for p in known] == [((1,), Status.OK), ((2,), Status.TIMEOUT)]
    assert sent == warm_up[:chunk]
    wrong_at.clear()
    broken = {(2,): Status.COMPILE_ERROR, (1,): Status.N_A}
    asked.clear()
    known, sent = warm.first_checks(
        lambda shapes, parts: asked.append(shapes) or [Probe(s, broken.get(s, Status.OK)) for s in shapes],
        edges,
        warm_up,
    )
    assert asked == [[(1,)], [(2,)]] and sent == warm_up[: 2 * chunk]  # N/A goes on; no compile ends
    asked.clear()
    known, sent = warm.first_checks(oracle, edges, warm_up)
    assert [p.shape for p in known] == edges[:3] and sent == warm_up
    asked.clear()
    assert warm.first_checks(oracle, edges, []) == ([Probe((1,), Status.OK)], [])
    assert asked == [([(1,)], [0])]
    assert warm.first_checks(oracle, [], []) == ([], [])


def test_a_check_killed_in_its_warm_up_is_checked_again_without_it():
    from cudabench.core.records import Case, ResultRow
    from cudabench.execution.rounds import WARM_UP_TIMEOUT_NOTE

    asked = []

    def oracle(shapes, parts):
        asked.append((list(shapes), [len(p) for p in parts]))
        (shape,) = shapes
        if parts[0]:  # the warm-up outlasts its time: the variant never ran
            case = Case("add", shape, "float32")
            row = ResultRow.of(case, "naive", Status.TIMEOUT, notes=WARM_UP_TIMEOUT_NOTE)
            return [Probe(shape, Status.TIMEOUT, row)]
        return [Probe(shape, hangs.get(shape, Status.OK))]

    edges = [(n,) for n in range(1, 40)]
    warm_up = [(n,) for n in range(100, 100 + 2 * warm.WARM_CHUNK)]
    hangs = {}
    known, sent = warm.first_checks(oracle, edges, warm_up)
    assert asked == [([(1,)], [warm.WARM_CHUNK]), ([(1,)], [0])]  # once more, alone; no more parts
    assert [(p.shape, p.status) for p in known] == [((1,), Status.OK)] and sent == []
    hangs[(1,)] = Status.TIMEOUT  # alone it hangs too: that is the variant's
    known, sent = warm.first_checks(oracle, edges, warm_up)
    assert [p.wrong for p in known] == [True]


def test_the_warm_up_reaches_a_worker_process(tmp_path, small_card, monkeypatch):
    # the pool sends a job only for its rows: the warm-up rides the first check's job
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    placement = Placement(executor=Local(devices=(0,)))
    chosen = dict(variants=("float4",), budget_s=2, placement=placement)
    outcome = usecase.verify(request(tmp_path, "reduce", **chosen))
    meta, rows = read_results(outcome.json)
    firsts = [r for r in rows if "warm-up:" in r.notes]
    assert firsts[0].shape == "1" and all(r.status is Status.OK for r in firsts)
    made = [re.search(r"warm-up: (\d+) of (\d+) small shapes", r.notes).groups() for r in firsts]
    assert all(a == b for a, b in made) and sum(int(a) for a, _ in made) > 20  # made in the worker


_SLOW_WARM_UP = """
import os, time


def patch(module):  # cudabench.measure.runner: its warm-up outlasts its allowance
    real = module.warm

    def slow(*args, **kwargs):
        time.sleep(float(os.environ["CUDABENCH_TEST_SLOW_WARM_UP"]))
        return real(*args, **kwargs)

    module.warm = slow
"""


def test_a_worker_killed_in_its_warm_up_does_not_make_the_variant_wrong(tmp_path, small_card, monkeypatch):
    # through real worker processes: the warm-up outlasts --timeout plus its allowance, the
    # worker is killed before the variant ran; the shape is checked again alone, and the verdict
    # is the variant's own
    from cudabench.execution import rounds
    from cudabench.execution.rounds import WARM_UP_TIMEOUT_NOTE

    patch_on_import(tmp_path, "cudabench.measure.runner", _SLOW_WARM_UP)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("CUDABENCH_TEST_SLOW_WARM_UP", "4")
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setattr(rounds, "WARM_UP_S", 0.2)
    placement = Placement(executor=Local(devices=(0,), timeout_s=1.0))
    outcome = usecase.verify(request(tmp_path, "add", variants=("naive",), budget_s=1, placement=placement))
    (v,) = outcome.verdicts
    assert v.verdict.state == "verified" and v.verdict.tried > 3
    meta, rows = read_results(outcome.json)
    killed = [r for r in rows if r.status is Status.TIMEOUT]
    assert len(killed) == 1 and WARM_UP_TIMEOUT_NOTE in killed[0].notes
    assert "its warm-up under way" in killed[0].error
    again = [r for r in rows if r.shape == killed[0].shape and r.status is Status.OK]
    assert again and "warm-up:" not in again[0].notes  # checked again, alone


# ---------------------------------------------------------------------------- the use case


def request(tmp_path, op="add", **kw) -> usecase.VerifyRequest:
    return usecase.VerifyRequest(
        target=op,
        placement=kw.pop("placement", Placement(executor=InProcess(backend=FakeBackend()))),
        recording=Recording(tmp_path / "out", force=kw.pop("force", False)),
        budget_s=kw.pop("budget_s", 30),
        examples=kw.pop("examples", 10),
        **kw,
    )


@pytest.fixture
def small_card(monkeypatch):
    monkeypatch.setenv(
        "CUDABENCH_FAKE_MEMORY", str(100 << 20)
    )  # NumPy stays quick (64 MiB of it: the ops' slack)


def test_verify_finds_a_fault_of_two_dims_and_says_so(tmp_path, small_card, monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: rows == 257 and cols % 4 == 2 -> wrong")
    outcome = usecase.verify(request(tmp_path, "reduce", variants=("float4",)))
    (v,) = outcome.verdicts
    assert v.verdict.state == WRONG_AT and v.verdict.phase == "edge" and v.verdict.wrong.shape == (257, 2)
    assert v.reproduce == "cudabench run reduce -s 257x2 -v float4"


def test_verify_finds_planted_faults_and_records_verify_rows(tmp_path, small_card, monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: cols % 4 != 0 and cols > 100 -> wrong")
    outcome = usecase.verify(request(tmp_path, variants=("float4",), dtypes=("float16",)))
    (v,) = outcome.verdicts
    assert v.verdict.state == WRONG_AT and v.verdict.wrong.shape == (101,) and v.dtype == "float16"
    assert v.verdict.found.shape != (101,)  # found at a larger edge shape, then shrunk
    assert v.wrong_row.status is Status.FAIL and "1 of 101 outputs wrong; worst at 100" in v.wrong_row.error
    assert v.reproduce == "cudabench run add -s 101 -v float4 -d float16"
    assert outcome.wrong and outcome.json.name.endswith("_verify_add.json")
    meta, rows = read_results(outcome.json)
    assert meta.complete and len(rows) == v.verdict.tried + v.verdict.untried
    assert all(r.notes.startswith(CHECKED_NOTE) and r.time_us is None for r in rows)
    assert {r.shape for r in rows if r.status is Status.FAIL} >= {"101"}
    import sqlite3

    with sqlite3.connect(tmp_path / "history.db") as db:
        ((count,),) = db.execute("SELECT count(*) FROM rows").fetchall()
    assert count == len(rows)


def test_verify_respects_requires(tmp_path, small_card, monkeypatch):
    # wrong wherever cols is not a multiple of 8: block_reg declares cols_multiple_of: 8
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "block_reg: cols % 8 != 0 -> wrong")
    outcome = usecase.verify(request(tmp_path, "softmax", variants=("block_reg",), budget_s=20))
    (v,) = outcome.verdicts
    assert v.verdict.state == VERIFIED and not outcome.wrong


def test_verify_a_crash_and_a_user_python_variant(tmp_path, small_card, monkeypatch):
    folder = tmp_path / "ops" / "scale2"
    folder.mkdir(parents=True)
    (folder / "op.py").write_text(
        textwrap.dedent("""\
        from cudabench.op import Op, Scalar, Tensor, elements

        class Scale2(Op):
            about = "out = 2x"
            dims = ("n",)
            ranks = (1,)
            inputs = (Tensor("x", "n"),)
            outputs = (Tensor("out", "n"),)
            scalars = (Scalar("n"),)
            rules = {"elements": elements()}

            def reference(self, xp, x):
                return 2 * x
        """)
    )
    (folder / "chunks.py").write_text(
        textwrap.dedent("""\
        from cudabench.op import variant

        @variant(about="whole chunks of 64 from 64 up: the tail dropped")
        def chunks(x):
            out = 2 * x
            n = x.shape[0]
            if n > 64 and n % 64:
                out[n - n % 64:] = 0
            return out
        """)
    )
    outcome = usecase.verify(request(tmp_path, "scale2", ops=(tmp_path / "ops",)))
    (v,) = outcome.verdicts
    assert v.verdict.wrong.shape == (65,)
    assert v.reproduce == f"cudabench run scale2 -s 65 -v chunks --ops {tmp_path / 'ops'}"
    monkeypatch.chdir(tmp_path)  # typed relative, the folder comes out in full: it works pasted anywhere
    line = usecase.reproduce_line("scale2", v.variant, "float32", (65,), ops=(Path("ops"),))
    assert line == f"cudabench run scale2 -s 65 -v chunks --ops {tmp_path / 'ops'}"
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "naive: n >= 3000 -> crash")
    crashed = usecase.verify(request(tmp_path, variants=("naive",), force=True))
    (c,) = crashed.verdicts
    assert size(c.verdict.wrong.shape) == 3000 and c.wrong_row.status is Status.CRASH


class Stopping(Silent):
    """An observer whose progress is a listener that plays Ctrl-C after some rows."""

    def __init__(self, listener):
        self.listener = listener

    def progress(self, total, devices):
        return contextlib.nullcontext(self.listener)


def test_ctrl_c_keeps_the_checked_rows(tmp_path, small_card):
    with pytest.raises(sweeps.Interrupted) as info:
        usecase.verify(request(tmp_path, variants=("naive",)), Stopping(StopAfter(5)))
    meta, rows = read_results(info.value.path)
    assert not meta.complete and len(rows) == 5


def test_plan_verify_refuses_bad_usage(tmp_path):
    from cudabench.core.errors import SweepError

    for target, kw, message in [
        ("addd", {}, "did you mean add"),
        ("configs/add.yaml", {}, "op name, not a config"),
        ("add", {"variants": ("float5",)}, "unknown variant"),
        ("add", {"dtypes": ("float8",)}, "--dtype"),
    ]:
        with pytest.raises(SweepError, match=message):
            usecase.plan_verify(usecase.VerifyRequest(target, **kw))


# ---------------------------------------------------------------------------- the CLI and the API


@pytest.fixture
def fake_cli(monkeypatch, small_card):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")


def test_cli_exit_codes_and_reproduce_line(tmp_path, fake_cli, monkeypatch):
    from cudabench.cli import app

    args = ["verify", "add", "-o", str(tmp_path), "--budget", "8", "--examples", "5"]
    clean = runner.invoke(app, [*args, "-v", "naive"])
    assert clean.exit_code == 0, clean.output
    assert "verified" in clean.output and "naive" in clean.output
    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: n == 7 -> wrong")
    wrong = runner.invoke(app, [*args, "-v", "float4", "--force"])
    assert wrong.exit_code == 1, wrong.output
    text = flat(wrong.output)
    assert "wrong at 7" in text and "reproduce: cudabench run add -s 7 -v float4" in text
    assert "(found among the edge shapes" in text and " 1 shapes " not in text
    assert "1 of 7 outputs wrong" in text
    bad_usage = (["verify", "nope"], ["verify", "add", "-v", "nope"], ["verify", "add", "--budget", "-1"])
    for bad in (*bad_usage, ["verify", "add", "--budget", "0"]):  # 0 s would check nothing, exit 0
        assert runner.invoke(app, bad).exit_code == 2


def test_cli_a_variant_not_on_this_machine_is_said_and_not_searched(tmp_path, fake_cli):
    from cudabench.cli import app

    mine = tmp_path / "mine"
    (mine / "add").mkdir(parents=True)
    source = (BUILTIN_KERNELS / "add" / "naive.cu").read_text()
    header = "//   variant: future\n//   requires: {min_sm: 200}\n"
    (mine / "add" / "future.cu").write_text(source.replace("//   variant: naive\n", header))
    out = tmp_path / "out.json"
    args = ["verify", "add", "-v", "future", "--kernels", str(mine), "-o", str(out), "--budget", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output  # the GPU's, not the kernel's: said, not a failure
    text = flat(result.output)
    assert "not on this machine" in text and "needs sm_200 or later" in text
    assert read_results(out)[1] == []  # no shape was asked


def test_cli_an_untested_variant_exits_1_and_says_why(tmp_path, fake_cli, monkeypatch):
    from cudabench.cli import app

    monkeypatch.setenv("CUDABENCH_FAKE_MEMORY", "64")  # no shape of add fits
    result = runner.invoke(app, ["verify", "add", "-v", "naive", "-o", str(tmp_path), "--budget", "3"])
    assert result.exit_code == 1, result.output
    text = flat(result.output)
    assert "untested: no shape ran" in text and "no shape within the variant's domain" in text


def test_cli_a_baseline_is_not_a_variant_to_verify(tmp_path, fake_cli):
    from cudabench.cli import app

    result = runner.invoke(app, ["verify", "reduce", "-v", "cupy", "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert "cupy is a library baseline; verify checks kernel variants" in flat(result.output)
    both = runner.invoke(
        app, ["verify", "reduce", "-v", "cupy", "-v", "float4", "-o", str(tmp_path), "--budget", "1"]
    )
    assert both.exit_code == 0, both.output
    assert "cupy: a library baseline, not verified" in flat(both.output) and "float4" in both.output


def test_cli_ctrl_c_is_130(tmp_path, fake_cli, monkeypatch):
    from cudabench.cli import app

    def interrupted(*args, **kwargs):
        raise sweeps.Interrupted([], tmp_path / "x.json")

    monkeypatch.setattr(usecase, "verify", interrupted)
    assert runner.invoke(app, ["verify", "add", "-o", str(tmp_path)]).exit_code == 130


def test_run_verify_skips_a_wrong_variant(tmp_path, fake_cli, monkeypatch):
    from cudabench.cli import app

    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: n == 6 -> wrong")
    quick = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
    result = runner.invoke(
        app, ["run", "add", "-s", "1024", "-o", str(tmp_path), "--verify", "--verify-budget", "3", *quick]
    )
    assert result.exit_code == 1, result.output
    text = flat(result.output)
    assert "wrong at 6" in text and "float4 float32 wrong at 6 (verify pass): not timed" in text
    assert "_verify_add.csv" in text and "_verify_add.json" in text  # the pass's files, both
    timed = [p for p in tmp_path.glob("*_add.json") if "_verify_" not in p.name]
    (path,) = timed
    _, rows = read_results(path)
    assert {r.variant for r in rows} >= {"naive"} and "float4" not in {r.variant for r in rows}
    assert list(tmp_path.glob("*_verify_add.json"))
    as_json = CliRunner().invoke(
        app,
        ["run", "add", "-s", "1024", "-v", "naive", "-o", str(tmp_path / "j"), "--verify", "--json", *quick],
    )
    document = json.loads(as_json.stdout)  # the verify pass's table went to stderr
    assert as_json.exit_code == 0 and document["rows"] and "verify pass before timing" in as_json.stderr


class Watched(Silent):
    """An observer that keeps each progress it opened: its total and the rows it saw end."""

    def __init__(self):
        self.progresses = []

    @contextlib.contextmanager
    def progress(self, total, devices):
        seen = []
        self.progresses.append((total, seen))

        class Follow:
            def started(self, case, name, device):
                pass

            def finished(self, row):
                seen.append(row)

            def announce(self, text):
                pass

        yield Follow()


def test_run_verify_pass_has_a_progress_of_its_own(tmp_path, monkeypatch, small_card):
    from cudabench.usecases.flow import Selection
    from cudabench.usecases.run_benchmarks import RunRequest, run_benchmarks

    monkeypatch.setenv("CUDABENCH_FAKE_PLANT", "float4: n == 6 -> wrong")
    selection = Selection(
        "add",
        shapes=((1024,),),
        variants=("naive", "float4"),
        timing={"min_samples": 2, "min_time_s": 0.0, "max_time_s": 0.01, "warmup": 0},
    )
    watched = Watched()
    done = run_benchmarks(
        RunRequest(
            selection,
            Placement(executor=InProcess(backend=FakeBackend())),
            Recording(tmp_path),
            ceilings=False,
            verify_budget=2,
        ),
        watched,
    )
    (pass_total, checked), (total, timed) = watched.progresses  # the verify pass's, then the rows'
    assert pass_total is None and len(checked) > 10  # the pass's checks follow its own progress
    assert total == len(timed) == len(done.rows)  # the rows' progress: float4 (wrong) not counted
    assert {r.variant for r in timed} == {"naive"} | {r.variant for r in timed if r.is_baseline}
    assert [v.verdict.state for v in done.verified if v.variant.name == "float4"] == ["wrong"]


def test_api_verify(tmp_path, fake_cli):
    import cudabench

    with pytest.raises(cudabench.SweepError, match="checks nothing"):
        cudabench.verify("add", budget_s=0, output=tmp_path)

    frame = cudabench.verify("add", variants="naive", budget_s=5, examples=5, output=tmp_path)
    assert list(frame["verdict"]) == ["verified"] and frame["shapes"][0] > 10
    assert {"wrong_at", "reproduce", "smallest", "largest", "complete"} <= set(frame.columns)
    assert json.loads(Path(frame["results"][0]).read_text())["rows"]


# ---------------------------------------------------------------------------- on a GPU

PLANTED_CASES = [
    ("planted_map", "dropped_tail", 257),
    ("planted_map", "last_block", 513),
    ("planted_map", "vector_no_tail", 1025),
    ("planted_sum", "index32", INT32 + 1),  # the sum's tolerance hides the first few thousand
    ("planted_sum", "one_block", 513),
    ("planted_sum", "warp33", 33),
    ("planted_rows", "tail2_row", 257),  # and cols % 4 == 2: among the edges of two dims
]


@pytest.mark.nvcc
@pytest.mark.parametrize("op, name, smallest", PLANTED_CASES)
def test_every_planted_kernel_compiles(op, name, smallest, tmp_path, monkeypatch):
    from cudabench.build.compile import compile_variant
    from cudabench.ops import registry

    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path))
    registry.use_ops([PLANTED])
    try:
        (variant,) = [v for v in discover(op, [PLANTED / op])[0] if v.name == name]
        assert compile_variant(variant, "sm_90", "float32").cubin.stat().st_size > 0
    finally:
        registry.use_ops(None)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("op, name, smallest", PLANTED_CASES)
def test_gpu_verify_finds_each_planted_kernel(tmp_path, op, name, smallest):
    """Right at 2^20, wrong elsewhere: found within 60 s, no larger than twice the smallest
    wrong shape (index32's smallest lies past 2^31 + 1, where its tolerance lets it pass)."""
    req = usecase.VerifyRequest(
        target=op,
        variants=(name,),
        ops=(PLANTED,),
        budget_s=60,
        placement=Placement(timeout_s=60),
        recording=Recording(tmp_path),
    )
    outcome = usecase.verify(req)
    (v,) = outcome.verdicts
    assert v.verdict.state == WRONG_AT, v
    assert smallest <= v.verdict.wrong.shape[0] <= 2 * smallest and v.verdict.elapsed_s <= 75
    import cudabench

    right = cudabench.run(
        op, shapes=["2^20"], variants=[name], ops=[PLANTED], output=tmp_path, ceilings=False
    )
    assert set(right["status"]) == {"OK"}


def test_the_profile_it_line_of_a_run_leaves_out_its_output_and_verify_pass():
    from cudabench.cli.run_cmd import without_output

    line = "cudabench run reduce -s 2^20 --verify --verify-budget 3 -o out/x --db h.db --verify-budget=4"
    assert without_output(line) == "cudabench run reduce -s '2^20' --db h.db"
