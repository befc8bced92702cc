"""Compile-time constants that the rewrites make (:mod:`compilers.act.phase1.fold`, seed 000 §5.3): a
class that a rewrite unites with a literal makes its users constant, and they get the literal
the reference interpreter gives them, so a kernel whose output is constant only by algebra
compiles to its constant section."""

from __future__ import annotations

import numpy as np
import pytest

from check.run import check_program
from compilers.act import compile_graph
from compilers.act.egraph import NodeInfo
from compilers.act.phase1.fold import evaluate
from compilers.act.phase1.rewrite import IrRules
from compilers.act.egraph.terms import canon_attrs, eval_op, region_of
from compilers.compile import rules_for
from compilers.targets import load_target
from semantics.dtypes import DTYPES
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.types import TensorType
from tests.paths import PAPER, ACT_CORPUS

CORPUS = ACT_CORPUS

_ZERO_BY_ALGEBRA = """HloModule zero_by_algebra

sum_s8 {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT s = s8[] add(a, b)
}

ENTRY main {
  p = s8[16,16] parameter(0)
  two = s8[16,16] add(p, p)
  d = s8[16,16] subtract(two, two)
  lo = s8[] constant(-3)
  hi = s8[] constant(5)
  c = s8[16,16] clamp(lo, d, hi)
  z = s8[] constant(7)
  ROOT r = s8[16] reduce(c, z), dimensions={0}, to_apply=sum_s8
}
"""


def _proven(acc):  # noqa: ANN001, ANN202
    return rules_for(acc)


def test_an_output_constant_by_algebra_compiles_to_its_constant() -> None:
    """(p + p) - (p + p) is 0 only by ``subtract(x, x) => 0``; the clamp and the reduce above it
    are then folded (the reduce through its region): the output, 7 everywhere, is the constant
    section and no instruction."""
    g = parse_hlo(_ZERO_BY_ALGEBRA, "zero_by_algebra")
    acc = load_target("gemmini")
    res = compile_graph(g, acc, rules=_proven(acc))
    assert len(res.program) == 0
    ((addr, data),) = res.program.constants
    assert addr == res.program.outputs[0].addr and data == bytes([7]) * 16
    chk = check_program(g, acc, res.program, 3, seed=1)
    assert chk.ok, chk.message


@pytest.mark.parametrize("name,why", [
    ("fuzz_002", "subtract_2 = add_1 - add_1 is 0 by subtract(x, x) => 0"),
    ("fuzz_003", "add_1 = negate(add_4) + add_4 is 0 by add(x, negate(x)) => 0 after commutativity "
                 "(with wraparound: negate(-128) = -128 and -128 + -128 = 0)"),
])
def test_fuzz_kernels_constant_by_algebra(name: str, why: str) -> None:
    """act-gemmini-fuzz kernels whose reduced output is 0 by algebra: every add under it
    wraps, which Gemmini cannot compute, but none of it is needed. 0 instructions, checked."""
    g = parse_file(CORPUS / "act-gemmini-fuzz" / f"{name}.gen.hlo")
    acc = load_target("gemmini")
    res = compile_graph(g, acc, rules=_proven(acc))
    assert len(res.program) == 0, why
    chk = check_program(g, acc, res.program, 3, seed=2)
    assert chk.ok, chk.message


def test_evaluate_is_the_interpreters_operator() -> None:
    """An e-node's value is the reference interpreter's for the same operator, a reduce's region
    included (found by its content key)."""
    g = parse_hlo(_ZERO_BY_ALGEBRA, "zero_by_algebra")
    comp = g.entry
    ins = {i.name: i for i in comp.instructions}
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    init = np.array(7, dtype=np.int8)
    r = ins["r"]
    attrs = canon_attrs(g, r)
    key = dict(attrs)["to_apply"]
    assert region_of(key) is not None
    info = NodeInfo("op", "reduce", attrs, TensorType(r.tensor_type.dtype, r.tensor_type.shape))
    s8 = [DTYPES["s8"]] * 2
    got = evaluate(info, [x, init], s8)
    assert got is not None and got.dtype == np.int8 and np.array_equal(got, eval_op(g, r, [x, init], s8))
    sub = ins["d"]
    info = NodeInfo("op", "subtract", canon_attrs(g, sub), sub.tensor_type)
    y = x[::-1].copy()
    assert np.array_equal(evaluate(info, [x, y], s8), eval_op(g, sub, [x, y], s8))


def test_evaluate_declines_what_it_cannot_evaluate() -> None:
    """An unknown region key, or operands the operator rejects, fold nothing (None)."""
    t = TensorType(DTYPES["s8"], (16,))
    info = NodeInfo("op", "reduce", (("dimensions", (0,)), ("to_apply", "region[never-lowered]")), t)
    x = np.zeros((16, 16), np.int8)
    assert evaluate(info, [x, np.array(0, np.int8)], [t.dtype, t.dtype]) is None
    bad = NodeInfo("op", "add", (), TensorType(t.dtype, (4,)))
    assert evaluate(bad, [np.zeros(3, np.int8), np.zeros(5, np.int8)], [t.dtype, t.dtype]) is None


@pytest.mark.parametrize("name", ["gemmini_mac", "composite_add_mm"])
def test_paper_kernels_keep_their_programs_checked(name: str) -> None:
    """Folding does not stop the paper kernels from compiling and checking."""
    g = parse_file(PAPER / f"{name}.hlo")
    acc = load_target("gemmini")
    res = compile_graph(g, acc, rules=_proven(acc))
    assert len(res.program) > 0
    assert check_program(g, acc, res.program, 2, seed=3).ok


def test_ground_dropping_rules_run_forward() -> None:
    """Saturation runs the rules that drop a variable for a constant (they make classes
    constant) or for one of their variables (they unite two classes), and leaves the others to
    pattern normalization."""
    from compilers.act.phase1.instantiate import _forward

    rules = IrRules.for_target(load_target("gemmini"))
    insts = rules.insts.ordered({("s8", 2), ("pred", 2)}, "shrinking")
    by_name = {}
    for i in insts:
        by_name.setdefault(i.rule.name, i)
    assert _forward(by_name["subtract(x, x) => 0"])
    assert _forward(by_name["multiply(x, 0) => 0"])
    assert _forward(by_name["select(p, a, a) => a"])
    assert not _forward(by_name["clamp(broadcast(a), x, broadcast(a)) => broadcast(a)"])
    forward = {i.rule.name for i in rules.insts.ordered({("s8", 2)}, "forward")}
    assert {"subtract(x, x) => 0", "add(x, subtract(y, x)) => y"} <= forward
    assert "clamp(broadcast(a), x, broadcast(a)) => broadcast(a)" not in forward
