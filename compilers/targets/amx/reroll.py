"""Loops back from a flat program: runs of instructions that repeat with addresses moving by fixed
steps, so the emitted C of a large program is loops a C compiler builds in seconds.

What belongs here: :func:`reroll` (a program's instruction list as a sequence of single
instructions and :class:`Run` s) and :func:`expand` (the inverse, which :func:`reroll` checks its
answer against). A program stays a flat list of concrete instructions (seed 000's model); only the
C text is rolled.

A :class:`Run` is ``count`` repetitions of the ``period`` instructions starting at ``start``:
repetition ``j`` of instruction ``k`` is instruction ``start + k`` with each attribute of
:data:`VARYING` moved by ``j * step[k][attr]``, every other attribute equal. Only addresses vary
(tile and register numbers must be constants of the C: intrinsics take immediates).

The search, greedy from the front: at each position, the period (1..``max_period``) whose run
covers the most instructions (at least ``min_count`` repetitions), the shortest period on a tie.
Periods are proposed from the next occurrences of the instruction's name, and a period is tried
on the name sequence before its attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...program import Concrete

__all__ = ["Run", "VARYING", "reroll", "expand"]

#: the attributes a run's repetitions may move (HBM byte addresses)
VARYING = frozenset({"addr"})


@dataclass(frozen=True)
class Run:
    """``count`` repetitions of instructions ``start .. start + period - 1`` (module doc)."""

    start: int
    period: int
    count: int
    steps: tuple[tuple[tuple[str, int], ...], ...]     # per instruction of the period: (attr, step)


def _steps(a: Concrete, b: Concrete) -> tuple[tuple[str, int], ...] | None:
    """The varying attributes' steps from ``a`` to ``b``, or None where they cannot be one run."""
    if a.name != b.name or len(a.attrs) != len(b.attrs):
        return None
    out = []
    for (ka, va), (kb, vb) in zip(a.attrs, b.attrs, strict=True):
        if ka != kb:
            return None
        if ka in VARYING:
            out.append((ka, vb - va))
        elif va != vb:
            return None
    return tuple(out)


def _run_at(ins: Sequence[Concrete], names: Sequence[str], i: int, p: int) -> int:
    """How many repetitions of period ``p`` start at ``i`` (1 where none)."""
    n = len(ins)
    if i + 2 * p > n or names[i:i + p] != names[i + p:i + 2 * p]:
        return 1
    steps = [_steps(ins[i + k], ins[i + p + k]) for k in range(p)]
    if any(s is None for s in steps):
        return 1
    c = 2
    while i + (c + 1) * p <= n and names[i + c * p:i + (c + 1) * p] == names[i:i + p]:
        base = i + (c - 1) * p
        if any(_steps(ins[base + k], ins[base + p + k]) != steps[k] for k in range(p)):
            break
        c += 1
    return c


def reroll(ins: Sequence[Concrete], max_period: int = 64, min_count: int = 3) -> list[Concrete | Run]:
    """``ins`` as single instructions and runs (module doc); :func:`expand` of the answer is ``ins``."""
    names = [c.name for c in ins]
    where: dict[str, list[int]] = {}
    for k, nm in enumerate(names):
        where.setdefault(nm, []).append(k)
    nxt = [0] * len(ins)            # per position: its index in where[name]
    for ks in where.values():
        for j, k in enumerate(ks):
            nxt[k] = j
    out: list[Concrete | Run] = []
    i = 0
    n = len(ins)
    while i < n:
        best_cover, best_p, best_c = 0, 0, 0
        occ = where[names[i]]
        j = nxt[i] + 1
        while j < len(occ) and occ[j] - i <= max_period:
            p = occ[j] - i
            j += 1
            c = _run_at(ins, names, i, p)
            if c >= min_count and c * p > best_cover:
                best_cover, best_p, best_c = c * p, p, c
        if best_c:
            steps = tuple(_steps(ins[i + k], ins[i + best_p + k]) or () for k in range(best_p))
            out.append(Run(i, best_p, best_c, steps))
            i += best_c * best_p
        else:
            out.append(ins[i])
            i += 1
    if expand(out, ins) != list(ins):
        raise AssertionError("rerolled program does not expand to the program")   # a bug here, not the input's
    return out


def expand(items: Sequence[Concrete | Run], ins: Sequence[Concrete]) -> list[Concrete]:
    """The instruction list ``items`` stands for (runs read their first repetition from ``ins``)."""
    out: list[Concrete] = []
    for it in items:
        if isinstance(it, Concrete):
            out.append(it)
            continue
        for j in range(it.count):
            for k in range(it.period):
                c = ins[it.start + k]
                step = dict(it.steps[k])
                out.append(Concrete(c.name, tuple((a, v + j * step[a]) if a in step else (a, v) for a, v in c.attrs)))
    return out
