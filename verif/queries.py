"""Cheaper forms of the prover's queries, each a sound shortcut for an UNSAT answer only.

* :func:`elements_unsat`: the element part of a symbolic query (``L.at(i) != R.at(i)``) with
  every term that reads the index/size arithmetic (a tensor's element ``x(i0, i1)``, an index
  comparison ``i0 < n``, an ``iota`` value) replaced by a fresh constant of its sort, the same
  constant for the same term. The result is a quantifier-free bit-vector/float formula that z3
  bit-blasts; it over-approximates the query (every model of the query gives one of it), so
  *unsat* proves the element part for every size and index. *sat* or *unknown* proves nothing:
  the caller then asks the full query. For elementwise rules this is the whole proof, without the
  integer/uninterpreted-function search that makes the full query slow.
* :class:`QueryMemo`: queries that are equal up to the names of their free constants (a dot's
  output elements, the same element at a larger instance, a rule's ranks) are solved once per
  process; only *unsat* answers are remembered.

Both keep every verdict: a shortcut answers only what the full query would answer (unsat), and
everything else goes to the full query as before.
"""

from __future__ import annotations

import z3

from .limits import Limits, check, solver

__all__ = ["abstract_indices", "elements_unsat", "QueryMemo", "MEMO"]


def _arith(e: z3.ExprRef) -> bool:
    return e.sort_kind() in (z3.Z3_INT_SORT, z3.Z3_REAL_SORT)


def abstract_indices(t: z3.ExprRef) -> z3.ExprRef | None:
    """``t`` with every non-arithmetic term that has an arithmetic argument replaced by a fresh
    constant (numbered in first-appearance order, so equal shapes give equal formulas); None
    when an arithmetic term is left over (the root itself arithmetic)."""
    if _arith(t):
        return None
    subs: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
    seen: set[int] = set()
    stack = [t]
    while stack:
        e = stack.pop()
        k = e.get_id()
        if k in seen:
            continue
        seen.add(k)
        if not z3.is_app(e):
            return None   # quantifier or bound variable: not handled
        ch = e.children()
        if any(_arith(c) for c in ch):
            subs[k] = (e, z3.Const(f"_q{len(subs)}", e.sort()))
            continue
        stack.extend(reversed(ch))
    if not subs:
        return t
    return z3.substitute(t, *subs.values())


class QueryMemo:
    """Unsat answers of formulas, keyed by the formula with its free constants renamed in
    first-appearance order (so alpha-equivalent formulas share an answer)."""

    def __init__(self, limit: int = 20000) -> None:
        self._unsat: dict[str, bool] = {}
        self.limit = limit
        self.hits = 0

    @staticmethod
    def canonical(f: z3.ExprRef) -> str:
        consts: dict[int, z3.ExprRef] = {}
        seen: set[int] = set()
        stack = [f]
        while stack:
            e = stack.pop()
            k = e.get_id()
            if k in seen:
                continue
            seen.add(k)
            if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                consts.setdefault(k, e)
                continue
            stack.extend(reversed(e.children()))
        pairs = [(c, z3.Const(f"_c{n}", c.sort())) for n, c in enumerate(consts.values())]
        g = z3.substitute(f, *pairs) if pairs else f
        return g.sexpr()

    def known_unsat(self, key: str) -> bool:
        hit = key in self._unsat
        self.hits += hit
        return hit

    def add_unsat(self, key: str) -> None:
        if len(self._unsat) < self.limit:
            self._unsat[key] = True


MEMO = QueryMemo()


def elements_unsat(diff: z3.ExprRef, lim: Limits) -> bool:
    """True when ``diff`` (a Boolean over the symbolic encoding) is unsat by its index-free
    abstraction (see the module docstring); False means: ask the full query."""
    a = abstract_indices(z3.simplify(diff))
    if a is None:
        return False
    a = z3.simplify(a)
    if z3.is_false(a):
        return True
    key = MEMO.canonical(a)
    if MEMO.known_unsat(key):
        return True
    s = solver(lim)
    s.add(a)
    r = check(s)
    if r == z3.unsat:
        MEMO.add_unsat(key)
        return True
    return False
