"""Module 3 of Act (seed 000 §5.3-5.4, Fig. 37): compile-time constants and the extraction of pii
graphs from the saturated e-graph.

What belongs here: :func:`constants` / :func:`constant_witnesses` (bottom-up constant detection,
§5.3: literals are constant, flattened inputs are not), :class:`Extractor` (per (class, buffer)
best choices by cost, bottom-up; top-down buffer-guided extraction of a pii graph, Fig. 37;
enumeration of alternatives; the one-line reason when none exists) and :func:`gamma`, the node
bound Γ(k) = 2^k of the k-th extraction (§5.4). The graphs built are :mod:`.pii`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from semantics.ir import Literal

from ...errors import Reason
from ...isa import HBM, Accelerator
from ..context import TargetContext
from ..egraph import EGraph, ENode, NodeInfo, Snapshot
from ..pii import PiiGraph, PiiNode, pii_parts

__all__ = ["gamma", "constants", "constant_witnesses", "Extractor", "Choice"]

#: data-movement operators: a value no instruction produces is reported by the operator below them
_LAYOUT_OPS = ("reshape", "bitcast-convert", "transpose", "copy")


def gamma(k: int) -> int:
    """Γ(k) = 2^k, the node bound of the k-th extraction (§5.4)."""
    return 2 ** k


def constants(egraph: EGraph, snap: Snapshot) -> list[bool]:
    """Bottom-up: an e-class is constant when one of its e-nodes has only constant operands;
    literals are constant, flattened inputs are not (§5.3)."""
    return constant_witnesses(egraph, snap)[0]


def constant_witnesses(egraph: EGraph, snap: Snapshot) -> tuple[list[bool], list[ENode | None]]:
    """:func:`constants`, and per constant class the e-node that made it constant (its
    literal's, or an operator's whose operands became constant before it: following witnesses
    down never loops), from which :func:`.fold.value` computes its value. The least fixpoint,
    by a worklist: each e-node counts its operands not yet known constant."""
    n = len(snap.classes)
    const = [False] * n
    witness: list[ENode | None] = [None] * n
    waiting: list[list[int]] = [[] for _ in range(n)]   # class -> the e-nodes (by index) it holds up
    owner: list[tuple[int, ENode]] = []
    missing: list[int] = []
    todo: list[int] = []
    infos = egraph.infos
    for c, nodes in enumerate(snap.classes):
        for en in nodes:
            kind = infos[en.info].kind
            if kind == "input" or kind == "pii":
                continue
            kids = set(en.children)
            if not kids:
                if not const[c]:
                    const[c] = True
                    witness[c] = en
                    todo.append(c)
                elif kind == "lit":
                    witness[c] = en     # a literal is preferred: nothing to evaluate
                continue
            j = len(owner)
            owner.append((c, en))
            missing.append(len(kids))
            for k in kids:
                waiting[k].append(j)
    while todo:
        k = todo.pop()
        for j in waiting[k]:
            missing[j] -= 1
            if missing[j] == 0:
                c, en = owner[j]
                if not const[c]:
                    const[c] = True
                    witness[c] = en
                    todo.append(c)
    return const, witness


def _input_leaf(option: tuple[float, int, object]) -> bool:
    """An extraction option that is an input's own bytes (no instruction)."""
    return isinstance(option[2], tuple) and option[2][0] == "input"


@dataclass
class Choice:
    cost: float
    size: int
    enode: object   # ENode or ("input", i) or ("const",)


class Extractor:
    """Top-down buffer-guided extraction (Fig. 37) with per-(class, buffer) best choices computed
    bottom-up by cost (a pii's cost from the description plus its operands'), and enumeration of
    alternatives: the best graph first, then graphs that swap one choice for the next best."""

    def __init__(self, acc: Accelerator, egraph: EGraph, snap: Snapshot, cost_fn) -> None:  # noqa: ANN001
        self.acc = acc
        self.eg = egraph
        self.snap = snap
        self.const, self.witness = constant_witnesses(egraph, snap)
        self.values: dict[int, Literal | None] = {}
        self.cost_fn = cost_fn
        self.options: dict[tuple[int, str], list[tuple[float, int, object]]] = {}
        self._built: dict[tuple[int, ...], PiiGraph | None] = {}
        self._parts = TargetContext.of(acc).memo("pii_parts")
        self._solve()

    def _leaf(self, c: int, buf: str) -> tuple[float, int, object] | None:
        if buf != HBM:
            return None
        for en in self.snap.classes[c]:
            info = self.eg.infos[en.info]
            if info.kind == "input":
                return (0.0, 0, ("input", int(info.name)))
        if self.const[c]:
            w = self.witness[c]
            info = self.eg.infos[w.info]  # type: ignore[union-attr]
            # a class the rewrites made constant holds no literal: its value is computed
            # when a pii graph places it (:meth:`constant`), not for every class here
            return (0.0, 0, ("const", info.literal if info.kind == "lit" else None))
        return None

    def constant(self, c: int) -> Literal | None:
        """The value of constant class ``c`` (:func:`.fold.value`), or None where this process
        cannot evaluate it."""
        from .fold import value

        return value(self.eg, self.snap, self.witness, c, self.values)

    def _solve(self) -> None:
        INF = math.inf
        best: dict[tuple[int, str], tuple[float, int]] = {}
        piis: list[tuple[int, object, NodeInfo, list[tuple[int, str]]]] = []
        for c, nodes in enumerate(self.snap.classes):
            for en in nodes:
                info = self.eg.infos[en.info]
                if info.kind != "pii":
                    continue
                _, _, bufs = pii_parts(self.acc, info, self._parts)
                piis.append((c, en, info, list(zip(en.children, bufs, strict=True))))
        for c in range(len(self.snap.classes)):
            for buf in self.acc.buffers:
                lf = self._leaf(c, buf)
                if lf is not None:
                    best[(c, buf)] = (0.0, 0)
                    self.options.setdefault((c, buf), []).append(lf)
        # least fixpoint of best(c, buf) = min over piis of cost + sum of the operands' best, by a
        # worklist (a pii is re-evaluated when one of its operands improves); the fixpoint does not
        # depend on the order, costs being positive
        costs = [self.cost_fn(info) for _c, _en, info, _k in piis]
        users: dict[tuple[int, str], list[int]] = {}
        for i, (_c, _en, _info, kids) in enumerate(piis):
            for k in set(kids):
                users.setdefault(k, []).append(i)
        work = list(range(len(piis)))
        queued = [True] * len(piis)
        while work:
            i = work.pop()
            queued[i] = False
            c, _en, info, kids = piis[i]
            tot, size = costs[i], 1
            for k in kids:
                b = best.get(k)
                if b is None:
                    tot = INF
                    break
                tot += b[0]
                size += b[1]
            if tot == INF:
                continue
            key = (c, info.buffer)
            cur = best.get(key)
            if cur is None or (tot, size) < cur:
                best[key] = (tot, size)
                for j in users.get(key, ()):
                    if not queued[j]:
                        queued[j] = True
                        work.append(j)
        for i, (c, en, info, kids) in enumerate(piis):
            if all(k in best for k in kids):
                tot = costs[i] + sum(best[k][0] for k in kids)
                size = 1 + sum(best[k][1] for k in kids)
                self.options.setdefault((c, info.buffer), []).append((tot, size, en))
        for k in self.options:
            self.options[k].sort(key=lambda o: (o[0], o[1]))
        self.best = best

    def has(self, c: int, buf: str) -> bool:
        return (c, buf) in self.best

    def build(self, roots: Sequence[int], override: dict[tuple[int, str], int] | None = None,
              max_nodes: int | None = None) -> PiiGraph | None:
        """The pii graph choosing the best option per (class, buffer) (or ``override``'s index);
        None when it has a cycle or more than ``max_nodes`` piis. The graph of the best options
        is built once per roots (enumeration asks again with a larger bound each round)."""
        if not override:
            key = tuple(roots)
            if key not in self._built:
                self._built[key] = self._build(roots, {})
            g = self._built[key]
            if g is not None and max_nodes is not None and g.count() > max_nodes:
                return None
            return g
        return self._build(roots, override, max_nodes)

    def _build(self, roots: Sequence[int], override: dict[tuple[int, str], int],
               max_nodes: int | None = None) -> PiiGraph | None:
        g = PiiGraph()
        memo: dict[tuple[int, str], int] = {}
        active: set[tuple[int, str]] = set()

        def visit(c: int, buf: str, root: int | None = None) -> int | None:
            # a root is written by the program at its output's place: its own node (two outputs
            # of one value are two), and never an input leaf, whose bytes lie at the input's
            # place (a 0-instruction program would leave the output unwritten)
            key = (c, buf) if root is None else (c, buf, root)
            if key in memo:
                return memo[key]
            if key in active or (c, buf) not in self.options:
                return None
            opts = self.options[(c, buf)]
            if root is not None:
                opts = [o for o in opts if not _input_leaf(o)]
                if not opts:
                    return None
            choice = opts[min(override.get((c, buf), 0), len(opts) - 1)]
            active.add(key)
            node = choice[2]
            if isinstance(node, tuple) and node[0] == "input":
                n = PiiNode(len(g.nodes), "input", input_index=node[1], eclass=c,
                            type=self.eg.infos[self.snap.classes[c][0].info].type)
            elif isinstance(node, tuple) and node[0] == "const":
                lit = node[1] if node[1] is not None else self.constant(c)
                if lit is None:
                    active.discard(key)
                    return None
                n = PiiNode(len(g.nodes), "const", literal=lit, eclass=c,
                            type=self.eg.infos[self.snap.classes[c][0].info].type)
            else:
                info = self.eg.infos[node.info]  # type: ignore[union-attr]
                ins = self.acc.instructions[info.name]
                alpha, unused, _ = pii_parts(self.acc, info, self._parts)
                kids = list(node.children)  # type: ignore[union-attr]
                ops: list[int | None] = []
                for i, s in enumerate(ins.inputs):
                    if i in unused:
                        ops.append(None)
                        continue
                    v = visit(kids.pop(0), s.buffer)
                    if v is None:
                        active.discard(key)
                        return None
                    ops.append(v)
                n = PiiNode(len(g.nodes), "pii", info.name, tuple(alpha.items()), info.buffer, info.type,
                            tuple(ops), eclass=c)
            active.discard(key)
            g.nodes.append(n)
            memo[key] = n.id
            return n.id

        try:
            for i, r in enumerate(roots):
                v = visit(r, HBM, root=i)
                if v is None:
                    return None
                g.roots.append(v)
        finally:
            visit = None    # type: ignore[assignment]  # a recursive closure is a reference cycle: break it
        if max_nodes is not None and g.count() > max_nodes:
            return None
        return g

    def enumerate(self, roots: Sequence[int], max_nodes: int, limit: int = 16) -> Iterator[PiiGraph]:
        """The best pii graph, then one-swap variants (each (class, buffer) of the best graph
        takes its next options), without repeats; at most ``limit`` graphs."""
        seen: set[tuple] = set()
        first = self.build(roots, max_nodes=max_nodes)
        if first is None:
            return
        seen.add(first.signature())
        yield first
        n = 1
        keys = [k for k, v in self.options.items() if len(v) > 1]
        keys.sort(key=lambda k: (-self.options[k][0][0], k))
        for key in keys:
            for alt in range(1, len(self.options[key])):
                g = self.build(roots, {key: alt}, max_nodes=max_nodes)
                if g is None or g.signature() in seen:
                    continue
                seen.add(g.signature())
                yield g
                n += 1
                if n >= limit:
                    return

    def why_not(self, roots: Sequence[int], user: set[int] | None = None) -> Reason:
        """Why the root cannot be extracted: the topmost e-class with no way to be produced in
        the buffer it is needed in (the operator no instruction computes where no way produces
        it in any buffer). ``user``: the e-classes of the kernel's own values; a class the
        rewrites made (a product by an identity matrix that M2 showed equal to a convert) is
        reported only where no value of the kernel's below it is the one no instruction
        computes (the user's operator is named, not a form the compiler wrote)."""
        seen: set[tuple[int, str]] = set()
        frontier = [(r, HBM) for r in roots]
        # a root must be written: an input's own bytes (its leaf) do not count there
        written = {r for r in roots if not all(map(_input_leaf, self.options.get((r, HBM), ())))}
        for i, r in enumerate(roots):
            leaf = next((o[2] for o in self.options.get((r, HBM), ()) if _input_leaf(o)), None)
            if leaf is not None and r not in written:
                t = self.eg.infos[self.snap.classes[r][0].info].type
                return Reason(f"output {i} is the bytes of input {leaf[1]} ({t.dtype.name}{list(t.shape)}) and "
                              "no instruction sequence writes them to the output")
        layout_reason: Reason | None = None
        made_reason: Reason | None = None   # the first class the rewrites made that nothing computes
        made_stuck: Reason | None = None    # ... or that instructions move but none produces
        stuck: dict[int, Reason] = {}     # class -> its reason, at the first buffer it was needed in
        while frontier:
            c, buf = frontier.pop(0)
            if (c, buf) in seen:
                continue
            seen.add((c, buf))
            if (c, buf) in self.best:
                continue
            ops = [self.eg.infos[en.info] for en in self.snap.classes[c]]
            irs = [o for o in ops if o.kind == "op"]
            piis = [o for o in ops if o.kind == "pii"]
            if piis and irs and not any((c, o.buffer) in self.best for o in piis):
                # instructions produce it, but none can (in any buffer): the reason lies below
                # them (an operand nothing computes), or it is this value's operator where the
                # only producers move it from a buffer it cannot be in (Gemmini's store from the
                # array of a product nothing computes): the deepest such value is reported
                o = min(irs, key=lambda o: (o.name in _LAYOUT_OPS, o.name))
                if o.name not in _LAYOUT_OPS:
                    t = o.type
                    why = Reason.no_instruction(o.name, t.dtype.name, t.shape, into=buf)
                    if user is None or c in user:
                        stuck.setdefault(c, why)
                    else:
                        made_stuck = made_stuck or why
                for en in self.snap.classes[c]:
                    info = self.eg.infos[en.info]
                    if info.kind == "pii":
                        frontier.extend(zip(en.children, pii_parts(self.acc, info, self._parts)[2], strict=True))
                    elif info.kind == "op" and info.name in _LAYOUT_OPS:
                        frontier.extend((k, buf) for k in en.children)
                continue
            if not piis:
                if irs:
                    o = min(irs, key=lambda o: (o.name in _LAYOUT_OPS, o.name))
                    t = o.type
                    reason = Reason.no_instruction(o.name, t.dtype.name, t.shape, into=buf)
                    if o.name not in _LAYOUT_OPS and (user is None or c in user):
                        return reason
                    # only data movement here (a byte image, a reshape), or a value only the
                    # rewrites wrote: the kernel's operator that no instruction computes is
                    # further down; report it if there is one
                    if o.name in _LAYOUT_OPS:
                        layout_reason = layout_reason or reason
                    else:
                        made_reason = made_reason or reason
                    for en in self.snap.classes[c]:
                        if self.eg.infos[en.info].kind == "op":
                            frontier.extend((k, buf) for k in en.children)
                    continue
                if layout_reason:
                    continue
                return Reason(f"no instruction produces a {ops[0].type.dtype.name}{list(ops[0].type.shape)} value "
                              f"in {buf}")
            for en in self.snap.classes[c]:
                info = self.eg.infos[en.info]
                if info.kind != "pii" or info.buffer != buf:
                    continue
                _, _, bufs = pii_parts(self.acc, info, self._parts)
                frontier.extend(zip(en.children, bufs, strict=True))
            if not any(self.eg.infos[en.info].kind == "pii" and self.eg.infos[en.info].buffer == buf
                       for en in self.snap.classes[c]):
                t = ops[0].type
                have = sorted({o.buffer for o in piis})
                return Reason(f"a {t.dtype.name}{list(t.shape)} value is needed in {buf} but instructions produce it "
                              f"only in {', '.join(have)}")
        return ((list(stuck.values())[-1] if stuck else made_reason or made_stuck or layout_reason)
                or Reason("no complete pii graph (every candidate has a cycle)"))
