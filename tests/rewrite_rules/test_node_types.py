"""Rule-language node types (rewrite_rules/node_types.py) come from the operator table's shape rules
and agree with the prover's symbolic encoding of the same nodes, on every instantiation of the
XLA simplifier's text rules and the library's rules; the concrete shape rules are those the
graph builder checks (a pattern instantiated at concrete sizes types as its graph does)."""

from __future__ import annotations

import z3

from rewrite_rules.dsl import Op
from rewrite_rules.library import load
from rewrite_rules.node_types import NotTypable, node_type
from rewrite_rules.text import parse_rules
from tests.paths import REPO
from verif.symbolic import Encoder, NotSymbolic


def _same(a: object, b: object) -> bool:
    """Equal for every value of the symbols (z3 finds no assignment where they differ)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a_, b_ = (z3.IntVal(x) if isinstance(x, int) else x for x in (a, b))
    if a_.eq(b_) or z3.is_true(z3.simplify(a_ == b_)):
        return True
    s = z3.Solver()
    s.add(z3.IntVal(a) != b if isinstance(a, int) else a != b)
    return s.check() == z3.unsat


def _nodes(n: object) -> list:
    out = [n]
    if isinstance(n, Op):
        for a in n.args:
            out += _nodes(a)
    return out


def _agree(rules: list) -> int:
    checked = 0
    for r in rules:
        for dt in r.dtypes:
            for rank in r.ranks or (1, 2, 3):
                c, lhs, rhs, _ = r.instantiate(dt, rank)
                for n in _nodes(lhs) + _nodes(rhs):
                    try:
                        want = Encoder(c.dtype, shapes_only=True).encode(n)
                    except NotSymbolic:
                        continue
                    try:
                        got = node_type(n, c.dtype)
                    except NotTypable:
                        continue
                    assert got.dtype == want.dtype, (r.name, dt, rank, n)
                    assert len(got.shape) == len(want.shape) and all(
                        _same(a, b) for a, b in zip(got.shape, want.shape, strict=True)), (r.name, dt, rank, n)
                    checked += 1
    return checked


def test_text_rules_type_as_the_prover_encodes_them() -> None:
    rules = parse_rules((REPO / "rewrite_rules" / "xla_simplifier.txt").read_text(), file="xla_simplifier.txt")
    assert _agree(rules) > 1000


def test_library_rules_type_as_the_prover_encodes_them() -> None:
    assert _agree(list(load().values())) > 3000
