"""Which queued job an idle worker takes (execution/dispatch.py): its own libraries' jobs
first; a job needing a library it lacks only when no worker that has it is idle or will be
free within the import's time, by the jobs' estimates."""

from cudabench.execution.dispatch import Other, Queued, choose

TORCH = frozenset({"torch"})
NONE: frozenset[str] = frozenset()


def test_a_worker_takes_the_first_job_it_has_the_libraries_for():
    queue = [Queued(0, TORCH, 1.0), Queued(1, NONE, 1.0), Queued(2, NONE, 1.0)]
    assert choose(queue, set(), [], 4.5).index == 1
    assert choose(queue, {"torch"}, [], 4.5).index == 0
    kernels_first = [Queued(0, NONE, 9.0), Queued(1, TORCH, 1.0)]  # the torch worker's job first
    assert choose(kernels_first, {"torch"}, [], 4.5).index == 1
    assert choose(kernels_first, set(), [], 4.5).index == 0


def test_a_library_job_waits_for_an_idle_holder_and_goes_where_there_is_none():
    queue = [Queued(0, TORCH, 1.0)]
    assert choose(queue, set(), [Other(TORCH, idle=True)], 4.5) is None
    assert choose(queue, set(), [Other(NONE, idle=True)], 4.5).index == 0  # nobody has torch


def test_a_busy_holder_is_waited_for_when_it_will_be_free_before_the_import_is_done():
    """A 0.6 s torch row queued and the torch worker 1 s from done: waiting beats a 4.5 s
    import. Behind 10 s of torch work, importing wins."""
    soon = [Other(TORCH, idle=False, left_s=1.0)]
    assert choose([Queued(0, TORCH, 0.6)], set(), soon, 4.5) is None
    long_queue = [Queued(i, TORCH, 2.5) for i in range(4)]
    assert choose(long_queue, set(), soon, 4.5).index == 0
    two_holders = soon + [Other(TORCH, idle=False, left_s=1.0)]  # 12 s of work shared by two
    assert choose(long_queue, set(), two_holders, 4.5).index == 0
    assert choose(long_queue[:2], set(), two_holders, 4.5) is None  # 7 s shared: 3.5 each


def test_without_estimates_a_busy_holder_is_not_waited_for_but_an_importing_one_is():
    """A holder on a job of unknown length: the job is taken (a first run has no history);
    the worker still importing (its left the import's rest) is waited for."""
    assert choose([Queued(0, TORCH, 0.5)], set(), [Other(TORCH, False, None)], 4.5).index == 0
    importing = [Other(TORCH, idle=False, left_s=3.0)]
    assert choose([Queued(0, TORCH, None), Queued(1, TORCH, None)], set(), importing, 4.5) is None


def test_a_worker_whose_successor_brings_the_library_leaves_its_jobs_to_it():
    """Its own GPU's successor (pool.py) is importing torch: the plain worker there takes a
    job that needs nothing, and waits when only torch jobs are queued, even with no other
    holder anywhere (it would otherwise import torch itself, beside its successor)."""
    queue = [Queued(0, TORCH, 1.0), Queued(1, NONE, 1.0)]
    assert choose(queue, set(), [], 4.5, coming=TORCH).index == 1
    assert choose(queue[:1], set(), [], 4.5, coming=TORCH) is None
    assert choose(queue[:1], set(), [], 4.5).index == 0  # no successor: it imports torch
