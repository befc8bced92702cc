"""Small checks shared by operator rules (kept here so each rule states them once), and the size
arithmetic of the shape rules (:func:`ceil_div`, :func:`size_max`), which serves concrete sizes
and the rule language's symbolic ones alike."""

from __future__ import annotations

from typing import Any

from ..dtypes import DType
from ..types import TensorType, Type
from ._table import OpError


def tensor(t: Type, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpError(f"{what} must be a tensor, got tuple {t}")
    return t


def same_shape(types: list[Type], what: str = "operands") -> TensorType:
    ts = [tensor(t, f"operand {i}") for i, t in enumerate(types)]
    for i, t in enumerate(ts[1:], 1):
        if t.shape != ts[0].shape:
            raise OpError(f"{what} have different shapes: {ts[0].short()} vs {t.short()} (operand {i})")
    return ts[0]


def same_dtype(types: list[Type], what: str = "operands") -> DType:
    ts = [tensor(t, f"operand {i}") for i, t in enumerate(types)]
    for i, t in enumerate(ts[1:], 1):
        if t.dtype != ts[0].dtype:
            raise OpError(f"{what} have different element types: {ts[0].dtype} vs {t.dtype} (operand {i})")
    return ts[0].dtype


def dims_valid(dims: tuple[int, ...], rank: int, what: str, unique: bool = True) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise OpError(f"{what} {list(dims)}: dimension {d} out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        raise OpError(f"{what} {list(dims)} repeats a dimension")


def need_declared(declared: Type | None, opname: str) -> TensorType:
    if declared is None:
        raise OpError(f"{opname} needs its result type written out")
    return tensor(declared, "result")


def ceil_div(a: Any, b: Any) -> Any:
    """The ceiling of ``a / b`` for ``b > 0``: of ints, or of the z3 integer terms the rule language
    sizes shapes with (z3's integer division is Euclidean: floor for a positive divisor)."""
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (a + b - 1) / b


def size_max(a: Any, b: Any) -> Any:
    """The larger of two sizes: ints, or z3 integer terms."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    import z3

    return z3.If(a > b, a, b)
