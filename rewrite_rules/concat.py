"""Concatenation rules: Act's tiling identity (a tensor is the concatenation of slices that tile
it, along each dimension), merging adjacent slices, associativity, empty and single operands,
splats, concatenation with a splat as a pad, and transpose / reverse / elementwise operators
through a concatenation.

Concatenation is data movement: every rule holds for every dtype the operators involved accept
(add is defined on pred as OR, so the binary-operator rule claims all dtypes).
"""

from __future__ import annotations

from .dsl import ALL, INTS, NUM, broadcast, concat, convert, op, pad, reverse, rule, select, slice_, transpose

FAM = "concat"


def _tile_rule(d: int) -> None:
    @rule(f"concat_{d}(slice(x, [0:k]), slice(x, [k:n])) => x", family=FAM, dtypes=ALL,
          ranks=tuple(r for r in (1, 2, 3) if r > d),
          desc=f"Act's tiling identity along dimension {d}: the two slices of x at any split point k "
               f"re-concatenate to x.")
    def _r(c):
        """The two slices of x at a split point re-concatenate to x (Act's tiling identity)."""
        x = c.tensor("x")
        (k,) = c.ints("k", 1)
        zero = [0] * c.rank
        mid = list(x.shape)
        mid[d] = k
        start = list(zero)
        start[d] = k
        return concat(d, slice_(x, zero, mid), slice_(x, start, x.shape)), x, [0 <= k, k <= x.shape[d]]


for _d in (0, 1, 2):
    _tile_rule(_d)


@rule("concat(slice(x, [0:a]), slice(x, [a:b]), slice(x, [b:n])) => x", family=FAM, dtypes=ALL)
def _tile3(c):
    """Three slices that tile dimension 0 re-concatenate to x."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    rest = x.shape[1:]
    z = [0] * (c.rank - 1)
    parts = [slice_(x, [0] + z, [a] + rest), slice_(x, [a] + z, [b] + rest), slice_(x, [b] + z, x.shape)]
    return concat(0, *parts), x, [0 <= a, a <= b, b <= x.shape[0]]


@rule("concat(slice(x, [a:b]), slice(x, [b:c])) => slice(x, [a:c])", family=FAM, dtypes=ALL)
def _merge_adjacent(c):
    """Two adjacent slices of dimension 0 (same ranges elsewhere) concatenate to one slice."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    (b,) = c.ints("b", 1)
    lhs = concat(0, slice_(x, s, [b] + e[1:]), slice_(x, [b] + s[1:], e))
    return lhs, slice_(x, s, e), [s[0] <= b, b <= e[0]]


@rule("concat(concat(x, y), z) => concat(x, y, z)", family=FAM, dtypes=ALL)
def _assoc_left(c):
    """A nested concatenation on the left along the same dimension flattens."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return concat(0, concat(0, x, y), z), concat(0, x, y, z), []


@rule("concat(x, concat(y, z)) => concat(x, y, z)", family=FAM, dtypes=ALL)
def _assoc_right(c):
    """A nested concatenation on the right along the same dimension flattens."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return concat(0, x, concat(0, y, z)), concat(0, x, y, z), []


@rule("concat_last(concat_last(x, y), z) => concat_last(x, concat_last(y, z))", family=FAM, dtypes=ALL)
def _assoc_last(c):
    """Concatenation along the last dimension is associative."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    d = c.rank - 1
    return concat(d, concat(d, x, y), z), concat(d, x, concat(d, y, z)), []


@rule("concat(x, empty) => x", family=FAM, dtypes=ALL)
def _concat_empty_right(c):
    """Concatenating an operand of size 0 along the dimension changes nothing."""
    x, y = c.tensor("x"), c.tensor("y")
    return concat(0, x, y), x, [y.shape[0] == 0]


@rule("concat(empty, x) => x", family=FAM, dtypes=ALL)
def _concat_empty_left(c):
    """A leading operand of size 0 along the dimension changes nothing."""
    x, y = c.tensor("x"), c.tensor("y")
    d = c.rank - 1
    return concat(d, y, x), x, [y.shape[d] == 0]


@rule("concat(x) => x", family=FAM, dtypes=ALL)
def _concat_single(c):
    """A concatenation of one operand is the operand."""
    x = c.tensor("x")
    return concat(0, x), x, []


@rule("concat(broadcast(v, [a,..]), broadcast(v, [b,..])) => broadcast(v, [a+b,..])", family=FAM, dtypes=ALL)
def _concat_splats(c):
    """Two splats of the same scalar concatenate to one splat."""
    v = c.tensor("v", rank=0)
    m = c.ints("m")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    pre = [n >= 0 for n in m[1:]] + [a >= 0, b >= 0]
    return (concat(0, broadcast(v, [a] + m[1:], ()), broadcast(v, [b] + m[1:], ())),
            broadcast(v, [a + b] + m[1:], ()), pre)


@rule("concat(x, broadcast(v)) => pad(x, v, 0, [m,0..])", family=FAM, dtypes=ALL)
def _concat_splat_is_pad_hi(c):
    """Concatenating a splat after x along dimension 0 is a high pad of x."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    (m,) = c.ints("m", 1)
    z = [0] * c.rank
    return concat(0, x, broadcast(v, [m] + x.shape[1:], ())), pad(x, v, z, [m] + z[1:]), [m >= 0]


@rule("concat(broadcast(v), x) => pad(x, v, [m,0..], 0)", family=FAM, dtypes=ALL)
def _concat_splat_is_pad_lo(c):
    """Concatenating a splat before x along dimension 0 is a low pad of x."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    (m,) = c.ints("m", 1)
    z = [0] * c.rank
    return concat(0, broadcast(v, [m] + x.shape[1:], ()), x), pad(x, v, [m] + z[1:], z), [m >= 0]


@rule("transpose(concat_0(x, y)) => concat_1(transpose(x), transpose(y))", family=FAM, dtypes=ALL, ranks=(2,))
def _transpose_concat(c):
    """The transpose of a row concatenation is the column concatenation of the transposes."""
    x, y = c.tensor("x"), c.tensor("y")
    return transpose(concat(0, x, y), (1, 0)), concat(1, transpose(x, (1, 0)), transpose(y, (1, 0))), []


@rule("transpose(concat_0(x, y), (1,2,0)) => concat_2(transpose(x), transpose(y))", family=FAM, dtypes=ALL,
      ranks=(3,))
def _transpose_concat3(c):
    """A transpose moves the concatenation dimension to where the permutation sends it."""
    x, y = c.tensor("x"), c.tensor("y")
    p = (1, 2, 0)
    return transpose(concat(0, x, y), p), concat(2, transpose(x, p), transpose(y, p)), []


@rule("reverse(concat(x, y)) along the concat dim => concat(reverse(y), reverse(x))", family=FAM, dtypes=ALL)
def _reverse_concat_same(c):
    """Reversing a concatenation along its dimension reverses each operand and swaps their order."""
    x, y = c.tensor("x"), c.tensor("y")
    return reverse(concat(0, x, y), (0,)), concat(0, reverse(y, (0,)), reverse(x, (0,))), []


@rule("reverse(concat_0(x, y)) along the last dim => concat_0(reverse(x), reverse(y))", family=FAM, dtypes=ALL,
      ranks=(2, 3))
def _reverse_concat_other(c):
    """Reversing a concatenation along another dimension reverses each operand in place."""
    x, y = c.tensor("x"), c.tensor("y")
    d = (c.rank - 1,)
    return reverse(concat(0, x, y), d), concat(0, reverse(x, d), reverse(y, d)), []


@rule("add(concat(a, b), concat(p, q)) => concat(add(a, p), add(b, q))", family=FAM, dtypes=("pred",) + INTS,
      note="true for floats too (pointwise), claimed for pred and integers only: the symbolic proof of an "
           "FP add of if-then-else operands times out (10-20 s, then bounded); see the select rule for all dtypes")
def _binary_concat(c):
    """An elementwise binary operator (add) of two concatenations with the same split is the
    concatenation of the pieces' results."""
    a, b, p, q = c.tensor("a"), c.tensor("b"), c.tensor("p"), c.tensor("q")
    return (op("add", concat(0, a, b), concat(0, p, q)), concat(0, op("add", a, p), op("add", b, q)),
            [a.shape[0] == p.shape[0]])


@rule("select(concat(p1, p2), concat(a, b), concat(u, w)) => concat(select(p1, a, u), select(p2, b, w))",
      family=FAM, dtypes=ALL)
def _select_concat(c):
    """An elementwise operator (select) of concatenations with the same split is the concatenation of
    the pieces' results."""
    p1, p2 = c.tensor("p1", dtype="pred"), c.tensor("p2", dtype="pred")
    a, b, u, w = c.tensor("a"), c.tensor("b"), c.tensor("u"), c.tensor("w")
    pre = [a.shape[0] == p1.shape[0], u.shape[0] == p1.shape[0]]
    return (select(concat(0, p1, p2), concat(0, a, b), concat(0, u, w)),
            concat(0, select(p1, a, u), select(p2, b, w)), pre)


@rule("negate(concat(x, y)) => concat(negate(x), negate(y))", family=FAM, dtypes=NUM)
def _negate_concat(c):
    """A unary elementwise operator (negate) distributes over a concatenation."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("negate", concat(0, x, y)), concat(0, op("negate", x), op("negate", y)), []


@rule("convert(concat(x, y)) => concat(convert(x), convert(y))", family=FAM, dtypes=ALL)
def _convert_concat(c):
    """convert (here to bf16) distributes over a concatenation."""
    x, y = c.tensor("x"), c.tensor("y")
    return convert(concat(0, x, y), "bf16"), concat(0, convert(x, "bf16"), convert(y, "bf16")), []


@rule("concat_1(concat_0(a, b), concat_0(p, q)) => concat_0(concat_1(a, p), concat_1(b, q))", family=FAM,
      dtypes=ALL, ranks=(2, 3))
def _concat_interchange(c):
    """Block-matrix interchange: concatenating column blocks of row blocks equals concatenating row
    blocks of column blocks (when the row splits agree)."""
    a, b, p, q = c.tensor("a"), c.tensor("b"), c.tensor("p"), c.tensor("q")
    lhs = concat(1, concat(0, a, b), concat(0, p, q))
    rhs = concat(0, concat(1, a, p), concat(1, b, q))
    return lhs, rhs, [a.shape[0] == p.shape[0]]
