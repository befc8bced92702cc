"""The Gemmini RTL's decoupled execution on whole programs: tiled GEMM and convolution layers (the
middle end's pipelined order, where loads, multiplies and stores overlap through the command
queue) equal the reference interpreter bit for bit, and computes that reuse the array's weights
stream one DIM-row block per DIM cycles (gemmini_ex.sv's ISSUE stage)."""

from __future__ import annotations

import numpy as np
import pytest

from check.backends import get_backend, unavailable
from compilers.compile import compile
from compilers.middle.conv import conv_graph
from compilers.middle.gemm import layer_graph
from compilers.targets import load_target
from rtl_harness.gemmini import driver as g
from rtl_harness.gemmini import cases as gc
from semantics.ir import Graph
from semantics.inputs import random_inputs
from semantics.interp import evaluate

pytestmark = pytest.mark.skipif(unavailable("gemmini", "rtl") is not None,
                                reason=str(unavailable("gemmini", "rtl")))

F_CONFIG, F_PRELOAD, F_COMPUTE_ACC, F_COMPUTE_PRE = 0, 6, 5, 4
GARBAGE = 0xFFFF_FFFF


def _check(graph: Graph, seeds: tuple[int, ...] = (0, 1)) -> int:
    acc = load_target("gemmini")
    prog = compile(graph, acc).program
    cycles = 0
    for seed in seeds:
        xs = random_inputs(graph, seed, edges=bool(seed % 2))
        (want,) = evaluate(graph, xs)
        res = get_backend(acc, "rtl").run(prog, xs)
        assert np.array_equal(res.outputs[0], want), f"seed {seed}: the RTL differs from the reference"
        cycles = res.cycles or 0
    return cycles


@pytest.mark.parametrize("m,k,n,bias,scale,relu", [
    (40, 70, 50, True, 0.0625, True),     # remainders in every dimension, bias rows, the store path's tail
    (33, 16, 17, False, None, False),     # raw int32 result
    (600, 32, 48, False, 0.25, True),     # two chunks: the second A panel loads while the first computes
    (64, 64, 64, False, 1.0, False),
])
def test_tiled_gemm_layers(m: int, k: int, n: int, bias: bool, scale: float | None, relu: bool) -> None:
    assert _check(layer_graph(m, k, n, bias=bias, scale=scale, relu=relu)) > 0


def test_tiled_conv_layer() -> None:
    assert _check(conv_graph(1, 9, 9, 12, 3, 20, stride=2, pad=1, bias=True, scale=0.125, relu=True)) > 0


@pytest.mark.parametrize("dim", (4, g.DIM))
def test_concurrent_programs_equal_streammachine(dim: int) -> None:
    """40 random programs of loads, stores and computes (rtl_harness/gemmini/cases.py's
    concurrent_program): whole DRAM, scratchpad, accumulator and PE state equal StreamMachine's."""
    sizes = {4: (256, 64, 4096), g.DIM: (g.SPAD_ROWS, g.ACC_ROWS, 8192)}[dim]
    m = g.GemminiRtl(dim, *sizes)
    for s in range(40):
        case = gc.concurrent_program(s, dim, *sizes)
        _, diff, _ = gc.run_case(m, case)
        assert diff is None, f"program {s}: {diff}"


def _compute_stream(m: g.GemminiRtl, n: int, dim: int, preload_every: int) -> int:
    """n computes of one DIM x DIM block (A from scratchpad row 0) into distinct accumulator rows;
    a PRELOAD of new weights (scratchpad row 16*dim) before every ``preload_every``-th."""
    cmds: list[tuple[int, int, int]] = [(F_CONFIG, (1 << 2) | (1 << 16), 0)]   # WS, A stride 1
    block = (dim << 48) | (dim << 32)
    for i in range(n):
        c = block | (1 << 31) | (i * dim)
        if i % preload_every == 0:
            cmds += [(F_PRELOAD, block | 16 * dim, c), (F_COMPUTE_PRE, block, GARBAGE)]
        else:
            cmds += [(F_PRELOAD, GARBAGE, c), (F_COMPUTE_ACC, block, GARBAGE)]
    return m.run(cmds)


def test_computes_stream_one_block_per_dim_cycles() -> None:
    """Steady state: a compute with the array's weights every DIM cycles, and a preload of new
    weights overlaps the stream (shadow weights, two cycles of the stream per preload): 48 computes
    in 48*DIM cycles plus the pipeline's fill, with or without a preload every 8."""
    dim = g.DIM
    m = g.GemminiRtl(dim)
    rng = np.random.default_rng(0)
    spad = rng.integers(-128, 128, (m.spad().shape[0], dim), dtype=np.int8)
    for every in (48, 8):
        m.reset()
        m.set_spad(spad)
        cycles = _compute_stream(m, 48, dim, every)
        assert cycles <= 48 * dim + 4 * dim + 16 + 2 * (48 // every), (every, cycles)
