"""Graphs written in code: a thin layer over :class:`semantics.graph.GraphBuilder` for code that
composes HLO graphs (the middle end's layers, identities and row blocks; tests), so that no one
writes HLO text only to parse it back.

What belongs here: :func:`tensor` (a :class:`~semantics.types.TensorType` from a dtype name and
sizes), :class:`Builder` (one entry computation, instruction by instruction: each is validated
and its type inferred by the operator table as it is added, exactly as the parser adds a parsed
one) and :func:`rebuild` (a graph built again with some instructions' types changed).

Attribute values are those the parser produces: ``dimensions=(1,)``, ``slice=((start, limit,
stride), ...)``, ``padding=((lo, hi, interior), ...)``, raw texts for ``window`` / ``dim_labels``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .dtypes import DTYPES
from .graph import ComputationBuilder, GraphBuilder
from .ir import Attrs, Graph, Literal
from .types import Layout, TensorType, Type

__all__ = ["Builder", "rebuild", "tensor"]


def tensor(dtype: str, *shape: int, layout: Sequence[int] | None = None, tiles: Sequence[int] = ()) -> TensorType:
    """``dtype[shape]`` with the layout ``{layout:T(tiles)}`` when given (None: as the text leaves it)."""
    lay = Layout(tuple(layout), tuple(tiles)) if layout is not None else None
    return TensorType(DTYPES[dtype], tuple(int(d) for d in shape), lay)


class Builder:
    """The entry computation ``name`` of a module ``name`` (as ``HloModule name`` / ``ENTRY name``),
    built instruction by instruction; every method returns the instruction's name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._gb = GraphBuilder(name)
        self._cb: ComputationBuilder = self._gb.computation(name)

    def param(self, name: str, index: int, t: TensorType) -> str:
        self._cb.add(name, "parameter", (), Attrs.of(index=index), declared=t)
        return name

    def const(self, name: str, value: float | int, dtype: str) -> str:
        """A scalar constant of ``dtype`` (``value`` converted by numpy, bits as numpy gives them)."""
        lit = Literal.from_array(np.array(value, dtype=DTYPES[dtype].np))
        self._cb.add(name, "constant", (), Attrs.of(literal=lit), declared=TensorType(DTYPES[dtype], ()))
        return name

    def op(self, name: str, opcode: str, *operands: str, type: TensorType | None = None, **attrs: Any) -> str:
        """``name = type opcode(operands), attrs`` (``type``: the declared result type, which the
        operators whose result only it gives need: broadcast, reshape, convert, bitcast-convert)."""
        self._cb.add(name, opcode, tuple(operands), Attrs(tuple(attrs.items())), declared=type)
        return name

    def type_of(self, name: str) -> Type:
        return self._cb.type_of(name)

    def build(self, root: str | None = None) -> Graph:
        """The graph; ``root`` (default: the last instruction added) is the entry's result."""
        if root is not None:
            self._cb.set_root(root)
        self._gb.add_computation(self._cb.build(), entry=True)
        return self._gb.build()


def rebuild(graph: Graph, types: Mapping[str, TensorType] | None = None) -> Graph:
    """``graph`` built again through the builder, each entry instruction named in ``types``
    declared with that type instead (every instruction is validated and its type inferred afresh,
    so a change that breaks a shape rule raises :class:`~semantics.errors.GraphError`)."""
    types = types or {}
    gb = GraphBuilder(graph.name)
    for c in graph.computations:
        if c.name != graph.entry.name:
            gb.add_computation(c)
    e = graph.entry
    cb = gb.computation(e.name, e.loc)
    for ins in e.instructions:
        cb.add(ins.name, ins.opcode, ins.operands, ins.attrs, declared=types.get(ins.name, ins.type), loc=ins.loc)
    cb.set_root(e.root)
    gb.add_computation(cb.build(), entry=True)
    return gb.build()
