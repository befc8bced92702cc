"""Chains of layers (compilers/middle/chain.py): the split into layers and the composed program,
checked bit for bit against the reference on the user's graph (the intermediate stays in HBM)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilers.compile import compile
from compilers.middle.chain import split_chain
from semantics.build import Builder, tensor
from tests.compilers.tiled_check import tiled_on_sim
from semantics.ir import Graph

sizes = st.one_of(st.sampled_from((1, 3, 7, 13, 17, 31)), st.integers(1, 70))


def _chain(dims: list[int], tails: list[tuple[float, bool]], bias: list[bool]) -> Graph:
    """``len(dims) - 1`` int8 layers: x [M, dims[0]] through weights [dims[i], dims[i + 1]]."""
    m = dims[0]
    b = Builder("chain")
    b.param("x", 0, tensor("s8", m, dims[1]))
    cur, idx = "x", 1
    for i, (k, n) in enumerate(zip(dims[1:], dims[2:], strict=False)):
        b.param(f"w{i}", idx, tensor("s8", k, n))
        idx += 1
        d = b.op(f"d{i}", "dot", cur, f"w{i}", type=tensor("s32", m, n), lhs_contracting_dims=(1,),
                 rhs_contracting_dims=(0,))
        if bias[i]:
            b.param(f"b{i}", idx, tensor("s32", n))
            idx += 1
            bb = b.op(f"bb{i}", "broadcast", f"b{i}", type=tensor("s32", m, n), dimensions=(1,))
            d = b.op(f"s{i}", "add", d, bb)
        scale, relu = tails[i]
        f = b.op(f"f{i}", "convert", d, type=tensor("f32", m, n))
        b.const(f"k{i}", scale, "f32")
        b.op(f"kb{i}", "broadcast", f"k{i}", type=tensor("f32", m, n), dimensions=())
        r = b.op(f"r{i}", "round-nearest-even", b.op(f"m{i}", "multiply", f, f"kb{i}"))
        b.const(f"lo{i}", -128, "f32")
        b.const(f"hi{i}", 127, "f32")
        c = b.op(f"c{i}", "clamp", f"lo{i}", r, f"hi{i}")
        cur = b.op(f"q{i}", "convert", c, type=tensor("s8", m, n))
        if relu:
            b.const(f"z{i}", 0, "s8")
            b.op(f"zb{i}", "broadcast", f"z{i}", type=tensor("s8", m, n), dimensions=())
            cur = b.op(f"y{i}", "maximum", cur, f"zb{i}")
    return b.build(cur)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(sizes, min_size=4, max_size=5), st.sampled_from(["gemmini", "amx"]), st.integers(0, 3), st.data())
def test_chains_of_layers_check_bit_for_bit(dims: list[int], target: str, seed: int, data: st.DataObject) -> None:
    layers = len(dims) - 2
    tails = data.draw(st.lists(st.sampled_from([(0.0625, True), (0.1, False), (1.0, True), (3 / 16, False)]),
                               min_size=layers, max_size=layers))
    bias = data.draw(st.lists(st.booleans(), min_size=layers, max_size=layers))
    graph = _chain(dims, tails, bias)
    links = split_chain(graph)
    assert links is not None and len(links) == layers
    tiled_on_sim(graph, target, seed)


def test_a_single_layer_or_a_non_chain_is_not_split() -> None:
    g = _chain([8, 16, 24], [(0.0625, False)], [True])
    assert split_chain(g) is None


@pytest.mark.parametrize("target", ["gemmini", "amx"])
def test_the_intermediate_is_read_where_the_first_layer_wrote_it(target: str) -> None:
    graph = _chain([20, 70, 40, 33], [(0.0625, True), (0.1, False)], [True, True])
    prog = compile(graph, target).program
    assert [x.index for x in prog.inputs] == [0, 1, 2, 3, 4]     # x, w0, b0, w1, b1: no input for the intermediate
