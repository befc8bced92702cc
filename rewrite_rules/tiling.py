"""Act's identity-instruction rules for instruction selection (seed 000 §5.2.3, appendix C.2):
tiling a tensor into blocks with slices and re-concatenating, padding to a tile multiple and slicing
back, copy, and the byte-flattening inverse ``bflat^-1(bflat(x)) = x`` (Def. 7:
``bflat(x) = reshape(bitcast-convert(x, u8), [mem(x)])``) for every element width, with bflat
distributing over row concatenation and row slices (how tiles are addressed in HBM).

The bflat rules use bitcast-convert between widths, which has no symbolic encoding: they are
proved by the bounded prover (sizes <= 3) at ranks 1-2, and are written with the bitcast only on
the right side ("x => bflat^-1(bflat(x))"): the prover cannot handle a width-changing
bitcast-convert on the left side (reported). pred has no bitcast-convert, so bflat rules claim
every numeric dtype.
"""

from __future__ import annotations

from .dsl import ALL, NUM, bitcast, broadcast, concat, copy, pad, reshape, rule, slice_

FAM = "tiling"

_BOUNDED = ("bounded proof (sizes <= 3, ranks 1-2): bitcast-convert between widths has no symbolic encoding; "
            "8-bit types (same-width bitcast) try the symbolic proof first, which may time out on the "
            "reshape index arithmetic before the bounded fallback")


def _prod(xs):
    r = 1
    for x in xs:
        r = r * x
    return r


def _bflat(c, x, shape):
    """bflat(x) = reshape(bitcast(x, u8), [bytes]) for a tensor of the rule's dtype and ``shape``."""
    w = c.dtype.bits // 8
    return reshape(bitcast(x, "u8"), [_prod(shape) * w])


def _unbflat(c, b, shape):
    """bflat^-1: bytes back to a tensor of the rule's dtype and ``shape``."""
    w = c.dtype.bits // 8
    return bitcast(reshape(b, list(shape) + ([w] if w > 1 else [])), c.dtype.name)


@rule("concat_0(concat_1(x00, x01), concat_1(x10, x11)) of the 2x2 tiles of x => x", family=FAM, dtypes=ALL,
      ranks=(2,))
def _tiles_2x2_rows(c):
    """Tiling a matrix into 2x2 blocks (split at a, b) and re-concatenating row by row gives x."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    n0, n1 = x.shape
    t00, t01 = slice_(x, [0, 0], [a, b]), slice_(x, [0, b], [a, n1])
    t10, t11 = slice_(x, [a, 0], [n0, b]), slice_(x, [a, b], [n0, n1])
    return concat(0, concat(1, t00, t01), concat(1, t10, t11)), x, [0 <= a, a <= n0, 0 <= b, b <= n1]


@rule("concat_1(concat_0(x00, x10), concat_0(x01, x11)) of the 2x2 tiles of x => x", family=FAM, dtypes=ALL,
      ranks=(2,))
def _tiles_2x2_cols(c):
    """Tiling a matrix into 2x2 blocks and re-concatenating column by column gives x."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    n0, n1 = x.shape
    t00, t01 = slice_(x, [0, 0], [a, b]), slice_(x, [0, b], [a, n1])
    t10, t11 = slice_(x, [a, 0], [n0, b]), slice_(x, [a, b], [n0, n1])
    return concat(1, concat(0, t00, t10), concat(0, t01, t11)), x, [0 <= a, a <= n0, 0 <= b, b <= n1]


@rule("concat(slice(x,[0:t]), slice(x,[t:2t]), slice(x,[2t:3t])) with n = 3t => x", family=FAM, dtypes=ALL)
def _tiles_equal3(c):
    """Three equal tiles of dimension 0 re-concatenate to x."""
    x = c.tensor("x")
    (t,) = c.ints("t", 1)
    rest = x.shape[1:]
    z = [0] * (c.rank - 1)
    parts = [slice_(x, [i * t] + z, [(i + 1) * t] + rest) for i in range(3)]
    return concat(0, *parts), x, [t >= 0, x.shape[0] == 3 * t]


@rule("slice(pad(x, v, 0, p), 0, n) => x", family=FAM, dtypes=ALL)
def _pad_to_tile_and_back(c):
    """Padding up to a tile multiple (high padding p >= 0) and slicing the original extent back gives x."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    p = c.ints("p")
    z = [0] * c.rank
    return slice_(pad(x, v, z, p), z, x.shape), x, [k >= 0 for k in p]


@rule("slice(concat(x, broadcast(v)), 0, n) => x", family=FAM, dtypes=ALL)
def _splat_tile_and_back(c):
    """Appending a splat tile (dimension 0) and slicing the original extent back gives x."""
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    (p,) = c.ints("p", 1)
    z = [0] * c.rank
    return slice_(concat(0, x, broadcast(v, [p] + x.shape[1:], ())), z, x.shape), x, [p >= 0]


@rule("copy(x) => x", family=FAM, dtypes=ALL)
def _copy(c):
    """copy is the identity on values."""
    x = c.tensor("x")
    return copy(x), x, []


@rule("slice(copy(x)) => slice(x)", family=FAM, dtypes=ALL)
def _slice_copy(c):
    """A slice of a copy is the slice of the original."""
    x = c.tensor("x")
    s, e = c.ints("s"), c.ints("e")
    return slice_(copy(x), s, e), slice_(x, s, e), []


@rule("x => bflat^-1(bflat(x))", family=FAM, dtypes=NUM, ranks=(1, 2), note=_BOUNDED)
def _bflat_inverse(c):
    """bflat is invertible for every element width: reshaping the bytes back and bitcasting gives x."""
    x = c.tensor("x")
    return x, _unbflat(c, _bflat(c, x, x.shape), x.shape), []


@rule("concat_0(x, y) => bflat^-1(concat(bflat(x), bflat(y)))", family=FAM, dtypes=NUM, ranks=(1, 2),
      note=_BOUNDED)
def _bflat_concat(c):
    """The bytes of a row concatenation are the concatenated bytes of its parts (row-major layout)."""
    x, y = c.tensor("x"), c.tensor("y")
    out = [x.shape[0] + y.shape[0]] + x.shape[1:]
    return concat(0, x, y), _unbflat(c, concat(0, _bflat(c, x, x.shape), _bflat(c, y, y.shape)), out), []


@rule("slice(x, rows a:b) => bflat^-1(slice(bflat(x), a*row_bytes, b*row_bytes))", family=FAM, dtypes=NUM,
      ranks=(1, 2), note=_BOUNDED)
def _bflat_rows(c):
    """A range of rows is a contiguous byte range of bflat(x) (a load of rows from HBM)."""
    x = c.tensor("x")
    (a,), (b,) = c.ints("a", 1), c.ints("b", 1)
    row = _prod(x.shape[1:]) * (c.dtype.bits // 8)
    out = [b - a] + x.shape[1:]
    rows = slice_(x, [a] + [0] * (c.rank - 1), [b] + x.shape[1:])
    return rows, _unbflat(c, slice_(_bflat(c, x, x.shape), [a * row], [b * row]), out), []
