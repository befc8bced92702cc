"""Broadcast rules: broadcast of broadcast, identity broadcasts, slices and splits of broadcasts,
and elementwise operators through broadcasts.

``broadcast(x, shape, dims)``: operand dimension i becomes output dimension dims[i] (increasing;
a size-1 operand dimension stretches), the other output dimensions replicate. Broadcast is data
movement: the rules hold for every dtype the operators involved accept.
"""

from __future__ import annotations

from .dsl import ALL, NUM, broadcast, concat, convert, op, rule, select, slice_, vsub

FAM = "broadcast"


@rule("broadcast(x, shape(x), identity dims) => x", family=FAM, dtypes=ALL)
def _b_identity(c):
    """A broadcast to the operand's own shape with the identity dimension map is the operand."""
    x = c.tensor("x")
    return broadcast(x, x.shape, range(c.rank)), x, []


@rule("broadcast(broadcast(v, s1), s2) => broadcast(v, s2)", family=FAM, dtypes=ALL)
def _bb_scalar(c):
    """A broadcast of a splat is a splat of the outer shape (inner dimensions kept in order)."""
    v = c.tensor("v", rank=0)
    m = c.ints("m")
    (k,) = c.ints("k", 1)
    inner = broadcast(v, m, ())
    out = [k] + m
    pre = [n >= 0 for n in out]
    return broadcast(inner, out, range(1, c.rank + 1)), broadcast(v, out, ()), pre


@rule("broadcast(broadcast(x, [a]+shape), [b,a]+shape) => broadcast(x, [b,a]+shape)", family=FAM, dtypes=ALL)
def _bb(c):
    """Two broadcasts that each prepend a dimension are one broadcast that prepends both."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    r = c.rank
    inner = broadcast(x, [a] + x.shape, range(1, r + 1))
    out = [b, a] + x.shape
    return broadcast(inner, out, range(1, r + 2)), broadcast(x, out, range(2, r + 2)), [a >= 0, b >= 0]


@rule("broadcast(broadcast(x, [m,n], (1,)), [k,m,n], (1,2)) => broadcast(x, [k,m,n], (2,))", family=FAM,
      dtypes=ALL, ranks=(1,))
def _bb_vector(c):
    """A vector broadcast along rows, then along a new leading dimension, is one broadcast (the
    dimension map is the composition)."""
    x = c.tensor("x")
    (m,), (k,) = c.ints("m", 1), c.ints("k", 1)
    n = x.shape[0]
    return (broadcast(broadcast(x, [m, n], (1,)), [k, m, n], (1, 2)), broadcast(x, [k, m, n], (2,)),
            [m >= 0, k >= 0])


@rule("slice(broadcast(v)) => broadcast(v, e-s)", family=FAM, dtypes=ALL)
def _slice_splat(c):
    """A slice of a splat is a splat of the slice's shape."""
    v = c.tensor("v", rank=0)
    m, s, e = c.ints("m"), c.ints("s"), c.ints("e")
    return slice_(broadcast(v, m, ()), s, e), broadcast(v, vsub(e, s), ()), [n >= 0 for n in m]


@rule("slice(broadcast(v), [s:e:2]) => broadcast(v, ceil((e-s)/2))", family=FAM, dtypes=ALL)
def _slice_splat_strided(c):
    """A strided slice of a splat is a splat of the strided slice's shape."""
    v = c.tensor("v", rank=0)
    m, s, e = c.ints("m"), c.ints("s"), c.ints("e")
    out = [(b - a + 1) / 2 for a, b in zip(s, e, strict=False)]
    return slice_(broadcast(v, m, ()), s, e, [2] * c.rank), broadcast(v, out, ()), [n >= 0 for n in m]


@rule("broadcast(x, [a+b]+shape) => concat(broadcast(x, [a]+shape), broadcast(x, [b]+shape))", family=FAM,
      dtypes=ALL)
def _split_broadcast(c):
    """A broadcast that prepends a dimension splits along it into two broadcasts (tiling a replicated tensor)."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    d = range(1, c.rank + 1)
    lhs = broadcast(x, [a + b] + x.shape, d)
    return lhs, concat(0, broadcast(x, [a] + x.shape, d), broadcast(x, [b] + x.shape, d)), [a >= 0, b >= 0]


@rule("broadcast(x with size-1 dims, shape) => broadcast(v, shape)", family=FAM, dtypes=ALL)
def _stretch_is_splat(c):
    """Stretching a tensor whose every dimension has size 1 equals splatting its single element
    (given as a scalar v that equals x: x = broadcast(v, [1..1]))."""
    v = c.tensor("v", rank=0)
    m = c.ints("m")
    ones = broadcast(v, [1] * c.rank, ())
    return broadcast(ones, m, range(c.rank)), broadcast(v, m, ()), [n >= 0 for n in m]


@rule("add(broadcast(a), broadcast(b)) => broadcast(add(a, b))", family=FAM, dtypes=ALL)
def _b_binary(c):
    """An elementwise binary operator (add) of two broadcasts with the same map is the broadcast of
    the operator applied to the operands."""
    a, b = c.tensor("a"), c.tensor("b")
    (k,) = c.ints("k", 1)
    d = range(1, c.rank + 1)
    return (op("add", broadcast(a, [k] + a.shape, d), broadcast(b, [k] + b.shape, d)),
            broadcast(op("add", a, b), [k] + a.shape, d), [k >= 0])


@rule("add(broadcast(v), broadcast(w)) => broadcast(add(v, w))", family=FAM, dtypes=ALL)
def _b_binary_scalar(c):
    """An elementwise binary operator (add) of two splats is the splat of the scalar result."""
    v, w = c.tensor("v", rank=0), c.tensor("w", rank=0)
    m = c.ints("m")
    return (op("add", broadcast(v, m, ()), broadcast(w, m, ())), broadcast(op("add", v, w), m, ()),
            [n >= 0 for n in m])


@rule("negate(broadcast(x)) => broadcast(negate(x))", family=FAM, dtypes=NUM)
def _b_negate(c):
    """A unary elementwise operator (negate) commutes with broadcast."""
    x = c.tensor("x")
    (k,) = c.ints("k", 1)
    d = range(1, c.rank + 1)
    return op("negate", broadcast(x, [k] + x.shape, d)), broadcast(op("negate", x), [k] + x.shape, d), [k >= 0]


@rule("convert(broadcast(x)) => broadcast(convert(x))", family=FAM, dtypes=ALL)
def _b_convert(c):
    """convert (here to f16) commutes with broadcast."""
    x = c.tensor("x")
    (k,) = c.ints("k", 1)
    d = range(c.rank)
    out = x.shape + [k]
    return convert(broadcast(x, out, d), "f16"), broadcast(convert(x, "f16"), out, d), [k >= 0]


@rule("select(broadcast(p), broadcast(a), broadcast(b)) => broadcast(select(p, a, b))", family=FAM, dtypes=ALL)
def _b_select(c):
    """select of three broadcasts with the same map is the broadcast of the select."""
    p, a, b = c.tensor("p", dtype="pred"), c.tensor("a"), c.tensor("b")
    (k,) = c.ints("k", 1)
    d = range(1, c.rank + 1)
    out = [k] + a.shape
    return (select(broadcast(p, [k] + p.shape, d), broadcast(a, out, d), broadcast(b, [k] + b.shape, d)),
            broadcast(select(p, a, b), out, d), [k >= 0])
