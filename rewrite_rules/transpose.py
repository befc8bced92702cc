"""Transpose rules: transpose of transpose (every rank-3 permutation with its inverse, and every
rank-3 permutation composed with the rotation (1,2,0)), identity permutations, and transpose
through elementwise operators, broadcast, reverse, slice and iota.

``transpose(x, p)``: output dimension i is operand dimension p[i]. So
``transpose(transpose(x, p), q) = transpose(x, [p[q[i]] for i])``. Transpose is data movement:
the rules hold for every dtype the operators involved accept.
"""

from __future__ import annotations

from itertools import permutations

from .dsl import ALL, NUM, broadcast, convert, iota, op, reverse, rule, slice_, transpose

FAM = "transpose"

PERMS3 = list(permutations(range(3)))


def _inverse(p: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(p)
    for i, v in enumerate(p):
        inv[v] = i
    return tuple(inv)


def _compose(p: tuple[int, ...], q: tuple[int, ...]) -> tuple[int, ...]:
    """The single permutation of transpose(transpose(x, p), q)."""
    return tuple(p[q[i]] for i in range(len(q)))


def _fmt(p: tuple[int, ...]) -> str:
    return "(" + ",".join(map(str, p)) + ")"


def _inverse_rule(p: tuple[int, ...]) -> None:
    q = _inverse(p)

    @rule(f"transpose(transpose(x, {_fmt(p)}), {_fmt(q)}) => x", family=FAM, dtypes=ALL, ranks=(3,),
          desc=f"Transposing by {_fmt(p)} and then by its inverse {_fmt(q)} is the identity.")
    def _r(c):
        """Transposing by a permutation and then by its inverse is the identity."""
        x = c.tensor("x")
        return transpose(transpose(x, p), q), x, []


def _compose_rule(p: tuple[int, ...], q: tuple[int, ...]) -> None:
    pq = _compose(p, q)

    @rule(f"transpose(transpose(x, {_fmt(p)}), {_fmt(q)}) => transpose(x, {_fmt(pq)})", family=FAM, dtypes=ALL,
          ranks=(3,), desc=f"Two transposes, {_fmt(p)} then {_fmt(q)}, are one transpose by {_fmt(pq)}.")
    def _r(c):
        """Two transposes are one transpose by the composed permutation."""
        x = c.tensor("x")
        return transpose(transpose(x, p), q), transpose(x, pq), []


for _p in PERMS3:
    _inverse_rule(_p)
    for _q in ((1, 2, 0), (1, 0, 2)):             # a rotation and a swap after each permutation
        if _compose(_p, _q) != (0, 1, 2):         # else it is the inverse rule above
            _compose_rule(_p, _q)


@rule("transpose(transpose(x, (1,0)), (1,0)) => x", family=FAM, dtypes=ALL, ranks=(2,))
def _tt2(c):
    """Transposing a matrix twice is the identity."""
    x = c.tensor("x")
    return transpose(transpose(x, (1, 0)), (1, 0)), x, []


@rule("transpose(x, identity) => x", family=FAM, dtypes=ALL)
def _identity(c):
    """A transpose by the identity permutation is the operand."""
    x = c.tensor("x")
    return transpose(x, tuple(range(c.rank))), x, []


@rule("transpose(add(x, y)) => add(transpose(x), transpose(y))", family=FAM, dtypes=ALL, ranks=(2, 3))
def _t_binary(c):
    """A transpose (here reversing the dimensions) commutes with an elementwise binary operator."""
    x, y = c.tensor("x"), c.tensor("y")
    p = tuple(reversed(range(c.rank)))
    return transpose(op("add", x, y), p), op("add", transpose(x, p), transpose(y, p)), []


@rule("transpose(negate(x)) => negate(transpose(x))", family=FAM, dtypes=NUM, ranks=(2, 3))
def _t_negate(c):
    """A transpose commutes with an elementwise unary operator (negate)."""
    x = c.tensor("x")
    p = (1, 0) if c.rank == 2 else (2, 0, 1)
    return transpose(op("negate", x), p), op("negate", transpose(x, p)), []


@rule("transpose(convert(x)) => convert(transpose(x))", family=FAM, dtypes=ALL, ranks=(2, 3))
def _t_convert(c):
    """A transpose commutes with convert (here to s32)."""
    x = c.tensor("x")
    p = (1, 0) if c.rank == 2 else (1, 2, 0)
    return transpose(convert(x, "s32"), p), convert(transpose(x, p), "s32"), []


@rule("transpose(broadcast(x, [m,n], (1,)), (1,0)) => broadcast(x, [n,m], (0,))", family=FAM, dtypes=ALL,
      ranks=(2,))
def _t_broadcast_row(c):
    """Transposing a row broadcast of a vector is the column broadcast of the vector."""
    x = c.tensor("x", rank=1)
    (m,) = c.ints("m", 1)
    n = x.shape[0]
    return transpose(broadcast(x, [m, n], (1,)), (1, 0)), broadcast(x, [n, m], (0,)), [m >= 0]


@rule("transpose(broadcast(v)) => broadcast(v, permuted shape)", family=FAM, dtypes=ALL)
def _t_splat(c):
    """A transpose of a splat is a splat of the permuted shape."""
    v = c.tensor("v", rank=0)
    m = c.ints("m")
    p = tuple(reversed(range(c.rank)))
    return transpose(broadcast(v, m, ()), p), broadcast(v, [m[i] for i in p], ()), [n >= 0 for n in m]


@rule("transpose(reverse(x, (0,)), (1,0)) => reverse(transpose(x, (1,0)), (1,))", family=FAM, dtypes=ALL,
      ranks=(2,))
def _t_reverse(c):
    """A reversed dimension moves with the transpose."""
    x = c.tensor("x")
    return transpose(reverse(x, (0,)), (1, 0)), reverse(transpose(x, (1, 0)), (1,)), []


@rule("transpose(slice(x), (2,0,1)) => slice(transpose(x, (2,0,1)), permuted)", family=FAM, dtypes=ALL,
      ranks=(3,))
def _t_slice(c):
    """Transposing a slice is slicing the transpose with the ranges permuted alike."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    p = (2, 0, 1)
    return transpose(slice_(x, s, e), p), slice_(transpose(x, p), [s[i] for i in p], [e[i] for i in p]), []


@rule("transpose(iota(0, [a,b]), (1,0)) => iota(1, [b,a])", family=FAM, dtypes=NUM, ranks=(2,))
def _t_iota(c):
    """Transposing an iota moves its counting dimension."""
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    return transpose(iota(0, [a, b]), (1, 0)), iota(1, [b, a]), [a >= 0, b >= 0]
