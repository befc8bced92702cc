"""Module 5 of Act (seed 000 §6.2, appendix C.5): memory allocation of one order of a pii graph,
solved by OR-Tools CP-SAT with one worker and a fixed seed (deterministic).

What belongs here: :func:`solve` (CSP1: e_θ(α, β) and the output slice h_θ^(0)(β); CSP2: each
operand slice h_θ^(i)(β) is where its producer put it; CSP3: inputs and outputs at their HBM
placements; CSP4: slices in one buffer with overlapping live ranges are disjoint boxes, per access
dimension) and its answer, :class:`Allocation`. The model's pieces are :mod:`.csp`'s; live
ranges, :mod:`.liveness`'s.

Identity nodes (slice^H of an input, concat^H; :mod:`.tiling`) emit nothing: an input slice is at
its input's placement plus its offset, a concat^H's pieces at its region's start plus theirs
(CSP2), values of one alias group share memory by construction and are not CSP4 pairs. Register
shapes fixed per program (the description's ``config``) keep differently shaped uses of one
register file on different registers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ...expr import Var
from ...isa import HBM, Accelerator
from ..context import TargetContext
from ..pii import PiiGraph
from .csp import Layout, _apart, _Apart1D, _beta_bounds_of, _hbm_hulls, _Lin, _Model
from .liveness import UnionFind, alias_groups, interference

__all__ = ["Allocation", "solve", "OPTIMIZE_MAX"]

OPTIMIZE_MAX = 40      # pii graphs up to this size get the low-address objective


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
    same = UnionFind()              # β variables CSP2 makes equal (a register read where it was written)

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
    bmemo = TargetContext.of(acc).memo("beta_bounds")
    his = {(n.id, b): hi for n in g.nodes if n.kind == "pii"
           for b, hi in _beta_bounds_of(bmemo, acc, n.instr, n.alpha).items()}
    cls = UnionFind()
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
