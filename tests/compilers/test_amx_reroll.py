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
from compilers.targets.amx.reroll import Loop, expand, reroll
from semantics.inputs import random_inputs
from semantics.interp import evaluate


def _c(name: str, **attrs: int) -> Concrete:
    return Concrete(name, tuple(attrs.items()))


def test_a_strided_block_becomes_one_run() -> None:
    ins = [x for j in range(10) for x in (_c("load", t=2, addr=100 + 64 * j), _c("store", t=2, addr=9000 - 4 * j))]
    items = reroll(ins)
    assert items == [Loop(10, tuple(ins[:2]), (64, -4))]
    assert expand(items) == ins


def test_repeated_loops_nest() -> None:
    """A tile's row loop (16 rows of 5 instructions, past one level's longest period) repeated
    per tile, addresses moving by a tile, is one loop of loops."""
    def row(i: int, r: int) -> list[Concrete]:
        return [_c("ld", z=1, addr=100 + 64 * r), *(_c("op", z=k) for k in range(3)),
                _c("st", z=1, addr=5000 + 1024 * i + 16 * r)]
    ins = [x for i in range(6) for x in [_c("tilestored", t=0, addr=100)] + [y for r in range(16) for y in row(i, r)]]
    items = reroll(ins)
    assert len(items) == 1 and isinstance(items[0], Loop) and items[0].count == 6
    inner = items[0].body[1]
    assert isinstance(inner, Loop) and (inner.count, inner.steps) == (16, (64, 16))
    assert items[0].steps == (0, 0, 1024)
    assert expand(items) == ins


def test_registers_do_not_vary_in_a_run() -> None:
    ins = [_c("load", t=j % 2, addr=64 * j) for j in range(8)]
    items = reroll(ins)
    assert all(not isinstance(x, Loop) or len(x.body) % 2 == 0 for x in items)   # t alternates: period 2
    assert expand(items) == ins


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2), st.integers(0, 3)), max_size=60),
       st.integers(1, 5))
def test_rolled_form_expands_to_the_program(spec: list[tuple[str, int, int]], reps: int) -> None:
    ins = [_c(n, t=t, addr=a * 16) for n, t, a in spec] * reps
    assert expand(reroll(ins)) == ins


def test_rolled_unit_runs_to_the_reference_on_the_emulated_backend() -> None:
    from check.backends import get_backend, unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    acc = load_target("amx")
    graph = layer_graph(96, 64, 48, bias=True, scale=0.0625, relu=True)     # six row blocks: nested loops
    prog = compile(graph, acc).program
    text = emit_c(prog)
    assert len(prog) > REROLL_ABOVE and "for (long j0_" in text and "for (long j1_" in text
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
    assert np.array_equal(want, got)
