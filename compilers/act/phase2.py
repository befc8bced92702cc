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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from semantics.layout import byte_size
from semantics.types import TensorType

from ..expr import BinOp, BoolOp, Call, Compare, Const, Expr, Not, Var
from ..isa import HBM, Accelerator
from ..program import Concrete, Placement, Program
from .phase1 import PiiGraph

__all__ = ["su_order", "orders", "fuse", "Layout", "hbm_layout", "solve", "emit", "Allocation"]

ALIGN = 64


def _mem(acc: Accelerator, g: PiiGraph, v: int) -> tuple[str, int]:
    n = g.nodes[v]
    t = n.type
    assert t is not None
    return n.buffer, t.size * t.dtype.nbytes


def su_order(acc: Accelerator, g: PiiGraph) -> list[int]:
    """Module 4: the extended Sethi-Ullman order of the pii nodes (C.4)."""
    bufs = [b for b in acc.buffers if b != HBM]
    esun: dict[int, dict[str, float]] = {}

    def mem_d(v: int, d: str) -> int:
        b, m = _mem(acc, g, v)
        return m if b == d else 0

    def compute(v: int) -> dict[str, float]:
        if v in esun:
            return esun[v]
        n = g.nodes[v]
        ops = [o for o in n.operands if o is not None and g.nodes[o].kind == "pii"]
        res: dict[str, float] = {}
        for d in bufs:
            taus = []
            for i, x in enumerate(ops):
                taus.append(compute(x)[d] + sum(mem_d(y, d) for j, y in enumerate(ops) if j != i))
            res[d] = max(mem_d(v, d), min(taus) if taus else 0)
        esun[v] = res
        return res

    order: list[int] = []
    done: set[int] = set()

    def visit(v: int) -> None:
        if v in done or g.nodes[v].kind != "pii":
            return
        done.add(v)
        ops = [o for o in g.nodes[v].operands if o is not None and g.nodes[o].kind == "pii"]

        def tau(i: int) -> float:
            x = ops[i]
            best = 0.0
            for d in bufs:
                t = compute(x)[d] + sum(mem_d(y, d) for j, y in enumerate(ops) if j != i)
                best = max(best, t / acc.buffers[d].nbytes)
            return best
        for i in sorted(range(len(ops)), key=lambda i: (-tau(i), i)):
            visit(ops[i])
        order.append(v)

    for r in g.roots:
        visit(r)
    return order


def fuse(acc: Accelerator, g: PiiGraph, order: list[int]) -> list[int] | None:
    """Apply the description's adjacency (``followed_by`` / ``preceded_by``) to a topological
    order: an instruction that must be followed by its consumer is moved down to just before its
    earliest consumer; one that must follow its producer is moved up to just after it. None when
    the order cannot be repaired (the consumer is of the wrong kind, two fused pairs compete, or
    the move would break a dependency)."""
    ops = {v: [o for o in g.nodes[v].operands if o is not None and g.nodes[o].kind == "pii"] for v in order}
    users: dict[int, list[int]] = {v: [] for v in order}
    for v in order:
        for o in ops[v]:
            users[o].append(v)
    out = list(order)
    for v in order:
        ins = acc.instructions[g.nodes[v].instr]   # type: ignore[index]
        if ins.followed_by:
            if not users[v]:
                return None
            out.remove(v)
            first = min(users[v], key=out.index)
            out.insert(out.index(first), v)
        if ins.preceded_by:
            prods = [o for o in ops[v] if acc.instructions[g.nodes[o].instr].name in ins.preceded_by]  # type: ignore[index]
            if len(prods) != 1:
                return None
            out.remove(v)
            out.insert(out.index(prods[0]) + 1, v)
    pos = {v: i for i, v in enumerate(out)}
    for v in out:
        if any(pos[o] >= pos[v] for o in ops[v]):
            return None
        ins = acc.instructions[g.nodes[v].instr]   # type: ignore[index]
        nxt = g.nodes[out[pos[v] + 1]].instr if pos[v] + 1 < len(out) else None
        prv = g.nodes[out[pos[v] - 1]].instr if pos[v] > 0 else None
        if (ins.followed_by and nxt not in ins.followed_by) or (ins.preceded_by and prv not in ins.preceded_by):
            return None
    return out


def orders(acc: Accelerator, g: PiiGraph, limit: int = 64) -> Iterator[list[int]]:
    """The Sethi-Ullman order first, then other topological orders (depth-first over the ready
    set), at most ``limit``; each with the description's fused pairs made adjacent (:func:`fuse`)."""
    seen: set[tuple[int, ...]] = set()
    for o in _orders(acc, g, limit):
        f = fuse(acc, g, o)
        if f is not None and tuple(f) not in seen:
            seen.add(tuple(f))
            yield f


def _orders(acc: Accelerator, g: PiiGraph, limit: int) -> Iterator[list[int]]:
    first = su_order(acc, g)
    yield first
    pii = [n.id for n in g.nodes if n.kind == "pii"]
    deps = {v: {o for o in g.nodes[v].operands if o is not None and g.nodes[o].kind == "pii"} for v in pii}
    n = 1
    seen = {tuple(first)}

    def rec(prefix: list[int], placed: set[int]) -> Iterator[list[int]]:
        if len(prefix) == len(pii):
            yield list(prefix)
            return
        ready = [v for v in pii if v not in placed and deps[v] <= placed]
        for v in ready:
            prefix.append(v)
            placed.add(v)
            yield from rec(prefix, placed)
            prefix.pop()
            placed.discard(v)

    for o in rec([], set()):
        if tuple(o) in seen:
            continue
        seen.add(tuple(o))
        yield o
        n += 1
        if n >= limit:
            return


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

    def __init__(self, m: cp_model.CpModel, env: dict[str, object]) -> None:
        self.m = m
        self.env = env

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
                q = self.m.NewIntVar(-(1 << 40), 1 << 40, "")
                self.m.AddDivisionEquality(q, a, b)
                return q
            raise ValueError(f"unsupported {e}")
        if isinstance(e, Call):
            vals = [self.int(a) for a in e.args]
            if all(isinstance(v, int) for v in vals):
                return min(vals) if e.fn == "min" else max(vals)
            r = self.m.NewIntVar(-(1 << 40), 1 << 40, "")
            (self.m.AddMinEquality if e.fn == "min" else self.m.AddMaxEquality)(r, vals)
            return r
        raise ValueError(f"unsupported {e}")

    def bool(self, e: Expr):  # noqa: ANN201
        """A literal (BoolVar) or a Python bool."""
        if isinstance(e, Compare):
            a, b = self.int(e.lhs), self.int(e.rhs)
            if isinstance(a, int) and isinstance(b, int):
                return bool(Compare(e.op, Const(a), Const(b)).eval({}))
            lit = self.m.NewBoolVar("")
            ops = {"<": (lambda: a < b, lambda: a >= b), "<=": (lambda: a <= b, lambda: a > b),
                   ">": (lambda: a > b, lambda: a <= b), ">=": (lambda: a >= b, lambda: a < b),
                   "==": (lambda: a == b, lambda: a != b), "!=": (lambda: a != b, lambda: a == b)}[e.op]
            self.m.Add(ops[0]()).OnlyEnforceIf(lit)
            self.m.Add(ops[1]()).OnlyEnforceIf(lit.Not())
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
                r = self.m.NewBoolVar("")
                self.m.AddBoolAnd(lits).OnlyEnforceIf(r)
                self.m.AddBoolOr([x.Not() for x in lits]).OnlyEnforceIf(r.Not())
                return r
            if any(c is True for c in consts):
                return True
            if not lits:
                return False
            r = self.m.NewBoolVar("")
            self.m.AddBoolOr(lits).OnlyEnforceIf(r)
            self.m.AddBoolAnd([x.Not() for x in lits]).OnlyEnforceIf(r.Not())
            return r
        if isinstance(e, Not):
            p = self.bool(e.arg)
            return (not p) if isinstance(p, bool) else p.Not()
        v = self.int(e)
        if isinstance(v, int):
            return v != 0
        lit = self.m.NewBoolVar("")
        self.m.Add(v != 0).OnlyEnforceIf(lit)
        self.m.Add(v == 0).OnlyEnforceIf(lit.Not())
        return lit


@dataclass
class Allocation:
    order: list[int]
    beta: dict[int, dict[str, int]]
    const_addr: dict[int, int]
    interference: frozenset[tuple[int, int]]
    status: str

    @property
    def ok(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE")


def _live(g: PiiGraph, order: list[int]) -> dict[int, tuple[int, int]]:
    """Live ranges (§6.2 CSP4): inputs [0, N], constants [0, b-1], piis [a, b-1] (roots to N)."""
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
        else:
            a = pos[v]
            out[v] = (a, n + 1) if v in g.roots else (a, last.get(v, a + 1) - 1)
    return out


def interference(acc: Accelerator, g: PiiGraph, order: list[int]) -> frozenset[tuple[int, int]]:
    live = _live(g, order)
    vals = [n.id for n in g.nodes]
    out = set()
    for a, b in itertools.combinations(vals, 2):
        na, nb = g.nodes[a], g.nodes[b]
        if na.buffer != nb.buffer:
            continue
        (s1, e1), (s2, e2) = live[a], live[b]
        if s1 <= e2 and s2 <= e1:
            out.add((a, b))
    return frozenset(out)


def solve(acc: Accelerator, g: PiiGraph, order: list[int], lay: Layout, seed: int = 0,
          time_limit: float = 10.0) -> Allocation:
    """Module 5: CSP1-CSP4 for one order; status ``OPTIMAL``/``FEASIBLE`` or ``INFEASIBLE``/``UNKNOWN``."""
    m = cp_model.CpModel()
    start: dict[int, list] = {}
    length: dict[int, list[int]] = {}
    beta_vars: dict[int, dict[str, cp_model.IntVar]] = {}
    const_vars: dict[int, cp_model.IntVar] = {}
    hbm = acc.buffers[HBM].access[0]
    in_at = {p.index: p.addr for p in lay.inputs}

    def bounds(buf: str, st: list, ln: list[int]) -> None:
        for s, n, size in zip(st, ln, acc.buffers[buf].access, strict=True):
            m.Add(s >= 0)
            m.Add(s + n <= size)

    for node in g.nodes:
        if node.kind == "input":
            start[node.id] = [in_at[node.input_index]]
            length[node.id] = [node.type.size]  # type: ignore[union-attr]
        elif node.kind == "const":
            nbytes = node.type.size * node.type.dtype.nbytes  # type: ignore[union-attr]
            v = m.NewIntVar(0, hbm - nbytes, f"const{node.id}")
            if node.id not in g.roots:      # constants live above the inputs and outputs (CSP3)
                m.Add(v >= lay.free_start)
            const_vars[node.id] = v
            start[node.id] = [v]
            length[node.id] = [nbytes]
    for node in g.nodes:
        if node.kind != "pii":
            continue
        ins = acc.instructions[node.instr]
        alpha = dict(node.alpha)
        bv = {b: m.NewIntVar(0, max(acc.buffers[s.buffer].access[0] for s in (*ins.inputs, ins.output)),
                             f"{ins.name}{node.id}.{b}") for b in ins.beta}
        beta_vars[node.id] = bv
        env: dict[str, object] = {**alpha, **bv}
        lin = _Lin(m, env)
        for c in ins.constraints:            # CSP1: e_θ(α, β)
            b = lin.bool(c)
            if b is False:
                raise ValueError(f"{ins.name}{alpha}: constraint {c} cannot hold")
            if b is not True:
                m.AddBoolAnd([b])
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
                m.Add(a == b)
    for r, pl in zip(g.roots, lay.outputs, strict=True):      # CSP3: outputs
        node = g.nodes[r]
        if node.kind == "pii":
            m.Add(start[r][0] == pl.addr)
        elif node.kind == "const":
            m.Add(const_vars[r] == pl.addr)
    inter = interference(acc, g, order)     # CSP4
    for a, b in inter:
        lits = []
        for sa, la, sb, lb in zip(start[a], length[a], start[b], length[b], strict=True):
            x, y = m.NewBoolVar(""), m.NewBoolVar("")
            m.Add(sa + la <= sb).OnlyEnforceIf(x)
            m.Add(sb + lb <= sa).OnlyEnforceIf(y)
            lits += [x, y]
        m.AddBoolOr(lits)
    # low addresses read best; deterministic time keeps runs reproducible
    m.Minimize(sum(v for bv in beta_vars.values() for v in bv.values()) + sum(const_vars.values()))
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = seed
    s.parameters.max_deterministic_time = time_limit
    st = s.Solve(m)
    status = s.StatusName(st)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Allocation(order, {}, {}, inter, status)
    beta = {v: {k: int(s.Value(x)) for k, x in bv.items()} for v, bv in beta_vars.items()}
    consts = {v: int(s.Value(x)) for v, x in const_vars.items()}
    return Allocation(order, beta, consts, inter, status)


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
