"""The catalogue's ops as kernels/<op>/op.py files compute what the per-op modules computed
before they moved (tests/fixtures/catalogue_before.json, recorded from them): the same
inputs, float64 reference and tolerance for the same seed, bytes, FLOPs, output shape, and
for every built-in variant recorded then the same geometry and the exact kernel argument
list (a variant added since is checked by `cudabench check`'s parameter count)."""

import json
from pathlib import Path

import pytest
from catalogue_record import SHAPES, close, record_case

from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.ops import registry
from cudabench.ops.registry import all_ops, get_op

BEFORE = json.loads((Path(__file__).parent / "fixtures" / "catalogue_before.json").read_text())


def test_every_catalogue_op_is_an_op_file():
    assert sorted(all_ops()) == sorted(BEFORE) == sorted(SHAPES)
    for name in BEFORE:
        assert registry.op_file(name) == str((BUILTIN_KERNELS / name / "op.py").resolve())
    assert registry.problems() == []


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_declarations_match(name, monkeypatch):
    from cudabench.ops import torch_baselines

    monkeypatch.setattr(torch_baselines, "available", lambda: False)  # recorded without torch
    op = get_op(name)
    old = BEFORE[name]
    assert op.about == old["about"]
    assert list(op.grid_rules) == old["grid_rules"]
    assert sorted(op.requirements) == old["requirements"]
    assert bool(getattr(op, "in_place", False)) == old["in_place"]
    assert sorted(op.baselines()) == old["baselines"]


@pytest.mark.parametrize("name, case", [(n, c) for n in sorted(BEFORE) for c in BEFORE[n]["cases"]])
def test_each_case_computes_what_it_did(name, case):
    shape_text, dtype = case.split("/")
    shape = tuple(int(d) for d in shape_text.split("x"))
    now, before = record_case(name, shape, dtype), BEFORE[name]["cases"][case]
    # variants added to the catalogue since the record have nothing to compare with
    assert close(
        {k: v for k, v in now.items() if k != "variants"},
        {k: v for k, v in before.items() if k != "variants"},
    )
    assert {v: now["variants"].get(v) for v in before["variants"]} == before["variants"]


def test_a_last_bit_passes_and_a_real_change_does_not():
    """The reference and tolerance are compared with a tolerance (CPUs differ in the last
    place of exp and tanh), the rest exactly."""
    recorded = {"reference": {"sum": 1.0, "values": [0.5, 0.25]}, "bytes_moved": 8}
    last_bit = {"reference": {"sum": 1.0 + 2e-16, "values": [0.5, 0.25 * (1 + 2e-16)]}, "bytes_moved": 8}
    assert close(last_bit, recorded)
    assert not close({"reference": {"sum": 1.0001, "values": [0.5, 0.25]}, "bytes_moved": 8}, recorded)
    assert not close({**last_bit, "bytes_moved": 9}, recorded)
