"""The compiler driver: Act's enumeration pipeline with a cost model (seed 000 §8, Fig. 14).

``act_enum`` (Fig. 14b): initialize the e-graph (M1); for k = 1, 2, ...: one round of rewrites
(M2), extraction of pii graphs with at most Γ(k) = 2^k piis (M3, §5.4); for each pii graph the
topological orders (M4, §6.4), the CSP (M5) and, when satisfiable, emission (M6), yielding a
program. ``compile_graph`` (Fig. 14a) keeps the cheapest program under the cost model and stops
when the enumeration is exhausted or when no cheaper program has appeared for ``n`` times the time
it took to find the current best (the termination heuristic).

Fallbacks: a pii graph whose CSP fails for every order goes back to extraction (§4.2.3); an
extraction with no pii graph within Γ(k) goes back to rewriting (§5.4). A kernel for which the
e-graph saturates without any complete pii graph goes to tiling with the identity instructions
slice^H / concat^H (:mod:`.tiling`, §5.2.3); if that finds none either, :class:`Unsupported` is
raised with the reason (the topmost value no instruction can produce).

This is Act alone: :func:`compilers.compile.compile`, the compiler's one entry, runs the middle
end (:mod:`compilers.middle`) first and calls :func:`compile_graph` for what the middle end does
not take (and for the row blocks it compiles).

The cost model is pluggable: a function Program -> float; the default sums the description's
per-instruction cycle estimates.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from semantics.ir import Graph
from verif.gate import ProofGate

from ..errors import CompileError, Reason, Unsupported
from ..isa import Accelerator
from ..program import Program
from .context import CompileContext, TargetContext
from .egraph import EGraph, NodeInfo
from .phase1.extract import Extractor, gamma
from .phase1.initialize import Kernel, forms_memo, initialize, insert
from .phase1.isa_rules import IsaRules, apply_isa_rules
from .phase1.rewrite import IrRules
from .phase2 import allocate, liveness, order
from .phase2.csp import Layout, hbm_layout
from .phase2.emit import emit
from .pii import PartsMemo, PiiGraph, pii_parts

__all__ = ["Unsupported", "CompileError", "Stats", "ActResult", "act_enum", "compile_graph", "default_cost"]


class InstructionCost:
    """The default cost model: the sum over the program of each instruction's cycles as the
    ISA description states them (``cost.cycles``, an expression of its attributes).

    :meth:`bound` is what every program of a pii graph costs, known before phase 2 where each
    instruction's cycles depend on its α alone (not on the addresses β the solver picks): the
    program emits exactly the graph's pii nodes (each reachable from a root), and the
    rematerialized fallback only adds copies of them, which cost no less when no instruction
    costs less than nothing. None where that does not hold."""

    def __init__(self, acc: Accelerator) -> None:
        self.acc = acc
        self._alpha_only: dict[str, bool] = {}
        self._const: dict[str, int | None] = {}     # per instruction: its cycles where they are constant

    def __call__(self, p: Program) -> float:
        total = 0
        const = self._const
        for c in p.instructions:
            k = const.get(c.name, -1)
            if k == -1:
                cycles = self.acc.instructions[c.name].cost.cycles
                k = const[c.name] = cycles.eval({}) if not cycles.vars() else None
            total += k if k is not None else self.acc.instructions[c.name].cost.cycles.eval(c.env)
        return float(total)

    def bound(self, g: PiiGraph) -> float | None:
        total = 0
        seen: set[int] = set()
        todo = list(g.roots)
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            n = g.nodes[v]
            todo.extend(o for o in n.operands if o is not None)
            if n.kind != "pii":
                continue
            ins = self.acc.instructions[n.instr]
            ok = self._alpha_only.get(ins.name)
            if ok is None:
                ok = self._alpha_only[ins.name] = ins.cost.cycles.vars() <= set(ins.alpha)
            if not ok:
                return None
            c = ins.cost.cycles.eval(dict(n.alpha))
            if c < 0:
                return None
            total += c
        return float(total)


def default_cost(acc: Accelerator) -> InstructionCost:
    return InstructionCost(acc)


@dataclass
class Stats:
    """Time per module (seconds) and sizes; ``solver`` is CP-SAT's share of M5. ``proofs``: rule
    proofs run at their first use; ``gen``: the rule instantiations and IR-to-ISA patterns a type
    set needs, generated at their first use in the process (backend generation, made lazily).
    Neither is part of M2 or counts toward the enumeration's stops; ``total`` includes ``gen``
    (what the compile took in this process), not ``proofs``."""

    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("M1", "M2", "M3", "M4", "M5", "solver", "M6", "proofs", "gen"), 0.0))
    iterations: int = 0
    enodes: int = 0
    eclasses: int = 0
    pii_graphs: int = 0
    dominated: int = 0           # pii graphs not scheduled: no program of theirs could be selected
    orders: int = 0
    csp_failed: int = 0
    candidates: int = 0
    ir_rules: int = 0
    isa_rules: int = 0
    rewrites: int = 0
    total: float = 0.0
    best_at: float = 0.0
    bounded: bool = False
    tiled: bool = False          # the pii graph came from the slice^H / concat^H fallback
    middle: bool = False         # the middle end tiled the kernel (compilers.middle); Act's phases did not run
    micro_kernels: int = 0       # the middle end's distinct micro-kernels (step x tile shape)
    last_failure: str = ""

    def add(self, key: str, dt: float) -> None:
        self.times[key] = self.times.get(key, 0.0) + dt


@dataclass
class ActResult:
    """Act's result: the selected program, its cost under the cost model, the statistics and the
    pii count of its pii graph."""

    program: Program
    cost: float
    stats: Stats
    pii_count: int


def _pii_cost(acc: Accelerator, parts: PartsMemo | None = None) -> Callable[[NodeInfo], float]:
    memo: dict[NodeInfo, float] = {}

    def f(info: NodeInfo) -> float:
        c = memo.get(info)
        if c is None:
            alpha, _, _ = pii_parts(acc, info, parts)
            c = memo[info] = float(acc.instructions[info.name].cost.cycles.eval(alpha)) + 1.0   # +1: fewer instructions break ties
        return c
    return f


MAX_ENODES = 3000
REWRITE_BUDGET_S = 20.0


def act_enum(graph: Graph, acc: Accelerator, stats: Stats, max_iters: int = 12,
             rules: IrRules | None = None,
             dominated: Callable[[PiiGraph], bool] | None = None,
             ctx: CompileContext | None = None) -> Iterator[tuple[Program, int]]:
    """Fig. 14b: yield (program, pii count) for equivalent programs, shortest pii graphs first.
    ``dominated(pg)``: the caller's selection can neither take nor stop at any program of the
    pii graph ``pg``; phase 2 is then skipped for it (counted in ``stats.dominated``). ``ctx``:
    the compile's context (default: a new one for ``acc``)."""
    t = time.perf_counter()
    ctx = ctx or CompileContext(TargetContext.of(acc))
    eg = EGraph()
    try:
        yield from _act_enum(graph, acc, stats, max_iters, rules, eg, t, dominated, ctx)
    finally:
        eg.close()      # its egglog e-graph serves the next compile (also when this one stops early)


def _act_enum(graph: Graph, acc: Accelerator, stats: Stats, max_iters: int, rules: IrRules | None,
              eg: EGraph, t: float,
              dominated: Callable[[PiiGraph], bool] | None,
              ctx: CompileContext) -> Iterator[tuple[Program, int]]:
    try:
        kernel = initialize(graph)
    except NotImplementedError as e:
        raise Unsupported(str(e)) from None
    memo: dict[int, tuple] = {}
    try:
        forms = forms_memo(ctx.target)
        roots_h = [insert(eg, r, memo, forms) for r in kernel.roots]
    except ValueError as e:
        raise Unsupported(str(e)) from None
    lay = hbm_layout(kernel.inputs, kernel.outputs)
    stats.add("M1", time.perf_counter() - t)
    rules = rules or IrRules.for_target(acc)
    # patterns normalized under one set of trusted proofs (the proof cache and lock the gate reads)
    # are not those of another: a gate over an empty cache refuses the normalizing rules
    trusted = (os.environ.get("ACCV_PROOF_CACHE"), os.environ.get("ACCV_PROOF_LOCK"))
    isa = IsaRules(acc, rules.normalize, cache_key=(rules.insts, rules.gate.prove_missing, trusted),
                   normalize_stored=rules.normalize_stored)
    stats.ir_rules = len(rules.rules)
    parts = ctx.target.memo("pii_parts")
    tried: set[tuple] = set()
    ex: Extractor | None = None
    last_reason: Reason | None = None
    saturated = False
    for k in range(1, max_iters + 1):
        stats.iterations = k
        t = time.perf_counter()
        proof_s = rules.gate.seconds
        gen_s = 0.0
        if not saturated:
            snap = eg.snapshot()
            n_before = snap.n_nodes
            _, gen_s = _generating(rules.gate, rules.insts.ordered,
                                   {(dt, len(shape)) for dt, shape in snap.class_type}, "forward")
            rules.apply(eg, snap, ctx)
            snap = eg.snapshot()
            types = set(snap.class_type)
            isa_rules, gen2_s = _generating(rules.gate, isa.rules_for, types)
            gen_s += gen2_s
            stats.isa_rules = max(stats.isa_rules, len(isa_rules))
            apply_isa_rules(eg, snap, isa_rules, owner=isa)
            snap = eg.snapshot()
            saturated = snap.n_nodes == n_before
            stats.enodes, stats.eclasses = snap.n_nodes, len(snap.classes)
            spent = stats.times["M2"] + time.perf_counter() - t - (rules.gate.seconds - proof_s) - gen_s
            if snap.n_nodes > MAX_ENODES or spent > REWRITE_BUDGET_S:
                saturated = True    # exploration bounded (§5.4): keep extracting from this e-graph
                stats.bounded = True
        proof_s = rules.gate.seconds - proof_s      # first-use proofs are not compile time
        stats.add("proofs", proof_s)
        stats.add("gen", gen_s)
        stats.add("M2", time.perf_counter() - t - proof_s - gen_s)
        t = time.perf_counter()
        if ex is None or ex.snap is not snap:     # a saturated e-graph: the same extractor
            ex = Extractor(acc, eg, snap, _pii_cost(acc, parts))
        roots = [snap.handle_class[h] for h in roots_h]
        graphs = list(ex.enumerate(roots, gamma(k)))
        if not graphs:
            last_reason = ex.why_not(roots, {snap.handle_class[h] for _, h in memo.values()})
        stats.add("M3", time.perf_counter() - t)
        fresh = 0
        for pg in graphs:
            sig = pg.signature()
            if sig in tried:
                continue
            tried.add(sig)
            fresh += 1
            stats.pii_graphs += 1
            if dominated is not None and dominated(pg):
                stats.dominated += 1
                continue
            for prog, count in _schedule(acc, pg, lay, stats):
                yield prog, count
                break
            else:
                last_reason = Reason(stats.last_failure) if stats.last_failure else last_reason
        if saturated and not fresh:
            if graphs or ex.build(roots) is None:
                break   # saturated and nothing new within Γ(k): the enumeration is exhausted
            # else: a pii graph exists but has more than Γ(k) piis: raise k (§5.4)
    if stats.candidates == 0:
        # completeness fallback (§5.2.3, §4.2.3): tiling with the identity instructions
        t = time.perf_counter()
        proof_s, gen_s = rules.gate.seconds, ctx.seconds.get("gen", 0.0)
        try:
            pg, why = _tiled(graph, kernel, acc, rules, tiling_forms(eg, memo), isa, ctx=ctx)
        except RecursionError:      # a bound like the search's work bounds: demands nested past the stack
            pg, why = None, Reason("no program found within the tiling search's bounds (its demands nested "
                                   f"deeper than the interpreter's recursion limit, {sys.getrecursionlimit()})")
        last_reason = why or last_reason
        proof_s, gen_s = rules.gate.seconds - proof_s, ctx.seconds.get("gen", 0.0) - gen_s
        stats.add("proofs", proof_s)
        stats.add("gen", gen_s)
        stats.add("M3", time.perf_counter() - t - proof_s - gen_s)
        if pg is not None:
            stats.tiled = True
            stats.pii_graphs += 1
            for prog, count in _schedule(acc, pg, lay, stats):
                yield prog, count
                return
            last_reason = Reason(stats.last_failure) if stats.last_failure else last_reason
        raise Unsupported(last_reason or Reason("no pii graph found"))


def _generating(gate: ProofGate, fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``fn(*args)``, a call that generates rule instantiations or patterns at their first use
    (memoized after), and its time without the proofs the gate ran meanwhile."""
    t0, p0 = time.perf_counter(), gate.seconds
    out = fn(*args)
    return out, time.perf_counter() - t0 - (gate.seconds - p0)


def tiling_forms(eg: EGraph, memo: dict) -> object:
    """The kernel values' other forms in the saturated e-graph (M2's proven rewrites), for tiling."""
    from .phase1.tiling import Forms

    return Forms(eg, eg.snapshot(), memo)


def _tiled(graph: Graph, kernel: Kernel, acc: Accelerator, rules: IrRules,
           forms: object = None, isa: IsaRules | None = None,
           ctx: CompileContext | None = None) -> tuple[PiiGraph | None, Reason | None]:
    """The pii graph of :mod:`.tiling` (slice^H / concat^H), or None with the tiler's reason
    where it has a better one than the e-graph's (None else). It sees every form of a
    kernel value that M2's proven rewrites put in its e-class; its identities beyond data
    movement are used only where the library rule stating them passes the proof gate. The
    seconds it spends generating g_θ(α) go to ``ctx``'s timer "gen"."""
    from rewrite_rules.library import load
    from semantics.types import TupleType

    from .phase1 import tiling
    from .phase1.rewrite import first_instantiation

    library = load()

    known: dict[tuple[str, str], bool] = {}     # per (rule, dtype): the search asks often

    def identity(name: str, dtype: str) -> bool:
        hit = known.get((name, dtype))
        if hit is None:
            r = library.get(name)
            inst = first_instantiation(r, dtype) if r is not None and dtype in r.dtypes else None
            hit = known[(name, dtype)] = inst is not None and rules.gate.ok(inst)
        return hit

    dims: set[int] = set()
    for ins in graph.entry.instructions:
        ts = ins.type.elements if isinstance(ins.type, TupleType) else [ins.type]
        for tt in ts:
            dims.update(int(d) for d in tt.shape)
            dims.add(tt.dtype.nbytes)
    tl = tiling.Tiler(acc, dims, identity, kernel.inputs, forms, isa, rules.gate, ctx=ctx)  # type: ignore[arg-type]
    pg = tl.build([tl.forms.view_of(r) for r in kernel.roots])
    return pg, tl.reason


def _schedule(acc: Accelerator, pg: PiiGraph, lay: Layout,
              stats: Stats) -> Iterator[tuple[Program, int]]:
    """Phase 2 for one pii graph: orders (M4) with interference pruning (§6.4.2), the CSP (M5) and
    emission (M6) of the first order that fits; if none fits, the same on the graph with shared
    fused piis rematerialized. Records the failure in ``stats.last_failure``."""
    graphs = [pg]
    while graphs:
        g = graphs.pop(0)
        failed: list[frozenset] = []     # interference sets that made this graph's CSP infeasible
        order_iter = order.orders(acc, g)
        while True:
            t = time.perf_counter()      # M4: the next order (generated lazily) and its interference
            seq = next(order_iter, None)
            if seq is None:
                stats.add("M4", time.perf_counter() - t)
                break
            inter = liveness.interference(acc, g, seq)
            skip = any(f <= inter for f in failed)
            stats.add("M4", time.perf_counter() - t)
            if skip:
                continue
            stats.orders += 1
            t = time.perf_counter()
            try:
                alloc = allocate.solve(acc, g, seq, lay, inter=inter)
            except ValueError as e:
                stats.last_failure = str(e)
                stats.add("M5", time.perf_counter() - t)
                break
            stats.add("M5", time.perf_counter() - t)
            stats.add("solver", alloc.solver_s)      # CP-SAT's share of M5 (the rest builds the model)
            if not alloc.ok:
                failed.append(inter)
                stats.csp_failed += 1
                stats.last_failure = f"memory allocation failed ({alloc.status}) for a {g.count()}-instruction pii graph"
                continue
            t = time.perf_counter()
            prog = emit(acc, g, alloc, lay)
            stats.add("M6", time.perf_counter() - t)
            yield prog, g.count()
            return
        if g is pg:
            r = pg.rematerialized(acc)
            if r is not None:
                graphs.append(r)


#: Python's first-generation collection threshold while a kernel compiles. Compiling allocates
#: many short-lived objects (bindings, tuples, views), all freed by reference counting: the
#: compiler's data structures are acyclic (a recursive closure is deleted when its function
#: ends, CP-SAT models are made without their self-referencing aliases; a test pins it), so the
#: cyclic collector finds nothing and, at the default 700, would only re-scan live objects
#: (~2 ms a Gemmini compile). With cycles it held each compile's snapshots until it ran, ~10 ms.
GC_GEN0 = 20000


@contextmanager
def _fewer_collections() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_GEN0), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def compile_graph(graph: Graph, acc: Accelerator, cost: Callable[[Program], float] | None = None,
                  n: float = 2.0, max_iters: int = 12, rules: IrRules | None = None,
                  time_budget: float = 60.0, tries: int | None = None) -> ActResult:
    """Fig. 14a: the cheapest enumerated program; stops when no cheaper one appeared for ``n``
    times the effort the current best took (or the enumeration ends). Effort is counted in
    enumeration rounds, not seconds, so that the result does not depend on the machine's speed
    or load (the same kernel always compiles to the same program); ``time_budget`` seconds is
    only a safety stop.

    ``tries``: the tiling search's work bound for this compile (default
    :attr:`~.phase1.tiling.search.Tiler.MAX_TRIES`).

    ``cost`` (default: :class:`InstructionCost`) maps a program to its cost. A cost model may
    also offer ``bound(pii_graph) -> float | None``: no more than the cost of any program of that
    pii graph, or None when unknown; a graph whose bound is no less than the best program's cost
    is then not scheduled while it could not stop the enumeration either (the program selected
    and the stop are those of scheduling it). A wrong bound changes the result: leave it out when
    unsure.

    Act alone: :func:`compilers.compile.compile` is the compiler's entry (middle end first)."""
    with _fewer_collections():
        return _compile_graph(graph, acc, cost, n, max_iters, rules, time_budget, tries)


def _compile_graph(graph: Graph, acc: Accelerator, cost: Callable[[Program], float] | None,
                   n: float, max_iters: int, rules: IrRules | None, time_budget: float,
                   tries: int | None = None) -> ActResult:
    cost = cost or default_cost(acc)
    stats = Stats()
    rules = rules or IrRules.for_target(acc)     # backend generation: once per target, not timed here
    ctx = CompileContext(TargetContext.of(acc), tries)
    t0 = time.perf_counter()
    best: tuple[Program, float, int] | None = None
    best_round = 0
    bound = getattr(cost, "bound", None)

    def dominated(pg: PiiGraph) -> bool:
        # a program of ``pg`` is not taken (it costs no less than the best: the choice is strict)
        # and cannot stop the enumeration (this round is within n times the best's): phase 2
        # for it changes nothing, so it is not run. The selection and the stop are exactly
        # those of scheduling every pii graph.
        if best is None or bound is None or stats.iterations > n * best_round:
            return False
        if time.perf_counter() - t0 - stats.times["proofs"] - stats.times["gen"] > time_budget:
            return False        # past the safety stop: the next program stops the enumeration
        b = bound(pg)
        return b is not None and b >= best[1]

    for prog, count in act_enum(graph, acc, stats, max_iters, rules, dominated, ctx=ctx):
        stats.candidates += 1
        # first-use proofs are not compile time: with an empty proof cache they can take minutes,
        # and counting them here would stop the enumeration early -- a different program than
        # the same compile with the proofs cached (the same for first-use generation, ``gen``)
        now = time.perf_counter() - t0 - stats.times["proofs"] - stats.times["gen"]
        c = cost(prog)
        if best is None or c < best[1]:
            best = (prog, c, count)
            stats.best_at = now
            best_round = stats.iterations
        elif stats.iterations > n * best_round or now > time_budget:
            break
    stats.total = time.perf_counter() - t0 - stats.times["proofs"]
    if best is None:   # pragma: no cover - act_enum raises first
        raise Unsupported("no program")
    return ActResult(best[0], best[1], stats, best[2])
