"""The partitioner: which operators of a graph run on the accelerator, which on the host.

What belongs here: :func:`partition` (a graph the target cannot run whole in, a
:class:`~.program.Partitioned` out) and :func:`objective` (what it maximizes). The compiler is
the partitioner's oracle: a region is on the accelerator when :func:`compilers.compile.compile`
compiles it, so whatever the middle end and Act can do for a region (requantizing tails fused
with their dot, tiled layers, chains) a region gets.

Objective, compared in order (docs/partition.md): the MACs on the accelerator (more is better),
then the graph's arithmetic operators on the accelerator (more: a harness is there to exercise the
accelerator, and a zero-MAC region of adds is still the accelerator's work to check), then the
bytes handed between host and accelerator (fewer).

Algorithm: greedy maximal regions refined by the compiler's answers, as TVM's partitioner
(annotate, merge compiler regions, partition) with the compiler instead of per-operator
annotations:

1. *Host set*: operators that cannot be placed (tuples), and the operators the whole graph's
   failure names (its ``Unsupported.op`` / ``.type``) that no instruction computes alone nor
   fused (step 3's probes).
2. *Regions*: the other operators merged along their edges in topological order into maximal
   regions such that the steps stay orderable (the graph of regions and host operators stays
   acyclic; each region is then convex).
3. *Compile* each region (memoized by its text). A region that fails moves to the host the
   operators its failure names that no instruction computes alone nor fused with their
   neighbours (widened operands, a contraction's tail: single-operator and neighbourhood
   probes); where it names none such, every such operator of the region; where there is none,
   the operators the failure names are kept apart from the rest, or else the region is split in
   two along its topological order. Repeat from 2 until every region compiles.
4. *Clean up*: a region that compiled to no instruction goes to the host; so does one that only
   moves data and hands more bytes over than the host would, where other regions compute (the
   traffic criterion; where the graph's only accelerator work is data movement, that work is
   what there is to offload, and to check).

Each step is a compile; the memo and the whole-graph reason make most graphs take two or three
compiles. ``budget`` bounds the search: a region still failing when it runs out goes to the host
(its operators' reason says so).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from semantics.hlo_printer import print_hlo
from semantics.ir import Graph

from ..errors import Unsupported
from ..program import Program
from .graphs import VIEWS, GraphView, type_text
from .program import HostOp, Partitioned, Split, Step, composite_contract

__all__ = ["Objective", "objective", "partition", "plan"]

#: compiles a region's kernel, or raises Unsupported
CompileFn = Callable[[Graph], Program]


@dataclass(frozen=True, order=True)
class Objective:
    """A partition's worth, compared in order (module doc): higher is better."""

    macs: int
    arithmetic: int
    neg_bytes: int


def objective(view: GraphView, on_acc: set[str], handed: int) -> Objective:
    """The :class:`Objective` of placing ``on_acc`` on the accelerator with ``handed`` bytes
    between the sides."""
    return Objective(sum(view.macs(n) for n in on_acc), sum(view.arithmetic(n) for n in on_acc), -handed)


class _Search:
    def __init__(self, view: GraphView, compile_fn: CompileFn, budget: float) -> None:
        self.view = view
        self.compile_fn = compile_fn
        self.deadline = time.monotonic() + budget
        self.memo: dict[str, Program | Unsupported] = {}
        self.host: dict[str, str] = {n: "its value is a tuple, which no step hands over" for n in view.host_only}
        self.apart: list[tuple[frozenset[str], frozenset[str]]] = []
        self.compiles = 0

    # -- compiling --------------------------------------------------------------------------
    def compile(self, names: list[str]) -> Program | Unsupported:
        sub = self.view.subgraph(names, "region")
        key = print_hlo(sub.graph).split("\n", 1)[1]        # the text without the module name
        hit = self.memo.get(key)
        if hit is None:
            self.compiles += 1
            try:
                hit = self.compile_fn(sub.graph)
            except Unsupported as e:
                hit = e
            self.memo[key] = hit
        return hit

    def probe(self, name: str) -> Unsupported | None:
        """Why operator ``name`` does not compile alone (None: it does)."""
        r = self.compile([name])
        return r if isinstance(r, Unsupported) else None

    # -- regions ----------------------------------------------------------------------------
    def regions(self) -> list[list[str]]:
        """Maximal regions of the placeable operators not on the host (step 2)."""
        v = self.view
        part = {n: k for k, n in enumerate(v.placeable)}
        members: dict[int, set[str]] = {k: {n} for k, n in enumerate(v.placeable)}
        for n in v.placeable:
            if n in self.host:
                continue
            for o in v.deps(n):
                if o in self.host or part[o] == part[n]:
                    continue
                a, b = part[o], part[n]
                merged = members[a] | members[b]
                if any(merged & x and merged & y for x, y in self.apart):
                    continue
                if self._acyclic(part, members, a, b):
                    for m in members[b]:
                        part[m] = a
                    members[a] = merged
                    del members[b]
        out = [sorted(ms, key=v.position.__getitem__) for ms in members.values() if not (ms & self.host.keys())]
        return sorted(out, key=lambda r: v.position[r[0]])

    def _acyclic(self, part: dict[str, int], members: dict[int, set[str]], a: int, b: int) -> bool:
        """Whether merging parts ``a`` and ``b`` keeps the graph of parts acyclic: no path from
        one to the other through a third part."""
        v = self.view
        succ: dict[int, set[int]] = {}
        for n in v.placeable:
            for u in v.users[n]:
                pa, pb = part[n], part[u]
                if pa != pb:
                    succ.setdefault(pa, set()).add(pb)

        def reaches(src: int, dst: int) -> bool:
            seen, stack = {src}, [x for x in succ.get(src, ()) if x != dst]
            while stack:
                x = stack.pop()
                if x == dst:
                    return True
                if x in seen:
                    continue
                seen.add(x)
                stack.extend(succ.get(x, ()))
            return False

        return not reaches(a, b) and not reaches(b, a)

    # -- the loop ----------------------------------------------------------------------------
    def fuses(self, name: str) -> bool:
        """Whether operator ``name``, which no instruction computes alone, compiles with its
        neighbours in one of :meth:`_fused_forms`."""
        return any(not isinstance(self.compile(names), Unsupported) for names in self._fused_forms(name))

    def _fused_forms(self, name: str) -> list[list[str]]:
        """Operator ``name`` with its neighbours in the forms the compilers fuse, each in graph
        order: widened operands (an operator with the converts it reads; a convert with the
        operator reading it and that one's other operands), a narrowing (an operator with the one
        convert reading it, a convert with the operator it alone reads: a saturating conversion),
        a saturating chain (:meth:`_saturating`: a residual add) and the tail of a contraction
        (the operator with the single-use elementwise chain up to a dot or convolution, and that
        one's widened operands)."""
        v = self.view
        tries: list[list[str]] = []
        if v[name].opcode == "convert":
            for u in v.users[name]:
                if u not in self.host:
                    tries.append([u, *(d for d in v.deps(u) if d not in self.host)])
            tries += [[d, name] for d in v.deps(name) if d not in self.host and len(v.users[d]) == 1]
        widened = [d for d in v.deps(name) if d not in self.host and v[d].opcode == "convert"]
        if widened:
            tries.append([name, *widened])
        narrowed = [u for u in v.users[name] if u not in self.host and v[u].opcode == "convert"]
        if narrowed and len(v.users[name]) == 1:
            tries.append([name, *narrowed])
        chain = self._saturating(name)
        if chain is not None:
            tries.append(chain)
        tail = self._tail(name)
        if tail is not None:
            tries.append(tail)
        return [sorted(set(t), key=v.position.__getitem__) for t in tries]

    #: elementwise operators a saturating chain runs through
    _CHAIN = ("add", "subtract", "multiply", "maximum", "minimum", "clamp", "convert")

    def _saturating(self, name: str) -> list[str] | None:
        """The elementwise chain through ``name`` that ends in a narrowing convert: forward from
        ``name`` through single users to that convert, then back from it through every operator
        read only there (its widened operands included): a saturating residual add
        ``convert_s8(clamp(convert_s32(a) + convert_s32(b)))`` from any of its operators. None
        where no narrowing convert ends it."""
        v = self.view
        cur = name
        while not (v[cur].opcode == "convert" and v.deps(cur) and _nbytes(v[cur]) < _nbytes(v[v.deps(cur)[0]])):
            if len(v.users[cur]) != 1:
                return None
            u = v.users[cur][0]
            if u in self.host or v[u].opcode not in self._CHAIN:
                return None
            cur = u
        region, todo = {name, cur}, [cur]
        while todo:
            c = todo.pop()
            for d in v.deps(c):
                if d in region or d in self.host or len(v.users[d]) != 1 or v[d].opcode not in self._CHAIN:
                    continue
                region.add(d)
                todo.append(d)
        return sorted(region, key=v.position.__getitem__) if len(region) > 2 else None

    def _tail(self, name: str) -> list[str] | None:
        """The contraction whose tail ``name`` is, with that tail: back from ``name`` through the
        operators read only there (a requantizing chain, a bias or residual add and its widened
        operand; constants are not operators here), not through a view other than a reshape or a
        broadcast, up to a dot or convolution and its widened operands. None where no
        contraction is reached."""
        v = self.view
        region, todo, found = {name}, [name], False
        while todo:
            cur = todo.pop()
            if v[cur].opcode in ("dot", "convolution"):
                found = True
                region.update(d for d in v.deps(cur) if d not in self.host and v[d].opcode == "convert")
                continue
            for d in v.deps(cur):
                if (d in region or d in self.host or len(v.users[d]) != 1
                        or (v[d].opcode in VIEWS and v[d].opcode not in ("reshape", "broadcast"))):
                    continue
                region.add(d)
                todo.append(d)
        return sorted(region, key=v.position.__getitem__) if found else None

    def _compiling_part(self, named: list[str], region: list[str]) -> frozenset[str] | None:
        """The first fused form (:meth:`_fused_forms`, the contraction tail first) of an operator of
        ``named`` that is a proper part of ``region`` and compiles, else None."""
        for n in named:
            forms = self._fused_forms(n)
            for names in forms[-1:] + forms[:-1]:
                if set(names) < set(region) and not isinstance(self.compile(names), Unsupported):
                    return frozenset(names)
        return None

    def blamed(self, name: str) -> bool:
        """Whether ``name`` belongs on the host: no instruction computes it alone nor fused."""
        return self.probe(name) is not None and not self.fuses(name)

    def culprits(self, region: list[str], e: Unsupported) -> list[str]:
        """The operators of ``region`` to move to the host after its failure ``e`` (step 3): those
        ``e`` names that are :meth:`blamed`, else every blamed one; a region of one operator is its
        own culprit. (A named operator that compiles alone or fused is not moved: the failure is
        its neighbours'.)"""
        named = [n for n in region if e_names(e, self.view, n)]
        bad = [n for n in named if self.blamed(n)]
        if not bad:
            bad = [n for n in region if n not in named and self.blamed(n)]
        return bad or (list(region) if len(region) == 1 else [])

    def run(self, first: Unsupported) -> dict[tuple[str, ...], Program]:
        v = self.view
        if not v.materialized:      # else the regions' kernels differ from the graph: its reason may not hold
            if not self.host:       # the whole graph is the first region: its failure is known
                whole = v.subgraph(v.placeable, "region")
                self.memo[print_hlo(whole.graph).split("\n", 1)[1]] = first
            for n in v.placeable:
                if n not in self.host and e_names(first, v, n) and self.blamed(n):
                    self.host[n] = first.reason
        for _ in range(4 * len(v.placeable) + 8):
            compiled: dict[tuple[str, ...], Program] = {}
            changed = False
            for region in self.regions():
                if time.monotonic() > self.deadline:
                    for n in region:
                        self.host[n] = "the partitioner's time budget ran out before its region compiled"
                    changed = True
                    continue
                r = self.compile(region)
                if isinstance(r, Program) and r.contract.bounds is not None and r.contract.model is None and any(
                        u not in region for n in region for u in v.users[n]):
                    for n in region:
                        self.host[n] = (f"its region's program is held to {r.contract.what}, not bit for bit, "
                                        "and later steps read its values")
                    changed = True
                    continue
                if isinstance(r, Program):
                    compiled[tuple(region)] = r
                    continue
                changed = True
                bad = self.culprits(region, r)
                for n in bad:
                    self.host[n] = (self.probe(n) or r).reason
                if not bad:     # a combination fails: a named operator's compiling fused form (its
                    # contraction tail first) apart from the rest (what else the region holds spoils
                    # it: a clip of the layer's input), else the operators it names, else halves
                    named = [n for n in region if e_names(r, v, n)]
                    tail = self._compiling_part(named, region)
                    if tail is not None:
                        self.apart.append((tail, frozenset(n for n in region if n not in tail)))
                    elif named and len(named) < len(region):
                        self.apart.append((frozenset(named), frozenset(n for n in region if n not in named)))
                    else:
                        half = len(region) // 2
                        self.apart.append((frozenset(region[:half]), frozenset(region[half:])))
            if not changed:
                return compiled
        for region in self.regions():       # no progress within the bound: what still fails goes to the host
            if not isinstance(self.compile(region), Program):
                for n in region:
                    self.host[n] = "its region did not compile within the partitioner's rounds"
        return {tuple(r): p for r in self.regions() if isinstance(p := self.compile(r), Program)}


def _nbytes(ins: object) -> int:
    """Bytes of one element of an instruction's tensor type (0 for a tuple)."""
    t = getattr(ins, "type", None)
    dt = getattr(t, "dtype", None)
    return dt.nbytes if dt is not None else 0


def e_names(e: Unsupported, view: GraphView, name: str) -> bool:
    """Whether failure ``e`` names operator ``name`` (its opcode and type)."""
    return e.op is not None and view[name].opcode == e.op and (e.type is None or type_text(view[name].type) == e.type)


def _handed(view: GraphView, on_acc: dict[str, int]) -> tuple[int, int]:
    """Bytes handed (to the accelerator, to the host) when operator ``n`` runs in accelerator
    region ``on_acc[n]`` and every other operator on the host."""
    to_acc = to_host = 0
    for n in view.placeable:
        readers = view.users[n]
        here = on_acc.get(n)
        if here is None and any(u in on_acc for u in readers):
            to_acc += view.nbytes(n)
        elif here is not None and any(u not in on_acc for u in readers):
            to_host += view.nbytes(n)     # (between two accelerator steps a value stays in DRAM)
    return to_acc, to_host


def partition(graph: Graph, target: str, compile_fn: CompileFn, first: Unsupported,
              budget: float = 120.0) -> Partitioned:
    """``graph`` (which ``target`` cannot run whole: ``first`` says why) as accelerator regions
    and host steps (module doc); ``compile_fn`` compiles a region's kernel. Raises
    :class:`Unsupported` when no region compiles (nothing to offload)."""
    view = GraphView(graph)
    s = _Search(view, compile_fn, budget)
    compiled = s.run(first)
    # step 4: regions that give the accelerator nothing to do
    for region, prog in list(compiled.items()):
        if len(prog.instructions) == 0:
            for n in region:
                s.host[n] = "its program has no instruction (its values are constants or the inputs' bytes)"
            del compiled[region]
    computes = any(view.arithmetic(n) for r in compiled for n in r)
    for region in list(compiled):
        if computes and not any(view.arithmetic(n) for n in region) and _worse_on_acc(view, compiled, region):
            for n in region:
                s.host[n] = "it only moves data, and on the host fewer bytes are handed over"
            del compiled[region]
    if not compiled:
        raise Unsupported(f"{first.reason}; nothing else to offload: no region of the graph compiles for {target}")
    return _assemble(view, target, compiled, s.host)


def _worse_on_acc(view: GraphView, compiled: dict[tuple[str, ...], Program], region: tuple[str, ...]) -> bool:
    on = {n: k for k, r in enumerate(compiled) for n in r}
    off = {n: k for n, k in on.items() if n not in region}
    return sum(_handed(view, off)) < sum(_handed(view, on))


def plan(view: GraphView, regions: list[tuple[str, ...]]) -> list[Step]:
    """The steps of placing ``regions`` on the accelerator and every other placeable operator on
    the host, in an order the values allow: regions and host operators topologically sorted (ties
    by the graph's order), consecutive host operators one host step; a first host step makes the
    materialized constants, a last one the graph's outputs that are free values. The accelerator
    steps have no program yet. (Raises AssertionError where the regions are not orderable.)"""
    region_of = {n: k for k, r in enumerate(regions) for n in r}
    parts: dict[tuple[str, object], set[str]] = {}
    for n in view.placeable:
        parts.setdefault(("r", region_of[n]) if n in region_of else ("h", n), set()).add(n)
    key_of = {n: k for k, ms in parts.items() for n in ms}
    indeg = dict.fromkeys(parts, 0)
    succ: dict[tuple[str, object], set[tuple[str, object]]] = {k: set() for k in parts}
    for n in view.placeable:
        for u in view.users[n]:
            a, b = key_of[n], key_of[u]
            if a != b and b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    first = {k: min(view.position[n] for n in ms) for k, ms in parts.items()}
    ready = sorted((k for k, d in indeg.items() if d == 0), key=first.__getitem__)
    order: list[tuple[str, object]] = []
    while ready:
        k = ready.pop(0)
        order.append(k)
        for u in succ[k]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
        ready.sort(key=first.__getitem__)
    assert len(order) == len(parts), "the regions are not orderable"
    steps: list[Step] = []
    pending: list[str] = []

    def flush(extra: tuple[str, ...] = ()) -> None:
        if pending or extra:
            names = sorted(pending, key=view.position.__getitem__)
            sub = view.subgraph(names, f"step{len(steps)}", view.outputs_of(names) + list(extra))
            steps.append(Step("host", sub, tuple(names)))
            pending.clear()

    if view.materialized:
        where = {i.name: k for k, i in enumerate(view.comp.instructions)}
        mats = sorted(view.materialized, key=where.__getitem__)
        steps.append(Step("host", view.subgraph([], "constants", mats), ()))
    for kind, x in order:
        if kind == "h":
            pending.append(str(x))
            continue
        flush()
        region = regions[int(x)]  # type: ignore[call-overload]
        steps.append(Step("accelerator", view.subgraph(region, f"step{len(steps)}"), region))
    flush(tuple(dict.fromkeys(n for n in view.outputs if n in view.free)))
    return steps


def _assemble(view: GraphView, target: str, compiled: dict[tuple[str, ...], Program],
              host: dict[str, str]) -> Partitioned:
    """The :class:`Partitioned` program of the compiled regions (:func:`plan`), its placement
    summary and contract."""
    regions = list(compiled)
    steps = [Step(s.kind, s.sub, s.ops, compiled[s.ops]) if s.accelerator else s for s in plan(view, regions)]
    on_acc = {n: k for k, r in enumerate(regions) for n in r}
    to_acc, to_host = _handed(view, on_acc)
    hosted = [n for n in view.placeable if n not in on_acc]
    split = Split(
        macs_acc=sum(view.macs(n) for n in on_acc), macs_total=view.total_macs,
        ops_acc=len(on_acc), ops_total=len(view.placeable), bytes_to_acc=to_acc, bytes_to_host=to_host,
        regions=len(regions), host_steps=sum(not s.accelerator for s in steps),
        host=tuple(HostOp(n, view[n].opcode, type_text(view[n].type), host.get(n, "?")) for n in hosted),
        acc_ops=tuple(sorted(Counter(view[n].opcode for n in on_acc).items())))
    p = Partitioned(target, view.graph, tuple(steps), split)
    return Partitioned(target, view.graph, p.steps, split, composite_contract(p))
