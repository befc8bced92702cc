"""z3 sorts and scalar helpers shared by the SMT encodings of the operator table.

Representation (documented in docs/semantics.md): pred is a z3 Bool; an integer type of width w is
a bit-vector of width w (two's complement for signed types, wraparound arithmetic); bf16, f16,
f32, f64 are z3 floating-point sorts FP(8,8), FP(5,11), FP(8,24), FP(11,53) with
round-to-nearest-even. SMT-LIB floating point has a single NaN, so the encoding is exact up to
NaN payloads and the sign of NaN.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import z3

from ..dtypes import DType, Kind

__all__ = ["sort_of", "const", "const_array", "value_of", "RNE", "RTZ", "fp_sort", "elementwise"]

RNE = z3.RNE()
RTZ = z3.RTZ()


def fp_sort(dt: DType) -> z3.FPSortRef:
    return z3.FPSort(dt.exp_bits, dt.man_bits + 1)


def sort_of(dt: DType) -> z3.SortRef:
    if dt.kind is Kind.PRED:
        return z3.BoolSort()
    if dt.is_int:
        return z3.BitVecSort(dt.bits)
    return fp_sort(dt)


def const(value: Any, dt: DType) -> z3.ExprRef:
    """The z3 term of one concrete element (numpy scalar or Python number) of type ``dt``."""
    if dt.kind is Kind.PRED:
        return z3.BoolVal(bool(value))
    if dt.is_int:
        return z3.BitVecVal(int(value) & ((1 << dt.bits) - 1), dt.bits)
    bits = int(np.asarray(value, dtype=dt.np).reshape(()).view(dt.uint_np))
    return z3.fpBVToFP(z3.BitVecVal(bits, dt.bits), fp_sort(dt))


def const_array(a: np.ndarray, dt: DType) -> np.ndarray:
    """An object array of z3 constants, one per element of the concrete array ``a``."""
    res = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        res[idx] = const(a[idx], dt)
    return res


def value_of(term: z3.ExprRef, dt: DType) -> Any:
    """The numpy scalar a closed z3 term of type ``dt`` evaluates to (NaN as the quiet NaN)."""
    t = z3.simplify(term)
    if dt.kind is Kind.PRED:
        if z3.is_true(t):
            return np.bool_(True)
        if z3.is_false(t):
            return np.bool_(False)
        raise ValueError(f"not a closed pred term: {t}")
    if dt.is_int:
        if not z3.is_bv_value(t):
            raise ValueError(f"not a closed bit-vector term: {t}")
        v = t.as_long()
        return np.array(v, dtype=dt.uint_np).view(dt.np)[()]
    if not isinstance(t, z3.FPNumRef):
        raise ValueError(f"not a closed floating-point term: {t}")
    if t.isNaN():
        return np.array(math.nan, dtype=dt.np)[()]
    bv = z3.simplify(z3.fpToIEEEBV(t))
    return np.array(bv.as_long(), dtype=dt.uint_np).view(dt.np)[()]


def ieee_bits(x: z3.ExprRef) -> z3.ExprRef:
    """The IEEE bit pattern of a float term as a bit-vector. SMT-LIB leaves ``fp.to_ieee_bv`` of
    NaN unspecified (SMT has one NaN), so NaN is given the bits of the positive quiet NaN, the value
    :func:`value_of` reads NaN as."""
    s = x.sort()
    e, m = s.ebits(), s.sbits() - 1
    qnan = (((1 << e) - 1) << m) | (1 << (m - 1))
    return z3.If(z3.fpIsNaN(x), z3.BitVecVal(qnan, e + m + 1), z3.fpToIEEEBV(x))


def elementwise(fn: Any, *arrays: np.ndarray) -> np.ndarray:
    """Apply a scalar z3 function elementwise over object arrays of the same shape."""
    shape = arrays[0].shape
    out = np.empty(shape, dtype=object)
    flat = [a.reshape(-1) for a in arrays]
    o = out.reshape(-1)
    for i in range(o.size):
        o[i] = fn(*(f[i] for f in flat))
    return out


_F64S = z3.Float64()


def prec_sort(dt: DType) -> z3.FPSortRef:
    """The sort XLA CPU computes ``dt`` operations in: f64 for f64, f32 otherwise."""
    return z3.Float64() if dt.bits == 64 else z3.Float32()


def _tiny(prec: z3.FPSortRef) -> z3.ExprRef:
    e = 1022 if prec.ebits() == 11 else 126
    return z3.FPVal(2.0 ** -e, _F64S)


def daz(x: z3.ExprRef) -> z3.ExprRef:
    """Subnormal -> zero of the same sign (in x's own sort)."""
    s = x.sort()
    return z3.If(z3.fpIsSubnormal(x), z3.If(z3.fpIsNegative(x), z3.fpMinusZero(s), z3.fpPlusZero(s)), x)


def to_prec(x: z3.ExprRef, dt: DType) -> z3.ExprRef:
    """Widen an element of type ``dt`` exactly to its operation precision."""
    p = prec_sort(dt)
    return x if dt.bits in (32, 64) else z3.fpFPToFP(RNE, x, p)


def float_op(fn: Any, xs: list[z3.ExprRef], dt: DType, daz_args: tuple[int, ...] | None = None,
             flush: bool = True) -> z3.ExprRef:
    """Mirror of :func:`semantics.ops._float.float_op`: DAZ at the operation precision, evaluate
    ``fn`` (given RNE and f64 terms) in f64, FTZ against the precision's smallest normal, round
    to the precision and then to ``dt``."""
    p = prec_sort(dt)
    ys = []
    for i, x in enumerate(xs):
        y = to_prec(x, dt)
        if daz_args is None or i in daz_args:
            y = daz(y)
        ys.append(z3.fpFPToFP(RNE, y, _F64S) if p.ebits() != 11 else y)
    r = fn(RNE, *ys)
    if flush:
        tiny = _tiny(p)
        r = z3.If(z3.And(z3.fpLT(z3.fpAbs(r), tiny), z3.Not(z3.fpIsZero(r))),
                  z3.If(z3.fpIsNegative(r), z3.fpMinusZero(_F64S), z3.fpPlusZero(_F64S)), r)
    if p.ebits() != 11:
        r = z3.fpFPToFP(RNE, r, p)
    return r if dt.bits in (32, 64) else z3.fpFPToFP(RNE, r, fp_sort(dt))
