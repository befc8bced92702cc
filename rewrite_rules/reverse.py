"""Reverse rules: reverse of reverse (same and different dimension sets), empty dimension set,
size-1 dimensions, and reverse through elementwise operators, splats, iota and slices.

``reverse(x, dims)`` maps index i to n-1-i along each listed dimension. Reverse is data movement:
the rules hold for every dtype the operators involved accept.
"""

from __future__ import annotations

from .dsl import ALL, NUM, broadcast, convert, iota, op, reverse, rule, select, slice_, vsub

FAM = "reverse"


@rule("reverse(reverse(x)) => x", family=FAM, dtypes=ALL)
def _rr(c):
    """Reversing every dimension twice is the identity."""
    x = c.tensor("x")
    d = tuple(range(c.rank))
    return reverse(reverse(x, d), d), x, []


@rule("reverse(reverse(x, (0,)), (0,)) => x", family=FAM, dtypes=ALL)
def _rr0(c):
    """Reversing dimension 0 twice is the identity."""
    x = c.tensor("x")
    return reverse(reverse(x, (0,)), (0,)), x, []


@rule("reverse(reverse(x, (0,)), (1,)) => reverse(x, (0,1))", family=FAM, dtypes=ALL, ranks=(2, 3))
def _rr_merge(c):
    """Reverses of different dimensions combine into one reverse of both."""
    x = c.tensor("x")
    return reverse(reverse(x, (0,)), (1,)), reverse(x, (0, 1)), []


@rule("reverse(reverse(x, (0,1)), (1,2)) => reverse(x, (0,2))", family=FAM, dtypes=ALL, ranks=(3,))
def _rr_xor(c):
    """Two reverses combine into the reverse of the symmetric difference of their dimension sets."""
    x = c.tensor("x")
    return reverse(reverse(x, (0, 1)), (1, 2)), reverse(x, (0, 2)), []


@rule("reverse(x, ()) => x", family=FAM, dtypes=ALL)
def _r_empty(c):
    """A reverse of no dimensions is the operand."""
    x = c.tensor("x")
    return reverse(x, ()), x, []


@rule("reverse(x) over size-1 dims => x", family=FAM, dtypes=ALL)
def _r_unit(c):
    """Reversing dimensions of size 0 or 1 does nothing."""
    x = c.tensor("x")
    return reverse(x, tuple(range(c.rank))), x, [n <= 1 for n in x.shape]


@rule("reverse(add(x, y)) => add(reverse(x), reverse(y))", family=FAM, dtypes=ALL)
def _r_binary(c):
    """A reverse commutes with an elementwise binary operator (add; OR on pred)."""
    x, y = c.tensor("x"), c.tensor("y")
    d = tuple(range(c.rank))
    return reverse(op("add", x, y), d), op("add", reverse(x, d), reverse(y, d)), []


@rule("reverse(negate(x)) => negate(reverse(x))", family=FAM, dtypes=NUM)
def _r_negate(c):
    """A reverse commutes with an elementwise unary operator (negate)."""
    x = c.tensor("x")
    return reverse(op("negate", x), (0,)), op("negate", reverse(x, (0,))), []


@rule("reverse(convert(x)) => convert(reverse(x))", family=FAM, dtypes=ALL)
def _r_convert(c):
    """A reverse commutes with convert (here to u16)."""
    x = c.tensor("x")
    d = tuple(range(c.rank))
    return reverse(convert(x, "u16"), d), convert(reverse(x, d), "u16"), []


@rule("reverse(select(p, a, b)) => select(reverse(p), reverse(a), reverse(b))", family=FAM, dtypes=ALL)
def _r_select(c):
    """A reverse commutes with select."""
    p, a, b = c.tensor("p", dtype="pred"), c.tensor("a"), c.tensor("b")
    d = (0,)
    return reverse(select(p, a, b), d), select(reverse(p, d), reverse(a, d), reverse(b, d)), []


@rule("reverse(broadcast(v)) => broadcast(v)", family=FAM, dtypes=ALL)
def _r_splat(c):
    """A splat is invariant under reversal."""
    v = c.tensor("v", rank=0)
    m = c.ints("m")
    return reverse(broadcast(v, m, ()), tuple(range(c.rank))), broadcast(v, m, ()), [n >= 0 for n in m]


@rule("reverse(broadcast(x, [m]+shape(x)), (0,)) => broadcast(x)", family=FAM, dtypes=ALL)
def _r_broadcast_new_dim(c):
    """Reversing a dimension that a broadcast added (replicated) does nothing."""
    x = c.tensor("x", rank=c.rank - 1)
    (m,) = c.ints("m", 1)
    b = broadcast(x, [m] + x.shape, range(1, c.rank))
    return reverse(b, (0,)), b, [m >= 0]


@rule("reverse(iota(0), other dims) => iota(0)", family=FAM, dtypes=NUM, ranks=(2, 3))
def _r_iota(c):
    """Reversing an iota along dimensions other than its counting dimension does nothing."""
    m = c.ints("m")
    t = iota(0, m)
    return reverse(t, tuple(range(1, c.rank))), t, [n >= 0 for n in m]


@rule("reverse(slice(x)) => slice(reverse(x), mirrored)", family=FAM, dtypes=ALL)
def _r_slice(c):
    """Reversing a slice is slicing the reversed operand over the mirrored range."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    d = tuple(range(c.rank))
    return reverse(slice_(x, s, e), d), slice_(reverse(x, d), vsub(x.shape, e), vsub(x.shape, s)), []
