"""Pad rules: trivial pads, pad of pad, negative pads as slices, slices of pads, pads of
concatenations and splats, per-dimension decomposition, interior padding.

``pad(x, v, lo, hi, interior)`` is XLA's pad: edge amounts may be negative (they crop), interior
amounts are >= 0. Pad is data movement, so these rules hold for every dtype (pred included); the
rules that move an elementwise operator through a pad apply it to the pad value as well.
"""

from __future__ import annotations

import z3

from .dsl import ALL, INTS, NUM, broadcast, concat, convert, op, pad, reverse, rule, slice_, transpose, vadd, vsub

FAM = "pad"


def _pos(v):
    return z3.If(v > 0, v, 0)


@rule("pad(x, v, 0, 0) => x", family=FAM, dtypes=ALL)
def _pad_zero(c):
    """A pad with zero low, high and interior amounts is the operand."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    z = [0] * c.rank
    return pad(x, v, z, z, z), x, []


@rule("pad(pad(x, v, lo1, hi1), v, lo2, hi2) => pad(x, v, lo1+lo2, hi1+hi2)", family=FAM, dtypes=ALL)
def _pad_pad(c):
    """Two edge pads with the same value are one pad; the inner amounts must be non-negative (the
    outer may crop), else the outer pad would re-pad cropped data with v."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo1, hi1, lo2, hi2 = c.ints("lo1"), c.ints("hi1"), c.ints("lo2"), c.ints("hi2")
    pre = [a >= 0 for a in lo1 + hi1]
    return pad(pad(x, v, lo1, hi1), v, lo2, hi2), pad(x, v, vadd(lo1, lo2), vadd(hi1, hi2)), pre


@rule("pad(x, v, -a, -b) => slice(x, a, n-b)", family=FAM, dtypes=ALL)
def _pad_negative(c):
    """A pad with non-positive edge amounts (no interior) is a slice."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    a, b = c.ints("a"), c.ints("b")
    pre = [k >= 0 for k in a + b]
    return pad(x, v, [-k for k in a], [-k for k in b]), slice_(x, a, vsub(x.shape, b)), pre


@rule("pad(x, v, lo, hi) => pad(slice(x, crop), v, max(lo,0), max(hi,0))", family=FAM, dtypes=ALL)
def _pad_split_sign(c):
    """A pad with mixed-sign edge amounts is a slice (the negative amounts) followed by a
    non-negative pad, when the two crops do not overlap."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    start = [_pos(-k) for k in lo]
    limit = [n - _pos(-k) for n, k in zip(x.shape, hi, strict=False)]
    pre = [s <= e for s, e in zip(start, limit, strict=False)]
    return pad(x, v, lo, hi), pad(slice_(x, start, limit), v, [_pos(k) for k in lo], [_pos(k) for k in hi]), pre


@rule("slice(pad(x, v, lo, hi), lo, lo+n) => x", family=FAM, dtypes=ALL)
def _slice_pad_back(c):
    """Slicing the original data back out of a non-negative edge pad gives the operand."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    pre = [k >= 0 for k in lo + hi]
    return slice_(pad(x, v, lo, hi), lo, vadd(lo, x.shape)), x, pre


@rule("slice(pad(x, v, lo, hi)) inside the low padding of dim 0 => broadcast(v)", family=FAM, dtypes=ALL)
def _slice_pad_in_low(c):
    """A slice that lies in the low padding of dimension 0 is a splat of the pad value."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi, s, e = c.ints("lo"), c.ints("hi"), c.ints("s"), c.ints("e")
    pre = [k >= 0 for k in lo + hi] + [e[0] <= lo[0]]
    return slice_(pad(x, v, lo, hi), s, e), broadcast(v, vsub(e, s), ()), pre


@rule("slice(pad(x, v, lo, hi)) inside the high padding of dim 0 => broadcast(v)", family=FAM, dtypes=ALL)
def _slice_pad_in_high(c):
    """A slice that lies in the high padding of dimension 0 is a splat of the pad value."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi, s, e = c.ints("lo"), c.ints("hi"), c.ints("s"), c.ints("e")
    pre = [k >= 0 for k in lo + hi] + [s[0] >= lo[0] + x.shape[0]]
    return slice_(pad(x, v, lo, hi), s, e), broadcast(v, vsub(e, s), ()), pre


@rule("pad(concat(x, y), v, lo, hi) => concat(pad(x, v, lo, 0), pad(y, v, 0, hi)) along dim 0", family=FAM,
      dtypes=ALL)
def _pad_concat(c):
    """A pad of a concatenation (dimension 0) pads the first operand low and the second high in that
    dimension, both in the other dimensions (a crop of dimension 0 may not exceed the operand it hits)."""
    x, y, v = c.tensor("x"), c.tensor("y"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    pre = [lo[0] >= -x.shape[0], hi[0] >= -y.shape[0]]
    lhs = pad(concat(0, x, y), v, lo, hi)
    rhs = concat(0, pad(x, v, lo, [0] + hi[1:]), pad(y, v, [0] + lo[1:], hi))
    return lhs, rhs, pre


@rule("pad(x, v, 0, 0, interior) with size-1 dims => x", family=FAM, dtypes=ALL)
def _pad_interior_unit(c):
    """Interior padding goes between elements, so it does nothing to dimensions of size 0 or 1."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    it = c.ints("it")
    pre = [n <= 1 for n in x.shape] + [k >= 0 for k in it]
    z = [0] * c.rank
    return pad(x, v, z, z, it), x, pre


@rule("slice(pad(x, v, 0, 0, 1), [0:size:2]) => x", family=FAM, dtypes=ALL)
def _slice_undo_interior(c):
    """A stride-2 slice removes interior padding of 1 (every other element is original data)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    z = [0] * c.rank
    size = [n + z3.If(n > 0, n - 1, 0) for n in x.shape]
    return slice_(pad(x, v, z, z, [1] * c.rank), z, size, [2] * c.rank), x, []


@rule("pad(broadcast(v), v, lo, hi) => broadcast(v)", family=FAM, dtypes=ALL)
def _pad_splat(c):
    """Padding a splat of v with v (any edge amounts) is a larger splat of v."""
    v = c.tensor("v", rank=0)
    m, lo, hi = c.ints("m"), c.ints("lo"), c.ints("hi")
    out = [n + a + b for n, a, b in zip(m, lo, hi, strict=False)]
    pre = [n >= 0 for n in m]
    return pad(broadcast(v, m, ()), v, lo, hi), broadcast(v, out, ()), pre


@rule("pad(x, v, [lo,0..], [hi,0..]) => concat(broadcast(v), x, broadcast(v))", family=FAM, dtypes=ALL)
def _pad_as_concat(c):
    """A non-negative edge pad of dimension 0 is a concatenation of splats around the operand."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    (lo,), (hi,) = c.ints("lo", 1), c.ints("hi", 1)
    z = [0] * (c.rank - 1)
    rhs = concat(0, broadcast(v, [lo] + x.shape[1:], ()), x, broadcast(v, [hi] + x.shape[1:], ()))
    return pad(x, v, [lo] + z, [hi] + z), rhs, [lo >= 0, hi >= 0]


@rule("pad(x, v, lo, hi) => pad(pad(x, v, dim 0), v, other dims)", family=FAM, dtypes=ALL, ranks=(2, 3))
def _pad_split_dims(c):
    """An edge pad is a pad of dimension 0 followed by a pad of the other dimensions (any signs:
    the dimensions are independent)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    z = [0] * (c.rank - 1)
    inner = pad(x, v, [lo[0]] + z, [hi[0]] + z)
    return pad(x, v, lo, hi), pad(inner, v, [0] + lo[1:], [0] + hi[1:]), []


@rule("pad(reverse(x), v, lo, hi) => reverse(pad(x, v, hi, lo))", family=FAM, dtypes=ALL)
def _pad_reverse(c):
    """Padding a tensor reversed in every dimension is reversing the pad with low and high swapped."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    dims = tuple(range(c.rank))
    return pad(reverse(x, dims), v, lo, hi), reverse(pad(x, v, hi, lo), dims), []


@rule("pad(reverse(x), v, lo, hi, 1) => reverse(pad(x, v, hi, lo, 1))", family=FAM, dtypes=ALL, ranks=(1, 2),
      note="interior padding is a concrete 1: a symbolic interior amount makes the index arithmetic "
           "nonlinear and z3 times out; rank 3 omitted for the same reason (slow)")
def _pad_reverse_interior(c):
    """Reversal commutes with interior padding (of 1) too, the edge amounts swapping."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    dims = tuple(range(c.rank))
    one = [1] * c.rank
    return pad(reverse(x, dims), v, lo, hi, one), reverse(pad(x, v, hi, lo, one), dims), []


@rule("pad(transpose(x), v, lo, hi) => transpose(pad(x, v, swapped))", family=FAM, dtypes=ALL, ranks=(2,))
def _pad_transpose(c):
    """Padding a 2-D transpose (interior 1, 2) is transposing the pad with the amounts of the two dimensions swapped."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    it = [1, 2]
    return (pad(transpose(x, (1, 0)), v, lo, hi, it),
            transpose(pad(x, v, lo[::-1], hi[::-1], it[::-1]), (1, 0)), [])


@rule("negate(pad(x, v)) => pad(negate(x), negate(v))", family=FAM, dtypes=NUM)
def _negate_pad(c):
    """A unary elementwise operator (negate) applied to a pad is the pad of the results, with the pad value mapped too."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    return op("negate", pad(x, v, lo, hi)), pad(op("negate", x), op("negate", v), lo, hi), []


@rule("convert(pad(x, v)) => pad(convert(x), convert(v))", family=FAM, dtypes=ALL)
def _convert_pad(c):
    """convert (here to f32) of a pad is the pad of the converted operand with the converted pad value."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    return convert(pad(x, v, lo, hi), "f32"), pad(convert(x, "f32"), convert(v, "f32"), lo, hi), []


@rule("add(pad(x, v), pad(y, w)) => pad(add(x, y), add(v, w))", family=FAM, dtypes=("pred",) + INTS,
      note="also true for floats (pointwise), but claimed for pred and integers only: z3 times out "
           "bit-blasting an FP add of if-then-else operands (> 30 s per instance)")
def _add_pad(c):
    """An elementwise binary operator (add) of two identically padded tensors is the pad of the results."""
    x, y = c.tensor("x"), c.tensor("y")
    v, w = c.tensor("v", rank=0), c.tensor("w", rank=0)
    lo, hi = c.ints("lo"), c.ints("hi")
    return op("add", pad(x, v, lo, hi), pad(y, w, lo, hi)), pad(op("add", x, y), op("add", v, w), lo, hi), []
