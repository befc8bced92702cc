"""IR declarations, data only: literals, attributes, instructions, computations, graphs.

Everything here is a frozen dataclass; construction with validation and shape inference is in
:mod:`semantics.graph`, evaluation in :mod:`semantics.interp`, SMT in :mod:`semantics.smt`,
text in :mod:`semantics.hlo_parser` / :mod:`semantics.hlo_printer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .dtypes import DType, from_numpy
from .errors import SourceLoc
from .types import TensorType, Type

__all__ = ["Literal", "Attrs", "Instruction", "Computation", "Graph"]


@dataclass(frozen=True)
class Literal:
    """A constant tensor value, stored as its raw bytes so that equality is bit-exact (NaN payloads,
    -0.0) and the object is hashable."""

    dtype: DType
    shape: tuple[int, ...]
    data: bytes

    @staticmethod
    def from_array(a: np.ndarray) -> Literal:
        a = np.asarray(a)
        return Literal(from_numpy(a.dtype), tuple(a.shape), a.tobytes())  # tobytes() is C order

    def to_array(self) -> np.ndarray:
        a = np.frombuffer(self.data, dtype=self.dtype.np).reshape(self.shape)
        return a.copy()

    def __repr__(self) -> str:
        return f"Literal({self.dtype.name}{list(self.shape)})"


@dataclass(frozen=True)
class Attrs:
    """An immutable, ordered attribute map (HLO attribute name -> parsed value)."""

    items: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(**kw: Any) -> Attrs:
        return Attrs(tuple(kw.items()))

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        return default

    def __getitem__(self, key: str) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.items)

    def keys(self) -> list[str]:
        return [k for k, _ in self.items]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attrs) and dict(self.items) == dict(other.items)

    def __hash__(self) -> int:
        return hash(frozenset(self.items))


@dataclass(frozen=True)
class Instruction:
    """One SSA value: ``name = type opcode(operands...), attrs``.

    ``type`` is the instruction's result type; its layout is the one written in the source (or
    None), the dtype and shape always equal the inferred ones.
    """

    name: str
    opcode: str
    operands: tuple[str, ...]
    attrs: Attrs
    type: Type
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @property
    def tensor_type(self) -> TensorType:
        assert isinstance(self.type, TensorType), self.name
        return self.type


@dataclass(frozen=True)
class Computation:
    """A straight-line SSA computation in topological order; ``params[i]`` is parameter(i)."""

    name: str
    instructions: tuple[Instruction, ...]
    root: str
    params: tuple[str, ...]
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}

    def __getitem__(self, name: str) -> Instruction:
        return self.by_name[name]

    @property
    def root_instruction(self) -> Instruction:
        return self.by_name[self.root]

    @property
    def param_types(self) -> tuple[Type, ...]:
        return tuple(self.by_name[p].type for p in self.params)

    @property
    def result_type(self) -> Type:
        return self.root_instruction.type

    def users(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i.name: [] for i in self.instructions}
        for ins in self.instructions:
            for o in ins.operands:
                out[o].append(ins.name)
        return out


@dataclass(frozen=True)
class Graph:
    """An HLO module: an entry computation plus the computations it calls (reduce regions).

    Immutable; build one with :class:`semantics.graph.GraphBuilder` or parse HLO text.
    """

    name: str
    computations: tuple[Computation, ...]
    entry_name: str

    @cached_property
    def _by_name(self) -> dict[str, Computation]:
        return {c.name: c for c in self.computations}

    @property
    def entry(self) -> Computation:
        return self._by_name[self.entry_name]

    def computation(self, name: str) -> Computation:
        return self._by_name[name]

    @property
    def param_types(self) -> tuple[Type, ...]:
        return self.entry.param_types

    @property
    def result_type(self) -> Type:
        return self.entry.result_type

    @property
    def result_types(self) -> tuple[TensorType, ...]:
        """The entry's outputs as a flat list (one for a tensor root, the elements of a tuple root)."""
        t = self.result_type
        if isinstance(t, TensorType):
            return (t,)
        return tuple(e for e in t.elements if isinstance(e, TensorType))

    def __len__(self) -> int:
        return len(self.entry.instructions)
