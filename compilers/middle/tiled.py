"""The tiled form of a :class:`~.gemm.Gemm`: the identity every tiled program implements.

What belongs here: :func:`tiled_graph`, a graph that computes the layer block by block, with
padding for remainders, exactly as a tiled program does, and the documented identities that make
it equal to the original (tested bit for bit against the reference interpreter by
``tests/compilers/test_middle.py`` with hypothesis over sizes 1..40 and blocks 1..16).

For blocks (bm, bk, bn), output tile (i, j) covers rows [i*bm, i*bm + r) and columns
[j*bn, j*bn + c), r = min(bm, M - i*bm), c = min(bn, N - j*bn); contraction block q covers
[q*bk, q*bk + kk). The tile is::

    acc_ij = slice(bias, j) broadcast to r rows  (or 0)
    acc_ij = acc_ij + slice(dot(pad(A[i, q], bm x bk), pad(B[q, j], bk x bn)), r x c)   q = 0, 1, ...
    out_ij = tail(acc_ij);   out = concatenate over i of concatenate over j of out_ij

The identities (seed 004 §3.1 tiling and §3.2 padding; seed 003 §3.3 scheduling by rewrites):

1. *Padding.* A zero-padded operand adds only zero products: ``slice(dot(pad(a), pad(b)), r x c)
   = dot(a, b)`` for any pad widths (exact in s32: 0 * x = 0, x + 0 = x).
2. *Contraction split.* ``dot(A, B) = sum_q dot(A[:, q], B[q, :])``: s32 addition wraps modulo
   2^32, so it is associative and commutative and every order of the partial sums gives the same
   bits (Gemmini's accumulator and AMX's TDPBSSD both add in wrapping int32).
3. *Output split.* The dot, the bias add and every tail operation are elementwise in the output
   position once the contraction is done, so slicing the output commutes with them:
   ``slice(tail(acc)) = tail(slice(acc))`` and ``slice(broadcast(bias)) = broadcast(slice(bias))``.
"""

from __future__ import annotations

import math
import struct

from semantics.build import Builder, tensor
from semantics.ir import Graph

from .gemm import Gemm, Tail

__all__ = ["add_tile_tail", "scale_bits", "tiled_graph", "tiles"]


def scale_bits(scale: float) -> int:
    """The f32 bit pattern of ``scale``."""
    return struct.unpack("<I", struct.pack("<f", scale))[0]


def tiles(size: int, block: int) -> list[tuple[int, int]]:
    """(start, length) of each block of ``size`` cut into ``block``-sized pieces (the last shorter)."""
    return [(s, min(block, size - s)) for s in range(0, size, block)]


def tiled_graph(g: Gemm, bm: int, bk: int, bn: int) -> Graph:
    """The tiled form of ``g`` for blocks (bm, bk, bn) as a graph (module doc)."""
    if min(bm, bk, bn) < 1:
        raise ValueError("blocks must be positive")
    b = Builder("tiled")
    params = {g.a: ("A", tensor("s8", g.m, g.k)), g.b: ("B", tensor("s8", g.k, g.n))}
    if g.bias is not None:
        params[g.bias] = ("bias", tensor("s32", g.n))
    for idx in sorted(params):
        b.param(params[idx][0], idx, params[idx][1])
    b.const("z", 0, "s32")
    b.const("z8", 0, "s8")
    rows = []
    for i, (i0, r) in enumerate(tiles(g.m, bm)):
        cols = []
        for j, (j0, c) in enumerate(tiles(g.n, bn)):
            t = f"t{i}_{j}"
            acc = None
            if g.bias is not None:
                b.op(f"{t}_bs", "slice", "bias", slice=((j0, j0 + c, 1),))
                acc = b.op(f"{t}_b", "broadcast", f"{t}_bs", type=tensor("s32", r, c), dimensions=(1,))
            for q, (q0, kk) in enumerate(tiles(g.k, bk)):
                p = f"{t}_{q}"
                b.op(f"{p}_a", "slice", "A", slice=((i0, i0 + r, 1), (q0, q0 + kk, 1)))
                b.op(f"{p}_a32", "convert", f"{p}_a", type=tensor("s32", r, kk))
                b.op(f"{p}_ap", "pad", f"{p}_a32", "z", padding=((0, bm - r, 0), (0, bk - kk, 0)))
                b.op(f"{p}_b", "slice", "B", slice=((q0, q0 + kk, 1), (j0, j0 + c, 1)))
                b.op(f"{p}_b32", "convert", f"{p}_b", type=tensor("s32", kk, c))
                b.op(f"{p}_bp", "pad", f"{p}_b32", "z", padding=((0, bk - kk, 0), (0, bn - c, 0)))
                b.op(f"{p}_d", "dot", f"{p}_ap", f"{p}_bp", lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
                s = b.op(f"{p}_s", "slice", f"{p}_d", slice=((0, r, 1), (0, c, 1)))
                acc = s if acc is None else b.op(f"{p}_acc", "add", acc, s)
            assert acc is not None
            cols.append(add_tile_tail(b, g.tail, t, acc, r, c))
        rows.append(_concat(b, f"row{i}", cols, 1))
    out = _concat(b, "out", rows, 0)
    b.op("result", "copy", out)
    return b.build()


def _concat(b: Builder, name: str, parts: list[str], dim: int) -> str:
    return parts[0] if len(parts) == 1 else b.op(name, "concatenate", *parts, dimensions=(dim,))


def add_tile_tail(b: Builder, tl: Tail, t: str, acc: str, r: int, c: int) -> str:
    """Append to ``b`` the tail ``tl`` of one ``r`` x ``c`` tile (names prefixed ``t``) applied to
    the s32 value ``acc``; returns the tile's result (``acc`` itself for a raw int32 tail)."""
    if tl.scale is None:
        return acc
    sh = (r, c)
    src = b.op(f"{t}_f", "convert", acc, type=tensor("f32", *sh))
    if tl.scale != 1.0 or not math.isfinite(tl.scale):
        b.const(f"{t}_kb", scale_bits(tl.scale), "u32")
        b.op(f"{t}_k", "bitcast-convert", f"{t}_kb", type=tensor("f32"))
        b.op(f"{t}_kk", "broadcast", f"{t}_k", type=tensor("f32", *sh), dimensions=())
        src = b.op(f"{t}_m", "multiply", f"{t}_f", f"{t}_kk")
    b.op(f"{t}_r", "round-nearest-even", src)
    lo, hi = tl.bounds
    b.const(f"{t}_lo", lo, "f32")
    b.const(f"{t}_hi", hi, "f32")
    b.op(f"{t}_c", "clamp", f"{t}_lo", f"{t}_r", f"{t}_hi")
    o = b.op(f"{t}_o", "convert", f"{t}_c", type=tensor("u8" if tl.u8 else "s8", *sh))
    if not tl.relu:
        return o
    b.op(f"{t}_zb", "broadcast", "z8", type=tensor("s8", *sh), dimensions=())
    return b.op(f"{t}_y", "maximum", o, f"{t}_zb")
