"""The tiled form of a :class:`~.gemm.Gemm`: the identity every tiled program implements.

What belongs here: :func:`tiled_graph`, an HLO graph that computes the layer block by block, with
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

from semantics.hlo_parser import parse_hlo
from semantics.ir import Graph

from .gemm import Gemm

__all__ = ["tiled_graph", "tiles", "scale_bits"]


def scale_bits(scale: float) -> int:
    """The f32 bit pattern of ``scale``."""
    return struct.unpack("<I", struct.pack("<f", scale))[0]


def tiles(size: int, block: int) -> list[tuple[int, int]]:
    """(start, length) of each block of ``size`` cut into ``block``-sized pieces (the last shorter)."""
    return [(s, min(block, size - s)) for s in range(0, size, block)]


def tiled_graph(g: Gemm, bm: int, bk: int, bn: int) -> Graph:
    """The tiled form of ``g`` for blocks (bm, bk, bn) as an HLO graph (module doc)."""
    if min(bm, bk, bn) < 1:
        raise ValueError("blocks must be positive")
    L: list[str] = []
    params = [""] * g.nparams
    params[g.a] = f"  A = s8[{g.m},{g.k}] parameter({g.a})"
    params[g.b] = f"  B = s8[{g.k},{g.n}] parameter({g.b})"
    if g.bias is not None:
        params[g.bias] = f"  bias = s32[{g.n}] parameter({g.bias})"
    L += params
    L += ["  z = s32[] constant(0)", "  z8 = s8[] constant(0)"]
    rows = []
    for i, (i0, r) in enumerate(tiles(g.m, bm)):
        cols = []
        for j, (j0, c) in enumerate(tiles(g.n, bn)):
            t = f"t{i}_{j}"
            acc = None
            if g.bias is not None:
                L.append(f"  {t}_bs = s32[{c}] slice(bias), slice={{[{j0}:{j0 + c}]}}")
                L.append(f"  {t}_b = s32[{r},{c}] broadcast({t}_bs), dimensions={{1}}")
                acc = f"{t}_b"
            for q, (q0, kk) in enumerate(tiles(g.k, bk)):
                p = f"{t}_{q}"
                L.append(f"  {p}_a = s8[{r},{kk}] slice(A), slice={{[{i0}:{i0 + r}], [{q0}:{q0 + kk}]}}")
                L.append(f"  {p}_a32 = s32[{r},{kk}] convert({p}_a)")
                L.append(f"  {p}_ap = s32[{bm},{bk}] pad({p}_a32, z), padding=0_{bm - r}x0_{bk - kk}")
                L.append(f"  {p}_b = s8[{kk},{c}] slice(B), slice={{[{q0}:{q0 + kk}], [{j0}:{j0 + c}]}}")
                L.append(f"  {p}_b32 = s32[{kk},{c}] convert({p}_b)")
                L.append(f"  {p}_bp = s32[{bk},{bn}] pad({p}_b32, z), padding=0_{bk - kk}x0_{bn - c}")
                L.append(f"  {p}_d = s32[{bm},{bn}] dot({p}_ap, {p}_bp), lhs_contracting_dims={{1}}, "
                         "rhs_contracting_dims={0}")
                L.append(f"  {p}_s = s32[{r},{c}] slice({p}_d), slice={{[0:{r}], [0:{c}]}}")
                if acc is None:
                    acc = f"{p}_s"
                else:
                    L.append(f"  {p}_acc = s32[{r},{c}] add({acc}, {p}_s)")
                    acc = f"{p}_acc"
            cols.append(_tail(L, g, t, acc, r, c))
        rows.append(_concat(L, f"row{i}", cols, 1, (r, g.n), "s32" if g.tail.raw else "s8"))
    out = _concat(L, "out", rows, 0, (g.m, g.n), "s32" if g.tail.raw else "s8")
    L.append(f"  ROOT result = {'s32' if g.tail.raw else 's8'}[{g.m},{g.n}] copy({out})")
    return parse_hlo("HloModule tiled\nENTRY tiled {\n" + "\n".join(L) + "\n}\n")


def _concat(L: list[str], name: str, parts: list[str], dim: int, shape: tuple[int, int], dt: str) -> str:
    if len(parts) == 1:
        return parts[0]
    L.append(f"  {name} = {dt}[{shape[0]},{shape[1]}] concatenate({', '.join(parts)}), dimensions={{{dim}}}")
    return name


def _tail(L: list[str], g: Gemm, t: str, acc: str, r: int, c: int) -> str:
    tl = g.tail
    if tl.scale is None:
        return acc
    sh = f"[{r},{c}]"
    L.append(f"  {t}_f = f32{sh} convert({acc})")
    src = f"{t}_f"
    if tl.scale != 1.0 or not math.isfinite(tl.scale):
        L.append(f"  {t}_kb = u32[] constant({scale_bits(tl.scale)})")
        L.append(f"  {t}_k = f32[] bitcast-convert({t}_kb)")
        L.append(f"  {t}_kk = f32{sh} broadcast({t}_k), dimensions={{}}")
        L.append(f"  {t}_m = f32{sh} multiply({t}_f, {t}_kk)")
        src = f"{t}_m"
    L.append(f"  {t}_r = f32{sh} round-nearest-even({src})")
    L.append(f"  {t}_lo = f32[] constant(-128)")
    L.append(f"  {t}_hi = f32[] constant(127)")
    L.append(f"  {t}_c = f32{sh} clamp({t}_lo, {t}_r, {t}_hi)")
    L.append(f"  {t}_o = s8{sh} convert({t}_c)")
    if not tl.relu:
        return f"{t}_o"
    L.append(f"  {t}_zb = s8{sh} broadcast(z8), dimensions={{}}")
    L.append(f"  {t}_y = s8{sh} maximum({t}_o, {t}_zb)")
    return f"{t}_y"
