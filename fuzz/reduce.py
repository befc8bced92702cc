"""Triage: reduce a failing case to a small reproducer.

:func:`ddmin` is Zeller's delta debugging (complement-first, deterministic, with a cache and a time
budget). :func:`reduce_case` applies it twice to a failing case: first over the graph's computed
nodes (a node left out becomes a new parameter of its type, and whatever the root no longer reaches
is dropped), keeping a subset that fails with the same bucket signature; then over the failing input
set's elements (an element left out becomes 0). The reduced case is written in the one reproducer
format (:func:`check.reproducer.write_reproducer`, replayed by ``accv fuzz --replay DIR``) into
:func:`reproducer_dir` beside the campaign's database.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from check.evaluate import evaluate_graph
from check.inputs import InputSet
from check.reproducer import write_reproducer
from check.verdict import Verdict
from semantics.graph import GraphBuilder
from semantics.ir import Attrs, Graph
from semantics.types import TensorType

__all__ = ["Reduced", "ddmin", "operator_count", "reduce_case", "reproducer_dir", "subgraph", "write_reduced"]

_LEAVES = ("parameter", "constant")


def ddmin(items: Sequence[int], fails: Callable[[list[int]], bool], budget_s: float = 120.0) -> list[int]:
    """A 1-minimal subset of ``items`` on which ``fails`` holds (``fails(items)`` must hold), or the
    smallest found when ``budget_s`` runs out."""
    cache: dict[tuple[int, ...], bool] = {}
    t_end = time.monotonic() + budget_s

    def test(c: list[int]) -> bool:
        k = tuple(c)
        if k not in cache:
            cache[k] = fails(c)
        return cache[k]

    cur, n = list(items), 2
    while len(cur) >= 2 and time.monotonic() < t_end:
        chunks = [cur[i * len(cur) // n:(i + 1) * len(cur) // n] for i in range(n)]
        for ch in chunks:                      # try each complement first, then each chunk
            comp = [x for x in cur if x not in set(ch)]
            if comp and test(comp):
                cur, n = comp, max(n - 1, 2)
                break
        else:
            for ch in chunks:
                if ch and len(ch) < len(cur) and test(ch):
                    cur, n = ch, 2
                    break
            else:
                if n >= len(cur):
                    break
                n = min(2 * n, len(cur))
    if len(cur) == 1 and test([]):
        return []
    return cur


def operator_count(graph: Graph) -> int:
    """Computed instructions of the entry (parameters and constants not counted)."""
    return sum(i.opcode not in _LEAVES for i in graph.entry.instructions)


def _nodes(graph: Graph) -> list[str]:
    return [i.name for i in graph.entry.instructions if i.opcode not in _LEAVES and i.name != graph.entry.root]


def subgraph(graph: Graph, keep: set[str]) -> Graph:
    """``graph`` with every computed node outside ``keep`` (the root always kept) replaced by a new
    parameter of its type, and unreachable instructions dropped."""
    e = graph.entry
    by = e.by_name
    need: set[str] = set()
    stack = [e.root]
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need.add(n)
        ins = by[n]
        if ins.opcode in _LEAVES or (n not in keep and n != e.root):
            continue
        stack.extend(ins.operands)
    gb = GraphBuilder(graph.name)
    for c in graph.computations:
        if c.name != e.name:
            gb.add_computation(c)
    cb = gb.computation(e.name)
    k = 0
    for ins in e.instructions:
        if ins.name not in need:
            continue
        if ins.opcode == "parameter" or (ins.opcode not in _LEAVES and ins.name not in keep and ins.name != e.root):
            if not isinstance(ins.type, TensorType):
                cb.add(ins.name, ins.opcode, list(ins.operands), ins.attrs, declared=ins.type)
                continue
            cb.add(ins.name, "parameter", [], Attrs.of(index=k), declared=ins.type)
            k += 1
        else:
            cb.add(ins.name, ins.opcode, list(ins.operands), ins.attrs, declared=ins.type)
    cb.set_root(e.root)
    gb.add_computation(cb.build(), entry=True)
    return gb.build()


@dataclass
class Reduced:
    graph: Graph
    verdict: Verdict
    operators_before: int
    operators_after: int
    inputs_zeroed: int
    seconds: float


def reduce_case(target: str, graph: Graph, backends: tuple[str, ...], seed: int, proofs: str = "prove",
                budget_s: float = 120.0, host: bool = False, withhold: tuple[str, ...] = ()) -> Reduced | None:
    """Reduce a failing graph (module docstring); None when it does not fail (any more). ``host``,
    ``withhold``: compile as the campaign that found it did."""
    t0 = time.monotonic()
    first = evaluate_graph(target, graph, backends, seed, proofs, host=host, withhold=withhold)
    sig = first.signature(target)
    if sig is None:
        return None

    def same(g: Graph, sets: list[InputSet] | None = None) -> Verdict | None:
        try:
            v = evaluate_graph(target, g, backends, seed, proofs, sets=sets, host=host, withhold=withhold)
        except Exception:  # noqa: BLE001 - a reduced graph the reference cannot evaluate does not reproduce
            return None
        return v if v.signature(target) == sig else None

    nodes = _nodes(graph)
    keep = ddmin(list(range(len(nodes))), lambda c: same(subgraph(graph, {nodes[i] for i in c})) is not None,
                 budget_s / 2)
    g = subgraph(graph, {nodes[i] for i in keep})
    v = same(g) or first
    zeroed = 0
    if v.inputs is not None and v.input_set is not None:
        xs = [np.asarray(x) for x in v.inputs]
        sizes = [x.size for x in xs]
        flat = [(k, j) for k, n in enumerate(sizes) for j in range(n)
                if not (xs[k].reshape(-1)[j] == 0 and not np.signbit(xs[k].reshape(-1)[j]))]

        def with_kept(c: list[int]) -> list[InputSet]:
            ys = [x.copy() for x in xs]
            kept = {flat[i] for i in c}
            for i, (k, j) in enumerate(flat):
                if (k, j) not in kept:
                    ys[k].reshape(-1)[j] = 0
            return [InputSet(str(v.input_set), "given", seed, ys)]

        if flat and len(flat) <= 4096 and same(g, with_kept(list(range(len(flat))))) is not None:
            left = max(budget_s - (time.monotonic() - t0), 5.0)
            kc = ddmin(list(range(len(flat))), lambda c: same(g, with_kept(c)) is not None, left)
            v2 = same(g, with_kept(kc))
            if v2 is not None:
                v = v2
                zeroed = len(flat) - len(kc)
    return Reduced(g, v, operator_count(graph), operator_count(g), zeroed, time.monotonic() - t0)


def _slug(sig: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", sig).strip("_")[:80]


def write_reduced(folder: Path, target: str, r: Reduced, seed: int, signature: str, host: bool = False,
                  withhold: tuple[str, ...] = ()) -> str:
    """Write the reproducer of a reduced case into ``folder`` (``host`` / ``withhold``: as the case
    was compiled); returns the replay command."""
    return write_reproducer(folder, target, r.graph, r.verdict, seed, signature=signature,
                            reduced=(r.operators_before, r.operators_after, r.inputs_zeroed), host=host,
                            withhold=withhold)


def reproducer_dir(db: str | Path, signature: str) -> Path:
    """The folder of a bucket's reproducer: beside the database, ``<db>.repro/<signature slug>``."""
    db = Path(db)
    return db.parent / f"{db.name}.repro" / _slug(signature)
