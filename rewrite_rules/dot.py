"""Dot rules: algebra of XLA's ``dot`` (general matrix products with batch and contracting
dimensions), as the XLA algebraic simplifier and dot-decomposition passes use it.

Exact semantics (docs/semantics.md): an integer dot is the exact sum of products wrapped to the
result type, so every identity of ring arithmetic modulo 2^bits holds (associativity,
distributivity, splitting the contraction). A float dot is a sequential chain of fused
multiply-adds over the contracting index in increasing order, in f32 (f64 for f64) with DAZ/FTZ,
starting from +0.0 (-0.0 when the contraction has one element), then one rounding to bf16/f16.
So for floats only rules that keep every output element's chain of FMAs unchanged, each FMA with
its product's operands in their order, hold: permuting output dimensions, slicing free
dimensions, concatenating along free dimensions, batching, broadcasting, widening bf16/f16 to f32.
Swapping the dot's operands (``(AB)^T = B^T A^T``) keeps every value but not every NaN: where both
operands of a product are NaN, ``fma(x, y, c)`` returns x's NaN (the interpreter and XLA), so the
swapped dot returns the other operand's sign; those rules are claimed for integers only.
Rules that regroup the sum (associativity, splitting the contraction) or that assume ``x*1 + 0 = x``
or ``x*0 = 0`` (identity and zero matrices: -0.0, DAZ of subnormals, NaN and inf*0) are claimed for
integers only.

Dot and reduce have no symbolic-shape encoding: these rules are proved by enumerating every size
<= N and attribute value (``bounded N``) with the concrete SMT semantics, after random testing.
"""

from __future__ import annotations

from .dsl import (
    INTS,
    NUM,
    broadcast,
    concat,
    const,
    convert,
    dot,
    full,
    iota,
    op,
    pad,
    reshape,
    rule,
    slice_,
    transpose,
)


def _mm(a, b, dtype=None):
    """The matrix product a[m,k] . b[k,n] -> [m,n]."""
    return dot(a, b, (1,), (0,), dtype=dtype)


@rule("dot(dot(a, b), c) => dot(a, dot(b, c))", family="dot", dtypes=INTS, ranks=(2,))
def _dot_assoc(c):
    """Matrix products associate for integers (exact arithmetic modulo 2^bits); not for floats,
    whose sums are rounded in a fixed order."""
    a, b, d = c.tensor("a"), c.tensor("b"), c.tensor("c")
    return _mm(_mm(a, b), d), _mm(a, _mm(b, d)), []


@rule("transpose(dot(a, b)) => dot(transpose(b), transpose(a))", family="dot", dtypes=INTS, ranks=(2,))
def _dot_transpose(c):
    """(AB)^T = B^T A^T, for integers only: for floats every value is kept but fma(x, y, acc)
    returns x's NaN where x and y are both NaN and fma(y, x, acc) y's, so an output's NaN sign
    changes (refuted for bf16/f16/f32/f64 with that counterexample)."""
    a, b = c.tensor("a"), c.tensor("b")
    return transpose(_mm(a, b), (1, 0)), _mm(transpose(b, (1, 0)), transpose(a, (1, 0))), []


@rule("dot(a, b, lc=1, rc=0) => transpose(dot(b, a, lc=0, rc=1))", family="dot", dtypes=INTS, ranks=(2,))
def _dot_swap(c):
    """Swapping the operands' roles via the dimension numbers, then transposing the result; for
    integers only (floats: the product's NaN operand order changes, as for (AB)^T = B^T A^T)."""
    a, b = c.tensor("a"), c.tensor("b")
    return _mm(a, b), transpose(dot(b, a, (0,), (1,)), (1, 0)), []


@rule("dot(transpose(a), b) => dot(a, b, lc=0)", family="dot", dtypes=NUM, ranks=(2,))
def _dot_transpose_lhs(c):
    """A transposed lhs folds into the dot's lhs contracting dimension."""
    a, b = c.tensor("a"), c.tensor("b")
    return _mm(transpose(a, (1, 0)), b), dot(a, b, (0,), (0,)), []


@rule("dot(a, transpose(b)) => dot(a, b, rc=1)", family="dot", dtypes=NUM, ranks=(2,))
def _dot_transpose_rhs(c):
    """A transposed rhs folds into the dot's rhs contracting dimension."""
    a, b = c.tensor("a"), c.tensor("b")
    return _mm(a, transpose(b, (1, 0))), dot(a, b, (1,), (1,)), []


@rule("slice(dot(a, b), rows) => dot(slice(a, rows), b)", family="dot", dtypes=NUM, ranks=(2,))
def _slice_dot_rows(c):
    """Slicing rows of a matrix product is slicing rows of the lhs."""
    a, b = c.tensor("a"), c.tensor("b")
    s, e = c.int("s"), c.int("e")
    n = b.shape[1]
    k = a.shape[1]
    return slice_(_mm(a, b), [s, 0], [e, n]), _mm(slice_(a, [s, 0], [e, k]), b), []


@rule("slice(dot(a, b), cols) => dot(a, slice(b, cols))", family="dot", dtypes=NUM, ranks=(2,))
def _slice_dot_cols(c):
    """Slicing columns of a matrix product is slicing columns of the rhs."""
    a, b = c.tensor("a"), c.tensor("b")
    s, e = c.int("s"), c.int("e")
    m = a.shape[0]
    k = b.shape[0]
    return slice_(_mm(a, b), [0, s], [m, e]), _mm(a, slice_(b, [0, s], [k, e])), []


@rule("dot(concat(a1, a2, free), b) => concat(dot(a1, b), dot(a2, b))", family="dot", dtypes=NUM, ranks=(2,))
def _dot_concat_lhs_free(c):
    """An lhs concatenated along its free (row) dimension: the rows of the product concatenate."""
    a1, a2, b = c.tensor("a1"), c.tensor("a2"), c.tensor("b")
    return _mm(concat(0, a1, a2), b), concat(0, _mm(a1, b), _mm(a2, b)), []


@rule("dot(a, concat(b1, b2, free)) => concat(dot(a, b1), dot(a, b2))", family="dot", dtypes=NUM, ranks=(2,))
def _dot_concat_rhs_free(c):
    """An rhs concatenated along its free (column) dimension: the columns of the product concatenate."""
    a, b1, b2 = c.tensor("a"), c.tensor("b1"), c.tensor("b2")
    return _mm(a, concat(1, b1, b2)), concat(1, _mm(a, b1), _mm(a, b2)), []


@rule("dot(concat(a1, a2, k), concat(b1, b2, k)) => add(dot(a1, b1), dot(a2, b2))", family="dot", dtypes=INTS,
      ranks=(2,))
def _dot_concat_contracting(c):
    """Splitting the contraction into two partial products; integers only (a float sum is one FMA
    chain: splitting it rounds the partial sums separately)."""
    a1, a2, b1, b2 = c.tensor("a1"), c.tensor("a2"), c.tensor("b1"), c.tensor("b2")
    return (_mm(concat(1, a1, a2), concat(0, b1, b2)), op("add", _mm(a1, b1), _mm(a2, b2)),
            [a1.shape[1] == b1.shape[0]])


@rule("dot(pad(a, 0, k), b) => dot(a, slice(b, k))", family="dot", dtypes=INTS, ranks=(2,))
def _dot_zero_padded_contraction(c):
    """A contraction padded with zero columns of the left operand reads the right operand's
    first K rows only (the extra terms are 0 * b = 0; integers only: for floats inf * 0 is NaN
    and the FMA chain's start would differ). An accelerator whose array contracts a fixed
    width (Gemmini's 16) computes a narrower contraction this way."""
    a, b = c.tensor("a"), c.tensor("b")
    (p,) = c.ints("p", 1)
    k, n = a.shape[1], b.shape[1]
    ap = pad(a, const(0), [0, 0], [0, p])
    return (_mm(ap, b), _mm(a, slice_(b, [0, 0], [k, n])), [p >= 0, b.shape[0] == k + p])


def _identity(n, dtype: str):
    """The n x n identity matrix: convert(iota(0) == iota(1))."""
    eq = op("compare", iota(0, [n, n], "s32"), iota(1, [n, n], "s32"), direction="EQ")
    return convert(eq, dtype)


@rule("dot(a, identity) => a", family="dot", dtypes=INTS, ranks=(2,))
def _dot_identity_rhs(c):
    """Multiplying by the identity matrix. Integers only: for floats the FMA chain starts at +0.0
    (so -0.0 becomes +0.0 when K > 1), DAZ flushes subnormals, and inf or NaN elements of a row
    turn the row's other results into NaN (inf * 0)."""
    a = c.tensor("a")
    return _mm(a, _identity(a.shape[1], c.dtype.name)), a, []


@rule("dot(identity, a) => a", family="dot", dtypes=INTS, ranks=(2,))
def _dot_identity_lhs(c):
    """The identity matrix on the left (integers only, as dot(a, identity))."""
    a = c.tensor("a")
    return _mm(_identity(a.shape[0], c.dtype.name), a), a, []


@rule("dot(a, zeros) => zeros", family="dot", dtypes=INTS, ranks=(2,))
def _dot_zeros(c):
    """A product with a zero matrix is zero. Integers only: for floats inf * 0 and NaN * 0 are NaN."""
    a = c.tensor("a")
    k = a.shape[1]
    n = c.int("n")
    return _mm(a, broadcast(const(0), [k, n], ())), broadcast(const(0), [a.shape[0], n], ()), [n >= 0]


@rule("dot(a, b) with K = 0 => zeros", family="dot", dtypes=NUM, ranks=(2,))
def _dot_empty_contraction(c):
    """An empty contraction is zero, for floats too (the FMA chain starts from +0.0)."""
    a, b = c.tensor("a"), c.tensor("b")
    return _mm(a, b), broadcast(const(0), [a.shape[0], b.shape[1]], ()), [a.shape[1] == 0]


@rule("dot(a, b) with K = 1 => multiply(broadcast(a), broadcast(b))", family="dot", dtypes=INTS, ranks=(2,),
      note="floats: true (fma(x, y, -0.0) = x*y with DAZ/FTZ) but z3 times out on the one-element FMA; not claimed")
def _dot_outer(c):
    """A one-element contraction is an outer product (XLA rewrites it to a multiply). Claimed for
    integers: for floats the semantics starts the FMA from -0.0 so that fma(x, y, -0.0) = x*y
    exactly, but z3 does not prove the f32 FMA-versus-multiply equality within the timeout."""
    a, b = c.tensor("a"), c.tensor("b")
    m, n = a.shape[0], b.shape[1]
    av = broadcast(reshape(a, [m]), [m, n], (0,))
    bv = broadcast(reshape(b, [n]), [m, n], (1,))
    return _mm(a, b), op("multiply", av, bv), [a.shape[1] == 1]


@rule("dot(a, b) with K = 1 => fma(broadcast(a), broadcast(b), -0.0)", family="dot", dtypes=("f32",),
      ranks=(2,))
def _dot_outer_fma(c):
    """The f32 one-element contraction as the semantics defines it: one step of the FMA chain
    from -0.0 (an x86 VFMADD231PS into a register holding -0.0). The multiply form is true as
    well, but z3 does not prove the FMA-versus-multiply equality within the timeout."""
    a, b = c.tensor("a"), c.tensor("b")
    m, n = a.shape[0], b.shape[1]
    av = broadcast(reshape(a, [m]), [m, n], (0,))
    bv = broadcast(reshape(b, [n]), [m, n], (1,))
    return _mm(a, b), op("fma", av, bv, full(-0.0, [m, n], "f32")), [a.shape[1] == 1]


@rule("dot(multiply(a, broadcast(s)), b) => multiply(dot(a, b), broadcast(s))", family="dot", dtypes=INTS,
      ranks=(2,))
def _dot_scale(c):
    """A scalar factor moves out of a product (distributivity; integers only: for floats the scaled
    products round differently)."""
    a, b = c.tensor("a"), c.tensor("b")
    s = c.tensor("s", rank=0)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return (_mm(op("multiply", a, broadcast(s, [m, k], ())), b),
            op("multiply", _mm(a, b), broadcast(s, [m, n], ())), [])


@rule("dot(negate(a), b) => negate(dot(a, b))", family="dot", dtypes=INTS, ranks=(2,))
def _dot_negate(c):
    """Negation moves out of a product. Integers only: for floats a zero product in a chain that
    starts at +0.0 gives +0.0 either way, so negating the result flips it to -0.0."""
    a, b = c.tensor("a"), c.tensor("b")
    return _mm(op("negate", a), b), op("negate", _mm(a, b)), []


@rule("dot(a, b, batch=0) => concat(dot(a[:t], b[:t]), dot(a[t:], b[t:]), batch=0)", family="dot", dtypes=NUM,
      ranks=(3,))
def _dot_batch_split(c):
    """A batched dot is the concatenation of the dots of its batch slices (stated for batched
    matrix-vector products a[B,m,k] . b[B,k]: batched matrix-matrix instances with a split point
    are many times more numerous at the same size bound; the one-batch rule covers those)."""
    a, b = c.tensor("a"), c.tensor("b", rank=2)
    t = c.int("t")
    B, m, k = a.shape

    def bd(x, y):
        return dot(x, y, (2,), (1,), (0,), (0,))
    lo = bd(slice_(a, [0, 0, 0], [t, m, k]), slice_(b, [0, 0], [t, k]))
    hi = bd(slice_(a, [t, 0, 0], [B, m, k]), slice_(b, [t, 0], [B, k]))
    return bd(a, b), concat(0, lo, hi), [t >= 0, t <= B]


@rule("dot(a, b, batch=0) with one batch => reshape(dot(reshape(a), reshape(b)))", family="dot", dtypes=NUM,
      ranks=(3,))
def _dot_batch_one(c):
    """A batched dot with a single batch is a plain matrix product of the reshaped operands."""
    a, b = c.tensor("a"), c.tensor("b")
    _, m, k = a.shape
    n = b.shape[2]
    lhs = dot(a, b, (2,), (1,), (0,), (0,))
    rhs = reshape(_mm(reshape(a, [m, k]), reshape(b, [k, n])), [1, m, n])
    return lhs, rhs, [a.shape[0] == 1]


@rule("dot(broadcast(v), b) => broadcast(dot(v, b))", family="dot", dtypes=NUM, ranks=(2,))
def _dot_broadcast_lhs(c):
    """An lhs whose rows are one broadcast vector: every row of the product is the vector-matrix product."""
    v = c.tensor("v", rank=1)
    b = c.tensor("b")
    m = c.int("m")
    k, n = v.shape[0], b.shape[1]
    return (_mm(broadcast(v, [m, k], (1,)), b), broadcast(dot(v, b, (0,), (0,)), [m, n], (1,)), [m >= 0])


@rule("dot(v, w) vector => reshape(dot(reshape(v), reshape(w)))", family="dot", dtypes=NUM, ranks=(1,))
def _dot_vector(c):
    """An inner product of vectors is the 1x1 matrix product of a row and a column."""
    v, w = c.tensor("v"), c.tensor("w")
    k = v.shape[0]
    return (dot(v, w, (0,), (0,)), reshape(_mm(reshape(v, [1, k]), reshape(w, [k, 1])), []), [])


_WIDE = {"s8": "s32", "s16": "s32", "s32": "s64", "u8": "u32", "u16": "u32", "u32": "u64",
         "bf16": "f32", "f16": "f32"}


@rule("dot(a, b) -> wide => dot(convert(a, wide), convert(b, wide))", family="dot", dtypes=tuple(_WIDE),
      ranks=(2,))
def _dot_widen(c):
    """A widening dot (s8 x s8 -> s32, bf16 x bf16 -> f32) is the dot of the widened operands:
    integers accumulate exactly; bf16/f16 already accumulate in f32 (DAZ at f32 either way)."""
    a, b = c.tensor("a"), c.tensor("b")
    w = _WIDE[c.dtype.name]
    return _mm(a, b, dtype=w), _mm(convert(a, w), convert(b, w)), []

