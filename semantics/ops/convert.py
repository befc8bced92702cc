"""Conversions: ``convert`` (value-preserving where possible) and ``bitcast-convert`` (same bits).

The float->int rule, int->float rounding and float->float rounding reproduce XLA's CPU backend;
see the ``xla=`` texts (and docs/semantics.md) for the exact rules.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import z3

from ..dtypes import BF16, F16, F32, F64, PRED, DType, from_numpy
from ..ir import Attrs
from ..types import TensorType, Type
from . import _z3util as Z
from ._common import need_declared, tensor
from ._float import daz, ftz, op_precision
from ._table import Env, OpDef, OpError, register


def _convert_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    out = need_declared(declared, "convert")
    if out.shape != x.shape:
        raise OpError(f"convert changes the shape {x.short()} -> {out.short()}")
    return TensorType(out.dtype, _convert_shape(types, attrs, declared))


def _convert_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    return tuple(types[0].shape)


def float_to_int(x: np.ndarray, out: DType) -> np.ndarray:
    """XLA's float->int convert: truncate toward zero, saturate out-of-range values to the
    integer's min/max, NaN -> 0."""
    f = x.astype(np.float64) if x.dtype != np.float64 else x
    with np.errstate(invalid="ignore"):
        t = np.trunc(f)
        nan = np.isnan(t)
        lo, hi = out.min, out.max
        too_low = t <= lo
        too_high = t >= hi
        safe = np.where(nan | too_low | too_high, 0, t)
        r = safe.astype(np.int64) if out.is_signed or out.bits < 64 else safe.astype(np.uint64)
        r = r.astype(out.np)
    r = np.where(too_low, np.array(lo).astype(out.np), r)
    r = np.where(too_high, np.array(hi).astype(out.np), r)
    return np.where(nan, np.zeros((), out.np), r)


def _quiet_nan_f16(r: np.ndarray, src: np.ndarray) -> np.ndarray:
    """f32 -> f16 of NaN keeps the payload's top bits and sets the quiet bit (x86 vcvtps2ph)."""
    nan = np.isnan(src)
    if not nan.any():
        return r
    bits = src.astype(np.float32).view(np.uint32)
    h = ((bits >> 16) & 0x8000) | 0x7E00 | ((bits & 0x7FFFFF) >> 13)
    return np.where(nan, h.astype(np.uint16).view(np.float16), r)


def _f16_to_f32(x: np.ndarray) -> np.ndarray:
    """f16 -> f32 exactly; a signalling NaN gets its quiet bit set (x86 vcvtph2ps)."""
    r = x.astype(np.float32)
    nan = np.isnan(r)
    if nan.any():
        r = np.where(nan, (r.view(np.uint32) | np.uint32(0x400000)).view(np.float32), r)
    return r


def _to_f32(x: np.ndarray, src: DType) -> np.ndarray:
    """Any float or integer to f32 as XLA CPU converts it (one rounding; FTZ from f64)."""
    if src is F16:
        return _f16_to_f32(x)
    if src is F64:
        with np.errstate(all="ignore"):
            return ftz(daz(x, np.dtype(np.float64)), np.dtype(np.float32)).astype(np.float32)
    if src.is_int and src.bits == 64:
        return _round_int_to(x, F32)
    return x.astype(np.float32)


def _to_float(x: np.ndarray, src: DType, out: DType) -> np.ndarray:
    if src.is_pred:
        return x.astype(np.float32).astype(out.np)
    if out is F32:
        return _to_f32(x, src)
    if out is F64:
        if src.is_float and src is not F64:
            f32 = _to_f32(x, src)
            return daz(f32, np.dtype(np.float32)).astype(np.float64)
        if src.is_int and src.bits == 64:
            return _round_int_to(x, F64)
        return x.astype(np.float64)
    if out is BF16:
        # XLA normalizes every bf16 convert to go through f32: int/f64 -> f32 -> bf16 rounds twice
        return _to_f32(x, src).astype(ml_dtypes.bfloat16)
    # out is F16
    if src.is_float:
        if src is F64:
            return x.astype(np.float16)
        f32 = _to_f32(x, src)
        return _quiet_nan_f16(f32.astype(np.float16), f32)
    if src.bits <= 32:
        with np.errstate(over="ignore"):   # overflow to inf is the rounding rule
            return x.astype(np.float64).astype(np.float16)   # exact in f64, one rounding to f16
    return _round_int_to(x, F16)


def _round_int_to(x: np.ndarray, out: DType) -> np.ndarray:
    """Round 64-bit integers to a float type with one RNE step (exact integer arithmetic)."""
    flat = x.reshape(-1)
    res = np.empty(flat.shape, dtype=out.np)
    for i, v in enumerate(flat.tolist()):
        res[i] = _round_int_scalar(int(v), out)
    return res.reshape(x.shape)


def _round_int_scalar(v: int, out: DType) -> Any:
    if v == 0:
        return out.np.type(0)
    m = abs(v)
    p = out.man_bits + 1
    e = m.bit_length()
    if e > p:
        shift = e - p
        q, r = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m = q << shift
    # m has at most p significant bits, so float(m) is exact; the cast to out is then exact too
    # (or overflows to inf, as RNE does)
    with np.errstate(over="ignore"):
        return np.array(float(m) if v > 0 else -float(m), dtype=np.float64).astype(out.np)


def convert_array(x: np.ndarray, out: DType) -> np.ndarray:
    src = from_numpy(x.dtype)
    if src == out:
        return x.copy()
    if out.is_pred:
        if src.is_float:
            prec = op_precision(x.dtype)
            return daz(x.astype(prec), prec) != 0
        return x != 0
    if out.is_float:
        return _to_float(x, src, out)
    if src.is_float:
        return float_to_int(x, out)
    if src.is_pred:
        return x.astype(out.np)
    # int -> int: keep the low bits (two's complement wraparound), sign- or zero-extend
    return x.astype(out.np)


def _convert_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    # np.asarray: comparisons on a 0-d array (the pred cases) return a numpy scalar, not an array
    return np.asarray(convert_array(args[0], tensor(out, "result").dtype))


def convert_term(a: Any, src: DType, out: DType) -> Any:
    """The z3 term of converting one element."""
    if src == out:
        return a
    if out.is_pred:
        if src.is_float:
            return z3.Not(z3.fpIsZero(Z.daz(Z.to_prec(a, src))))
        return a != z3.BitVecVal(0, src.bits)
    if src.is_pred:
        if out.is_float:
            return z3.If(a, z3.FPVal(1.0, Z.fp_sort(out)), z3.FPVal(0.0, Z.fp_sort(out)))
        return z3.If(a, z3.BitVecVal(1, out.bits), z3.BitVecVal(0, out.bits))
    if src.is_int and out.is_int:
        if out.bits < src.bits:
            return z3.Extract(out.bits - 1, 0, a)
        if out.bits > src.bits:
            ext = out.bits - src.bits
            return z3.SignExt(ext, a) if src.is_signed else z3.ZeroExt(ext, a)
        return a
    if src.is_int and out.is_float:
        fn = z3.fpSignedToFP if src.is_signed else z3.fpUnsignedToFP
        if out is BF16:
            return z3.fpFPToFP(Z.RNE, fn(Z.RNE, a, z3.Float32()), Z.fp_sort(out))
        return fn(Z.RNE, a, Z.fp_sort(out))
    if src.is_float and out.is_float:
        if src is F64 and out in (F32, BF16):
            r = Z.daz(a)   # f64 -> f32: DAZ at f64, FTZ below 2^-126, one rounding
            tiny = z3.FPVal(2.0 ** -126, z3.Float64())
            r = z3.If(z3.And(z3.fpLT(z3.fpAbs(r), tiny), z3.Not(z3.fpIsZero(r))),
                      z3.If(z3.fpIsNegative(r), z3.fpMinusZero(z3.Float64()), z3.fpPlusZero(z3.Float64())), r)
            r = z3.fpFPToFP(Z.RNE, r, z3.Float32())
            return r if out is F32 else z3.fpFPToFP(Z.RNE, r, Z.fp_sort(out))
        if out is F64 and src is not F64:
            return z3.fpFPToFP(Z.RNE, Z.daz(Z.to_prec(a, src)), z3.Float64())
        return z3.fpFPToFP(Z.RNE, a, Z.fp_sort(out))
    # float -> int: truncate, saturate, NaN -> 0
    lo, hi = out.min, out.max
    s = Z.fp_sort(src)
    t = z3.fpRoundToIntegral(Z.RTZ, a)
    w = out.bits
    lo_f = z3.fpToFP(Z.RNE, z3.RealVal(lo), s)
    hi_f = z3.fpToFP(Z.RNE, z3.RealVal(hi), s)
    conv = z3.fpToSBV(Z.RTZ, t, z3.BitVecSort(w)) if out.is_signed else z3.fpToUBV(Z.RTZ, t, z3.BitVecSort(w))
    return z3.If(z3.fpIsNaN(a), z3.BitVecVal(0, w),
                 z3.If(z3.fpLEQ(t, lo_f), z3.BitVecVal(lo & ((1 << w) - 1), w),
                       z3.If(z3.fpGEQ(t, hi_f), z3.BitVecVal(hi, w), conv)))


def _convert_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    src = env.extra["operand_dtypes"][0]
    dst = tensor(out, "result").dtype
    return Z.elementwise(lambda a: convert_term(a, src, dst), args[0])


register(OpDef("convert", (1, 1), (), _convert_infer, _convert_eval, _convert_smt, "conversion",
               "any type to any type, same shape",
               "int->int keeps the low bits (wraps) and sign/zero-extends; int/float->pred is x != 0; "
               "pred->number is 0/1; int->float and float->float round to nearest even, once, except "
               "int->bf16 and f64->bf16, which go through f32 (two roundings); f64->f32 flushes results "
               "below 2^-126 to zero, f32->f64 reads subnormals as zero; f16<->f32 NaNs get the quiet bit; "
               "float->int truncates toward zero, saturates to the integer range, NaN -> 0",
               needs_declared=True, scalar=lambda xs, at, dts, out: convert_term(xs[0], dts[0], out),
               shape=_convert_shape))


def _bitcast_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    out = need_declared(declared, "bitcast-convert")
    if out.dtype.is_pred or x.dtype.is_pred:
        if out.dtype != x.dtype:
            raise OpError(f"bitcast-convert is not defined on pred ({x.dtype} -> {out.dtype})")
    wi, wo = x.dtype.bits, out.dtype.bits
    if wo > wi and (x.rank == 0 or x.shape[-1] != wo // wi):
        raise OpError(f"bitcast-convert {x.dtype} -> {out.dtype} needs a last operand dimension of {wo // wi}, "
                      f"got {x.short()}")
    want = _bitcast_shape(types, attrs, out)
    if out.shape != want:
        raise OpError(f"bitcast-convert {x.short()} -> {out.dtype} gives shape {list(want)}, not {list(out.shape)}")
    return TensorType(out.dtype, want)


def _bitcast_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    """The operand's shape; to a wider type less its last dimension, to a narrower one plus one."""
    x = types[0]
    wi, wo = x.dtype.bits, declared.dtype.bits
    if wi == wo:
        return tuple(x.shape)
    return tuple(x.shape[:-1]) if wo > wi else tuple(x.shape) + (wi // wo,)


def _bitcast_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    t = tensor(out, "result")
    x = np.array(args[0], order="C")   # element order in memory is little-endian on every host we run
    return x.view(t.dtype.np).reshape(t.shape).copy()


def _bits_term(a: Any, dt: DType) -> Any:
    return Z.ieee_bits(a) if dt.is_float else a


def _from_bits_term(b: Any, dt: DType) -> Any:
    return z3.fpBVToFP(b, Z.fp_sort(dt)) if dt.is_float else b


def _bitcast_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    src = env.extra["operand_dtypes"][0]
    dst = tensor(out, "result").dtype
    x = args[0]
    if src.bits == dst.bits:
        return Z.elementwise(lambda a: _from_bits_term(_bits_term(a, src), dst), x)
    if dst.bits > src.bits:   # little-endian: element 0 of the last dimension is the low part
        res = np.empty(x.shape[:-1], dtype=object)
        for idx in np.ndindex(res.shape):
            parts = [_bits_term(x[idx + (k,)], src) for k in range(x.shape[-1])]
            res[idx] = _from_bits_term(z3.Concat(*reversed(parts)), dst)
        return res
    r = src.bits // dst.bits
    res = np.empty(x.shape + (r,), dtype=object)
    for idx in np.ndindex(x.shape):
        bits = _bits_term(x[idx], src)
        for k in range(r):
            res[idx + (k,)] = _from_bits_term(z3.Extract(dst.bits * (k + 1) - 1, dst.bits * k, bits), dst)
    return res


register(OpDef("bitcast-convert", (1, 1), (), _bitcast_infer, _bitcast_eval, _bitcast_smt, "conversion",
               "any non-pred type to any non-pred type; to a wider type the last operand dimension (of the width "
               "ratio) is consumed, to a narrower one a last dimension is added",
               "reinterprets the bits, little-endian across elements (u8[n,2] -> bf16[n]); SMT: a NaN's payload "
               "is not modelled (one NaN)",
               needs_declared=True, shape=_bitcast_shape))

__all__ = ["convert_array", "convert_term", "float_to_int", "F32", "PRED"]
