"""Reduce rules: algebra of XLA's ``reduce`` with a binary region (add, maximum, minimum, and, or, ...).

Exact semantics (docs/semantics.md, semantics/ops/contraction.py):

* the reduced elements are folded from the init value in XLA:CPU's order: sequentially in row-major
  order of the reduced indices when every reduced dimension has at most 32 elements, else in
  windows of 32 whose partial results are reduced again (TreeReductionRewriter);
* the region rounds at every step (a bf16 add region rounds each partial sum to bf16);
* a reduce that keeps the element count (no reduced dimension, or all of size 1) is a reshape:
  the init value is **not** applied (XLA assumes it is an identity), while a reduce over zero
  elements returns the init value.

Consequences for the claims below. Integer add/multiply/max/min/and/or/xor are associative and
commutative (add and multiply modulo 2^bits), so regrouping or reordering a reduction is exact for
every integer type, provided the init value is the region's identity (rules that split a reduction
into pieces would otherwise count a non-identity init once per piece, or, for a piece of one
element, not at all). Float add is neither: rules that reorder a float sum are integer-only.
Float maximum/minimum flush subnormal operands (DAZ) at every step but not in the one-element
reshape case, so even they are not freely regroupable. Rules that keep every output element's
fold unchanged (reducing the other dimension of a transpose, slicing, broadcasting or reversing
a kept dimension, empty reductions) hold for every dtype.

A bounded proof enumerates sizes <= N (3), far below the 32-element windows: a rule whose float
validity depends on the windowing (reduce of a reshape) would pass a bounded proof for floats yet
be false at larger sizes, so such rules are claimed for integers only, by argument, not by proof.
"""

from __future__ import annotations

from .dsl import ALL, INTS, broadcast, concat, const, op, reduce, reshape, reverse, rule, slice_, transpose

#: dtypes whose maximum/minimum is associative, commutative and idempotent at every step:
#: integers (f16 never flushes subnormals, bf16/f32/f64 do: see the module docstring)
MAXMIN_EXACT = INTS


def _lowest(c):
    return const(c.dtype.min) if c.dtype.is_int else const(float("-inf"))


def _highest(c):
    return const(c.dtype.max) if c.dtype.is_int else const(float("inf"))


@rule("reduce(x, v, dims={}) => x", family="reduce", dtypes=ALL)
def _reduce_none(c):
    """A reduce over no dimensions is its operand: XLA makes it a reshape and never applies the
    init value (which it assumes to be an identity), whatever the init and region are."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(x, v, (), "add"), x, []


@rule("reduce(x, v, {0}) with x.shape[0] = 1 => reshape(x)", family="reduce", dtypes=ALL)
def _reduce_unit(c):
    """Reducing a dimension of size 1 is a reshape; the init value is not applied (XLA's
    simplifier assumes it is an identity: measured on XLA:CPU)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(x, v, (0,), "add"), reshape(x, x.shape[1:]), [x.shape[0] == 1]


@rule("reduce(x, v, {0}) with x.shape[0] = 0 => broadcast(v)", family="reduce", dtypes=ALL)
def _reduce_empty(c):
    """Reducing a dimension of size 0 gives the init value everywhere (here the init is applied)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(x, v, (0,), "or" if c.dtype.is_pred else "maximum"), broadcast(v, x.shape[1:], ()), \
        [x.shape[0] == 0]


@rule("reduce(concat(x, y), 0, {0}, add) => add(reduce(x, 0), reduce(y, 0))", family="reduce", dtypes=INTS,
      ranks=(1, 2))
def _reduce_add_concat(c):
    """A sum over a concatenation is the sum of the partial sums (integers: exact modulo 2^bits;
    the init must be the identity 0, since a one-element part skips the init)."""
    x, y = c.tensor("x"), c.tensor("y")
    z = const(0)
    return reduce(concat(0, x, y), z, (0,), "add"), op("add", reduce(x, z, (0,), "add"), reduce(y, z, (0,), "add")), []


@rule("reduce(concat(x, y), MIN, {0}, max) => maximum(reduce(x, MIN), reduce(y, MIN))", family="reduce",
      dtypes=MAXMIN_EXACT, ranks=(1, 2))
def _reduce_max_concat(c):
    """A max over a concatenation, with the identity init (INT_MIN; 0 for unsigned types). Not
    for floats with -inf: a one-element part skips the region, so a subnormal survives there
    but is flushed (DAZ) by the outer maximum."""
    x, y = c.tensor("x"), c.tensor("y")
    lo = _lowest(c)
    return (reduce(concat(0, x, y), lo, (0,), "maximum"),
            op("maximum", reduce(x, lo, (0,), "maximum"), reduce(y, lo, (0,), "maximum")), [])


@rule("reduce(concat(x, y), MAX, {0}, min) => minimum(reduce(x, MAX), reduce(y, MAX))", family="reduce",
      dtypes=MAXMIN_EXACT, ranks=(1,))
def _reduce_min_concat(c):
    """A min over a concatenation, with the identity init (INT_MAX; UINT_MAX)."""
    x, y = c.tensor("x"), c.tensor("y")
    hi = _highest(c)
    return (reduce(concat(0, x, y), hi, (0,), "minimum"),
            op("minimum", reduce(x, hi, (0,), "minimum"), reduce(y, hi, (0,), "minimum")), [])


@rule("reduce(reverse(x, {0}), v, {0}, add) => reduce(x, v, {0}, add)", family="reduce", dtypes=INTS,
      ranks=(1, 2))
def _reduce_add_reverse(c):
    """Reversing the reduced dimension does not change an integer sum (any init: it is folded in
    once, or skipped for one element, on both sides). Floats: the order of a float sum matters."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(reverse(x, (0,)), v, (0,), "add"), reduce(x, v, (0,), "add"), []


@rule("reduce(reverse(x, {0}), v, {0}, max) => reduce(x, v, {0}, max)", family="reduce", dtypes=INTS,
      ranks=(1, 2))
def _reduce_max_reverse(c):
    """Reversing the reduced dimension does not change an integer maximum (any init). Floats: the
    values agree, but maximum returns a NaN operand a as is and a NaN b with the sign sign(a) AND
    sign(b), so the NaN a float maximum returns depends on the order (refuted with one NaN)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(reverse(x, (0,)), v, (0,), "maximum"), reduce(x, v, (0,), "maximum"), []


@rule("reduce(reverse(x, {1}), v, {0}) => reverse(reduce(x, v, {0}))", family="reduce", dtypes=ALL, ranks=(2,))
def _reduce_reverse_kept(c):
    """Reversing a kept dimension commutes with the reduce (every output's fold is unchanged)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(reverse(x, (1,)), v, (0,), "add"), reverse(reduce(x, v, (0,), "add"), (0,)), []


@rule("reduce(transpose(x), v, {0}) => reduce(x, v, {1})", family="reduce", dtypes=ALL, ranks=(2,))
def _reduce_transpose_one(c):
    """Reducing dimension 0 of a transpose is reducing dimension 1 of the operand, in the same
    order (floats too)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(transpose(x, (1, 0)), v, (0,), "add"), reduce(x, v, (1,), "add"), []


@rule("reduce(transpose(x), v, {0,1}, add) => reduce(x, v, {0,1}, add)", family="reduce", dtypes=INTS, ranks=(2,))
def _reduce_transpose_all(c):
    """A total integer sum does not depend on the layout of its operand (for floats the element
    order changes, so the sum can round differently)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(transpose(x, (1, 0)), v, (0, 1), "add"), reduce(x, v, (0, 1), "add"), []


@rule("reduce(broadcast(x, [3, n]), 0, {0}, add) => multiply(x, 3)", family="reduce", dtypes=INTS, ranks=(1,))
def _reduce_broadcast_3(c):
    """Summing three copies is multiplying by 3: exact modulo 2^bits, wraparound included."""
    x = c.tensor("x")
    n = x.shape[0]
    return (reduce(broadcast(x, [3, n], (1,)), const(0), (0,), "add"),
            op("multiply", x, broadcast(const(3), [n], ())), [])


@rule("reduce(broadcast(x, [m, n]), 0, {0}, add) => multiply(x, reduce(ones[m]))", family="reduce", dtypes=INTS,
      ranks=(1,))
def _reduce_broadcast_m(c):
    """Summing m copies is multiplying by m (written as the sum of m ones, since a constant cannot
    carry a symbolic size; a compiler folds it): integers only, exact modulo 2^bits."""
    x = c.tensor("x")
    m = c.int("m")
    n = x.shape[0]
    count = reduce(broadcast(const(1), [m], ()), const(0), (0,), "add")
    return (reduce(broadcast(x, [m, n], (1,)), const(0), (0,), "add"),
            op("multiply", x, broadcast(count, [n], ())), [m >= 0])


@rule("reduce(broadcast(x, [m, n], {0}), v, {0}) => broadcast(reduce(x, v, {0}), [n])", family="reduce",
      dtypes=ALL, ranks=(1,))
def _reduce_broadcast_kept(c):
    """Reducing the non-broadcast dimension of a broadcast: the reduction of the operand, broadcast
    (every output element is the same fold)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    n = c.int("n")
    m = x.shape[0]
    return (reduce(broadcast(x, [m, n], (0,)), v, (0,), "add"), broadcast(reduce(x, v, (0,), "add"), [n], ()),
            [n >= 0])


@rule("reduce(reduce(x, 0, {1}, add), 0, {0}, add) => reduce(x, 0, {0,1}, add)", family="reduce", dtypes=INTS,
      ranks=(2,))
def _reduce_reduce_add(c):
    """Nested integer sums are one sum (identity init). Floats: false, the grouping of the partial
    sums changes the rounding."""
    x = c.tensor("x")
    z = const(0)
    return reduce(reduce(x, z, (1,), "add"), z, (0,), "add"), reduce(x, z, (0, 1), "add"), []


@rule("reduce(reduce(x, v, {1}, max), v, {0}, max) => reduce(x, v, {0,1}, max)", family="reduce",
      dtypes=MAXMIN_EXACT, ranks=(2,))
def _reduce_reduce_max(c):
    """Nested integer maxima are one maximum, for any init (maximum is idempotent, so an init
    folded in more than once changes nothing). Not for bf16/f32/f64: an empty inner reduce returns
    the init unflushed, the outer maximum flushes it (DAZ)."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(reduce(x, v, (1,), "maximum"), v, (0,), "maximum"), reduce(x, v, (0, 1), "maximum"), []


@rule("reduce(reshape(x, [m*n]), 0, {0}, add) => reduce(x, 0, {0,1}, add)", family="reduce", dtypes=INTS,
      ranks=(2,))
def _reduce_reshape(c):
    """A sum over the flattened tensor is the sum over both dimensions. Integers only: for floats
    the two orders coincide while every dimension has at most 32 elements, so a bounded proof
    would pass, but the 32-element windows of XLA's tree reduction split them differently."""
    x = c.tensor("x")
    m, n = x.shape
    z = const(0)
    return reduce(reshape(x, [m * n]), z, (0,), "add"), reduce(x, z, (0, 1), "add"), []


@rule("reduce(slice(x, kept), v, {0}) => slice(reduce(x, v, {0}))", family="reduce", dtypes=ALL, ranks=(2,))
def _reduce_slice_kept(c):
    """Slicing a kept dimension commutes with the reduce."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    s, e = c.int("s"), c.int("e")
    m = x.shape[0]
    return reduce(slice_(x, [0, s], [m, e]), v, (0,), "add"), slice_(reduce(x, v, (0,), "add"), [s], [e]), []


@rule("reduce(multiply(x, broadcast(s)), 0, {0}, add) => multiply(reduce(x, 0, {0}, add), s)", family="reduce",
      dtypes=INTS, ranks=(1,))
def _reduce_scale(c):
    """A scalar factor moves out of an integer sum (distributivity modulo 2^bits)."""
    x, s = c.tensor("x"), c.tensor("s", rank=0)
    z = const(0)
    n = x.shape[0]
    return reduce(op("multiply", x, broadcast(s, [n], ())), z, (0,), "add"), op("multiply", reduce(x, z, (0,), "add"), s), []


@rule("reduce(x, true, and) => not(reduce(not(x), false, or))", family="reduce", dtypes=("pred",))
def _reduce_and_demorgan(c):
    """De Morgan for predicate reductions: all(x) = not(any(not x))."""
    x = c.tensor("x")
    return (reduce(x, const(True), (0,), "and"),
            op("not", reduce(op("not", x), const(False), (0,), "or")), [])


@rule("reduce(x, false, or) => reduce(x, false, add)", family="reduce", dtypes=("pred",))
def _reduce_or_add(c):
    """On pred, add is or: an any-reduction may use either region."""
    x = c.tensor("x")
    return reduce(x, const(False), (0,), "or"), reduce(x, const(False), (0,), "add"), []


@rule("reduce(concat(x, y), false, {0}, or) => or(reduce(x, false), reduce(y, false))", family="reduce",
      dtypes=("pred",), ranks=(1, 2))
def _reduce_or_concat(c):
    """An any-reduction over a concatenation is the or of the parts' (identity init false)."""
    x, y = c.tensor("x"), c.tensor("y")
    f = const(False)
    return reduce(concat(0, x, y), f, (0,), "or"), op("or", reduce(x, f, (0,), "or"), reduce(y, f, (0,), "or")), []
