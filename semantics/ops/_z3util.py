"""z3 sorts and scalar helpers shared by the SMT encodings of the operator table.

Representation (documented in docs/semantics.md): pred is a z3 Bool; an integer type of width w is
a bit-vector of width w (two's complement for signed types, wraparound arithmetic); bf16, f16,
f32, f64 are z3 floating-point sorts FP(8,8), FP(5,11), FP(8,24), FP(11,53) with
round-to-nearest-even.

NaNs: SMT-LIB floating point has a single NaN. Where an operator observes a NaN's bits
(``bitcast-convert`` of a float, ``compare`` with ``TOTALORDER``: both go through
:func:`ieee_bits`), the bits are exact for the NaNs of inputs and constants (a float input is the
term ``fpBVToFP(bits)`` of a bit-vector variable, so every NaN pattern is a possible input, and
:func:`model_value` reads the pattern back) and *any* NaN pattern for a NaN an operation computes
(a fresh variable per observation: the interpreter's rule for which NaN an operation returns is not
modelled, so a proof must hold for every choice). Float values themselves are compared as SMT
values, every NaN equal to every NaN; the provers add the NaN sign where :func:`nan_sign` models it
(the reference's rule for which NaN an operation returns: see that function), so a rule whose two
sides return NaNs of different signs there is refuted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import z3

from ..dtypes import DType, Kind

__all__ = ["sort_of", "const", "const_array", "value_of", "model_value", "input_var", "ieee_bits", "nan_draws",
           "exact_nan_bits", "nan_sign", "nan_sign_differs", "RNE", "RTZ", "fp_sort", "elementwise"]

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


def input_var(name: str, dt: DType) -> z3.ExprRef:
    """A fresh input element of type ``dt``: floats are ``fpBVToFP`` of a bit-vector variable, so
    that a NaN input carries its sign and payload (read back by :func:`model_value`)."""
    if dt.is_float:
        return z3.fpBVToFP(z3.BitVec(name, dt.bits), fp_sort(dt))
    return z3.Const(name, sort_of(dt))


def _bits_source(x: z3.ExprRef) -> z3.ExprRef | None:
    """``b`` when ``x`` is ``fpBVToFP(b)`` (an input or a constant), else None."""
    if z3.is_app_of(x, z3.Z3_OP_FPA_TO_FP) and x.num_args() == 1 and z3.is_bv(x.arg(0)):
        return x.arg(0)
    return None


def model_value(model: z3.ModelRef, term: z3.ExprRef, dt: DType) -> Any:
    """The value of an input element ``term`` in ``model``, NaN payload and sign included."""
    src = _bits_source(term) if dt.is_float else None
    if src is not None:
        bv = model.eval(src, model_completion=True)
        return np.array(bv.as_long(), dtype=dt.uint_np).view(dt.np)[()]
    return value_of(model.eval(term, model_completion=True), dt)


_DRAWS = [0]
_EXACT = [False]


def nan_draws() -> int:
    """How many arbitrary NaN patterns :func:`ieee_bits` has drawn so far in this process (a prover
    compares it before and after a query: a model that does not replay is then not a prover bug
    but a dependence on a computed NaN's bits)."""
    return _DRAWS[0]


class exact_nan_bits:
    """Context manager: computed NaNs read as the positive quiet NaN instead of an arbitrary pattern
    (:func:`semantics.smt.evaluate_smt` evaluates closed terms)."""

    def __enter__(self) -> None:
        self._old = _EXACT[0]
        _EXACT[0] = True

    def __exit__(self, *exc: Any) -> None:
        _EXACT[0] = self._old


def ieee_bits(x: z3.ExprRef) -> z3.ExprRef:
    """The IEEE bit pattern of a float term as a bit-vector.

    Inputs and constants (``fpBVToFP(b)``) give ``b`` exactly, through ``If`` (select, maximum, pad
    values ...) too. A NaN an operation computes gives an arbitrary NaN pattern (a fresh variable:
    which NaN an operation returns is not modelled), so a proof holds whatever that NaN is."""
    memo: dict[int, z3.ExprRef] = {}

    def go(t: z3.ExprRef) -> z3.ExprRef:
        k = t.get_id()
        if k in memo:
            return memo[k]
        src = _bits_source(t)
        if src is not None:
            r = src
        elif z3.is_app_of(t, z3.Z3_OP_ITE):
            r = z3.If(t.arg(0), go(t.arg(1)), go(t.arg(2)))
        else:
            s = t.sort()
            e, m = s.ebits(), s.sbits() - 1
            if _EXACT[0]:
                nan = z3.BitVecVal((((1 << e) - 1) << m) | (1 << (m - 1)), e + m + 1)
            else:
                _DRAWS[0] += 1
                sign = z3.BitVec(f"nan!{_DRAWS[0]}.sign", 1)
                pay = z3.BitVec(f"nan!{_DRAWS[0]}.payload", m)
                nan = z3.Concat(sign, z3.BitVecVal((1 << e) - 1, e), z3.If(pay == 0, z3.BitVecVal(1, m), pay))
            r = z3.If(z3.fpIsNaN(t), nan, z3.fpToIEEEBV(t))
        memo[k] = r
        return r
    return go(x)


def nan_sign(x: z3.ExprRef) -> tuple[z3.BoolRef, z3.BoolRef]:
    """``(negative, determined)`` for a float term: when ``x`` is NaN and ``determined`` holds,
    ``negative`` is the sign bit of the NaN the reference interpreter returns.

    Modelled (docs/semantics.md, "Which NaN an operation returns"): inputs and constants
    (``fpBVToFP(bits)``: the bits' sign), ``If`` (select, DAZ, FTZ), conversions between float
    sorts (sign kept), negate (flipped), abs (cleared), round-to-integral (kept), sqrt (the
    operand's NaN, else the fresh NaN, which is negative), add/subtract/multiply/divide with at
    most one NaN operand (that operand's NaN, else the negative fresh NaN), and the fused
    multiply-add of a dot's chain, ``fma(x, y, c)``: x's NaN, else y's, else the negative fresh
    NaN for inf x 0, else c's, else the negative fresh NaN (inf - inf). Not determined: two NaN
    operands of add/subtract/multiply/divide (numpy's choice depends on the element's position in
    its SIMD loop), min/max, remainder, NaN constants without bits and every other operation
    (uninterpreted functions included): there the provers compare values up to the NaN's sign."""
    memo: dict[int, tuple[z3.BoolRef, z3.BoolRef]] = {}
    T, F = z3.BoolVal(True), z3.BoolVal(False)

    def go(t: z3.ExprRef) -> tuple[z3.BoolRef, z3.BoolRef]:
        # iterative post-order (a dot's FMA chain or a reduce is deeper than Python's stack):
        # every float operand is memoized before ``step`` reads it
        todo = [t]
        while todo:
            u = todo[-1]
            if u.get_id() in memo:
                todo.pop()
                continue
            pending = [] if _bits_source(u) is not None else \
                [c for c in u.children() if z3.is_fp(c) and c.get_id() not in memo]
            if pending:
                todo.extend(pending)
                continue
            todo.pop()
            memo[u.get_id()] = step(u)
        return memo[t.get_id()]

    def nan(t: z3.ExprRef) -> z3.BoolRef:
        return z3.fpIsNaN(t)

    def first_nan(ops: list[z3.ExprRef]) -> tuple[z3.BoolRef, z3.BoolRef]:
        """The NaN of the first NaN operand, else the fresh (negative) NaN; undetermined with two
        or more NaN operands."""
        sign, det = T, T
        for i in reversed(range(len(ops))):
            s_i, d_i = go(ops[i])
            others = [nan(o) for o in ops[i + 1:]]
            d_here = z3.And(d_i, z3.Not(z3.Or(*others))) if others else d_i
            sign = z3.If(nan(ops[i]), s_i, sign)
            det = z3.If(nan(ops[i]), d_here, det)
        return sign, det

    def step(t: z3.ExprRef) -> tuple[z3.BoolRef, z3.BoolRef]:
        if isinstance(t, z3.FPNumRef):
            return F, z3.BoolVal(not t.isNaN())
        src = _bits_source(t)
        if src is not None:
            w = src.size()
            # bits computed from a float through ieee_bits carry an arbitrary pattern for a
            # computed NaN (not the reference's): undetermined
            return z3.Extract(w - 1, w - 1, src) == 1, z3.BoolVal(not _reads_float(src))
        if not z3.is_app(t):
            return F, F
        kind = t.decl().kind()
        args = [t.arg(i) for i in range(t.num_args())]
        fps = [a for a in args if z3.is_fp(a)]
        if kind == z3.Z3_OP_ITE:
            s1, d1 = go(args[1])
            s2, d2 = go(args[2])
            return z3.If(args[0], s1, s2), z3.If(args[0], d1, d2)
        if kind in (z3.Z3_OP_FPA_PLUS_ZERO, z3.Z3_OP_FPA_MINUS_ZERO, z3.Z3_OP_FPA_PLUS_INF,
                    z3.Z3_OP_FPA_MINUS_INF, z3.Z3_OP_FPA_NUM, z3.Z3_OP_FPA_TO_FP_UNSIGNED):
            return F, T
        if kind == z3.Z3_OP_FPA_TO_FP:
            if len(fps) == 1:            # float -> float conversion: the sign is kept
                return go(fps[0])
            if not fps and all(not z3.is_fp(a) for a in args) and len(args) == 2:
                return F, T              # integer -> float: never NaN
            return F, F
        if kind == z3.Z3_OP_FPA_NEG:
            s, d = go(fps[0])
            return z3.Not(s), d
        if kind == z3.Z3_OP_FPA_ABS:
            return F, go(fps[0])[1]
        if kind == z3.Z3_OP_FPA_ROUND_TO_INTEGRAL:
            return go(fps[0])
        if kind == z3.Z3_OP_FPA_SQRT:
            s, d = go(fps[0])
            return z3.If(nan(fps[0]), s, T), z3.If(nan(fps[0]), d, T)
        if kind in (z3.Z3_OP_FPA_ADD, z3.Z3_OP_FPA_SUB, z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_DIV):
            return first_nan(fps)
        if kind == z3.Z3_OP_FPA_FMA:
            x, y, c = fps
            (sx, dx), (sy, dy), (sc, dc) = go(x), go(y), go(c)
            inv = z3.Or(z3.And(z3.fpIsInf(x), z3.fpIsZero(y)), z3.And(z3.fpIsZero(x), z3.fpIsInf(y)))
            sign = z3.If(nan(x), sx, z3.If(nan(y), sy, z3.If(inv, T, z3.If(nan(c), sc, T))))
            det = z3.If(nan(x), dx, z3.If(nan(y), dy, z3.If(inv, T, z3.If(nan(c), dc, T))))
            return sign, det
        return F, F
    return go(x)


def _reads_float(t: z3.ExprRef) -> bool:
    """Whether a bit-vector term reads a float term (through :func:`ieee_bits`)."""
    seen: set[int] = set()
    todo = [t]
    while todo:
        u = todo.pop()
        if u.get_id() in seen:
            continue
        seen.add(u.get_id())
        if z3.is_fp(u):
            return True
        todo.extend(u.children())
    return False


def nan_sign_differs(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    """True where ``a`` and ``b`` are both NaN, both NaNs' signs are determined (:func:`nan_sign`)
    and the signs differ: an output difference the value comparison (one NaN) does not see."""
    if not z3.is_fp(a) or a.eq(b):
        return z3.BoolVal(False)
    sa, da = nan_sign(a)
    sb, db = nan_sign(b)
    return z3.And(z3.fpIsNaN(a), z3.fpIsNaN(b), da, db, sa != sb)


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
