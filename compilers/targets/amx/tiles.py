"""AMX's offers to the middle end (records with the attributes of the protocol
:class:`compilers.middle.schedule.TileTarget`) for int8 GEMM layers: 16 x 64 x 16 blocks in tile
registers, B in VNNI layout (``s8[K,N]{1,0:T(4,1)}``: TDPBSSD reads B as ceil(K/4) rows of 4N bytes,
the weights pre-packed as oneDNN keeps them), the tail on AVX-512 lanes; and (``GEMM_TILES.others``)
for ``f32[M,N] dot(bf16[M,K], bf16[K,N])``: 16 rows x 32 bf16 x 16 blocks, B in pair layout
(``bf16[K,N]{1,0:T(2,1)}``: TDPBF16PS reads B as ceil(K/2) rows of N bf16 pairs, 4N bytes), ``mul``
= ``tilezero`` then ``tdpbf16ps``, the f32 accumulators stored raw. Its result is the blocked sum
of :mod:`.bf16_sum` (bit for bit) and within that module's bound of the reference's f32 chain.

- Every tile is used with one shape, 16 rows x 64 bytes (palette 1 has one configuration per
  program, :mod:`.emit_c`): ``pack`` first copies A and B's image into whole-block copies whose
  bytes past the matrix are zero (``vmovdqu8`` masked loads and stores, at most 64 bytes each),
  so a remainder block multiplies zeros, and rows and columns of C past the matrix are computed
  but never stored.
- Registers: C in tmm0 / tmm1 (two accumulators), operands in tmm2..tmm7; ``mul`` is
  ``tilezero`` (first contraction block) then ``tdpbssd`` (s8 x s8 -> s32, wrapping adds).
- ``store``: ``tilestored`` of C to a 1 KiB staging area, then per row of the tile: the row's
  int32 lanes (``vmovdqu8_load``), the bias added (``vpaddd``; loaded once per tile), then either
  stored raw, or ``vcvtdq2ps``, ``vmulps`` by the scale (omitted for 1.0), ``vmaxps`` / ``vminps``
  with -128.0 / 127.0, ``vcvtps2dq`` (round to nearest even), ``vpmaxsd`` with 0 for ReLU,
  ``vpaddd`` 128, ``vpmovusdb`` (the values are now 0..255), ``vpsubb`` 0x80 (back to s8) and a
  masked store of the row's bytes.

Why this is the tail: the clamp bounds are integers, so clamping before the round-to-integer
equals clamping after it, and a clamped value cannot overflow ``vcvtps2dq``; ``f32(x) * scale``
of an integer x is 0 or at least |scale| in magnitude, never subnormal for the scales taken
(0 or at least 2^-126); the (x + 128) byte minus 0x80 modulo 256 is x's two's-complement byte.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ...program import Concrete
from ...tile_offer import TileOffer
from .bf16_sum import blocked_sum, sum_bound
from .description import TILE_BYTES, TILE_ROWS

__all__ = ["GEMM_TILES", "GEMM_TILES_BF16"]


# zmm registers of the store path
W, BIAS, SCALE, LO, HI, ZERO, C128, X80 = range(8)
_CONSTS = (SCALE, LO, HI, C128, X80)


def _c(name: str, **attrs: int) -> Concrete:
    return Concrete(name, tuple(attrs.items()))


def _scale_ok(scale: float) -> str | None:
    """Finite, and 0 or at least 2^-126 in magnitude (f32(x) * scale is then never subnormal)."""
    if not math.isfinite(scale) or (scale != 0 and abs(scale) < 2.0 ** -126):
        return "the AVX-512 tail takes finite scales of magnitude 0 or at least 2^-126"
    return None


def _constants(tail: Any) -> bytes:
    if tail.raw:
        return b""
    return struct.pack("<fffiI", tail.scale, -128.0, 127.0, 128, 0x80808080)


def _prologue(at: int, tail: Any) -> list[Concrete]:
    if tail.raw:
        return []
    out = [_c("vbroadcastss", dst=z, addr=at + 4 * i) for i, z in enumerate(_CONSTS)]
    return out + [_c("vpxord", dst=ZERO, a=ZERO, b=ZERO)]


def _pack(rows: int, nbytes: int, src: int, dst: int, src_stride: int, dst_stride: int) -> list[Concrete]:
    out = []
    for r in range(rows):
        for b0 in range(0, nbytes, 64):
            n = min(64, nbytes - b0)
            out.append(_c("vmovdqu8_load", n=n, dst=W, addr=src + r * src_stride + b0))
            out.append(_c("vmovdqu8_store", n=n, src=W, addr=dst + r * dst_stride + b0))
    return out


def _load(r: int, c: int, dram: int, t: int, stride: int) -> list[Concrete]:
    return [_c("tileloadd", rows=TILE_ROWS, colsb=TILE_BYTES, stride=stride, t=t, addr=dram)]


def _mul(r: int, kk: int, c: int, a: int, b: int, acc: int, accumulate: int, load_weights: int) -> list[Concrete]:
    out = [] if accumulate else [_c("tilezero", t=acc)]
    return out + [_c("tdpbssd", m=TILE_ROWS, k=TILE_BYTES // 4, n=TILE_BYTES // 4, c=acc, a=a, b=b)]


def _store(r: int, c: int, dram: int, acc: int, bias_dram: int, scratch: int, stride: int, tail: Any,
           has_bias: bool) -> list[Concrete]:
    out = [_c("tilestored", rows=TILE_ROWS, colsb=TILE_BYTES, stride=TILE_BYTES, t=acc, addr=scratch)]
    if has_bias:
        out.append(_c("vmovdqu8_load", n=4 * c, dst=BIAS, addr=bias_dram))
    for row in range(r):
        out.append(_c("vmovdqu8_load", n=4 * c, dst=W, addr=scratch + row * TILE_BYTES))
        if has_bias:
            out.append(_c("vpaddd", dst=W, a=W, b=BIAS))
        if tail.raw:
            out.append(_c("vmovdqu8_store", n=4 * c, src=W, addr=dram + row * stride))
            continue
        out.append(_c("vcvtdq2ps", dst=W, src=W))
        if tail.scale != 1.0:
            out.append(_c("vmulps", dst=W, a=W, b=SCALE))
        out += [_c("vmaxps", dst=W, a=W, b=LO), _c("vminps", dst=W, a=W, b=HI), _c("vcvtps2dq", dst=W, src=W)]
        if tail.relu:
            out.append(_c("vpmaxsd", dst=W, a=W, b=ZERO))
        out += [_c("vpaddd", dst=W, a=W, b=C128), _c("vpmovusdb", dst=W, src=W), _c("vpsubb", dst=W, a=W, b=X80),
                _c("vmovdqu8_store", n=c, src=W, addr=dram + row * stride)]
    return out


def _mul_bf16(r: int, kk: int, c: int, a: int, b: int, acc: int, accumulate: int,
              load_weights: int) -> list[Concrete]:
    out = [] if accumulate else [_c("tilezero", t=acc)]
    return out + [_c("tdpbf16ps", m=TILE_ROWS, k=TILE_BYTES // 4, n=TILE_BYTES // 4, c=acc, a=a, b=b)]


GEMM_TILES_BF16 = TileOffer(block=(TILE_ROWS, TILE_BYTES, TILE_BYTES // 4), operand_blocks=6, acc_blocks=2,
                            scale_ok=_scale_ok, layouts=("", "{1,0:T(2,1)}"), one_block_to_act=False,
                            b_group=4, scratch_bytes=TILE_ROWS * TILE_BYTES,
                            operand_addr=lambda s: 2 + s, acc_addr=lambda s: s, constants=_constants,
                            prologue=_prologue, pack=_pack, load_a=_load, load_b=_load, bias=None, mul=_mul_bf16,
                            store=_store, dtype="bf16", blocked_sum=blocked_sum, sum_bound=sum_bound)

GEMM_TILES = TileOffer(block=(TILE_ROWS, TILE_BYTES, TILE_BYTES // 4), operand_blocks=6, acc_blocks=2,
                 scale_ok=_scale_ok, layouts=("", "{1,0:T(4,1)}"), one_block_to_act=False,
                 b_group=4, scratch_bytes=TILE_ROWS * TILE_BYTES,
                 operand_addr=lambda s: 2 + s, acc_addr=lambda s: s, constants=_constants, prologue=_prologue,
                 pack=_pack, load_a=_load, load_b=_load, bias=None, mul=_mul, store=_store,
                 others=(GEMM_TILES_BF16,))
