"""Iota rules: iota as a broadcast of a 1-D iota, slices of iota (offset slices as iota plus a
constant, strided slices as iota times a constant), degenerate iotas, and conversions of iota.

``iota(d, shape)``: the element at index i is convert(i[d]) to the result type (integers wrap,
floats round). Offsets and strides are concrete (constants are literals). Integer offset rules hold
for every size (wraparound on both sides agrees: i + k mod 2^w); float versions would need the
values to stay exact and are not claimed. Offset slices (slice(iota, [k:]) = iota + k) are true for
integers but not stated: the symbolic proof (int2bv of a symbolic index plus k) times out at every
rank and the bounded fallback hits its instance cap; likewise strided slices (iota * 2), which
proved only for 8-bit types within the time budget.
"""

from __future__ import annotations

from .dsl import INTS, NUM, broadcast, const, convert, iota, rule

FAM = "iota"

INT32_MAX = 2**31 - 1


@rule("iota(0, shape) => broadcast(iota(0, [n0]), shape, (0,))", family=FAM, dtypes=NUM)
def _iota_broadcast0(c):
    """An iota counting along dimension 0 is the broadcast of a 1-D iota along that dimension."""
    m = c.ints("m")
    return iota(0, m), broadcast(iota(0, [m[0]]), m, (0,)), [n >= 0 for n in m]


@rule("iota(last, shape) => broadcast(iota(0, [n_last]), shape, (last,))", family=FAM, dtypes=NUM, ranks=(2, 3))
def _iota_broadcast_last(c):
    """An iota counting along the last dimension is the broadcast of a 1-D iota along it."""
    m = c.ints("m")
    d = c.rank - 1
    return iota(d, m), broadcast(iota(0, [m[d]]), m, (d,)), [n >= 0 for n in m]


@rule("iota(0, shape) with n0 <= 1 => broadcast(0)", family=FAM, dtypes=NUM)
def _iota_degenerate(c):
    """An iota whose counting dimension has size 0 or 1 is all zeros."""
    m = c.ints("m")
    return iota(0, m), broadcast(const(0), m, ()), [n >= 0 for n in m] + [m[0] <= 1]


@rule("convert(iota(0, s32), T) => iota(0, T)", family=FAM, dtypes=INTS,
      note="integers only. f16/f32/f64 are true as well but z3 times out on the int-to-float rounding of a "
           "symbolic index (bounded fallback ~10 s per instantiation); bf16 is true in the reference "
           "semantics but verif.symbolic encodes a bf16 iota with one rounding instead of XLA's two "
           "(through f32): reported as a prover bug")
def _convert_iota(c):
    """Converting an s32 iota (indices below 2^31, so no wraparound) is the iota of the target type."""
    m = c.ints("m")
    pre = [n >= 0 for n in m] + [m[0] <= INT32_MAX]
    return convert(iota(0, m, "s32"), c.dtype.name), iota(0, m), pre
