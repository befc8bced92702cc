"""Canonical forms (compilers/canon.py): each rewrite against the reference interpreter, the gate
that rule-backed rewrites ask, and layers as jax dumped them compiled and checked bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check import check_program
from compilers.canon import CLIP_RULES, canonicalize
from compilers.compile import compile, rules_for
from compilers.middle.gemm import recognize
from compilers.targets import load_target
from semantics.build import Builder, tensor
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.inputs import random_inputs
from semantics.interp import evaluate

LAYERS = Path(__file__).parent / "jax_layers"


class _Yes:
    """A gate that passes every rule (the rewrites' own logic under test)."""

    def passes(self, rule, dtype, rank):  # noqa: ANN001, ANN201
        return True


class _No:
    def passes(self, rule, dtype, rank):  # noqa: ANN001, ANN201
        return False


def _same(g1, g2, seed: int = 0, edges: bool = True) -> None:  # noqa: ANN001
    xs = random_inputs(g1, seed, edges=edges)
    with np.errstate(all="ignore"):
        a, b = evaluate(g1, xs), evaluate(g2, xs)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


# --- movement chains ---------------------------------------------------------------------------

def test_jax_bias_chain_becomes_one_broadcast() -> None:
    b = Builder("bias")
    b.param("x", 0, tensor("s32", 6, 5))
    b.param("b", 1, tensor("s32", 5))
    b.op("r1", "reshape", "b", type=tensor("s32", 1, 5))
    b.op("b1", "broadcast", "r1", type=tensor("s32", 1, 5), dimensions=(0, 1))
    b.op("r2", "reshape", "b1", type=tensor("s32", 5))
    b.op("b2", "broadcast", "r2", type=tensor("s32", 6, 5), dimensions=(1,))
    g = b.build(b.op("y", "add", "x", "b2"))
    c = canonicalize(g, None)
    bias = c.graph.entry["b2"]
    assert (bias.opcode, bias.operands, bias.attrs.get("dimensions")) == ("broadcast", ("b",), (1,))
    assert {i.name for i in c.graph.entry.instructions} == {"x", "b", "b2", "y"}
    _same(g, c.graph)


def test_a_chain_that_transposes_is_not_called_a_reshape() -> None:
    b = Builder("t")
    b.param("x", 0, tensor("s32", 4, 6))
    b.op("t", "transpose", "x", dimensions=(1, 0))
    b.op("r", "reshape", "t", type=tensor("s32", 6, 4))
    g = b.build(b.op("y", "negate", "r"))
    c = canonicalize(g, None)
    r = c.graph.entry["r"]
    assert (r.opcode, r.attrs.get("dimensions")) == ("transpose", (1, 0))
    _same(g, c.graph)


def test_an_unchanged_graph_is_returned_as_is() -> None:
    g = parse_file(Path(__file__).parents[2] / "examples" / "regression" / "gemmini_gemm.hlo")
    c = canonicalize(g, rules_for(load_target("gemmini")).gate)
    assert c.graph is g and not c.changed


def test_clamp_with_scalar_bounds_sinks_past_a_dot_view() -> None:
    """An elementwise clamp of a dot's result read through a view keeps its scalar bounds as
    they are when it moves before the view (a campaign found the sink reshaping f32[] to the
    dot's shape: a compile crash)."""
    g = parse_hlo("""HloModule s
ENTRY main {
  p0 = f32[1,1] parameter(0)
  p1 = f32[13,1] parameter(1)
  dot.1 = f32[13,1] dot(p1, p0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  transpose.2 = f32[1,13] transpose(dot.1), dimensions={1,0}
  reshape.3 = f32[13] reshape(transpose.2)
  lo = f32[] constant(-26.0)
  hi = f32[] constant(94.0)
  ROOT clamp.6 = f32[13] clamp(lo, reshape.3, hi)
}""")
    c = canonicalize(g, rules_for(load_target("amx")).gate)
    _same(g, c.graph)


_MOVES = st.sampled_from(["reshape", "transpose", "broadcast", "copy"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MOVES, min_size=1, max_size=4), st.integers(0, 2 ** 16))
def test_random_move_chains_keep_the_value(moves: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    b = Builder("chain")
    shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(1, 4)))]
    b.param("x", 0, tensor("s32", *shape))
    cur = "x"
    for i, m in enumerate(moves):
        name = f"m{i}"
        if m == "reshape":
            n = int(np.prod(shape))
            new = [n] if rng.random() < 0.5 or n < 2 else [1, n] if rng.random() < 0.5 else [n, 1]
            b.op(name, "reshape", cur, type=tensor("s32", *new))
            shape = new
        elif m == "transpose":
            perm = tuple(int(p) for p in rng.permutation(len(shape)))
            b.op(name, "transpose", cur, dimensions=perm)
            shape = [shape[p] for p in perm]
        elif m == "broadcast" and len(shape) < 4:
            pos = int(rng.integers(0, len(shape) + 1))
            new = shape[:pos] + [int(rng.integers(1, 3))] + shape[pos:]
            dims = tuple(d if d < pos else d + 1 for d in range(len(shape)))
            b.op(name, "broadcast", cur, type=tensor("s32", *new), dimensions=dims)
            shape = new
        else:
            b.op(name, "copy", cur)
        cur = name
    g = b.build(b.op("y", "negate", cur))
    c = canonicalize(g, None)
    _same(g, c.graph, seed)


# --- clip, ReLU, constants -----------------------------------------------------------------------

def _clip(dtype: str, form: str, lo: float, hi: float, relu: bool = False):  # noqa: ANN202
    b = Builder("clip")
    b.param("x", 0, tensor(dtype, 5, 7))
    b.const("lo", lo, dtype)
    b.const("hi", hi, dtype)
    b.op("blo", "broadcast", "lo", type=tensor(dtype, 5, 7), dimensions=())
    b.op("bhi", "broadcast", "hi", type=tensor(dtype, 5, 7), dimensions=())
    x = "x"
    if relu:
        b.const("z", 0, dtype)
        b.op("bz", "broadcast", "z", type=tensor(dtype, 5, 7), dimensions=())
        x = b.op("r", "maximum", "x", "bz")
    if form == "bound_first":
        b.op("mx", "maximum", "blo", x)
        b.op("mn", "minimum", "bhi", "mx")
    else:
        b.op("mx", "maximum", x, "blo")
        b.op("mn", "minimum", "mx", "bhi")
    if dtype in ("f32", "bf16"):
        return b.build(b.op("y", "convert", "mn", type=tensor("s8", 5, 7)))
    return b.build(b.op("y", "negate", "mn"))


@pytest.mark.parametrize("form", sorted(CLIP_RULES))
@pytest.mark.parametrize("dtype", ["s32", "s8", "f32", "bf16"])
@pytest.mark.parametrize("bounds", [(-128, 127), (3, -4), (0, 0), (-1, 200)])
def test_clip_forms_become_clamp_and_keep_the_value(form: str, dtype: str, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    if dtype == "s8" and hi > 127:
        hi = 127
    g = _clip(dtype, form, lo, hi)
    c = canonicalize(g, rules_for(load_target("gemmini")).gate)
    assert c.graph.entry["mn"].opcode == "clamp", c.applied
    for seed in range(4):
        _same(g, c.graph, seed, edges=True)


def test_float_clip_whose_result_is_not_converted_to_s8_stays() -> None:
    b = Builder("clip")
    b.param("x", 0, tensor("f32", 3))
    b.const("lo", -1.0, "f32")
    b.const("hi", -0.5, "f32")
    b.op("blo", "broadcast", "lo", type=tensor("f32", 3), dimensions=())
    b.op("bhi", "broadcast", "hi", type=tensor("f32", 3), dimensions=())
    b.op("mx", "maximum", "blo", "x")
    g = b.build(b.op("mn", "minimum", "bhi", "mx"))
    assert canonicalize(g, _Yes()).graph.entry["mn"].opcode == "minimum"
    # and it would be wrong: a NaN x comes out with another sign (the rule's float claim needs the conversion)
    b2 = Builder("c")
    b2.param("x", 0, tensor("f32", 3))
    b2.const("lo", -1.0, "f32")
    b2.const("hi", -0.5, "f32")
    b2.op("blo", "broadcast", "lo", type=tensor("f32", 3), dimensions=())
    b2.op("bhi", "broadcast", "hi", type=tensor("f32", 3), dimensions=())
    clamp = b2.build(b2.op("c", "clamp", "blo", "x", "bhi"))
    x = np.abs(np.array([np.nan, 0, 1], np.float32))   # a positive NaN: min(hi < 0, NaN) gives it hi's sign
    assert evaluate(g, [x])[0].tobytes() != evaluate(clamp, [x])[0].tobytes()


def test_rule_backed_rewrites_wait_for_the_gate() -> None:
    g = _clip("s32", "bound_first", -128, 127)
    assert canonicalize(g, _No()).graph.entry["mn"].opcode == "minimum"
    assert canonicalize(g, None).graph.entry["mn"].opcode == "minimum"


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_relu_before_the_clip_moves_to_the_int8_result(dtype: str) -> None:
    g = _clip(dtype, "bound_first", -128, 127, relu=True)
    c = canonicalize(g, rules_for(load_target("gemmini")).gate)
    root = c.graph.entry.root_instruction
    assert root.opcode == "maximum" and root.tensor_type.dtype.name == "s8", c.applied
    for seed in range(4):
        _same(g, c.graph, seed)


def test_scalar_constants_fold_to_the_reference_value() -> None:
    b = Builder("k")
    b.param("x", 0, tensor("f32", 4))
    b.const("c", -128, "s32")
    b.op("f", "convert", "c", type=tensor("f32"))
    b.op("bf", "broadcast", "f", type=tensor("f32", 4), dimensions=())
    g = b.build(b.op("y", "add", "x", "bf"))
    c = canonicalize(g, None)
    f = c.graph.entry["f"]
    assert f.opcode == "constant" and f.attrs["literal"].to_array() == np.float32(-128)
    _same(g, c.graph)


# --- layers as jax dumped them -------------------------------------------------------------------

# every layer on both targets (AMX: convolutions as the GEMMs of their im2col matrices, conv_conv
# a chain of two; Gemmini: PyTorch-layout weights through B_transpose, the s8 dot's low byte
# through a staged store)
_PAIRS = [(p, t) for t in ("gemmini", "amx") for p in sorted(LAYERS.glob("*.hlo"))]


@pytest.mark.parametrize(("path", "target"), _PAIRS, ids=lambda x: x.stem if isinstance(x, Path) else x)
def test_jax_layers_compile_and_check_bit_for_bit(path: Path, target: str) -> None:
    g = parse_hlo(path.read_text(), str(path))
    res = compile(g, target)
    assert res.stats.middle, f"{path.name}: not tiled by the middle end"
    v = check_program(g, res.acc, res.program, 2, 0, backend="sim")
    assert v.outcome == "pass", (v.symptom, v.reason)


def test_jax_linear_layer_is_the_gemm_with_its_tail() -> None:
    g = parse_hlo((LAYERS / "linear_relu.pre.hlo").read_text())
    layer = recognize(canonicalize(g, rules_for(load_target("gemmini")).gate).graph)
    assert layer is not None
    assert (layer.m, layer.k, layer.n, layer.bias, layer.tail.scale, layer.tail.relu) == (33, 70, 45, 2, 0.0625, True)


@pytest.mark.parametrize("path", sorted(LAYERS.glob("*.hlo")), ids=lambda p: p.stem)
def test_canonical_graph_evaluates_to_the_users_graph(path: Path) -> None:
    """Every jax dump, canonical or not, has the reference's value bit for bit (edge inputs)."""
    g = parse_hlo(path.read_text(), str(path))
    c = canonicalize(g, rules_for(load_target("gemmini")).gate)
    for seed in range(2):
        _same(g, c.graph, seed)


