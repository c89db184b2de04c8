"""Everything before timing: one variant or baseline of a case made a validated call.

`Preparer.prepare` turns (op, case, variant or baseline) into a `Prepared` call, or the row
that stands for why it cannot go on: a header requirement unmet (N/A), a compile error (the
module compiled and loaded once per runner), a block that does not fit on an SM (SKIPPED), a
wrong first result (FAIL). A kernel variant gets the op's geometry, workspace and argument list
for each of its launches; a Python variant (pyvariants.py) and a library baseline get their
calls. Each gets fresh inputs, a float64 reference and tolerance (problem.py; the last one is
kept for the next configuration of the same variant and case, as a tune search runs them), an output
poisoned with NaN (or, for an op that works in place, a copy of its input and the reset that
restores it before every timed call), one call inside its NVTX ranges (outside in profile
mode), and the check of that call's output.

runner.py times what this prepares and builds the rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cudabench.backends.base import Backend, Loaded, Scope
from cudabench.backends.nvtx import nvtx_range
from cudabench.build.nvcc import CompileError
from cudabench.core.dtypes import get_dtype
from cudabench.core.records import Case, DeviceInfo, KernelVariant, ResultRow, Status
from cudabench.measure.problem import Problem, problem, seed_of
from cudabench.ops import pyvariants
from cudabench.ops.protocol import Check, OpProtocol, in_place_input

NAN_POISON_BYTE = 0xFF  # 0xFFFFFFFF is a NaN in float32


@dataclass
class Prepared:
    """A validated call, ready to time: what measure() needs and what the row needs after."""

    name: str
    call: Callable[[], None]
    scope: Scope  # the NVTX ranges of this variant and shape
    first: Check  # the validation before timing
    recheck: Callable[[], Check] | None = None  # checks the last timed output (variants)
    reset: Callable[[], None] | None = None  # restores an in-place op's input (untimed)
    resources: dict[str, Any] = field(default_factory=dict)
    is_baseline: bool = False
    blocks: int = 0  # the largest grid of its launches, in blocks (0: not known, a library)
    setup_s: float | None = None  # seconds it took to prepare (the runner's, for the row)


def fail_row(case: Case, label: str, check: Check, *, when: str = "", **fields: Any) -> ResultRow:
    """The FAIL row of a check that did not pass (`when`: "after timing: ", ...)."""
    return ResultRow.of(
        case,
        label,
        Status.FAIL,
        when + check.describe(),
        max_abs_err=check.max_abs_err,
        tolerance=check.tolerance,
        err_vs_f32=check.vs_f32,
        notes=check.note,
        **fields,
    )


class Preparer:
    """Prepares the calls of one backend, caching each variant's compiled and loaded module."""

    def __init__(self, backend: Backend, profile: bool = False) -> None:
        self.backend = backend
        self.profile = profile
        self.device: DeviceInfo = backend.device_info()
        self._loaded: dict[tuple[str, str, str, str], Loaded | CompileError] = {}
        # the last problem made, by (op, case, seed, fill): a variant's seed is its name's, so
        # every configuration of one variant at one case draws the same inputs and needs the
        # same reference; a tune search makes it once, not once a configuration
        self._kept: tuple[tuple[str, Case, int, str], Problem] | None = None
        self.reused = False  # the last prepare's problem was the kept one

    def _problem(self, op: OpProtocol, case: Case, seed: int, fill: str) -> Problem:
        """The case's inputs, float64 reference and tolerance: the kept ones where they are
        the same, else made anew (the kept ones freed first: never two on the GPU)."""
        key = (op.name, case, seed, fill)
        if self._kept is not None and self._kept[0] == key:
            self.reused = True
            return self._kept[1]
        self._kept = None
        made = problem(self.backend.xp, op, case, seed, fill)
        self._kept, self.reused = (key, made), False
        return made

    def keep_only(self, case: Case) -> int:
        """Drop a kept problem of another case; the bytes the kept one of `case` holds on the
        device (a job's memory check counts them as free: the job reuses them)."""
        if self._kept is None:
            return 0
        if self._kept[0][1] != case:
            self._kept = None
            return 0
        held = self._kept[1]
        return sum(int(getattr(a, "nbytes", 0)) for a in (*held.inputs, held.ref, held.tol))

    def _load(self, variant: KernelVariant, dtype: str) -> Loaded:
        key = (variant.path, variant.source_hash, dtype, variant.params_text)
        if key not in self._loaded:
            try:
                self._loaded[key] = self.backend.load(variant, dtype)
            except CompileError as exc:
                self._loaded[key] = exc
        loaded = self._loaded[key]
        if isinstance(loaded, CompileError):
            raise loaded
        return loaded

    def prepare(
        self, op: OpProtocol, case: Case, item: KernelVariant | str, fill: str = "random", share: bool = True
    ) -> Prepared | ResultRow:
        """A variant (or a baseline, by name) of `case` made a validated call; a row instead
        when it cannot go on. `share`: it may use the kept problem (not where several calls
        are prepared before any is timed: a kernel writing to inputs it shares would make
        another's check after timing FAIL)."""
        if not share:
            self._kept = None
        ready = self._prepare_once(op, case, item, fill)
        if not share:
            self._kept = None
        if self.reused and isinstance(ready, ResultRow) and ready.status is Status.FAIL:
            # a FAIL is the call's own, never owed to kept inputs that an earlier call may
            # have written to: checked again on a fresh problem
            self._kept = None
            ready = self._prepare_once(op, case, item, fill)
        return ready

    def _prepare_once(
        self, op: OpProtocol, case: Case, item: KernelVariant | str, fill: str
    ) -> Prepared | ResultRow:
        if isinstance(item, str):
            return self._prepare_baseline(op, case, item, seed_of(case, item), fill)
        return self._prepare_variant(op, case, item, seed_of(case, item.name), fill)

    def _prepare_variant(
        self, op: OpProtocol, case: Case, variant: KernelVariant, seed: int, fill: str = "random"
    ) -> Prepared | ResultRow:
        label = variant.label
        reason = variant.unmet_on(self.device) or op.unmet(variant, case.shape)
        if reason:
            return ResultRow.of(case, label, Status.N_A, reason)
        if variant.kind == pyvariants.PYTHON:
            return self._prepare_python(op, case, variant, seed, fill)
        dtype = get_dtype(case.dtype)
        loaded = self._load(variant, dtype.name)
        if 0 in loaded.blocks_per_sm:  # e.g. registers x threads beyond what an SM holds
            block = variant.launches[loaded.blocks_per_sm.index(0)].block
            return ResultRow.of(
                case,
                label,
                Status.SKIPPED,
                f"a block of {block} threads does not fit on an SM ({loaded.registers} registers a thread)",
            )
        # Every launch sized by the least occupancy of the variant's kernels: a multi-kernel
        # variant passes partials between its kernels, so a rule that sizes grids by the
        # occupancy (the 1-D softmax's `split`) must give each the same block count (it gave
        # online_vec's two kernels 660 and 792 blocks on an H200: the norm kernel read partials
        # the stats kernel never wrote).
        occupancy = min(loaded.blocks_per_sm)
        try:
            geometries = [
                op.geometry(launch, variant, case.shape, self.device, occupancy, dtype.itemsize)
                for launch in variant.launches
            ]
        except ValueError as exc:
            return ResultRow.of(case, label, Status.ERROR, str(exc))
        xp = self.backend.xp
        given = self._problem(op, case, seed, fill)
        inputs = given.inputs
        out = xp.empty(op.output_shape(case.shape), dtype=dtype.array_type())
        # one workspace for all launches of the variant: a multi-kernel variant's kernels
        # pass their partials through it (each name as large as any launch asks)
        sizes: dict[str, tuple[int, str]] = {}
        for geometry in geometries:
            for name, (count, element) in geometry.workspace.items():
                sizes[name] = (max(count, sizes.get(name, (0, element))[0]), element)
        workspace = {name: xp.zeros(count, dtype=element) for name, (count, element) in sizes.items()}
        launches = []
        for function, geometry in zip(loaded.functions, geometries):
            args = op.kernel_args(inputs, out, workspace, geometry)
            launches.append((function, geometry.grid, geometry.block, args, geometry.shared_bytes))

        def call() -> None:
            if variant.init != "none":  # part of the call: the kernel relies on it
                self.backend.fill_bytes(out, 0 if variant.init == "zero" else NAN_POISON_BYTE)
            for function, grid, block, args, shared in launches:
                self.backend.launch(function, grid, block, args, shared)

        resources: dict[str, Any] = {"registers": loaded.registers, "spill_bytes": loaded.spill_bytes}
        in_place = in_place_input(op)
        reset = self._first_call(label, case, call, inputs, out, in_place)
        first = given.check(out)
        if not first.ok:
            return fail_row(case, label, first, **resources)
        return Prepared(
            label,
            call,
            lambda: ranges(label, case),
            first,
            recheck=lambda: given.check(out),
            resources=resources,
            reset=reset,
            blocks=max(g.blocks for g in geometries),
        )

    def _first_call(
        self,
        label: str,
        case: Case,
        call: Callable[[], None],
        inputs: tuple[Any, ...],
        out: Any,
        in_place: int | None,
    ) -> Callable[[], None] | None:
        """The validation call: `out` poisoned with NaN first, or, for an op that works in
        place, a copy of input `in_place` (and the reset that restores it before every timed
        call, returned); the call inside the variant's ranges (outside in profile mode)."""
        reset: Callable[[], None] | None = None
        if in_place is not None:  # the kernel works on `out`, a copy of the input
            source = inputs[in_place]
            reset = lambda: self.backend.copy(out, source)  # noqa: E731
            reset()
        else:
            self.backend.fill_bytes(out, NAN_POISON_BYTE)
        with self._validation_scope(label, case):
            self.backend.run(call)
            self.backend.synchronize()
        return reset

    def _prepare_python(
        self, op: OpProtocol, case: Case, variant: KernelVariant, seed: int, fill: str = "random"
    ) -> Prepared | ResultRow:
        """A Python variant (pyvariants.py): validated and timed like a kernel's launches."""
        label = variant.label
        fn, info = pyvariants.load(variant)
        reason = pyvariants.unavailable(info, self.backend.name)
        if reason:
            return ResultRow.of(case, label, Status.N_A, reason)
        xp = self.backend.xp
        given = self._problem(op, case, seed, fill)
        out = xp.empty(op.output_shape(case.shape), dtype=get_dtype(case.dtype).array_type())
        in_place = in_place_input(op)
        call, produced = pyvariants.bind(fn, info, in_place, given.inputs, out)
        reset = self._first_call(label, case, call, given.inputs, out, in_place)

        def check() -> Check:
            return given.check(pyvariants.as_output(produced(), out, label))

        first = check()
        if not first.ok:
            return fail_row(case, label, first)
        return Prepared(label, call, lambda: ranges(label, case), first, recheck=check, reset=reset)

    def _prepare_baseline(
        self, op: OpProtocol, case: Case, name: str, seed: int, fill: str = "random"
    ) -> Prepared | ResultRow:
        given = self._problem(op, case, seed, fill)
        library_call = op.baselines()[name]
        result: list[Any] = [None]

        def call() -> None:
            result[0] = library_call(given.inputs)

        with self._validation_scope(name, case):
            self.backend.run(call)
            self.backend.synchronize()
        first = given.check(result[0])
        if not first.ok:
            return fail_row(case, name, first, is_baseline=True)
        return Prepared(name, call, lambda: ranges(name, case), first, is_baseline=True)

    def _validation_scope(self, name: str, case: Case) -> contextlib.AbstractContextManager[None]:
        """Validation runs inside the variant's ranges, except in profile mode."""
        return contextlib.nullcontext() if self.profile else ranges(name, case)


@contextlib.contextmanager
def ranges(name: str, case: Case) -> Iterator[None]:
    """NVTX ranges variant -> shape (inside the op's range): they hold the variant's own
    launches only, never the input generation, reference or checks, so that
    `ncu --nvtx-include cudabench@op/variant/shape/dtype/` profiles exactly those."""
    with nvtx_range(name), nvtx_range(case.shape_text), nvtx_range(case.dtype):
        yield
