"""Small checks shared by operator rules (kept here so each rule states them once)."""

from __future__ import annotations

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
