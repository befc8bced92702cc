"""Module 6 of Act (seed 000 §6, appendix C.6): the program of an allocated pii graph.

What belongs here: :func:`emit` -- the concrete instruction stream in the order solved (identity
nodes emit nothing; each instruction's attributes in declaration order, α and the solved β) and
the constant section (constants are disjoint, concatenated into d0).
"""

from __future__ import annotations

from ...isa import Accelerator
from ...program import Concrete, Program
from ..pii import PiiGraph
from .allocate import Allocation
from .csp import Layout

__all__ = ["emit"]


def emit(acc: Accelerator, g: PiiGraph, alloc: Allocation, lay: Layout) -> Program:
    """Module 6: concrete instructions in order (attributes in declaration order) + constants."""
    out = []
    for v in alloc.order:
        node = g.nodes[v]
        ins = acc.instructions[node.instr]
        env = {**dict(node.alpha), **alloc.beta[v]}
        out.append(Concrete(ins.name, tuple((a, int(env[a])) for a in ins.attrs)))
    consts = []
    for v, addr in sorted(alloc.const_addr.items(), key=lambda kv: kv[1]):
        lit = g.nodes[v].literal
        consts.append((addr, bytes(lit.data)))   # type: ignore[union-attr]
    return Program(acc.name, tuple(out), tuple(lay.inputs), tuple(lay.outputs), tuple(consts))
