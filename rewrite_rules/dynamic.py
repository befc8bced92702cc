"""Dynamic-slice and dynamic-update-slice rules: constant starts as static slices, the paper's
upslice decomposition (seed 000 §7.3: ``upslice[s:e](M, X) = concat(concat(slice[0:s](M), X),
slice[e:](M))``) at rank 1 and per dimension at rank 2, the disjoint-slice rule of §7.3, start
clamping, and the read/write algebra of dynamic-update-slice.

XLA clamps every start index to ``[0, dim - size]`` before slicing or updating; starts are integer
scalars of one element type (here s32 or s8). Constant starts are concrete integers (a constant's
value is a literal, not a symbolic attribute), so the upslice rules are stated for a few concrete
offsets; their sizes are symbolic. Everything here is data movement and holds for every dtype.
"""

from __future__ import annotations

from .dsl import ALL, broadcast, concat, const, convert, dslice, dus, rule, slice_, vadd

FAM = "dynamic"

INT32_MAX = 2**31 - 1


def _starts(c, k: int):
    """Constant s32 start indices, all equal to ``k``."""
    return [const(k, "s32") for _ in range(c.rank)]


@rule("dslice(x, [0..], m) => slice(x, 0, m)", family=FAM, dtypes=ALL)
def _ds_zero(c):
    """A dynamic slice at constant start 0 is a static slice."""
    x = c.tensor("x")
    m = c.ints("m")
    return dslice(x, _starts(c, 0), m), slice_(x, [0] * c.rank, m), []


@rule("dslice(x, [1..], m) in range => slice(x, 1, 1+m)", family=FAM, dtypes=ALL)
def _ds_one(c):
    """A dynamic slice at a constant in-range start (1) is the static slice there."""
    x = c.tensor("x")
    m = c.ints("m")
    pre = [k + 1 <= n for k, n in zip(m, x.shape, strict=False)]
    return dslice(x, _starts(c, 1), m), slice_(x, [1] * c.rank, [k + 1 for k in m]), pre


@rule("dslice(x, [-1..], m) => slice(x, 0, m)", family=FAM, dtypes=ALL)
def _ds_negative(c):
    """A negative start clamps to 0."""
    x = c.tensor("x")
    m = c.ints("m")
    return dslice(x, _starts(c, -1), m), slice_(x, [0] * c.rank, m), []


@rule("dslice(x, [INT32_MAX..], m) => slice(x, n-m, n)", family=FAM, dtypes=ALL)
def _ds_too_far(c):
    """A start beyond the last valid one clamps to dim - size: the slice at the end."""
    x = c.tensor("x")
    m = c.ints("m")
    pre = [n <= INT32_MAX for n in x.shape]
    return dslice(x, _starts(c, INT32_MAX), m), slice_(x, [n - k for n, k in zip(x.shape, m, strict=False)], x.shape), pre


@rule("dslice(x, i, shape(x)) => x", family=FAM, dtypes=ALL)
def _ds_full(c):
    """A dynamic slice of the whole operand is the operand, whatever the starts (they clamp to 0)."""
    x = c.tensor("x")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dslice(x, i, x.shape), x, []


@rule("dslice(x, convert(i: s8 -> s32)) => dslice(x, i)", family=FAM, dtypes=ALL)
def _ds_widen(c):
    """Sign-extending the start indices does not change where a dynamic slice reads."""
    x = c.tensor("x")
    m = c.ints("m")
    i = [c.tensor(f"i{k}", rank=0, dtype="s8") for k in range(c.rank)]
    return dslice(x, [convert(t, "s32") for t in i], m), dslice(x, i, m), []


@rule("dslice(broadcast(v), i, m) => broadcast(v, m)", family=FAM, dtypes=ALL)
def _ds_splat(c):
    """A dynamic slice of a splat is a splat."""
    v = c.tensor("v", rank=0)
    k, m = c.ints("k"), c.ints("m")
    i = [c.tensor(f"i{j}", rank=0, dtype="s32") for j in range(c.rank)]
    return dslice(broadcast(v, k, ()), i, m), broadcast(v, m, ()), [n >= 0 for n in k]


@rule("dus(x, u, i) with shape(u) = shape(x) => u", family=FAM, dtypes=ALL)
def _dus_full(c):
    """An update as large as the operand replaces all of it (the starts clamp to 0)."""
    x, u = c.tensor("x"), c.tensor("u")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dus(x, u, i), u, [a == b for a, b in zip(x.shape, u.shape, strict=False)]


@rule("dus(x, u, i) with u empty => x", family=FAM, dtypes=ALL)
def _dus_empty(c):
    """An update with no elements leaves the operand unchanged."""
    x, u = c.tensor("x"), c.tensor("u")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dus(x, u, i), x, [u.shape[0] == 0]


@rule("dslice(dus(x, u, i), i, shape(u)) => u", family=FAM, dtypes=ALL)
def _ds_of_dus(c):
    """Reading back, at the same starts, the region just written gives the update (both clamp alike)."""
    x, u = c.tensor("x"), c.tensor("u")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dslice(dus(x, u, i), i, u.shape), u, []


@rule("dus(x, dslice(x, i, m), i) => x", family=FAM, dtypes=ALL)
def _dus_of_ds(c):
    """Writing back, at the same starts, what was read leaves the operand unchanged."""
    x = c.tensor("x")
    m = c.ints("m")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dus(x, dslice(x, i, m), i), x, []


@rule("dus(dus(x, u, i), w, i) with shape(w) = shape(u) => dus(x, w, i)", family=FAM, dtypes=ALL)
def _dus_dus(c):
    """A second update of the same region at the same starts overwrites the first."""
    x, u, w = c.tensor("x"), c.tensor("u"), c.tensor("w")
    i = [c.tensor(f"i{k}", rank=0, dtype="s32") for k in range(c.rank)]
    return dus(dus(x, u, i), w, i), dus(x, w, i), [a == b for a, b in zip(u.shape, w.shape, strict=False)]


def _upslice1(s: int) -> None:
    @rule(f"dus(M, X, [{s}]) => concat(concat(slice(M, [0:{s}]), X), slice(M, [{s}+m:n]))", family=FAM,
          dtypes=ALL, ranks=(1,),
          desc=f"The paper's upslice rule (§7.3) at constant start {s}: an in-range update is the "
               f"concatenation of the prefix, the update and the suffix.")
    def _r(c):
        """The paper's upslice rule at a constant start: prefix, update, suffix."""
        M, X = c.tensor("M"), c.tensor("X")
        n, m = M.shape[0], X.shape[0]
        rhs = concat(0, concat(0, slice_(M, [0], [s]), X), slice_(M, [s + m], [n]))
        return dus(M, X, [const(s, "s32")]), rhs, [s + m <= n]


for _s in (0, 1, 2):
    _upslice1(_s)


@rule("dus(M, X, [INT32_MAX]) => concat(slice(M, [0:n-m]), X)", family=FAM, dtypes=ALL, ranks=(1,))
def _upslice_clamped(c):
    """An update whose start is beyond the end is clamped to end at the last element: M's prefix then X."""
    M, X = c.tensor("M"), c.tensor("X")
    n, m = M.shape[0], X.shape[0]
    return dus(M, X, [const(INT32_MAX, "s32")]), concat(0, slice_(M, [0], [n - m]), X), [n <= INT32_MAX]


@rule("dus(M, X, [1, 0]) full rows => concat_0(slice(M, rows 0:1), X, slice(M, rows 1+m:))", family=FAM,
      dtypes=ALL, ranks=(2,))
def _upslice_rows(c):
    """Upslice along dimension 0 at rank 2 (the update spans every column)."""
    M, X = c.tensor("M"), c.tensor("X")
    (n0, n1), m0 = M.shape, X.shape[0]
    rhs = concat(0, slice_(M, [0, 0], [1, n1]), X, slice_(M, [1 + m0, 0], [n0, n1]))
    return dus(M, X, [const(1, "s32"), const(0, "s32")]), rhs, [X.shape[1] == n1, 1 + m0 <= n0]


@rule("dus(M, X, [0, 1]) full columns => concat_1(slice(M, cols 0:1), X, slice(M, cols 1+m:))", family=FAM,
      dtypes=ALL, ranks=(2,))
def _upslice_cols(c):
    """Upslice along dimension 1 at rank 2 (the update spans every row)."""
    M, X = c.tensor("M"), c.tensor("X")
    (n0, n1), m1 = M.shape, X.shape[1]
    rhs = concat(1, slice_(M, [0, 0], [n0, 1]), X, slice_(M, [0, 1 + m1], [n0, n1]))
    return dus(M, X, [const(0, "s32"), const(1, "s32")]), rhs, [X.shape[0] == n0, 1 + m1 <= n1]


@rule("dus(M, X, [1, 1]) => concat_0(rows above, concat_1(left, X, right), rows below)", family=FAM,
      dtypes=ALL, ranks=(2,))
def _upslice_2d(c):
    """Upslice of a 2-D block: the rows above and below are slices of M, the block rows are
    M's left part, X and M's right part side by side."""
    M, X = c.tensor("M"), c.tensor("X")
    (n0, n1), (m0, m1) = M.shape, X.shape
    mid = concat(1, slice_(M, [1, 0], [1 + m0, 1]), X, slice_(M, [1, 1 + m1], [1 + m0, n1]))
    rhs = concat(0, slice_(M, [0, 0], [1, n1]), mid, slice_(M, [1 + m0, 0], [n0, n1]))
    return dus(M, X, [const(1, "s32"), const(1, "s32")]), rhs, [1 + m0 <= n0, 1 + m1 <= n1]


@rule("slice(dus(M, X, [2..]), disjoint in dim 0) => slice(M)", family=FAM, dtypes=ALL)
def _slice_dus_disjoint(c):
    """§7.3: a slice disjoint from an (in-range) update reads the original operand."""
    M, X = c.tensor("M"), c.tensor("X")
    s, e = c.ints("s"), c.ints("e")
    pre = [2 + m <= n for m, n in zip(X.shape, M.shape, strict=False)]
    from z3 import Or
    pre.append(Or(e[0] <= 2, s[0] >= 2 + X.shape[0]))
    return slice_(dus(M, X, _starts(c, 2)), s, e), slice_(M, s, e), pre


@rule("slice(dus(M, X, [2..]), [2:2+m]) => X", family=FAM, dtypes=ALL)
def _slice_dus_same(c):
    """A slice exactly over an (in-range) update reads the update."""
    M, X = c.tensor("M"), c.tensor("X")
    pre = [2 + m <= n for m, n in zip(X.shape, M.shape, strict=False)]
    two = [2] * c.rank
    return slice_(dus(M, X, _starts(c, 2)), two, vadd(two, X.shape)), X, pre
