"""Pii graphs (seed 000 §5.2, §5.4): what extraction (:mod:`.extract`) and the tiling
(:mod:`.tiling`) hand to phase 2 -- the instructions θ_{α,?} with their α fixed and β open, their
operands, and the identity nodes (an input's bytes, constants, concat^H).

What belongs here: the declarations :class:`PiiNode` (a node, once made, is never changed: a
variant is a :func:`dataclasses.replace` of it; not ``frozen=True``, whose ``__init__`` costs 4x
and a compile makes hundreds of nodes) and :class:`PiiGraph` (nodes listed in the order
they were made, operands before users; the roots are the kernel's outputs), and
:func:`pii_parts`, which reads a pii e-node's α and operands.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from semantics.types import TensorType

from ..isa import HBM, Accelerator
from .egraph import NodeInfo

__all__ = ["PiiNode", "PiiGraph", "pii_parts", "PartsMemo"]

#: :func:`pii_parts`' memo: id(info) -> (info, its parts) (the memo keeps the info alive)
PartsMemo = dict[int, tuple[NodeInfo, tuple[dict[str, int], set[int], list[str]]]]


@dataclass(slots=True)
class PiiNode:
    """One node of a pii graph: an instruction θ_{α,?} (``instr``), a flattened input (from byte
    ``offset`` on: slice^H of an input), a constant, or concat^H of HBM pieces (``operands`` at
    byte ``offsets`` of the node's slice), with the value ids of its operands (None for an
    operand g_θ ignores). Identity nodes emit no instruction (§5.2.3)."""

    id: int
    kind: str                      # "pii" | "input" | "const" | "concat"
    instr: str = ""
    alpha: tuple[tuple[str, int], ...] = ()
    buffer: str = HBM
    type: TensorType | None = None
    operands: tuple[int | None, ...] = ()
    input_index: int = -1
    literal: object = None
    eclass: int = -1
    offset: int = 0
    offsets: tuple[int, ...] = ()


@dataclass
class PiiGraph:
    """Pii nodes (``nodes[i].id == i``) and the node of each kernel output (``roots``)."""

    nodes: list[PiiNode] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)

    def count(self) -> int:
        return sum(1 for n in self.nodes if n.kind == "pii")

    def signature(self) -> tuple:
        return tuple((n.kind, n.instr, n.alpha, n.operands, n.input_index, n.offset, n.offsets) for n in self.nodes)

    def rematerialized(self, acc: Accelerator) -> PiiGraph | None:
        """The same computation with every shared fused pii (an instruction with ``followed_by``,
        e.g. a weight preload) duplicated per consumer: the fallback when no order of the shared
        graph fits memory (the single value its buffer holds is overwritten between two uses).
        None when nothing is shared."""
        users: dict[int, list[int]] = {}
        for n in self.nodes:
            for o in n.operands:
                if o is not None:
                    users.setdefault(o, []).append(n.id)
        shared = [n for n in self.nodes if n.kind == "pii" and acc.instructions[n.instr].followed_by
                  and len(users.get(n.id, ())) > 1 and n.id not in self.roots]
        if not shared:
            return None
        nodes = list(self.nodes)
        for n in shared:
            for u in users[n.id][1:]:
                clone = replace(n, id=len(nodes))
                nodes.append(clone)
                un = nodes[u]
                nodes[u] = replace(un, operands=tuple(clone.id if o == n.id else o for o in un.operands))
        return PiiGraph(nodes, list(self.roots))


def pii_parts(acc: Accelerator, info: NodeInfo, memo: PartsMemo | None = None,
              ) -> tuple[dict[str, int], set[int], list[str]]:
    """A pii's α, the operand positions its g_θ ignores (no e-graph child), and the buffers of
    the operands it has children for, in order. ``memo``: the target's (its
    :class:`~compilers.act.context.TargetContext` memo ``pii_parts``; shared: read, never change)."""
    if memo is not None:
        hit = memo.get(id(info))
        if hit is not None and hit[0] is info:
            return hit[1]
    alpha = dict(info.attrs)
    unused = set(alpha.pop("_unused", ()))
    ins = acc.instructions[info.name]
    out = (alpha, unused, [s.buffer for i, s in enumerate(ins.inputs) if i not in unused])
    if memo is not None:
        memo[id(info)] = (info, out)
    return out
