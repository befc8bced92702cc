"""Liveness of a pii graph's values under one order (seed 000 §6.2, CSP4's pairs).

What belongs here: :func:`alias_groups` (values that share memory by construction: slices of one
input, a concat^H with its pieces; they are never CSP4 pairs), :func:`_live` (live ranges:
inputs [0, N], constants [0, b-1], piis [a, b-1], roots to N; a concat^H from its first piece's
write to its last use, its pieces as long) and :func:`interference` (the pairs of values in one
buffer whose ranges overlap), and :class:`UnionFind`, which both the alias groups and the
solver's β classes use.
"""

from __future__ import annotations

from ...isa import Accelerator
from ..pii import PiiGraph
from .order import deps

__all__ = ["alias_groups", "interference", "UnionFind"]


class UnionFind:
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


def alias_groups(g: PiiGraph) -> dict[int, int]:
    """Values that share memory by construction (identity instructions): slices of one input,
    and a concat^H with its pieces. Maps node id -> group representative."""
    uf = UnionFind()
    first_input: dict[int, int] = {}
    for n in g.nodes:
        if n.kind == "input":
            uf.union(n.id, first_input.setdefault(n.input_index, n.id))
        elif n.kind == "concat":
            for o in n.operands:
                if o is not None:
                    uf.union(o, n.id)
    return {n.id: uf.find(n.id) for n in g.nodes}


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
