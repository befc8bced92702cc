"""Element types of the IR: XLA's primitive types and their numpy counterparts.

``pred`` is a 1-byte boolean (XLA stores PRED as one byte). bf16 comes from ml_dtypes. Every
dtype knows its bit width, byte size, signedness and numpy dtype; nothing else in the project
spells these facts out again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import ml_dtypes
import numpy as _np  # the ``np`` property shadows the module name inside DType
import numpy as np

__all__ = ["Kind", "DType", "DTYPES", "dtype", "PRED", "S8", "U8", "S16", "U16", "S32", "U32", "S64",
           "U64", "BF16", "F16", "F32", "F64", "INT_DTYPES", "FLOAT_DTYPES", "from_numpy"]


class Kind(Enum):
    PRED = "pred"
    SINT = "sint"
    UINT = "uint"
    FLOAT = "float"


@dataclass(frozen=True)
class DType:
    """One primitive element type.

    Attributes:
        name: the HLO spelling (``s8``, ``bf16``, ...).
        kind: pred, signed int, unsigned int or float.
        bits: width in bits (pred: 8, its storage width; its value is 0 or 1).
        exp_bits / man_bits: for floats, IEEE exponent and explicit mantissa bits.
    """

    name: str
    kind: Kind
    bits: int
    exp_bits: int = 0
    man_bits: int = 0

    def __reduce__(self) -> tuple:
        # a pickled dtype is its name: unpickled, it is this process's object (code compares
        # dtypes with ``is``, e.g. ``t.dtype is PRED``)
        return (dtype, (self.name,))

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    @property
    def np(self) -> _np.dtype:
        return _NP[self.name]

    @property
    def is_int(self) -> bool:
        return self.kind in (Kind.SINT, Kind.UINT)

    @property
    def is_signed(self) -> bool:
        return self.kind is Kind.SINT

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def is_pred(self) -> bool:
        return self.kind is Kind.PRED

    @property
    def uint_np(self) -> _np.dtype:
        """The unsigned integer numpy dtype of the same width (for bit patterns)."""
        return _np.dtype(f"u{self.nbytes}")

    @property
    def min(self) -> int:
        if self.kind is Kind.SINT:
            return -(1 << (self.bits - 1))
        return 0

    @property
    def max(self) -> int:
        if self.kind is Kind.SINT:
            return (1 << (self.bits - 1)) - 1
        if self.kind is Kind.PRED:
            return 1
        return (1 << self.bits) - 1

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DType({self.name})"


PRED = DType("pred", Kind.PRED, 8)
S8 = DType("s8", Kind.SINT, 8)
U8 = DType("u8", Kind.UINT, 8)
S16 = DType("s16", Kind.SINT, 16)
U16 = DType("u16", Kind.UINT, 16)
S32 = DType("s32", Kind.SINT, 32)
U32 = DType("u32", Kind.UINT, 32)
S64 = DType("s64", Kind.SINT, 64)
U64 = DType("u64", Kind.UINT, 64)
BF16 = DType("bf16", Kind.FLOAT, 16, 8, 7)
F16 = DType("f16", Kind.FLOAT, 16, 5, 10)
F32 = DType("f32", Kind.FLOAT, 32, 8, 23)
F64 = DType("f64", Kind.FLOAT, 64, 11, 52)

DTYPES: dict[str, DType] = {d.name: d for d in (PRED, S8, U8, S16, U16, S32, U32, S64, U64, BF16, F16, F32, F64)}
INT_DTYPES = tuple(d for d in DTYPES.values() if d.is_int)
FLOAT_DTYPES = tuple(d for d in DTYPES.values() if d.is_float)

_NP: dict[str, np.dtype] = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "s16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16),
    "s32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "s64": np.dtype(np.int64),
    "u64": np.dtype(np.uint64),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
_FROM_NP = {v: DTYPES[k] for k, v in _NP.items()}


def dtype(name: str) -> DType:
    """The DType called ``name``; raises KeyError for an unknown name."""
    return DTYPES[name]


def from_numpy(dt: np.dtype) -> DType:
    """The DType of a numpy dtype; raises KeyError when the project has none for it."""
    return _FROM_NP[np.dtype(dt)]
