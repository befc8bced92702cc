"""Concatenate in the tiling (:mod:`compilers.act.phase1.tiling`, seed 000 §5.2.3): no instruction
computes it, but concat^H does. A demand on a concatenate's bytes that come from one operand is
that operand's demand; one that spans several is split into concat^H pieces, each written at
its place in HBM (a piece that is an input's bytes is copied there); a constant piece of an
output lies in the output, not above it. Each kernel here exited 3 before ("no instruction
computes concatenate ...") and now compiles to a program equal to the reference bit for bit."""

from __future__ import annotations

import pytest

from check.run import check_program
from compilers.act import compile_graph
from compilers.compile import rules_for
from compilers.targets import load_target
from semantics.hlo_parser import parse_hlo


def _proven(acc):  # noqa: ANN001, ANN202
    return rules_for(acc)


_KERNELS = {
    # two inputs side by side: each piece an input's bytes, copied into the output
    "inputs_dim0": ("gemmini", """
  p0 = s32[3] parameter(0)
  p1 = s32[1] parameter(1)
  ROOT c = s32[4] concatenate(p1, p0), dimensions={0}"""),
    # a constant piece of the output (the constant section at the output's place)
    "constant_and_input": ("gemmini", """
  k = s8[2] constant({63, -28})
  p0 = s8[2] parameter(0)
  ROOT c = s8[4] concatenate(k, p0), dimensions={0}"""),
    # a piece constant only by algebra (q - q): in HBM it is read as constant bytes
    # (Forms.leaf_view), the constant section at the output's place
    # (s32: the first-use proof of the s8 rank-2 row-slice layout rule takes 300 s, its symbolic
    # query timing out before the bounded one; s32's takes 0.6 s)
    "algebraic_zero_piece": ("gemmini", """
  p = s32[4,4] parameter(0)
  q = s32[4,4] parameter(1)
  d = s32[4,4] subtract(q, q)
  ROOT r = s32[8,4] concatenate(p, d), dimensions={0}"""),
    # along the last dimension: each operand a strided column block of the output
    "inputs_dim1": ("gemmini", """
  p0 = s8[3,2,2] parameter(0)
  r1 = s8[6,1,2] reshape(p0)
  r2 = s8[2,6] reshape(r1)
  p1 = s8[2,1] parameter(1)
  p2 = s8[2,4] parameter(2)
  ROOT c = s8[2,11] concatenate(r2, p2, p1), dimensions={1}"""),
    # a slice of a concatenate that reads one operand only: that operand's slice
    "slice_of_concat": ("gemmini", """
  p0 = s8[3,3,5] parameter(0)
  p1 = s8[3,3,4] parameter(1)
  c = s8[3,3,9] concatenate(p1, p0), dimensions={2}
  ROOT s = s8[2,1,3] slice(c), slice={[1:3], [1:2:3], [4:7]}"""),
    # equal pieces of a broadcast output: two writes, not one value at two places
    "repeated_pieces_amx": ("amx", """
  p0 = f32[4,5,1] parameter(0)
  r = f32[4,1,5] reshape(p0)
  b = f32[4,2,4,5] broadcast(r), dimensions={0,2,3}
  t = f32[5,4,2,4] transpose(b), dimensions={3,0,1,2}
  ROOT s = f32[1,2,1,2] slice(t), slice={[2:3:3], [1:4:2], [0:1:2], [1:4:2]}"""),
}


@pytest.mark.parametrize("name", sorted(_KERNELS))
def test_concatenate_compiles_and_checks(name: str) -> None:
    target, body = _KERNELS[name]
    g = parse_hlo(f"HloModule {name}\nENTRY e {{{body}\n}}\n", name)
    acc = load_target(target)
    res = compile_graph(g, acc, rules=_proven(acc))
    assert len(res.program) > 0
    chk = check_program(g, acc, res.program, 3, seed=7)
    assert chk.ok, chk.message


def test_a_constant_piece_lies_in_the_output() -> None:
    """constant ++ input: the constant's bytes are placed at the output's first two bytes (the
    constant section overlaps the output) and the copy writes the next two."""
    target, body = _KERNELS["constant_and_input"]
    g = parse_hlo(f"HloModule k\nENTRY e {{{body}\n}}\n", "k")
    acc = load_target(target)
    prog = compile_graph(g, acc, rules=_proven(acc)).program
    out = prog.outputs[0].addr
    assert (out, bytes([63, 256 - 28])) in prog.constants
