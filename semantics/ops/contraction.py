"""Contractions: ``dot`` (general: batch and contracting dimensions) and ``reduce``.

Accumulation order is part of the semantics for floats; both follow what XLA's CPU backend
does (docs/semantics.md):

* dot: integers accumulate the exact sum and wrap to the result type. Floats accumulate in f32
  (f64 for f64) with one fused multiply-add per contracting index, in increasing index order
  (``acc = fma(a[k], b[k], acc)``, DAZ/FTZ), then round once to the result type (bf16/f16). This
  is XLA's order for most shapes; for some shapes its kernel library (YNNPACK) splits the sum
  differently, which the conformance test bounds (see docs/semantics.md).
* reduce: XLA's TreeReductionRewriter: when a reduced dimension exceeds 32, the operand is cut
  into windows of 32 along each reduced dimension (``kSame`` padding, low = pad // 2; padded
  positions are skipped), each window is folded sequentially from the init value, and the
  partial results are reduced again, recursively. Reductions of at most 32 elements per reduced
  dimension fold sequentially in row-major order of the reduced indices. The region is applied
  through the interpreter (or the SMT encoder), so every rounding of the region (a bf16 add
  rounds to bf16 at each step) is the region's own.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import z3

from ..dtypes import F64, DType, from_numpy
from ..ir import Attrs
from ..types import TensorType, TupleType, Type
from . import _z3util as Z
from ._common import dims_valid, tensor
from ._float import daz, ftz, is_float_np, op_precision
from ._table import AttrSpec, Env, OpDef, OpError, register

WINDOW = 32


# (1) dot -------------------------------------------------------------------------------------

def _dot_dims(attrs: Attrs) -> tuple[tuple[int, ...], ...]:
    return (attrs.get("lhs_batch_dims", ()), attrs.get("rhs_batch_dims", ()),
            attrs.get("lhs_contracting_dims", ()), attrs.get("rhs_contracting_dims", ()))


def _dot_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    a, b = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    lb, rb, lc, rc = _dot_dims(attrs)
    if a.dtype != b.dtype:
        raise OpError(f"dot operands have different element types: {a.dtype} vs {b.dtype}")
    if a.dtype.is_pred:
        raise OpError("dot is not defined on pred")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise OpError("lhs and rhs must list as many batch dimensions and contracting dimensions")
    dims_valid(lb + lc, a.rank, "lhs batch+contracting dims")
    dims_valid(rb + rc, b.rank, "rhs batch+contracting dims")
    for x, y, what in ((lb, rb, "batch"), (lc, rc, "contracting")):
        for i, j in zip(x, y, strict=True):
            if a.shape[i] != b.shape[j]:
                raise OpError(f"{what} dimension sizes differ: lhs dim {i} is {a.shape[i]}, rhs dim {j} is {b.shape[j]}")
    shape = _dot_shape(types, attrs, declared)
    out_dt = a.dtype
    if declared is not None:
        d = tensor(declared, "result").dtype
        if d != a.dtype:
            if d.is_float != a.dtype.is_float or d.is_pred:
                raise OpError(f"dot of {a.dtype} operands cannot produce {d}")
            out_dt = d
    return TensorType(out_dt, shape)


def _dot_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    """Batch dimensions, then the lhs's free dimensions, then the rhs's."""
    a, b = types[0], types[1]
    lb, rb, lc, rc = _dot_dims(attrs)
    lfree = [d for d in range(len(a.shape)) if d not in lb + lc]
    rfree = [d for d in range(len(b.shape)) if d not in rb + rc]
    return tuple(a.shape[d] for d in lb) + tuple(a.shape[d] for d in lfree) + tuple(b.shape[d] for d in rfree)


def _dot_operands(a: Any, b: Any, attrs: Attrs) -> tuple[Any, Any, tuple[int, ...]]:
    """Reshape both operands to (batch, M, K) and (batch, K, N); returns them and the output shape."""
    lb, rb, lc, rc = _dot_dims(attrs)
    lfree = [d for d in range(a.ndim) if d not in lb + lc]
    rfree = [d for d in range(b.ndim) if d not in rb + rc]
    bs = [a.shape[d] for d in lb]
    m = [a.shape[d] for d in lfree]
    n = [b.shape[d] for d in rfree]
    k = math.prod(a.shape[d] for d in lc)
    A = np.transpose(a, list(lb) + lfree + list(lc)).reshape(math.prod(bs), math.prod(m), k)
    B = np.transpose(b, list(rb) + list(rc) + rfree).reshape(math.prod(bs), k, math.prod(n))
    return A, B, tuple(bs + m + n)


def _fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded f32 fused multiply-add with DAZ/FTZ, computed exactly in f64:
    the product is exact in f64, the sum is rounded to odd (TwoSum error term), then to f32."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        c64 = c.astype(np.float64)
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        bits = s.view(np.int64)
        fix = (e != 0) & np.isfinite(s) & ((bits & 1) == 0)
        if fix.any():
            toward = np.where(np.signbit(e) == np.signbit(s), 1, -1).astype(np.int64)
            s = np.where(fix, (bits + toward).view(np.float64), s)
        return ftz(s, np.dtype(np.float32)).astype(np.float32)


_F64_TINY = Fraction(2) ** -1022


def _fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded f64 fused multiply-add (exact rational arithmetic; slow, f64 is rare)."""
    out = np.empty(np.broadcast(a, b, c).shape, dtype=np.float64)
    A, B, C = np.broadcast_arrays(a, b, c)
    for idx in np.ndindex(out.shape):
        x, y, z = float(A[idx]), float(B[idx]), float(C[idx])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out[idx] = x * y + z
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0:
            r = x * y + z
        elif abs(exact) < _F64_TINY:   # FTZ, tininess before rounding (as the SMT encoding)
            r = 0.0 if exact > 0 else -0.0
        else:
            try:
                r = float(exact)       # int/int true division: correctly rounded
            except OverflowError:
                r = math.inf if exact > 0 else -math.inf
        out[idx] = r
    return ftz(out, np.dtype(np.float64))


def _dot_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    t = tensor(out, "result")
    A, B, shape = _dot_operands(args[0], args[1], attrs)
    if not is_float_np(A.dtype):
        wide = np.uint64 if t.dtype.bits == 64 and not t.dtype.is_signed else np.int64
        with np.errstate(over="ignore"):
            r = np.matmul(A.astype(wide), B.astype(wide))
        return r.astype(t.dtype.np).reshape(shape)
    prec = op_precision(A.dtype)
    A = daz(A.astype(prec), prec)
    B = daz(B.astype(prec), prec)
    # XLA rewrites a dot whose contraction has one element into a multiply, so a -0.0 product stays
    # -0.0: start from -0.0 (x*y + -0.0 == x*y exactly). Longer sums start from +0.0 (measured).
    acc = np.full((A.shape[0], A.shape[1], B.shape[2]), -0.0 if A.shape[2] == 1 else 0.0, dtype=prec)
    fma = _fma_f64 if prec == np.float64 else _fma_f32
    for k in range(A.shape[2]):
        acc = fma(A[:, :, k:k + 1], B[:, k:k + 1, :], acc)
    with np.errstate(over="ignore"):   # f32 -> bf16/f16 overflow to inf is the rounding rule
        return acc.astype(t.dtype.np).reshape(shape)


def _dot_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    t = tensor(out, "result")
    src: DType = env.extra["operand_dtypes"][0]
    A, B, shape = _dot_operands(args[0], args[1], attrs)
    nb, m, k = A.shape
    n = B.shape[2]
    res = np.empty((nb, m, n), dtype=object)
    from .convert import convert_term
    for bi in range(nb):
        for i in range(m):
            for j in range(n):
                if src.is_int:
                    acc = z3.BitVecVal(0, t.dtype.bits)
                    for kk in range(k):
                        acc = acc + convert_term(A[bi, i, kk], src, t.dtype) * convert_term(B[bi, kk, j], src, t.dtype)
                    res[bi, i, j] = acc
                else:
                    p = Z.prec_sort(src)
                    acc = z3.fpMinusZero(p) if k == 1 else z3.fpPlusZero(p)   # as _dot_eval
                    for kk in range(k):
                        x = Z.daz(Z.to_prec(A[bi, i, kk], src))
                        y = Z.daz(Z.to_prec(B[bi, kk, j], src))
                        # operands in the dot's own order: fma(x, y, c) and fma(y, x, c) are equal
                        # values but return different NaNs when x and y are both NaN (x's)
                        acc = _z_fma_ftz(x, y, acc)
                    res[bi, i, j] = acc if t.dtype.bits == p.ebits() + p.sbits() else z3.fpFPToFP(Z.RNE, acc, Z.sort_of(t.dtype))
    return res.reshape(shape)


def _z_fma_ftz(x: Any, y: Any, c: Any) -> Any:
    """fma with FTZ (tininess before rounding: the round-toward-zero result is below the smallest
    normal)."""
    r = z3.fpFMA(Z.RNE, x, y, c)
    rz = z3.fpFMA(Z.RTZ, x, y, c)
    s = r.sort()
    tiny = z3.Or(z3.fpIsSubnormal(rz), z3.fpIsSubnormal(r))
    return z3.If(tiny, z3.If(z3.fpIsNegative(r), z3.fpMinusZero(s), z3.fpPlusZero(s)), r)


register(OpDef("dot", (2, 2),
               (AttrSpec("lhs_batch_dims", "ints", required=False, default=()),
                AttrSpec("rhs_batch_dims", "ints", required=False, default=()),
                AttrSpec("lhs_contracting_dims", "ints", required=False, default=()),
                AttrSpec("rhs_contracting_dims", "ints", required=False, default=())),
               _dot_infer, _dot_eval, _dot_smt, "contraction",
               "operands of one type; result of that type or a wider one of the same kind (s8 x s8 -> s32)",
               "output dims: batch, lhs free, rhs free. Integers: exact sum wrapped to the result type. "
               "Floats: f32 (f64) accumulator, one FMA per contracting index in order, DAZ/FTZ, one final "
               "rounding to bf16/f16; a contraction of one element is a multiply (-0.0 products stay -0.0). "
               "XLA's YNNPACK kernels reorder some f32 sums: conformance bound "
               "2(K-1)u sum|a*b|", shape=_dot_shape))


# (2) reduce ----------------------------------------------------------------------------------

def _reduce_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    n = len(types) // 2
    if len(types) % 2:
        raise OpError(f"reduce takes N operands and N init values, got {len(types)} operands")
    xs = [tensor(t, "operand") for t in types[:n]]
    inits = [tensor(t, "init value") for t in types[n:]]
    for x, init in zip(xs, inits, strict=True):
        if x.shape != xs[0].shape:
            raise OpError(f"reduce operands have different shapes: {xs[0].short()} vs {x.short()}")
        if init.rank != 0:
            raise OpError(f"reduce init value must be a scalar, got {init.short()}")
        if init.dtype != x.dtype:
            raise OpError(f"reduce init value type {init.dtype} differs from operand type {x.dtype}")
    x = xs[0]
    dims = attrs["dimensions"]
    dims_valid(dims, x.rank, "reduce dimensions")
    region = attrs["to_apply"]
    scalars = [TensorType(t.dtype, ()) for t in xs]
    if env.graph is not None:
        try:
            comp = env.graph.computation(region)
        except KeyError:
            raise OpError(f"to_apply={region} names no computation defined before it") from None
        pts = comp.param_types
        rt = comp.result_type
        rts = (rt,) if n == 1 else (rt.elements if isinstance(rt, TupleType) else ())
        sig = "(" + ", ".join(s.short() for s in scalars * 2) + ")"
        if (len(pts) != 2 * n or not all(s.same_value_type(p) for s, p in zip(scalars * 2, pts, strict=True))
                or len(rts) != n or not all(s.same_value_type(r) for s, r in zip(scalars, rts, strict=True))):
            raise OpError(f"reduce region '{region}' must map {sig} -> "
                          + (scalars[0].short() if n == 1 else "(" + ", ".join(s.short() for s in scalars) + ")"))
    shape = _reduce_shape(types, attrs, declared)
    outs = tuple(TensorType(t.dtype, shape) for t in xs)
    return outs[0] if n == 1 else TupleType(outs)


def _reduce_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    """The operands' shape without the reduced dimensions (each of a variadic reduce's results)."""
    return tuple(s for d, s in enumerate(types[0].shape) if d not in attrs["dimensions"])


def tree_reduce(x: Any, init: Any, dims: tuple[int, ...], fn: Any) -> Any:
    """Reduce ``x`` over ``dims`` in XLA CPU's order (module docstring); ``fn(acc, v)`` is the
    vectorized region. Works on numeric and on object (z3) arrays."""
    return tree_reduce_n([x], [init], dims, lambda a, v: [fn(a[0], v[0])])[0]


def tree_reduce_n(xs: list[Any], inits: list[Any], dims: tuple[int, ...], fn: Any) -> list[Any]:
    """:func:`tree_reduce` of a variadic reduce: ``xs`` of one shape, ``fn(accs, vs) -> accs``."""
    keep = [d for d in range(xs[0].ndim) if d not in dims]
    red = sorted(dims)
    ys = [np.transpose(x, keep + red) for x in xs]
    return _fold(ys, inits, len(red), fn)


def _fold(ys: list[Any], inits: list[Any], nred: int, fn: Any) -> list[Any]:
    y0 = ys[0]
    lead = y0.shape[: y0.ndim - nred]
    rs = y0.shape[y0.ndim - nred:]
    if all(s <= WINDOW for s in rs):
        flats = [y.reshape(lead + (math.prod(rs),)) for y in ys]
        accs = []
        for y, i in zip(ys, inits, strict=True):
            a = np.empty(lead, dtype=y.dtype)
            a[...] = i
            accs.append(a)
        for k in range(flats[0].shape[-1]):
            accs = fn(accs, [f[..., k] for f in flats])
        return accs
    ws = [min(s, WINDOW) for s in rs]
    qs = [-(-s // w) for s, w in zip(rs, ws, strict=True)]
    pads = [q * w - s for q, w, s in zip(qs, ws, rs, strict=True)]
    los = [p // 2 for p in pads]
    inner = tuple(slice(lo, lo + s) for lo, s in zip(los, rs, strict=True))
    split = lead + tuple(v for q, w in zip(qs, ws, strict=True) for v in (q, w))
    nl = len(lead)
    perm = list(range(nl)) + [nl + 2 * i for i in range(nred)] + [nl + 2 * i + 1 for i in range(nred)]
    wins = []
    for y, i in zip(ys, inits, strict=True):
        padded = np.empty(lead + tuple(q * w for q, w in zip(qs, ws, strict=True)), dtype=y.dtype)
        padded[...] = i
        padded[(Ellipsis,) + inner] = y
        wins.append(np.transpose(padded.reshape(split), perm).reshape(lead + tuple(qs) + (math.prod(ws),)))
    valid = np.zeros(tuple(q * w for q, w in zip(qs, ws, strict=True)), dtype=bool)
    valid[inner] = True
    vsplit = tuple(v for q, w in zip(qs, ws, strict=True) for v in (q, w))
    vperm = [2 * i for i in range(nred)] + [2 * i + 1 for i in range(nred)]
    vwin = np.transpose(valid.reshape(vsplit), vperm).reshape(tuple(qs) + (math.prod(ws),))
    accs = []
    for y, i in zip(ys, inits, strict=True):
        a = np.empty(lead + tuple(qs), dtype=y.dtype)
        a[...] = i
        accs.append(a)
    for k in range(wins[0].shape[-1]):
        v = vwin[..., k]
        if v.all():
            accs = fn(accs, [w[..., k] for w in wins])
        elif v.any():
            nxt = fn(accs, [w[..., k] for w in wins])
            vb = np.broadcast_to(v, accs[0].shape)
            accs = [np.where(vb, n, a) for n, a in zip(nxt, accs, strict=True)]
    return _fold(accs, inits, nred, fn)


def _reduce_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    region = attrs["to_apply"]
    call = env.call
    assert call is not None
    dims = attrs["dimensions"]
    x = xs[0]
    if n == 1:
        def fn(acc: Any, v: Any) -> Any:
            return call(region, [acc, v])

        if math.prod(x.shape[d] for d in dims) == 1:
            # XLA's AlgebraicSimplifier turns a reduce that keeps the element count (every reduced
            # dimension has size 1, or none is reduced) into a reshape: the init value, assumed to be
            # an identity, is not applied at all (measured: and-reduce of u16[3,1,1] with init 0 returns
            # the operand's values).
            return x.reshape(tensor(out, "result").shape).copy()
        r = tree_reduce(x, inits[0].reshape(())[()], dims, fn)
        return np.asarray(r, dtype=x.dtype) if x.dtype != object else r

    def fn_n(accs: list[Any], vs: list[Any]) -> list[Any]:
        return list(call(region, [*accs, *vs]))

    assert isinstance(out, TupleType)
    shape = tensor(out.elements[0], "result").shape
    if math.prod(x.shape[d] for d in dims) == 1:
        return tuple(a.reshape(shape).copy() for a in xs)
    rs = tree_reduce_n(list(xs), [i.reshape(())[()] for i in inits], dims, fn_n)
    return tuple(np.asarray(r, dtype=a.dtype).reshape(shape) if a.dtype != object else r.reshape(shape)
                 for r, a in zip(rs, xs, strict=True))


register(OpDef("reduce", (2, None), (AttrSpec("dimensions", "ints"), AttrSpec("to_apply", "computation")),
               _reduce_infer, _reduce_eval, _reduce_eval, "contraction",
               "N operands of one shape and N scalar inits of their types; region (T..., T...) -> T... "
               "(variadic: a tuple of N results)",
               "XLA CPU order: windows of 32 along each reduced dimension longer than 32 (kSame padding, "
               "padded positions skipped), each folded from init, then the partials reduced again; "
               "at most 32: sequential row-major fold. The region's own rounding applies at every step. "
               "A reduce whose reduced dimensions all have size 1 (or that reduces none) is a reshape: "
               "init is not applied (XLA assumes it is an identity)", shape=_reduce_shape))

__all__ = ["tree_reduce", "from_numpy", "F64"]
