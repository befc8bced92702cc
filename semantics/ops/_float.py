"""XLA CPU floating-point environment, emulated in numpy.

XLA's CPU runtime executes with the x86 MXCSR flush-to-zero and denormals-are-zero bits set
(measured: docs/semantics.md, "Floating-point environment"). So every f32/f64 arithmetic
operation reads a subnormal operand as a zero of the same sign (DAZ) and writes a zero of the
same sign for a result whose exact value is below the smallest normal (FTZ, tininess before
rounding). bf16 operations are f32 operations followed by one rounding to bf16; f16 operations
are f32 operations rounded once to f16 (f16 values are all normal in f32, so DAZ/FTZ never
touch them). Bit operations (negate, abs, select, bitcast, f32<->bf16 conversion) keep
subnormals.

``float_op(fn)`` turns a numpy function into that behaviour: inputs widened exactly to f64
(after DAZ at the operation's precision), ``fn`` evaluated in f64 (exact for +, -, *; one
rounding for /, sqrt, fmod, which then rounds innocuously again to f32 as 53 >= 2*24 + 2), the
FTZ test on the f64 value, then one rounding to the result type.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

__all__ = ["daz", "ftz", "float_op", "is_float_np", "op_precision"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

_TINY = {_F32: np.float64(2.0 ** -126), _F64: np.float64(2.0 ** -1022)}


def is_float_np(dt: np.dtype) -> bool:
    return dt in (_BF16, _F16, _F32, _F64)


def op_precision(dt: np.dtype) -> np.dtype:
    """The precision XLA CPU computes an operation on ``dt`` in: f32 for bf16/f16/f32, f64 for f64."""
    return _F64 if dt == _F64 else _F32


def daz(x: np.ndarray, prec: np.dtype) -> np.ndarray:
    """Subnormals of precision ``prec`` (f32 or f64) read as zeros of the same sign."""
    tiny = _TINY[prec]
    with np.errstate(invalid="ignore"):
        sub = (np.abs(x.astype(_F64, copy=False)) < tiny) & (x != 0)
    if not sub.any():
        return x
    return np.where(sub, np.copysign(np.zeros((), x.dtype), x), x)


def ftz(r64: np.ndarray, prec: np.dtype) -> np.ndarray:
    """Flush f64 results whose magnitude is below ``prec``'s smallest normal to signed zero."""
    tiny = _TINY[prec]
    with np.errstate(invalid="ignore"):
        sub = (np.abs(r64) < tiny) & (r64 != 0)
    if not sub.any():
        return r64
    return np.where(sub, np.copysign(np.zeros((), r64.dtype), r64), r64)


def float_op(fn: Callable[..., np.ndarray], *, daz_args: tuple[int, ...] | None = None,
             flush: bool = True) -> Callable[..., np.ndarray]:
    """Wrap an f64 numpy function into XLA CPU's semantics for every float dtype (see module doc).

    Args:
        fn: computes the exact or once-rounded f64 result from f64 operands.
        daz_args: which operand positions DAZ applies to (default: all).
        flush: apply FTZ to the result.
    """
    def run(*args: np.ndarray) -> np.ndarray:
        dt = args[0].dtype
        prec = op_precision(dt)
        xs = []
        for i, a in enumerate(args):
            a = a.astype(prec, copy=False) if dt != prec else a
            if daz_args is None or i in daz_args:
                a = daz(a, prec)
            xs.append(a.astype(_F64, copy=False))
        with np.errstate(all="ignore"):
            r = fn(*xs)
            if flush:
                r = ftz(r, prec)
            r = r.astype(prec) if prec != _F64 else r
            return r.astype(dt) if dt != prec else r
    return run
