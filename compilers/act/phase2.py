"""Phase 2 of Act: scheduling and memory allocation (seed 000 §6, appendix C.4-C.6).

- Module 4 (:func:`su_order`, :func:`orders`): a topological order by the extended Sethi-Ullman
  numbering of C.4 (esun_d(y) = max(mem_d(y), min_i τ_d(x_i)), τ_d(x_i) = esun_d(x_i) +
  Σ_{j≠i} mem_d(x_j); operands visited in decreasing max_d τ_d(x_i)/|d|), then other topological
  orders, skipping any whose interference graph contains one that already failed (§6.4.2:
  CSP4 is monotonic in the interference graph).
- Module 5 (:func:`solve`): CSP1 (e_θ(α, β) and the output slice h_θ^(0)(β)), CSP2 (each operand
  slice h_θ^(i)(β) is where its producer put it), CSP3 (inputs and outputs at their HBM
  placements) and CSP4 (slices in one buffer with overlapping live ranges are disjoint boxes, per
  access dimension: multi-dimensional buffers), solved by OR-Tools CP-SAT with one worker and a
  fixed seed (C.5: deterministic).
- Module 6 (:func:`emit`): the concrete instruction stream (identity piis dropped) and the
  constant section (C.6: constants are disjoint, concatenated into d0).

Identity nodes (slice^H of an input, concat^H; :mod:`.tiling`) emit nothing: an input slice is at
its input's placement plus its offset, a concat^H's pieces at its region's start plus theirs
(CSP2), values of one alias group (:func:`alias_groups`) share memory by construction and are
not CSP4 pairs, and a concat^H lives from its first piece's write to its last use. Register
shapes fixed per program (the description's ``config``) keep differently shaped uses of one
register file on different registers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ortools.sat.python import cp_model

from semantics.layout import byte_size
from semantics.types import TensorType

from ..expr import BinOp, BoolOp, Call, Compare, Const, Expr, Not, Var
from ..isa import HBM, Accelerator
from ..program import Concrete, Placement, Program
from .phase1 import PiiGraph

__all__ = ["su_order", "orders", "fuse", "Layout", "hbm_layout", "solve", "emit", "Allocation"]

ALIGN = 64
_FAR = 1 << 40
OPTIMIZE_MAX = 40      # pii graphs up to this size get the low-address objective


def _mem(acc: Accelerator, g: PiiGraph, v: int) -> tuple[str, int]:
    n = g.nodes[v]
    t = n.type
    assert t is not None
    return n.buffer, t.size * t.dtype.nbytes


def deps(g: PiiGraph, v: int) -> list[int]:
    """The pii producers ``v`` reads, looking through concat^H (identity) nodes."""
    out: list[int] = []
    for o in g.nodes[v].operands:
        if o is None:
            continue
        k = g.nodes[o].kind
        if k == "pii":
            out.append(o)
        elif k == "concat":
            out.extend(x for x in deps(g, o) if x not in out)
    return out


def alias_groups(g: PiiGraph) -> dict[int, int]:
    """Values that share memory by construction (identity instructions): slices of one input,
    and a concat^H with its pieces. Maps node id -> group representative."""
    uf = _Same()
    first_input: dict[int, int] = {}
    for n in g.nodes:
        if n.kind == "input":
            uf.union(n.id, first_input.setdefault(n.input_index, n.id))
        elif n.kind == "concat":
            for o in n.operands:
                if o is not None:
                    uf.union(o, n.id)
    return {n.id: uf.find(n.id) for n in g.nodes}


def su_order(acc: Accelerator, g: PiiGraph) -> list[int]:
    """Module 4: the extended Sethi-Ullman order of the pii nodes (C.4).

    ``esun(v)[d]``, per on-chip buffer ``d``, is the most of ``d`` that computing ``v`` needs:
    ``max(mem(v, d), min over operands i of esun(x_i)[d] + sum over the other operands of
    mem(x_j, d))``; a node's operands are visited in decreasing ``tau(i)``, the largest over
    the buffers of that sum relative to the buffer's size (ties: operand order). Each node's
    producers (:func:`deps`), sizes and numbers are computed once."""
    bufs = [b for b in acc.buffers if b != HBM]
    cap = [acc.buffers[d].nbytes for d in bufs]
    nb = len(bufs)
    ops_of: dict[int, list[int]] = {}
    mem: dict[int, list[int]] = {}
    esun: dict[int, list[int]] = {}

    def producers(v: int) -> list[int]:
        r = ops_of.get(v)
        if r is None:
            r = ops_of[v] = deps(g, v)
        return r

    def mem_of(v: int) -> list[int]:
        r = mem.get(v)
        if r is None:
            b, m = _mem(acc, g, v)
            r = mem[v] = [m if b == d else 0 for d in bufs]
        return r

    def number(v: int) -> list[int]:
        # a loop over the producers not yet numbered, children first (deep chains: no recursion)
        todo = [v]
        while todo:
            u = todo[-1]
            if u in esun:
                todo.pop()
                continue
            missing = [x for x in producers(u) if x not in esun]
            if missing:
                todo.extend(reversed(missing))
                continue
            todo.pop()
            ops = producers(u)
            ms = [mem_of(x) for x in ops]
            total = [sum(m[k] for m in ms) for k in range(nb)]
            own = mem_of(u)
            res = []
            for k in range(nb):
                taus = [esun[x][k] + total[k] - m[k] for x, m in zip(ops, ms, strict=True)]
                res.append(max(own[k], min(taus) if taus else 0))
            esun[u] = res
        return esun[v]

    order: list[int] = []
    done: set[int] = set()
    nodes = g.nodes
    # a depth-first visit (an explicit stack: a long chain of piis is no recursion limit)
    stack: list[tuple[int, Iterator[int] | None]] = [(r, None) for r in reversed(g.roots)]
    while stack:
        v, it = stack.pop()
        if it is None:
            kind = nodes[v].kind
            if kind == "concat":
                stack.extend((o, None) for o in reversed(producers(v)))
                continue
            if kind != "pii" or v in done:
                continue
            done.add(v)
            ops = producers(v)
            ms = [mem_of(x) for x in ops]
            total = [sum(m[k] for m in ms) for k in range(nb)]
            taus = []
            for x, m in zip(ops, ms, strict=True):
                e = number(x)
                best = 0.0
                for k in range(nb):
                    best = max(best, (e[k] + total[k] - m[k]) / cap[k])
                taus.append(best)
            it = iter(sorted(range(len(ops)), key=lambda i: (-taus[i], i)))
            stack.append((v, it))
            continue
        i = next(it, None)
        if i is None:
            order.append(v)
            continue
        stack.append((v, it))
        stack.append((producers(v)[i], None))
    return order


def fuse(acc: Accelerator, g: PiiGraph, order: list[int], _graph: tuple | None = None) -> list[int] | None:
    """Apply the description's adjacency (``followed_by`` / ``preceded_by``) to a topological
    order: an instruction that must be followed by its consumer is moved down to just before its
    earliest consumer; one that must follow its producer is moved up to just after it. None when
    the order cannot be repaired (the consumer is of the wrong kind, two fused pairs compete, or
    the move would break a dependency). ``_graph``: :func:`_fuse_facts` of ``g`` (the same for
    every order of it)."""
    if _graph is None or len(_graph[0]) != len(order):
        _graph = _fuse_facts(acc, g, order)     # an order of some piis only (Sethi-Ullman: the reachable ones)
    ops, users, instr, fused, never = _graph
    if not fused:
        return list(order)      # nothing to move, and a topological order stays one
    if never:
        return None             # a check below that reads the graph only, not the order, fails
    out = list(order)
    for v in order:
        ins = instr[v]
        if ins.followed_by:
            if not users[v]:
                return None
            out.remove(v)
            first = min(users[v], key=out.index)
            out.insert(out.index(first), v)
        if ins.preceded_by:
            prods = [o for o in ops[v] if instr[o].name in ins.preceded_by]
            if len(prods) != 1:
                return None
            out.remove(v)
            out.insert(out.index(prods[0]) + 1, v)
    pos = {v: i for i, v in enumerate(out)}
    for v in out:
        if any(pos[o] >= pos[v] for o in ops[v]):
            return None
        ins = instr[v]
        nxt = g.nodes[out[pos[v] + 1]].instr if pos[v] + 1 < len(out) else None
        prv = g.nodes[out[pos[v] - 1]].instr if pos[v] > 0 else None
        if (ins.followed_by and nxt not in ins.followed_by) or (ins.preceded_by and prv not in ins.preceded_by):
            return None
    return out


def _fuse_facts(acc: Accelerator, g: PiiGraph, piis: list[int]) -> tuple:
    """(producers, consumers, instruction definition per pii, whether any pii is fused, whether
    :func:`fuse` fails for every order of these piis: a pii that must be followed by a consumer
    has none, or one that must follow its producer has not exactly one of the allowed kinds)."""
    ops = {v: deps(g, v) for v in piis}
    users: dict[int, list[int]] = {v: [] for v in piis}
    for v in piis:
        for o in ops[v]:
            users[o].append(v)
    instr = {v: acc.instructions[g.nodes[v].instr] for v in piis}  # type: ignore[index]
    fused = any(i.followed_by or i.preceded_by for i in instr.values())
    never = any((i.followed_by and not users[v])
                or (i.preceded_by and sum(instr[o].name in i.preceded_by for o in ops[v]) != 1)
                for v, i in instr.items())
    return ops, users, instr, fused, never


def orders(acc: Accelerator, g: PiiGraph, limit: int = 64) -> Iterator[list[int]]:
    """The Sethi-Ullman order first, then other topological orders (depth-first over the ready
    set), at most ``limit``; each with the description's fused pairs made adjacent (:func:`fuse`)."""
    seen: set[tuple[int, ...]] = set()
    facts = _fuse_facts(acc, g, [n.id for n in g.nodes if n.kind == "pii"])
    for i, o in enumerate(_orders(acc, g, limit)):
        if i and facts[4]:
            return      # every order after the first holds all piis, and fuse fails on the graph alone
        f = fuse(acc, g, o, facts)
        if f is not None and tuple(f) not in seen:
            seen.add(tuple(f))
            yield f


def _orders(acc: Accelerator, g: PiiGraph, limit: int) -> Iterator[list[int]]:
    first = su_order(acc, g)
    yield first
    pii = [n.id for n in g.nodes if n.kind == "pii"]
    dep = {v: set(deps(g, v)) for v in pii}
    n = 1
    seen = {tuple(first)}

    for o in topological_orders(pii, dep):
        if tuple(o) in seen:
            continue
        seen.add(tuple(o))
        yield o
        n += 1
        if n >= limit:
            return


def topological_orders(nodes: list[int], dep: dict[int, set[int]]) -> Iterator[list[int]]:
    """Every topological order of ``nodes`` (``dep[v]``: what v needs first), depth first, each
    level's ready nodes in the order of ``nodes``. Iterative: a generator frame per level cost
    more than the search itself."""
    if not nodes:
        yield []
        return
    prefix: list[int] = []
    placed: set[int] = set()
    stack = [[v for v in nodes if not dep[v]]]
    while stack:
        ready = stack[-1]
        if len(prefix) == len(stack):       # back from the level below: undo this level's choice
            placed.discard(prefix.pop())
        if not ready:
            stack.pop()
            continue
        v = ready.pop(0)
        prefix.append(v)
        placed.add(v)
        if len(prefix) == len(nodes):
            yield list(prefix)
            placed.discard(prefix.pop())
            continue
        stack.append([u for u in nodes if u not in placed and dep[u] <= placed])


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


@dataclass
class Allocation:
    order: list[int]
    beta: dict[int, dict[str, int]]
    const_addr: dict[int, int]
    interference: frozenset[tuple[int, int]]
    status: str
    solver_s: float = 0.0       # CP-SAT's own time (the rest of :func:`solve` builds the model)

    @property
    def ok(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE")


def _live(g: PiiGraph, order: list[int]) -> dict[int, tuple[int, int]]:
    """Live ranges (§6.2 CSP4): inputs [0, N], constants [0, b-1], piis [a, b-1] (roots to N).
    A concat^H lives from its first piece's write to its last use; its pieces live as long."""
    pos = {v: i + 1 for i, v in enumerate(order)}
    n = len(order)
    last: dict[int, int] = {}
    for v in order:
        for o in g.nodes[v].operands:
            if o is not None:
                last[o] = max(last.get(o, 0), pos[v])
    out = {}
    for node in g.nodes:
        v = node.id
        if node.kind == "input":
            out[v] = (0, n + 1)
        elif node.kind == "const":
            out[v] = (0, last.get(v, 1) - 1)
        elif node.kind == "pii":
            a = pos[v]
            out[v] = (a, n + 1) if v in g.roots else (a, last.get(v, a + 1) - 1)
    for node in g.nodes:
        if node.kind != "concat":
            continue
        v = node.id
        a = min((pos[d] for d in deps(g, v)), default=0)
        e = n + 1 if v in g.roots else last.get(v, a + 1) - 1
        out[v] = (a, e)
        for o in node.operands:
            if o is not None and o in out:
                out[o] = (out[o][0], max(out[o][1], e))
    return out


def interference(acc: Accelerator, g: PiiGraph, order: list[int]) -> frozenset[tuple[int, int]]:
    """CSP4's pairs (a, b), a < b: values in one buffer, not aliased, whose live ranges overlap.
    Per buffer, a sweep over the ranges sorted by start; the pairs are inserted in (a, b) order
    (the set's iteration order, hence the model CSP4 builds, is that of a plain double loop)."""
    live = _live(g, order)
    group = alias_groups(g)
    by_buf: dict[str, list[tuple[int, int, int]]] = {}
    for n in g.nodes:
        s, e = live[n.id]
        by_buf.setdefault(n.buffer, []).append((s, e, n.id))
    pairs = []
    for vals in by_buf.values():
        vals.sort()
        for i, (s1, e1, a) in enumerate(vals):
            for s2, e2, b in vals[i + 1:]:
                if s2 > e1:
                    break                   # sorted by start: no later range begins before a's end
                if e2 >= s1 and group[a] != group[b]:
                    pairs.append((a, b) if a < b else (b, a))
    pairs.sort()
    out = set()
    for pr in pairs:
        out.add(pr)
    return frozenset(out)


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


class _Same:
    """Union-find over ints (a class's representative: its least member): the alias groups'
    node ids, and the CP-SAT indices of the β variables CSP2's equalities identify."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        p = self.parent
        while p.get(x, x) != x:
            p[x] = p.get(p[x], p[x])
            x = p[x]
        return x

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


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


_BETA_HI: dict[int, tuple[Accelerator, dict]] = {}


def _beta_bounds_of(acc: Accelerator, instr: str, alpha: Any) -> dict[str, int]:
    """:func:`_beta_bounds` of a pii (``alpha``: its α items), computed once per description,
    instruction and α (a pure function of them; a kernel has many piis of one α)."""
    hit = _BETA_HI.get(id(acc))
    if hit is None or hit[0] is not acc:
        hit = _BETA_HI[id(acc)] = (acc, {})
    memo = hit[1]
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


def solve(acc: Accelerator, g: PiiGraph, order: list[int], lay: Layout, seed: int = 0,
          time_limit: float = 10.0, inter: frozenset[tuple[int, int]] | None = None) -> Allocation:
    """Module 5: CSP1-CSP4 for one order; status ``OPTIMAL``/``FEASIBLE`` or ``INFEASIBLE``/``UNKNOWN``.
    ``inter``: :func:`interference` of this order, where the caller has it already."""
    m = _Model()
    start: dict[int, list] = {}
    length: dict[int, list[int]] = {}
    beta_vars: dict[int, dict[str, cp_model.IntVar]] = {}
    const_vars: dict[int, cp_model.IntVar] = {}
    hbm = acc.buffers[HBM].access[0]
    in_at = {p.index: p.addr for p in lay.inputs}

    never: list[str] = []       # a known start out of its buffer: no allocation exists
    apart = _Apart1D(m)         # CSP4's disjoint pairs, and every ``x != y`` of registers
    same = _Same()              # β variables CSP2 makes equal (a register read where it was written)

    held: dict[int, int] = {}   # a β variable's domain [0, hi] (by index): bounds it implies are not restated

    def bounds(buf: str, st: list, ln: list[int]) -> None:
        for s, n, size in zip(st, ln, acc.buffers[buf].access, strict=True):
            if isinstance(s, int):
                if not 0 <= s <= size - n:
                    never.append(buf)
                continue
            if isinstance(s, cp_model.IntVar) and held.get(s.index, -1) >= 0 and held[s.index] <= size - n:
                continue            # a β variable whose domain [0, hi] holds the bounds already
            m.add(s >= 0)
            m.add(s + n <= size)

    for node in g.nodes:
        if node.kind == "input":                 # slice^H of an input: its bytes from ``offset`` on
            start[node.id] = [in_at[node.input_index] + node.offset]
            length[node.id] = [node.type.size]  # type: ignore[union-attr]
        elif node.kind == "concat":              # concat^H: a region of HBM holding its pieces
            start[node.id] = [m.new_int_var(0, hbm - node.type.size, f"concat{node.id}")]  # type: ignore[union-attr]
            length[node.id] = [node.type.size]  # type: ignore[union-attr]
        elif node.kind == "const":
            nbytes = node.type.size * node.type.dtype.nbytes  # type: ignore[union-attr]
            v = m.new_int_var(0, hbm - nbytes, f"const{node.id}")
            const_vars[node.id] = v
            start[node.id] = [v]
            length[node.id] = [nbytes]
    # one variable per class of β attributes CSP2 makes equal by name (a register read where
    # its producer wrote it: ``src == dst`` of the producer), its domain the intersection of
    # theirs; equalities over expressions stay constraints below
    his = {(n.id, b): hi for n in g.nodes if n.kind == "pii"
           for b, hi in _beta_bounds_of(acc, n.instr, n.alpha).items()}
    cls = _Same()
    key = {k: i for i, k in enumerate(his)}
    for node in g.nodes:
        if node.kind != "pii":
            continue
        ins = acc.instructions[node.instr]
        for spec, o in zip(ins.inputs, node.operands, strict=True):
            if o is None or g.nodes[o].kind != "pii":
                continue
            out = acc.instructions[g.nodes[o].instr].output.start    # (a rank mismatch fails in CSP2 below)
            for a, b in zip(spec.start, out, strict=False):
                if isinstance(a, Var) and isinstance(b, Var) and (node.id, a.name) in key and (o, b.name) in key:
                    cls.union(key[(node.id, a.name)], key[(o, b.name)])
    made: dict[int, cp_model.IntVar] = {}
    low: dict[int, int] = {}
    for k, i in key.items():
        r = cls.find(i)
        low[r] = min(low.get(r, his[k]), his[k])
    for node in g.nodes:
        if node.kind != "pii":
            continue
        ins = acc.instructions[node.instr]
        alpha = dict(node.alpha)
        bv = {}
        for b in ins.beta:
            r = cls.find(key[(node.id, b)])
            x = made.get(r)
            if x is None:
                x = made[r] = m.new_int_var(0, low[r], f"{ins.name}{node.id}.{b}")
                held[x.index] = low[r]
            bv[b] = x
        beta_vars[node.id] = bv
        env: dict[str, object] = {**alpha, **bv}
        lin = _Lin(m, env, apart)
        for c in ins.constraints:            # CSP1: e_θ(α, β)
            if not lin.require(c):
                raise ValueError(f"{ins.name}{alpha}: constraint {c} cannot hold")
        out_start = [lin.int(e) for e in ins.output.start]
        out_len = [int(lin.int(e)) for e in ins.output.length]
        bounds(ins.output.buffer, out_start, out_len)
        start[node.id] = out_start
        length[node.id] = out_len
    for node in g.nodes:                     # CSP2: operand slices are where producers put them
        if node.kind != "pii":
            continue
        ins = acc.instructions[node.instr]
        lin = _Lin(m, {**dict(node.alpha), **beta_vars[node.id]})
        for i, (spec, o) in enumerate(zip(ins.inputs, node.operands, strict=True)):
            st = [lin.int(e) for e in spec.start]
            ln = [int(lin.int(e)) for e in spec.length]
            bounds(spec.buffer, st, ln)
            if o is None:
                continue
            if ln != length[o]:
                raise ValueError(f"{ins.name}: operand {i} slice {ln} does not match its producer's {length[o]}")
            for a, b in zip(st, start[o], strict=True):
                if a is b:
                    continue        # one variable already (above)
                m.add(a == b)
                if isinstance(a, cp_model.IntVar) and isinstance(b, cp_model.IntVar):
                    same.union(a.index, b.index)
    for node in g.nodes:                     # concat^H: pieces side by side in its region
        if node.kind == "concat":
            for o, off in zip(node.operands, node.offsets, strict=True):
                if length[o][0] + off > length[node.id][0]:
                    raise ValueError(f"concat^H piece {o} overruns its region")
                m.add(start[o][0] == start[node.id][0] + off)
    group = alias_groups(g)
    out_groups = {group[r] for r in g.roots}
    for node in g.nodes:                     # staging areas and constants live above the inputs
        # and outputs (CSP3), but for an output, or a piece of an output's concat^H, at its place
        if node.kind in ("pii", "concat", "const") and node.buffer == HBM and group[node.id] not in out_groups:
            m.add(start[node.id][0] >= lay.free_start)
    for r, pl in zip(g.roots, lay.outputs, strict=True):      # CSP3: outputs
        node = g.nodes[r]
        if node.kind in ("pii", "concat"):
            m.add(start[r][0] == pl.addr)
        elif node.kind == "const":
            m.add(const_vars[r] == pl.addr)
    # register shapes fixed per program: differently shaped uses on different registers. A use
    # is its register variable up to CSP2's equalities (the register an instruction reads is the
    # one its producer wrote): one pair of constraints per pair of registers, not per pair of uses
    # (amx_k5: 1,280 -> 256 pairs; the same feasible set)
    uses: dict[tuple[str, tuple[int, ...]], dict[int, cp_model.IntVar]] = {}
    for node in g.nodes:
        if node.kind != "pii":
            continue
        ins = acc.instructions[node.instr]
        alpha = dict(node.alpha)
        for reg, shape in ins.config:
            buf = next(sp.buffer for sp in (*ins.inputs, ins.output)
                       if sp.start and isinstance(sp.start[0], Var) and sp.start[0].name == reg)
            x = beta_vars[node.id][reg]
            uses.setdefault((buf, tuple(int(e.eval(alpha)) for e in shape)), {}).setdefault(same.find(x.index), x)
    shapes = sorted(uses)
    for i, a in enumerate(shapes):
        for b in shapes[i + 1:]:
            if a[0] != b[0]:
                continue
            for x in uses[a].values():
                for y in uses[b].values():
                    if x is y:          # one register (CSP2) used with two shapes
                        never.append(a[0])
                    else:
                        apart.differ(x, y)
    if inter is None:
        inter = interference(acc, g, order)     # CSP4
    hull = _hbm_hulls(g, lay, group, start, length, hbm)
    for a, b in inter:
        ha, hb = hull.get(a), hull.get(b)
        if ha is not None and hb is not None and (ha[1] <= hb[0] or hb[1] <= ha[0]):
            continue        # CSP3 and the staging bound keep them apart already
        if not _apart(m, apart, start[a], length[a], start[b], length[b]):
            return Allocation(order, {}, {}, inter, "INFEASIBLE")
    apart.close()
    # low addresses read best; deterministic time keeps runs reproducible. Large graphs (tiled
    # kernels: 100 vector registers to assign) take any feasible assignment: proving an optimum
    # of the address sum there costs tens of seconds and changes no instruction
    if sum(1 for n in g.nodes if n.kind == "pii") <= OPTIMIZE_MAX:
        m.minimize(sum(v for bv in beta_vars.values() for v in bv.values()) + sum(const_vars.values()))
    if never:
        return Allocation(order, {}, {}, inter, "INFEASIBLE")
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = seed
    s.parameters.max_deterministic_time = time_limit
    # no probing in presolve: these models are small disjunctive placements, where probing costs
    # more than it prunes (amx_k5's solve: ~100 -> ~70 ms; the same allocations on every paper kernel)
    s.parameters.cp_model_probing_level = 0
    # one presolve pass: on these models later passes find little (CP-SAT's time on the 22
    # models of the paper kernels: 83 -> 68 ms, every solution the same)
    s.parameters.max_presolve_iterations = 1
    # no symmetry detection and no LP relaxation: the register assignments' symmetries and a
    # placement's linear relaxation prune nothing these models need (the CP-SAT time of the 22
    # models of the paper kernels: ~63 -> ~57 ms, every solution the same)
    s.parameters.symmetry_level = 0
    s.parameters.linearization_level = 0
    # the registers' all_different constraints (:class:`_Apart1D`) kept as propagators, not
    # expanded into a literal per (register, value) as CP-SAT does for domains up to 256 values:
    # expanded, CP-SAT's time on the paper kernels' 22 models was ~2x that of the x != y pairs;
    # kept, ~0.4x (amx_k5: 21.7 -> 8.7 ms)
    s.parameters.max_alldiff_domain_size = 1
    t0 = time.perf_counter()
    st = s.solve(m)
    solver_s = time.perf_counter() - t0
    status = s.status_name(st)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Allocation(order, {}, {}, inter, status, solver_s)
    sol = s.response_proto.solution         # every variable's value, by index
    beta = {v: {k: sol[x.index] for k, x in bv.items()} for v, bv in beta_vars.items()}
    consts = {v: sol[x.index] for v, x in const_vars.items()}
    return Allocation(order, beta, consts, inter, status, solver_s)


def emit(acc: Accelerator, g: PiiGraph, alloc: Allocation, lay: Layout) -> Program:
    """Module 6: concrete instructions in order (attributes in declaration order) + constants."""
    out = []
    for v in alloc.order:
        node = g.nodes[v]
        ins = acc.instructions[node.instr]
        env = {**dict(node.alpha), **alloc.beta[v]}
        out.append(Concrete(ins.name, tuple((a, int(env[a])) for a in ins.attrs)))
    consts = []
    for v, addr in sorted(alloc.const_addr.items(), key=lambda kv: kv[1]):
        lit = g.nodes[v].literal
        consts.append((addr, bytes(lit.data)))   # type: ignore[union-attr]
    return Program(acc.name, tuple(out), tuple(lay.inputs), tuple(lay.outputs), tuple(consts))
