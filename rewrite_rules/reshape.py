"""Reshape rules: identity reshapes, flatten/unflatten round trips, unit dimensions, reshapes of
splats, elementwise operators through reshape, and the bflat inverse pairs of seed 000 Def. 7
(``bflat(t) = reshape(bitcast-convert(t, u8))``) for 16- and 32-bit element types.

Reshape keeps the row-major order of elements. Its symbolic encoding linearises the index with
products of symbolic sizes and recovers the operand index with ``mod``/``div`` by symbolic sizes:
nonlinear integer arithmetic, which z3 proves quickly at ranks 1-2 but often not at rank 3 (it
times out, and the prover falls back to a bounded proof, ~10 s per dtype). Rules whose proof needs
that arithmetic are therefore stated for ranks 1-2 and say so in ``note``; rules where the index
arithmetic cancels (splats, operators on both sides) are stated for every rank.

bitcast-convert between widths has no symbolic encoding: those rules are proved by the bounded
prover (sizes <= 3). They are written "x => bflat^-1(bflat(x))" (bitcast only on the right side)
because the prover cannot handle a width-changing bitcast-convert on the left side (see the
report: ``verif.symbolic.Encoder._op_bitcast_convert`` raises ``NotSymbolic`` in shapes-only mode).
"""

from __future__ import annotations

from .dsl import ALL, bitcast, broadcast, convert, op, reshape, rule, transpose

FAM = "reshape"

_NONLINEAR = ("rank 3 omitted: z3 times out on the nonlinear (mod/div by symbolic sizes) index "
              "arithmetic of reshape at rank 3 and the bounded fallback costs ~10 s per dtype")


def _prod(xs):
    r = 1
    for x in xs:
        r = r * x
    return r


@rule("reshape(x, shape(x)) => x", family=FAM, dtypes=ALL, ranks=(1, 2), note=_NONLINEAR)
def _reshape_same(c):
    """A reshape to the operand's own shape is the operand."""
    x = c.tensor("x")
    return reshape(x, x.shape), x, []


@rule("reshape(reshape(x, [N]), shape(x)) => x", family=FAM, dtypes=ALL, ranks=(1, 2), note=_NONLINEAR)
def _flatten_unflatten(c):
    """Flattening to a vector and reshaping back is the identity."""
    x = c.tensor("x")
    return reshape(reshape(x, [_prod(x.shape)]), x.shape), x, []


@rule("reshape(x, [1]+shape(x)) => broadcast(x, [1]+shape(x))", family=FAM, dtypes=ALL, ranks=(1, 2),
      note=_NONLINEAR)
def _reshape_unit_dim(c):
    """Adding a leading dimension of size 1 by reshape is the broadcast that adds it."""
    x = c.tensor("x")
    out = [1] + x.shape
    return reshape(x, out), broadcast(x, out, range(1, c.rank + 1)), []


@rule("reshape(broadcast(v, k), m) => broadcast(v, m)", family=FAM, dtypes=ALL)
def _reshape_splat(c):
    """A reshape of a splat is a splat of the new shape."""
    v = c.tensor("v", rank=0)
    k, m = c.ints("k"), c.ints("m")
    pre = [n >= 0 for n in k + m]
    return reshape(broadcast(v, k, ()), m), broadcast(v, m, ()), pre


@rule("reshape(v, [1,..,1]) => broadcast(v, [1,..,1])", family=FAM, dtypes=ALL)
def _reshape_scalar_up(c):
    """Reshaping a scalar to all-ones dimensions is broadcasting it."""
    v = c.tensor("v", rank=0)
    ones = [1] * c.rank
    return reshape(v, ones), broadcast(v, ones, ()), []


@rule("convert(reshape(x, m)) => reshape(convert(x), m)", family=FAM, dtypes=ALL)
def _convert_reshape(c):
    """convert (here to f32) commutes with reshape."""
    x = c.tensor("x")
    m = c.ints("m")
    return convert(reshape(x, m), "f32"), reshape(convert(x, "f32"), m), []


@rule("add(reshape(x, m), reshape(y, m)) => reshape(add(x, y), m)", family=FAM, dtypes=ALL)
def _binary_reshape(c):
    """An elementwise binary operator (add) of two same-shape operands reshaped alike is the reshape of the result."""
    x, y = c.tensor("x"), c.tensor("y")
    m = c.ints("m")
    return op("add", reshape(x, m), reshape(y, m)), reshape(op("add", x, y), m), [a == b for a, b in zip(x.shape, y.shape, strict=False)]


@rule("transpose(x[n,1], (1,0)) => reshape(x, [1,n])", family=FAM, dtypes=ALL, ranks=(2,))
def _transpose_column(c):
    """Transposing a column vector is a reshape to a row vector (no element moves in memory)."""
    x = c.tensor("x")
    return transpose(x, (1, 0)), reshape(x, [1, x.shape[0]]), [x.shape[1] == 1]


def _bflat_pair(name: str, dtypes: tuple[str, ...], w: int) -> None:
    @rule(name, family=FAM, dtypes=dtypes, ranks=(1, 2),
          desc=f"bflat is invertible for {w}-byte types: x = bitcast(reshape(bflat(x), shape(x)+[{w}]), T) "
               f"(Def. 7: bflat(x) = reshape(bitcast(x, u8), [{w}N])).",
          note="bounded proof (sizes <= 3): bitcast-convert between widths has no symbolic encoding; "
               "stated left-to-right as x => bflat^-1(bflat(x)) because of a prover limitation")
    def _r(c):
        """bflat is invertible: the bytes reshaped back and bitcast give x."""
        x = c.tensor("x")
        flat = reshape(bitcast(x, "u8"), [_prod(x.shape) * w])
        return x, bitcast(reshape(flat, x.shape + [w]), c.dtype.name), []


_bflat_pair("x => bitcast(reshape(reshape(bitcast(x, u8), [2N]), shape(x)+[2]), T)  (16-bit bflat inverse)",
            ("bf16", "f16", "s16", "u16"), 2)
_bflat_pair("x => bitcast(reshape(reshape(bitcast(x, u8), [4N]), shape(x)+[4]), T)  (32-bit bflat inverse)",
            ("s32", "u32", "f32"), 4)


@rule("b[n,2] => bitcast(bitcast(b, T), u8)  (16-bit bytes round trip)", family=FAM, dtypes=("s16", "u16"),
      ranks=(2,),
      note="integers only: for floats it holds in the reference semantics (bitcast keeps NaN payloads) but the "
           "SMT encoding has a single NaN, so the bounded prover cannot prove it; bounded proof (sizes <= 3); "
           "32-bit: no instance with a last dimension of 4 exists under the default size bound 3, so not stated")
def _bytes16(c):
    """Pairs of bytes -> 16-bit integers -> bytes is the identity (bflat(bflat^-1(b)) = b)."""
    b = c.tensor("b", dtype="u8")
    return b, bitcast(bitcast(b, c.dtype.name), "u8"), [b.shape[1] == 2]


@rule("b => bitcast(bitcast(b, T), u8)  (8-bit bytes round trip)", family=FAM, dtypes=("s8", "u8"))
def _bytes8(c):
    """Bytes -> 8-bit integers -> bytes is the identity."""
    b = c.tensor("b", dtype="u8")
    return b, bitcast(bitcast(b, c.dtype.name), "u8"), []
