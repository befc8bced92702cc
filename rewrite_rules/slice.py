"""Slice rules (XLA algebraic simplifier's slice family, TensorRight rules/xla/slice)."""

from __future__ import annotations

from .dsl import ALL, concat, op, pad, reverse, rule, slice_, transpose, vadd, vsub


@rule("slice(slice(x)) => slice(x)", family="slice", dtypes=ALL)
def _slice_slice(c):
    """Two nested unit-stride slices are one slice with added offsets."""
    x = c.tensor("x")
    s1, e1, s2, e2 = c.ints("s1"), c.ints("e1"), c.ints("s2"), c.ints("e2")
    return slice_(slice_(x, s1, e1), s2, e2), slice_(x, vadd(s1, s2), vadd(s1, e2)), []


@rule("slice(x, 0, shape(x)) => x", family="slice", dtypes=ALL)
def _slice_full(c):
    """A slice covering the whole operand is the operand."""
    x = c.tensor("x")
    return slice_(x, [0] * c.rank, x.shape), x, []


@rule("slice(elementwise(x, y)) => elementwise(slice(x), slice(y))", family="slice", dtypes=("s32", "f32", "bf16", "u8"))
def _slice_binary(c):
    """Slicing commutes with an elementwise binary operator (here add)."""
    x, y = c.tensor("x"), c.tensor("y")
    s, e = c.ints("s"), c.ints("e")
    return slice_(op("add", x, y), s, e), op("add", slice_(x, s, e), slice_(y, s, e)), []


@rule("slice(concat(x, y), [0:n]) => x", family="slice", dtypes=ALL)
def _slice_concat_first(c):
    """Slicing exactly the first operand back out of a concatenation along dimension 0."""
    x, y = c.tensor("x"), c.tensor("y")
    return slice_(concat(0, x, y), [0] * c.rank, x.shape), x, []


@rule("slice(transpose(x)) => transpose(slice(x))", family="slice", dtypes=ALL, ranks=(2,))
def _slice_transpose(c):
    """A slice of a 2-D transpose is the transpose of the swapped slice."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    return slice_(transpose(x, (1, 0)), s, e), transpose(slice_(x, s[::-1], e[::-1]), (1, 0)), []


@rule("slice(reverse(x)) => reverse(slice(x))", family="slice", dtypes=ALL, ranks=(1,))
def _slice_reverse(c):
    """A slice of a reversed vector is the reverse of the mirrored slice."""
    x = c.tensor("x")
    (s,), (e,) = c.ints("s"), c.ints("e")
    n = x.shape[0]
    return slice_(reverse(x, (0,)), [s], [e]), reverse(slice_(x, [n - e], [n - s]), (0,)), []


@rule("slice(pad(x, v)) inside x => slice(x)", family="slice", dtypes=ALL)
def _slice_pad_inside(c):
    """A slice of an edge-padded tensor that stays inside the original data skips the pad."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi, s, e = c.ints("lo"), c.ints("hi"), c.ints("s"), c.ints("e")
    pre = [cond for k in range(c.rank) for cond in (lo[k] >= 0, hi[k] >= 0, s[k] >= lo[k], e[k] <= lo[k] + x.shape[k])]
    return slice_(pad(x, v, lo, hi), s, e), slice_(x, vsub(s, lo), vsub(e, lo)), pre

