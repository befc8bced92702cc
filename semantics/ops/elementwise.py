"""Elementwise operators: arithmetic, bitwise, shifts, comparisons, select, clamp, conversions,
transcendental functions.

Every function here follows XLA's CPU backend bit for bit; the ``xla=`` text of each entry says
which behaviour (overflow, division by zero, NaN, rounding) it reproduces, and docs/semantics.md
is generated from those texts. Integer arithmetic wraps (two's complement). bf16 and f16
arithmetic is computed in f32 and rounded once to the result type with round-to-nearest-even
(for +, -, *, /, sqrt this equals the correctly rounded result, since 24 >= 2p + 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import z3

from ..dtypes import PRED, DType, Kind
from ..ir import Attrs
from ..types import TensorType, Type
from . import _z3util as Z
from ._common import same_dtype, same_shape, tensor
from ._float import daz, float_op, is_float_np, op_precision
from ._table import AttrSpec, Env, OpDef, OpError, XlaBound, register

NpFn = Callable[..., np.ndarray]
ZFn = Callable[..., Any]

_ALLOWED = {
    "num": lambda d: d.kind is not Kind.PRED,
    "numpred": lambda d: True,
    "int": lambda d: d.is_int,
    "float": lambda d: d.is_float,
    "intpred": lambda d: d.is_int or d.is_pred,
    "any": lambda d: True,
    "signed": lambda d: d.is_signed or d.is_float,
}
_ALLOWED_TEXT = {
    "num": "integer and floating-point types",
    "numpred": "integer, floating-point and pred types",
    "int": "integer types",
    "float": "floating-point types (bf16, f16, f32, f64)",
    "intpred": "integer types and pred",
    "any": "every type",
    "signed": "signed integer and floating-point types",
}


def _check_kind(dt: DType, allowed: str, name: str) -> None:
    if not _ALLOWED[allowed](dt):
        raise OpError(f"{name} is not defined on {dt} (only on {_ALLOWED_TEXT[allowed]})")


def _infer_same(allowed: str, name: str, out_pred: bool = False) -> Callable[..., Type]:
    def infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
        same_shape(types)
        dt = same_dtype(types)
        _check_kind(dt, allowed, name)
        return TensorType(PRED if out_pred else dt, _shape_of(0)(types, attrs, declared))
    return infer


def _arith(np_int: NpFn, np_f64: NpFn, **kw: Any) -> NpFn:
    """Integer arithmetic as numpy does it (wrapping), float arithmetic through :func:`float_op`."""
    fop = float_op(np_f64, **kw)

    def run(*args: np.ndarray) -> np.ndarray:
        if is_float_np(args[0].dtype):
            return fop(*args)
        with np.errstate(all="ignore"):
            return np_int(*args)
    return run


def _vec(zfn: ZFn) -> Callable[[list[Any], Attrs, Type, Env], Any]:
    def enc(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
        dts = env.extra["operand_dtypes"]
        return Z.elementwise(lambda *xs: zfn(*xs, dts[0], tensor(out, "result").dtype), *args)
    return enc


def _register_elementwise(name: str, arity: int, allowed: str, np_fn: NpFn, z_fn: ZFn | None,
                          dtypes: str, xla: str, *, out_pred: bool = False, uninterpreted: bool = False,
                          attrs: tuple[AttrSpec, ...] = (), xla_bound: XlaBound | None = None) -> None:
    """Register an elementwise operator; ``xla_bound`` (the operator's :class:`XlaBound`) is
    appended to its ``xla`` text in words."""
    def evaluate(args: list[np.ndarray], a: Attrs, out: Type, env: Env) -> np.ndarray:
        return np.asarray(np_fn(*args))  # numpy returns scalars for rank-0 operands
    scalar = (lambda xs, at, dts, out: z_fn(*xs, dts[0], out)) if z_fn is not None else None
    if xla_bound is not None:
        xla = f"{xla}; {xla_bound.text()}"
    register(OpDef(name, (arity, arity), attrs, _infer_same(allowed, name, out_pred), evaluate,
                   _vec(z_fn) if z_fn is not None else None, "elementwise", dtypes, xla,
                   uninterpreted=uninterpreted, scalar=scalar, shape=_shape_of(0), xla_bound=xla_bound))


def _shape_of(k: int) -> Callable[..., tuple[Any, ...]]:
    """The result shape is operand ``k``'s (elementwise operators; select's and clamp's operand 1)."""
    def shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
        return tuple(types[k].shape)
    return shape


# ---------------------------------------------------------------------------------------------
# z3 scalar semantics
# ---------------------------------------------------------------------------------------------

def _z_fp_or_bv(fp: Callable[..., Any], bv: Callable[..., Any], commutative: bool = False) -> ZFn:
    """Float semantics through :func:`_z3util.float_op` (DAZ/FTZ, f32 upcast); ints as bit-vectors.
    ``commutative``: the operator is exactly commutative in this encoding (+ and * are, with SMT's
    single NaN), so the operands are put in a canonical order and z3 sees equal terms as equal."""
    def f(*xs: Any) -> Any:
        dt = xs[-2]
        args = list(xs[:-2])
        if commutative and args[0].get_id() > args[1].get_id():
            args.reverse()
        return Z.float_op(fp, args, dt) if dt.is_float else bv(*args)
    return f


def _z_div(a: Any, b: Any, dt: DType, out: DType) -> Any:
    if dt.is_float:
        return Z.float_op(z3.fpDiv, [a, b], dt)
    w = dt.bits
    ones = z3.BitVecVal((1 << w) - 1, w)
    if dt.is_signed:
        imin = z3.BitVecVal(1 << (w - 1), w)
        return z3.If(b == 0, ones, z3.If(z3.And(a == imin, b == ones), imin, a / b))
    return z3.If(b == 0, ones, z3.UDiv(a, b))


def _z_rem(a: Any, b: Any, dt: DType, out: DType) -> Any:
    if dt.is_float:
        return Z.float_op(lambda rm, x, y: _z_fmod(x, y), [a, b], dt, daz_args=(1,), flush=False)
    w = dt.bits
    if dt.is_signed:
        imin = z3.BitVecVal(1 << (w - 1), w)
        ones = z3.BitVecVal((1 << w) - 1, w)
        return z3.If(b == 0, a, z3.If(z3.And(a == imin, b == ones), z3.BitVecVal(0, w), z3.SRem(a, b)))
    return z3.If(b == 0, a, z3.URem(a, b))


def _z_fmod(a: Any, b: Any) -> Any:
    # C fmod: a - trunc(a/b)*b computed exactly; sign of a. SMT's fpRem rounds the quotient to
    # nearest-even, so fmod is expressed through it: r = fpRem(a, b); if r has the wrong sign
    # (or is -0 vs +0), add/subtract |b|.
    s = a.sort()
    r = z3.fpRem(a, b)
    absb = z3.fpAbs(b)
    fixed = z3.If(z3.And(z3.fpIsNegative(a), z3.fpGT(r, z3.FPVal(0.0, s))), z3.fpSub(Z.RNE, r, absb),
                  z3.If(z3.And(z3.fpIsPositive(a), z3.fpLT(r, z3.FPVal(0.0, s))), z3.fpAdd(Z.RNE, r, absb), r))
    # zero results carry the sign of a
    zero_signed = z3.If(z3.fpIsNegative(a), z3.fpMinusZero(s), z3.fpPlusZero(s))
    return z3.If(z3.fpIsZero(fixed), zero_signed, fixed)


def _z_minmax(is_max: bool) -> ZFn:
    """Mirror of :func:`_minmax` (NaN payloads are not modelled: SMT has one NaN; the NaN's sign
    is, through :func:`_z3util.nan_sign`)."""
    def f(a: Any, b: Any, dt: DType, out: DType) -> Any:
        if not dt.is_float:
            if dt.is_signed:
                return z3.If(a >= b, a, b) if is_max else z3.If(a <= b, a, b)
            return z3.If(z3.UGE(a, b), a, b) if is_max else z3.If(z3.ULE(a, b), a, b)
        x, y = Z.daz(Z.to_prec(a, dt)), Z.daz(Z.to_prec(b, dt))
        sx = z3.fpIsNegative(x)
        eq = z3.fpEQ(x, y)
        pick_x = z3.Or(z3.fpGT(x, y) if is_max else z3.fpLT(x, y), z3.And(eq, z3.Not(sx) if is_max else sx))
        # a NaN y is returned with the sign sign(x) AND sign(y) (max) / OR (min): the same value
        # in SMT (one NaN), written so that _z3util.nan_sign reads the reference's sign
        y_nan = z3.If(sx, y, z3.fpAbs(y)) if is_max else z3.If(sx, z3.fpNeg(z3.fpAbs(y)), y)
        r = z3.If(z3.fpIsNaN(x), x, z3.If(z3.fpIsNaN(y), y_nan, z3.If(pick_x, x, y)))
        return r if dt.bits in (32, 64) else z3.fpFPToFP(Z.RNE, r, Z.fp_sort(dt))
    return f


_z_max = _z_minmax(True)
_z_min = _z_minmax(False)


def _z_shift(kind: str) -> ZFn:
    def f(a: Any, b: Any, dt: DType, out: DType) -> Any:
        w = dt.bits
        big = z3.UGE(b, z3.BitVecVal(w, w))
        if kind == "shl":
            return z3.If(big, z3.BitVecVal(0, w), a << b)
        if kind == "lshr":
            return z3.If(big, z3.BitVecVal(0, w), z3.LShR(a, b))
        return z3.If(big, a >> (w - 1), a >> b)
    return f


def _z_bitwise(op: str) -> ZFn:
    def f(a: Any, b: Any, dt: DType, out: DType) -> Any:
        if dt.is_pred:
            return {"and": z3.And, "or": z3.Or, "xor": z3.Xor}[op](a, b)
        return {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op](a, b)
    return f


# ---------------------------------------------------------------------------------------------
# numpy semantics
# ---------------------------------------------------------------------------------------------

def _np_int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    info = np.iinfo(dt)
    zero = b == 0
    ovf = (a == info.min) & (b == -1) if info.min < 0 else np.zeros(a.shape, bool)
    bs = np.where(zero | ovf, np.ones_like(b), b)
    if info.min < 0:
        q = np.fmod(a, bs)  # sign of a
        q = (a - q) // bs    # exact: a - fmod(a, b) is a multiple of b
    else:
        q = a // bs
    q = np.where(zero, np.array(-1).astype(dt) if info.min < 0 else np.array(info.max, dtype=dt), q)
    return np.where(ovf, np.array(info.min, dtype=dt), q).astype(dt)


def _np_int_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    info = np.iinfo(dt)
    zero = b == 0
    ovf = (a == info.min) & (b == -1) if info.min < 0 else np.zeros(a.shape, bool)
    bs = np.where(zero | ovf, np.ones_like(b), b)
    r = np.fmod(a, bs)
    r = np.where(zero, a, r)
    return np.where(ovf, np.zeros_like(a), r).astype(dt)


_np_divide = _arith(_np_int_div, np.divide)
# fmod reads a subnormal divisor as zero (-> NaN) but keeps a subnormal dividend; no FTZ (measured)
_np_remainder = _arith(_np_int_rem, np.fmod, daz_args=(1,), flush=False)


def _minmax(is_max: bool) -> NpFn:
    """XLA CPU maximum/minimum on floats (measured, docs/semantics.md):
    DAZ operands; a NaN ``a`` is returned as is; else a NaN ``b`` is returned with the sign
    sign(a) AND sign(b) (max) / OR (min); +0 > -0; otherwise the larger/smaller value."""
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not is_float_np(a.dtype):
            return np.maximum(a, b) if is_max else np.minimum(a, b)
        dt = a.dtype
        prec = op_precision(dt)
        x = daz(a.astype(prec), prec)
        y = daz(b.astype(prec), prec)
        sx, sy = np.signbit(x), np.signbit(y)
        nan_sign = (sx & sy) if is_max else (sx | sy)
        y_nan = np.where(nan_sign, -np.abs(y), np.abs(y))
        with np.errstate(invalid="ignore"):
            if is_max:
                pick_x = (x > y) | ((x == y) & ~sx)
            else:
                pick_x = (x < y) | ((x == y) & sx)
        r = np.where(np.isnan(x), x, np.where(np.isnan(y), y_nan, np.where(pick_x, x, y)))
        return r.astype(dt) if dt != prec else r
    return run


_np_max = _minmax(True)
_np_min = _minmax(False)


def _np_shift(kind: str) -> NpFn:
    def f(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dt = a.dtype
        w = dt.itemsize * 8
        ud = np.dtype(f"u{dt.itemsize}")
        ub = b.view(ud) if b.dtype != ud else b
        big = ub >= w
        s = np.where(big, 0, ub).astype(ud)
        if kind == "shl":
            r = (a.view(ud) << s).view(dt)
            return np.where(big, np.zeros_like(a), r)
        if kind == "lshr":
            r = (a.view(ud) >> s).view(dt)
            return np.where(big, np.zeros_like(a), r)
        if dt.kind == "u":
            sa = a.view(np.dtype(f"i{dt.itemsize}"))
            r = (sa >> s.astype(sa.dtype)).view(dt)
            return np.where(big, (sa >> (w - 1)).view(dt), r)
        r = a >> s.astype(dt)
        return np.where(big, a >> (w - 1), r)
    return f


def _np_neg(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return (np.zeros_like(a) - a).astype(a.dtype)
    return np.negative(a)


def _np_abs(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "i":
        return np.where(a < 0, _np_neg(a), a)
    if a.dtype.kind == "u":
        return a
    u = np.dtype(f"u{a.dtype.itemsize}")
    mask = np.array((1 << (a.dtype.itemsize * 8 - 1)) - 1, dtype=u)
    return (a.view(u) & mask).view(a.dtype)


def _np_not(a: np.ndarray) -> np.ndarray:
    return np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)


def _np_bitwise(fn_bool: NpFn, fn_int: NpFn) -> NpFn:
    return lambda a, b: fn_bool(a, b) if a.dtype == np.bool_ else fn_int(a, b)




# ---------------------------------------------------------------------------------------------
# registrations
# ---------------------------------------------------------------------------------------------

def _z_pred_or(fp: Callable[..., Any], bv: Callable[..., Any], commutative: bool = False) -> ZFn:
    """Like :func:`_z_fp_or_bv`; pred operands are OR-ed (XLA's add on pred, measured)."""
    inner = _z_fp_or_bv(fp, bv, commutative)

    def f(*xs: Any) -> Any:
        return z3.Or(xs[0], xs[1]) if xs[-2].is_pred else inner(*xs)
    return f


_ARITH_XLA = ("integers wrap (two's complement); floats IEEE-754 round-to-nearest-even with DAZ/FTZ "
              "(f32/f64), bf16/f16 computed in f32 and rounded once")

_register_elementwise("add", 2, "numpred", _arith(np.add, np.add),
                      _z_pred_or(lambda rm, a, b: z3.fpAdd(rm, a, b), lambda a, b: a + b, commutative=True),
                      "same integer, float or pred type in and out", _ARITH_XLA + "; add on pred is OR")
_register_elementwise("subtract", 2, "num", _arith(np.subtract, np.subtract),
                      _z_fp_or_bv(lambda rm, a, b: z3.fpSub(rm, a, b), lambda a, b: a - b),
                      "same integer or float type in and out", _ARITH_XLA)
_register_elementwise("multiply", 2, "num", _arith(np.multiply, np.multiply),
                      _z_fp_or_bv(lambda rm, a, b: z3.fpMul(rm, a, b), lambda a, b: a * b, commutative=True),
                      "same integer or float type in and out", _ARITH_XLA)
_register_elementwise("divide", 2, "num", _np_divide, _z_div, "same integer or float type in and out",
                      "integers truncate toward zero; x/0 = -1 (all bits set; UINT_MAX for unsigned); "
                      "INT_MIN/-1 = INT_MIN; floats IEEE (x/0 = +-inf, 0/0 = NaN)")
_register_elementwise("remainder", 2, "num", _np_remainder, _z_rem, "same integer or float type in and out",
                      "result has the sign of the dividend (C fmod); integer x%0 = x; INT_MIN % -1 = 0; "
                      "float fmod is exact")
_register_elementwise("maximum", 2, "num", _np_max, _z_max, "same integer or float type in and out",
                      "float: DAZ operands; NaN propagates (a NaN a as is, else b's NaN with sign "
                      "sign(a) AND sign(b)); +0 > -0; bf16/f16 through f32")
_register_elementwise("minimum", 2, "num", _np_min, _z_min, "same integer or float type in and out",
                      "float: DAZ operands; NaN propagates (a NaN a as is, else b's NaN with sign "
                      "sign(a) OR sign(b)); -0 < +0; bf16/f16 through f32")
_register_elementwise("and", 2, "intpred", _np_bitwise(np.logical_and, np.bitwise_and), _z_bitwise("and"),
                      "integer or pred, same type in and out", "bitwise; logical on pred")
_register_elementwise("or", 2, "intpred", _np_bitwise(np.logical_or, np.bitwise_or), _z_bitwise("or"),
                      "integer or pred, same type in and out", "bitwise; logical on pred")
_register_elementwise("xor", 2, "intpred", _np_bitwise(np.logical_xor, np.bitwise_xor), _z_bitwise("xor"),
                      "integer or pred, same type in and out", "bitwise; logical on pred")
_register_elementwise("shift-left", 2, "int", _np_shift("shl"), _z_shift("shl"),
                      "integer, same type in and out",
                      "shift amount read as unsigned; amount >= width gives 0")
_register_elementwise("shift-right-logical", 2, "int", _np_shift("lshr"), _z_shift("lshr"),
                      "integer, same type in and out",
                      "shift amount read as unsigned; amount >= width gives 0")
_register_elementwise("shift-right-arithmetic", 2, "int", _np_shift("ashr"), _z_shift("ashr"),
                      "integer, same type in and out",
                      "shift amount read as unsigned; amount >= width fills with the sign bit")
_register_elementwise("negate", 1, "num", _np_neg,
                      lambda a, dt, out: z3.fpNeg(a) if dt.is_float else -a,
                      "integer or float, same type", "integers wrap (-INT_MIN = INT_MIN); floats flip the sign bit")
_register_elementwise("abs", 1, "num", _np_abs,
                      lambda a, dt, out: z3.fpAbs(a) if dt.is_float else (
                          z3.If(a < 0, -a, a) if dt.is_signed else a),
                      "integer or float, same type",
                      "integers wrap (abs(INT_MIN) = INT_MIN); floats clear the sign bit")
_register_elementwise("not", 1, "intpred", _np_not,
                      lambda a, dt, out: z3.Not(a) if dt.is_pred else ~a,
                      "integer or pred, same type", "bitwise complement; logical not on pred")
_register_elementwise("sqrt", 1, "float", float_op(np.sqrt),
                      lambda a, dt, out: Z.float_op(z3.fpSqrt, [a], dt), "float, same type",
                      "correctly rounded IEEE square root with DAZ/FTZ; sqrt(-x) = NaN, sqrt(-0.0) = -0.0")
_register_elementwise("rsqrt", 1, "float", float_op(lambda x: 1.0 / np.sqrt(x)),
                      lambda a, dt, out: Z.float_op(
                          lambda rm, x: z3.fpDiv(rm, z3.FPVal(1.0, x.sort()), z3.fpSqrt(rm, x)), [a], dt),
                      "float, same type", "reference: 1/sqrt(x) in f64 rounded once to f32 (f64: two roundings, as XLA). "
                      "XLA:CPU f32 uses a CPU-dependent hardware estimate + Newton steps",
                      xla_bound=XlaBound({"f32": 1, "f64": 2, "bf16": 1, "f16": 1}))

_register_elementwise("round-nearest-even", 1, "float", float_op(np.rint, flush=False),
                      lambda a, dt, out: Z.float_op(z3.fpRoundToIntegral, [a], dt, flush=False),
                      "float, same type",
                      "rounds to the nearest integer, ties to even (XLA's RoundNearestEven); DAZ: a subnormal "
                      "operand gives a zero of its sign (as rounding it would); -0.0, +-inf and NaN (quieted) "
                      "are kept; the result is an integer-valued float of the same type")


def _uninterpreted(name: str) -> ZFn:
    def f(a: Any, dt: DType, out: DType) -> Any:
        s = Z.fp_sort(dt)
        return z3.Function(f"{name}_{dt.name}", s, s)(a)
    return f


def _nan_rules(name: str, fn: NpFn) -> NpFn:
    """NaN results of XLA:CPU's exp/log/tanh (measured): a NaN operand comes back as is with the
    quiet bit set (sign kept; libm's tanh/exp may drop the sign); log of a negative number or -inf
    is +NaN for f64, and f32 log returns 0xFFFFFFFF for every NaN or negative operand (its own
    approximation's bit trick). bf16/f16 round that f32 result."""
    base = float_op(fn)

    def run(x: np.ndarray) -> np.ndarray:
        prec = op_precision(x.dtype)
        xp = x.astype(prec)
        r = base(xp)
        nan_in = np.isnan(xp)
        ui = np.dtype(f"u{prec.itemsize}")
        quiet = np.array(1 << (52 if prec == np.float64 else 22), dtype=ui)
        r = np.where(nan_in, (xp.view(ui) | quiet).view(prec), r)
        if name == "tanh" and prec == np.float32:
            # XLA:CPU's f32 tanh returns x itself for |x| < 0.0004, subnormals included (measured)
            r = np.where(np.abs(xp) < np.float32(0.0004), xp, r)
        if name == "log":
            neg = daz(xp, prec) < 0
            bad = np.array(0xFFFFFFFF if prec == np.float32 else 0x7FF8000000000000, dtype=ui).view(prec)
            if x.dtype == np.float16:
                # f16 log does not take the f32 path's bit trick: log(x<0) is the default NaN
                bad = np.array(0xFFC00000, dtype=ui).view(prec)
                r = np.where(neg & ~nan_in, bad, r)
            else:
                r = np.where((neg | nan_in) if prec == np.float32 else neg, bad, r)
        return r.astype(x.dtype) if x.dtype != prec else r
    return run


#: XLA:CPU's exp/log/tanh against the reference: f32 and f64 measured (f64 on 200,000 random operands:
#: max seen exp 2, log 1, tanh 7 ulp; XLA's f64 versions are not correctly rounded either); a bf16 /
#: f16 result is one rounding of a close f32 value (1 ulp); log near 1 has a tiny result whose error
#: is an absolute one (2 ulps of 1.0)
_XLA_BOUNDS = {"exponential": XlaBound({"f32": 5, "f64": 4, "bf16": 1, "f16": 1}),
               "log": XlaBound({"f32": 1, "f64": 4, "bf16": 1, "f16": 1}, near_one=2),
               "tanh": XlaBound({"f32": 4, "f64": 8, "bf16": 1, "f16": 1})}

for _name, _fn in (("exponential", np.exp), ("log", np.log), ("tanh", np.tanh)):
    _register_elementwise(_name, 1, "float", _nan_rules(_name, _fn), _uninterpreted(_name), "float, same type",
                          "reference: computed in f64, then DAZ/FTZ and one rounding (nearly correctly rounded); "
                          "NaN operand returned quieted (sign kept); log(x<0) = +NaN (f64), f32 log of a NaN or negative "
                          "operand = 0xFFFFFFFF (f32, bf16; f16: default NaN, NaN operand quieted); f32 tanh(x) = x for |x| < 0.0004 (no DAZ); "
                          "SMT: uninterpreted",
                          uninterpreted=True, xla_bound=_XLA_BOUNDS[_name])

_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
_CMP_NP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
           "GE": np.greater_equal}


def _total_order_key(a: np.ndarray) -> np.ndarray:
    """Map floats to signed ints whose order is IEEE totalOrder (-NaN < -inf < ... < -0 < +0 < ... < NaN)."""
    si = np.dtype(f"i{a.dtype.itemsize}")
    bits = a.view(si)
    return np.where(bits < 0, np.bitwise_xor(bits, np.array(np.iinfo(si).max, dtype=si)), bits)


def _compare_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    a, b = args
    direction = attrs["direction"]
    if is_float_np(a.dtype):
        if attrs.get("type") == "TOTALORDER":
            a, b = _total_order_key(a), _total_order_key(b)
        else:
            prec = op_precision(a.dtype)
            a, b = daz(a.astype(prec), prec), daz(b.astype(prec), prec)
    return np.asarray(_CMP_NP[direction](a, b))


def _z_compare(a: Any, b: Any, dt: DType, direction: str, total: bool) -> Any:
    if dt.is_float:
        if not total:
            a, b = Z.daz(Z.to_prec(a, dt)), Z.daz(Z.to_prec(b, dt))
        if total:
            ka, kb = _z_total_key(a, dt), _z_total_key(b, dt)
            return {"EQ": ka == kb, "NE": ka != kb, "LT": ka < kb, "LE": ka <= kb, "GT": ka > kb,
                    "GE": ka >= kb}[direction]
        return {"EQ": lambda: z3.fpEQ(a, b), "NE": lambda: z3.Not(z3.fpEQ(a, b)), "LT": lambda: z3.fpLT(a, b),
                "LE": lambda: z3.fpLEQ(a, b), "GT": lambda: z3.fpGT(a, b), "GE": lambda: z3.fpGEQ(a, b)}[direction]()
    if dt.is_pred:
        ai, bi = z3.If(a, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2)), z3.If(b, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2))
        return _z_compare(ai, bi, DType("u2", Kind.UINT, 2), direction, False)
    if dt.is_signed:
        return {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[direction]
    return {"EQ": a == b, "NE": a != b, "LT": z3.ULT(a, b), "LE": z3.ULE(a, b), "GT": z3.UGT(a, b),
            "GE": z3.UGE(a, b)}[direction]


def _z_total_key(a: Any, dt: DType) -> Any:
    bits = Z.ieee_bits(a)
    w = dt.bits
    return z3.If(bits < 0, bits ^ z3.BitVecVal((1 << (w - 1)) - 1, w), bits)


def _compare_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    dt = env.extra["operand_dtypes"][0]
    direction = attrs["direction"]
    total = attrs.get("type") == "TOTALORDER"
    return Z.elementwise(lambda a, b: _z_compare(a, b, dt, direction, total), *args)


def _compare_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    same_shape(types)
    same_dtype(types)
    return TensorType(PRED, _shape_of(0)(types, attrs, declared))


register(OpDef("compare", (2, 2),
               (AttrSpec("direction", "enum", choices=_DIRECTIONS),
                AttrSpec("type", "enum", required=False, choices=("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"))),
               _compare_infer, _compare_eval, _compare_smt, "elementwise", "any type, same for both; returns pred",
               "floats: IEEE comparisons on DAZ operands (NaN is unordered: only NE is true), -0.0 == +0.0; "
               "type=TOTALORDER uses IEEE totalOrder; unsigned types compare unsigned",
               scalar=lambda xs, at, dts, out: _z_compare(xs[0], xs[1], dts[0], at["direction"],
                                                          at.get("type") == "TOTALORDER"), shape=_shape_of(0)))


def _select_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    p, a, b = (tensor(t, f"operand {i}") for i, t in enumerate(types))
    if p.dtype is not PRED:
        raise OpError(f"select predicate must be pred, got {p.dtype}")
    same_shape([a, b], "select branches")
    same_dtype([a, b], "select branches")
    if p.shape != a.shape and p.rank != 0:
        raise OpError(f"select predicate shape {p.short()} matches neither the branches {a.short()} nor a scalar")
    return TensorType(a.dtype, _shape_of(1)(types, attrs, declared))


def _select_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    p, a, b = args
    return np.where(p, a, b).astype(a.dtype)


def _select_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    p, a, b = args
    p = np.broadcast_to(p, a.shape)
    return Z.elementwise(lambda c, x, y: z3.If(c, x, y), p, a, b)


register(OpDef("select", (3, 3), (), _select_infer, _select_eval, _select_smt, "elementwise",
               "pred predicate (same shape or scalar), branches of one type", "elementwise choice, no arithmetic",
               scalar=lambda xs, at, dts, out: z3.If(xs[0], xs[1], xs[2]), shape=_shape_of(1)))


def _clamp_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    lo, x, hi = (tensor(t, f"operand {i}") for i, t in enumerate(types))
    same_dtype([lo, x, hi])
    _check_kind(x.dtype, "num", "clamp")
    for name, t in (("min", lo), ("max", hi)):
        if t.shape != x.shape and t.rank != 0:
            raise OpError(f"clamp {name} shape {t.short()} matches neither the operand {x.short()} nor a scalar")
    return TensorType(x.dtype, _shape_of(1)(types, attrs, declared))


def _clamp_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    lo, x, hi = args
    lo = np.broadcast_to(lo, x.shape)
    hi = np.broadcast_to(hi, x.shape)
    return np.asarray(_np_min(_np_max(lo, x), hi))  # operand order matters for NaN signs (measured)


def _clamp_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    lo, x, hi = args
    dt = env.extra["operand_dtypes"][1]
    lo = np.broadcast_to(lo, x.shape)
    hi = np.broadcast_to(hi, x.shape)
    return Z.elementwise(lambda lo_, x_, hi_: _z_min(_z_max(lo_, x_, dt, dt), hi_, dt, dt), lo, x, hi)


register(OpDef("clamp", (3, 3), (), _clamp_infer, _clamp_eval, _clamp_smt, "elementwise",
               "min and max scalar or the operand's shape, all of one numeric type",
               "clamp(lo, x, hi) = minimum(maximum(lo, x), hi), with maximum/minimum's NaN and -0.0 rules; "
               "lo > hi gives hi",
               scalar=lambda xs, at, dts, out: _z_min(_z_max(xs[0], xs[1], dts[1], dts[1]), xs[2], dts[1], dts[1]),
               shape=_shape_of(1)))
