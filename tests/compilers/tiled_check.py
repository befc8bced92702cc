"""One helper for the middle end's tests: compile a layer through the one entry and hold the
simulator's outputs to the reference interpreter's, bit for bit."""

from __future__ import annotations

import numpy as np

from compilers.compile import Compiled, compile
from compilers.simulator import simulate
from compilers.targets import load_target
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.ir import Graph


def tiled_on_sim(graph: Graph, target: str, seed: int) -> Compiled:
    """``graph`` compiled for ``target`` by the middle end and equal to the reference on ``seed``'s
    input set (edge values on odd seeds); returns the compile."""
    acc = load_target(target)
    res = compile(graph, acc)
    assert res.stats.middle, "not tiled by the middle end"
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, res.program, xs).outputs
    assert want.shape == got.shape and np.array_equal(want, got)
    return res


def on_backend(graph: Graph, target: str, backend: str, seeds: tuple[int, ...] = (0, 1)) -> None:
    """``graph`` compiled for ``target`` and run on ``backend`` equal to the reference on each of
    ``seeds``' input sets (edge values on odd seeds); skips where the backend is unavailable here."""
    import pytest

    from check.backends import get_backend, unavailable

    why = unavailable(target, backend)
    if why is not None:
        pytest.skip(why)
    acc = load_target(target)
    prog = compile(graph, acc).program
    for seed in seeds:
        xs = random_inputs(graph, seed, edges=bool(seed % 2))
        (want,) = evaluate(graph, xs)
        (got,) = get_backend(acc, backend).run(prog, xs).outputs
        assert want.shape == got.shape and np.array_equal(want, got), f"{backend}, input set {seed}"
