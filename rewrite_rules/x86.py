"""Rules that let x86 AVX-512 lane instructions compute XLA's float -> u8 saturation and ReLU.

The right sides are written exactly as :mod:`compilers.targets.amx` states the instruction
semantics (Intel SDM pseudocode, ../shared/reference/amx.md), so a left side matched in a kernel
can be computed by the instructions:

* ``maxps(a, b)`` (VMAXPS) = ``select(compare(a, b, GT), maximum(a, a), maximum(b, b))``: the
  operands read with DAZ, ``a > b ? a : b``, so a NaN in either operand, or two zeros of any
  signs, give ``b`` (its bits, DAZ'd). ``maximum(v, v)`` is exactly DAZ(v) with a NaN kept as is.
* ``minps(a, b)`` (VMINPS): the same with ``LT`` and ``minimum(v, v)``.
* ``cvttps2dq(x)`` (VCVTTPS2DQ): f32 -> s32 truncating; NaN and values outside [-2^31, 2^31) give
  the integer indefinite ``0x80000000``.
* ``pmovusdb(v)`` (VPMOVUSDB): u32 lanes -> u8 with unsigned saturation.
* ``pandd(a, m)`` (VPANDD with a constant register): the lanes' bits and a mask.

What is and is not true:

* XLA's ``convert_u8(clamp(0, x, 255))`` (truncation, NaN -> 0) equals
  ``pmovusdb(cvttps2dq(minps(maxps(x, 0), 255)))`` for every f32 ``x``: ``maxps(x, 0)`` turns a
  NaN into +0 (the NaN is operand a), then the value is in [0, 255]. With the operands of maxps
  swapped the NaN survives, cvttps2dq makes it 0x80000000 and pmovusdb saturates that to 255:
  wrong (tests/rewrite_rules/test_wrong_rules.py).
* ``maximum(0, y)`` is NOT ``maxps(0, y)``: for y = -0.0 (or a negative subnormal) XLA gives +0.0
  and VMAXPS -0.0, and XLA's result for a NaN y has the sign bit clear while VMAXPS returns y as
  is. Clearing the sign bit afterwards (``pandd(., 0x7fffffff)``) makes the two equal bit for bit,
  NaN payloads included (XLA keeps a NaN y's payload, unquieted). oneDNN's ReLU is the bare VMAXPS;
  the extra VPANDD is the price of exactness. (The bare VMAXPS is right in the context
  ``convert_u8(clamp(0, relu(y) * d, 255))``, where -0.0 and any NaN end as 0, but that statement
  needs z3 to compare two f32 multipliers and it times out after 600 s.)
"""

from __future__ import annotations

from .dsl import bitcast, clamp, compare, convert, full, op, rule, select

F = "x86"
ELEM = (1,)

__all__ = ["maxps", "minps", "cvttps2dq", "pmovusdb", "pandd"]


def maxps(a, b):
    """VMAXPS: ``a > b ? a : b`` on DAZ operands; NaN or two zeros give b."""
    return select(compare(a, b, "GT"), op("maximum", a, a), op("maximum", b, b))


def minps(a, b):
    """VMINPS: ``a < b ? a : b`` on DAZ operands; NaN or two zeros give b."""
    return select(compare(a, b, "LT"), op("minimum", a, a), op("minimum", b, b))


def cvttps2dq(x, sh):
    """VCVTTPS2DQ: truncate f32 to s32; NaN and out-of-range values give 0x80000000."""
    ok = op("and", compare(x, full(-2147483648.0, sh, "f32"), "GE"), compare(x, full(2147483648.0, sh, "f32"), "LT"))
    return select(ok, convert(x, "s32"), full(-2147483648, sh, "s32"))


def pmovusdb(v, sh):
    """VPMOVUSDB: the s32 lanes read as u32, saturated to u8."""
    return convert(op("minimum", bitcast(v, "u32"), full(255, sh, "u32")), "u8")


def pandd(a, mask: int, sh):
    """VPANDD with a constant mask: the f32 lanes' bits and ``mask``."""
    return bitcast(op("and", bitcast(a, "u32"), full(mask, sh, "u32")), "f32")


def _sat_u8(x, sh):
    """XLA's f32 -> u8 saturation of the kernels: clamp to [0, 255], then convert (truncation)."""
    return convert(clamp(full(0.0, sh, "f32"), x, full(255.0, sh, "f32")), "u8")


@rule("convert_u8(clamp(0, x, 255)) => pmovusdb(cvttps2dq(minps(maxps(x, 0), 255)))", family=F,
      dtypes=("f32",), ranks=ELEM)
def _sat_u8_x86(c):
    """f32 -> u8 saturation as VMAXPS, VMINPS, VCVTTPS2DQ, VPMOVUSDB (NaN -> 0 by the VMAXPS)."""
    x = c.tensor("x")
    sh = x.shape
    lanes = minps(maxps(x, full(0.0, sh, "f32")), full(255.0, sh, "f32"))
    return _sat_u8(x, sh), pmovusdb(cvttps2dq(lanes, sh), sh), []


@rule("maximum(0, y) => pandd(maxps(0, y), 0x7fffffff)", family=F, dtypes=("f32",), ranks=ELEM)
def _relu_x86(c):
    """XLA's ReLU exactly: VMAXPS against +0.0 gives y, +0.0, a zero of y's sign or y's NaN;
    clearing the sign bits (VPANDD) turns -0.0 into +0.0 and gives the NaN XLA's maximum gives."""
    y = c.tensor("y")
    zero = full(0.0, y.shape, "f32")
    return op("maximum", zero, y), pandd(maxps(zero, y), 0x7FFFFFFF, y.shape), []
