"""More elementwise operators, the ones jax dumps of common models contain: ``sign``, ``power``,
the transcendental functions (``cbrt``, ``erf``, ``logistic``, ``exponential-minus-one``,
``log-plus-one``, ``atan2``), ``is-finite``, the bit counts (``popcnt``, ``count-leading-zeros``)
and ``reduce-precision``.

The transcendental functions follow ``exponential``'s rule (semantics/ops/elementwise.py): the
reference computes them in f64 after DAZ, then FTZ and one rounding (nearly correctly rounded);
XLA:CPU uses its own approximations, so the jax corpus test compares them within the declared ulp
bound of each operator's :class:`~._table.XlaBound` (measured on 20,000 ordinary operands per
operator and dtype against jax 0.10.2), and SMT treats them as uninterpreted functions (one per
dtype). Everything else here is exact and has a z3 semantics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import z3

from ..dtypes import DType
from ..ir import Attrs
from ..types import TensorType, Type
from . import _z3util as Z
from ._common import tensor
from ._float import daz, float_op, is_float_np, op_precision
from ._table import AttrSpec, Env, OpDef, OpError, XlaBound, register
from .elementwise import _check_kind, _infer_same, _register_elementwise, _uninterpreted

# -- sign ---------------------------------------------------------------------------------------


def _np_sign(x: np.ndarray) -> np.ndarray:
    if not is_float_np(x.dtype):
        return np.sign(x).astype(x.dtype)
    prec = op_precision(x.dtype)
    xp = daz(x.astype(prec), prec)
    one = np.copysign(np.ones((), prec), xp)
    with np.errstate(invalid="ignore"):
        r = np.where(np.isnan(xp) | (xp == 0), xp, one)
    return r.astype(x.dtype)


def _z_sign(a: Any, dt: DType, out: DType) -> Any:
    if not dt.is_float:
        w = dt.bits
        if not dt.is_signed:
            return z3.If(a == 0, z3.BitVecVal(0, w), z3.BitVecVal(1, w))
        return z3.If(a == 0, z3.BitVecVal(0, w), z3.If(a < 0, z3.BitVecVal(-1, w), z3.BitVecVal(1, w)))
    x = Z.daz(Z.to_prec(a, dt))          # DAZ at the operation precision, as the interpreter
    s = x.sort()
    one = z3.If(z3.fpIsNegative(x), z3.fpNeg(z3.FPVal(1.0, s)), z3.FPVal(1.0, s))
    r = z3.If(z3.Or(z3.fpIsNaN(x), z3.fpIsZero(x)), x, one)
    return r if dt.bits in (32, 64) else z3.fpFPToFP(Z.RNE, r, Z.fp_sort(dt))


_register_elementwise("sign", 1, "num", _np_sign, _z_sign, "integer or float, same type",
                      "-1, 0 or 1 (unsigned: 0 or 1); floats: +-1.0 with the operand's sign, a zero "
                      "(after DAZ: a subnormal gives a zero of its sign) and NaN are returned as they are")


# -- transcendental functions (reference in f64, uninterpreted in SMT) ---------------------------

def _f64_fn(name: str) -> Any:
    if name == "erf":
        v = np.vectorize(math.erf, otypes=[np.float64])
        return lambda x: v(x) if x.size else x
    if name == "cbrt":
        return np.cbrt
    if name == "logistic":
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    if name == "exponential-minus-one":
        return np.expm1
    if name == "log-plus-one":
        return np.log1p
    if name == "atan2":
        return np.arctan2
    raise KeyError(name)


#: ulps per result dtype of XLA:CPU's approximations on ordinary operands (edge operands such as
#: subnormals and infinities are outside them: semantics.gen.NOT_SENT_TO_XLA)
_XLA_BOUNDS = {
    "cbrt": XlaBound({"f32": 1, "f64": 3, "bf16": 0, "f16": 0}, ordinary=True),
    "erf": XlaBound({"f32": 4, "f64": 0, "bf16": 0, "f16": 1}, ordinary=True),
    "logistic": XlaBound({"f32": 2, "f64": 2, "bf16": 0, "f16": 255}, ordinary=True),
    "exponential-minus-one": XlaBound({"f32": 4, "f64": 4, "bf16": 0, "f16": 2}, ordinary=True),
    "log-plus-one": XlaBound({"f32": 2, "f64": 126, "bf16": 0, "f16": 0}, ordinary=True),
    "atan2": XlaBound({"f32": 1, "f64": 1, "bf16": 0, "f16": 0}, ordinary=True),
    "power": XlaBound({"f32": 1, "f64": 1, "bf16": 0, "f16": 0}, ordinary=True),
}


def _uninterpreted2(name: str) -> Any:
    def f(a: Any, b: Any, dt: DType, out: DType) -> Any:
        s = Z.fp_sort(dt)
        return z3.Function(f"{name}_{dt.name}", s, s, s)(a, b)
    return f


for _name, _ar in (("cbrt", 1), ("erf", 1), ("logistic", 1), ("exponential-minus-one", 1),
                   ("log-plus-one", 1), ("atan2", 2)):
    _register_elementwise(
        _name, _ar, "float", float_op(_f64_fn(_name)),
        _uninterpreted(_name.replace("-", "_")) if _ar == 1 else _uninterpreted2(_name),
        "float, same type" + (" (y, x)" if _ar == 2 else ""),
        "reference: computed in f64 after DAZ, then FTZ and one rounding (nearly correctly rounded); "
        "SMT: uninterpreted", uninterpreted=True, xla_bound=_XLA_BOUNDS[_name])


# -- power --------------------------------------------------------------------------------------

def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power with wraparound; XLA: a negative exponent gives 0, except base 1 (1) and
    base -1 (+-1 by parity)."""
    dt = a.dtype
    ud = np.dtype(f"u{dt.itemsize}")
    base = a.astype(ud)
    e = b.astype(np.int64)
    neg = e < 0
    e = np.where(neg, 0, e).astype(np.uint64)
    r = np.ones(a.shape, ud)
    with np.errstate(over="ignore"):
        while (e > 0).any():
            odd = (e & 1) == 1
            r = np.where(odd, r * base, r)
            base = base * base
            e = e >> np.uint64(1)
    r = r.view(dt)
    if neg.any():
        one = a == 1
        minus = (a == -1) if dt.kind == "i" else np.zeros(a.shape, bool)
        odd_b = (b.astype(np.int64) & 1) == 1
        r = np.where(neg, np.where(one, 1, np.where(minus, np.where(odd_b, -1, 1), 0)).astype(dt), r)
    return r


_f_pow = float_op(np.power)


def _np_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _f_pow(a, b) if is_float_np(a.dtype) else _int_pow(a, b)


def _z_power(a: Any, b: Any, dt: DType, out: DType) -> Any:
    if dt.is_float:
        s = Z.fp_sort(dt)
        return z3.Function(f"power_{dt.name}", s, s, s)(a, b)
    raise OpError("integer power has no SMT encoding")   # pragma: no cover - guarded by the smt fn


def _power_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    dt = env.extra["operand_dtypes"][0]
    if not dt.is_float:
        from ..errors import SmtError
        raise SmtError("integer power has no SMT encoding")
    return Z.elementwise(lambda x, y: _z_power(x, y, dt, dt), *args)


register(OpDef("power", (2, 2), (), _infer_same("num", "power"),
               lambda args, a, out, env: np.asarray(_np_power(*args)), _power_smt, "elementwise",
               "same integer or float type in and out",
               "floats: pow computed in f64 after DAZ, then FTZ and one rounding (SMT: uninterpreted); "
               "integers: exact power wrapped, a negative exponent gives 0 (base 1: 1, base -1: +-1); SMT on "
               "integers: none; " + _XLA_BOUNDS["power"].text(),
               uninterpreted=True, xla_bound=_XLA_BOUNDS["power"]))


# -- is-finite, popcnt, count-leading-zeros -----------------------------------------------------

_register_elementwise("is-finite", 1, "float", lambda x: np.isfinite(x), lambda a, dt, out: z3.Not(
    z3.Or(z3.fpIsNaN(a), z3.fpIsInf(a))), "float in, pred out", "false for +-inf and NaN, true otherwise "
    "(subnormals are finite: no DAZ)", out_pred=True)


def _np_popcnt(x: np.ndarray) -> np.ndarray:
    ud = np.dtype(f"u{x.dtype.itemsize}")
    u = x.view(ud).astype(np.uint64)
    c = np.zeros(x.shape, np.uint64)
    for i in range(x.dtype.itemsize * 8):
        c += (u >> np.uint64(i)) & np.uint64(1)
    return c.astype(x.dtype)


def _np_clz(x: np.ndarray) -> np.ndarray:
    w = x.dtype.itemsize * 8
    ud = np.dtype(f"u{x.dtype.itemsize}")
    u = x.view(ud).astype(np.uint64)
    n = np.full(x.shape, w, np.int64)
    for i in range(w):
        n = np.where((u >> np.uint64(i)) != 0, w - 1 - i, n)
    return n.astype(x.dtype)


def _z_popcnt(a: Any, dt: DType, out: DType) -> Any:
    w = dt.bits
    return sum((z3.ZeroExt(w - 1, z3.Extract(i, i, a)) for i in range(w)), z3.BitVecVal(0, w))


def _z_clz(a: Any, dt: DType, out: DType) -> Any:
    w = dt.bits
    r: Any = z3.BitVecVal(w, w)
    for i in range(w):
        r = z3.If(z3.Extract(i, i, a) == 1, z3.BitVecVal(w - 1 - i, w), r)
    return r


_register_elementwise("popcnt", 1, "int", _np_popcnt, _z_popcnt, "integer, same type",
                      "number of set bits of the two's complement pattern")
_register_elementwise("count-leading-zeros", 1, "int", _np_clz, _z_clz, "integer, same type",
                      "number of zero bits above the highest set bit (the width for 0)")


# -- reduce-precision ---------------------------------------------------------------------------

def _rp_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    _check_kind(x.dtype, "float", "reduce-precision")
    e, m = attrs["exponent_bits"], attrs["mantissa_bits"]
    if not (1 <= e and 0 <= m):
        raise OpError(f"reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got {e}, {m}")
    return TensorType(x.dtype, x.shape)


def reduce_precision(x: np.ndarray, ebits: int, mbits: int) -> np.ndarray:
    """XLA's ReducePrecision (elemental IR emitter), on the bits of f16/bf16/f32/f64: the mantissa is
    rounded to ``mbits`` bits (nearest, ties to even); values above the reduced format's largest
    finite magnitude become +-inf; values below its smallest normal become +-0; NaN stays NaN."""
    dt = x.dtype
    w = dt.itemsize * 8
    ud = np.dtype(f"u{dt.itemsize}")
    src_m = {2: 10 if dt == np.float16 else 7, 4: 23, 8: 52}[dt.itemsize]
    src_e = w - 1 - src_m
    bits = x.view(ud).astype(np.uint64)
    one = np.uint64(1)
    if mbits < src_m:
        drop = np.uint64(src_m - mbits)
        last = (bits >> drop) & one
        half = (one << (drop - one)) - one
        bits = (bits + half + last) & ~((one << drop) - one)
    if ebits < src_e:
        bias = (1 << (src_e - 1)) - 1
        rbias = (1 << (ebits - 1)) - 1
        exp_mask = np.uint64(((1 << src_e) - 1) << src_m)
        sign = bits & np.uint64(1 << (w - 1))
        exp = ((bits & exp_mask) >> np.uint64(src_m)).astype(np.int64)
        overflow = exp > bias + rbias
        underflow = exp <= bias - rbias
        inf = sign | exp_mask
        bits = np.where(overflow, inf, np.where(underflow, sign, bits))
    bits = bits & np.uint64((1 << w) - 1)
    r = bits.astype(ud).view(dt)
    return np.where(np.isnan(x), x, r) if mbits > 0 else np.where(np.isnan(x), np.copysign(np.inf, x).astype(dt), r)


def _rp_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    return np.asarray(reduce_precision(args[0], attrs["exponent_bits"], attrs["mantissa_bits"]))


def _rp_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    dt = env.extra["operand_dtypes"][0]
    e, m = attrs["exponent_bits"], attrs["mantissa_bits"]
    src_m = dt.man_bits
    src_e = dt.exp_bits
    if m == 0:
        raise OpError("reduce-precision to mantissa_bits=0 has no SMT encoding")
    m, narrow_e = min(m, src_m), e < src_e
    rbias = (1 << (e - 1)) - 1

    def one(a: Any) -> Any:
        s = a.sort()
        r = a if m == src_m else z3.fpFPToFP(Z.RNE, z3.fpFPToFP(Z.RNE, a, z3.FPSort(src_e, m + 1)), s)
        if not narrow_e:      # same exponent range: subnormals stay (rounded on the same grid)
            return z3.If(z3.fpIsNaN(a), a, r)
        mag = z3.fpAbs(r)
        z = z3.If(z3.fpIsNegative(r), z3.fpMinusZero(s), z3.fpPlusZero(s))
        inf = z3.If(z3.fpIsNegative(r), z3.fpMinusInfinity(s), z3.fpPlusInfinity(s))
        under = z3.fpLT(mag, z3.FPVal(2.0 ** (1 - rbias), s))
        over = z3.fpGEQ(mag, z3.FPVal(2.0 ** (rbias + 1), s))
        return z3.If(z3.fpIsNaN(a), a, z3.If(under, z, z3.If(over, inf, r)))
    return Z.elementwise(one, *args)


register(OpDef("reduce-precision", (1, 1), (AttrSpec("exponent_bits", "int"), AttrSpec("mantissa_bits", "int")),
               _rp_infer, _rp_eval, _rp_smt, "elementwise", "float, same type",
               "rounds the mantissa to mantissa_bits (nearest, ties to even, on the bits), then "
               "values beyond the reduced format's range become +-inf and values below its smallest "
               "normal +-0 (no subnormals); NaN stays NaN"))
