"""Module 4 of Act (seed 000 §6.4, appendix C.4): the orders in which a pii graph's instructions
may run.

What belongs here: :func:`su_order` (the extended Sethi-Ullman order of C.4: esun_d(y) =
max(mem_d(y), min_i τ_d(x_i)), τ_d(x_i) = esun_d(x_i) + Σ_{j≠i} mem_d(x_j); operands visited in
decreasing max_d τ_d(x_i)/|d|), :func:`topological_orders` (the others, depth first),
:func:`orders` (the first, then the others, each with the description's fused pairs made
adjacent by :func:`fuse`) and :func:`deps` (a node's pii producers, through concat^H). Pruning
orders whose interference contains one that already failed (§6.4.2) is the driver's, with
:func:`.liveness.interference`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...isa import HBM, Accelerator
from ..pii import PiiGraph

__all__ = ["deps", "su_order", "fuse", "orders", "topological_orders"]


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
