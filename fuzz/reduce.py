"""Triage: reduce a failing case to a small reproducer, write it, replay it.

:func:`ddmin` is Zeller's delta debugging (complement-first, deterministic, with a cache and a time
budget). :func:`reduce_case` applies it twice to a failing case: first over the graph's computed
nodes (a node left out becomes a new parameter of its type, and whatever the root no longer reaches
is dropped), keeping a subset that fails with the same bucket signature; then over the failing input
set's elements (an element left out becomes 0). :func:`write_reproducer` writes ``kernel.hlo``,
``input<k>.npy``, ``replay.json`` and a README with the one-line replay command
(``accv fuzz --replay DIR``), which exits 1 while the bug is there and 0 once it is fixed.
``kernel.hlo`` starts with the ``// accv:`` header (:mod:`accv.regression.header`: its target, the
failing backend, the failing input files), so the folder dropped into a regression suite's kernel
folder is a test that fails while the bug is there (docs/regression.md).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semantics.graph import GraphBuilder
from semantics.hlo_parser import parse_file
from semantics.hlo_printer import print_hlo
from semantics.ir import Attrs, Graph
from semantics.types import TensorType

from .case import Verdict, evaluate_graph

__all__ = ["Reduced", "ddmin", "operator_count", "reduce_case", "replay", "subgraph", "write_reproducer"]

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
                budget_s: float = 120.0) -> Reduced | None:
    """Reduce a failing graph (module docstring); None when it does not fail (any more)."""
    t0 = time.monotonic()
    first = evaluate_graph(target, graph, backends, seed, proofs)
    sig = first.signature(target)
    if sig is None:
        return None

    def same(g: Graph, inputs: list | None = None) -> Verdict | None:
        try:
            v = evaluate_graph(target, g, backends, seed, proofs, inputs=inputs)
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

        def with_kept(c: list[int]) -> list[tuple[str, list[np.ndarray]]]:
            ys = [x.copy() for x in xs]
            kept = {flat[i] for i in c}
            for i, (k, j) in enumerate(flat):
                if (k, j) not in kept:
                    ys[k].reshape(-1)[j] = 0
            return [(v.input_set, ys)]  # type: ignore[list-item]

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


def write_reproducer(folder: Path, target: str, r: Reduced, seed: int, signature: str) -> str:
    """Write the reproducer of ``r`` into ``folder``; returns the replay command."""
    from accv.npyio import save_output

    from accv.regression.header import format_header

    folder.mkdir(parents=True, exist_ok=True)
    backend = r.verdict.backend
    xs = r.verdict.inputs
    # the header makes the folder a regression-suite entry as it is (docs/regression.md)
    header = format_header(targets=[target], backends=[backend] if backend else [],
                           inputs=[f"input{k}.npy" for k in range(len(xs))] if xs is not None else [])
    (folder / "kernel.hlo").write_text(header + print_hlo(r.graph))
    if xs is not None:
        for k, x in enumerate(xs):
            save_output(folder / f"input{k}.npy", np.asarray(x))
    meta = {"target": target, "backend": backend, "seed": seed, "signature": signature,
            "inputs": None if xs is None else len(xs), "outcome": r.verdict.outcome, "reason": r.verdict.reason,
            "operators_before": r.operators_before, "operators_after": r.operators_after,
            "inputs_zeroed": r.inputs_zeroed}
    (folder / "replay.json").write_text(json.dumps(meta, indent=1) + "\n")
    cmd = f"accv fuzz --replay {folder}"
    (folder / "README.md").write_text(
        f"# {signature}\n\n{r.verdict.reason}\n\nReduced from {r.operators_before} to {r.operators_after} operators "
        f"({r.inputs_zeroed} input elements set to 0). Replay (exits 1 while the bug is there, 0 once fixed):\n\n"
        f"    {cmd}\n")
    return cmd


def replay(folder: str | Path) -> Verdict:
    """Run a reproducer folder again: its kernel on its target and backend with its inputs."""
    from accv.npyio import load_input

    folder = Path(folder)
    meta = json.loads((folder / "replay.json").read_text())
    g = parse_file(folder / "kernel.hlo")
    inputs = None
    if meta.get("inputs") is not None:
        xs = [load_input(folder / f"input{k}.npy", t, k) for k, t in enumerate(g.param_types)]  # type: ignore[arg-type]
        inputs = [("replay", xs)]
    backends = (meta["backend"],) if meta.get("backend") else ()
    return evaluate_graph(meta["target"], g, backends, int(meta["seed"]), inputs=inputs)


def reproducer_dir(db: str | Path, signature: str) -> Path:
    """The folder of a bucket's reproducer: beside the database, ``<db>.repro/<signature slug>``."""
    db = Path(db)
    return db.parent / f"{db.name}.repro" / _slug(signature)
