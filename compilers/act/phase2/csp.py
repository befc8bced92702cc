"""The CSP of Module 5 (seed 000 §6.2, appendix C.5) in CP-SAT terms: the pieces
:func:`.allocate.solve` states its model with.

What belongs here: CSP3's HBM placements (:class:`Layout`, :func:`hbm_layout`), the translation
of description expressions into CP-SAT terms (:class:`_Lin`: CSP1's e_θ(α, β) and the slices
h_θ^(i)(β)), CSP4's disjointness (:class:`_Apart1D`, :func:`_apart`, :func:`clique_cover`,
:func:`_outside`), the bounds a solution cannot leave (:func:`_hbm_hulls`, :func:`_beta_bounds`)
and :class:`_Model`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ortools.sat.python import cp_model

from semantics.layout import byte_size
from semantics.types import TensorType

from ...expr import BinOp, BoolOp, Call, Compare, Const, Expr, Not, Var
from ...isa import HBM, Accelerator
from ...program import Placement
from ..pii import PiiGraph

__all__ = ["ALIGN", "Layout", "hbm_layout", "clique_cover"]

ALIGN = 64
_FAR = 1 << 40


@dataclass
class Layout:
    """CSP3: where inputs and outputs live in HBM, and where free HBM space starts."""

    inputs: list[Placement]
    outputs: list[Placement]
    free_start: int


def hbm_layout(inputs: Sequence[TensorType], outputs: Sequence[TensorType], start: int = ALIGN) -> Layout:
    at = start
    ins, outs = [], []
    for i, t in enumerate(inputs):
        ins.append(Placement(i, at, t))
        at += -(-byte_size(t) // ALIGN) * ALIGN
    for i, t in enumerate(outputs):
        outs.append(Placement(i, at, t))
        at += -(-byte_size(t) // ALIGN) * ALIGN
    return Layout(ins, outs, at)


class _Lin:
    """Translate description expressions (α substituted) to CP-SAT terms over β variables."""

    def __init__(self, m: cp_model.CpModel, env: dict[str, object], apart: _Apart1D | None = None) -> None:
        self.m = m
        self.env = env
        self.apart = apart      # where ``x != y`` is stated (with CSP4's register pairs) if given

    def int(self, e: Expr):  # noqa: ANN201
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Var):
            return self.env[e.name]
        if isinstance(e, BinOp):
            a, b = self.int(e.lhs), self.int(e.rhs)
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                if isinstance(a, int) or isinstance(b, int):
                    return a * b
                raise ValueError(f"non-linear {e}")
            if isinstance(a, int) and isinstance(b, int):
                return BinOp(e.op, Const(a), Const(b)).eval({})   # both known: fold
            if e.op == "//" and isinstance(b, int):
                q = self.m.new_int_var(-(1 << 40), 1 << 40, "")
                self.m.add_division_equality(q, a, b)
                return q
            raise ValueError(f"unsupported {e}")
        if isinstance(e, Call):
            vals = [self.int(a) for a in e.args]
            if all(isinstance(v, int) for v in vals):
                return min(vals) if e.fn == "min" else max(vals)
            r = self.m.new_int_var(-(1 << 40), 1 << 40, "")
            (self.m.add_min_equality if e.fn == "min" else self.m.add_max_equality)(r, vals)
            return r
        raise ValueError(f"unsupported {e}")

    def require(self, e: Expr) -> bool:
        """Add ``e`` as a hard constraint: a comparison (or a conjunction of them) as linear
        constraints, anything else through :meth:`bool`. False when it cannot hold (both sides
        known and the comparison false). The same feasible set as ``add_bool_and([bool(e)])``
        without a literal per comparison and its two reified halves, which CP-SAT's presolve
        otherwise has to fold away (most of the solve time on the AMX kernels)."""
        if isinstance(e, Compare):
            a, b = self.int(e.lhs), self.int(e.rhs)
            if isinstance(a, int) and isinstance(b, int):
                return bool(Compare(e.op, Const(a), Const(b)).eval({}))
            if e.op == "!=" and self.apart is not None:
                return self.apart.differ(a, b)
            self.m.add({"<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b,
                        ">=": lambda: a >= b, "==": lambda: a == b, "!=": lambda: a != b}[e.op]())
            return True
        if isinstance(e, BoolOp) and e.op == "and":
            return all([self.require(x) for x in e.args])
        lit = self.bool(e)
        if lit is True or lit is False:
            return lit
        self.m.add_bool_and([lit])
        return True

    def bool(self, e: Expr):  # noqa: ANN201
        """A literal (BoolVar) or a Python bool."""
        if isinstance(e, Compare):
            a, b = self.int(e.lhs), self.int(e.rhs)
            if isinstance(a, int) and isinstance(b, int):
                return bool(Compare(e.op, Const(a), Const(b)).eval({}))
            lit = self.m.new_bool_var("")
            ops = {"<": (lambda: a < b, lambda: a >= b), "<=": (lambda: a <= b, lambda: a > b),
                   ">": (lambda: a > b, lambda: a <= b), ">=": (lambda: a >= b, lambda: a < b),
                   "==": (lambda: a == b, lambda: a != b), "!=": (lambda: a != b, lambda: a == b)}[e.op]
            self.m.add(ops[0]()).only_enforce_if(lit)
            self.m.add(ops[1]()).only_enforce_if(lit.negated())
            return lit
        if isinstance(e, BoolOp):
            parts = [self.bool(a) for a in e.args]
            consts = [p for p in parts if isinstance(p, bool)]
            lits = [p for p in parts if not isinstance(p, bool)]
            if e.op == "and":
                if any(c is False for c in consts):
                    return False
                if not lits:
                    return True
                r = self.m.new_bool_var("")
                self.m.add_bool_and(lits).only_enforce_if(r)
                self.m.add_bool_or([x.negated() for x in lits]).only_enforce_if(r.negated())
                return r
            if any(c is True for c in consts):
                return True
            if not lits:
                return False
            r = self.m.new_bool_var("")
            self.m.add_bool_or(lits).only_enforce_if(r)
            self.m.add_bool_and([x.negated() for x in lits]).only_enforce_if(r.negated())
            return r
        if isinstance(e, Not):
            p = self.bool(e.arg)
            return (not p) if isinstance(p, bool) else p.negated()
        v = self.int(e)
        if isinstance(v, int):
            return v != 0
        lit = self.m.new_bool_var("")
        self.m.add(v != 0).only_enforce_if(lit)
        self.m.add(v == 0).only_enforce_if(lit.negated())
        return lit


class _Apart1D:
    """CSP4 for pairs in one-dimensional buffers: [sa, sa + la) and [sb, sb + lb) disjoint.

    Where a start is known the disjunction needs no literals: two known regions are apart
    (nothing to add) or cannot be (:meth:`add` is False: the order is infeasible); one known
    region forbids the other start the integers in (fx - vl, fx + fl). The forbidden ranges of
    one start expression are gathered and, at :meth:`close`, made one domain constraint (the
    complement of their union): the same feasible set as a constraint per pair, which is most
    of CSP4 (an input's fixed slice against every HBM value live with it) and most of what
    CP-SAT's presolve read on the AMX kernels. Two unknown starts of one slot each (registers)
    must differ: the pairs are gathered too and, at :meth:`close`, stated as ``all_different``
    over a clique cover of their graph (:func:`clique_cover`; the same feasible set). As
    ``x != y`` constraints, CP-SAT's presolve expanded each into clauses over new literals
    (amx_k5: 376 literals, ~2,600 rule applications) before finding the cliques itself; with
    :func:`solve`'s ``max_alldiff_domain_size`` the cliques stay propagators. Other unknown
    pairs take one literal: which of the two comes first."""

    def __init__(self, m: cp_model.CpModel) -> None:
        self.m = m
        self.forbid: dict[int, tuple[Any, list[tuple[int, int]]]] = {}   # id(expr) -> (expr, ranges)
        self.pairs: dict[tuple[int, int], tuple[Any, Any]] = {}   # (index, index) -> variables that differ

    def add(self, sa, la: int, sb, lb: int) -> bool:  # noqa: ANN001
        if isinstance(sa, int) and isinstance(sb, int):
            return sa + la <= sb or sb + lb <= sa
        if isinstance(sa, int) or isinstance(sb, int):
            fx, fl, var, vl = (sa, la, sb, lb) if isinstance(sa, int) else (sb, lb, sa, la)
            if fx - vl + 1 <= fx + fl - 1:      # var + vl <= fx  or  fx + fl <= var
                self.forbid.setdefault(id(var), (var, []))[1].append((fx - vl + 1, fx + fl - 1))
            return True
        m = self.m
        if la == 1 and lb == 1:                 # one slot each (a register): different slots
            return self.differ(sa, sb)
        x = m.new_bool_var("")                 # which side holds: A or B, as with a literal per side
        m.add(sa + la <= sb).only_enforce_if(x)
        m.add(sb + lb <= sa).only_enforce_if(x.negated())
        return True

    def differ(self, x, y) -> bool:  # noqa: ANN001
        """``x != y``; False where it cannot hold (one variable, as CSP2 made two values' registers)."""
        if not (isinstance(x, cp_model.IntVar) and isinstance(y, cp_model.IntVar)):
            self.m.add(x != y)
            return True
        if x is y:
            return False
        pair = (x.index, y.index) if x.index < y.index else (y.index, x.index)
        self.pairs.setdefault(pair, (x, y))     # stated once for any number of value pairs
        return True

    def close(self) -> None:
        by_index = {x.index: x for pair in self.pairs.values() for x in pair}
        for clique in clique_cover(self.pairs):
            self.m.add_all_different([by_index[i] for i in clique])
        self.pairs.clear()
        for var, ranges in self.forbid.values():
            self.m.add_linear_expression_in_domain(var, cp_model.Domain.from_intervals(_outside(ranges)))
        self.forbid.clear()


def clique_cover(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Cliques of the graph ``edges`` (pairs ``(a, b)``, ``a < b``) that together hold every
    edge, each clique's vertices ascending: ``x != y`` for every edge is ``all_different`` of
    every clique, the same feasible set. Greedy and deterministic: the least uncovered edge,
    grown by each common neighbour in ascending order."""
    adj: dict[int, set[int]] = {}
    todo = sorted(set(edges))
    for a, b in todo:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    covered: set[tuple[int, int]] = set()
    out: list[list[int]] = []
    for a, b in todo:
        if (a, b) in covered:
            continue
        clique = [a, b]
        cand = adj[a] & adj[b]
        while cand:
            v = min(cand)
            clique.append(v)
            cand &= adj[v]
        clique.sort()
        covered.update(combinations(clique, 2))
        out.append(clique)
    return out


def _outside(ranges: list[tuple[int, int]]) -> list[list[int]]:
    """The integers in [-_FAR, _FAR] outside every closed range ``(lo, hi)``, as sorted disjoint
    closed intervals."""
    out: list[list[int]] = []
    at = -_FAR
    for lo, hi in sorted(ranges):
        if lo > at:
            out.append([at, lo - 1])
        at = max(at, hi + 1)
    if at <= _FAR:
        out.append([at, _FAR])
    return out


def _apart(m: cp_model.CpModel, apart: _Apart1D, sa: list, la: list[int], sb: list, lb: list[int]) -> bool:
    """CSP4 for one pair of regions (start and length per dimension): disjoint in some
    dimension. A dimension where both starts are known is decided here: apart there, the pair
    is (nothing to add); overlapping, that side of the disjunction cannot hold and is left out.
    One dimension left is a one-dimensional pair (:class:`_Apart1D`; an AMX tile: two tiles of
    one register each must differ); none left, the pair cannot be apart (False: the order is
    infeasible). Otherwise a literal per side per dimension, at least one true."""
    dims = []
    for x, lx, y, ly in zip(sa, la, sb, lb, strict=True):
        if isinstance(x, int) and isinstance(y, int):
            if x + lx <= y or y + ly <= x:
                return True
            continue
        dims.append((x, lx, y, ly))
    if len(dims) <= 1:
        return bool(dims) and apart.add(*dims[0])
    lits = []
    for x, lx, y, ly in dims:
        p, q = m.new_bool_var(""), m.new_bool_var("")
        m.add(x + lx <= y).only_enforce_if(p)
        m.add(y + ly <= x).only_enforce_if(q)
        lits += [p, q]
    m.add_bool_or(lits)
    return True


def _hbm_hulls(g: PiiGraph, lay: Layout, group: dict[int, int], start: dict[int, list],
               length: dict[int, list[int]], hbm: int) -> dict[int, tuple[int, int]]:
    """Byte ranges [lo, hi) that each HBM value's region lies in whatever the solution, from the
    constraints :func:`solve` states before CSP4: an input slice is where it is; a value of an
    output's alias group (the output, or a piece of the output's concat^H) lies in the output's
    placement (CSP3); staging areas and constants that are not outputs lie above the inputs and
    outputs (from ``lay.free_start``). Two values whose ranges are apart need no CSP4 constraint:
    on amx_k5, 1,840 of its 2,503 pairs (every input slice against the staging areas and the
    outputs), each a forbidden range CP-SAT's presolve read. An output's range holds its group
    only where the group is the output and the pieces nested in it (a group with two roots, or
    with a concat^H around the output, has no range here)."""
    roots: dict[int, list[int]] = {}
    members: dict[int, int] = {}
    for n in g.nodes:
        members[group[n.id]] = members.get(group[n.id], 0) + 1
    for r in g.roots:
        roots.setdefault(group[r], []).append(r)

    # v and the pieces nested in it (a loop: a recursive closure is a cycle for the collector)
    def nested(v: int) -> set[int]:
        seen, todo = {v}, [v]
        while todo:
            n = g.nodes[todo.pop()]
            if n.kind == "concat":
                for o in n.operands:
                    if o is not None and o not in seen:
                        seen.add(o)
                        todo.append(o)
        return seen

    out: dict[int, tuple[int, int]] = {}
    for r, pl in zip(g.roots, lay.outputs, strict=True):
        if (len(roots[group[r]]) == 1 and g.nodes[r].kind in ("pii", "concat", "const")
                and len(nested(r)) == members[group[r]]):
            out[group[r]] = (pl.addr, pl.addr + length[r][0])
    hull: dict[int, tuple[int, int]] = {}
    for node in g.nodes:
        if node.buffer != HBM:
            continue
        v = node.id
        if node.kind == "input":
            hull[v] = (start[v][0], start[v][0] + length[v][0])
        elif group[v] in out:
            hull[v] = out[group[v]]
        elif group[v] not in roots:
            hull[v] = (lay.free_start, hbm)
    return hull


def _beta_bounds_of(memo: dict[tuple[str, Any], dict[str, int]], acc: Accelerator, instr: str,
                    alpha: Any) -> dict[str, int]:
    """:func:`_beta_bounds` of a pii (``alpha``: its α items), computed once per description,
    instruction and α (a pure function of them; a kernel has many piis of one α): ``memo`` is
    the description's (its :class:`~compilers.act.context.TargetContext` memo ``beta_bounds``)."""
    key = (instr, alpha)
    out = memo.get(key)
    if out is None:
        out = memo[key] = _beta_bounds(acc, acc.instructions[instr], dict(alpha))
    return out


def _beta_bounds(acc: Accelerator, ins: Any, alpha: dict[str, int]) -> dict[str, int]:
    """Per β attribute, the largest value its domain needs: the largest first-dimension access
    of the instruction's buffers, and where the attribute is a slice's start in a dimension by
    itself, no more than that dimension's size less the slice's length (CSP1's bounds, stated
    as the variable's domain rather than as constraints: a register number in [0, 7], not in
    [0, 2^20] with a constraint). A bound below 0 is left to the constraints (the CSP then
    fails as before)."""
    specs = (*ins.inputs, ins.output)
    top = max(acc.buffers[s.buffer].access[0] for s in specs)
    hi = dict.fromkeys(ins.beta, top)
    for sp in specs:
        for st, ln, size in zip(sp.start, sp.length, acc.buffers[sp.buffer].access, strict=True):
            if isinstance(st, Var) and st.name in hi:
                b = size - int(ln.eval(alpha))
                if 0 <= b < hi[st.name]:
                    hi[st.name] = b
    return hi


class _Model(cp_model.CpModel):
    """A CP-SAT model without OR-Tools' pre-PEP 8 aliases: its constructor binds ~60 wrappers of
    its own methods to the instance (``AddAllDifferent`` for ``add_all_different``...), a
    reference cycle per model that only the cyclic collector frees, and ~0.2 ms of ``dir`` and
    ``getattr``. Nothing here uses those names (an OR-Tools without the hook only makes this
    override unused)."""

    def _add_pre_pep8_methods(self) -> None:
        pass
