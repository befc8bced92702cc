"""Loops in the emitted C of large AMX programs (compilers/targets/amx/reroll.py): the rolled form
expands to the program, and the emulated backend runs a rolled unit to the reference's outputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compilers.compile import compile
from compilers.middle.gemm import layer_graph
from compilers.program import Concrete
from compilers.targets import load_target
from compilers.targets.amx.emit_c import REROLL_ABOVE, emit_c
from compilers.targets.amx.reroll import Run, expand, reroll
from semantics.inputs import random_inputs
from semantics.interp import evaluate


def _c(name: str, **attrs: int) -> Concrete:
    return Concrete(name, tuple(attrs.items()))


def test_a_strided_block_becomes_one_run() -> None:
    ins = [x for j in range(10) for x in (_c("load", t=2, addr=100 + 64 * j), _c("store", t=2, addr=9000 - 4 * j))]
    items = reroll(ins)
    assert items == [Run(0, 2, 10, ((("addr", 64),), (("addr", -4),)))]
    assert expand(items, ins) == ins


def test_registers_do_not_vary_in_a_run() -> None:
    ins = [_c("load", t=j % 2, addr=64 * j) for j in range(8)]
    items = reroll(ins)
    assert all(not isinstance(x, Run) or x.period % 2 == 0 for x in items)   # t alternates: period 2
    assert expand(items, ins) == ins


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2), st.integers(0, 3)), max_size=60),
       st.integers(1, 5))
def test_rolled_form_expands_to_the_program(spec: list[tuple[str, int, int]], reps: int) -> None:
    ins = [_c(n, t=t, addr=a * 16) for n, t, a in spec] * reps
    assert expand(reroll(ins), ins) == ins


def test_rolled_unit_runs_to_the_reference_on_the_emulated_backend() -> None:
    from check.backends import get_backend, unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    acc = load_target("amx")
    graph = layer_graph(40, 300, 70, bias=True, scale=0.0625, relu=True)
    prog = compile(graph, acc).program
    assert len(prog) > REROLL_ABOVE and "for (long j_" in emit_c(prog)
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
    assert np.array_equal(want, got)
