"""Loops back from a flat program: runs of instructions that repeat with addresses moving by fixed
steps, and runs of such loops, so the emitted C of a large program is nested loops a C compiler
builds in seconds.

What belongs here: :func:`reroll` (a program's instruction list as a sequence of single
instructions and :class:`Loop` s, nested) and :func:`expand` (the inverse, which :func:`reroll`
checks its answer against). A program stays a flat list of concrete instructions (seed 000's
model); only the C text is rolled.

A node is a :class:`~compilers.program.Concrete` instruction or a :class:`Loop`. A node's
*addresses* are its attributes of :data:`VARYING` in order (a loop's: its body's, of its first
repetition); its *shape* is everything else (names, registers, counts, steps). A :class:`Loop` is
``count`` repetitions of ``body``: repetition ``j`` is the body with address ``s`` moved by ``j *
steps[s]``. Only addresses vary (tile and register numbers must be constants of the C: intrinsics
take immediates).

The search runs in levels: level 1 rolls the instructions, level 2 rolls the sequence level 1
left (a store's 16 row loops, one per tile, become one loop over tiles), and so on up to ``depth``
levels or until a level finds nothing. Each level is greedy from the front: at each position, the
period (1..``max_period`` nodes) whose run covers the most nodes (at least ``min_count``
repetitions), the shortest period on a tie; periods are proposed from the next occurrences of the
node's shape, and a period is tried on the shape sequence before its addresses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from ...program import Concrete

__all__ = ["Loop", "Node", "VARYING", "reroll", "expand", "addresses", "per_node"]

T = TypeVar("T")

#: the attributes a loop's repetitions may move (HBM byte addresses)
VARYING = frozenset({"addr"})


@dataclass(frozen=True)
class Loop:
    """``count`` repetitions of ``body``, address ``s`` (in :func:`addresses` order) moving by
    ``steps[s]`` per repetition (module doc)."""

    count: int
    body: tuple[Node, ...]
    steps: tuple[int, ...]


Node = Concrete | Loop


def addresses(node: Node) -> tuple[int, ...]:
    """The node's varying attribute values, of its first repetition for a loop."""
    if isinstance(node, Concrete):
        return tuple(v for k, v in node.attrs if k in VARYING)
    return tuple(a for b in node.body for a in addresses(b))


def _shape(node: Node) -> tuple:
    if isinstance(node, Concrete):
        return (node.name, tuple((k, None if k in VARYING else v) for k, v in node.attrs))
    return ("loop", node.count, node.steps, tuple(_shape(b) for b in node.body))


def _level(nodes: Sequence[Node], max_period: int, min_count: int) -> list[Node]:
    """One level of the search (module doc) over ``nodes``."""
    ids: dict[tuple, int] = {}
    names = [ids.setdefault(_shape(x), len(ids)) for x in nodes]
    addrs = [addresses(x) for x in nodes]
    where: dict[int, list[int]] = {}
    for k, nm in enumerate(names):
        where.setdefault(nm, []).append(k)
    nxt = [0] * len(nodes)            # per position: its index in where[name]
    for ks in where.values():
        for j, k in enumerate(ks):
            nxt[k] = j

    def diff(a: int, b: int) -> tuple[int, ...]:
        return tuple(y - x for x, y in zip(addrs[a], addrs[b], strict=True))

    def run_at(i: int, p: int) -> int:
        n = len(nodes)
        if i + 2 * p > n or names[i:i + p] != names[i + p:i + 2 * p]:
            return 1
        steps = [diff(i + k, i + p + k) for k in range(p)]
        c = 2
        while i + (c + 1) * p <= n and names[i + c * p:i + (c + 1) * p] == names[i:i + p]:
            base = i + (c - 1) * p
            if any(diff(base + k, base + p + k) != steps[k] for k in range(p)):
                break
            c += 1
        return c

    out: list[Node] = []
    i, n = 0, len(nodes)
    while i < n:
        best_cover, best_p, best_c = 0, 0, 0
        occ = where[names[i]]
        j = nxt[i] + 1
        while j < len(occ) and occ[j] - i <= max_period:
            p = occ[j] - i
            j += 1
            c = run_at(i, p)
            if c >= min_count and c * p > best_cover:
                best_cover, best_p, best_c = c * p, p, c
        if best_c:
            steps = tuple(s for k in range(best_p) for s in diff(i + k, i + best_p + k))
            out.append(Loop(best_c, tuple(nodes[i:i + best_p]), steps))
            i += best_c * best_p
        else:
            out.append(nodes[i])
            i += 1
    return out


def reroll(ins: Sequence[Concrete], max_period: int = 64, min_count: int = 3, depth: int = 4) -> list[Node]:
    """``ins`` as single instructions and nested loops (module doc); :func:`expand` of the answer
    is ``ins``."""
    nodes: list[Node] = list(ins)
    for _ in range(depth):
        rolled = _level(nodes, max_period, min_count)
        if len(rolled) == len(nodes):
            break
        nodes = rolled
    if expand(nodes) != list(ins):
        raise AssertionError("rerolled program does not expand to the program")   # a bug here, not the input's
    return nodes


def per_node(nodes: Sequence[Node], values: Sequence[T]) -> list[tuple[Node, Sequence[T]]]:
    """Each node with its slice of ``values``, one value per address (in :func:`addresses` order)."""
    out = []
    at = 0
    for x in nodes:
        w = len(addresses(x))
        out.append((x, values[at:at + w]))
        at += w
    return out


def _moved(body: Sequence[Node], delta: Sequence[int]) -> list[Node]:
    """``body`` with its addresses (in :func:`addresses` order) moved by ``delta``."""
    out: list[Node] = []
    for b, d in per_node(body, delta):
        if isinstance(b, Concrete):
            it = iter(d)
            out.append(Concrete(b.name, tuple((k, v + next(it)) if k in VARYING else (k, v) for k, v in b.attrs)))
        else:
            out.append(Loop(b.count, tuple(_moved(b.body, d)), b.steps))
    return out


def expand(nodes: Sequence[Node]) -> list[Concrete]:
    """The instruction list ``nodes`` stands for."""
    out: list[Concrete] = []
    for x in nodes:
        if isinstance(x, Concrete):
            out.append(x)
            continue
        for j in range(x.count):
            out += expand(_moved(x.body, [j * s for s in x.steps]))
    return out
