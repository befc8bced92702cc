"""More slice rules: strided slices (concrete strides), slices of broadcast, iota, elementwise
operators (unary, binary, select, convert), of either operand of a concatenation, and
per-dimension decompositions of a multi-dimensional slice.

Complements :mod:`rewrite_rules.slice` (unit-stride slice of slice, full slice, ...). Slicing is
pure data movement, so every rule here that moves a slice through an elementwise operator holds for
every dtype the operator accepts (the operator is applied pointwise to the same elements on both
sides, whatever its numerics: DAZ/FTZ, wraparound). Strides are concrete Python ints (the IR's
slice stride is a static attribute); starts and limits are symbolic.
"""

from __future__ import annotations

import z3

from .dsl import ALL, NUM, broadcast, compare, concat, convert, iota, op, reverse, rule, select, slice_, vadd, vsub

FAM = "slice2"


def _ceil_div(a, k: int):
    """ceil(a / k) for a >= 0 and a concrete k >= 1 (z3 integer division floors)."""
    return a if k == 1 else (a + k - 1) / k


# ---------------------------------------------------------------------------------------------
# strided slices
# ---------------------------------------------------------------------------------------------

def _stride_compose(a: int, b: int) -> None:
    name = f"slice(slice(x, [s1:e1:{a}]), [s2:e2:{b}]) => slice(x, [s1+{a}*s2 : last+1 : {a * b}])"

    @rule(name, family=FAM, dtypes=ALL,
          desc=f"A stride-{b} slice of a stride-{a} slice is one stride-{a * b} slice (limit tightened to the "
               f"last element taken; an empty result becomes [0:0]).")
    def _r(c):
        """A strided slice of a strided slice is one strided slice (strides multiply)."""
        x = c.tensor("x")
        s1, e1, s2, e2 = c.ints("s1"), c.ints("e1"), c.ints("s2"), c.ints("e2")
        start, limit = [], []
        for k in range(c.rank):
            m = _ceil_div(e2[k] - s2[k], b)           # elements the outer slice takes
            first = s1[k] + a * s2[k]
            start.append(z3.If(m > 0, first, 0))
            limit.append(z3.If(m > 0, first + a * b * (m - 1) + 1, 0))
        r = c.rank
        return slice_(slice_(x, s1, e1, [a] * r), s2, e2, [b] * r), slice_(x, start, limit, [a * b] * r), []


for _a, _b in ((2, 2), (2, 3), (3, 2), (1, 2), (2, 1)):
    _stride_compose(_a, _b)


@rule("slice(x, [s:e:3]) => slice(x, [s:last+1:3])", family=FAM, dtypes=ALL)
def _strided_tighten(c):
    """A strided slice's limit can be tightened to one past the last element it takes."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    lim = [z3.If(e[k] > s[k], s[k] + 3 * (_ceil_div(e[k] - s[k], 3) - 1) + 1, s[k]) for k in range(c.rank)]
    return slice_(x, s, e, [3] * c.rank), slice_(x, s, lim, [3] * c.rank), []


@rule("slice(x, [s:e:4]) with e-s <= 4 => slice(x, [s:min(e, s+1)])", family=FAM, dtypes=ALL)
def _strided_single(c):
    """A strided slice whose range is no longer than its stride takes at most one element: a unit slice."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    pre = [e[k] - s[k] <= 4 for k in range(c.rank)]
    lim = [z3.If(e[k] > s[k], s[k] + 1, s[k]) for k in range(c.rank)]
    return slice_(x, s, e, [4] * c.rank), slice_(x, s, lim), pre


@rule("slice(x, [0:n:1]) stride 1 on full range, [s:e:2] => slice(x, [s:e:2])", family=FAM, dtypes=ALL,
      desc="A stride-2 slice of a full unit-stride slice is the stride-2 slice of the operand.")
def _strided_of_full(c):
    """A stride-2 slice of a full unit-stride slice is the stride-2 slice of the operand."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    r = c.rank
    return slice_(slice_(x, [0] * r, x.shape), s, e, [2] * r), slice_(x, s, e, [2] * r), []


@rule("slice(add(x, y), [s:e:2]) => add(slice(x, [s:e:2]), slice(y, [s:e:2]))", family=FAM, dtypes=ALL)
def _strided_binary(c):
    """A strided slice commutes with an elementwise binary operator (add; OR on pred)."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    st = [2] * c.rank
    return slice_(op("add", x, y), s, e, st), op("add", slice_(x, s, e, st), slice_(y, s, e, st)), []


# ---------------------------------------------------------------------------------------------
# slices through elementwise operators
# ---------------------------------------------------------------------------------------------

@rule("slice(convert(x)) => convert(slice(x))", family=FAM, dtypes=ALL)
def _slice_convert(c):
    """A slice commutes with convert (here to f32; convert is pointwise for every source type)."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    return slice_(convert(x, "f32"), s, e), convert(slice_(x, s, e), "f32"), []


@rule("slice(convert(x, pred)) => convert(slice(x), pred)", family=FAM, dtypes=ALL)
def _slice_convert_pred(c):
    """A slice commutes with convert to pred (x != 0, DAZ for floats, pointwise)."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    return slice_(convert(x, "pred"), s, e), convert(slice_(x, s, e), "pred"), []


@rule("slice(negate(x)) => negate(slice(x))", family=FAM, dtypes=NUM)
def _slice_negate(c):
    """A slice commutes with negate (integers and floats; negate is not defined on pred)."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    return slice_(op("negate", x), s, e), op("negate", slice_(x, s, e)), []


@rule("slice(select(p, a, b)) => select(slice(p), slice(a), slice(b))", family=FAM, dtypes=ALL)
def _slice_select(c):
    """A slice commutes with select over a predicate tensor of the same shape."""
    p, a, b = c.tensor("p", dtype="pred"), c.tensor("a"), c.tensor("b")
    s, e = c.ints("s"), c.ints("e")
    return (slice_(select(p, a, b), s, e),
            select(slice_(p, s, e), slice_(a, s, e), slice_(b, s, e)), [])


@rule("slice(compare(x, y, LT)) => compare(slice(x), slice(y), LT)", family=FAM, dtypes=ALL)
def _slice_compare(c):
    """A slice commutes with compare (result pred)."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    return slice_(compare(x, y, "LT"), s, e), compare(slice_(x, s, e), slice_(y, s, e), "LT"), []


# ---------------------------------------------------------------------------------------------
# slices of broadcast and iota
# ---------------------------------------------------------------------------------------------

@rule("slice(broadcast(x, [m]+shape(x))) => broadcast(slice(x), [e0-s0]+...)", family=FAM, dtypes=ALL)
def _slice_broadcast(c):
    """A slice of a broadcast that prepends a dimension is the broadcast of the operand's slice
    (operand dimensions equal to the output's: no size-1 stretching)."""
    r = c.rank
    x = c.tensor("x", rank=r - 1)
    (m,) = c.ints("m", 1)
    s, e = c.ints("s"), c.ints("e")
    out = [m] + x.shape
    lhs = slice_(broadcast(x, out, range(1, r)), s, e)
    rhs = broadcast(slice_(x, s[1:], e[1:]), vsub(e, s), range(1, r))
    return lhs, rhs, [m >= 0]


@rule("slice(broadcast(x, stretch size-1 dims)) => broadcast(x, e-s)", family=FAM, dtypes=ALL)
def _slice_broadcast_stretch(c):
    """A slice of a broadcast whose operand has only size-1 dimensions is a broadcast of the operand to the slice's shape."""
    x = c.tensor("x")
    m = c.ints("m")
    s, e = c.ints("s"), c.ints("e")
    pre = [n == 1 for n in x.shape] + [k >= 0 for k in m]
    return (slice_(broadcast(x, m, range(c.rank)), s, e),
            broadcast(x, vsub(e, s), range(c.rank)), pre)


@rule("slice(iota(0), [0:e0, s1:e1, ...]) => iota(0, e-s)", family=FAM, dtypes=NUM)
def _slice_iota_prefix(c):
    """A slice of an iota that starts at 0 along the iota dimension is a smaller iota (any other starts)."""
    m = c.ints("m")
    s, e = c.ints("s"), c.ints("e")
    return slice_(iota(0, m), s, e), iota(0, vsub(e, s)), [s[0] == 0] + [k >= 0 for k in m]


# ---------------------------------------------------------------------------------------------
# slices of concatenations
# ---------------------------------------------------------------------------------------------

@rule("slice(concat(x, y), [n:n+m]) => y", family=FAM, dtypes=ALL)
def _slice_concat_second(c):
    """Slicing exactly the second operand back out of a concatenation along dimension 0."""
    x, y = c.tensor("x"), c.tensor("y")
    start = [x.shape[0]] + [0] * (c.rank - 1)
    limit = [x.shape[0] + y.shape[0]] + y.shape[1:]
    return slice_(concat(0, x, y), start, limit), y, []


@rule("slice(concat(x, y)) inside x => slice(x)", family=FAM, dtypes=ALL)
def _slice_concat_in_first(c):
    """A slice of a concatenation (dimension 0) that stays inside the first operand is a slice of it."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    return slice_(concat(0, x, y), s, e), slice_(x, s, e), [e[0] <= x.shape[0]]


@rule("slice(concat(x, y)) inside y => slice(y)", family=FAM, dtypes=ALL)
def _slice_concat_in_second(c):
    """A slice of a concatenation (dimension 0) that stays inside the second operand is a shifted slice of it."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    off = [x.shape[0]] + [0] * (c.rank - 1)
    return slice_(concat(0, x, y), s, e), slice_(y, vsub(s, off), vsub(e, off)), [s[0] >= x.shape[0]]


@rule("slice(concat(x, y)) across the seam => concat(slice(x), slice(y))", family=FAM, dtypes=ALL)
def _slice_concat_straddle(c):
    """A slice of a concatenation (dimension 0) that spans the seam is the concatenation of the two pieces."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    n = x.shape[0]
    rhs = concat(0, slice_(x, s, [n] + e[1:]), slice_(y, [0] + s[1:], [e[0] - n] + e[1:]))
    return slice_(concat(0, x, y), s, e), rhs, [s[0] <= n, n <= e[0]]


@rule("slice(concat(x, y)) along the last dim, full in dim 0 => concat(slice(x), slice(y))", family=FAM,
      dtypes=ALL, ranks=(2, 3))
def _slice_concat_other_dim(c):
    """A slice over dimensions other than the concatenation's (dimension 0 kept whole) distributes over the operands."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    sx, ex = [0] + s[1:], [x.shape[0]] + e[1:]
    sy, ey = [0] + s[1:], [y.shape[0]] + e[1:]
    lhs = slice_(concat(0, x, y), sx, [x.shape[0] + y.shape[0]] + e[1:])
    return lhs, concat(0, slice_(x, sx, ex), slice_(y, sy, ey)), []


@rule("slice(concat_last(x, y)) inside x => slice(x)", family=FAM, dtypes=ALL, ranks=(2, 3))
def _slice_concat_last_in_first(c):
    """A slice of a concatenation along the last dimension that stays inside the first operand is a slice of it."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    d = c.rank - 1
    return slice_(concat(d, x, y), s, e), slice_(x, s, e), [e[d] <= x.shape[d]]


# ---------------------------------------------------------------------------------------------
# decompositions
# ---------------------------------------------------------------------------------------------

@rule("slice(x, s, e) => slice(slice(x, [s0:e0] only), [s1:e1, ...] only)", family=FAM, dtypes=ALL, ranks=(2, 3))
def _slice_split_dims(c):
    """A multi-dimensional slice is a slice of dimension 0 (others whole) followed by a slice of the
    remaining dimensions (dimension 0 whole): one instruction per dimension."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    first = slice_(x, [s[0]] + [0] * (c.rank - 1), [e[0]] + x.shape[1:])
    rest = slice_(first, [0] + s[1:], [e[0] - s[0]] + e[1:])
    return slice_(x, s, e), rest, []


@rule("slice(reverse(x, all dims)) => reverse(slice(x, mirrored))", family=FAM, dtypes=ALL)
def _slice_reverse_all(c):
    """A slice of a tensor reversed in every dimension is the reverse of the mirrored slice."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    dims = tuple(range(c.rank))
    return (slice_(reverse(x, dims), s, e),
            reverse(slice_(x, vsub(x.shape, e), vsub(x.shape, s)), dims), [])


@rule("slice(x, [s+k:e+k]) => slice(slice(x, [k:n]), [s:e])", family=FAM, dtypes=ALL)
def _slice_offset_split(c):
    """A slice at an offset is a slice of the suffix that starts at the offset (the tiling form of slice of slice)."""
    x = c.tensor("x")
    s, e, k = c.ints("s"), c.ints("e"), c.ints("k")
    pre = [v >= 0 for v in k] + [a >= 0 for a in s]
    return slice_(x, vadd(s, k), vadd(e, k)), slice_(slice_(x, k, x.shape), s, e), pre
