"""Tensor types: element type, static shape and XLA layout; tuple types.

A layout (``{1,0}``, ``{1,0:T(16,16)}``) fixes where each element lives in memory: it changes a
tensor's byte image (see :mod:`semantics.layout`), never its value. Types compare equal only when
dtype, shape and layout are equal; :meth:`TensorType.same_value_type` ignores the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .dtypes import DType

__all__ = ["Layout", "TensorType", "TupleType", "Type", "default_layout"]


@dataclass(frozen=True)
class Layout:
    """An XLA layout: minor-to-major dimension order plus at most one level of tiling.

    ``tiles`` is empty for a dense layout, else the tile shape (it tiles the ``len(tiles)``
    most-minor physical dimensions, XLA's ``T(...)``).
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[int, ...] = ()

    def is_default_for(self, rank: int) -> bool:
        return not self.tiles and self.minor_to_major == tuple(range(rank - 1, -1, -1))

    def __str__(self) -> str:
        s = ",".join(str(d) for d in self.minor_to_major)
        if self.tiles:
            s += ":T(" + ",".join(str(t) for t in self.tiles) + ")"
        return "{" + s + "}"


def default_layout(rank: int) -> Layout:
    """XLA's default (row-major) layout ``{rank-1,...,0}``."""
    return Layout(tuple(range(rank - 1, -1, -1)))


@dataclass(frozen=True)
class TensorType:
    """``dtype[shape]{layout}``; ``layout`` is None when the text gave none (row-major)."""

    dtype: DType
    shape: tuple[int, ...]
    layout: Layout | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def effective_layout(self) -> Layout:
        return self.layout if self.layout is not None else default_layout(self.rank)

    @property
    def row_major(self) -> bool:
        """Stored in XLA's default layout (row-major, no tiling): its bytes are its elements in order."""
        return self.effective_layout == default_layout(self.rank)

    def same_value_type(self, other: Type) -> bool:
        """True when ``other`` holds the same values (dtype and shape), whatever the layout."""
        return isinstance(other, TensorType) and self.dtype == other.dtype and self.shape == other.shape

    def with_dtype(self, dt: DType) -> TensorType:
        return TensorType(dt, self.shape)

    def without_layout(self) -> TensorType:
        return TensorType(self.dtype, self.shape)

    def short(self) -> str:
        return f"{self.dtype.name}[{','.join(str(d) for d in self.shape)}]"

    def __str__(self) -> str:
        s = self.short()
        if self.layout is not None and not (self.rank == 0 and not self.layout.tiles):
            s += str(self.layout)
        return s


@dataclass(frozen=True)
class TupleType:
    """``(t0, t1, ...)``: the type of a tuple instruction."""

    elements: tuple[Type, ...]

    def same_value_type(self, other: Type) -> bool:
        return (isinstance(other, TupleType) and len(other.elements) == len(self.elements)
                and all(a.same_value_type(b) for a, b in zip(self.elements, other.elements, strict=True)))

    def without_layout(self) -> TupleType:
        return TupleType(tuple(e.without_layout() for e in self.elements))

    def short(self) -> str:
        return "(" + ", ".join(e.short() for e in self.elements) + ")"

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


Type = TensorType | TupleType
