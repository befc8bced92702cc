"""AMX's offers to the middle end (records with the attributes of the protocol
:class:`compilers.middle.schedule.TileTarget`) for int8 GEMM layers: 16 x 64 x 16 blocks in tile
registers, B in VNNI layout (``s8[K,N]{1,0:T(4,1)}``: TDPBSSD reads B as ceil(K/4) rows of 4N bytes,
the weights pre-packed as oneDNN keeps them), the tail on AVX-512 lanes; and (``GEMM_TILES.others``)
for ``f32[M,N] dot(bf16[M,K], bf16[K,N])``: 16 rows x 32 bf16 x 16 blocks, B in pair layout
(``bf16[K,N]{1,0:T(2,1)}``: TDPBF16PS reads B as ceil(K/2) rows of N bf16 pairs, 4N bytes), ``mul``
= ``tilezero`` then ``tdpbf16ps``, the f32 accumulators stored raw. Its result is the blocked sum
of :mod:`.bf16_sum` (bit for bit) and within that module's bound of the reference's f32 chain.

- Row-major weights (``GEMM_TILES.row_major_b``, ``GEMM_TILES_BF16.row_major_b``): B as a user
  keeps it; the program builds the VNNI (pair) copy itself with ``vpermt2b`` byte permutes
  (:func:`_pack_b`, :func:`_pack_b_bf16`; index vectors in the constant section, zmm8..zmm21).
- Every tile is used with one shape (palette 1 has one configuration per program,
  :mod:`.emit_c`), 16 rows x 64 bytes, or for a layer with a dimension that fits in one tile
  that dimension's size (:func:`_fitter`): ``pack`` first copies A and B's image into
  whole-block copies whose bytes past the matrix are zero (``vmovdqu8`` masked loads and stores,
  at most 64 bytes each), so a remainder block multiplies zeros, and rows and columns of C past
  the matrix are computed but never stored.
- Registers: C in tmm0 / tmm1 (two accumulators), operands in tmm2..tmm7; ``mul`` is
  ``tilezero`` (first contraction block) then ``tdpbssd`` (s8 x s8 -> s32, wrapping adds), or
  ``tdpbusd`` for a layer of u8 activations (``GEMM_TILES_U8``, among ``GEMM_TILES.others``).
- ``transpose`` / ``copy`` (a convolution's NCHW / OIHW moves): one-byte moves / the pack's rows.
- ``resadd`` (the residual add of :mod:`compilers.middle.glue`): per row of 64 bytes ``vpaddsb``
  (signed saturating byte add), ``vpmaxsb`` with zero for ReLU.
- ``store``: ``tilestored`` of C to a 1 KiB staging area, then per row of the tile: the row's
  int32 lanes (``vmovdqu8_load``), the bias added (``vpaddd``; loaded once per tile), then either
  stored raw, or ``vcvtdq2ps``, ``vmulps`` by the scale (omitted for 1.0), ``vmaxps`` / ``vminps``
  with -128.0 / 127.0, ``vcvtps2dq`` (round to nearest even), ``vpmaxsd`` with 0 for ReLU,
  ``vpaddd`` 128, ``vpmovusdb`` (the values are now 0..255), ``vpsubb`` 0x80 (back to s8) and a
  masked store of the row's bytes; for a u8 result (``Tail.u8``: bounds 0.0 / 255.0) the values
  after ``vcvtps2dq`` are 0..255 and ``vpmovusdb_store`` writes a row of 16 of them (a narrower
  row: ``vpmovusdb`` and the masked store); for an s8 x s8 -> s8 dot (``Tail.wrap``) ``vpmovdb`` (each
  lane's low byte: the wrapping sum modulo 256) and the store.

Why this is the tail: the clamp bounds are integers, so clamping before the round-to-integer
equals clamping after it, and a clamped value cannot overflow ``vcvtps2dq``; ``f32(x) * scale``
of an integer x is 0 or at least |scale| in magnitude, never subnormal for the scales taken
(0 or at least 2^-126); the (x + 128) byte minus 0x80 modulo 256 is x's two's-complement byte.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any

from ...program import Concrete
from ...tile_offer import TileOffer
from .bf16_sum import blocked_sum, blocked_sum_in, sum_bound
from .description import STRIDE, TILE_BYTES, TILE_ROWS

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
    if tail.raw or tail.wrap:
        return b""
    lo, hi = tail.bounds
    return struct.pack("<fffiI", tail.scale, float(lo), float(hi), 128, 0x80808080)


def _prologue(at: int, tail: Any) -> list[Concrete]:
    if tail.raw or tail.wrap:
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


#: the whole tile: 16 rows of 64 bytes (A: 16 x 64 bytes of K; B: 16 VNNI rows of 16 columns)
_FULL = (TILE_ROWS, TILE_BYTES, TILE_BYTES // 4)


def _loader(rows: int, colsb: int) -> Any:
    """A ``load_a`` / ``load_b`` kernel: one ``tileloadd`` of ``rows`` x ``colsb`` bytes."""
    def load(r: int, c: int, dram: int, t: int, stride: int) -> list[Concrete]:
        return [_c("tileloadd", rows=rows, colsb=colsb, stride=stride, t=t, addr=dram)]
    return load


_load = _loader(TILE_ROWS, TILE_BYTES)


def _mul_with(product: str, shape: tuple[int, int, int] = _FULL) -> Any:
    """The ``mul`` kernel whose tile product is ``product`` (``tdpbssd``: s8 x s8; ``tdpbusd``: u8 A
    x s8 B; both sum into s32 with wrapping adds; ``tdpbf16ps``) on tiles of ``shape`` = (rows,
    bytes of K, columns)."""
    m, kb, n = shape

    def mul(r: int, kk: int, c: int, a: int, b: int, acc: int, accumulate: int, load_weights: int) -> list[Concrete]:
        out = [] if accumulate else [_c("tilezero", t=acc)]
        return out + [_c(product, m=m, k=kb // 4, n=n, c=acc, a=a, b=b)]
    mul.product = product       # type: ignore[attr-defined]
    return mul


_mul = _mul_with("tdpbssd")


def _store(r: int, c: int, dram: int, acc: int, bias_dram: int, scratch: int, stride: int, tail: Any,
           has_bias: bool, shape: tuple[int, int] = (TILE_ROWS, TILE_BYTES // 4)) -> list[Concrete]:
    out = [_c("tilestored", rows=shape[0], colsb=4 * shape[1], stride=TILE_BYTES, t=acc, addr=scratch)]
    if has_bias:
        out.append(_c("vmovdqu8_load", n=4 * c, dst=BIAS, addr=bias_dram))
    for row in range(r):
        out.append(_c("vmovdqu8_load", n=4 * c, dst=W, addr=scratch + row * TILE_BYTES))
        if has_bias:
            out.append(_c("vpaddd", dst=W, a=W, b=BIAS))
        if tail.raw:
            out.append(_c("vmovdqu8_store", n=4 * c, src=W, addr=dram + row * stride))
            continue
        if tail.wrap:       # the low byte of each lane (an s8 x s8 -> s8 dot)
            out += [_c("vpmovdb", dst=W, src=W), _c("vmovdqu8_store", n=c, src=W, addr=dram + row * stride)]
            continue
        out.append(_c("vcvtdq2ps", dst=W, src=W))
        if tail.scale != 1.0:
            out.append(_c("vmulps", dst=W, a=W, b=SCALE))
        out += [_c("vmaxps", dst=W, a=W, b=LO), _c("vminps", dst=W, a=W, b=HI), _c("vcvtps2dq", dst=W, src=W)]
        if tail.u8:         # 0..255 already: the unsigned saturating narrowing is exact
            out += ([_c("vpmovusdb_store", src=W, addr=dram + row * stride)] if c == 16 else
                    [_c("vpmovusdb", dst=W, src=W), _c("vmovdqu8_store", n=c, src=W, addr=dram + row * stride)])
            continue
        if tail.relu:
            out.append(_c("vpmaxsd", dst=W, a=W, b=ZERO))
        out += [_c("vpaddd", dst=W, a=W, b=C128), _c("vpmovusdb", dst=W, src=W), _c("vpsubb", dst=W, a=W, b=X80),
                _c("vmovdqu8_store", n=c, src=W, addr=dram + row * stride)]
    return out


def _resadd(r: int, c: int, a: int, b: int, dst: int, acc: int, stride: int, relu: int) -> list[Concrete]:
    """Per row: the two rows' bytes, ``vpaddsb`` (signed saturating), ``vpmaxsb`` with zero for
    ReLU, the masked store (``acc`` unused: no tile is involved)."""
    out = [_c("vpxord", dst=ZERO, a=ZERO, b=ZERO)] if relu else []
    for row in range(r):
        out += [_c("vmovdqu8_load", n=c, dst=W, addr=a + row * stride),
                _c("vmovdqu8_load", n=c, dst=BIAS, addr=b + row * stride),
                _c("vpaddsb", dst=W, a=W, b=BIAS)]
        if relu:
            out.append(_c("vpmaxsb", dst=W, a=W, b=ZERO))
        out.append(_c("vmovdqu8_store", n=c, src=W, addr=dst + row * stride))
    return out


def _spread(n: int, src: int, dst: int, acc: int, dst_stride: int) -> list[Concrete]:
    """``n`` bytes at ``src`` to ``dst`` every ``dst_stride`` bytes: one-byte masked moves."""
    out = []
    for i in range(n):
        out += [_c("vmovdqu8_load", n=1, dst=W, addr=src + i), _c("vmovdqu8_store", n=1, src=W, addr=dst + i * dst_stride)]
    return out


def _transpose(r: int, c: int, src: int, dst: int, consts_at: int, src_stride: int, dst_stride: int) -> list[Concrete]:
    """The ``r x c`` byte block at ``src`` transposed to ``dst`` byte by byte (one-byte masked moves:
    the tiles' rows are at least 4 bytes, so they do not transpose bytes)."""
    out = []
    for i in range(r):
        for j in range(c):
            out += [_c("vmovdqu8_load", n=1, dst=W, addr=src + i * src_stride + j),
                    _c("vmovdqu8_store", n=1, src=W, addr=dst + j * dst_stride + i)]
    return out


_mul_bf16 = _mul_with("tdpbf16ps")


def _fitter(fit_k: bool = True, fit_n: bool = True) -> Any:
    """The offer's ``fit`` (:meth:`~compilers.tile_offer.TileOffer.fitted`): for a layer of ``m``
    rows, ``kb`` bytes of K and ``n`` columns, a dimension that fits in one tile is computed at its
    size (rounded up to whole 4-byte groups for K), not padded to the tile: one tile configuration
    still serves the whole program, since every block has that size. A batch-1 layer runs 1-row
    tiles, not 16. A bf16 layer's model is then the blocked sum in blocks of its K
    (:func:`.bf16_sum.blocked_sum_in`: the chains the program runs, without the padded pairs).
    ``fit_n`` off where B is gathered 16 columns at a time (``transposed_b``)."""
    def fit(o: TileOffer, m: int, kb: int, n: int) -> TileOffer:
        bm0, bk0, bn0 = o.block
        bm, bn = min(bm0, m), (min(bn0, n) if fit_n else bn0)
        bk = min(bk0, -(-kb // 4) * 4) if fit_k else bk0
        if (bm, bk, bn) == o.block:
            return o
        product = o.mul.product      # type: ignore[attr-defined]

        def store(r: int, c: int, dram: int, acc: int, bias_dram: int, scratch: int, stride: int, tail: Any,
                  has_bias: bool) -> list[Concrete]:
            return _store(r, c, dram, acc, bias_dram, scratch, stride, tail, has_bias, shape=(bm, bn))
        model = o.blocked_sum if o.blocked_sum is None or bk == bk0 else blocked_sum_in(bk // 2)
        return dataclasses.replace(o, block=(bm, bk, bn), load_a=_loader(bm, bk), load_b=_loader(bk // 4, 4 * bn),
                                   mul=_mul_with(product, (bm, bk, bn)), store=store, fit=None, blocked_sum=model)
    return fit


# the row-major B repack (``pack_b``): index vectors and working registers (zmm8 and up)
IP0, IP1, IO0, IO1, ZR = 8, 9, 10, 11, 12
_R = (13, 14, 15, 16)
_P, _Q, _O = (17, 18), (19, 20), 21


def _vnni_indices() -> bytes:
    """vpermt2b index vectors of the VNNI repack: ``IP_h`` pairs rows 0 and 1 (or 2 and 3) column
    by column (byte 2j + t = row t's column 32h + j); ``IO_e`` interleaves two such pair vectors
    into 4-byte groups (byte 4j + t = pair t // 2's byte 2(16e + j) + t % 2)."""
    ip = [bytes((64 * (i % 2) + 32 * h + i // 2) for i in range(64)) for h in (0, 1)]
    io = [bytes((64 * ((i % 4) // 2) + 2 * (16 * e + i // 4) + i % 2) for i in range(64)) for e in (0, 1)]
    return b"".join(ip + io)


def _constants_rows(tail: Any) -> bytes:
    return _constants(tail) + _vnni_indices()


def _prologue_rows(at: int, tail: Any) -> list[Concrete]:
    at_idx = at + len(_constants(tail))
    return _prologue(at, tail) + [_c("vmovdqu8_load", n=64, dst=z, addr=at_idx + 64 * i)
                                  for i, z in enumerate((IP0, IP1, IO0, IO1))] + [_c("vpxord", dst=ZR, a=ZR, b=ZR)]


def _pack_b(rows: int, n: int, krows: int, src: int, dst: int, src_stride: int, dst_stride: int,
            block_stride: int) -> list[Concrete]:
    """``rows`` VNNI rows (4 rows of K each, ``krows`` of them present, the rest zero) of an
    ``n``-column row-major s8 B into the packed copy: per 64 columns, four row loads, two pair
    permutes per half, one interleave and one store per 16 columns (4 bytes a column), column
    block ``g`` of the copy ``block_stride`` bytes after block ``g - 1``."""
    out: list[Concrete] = []
    for r in range(rows):
        present = min(4, krows - 4 * r)
        for n0 in range(0, n, 64):
            cw = min(64, n - n0)
            regs = []
            for t in range(4):
                if t < present:
                    out.append(_c("vmovdqu8_load", n=cw, dst=_R[t], addr=src + (4 * r + t) * src_stride + n0))
                    regs.append(_R[t])
                else:
                    regs.append(ZR)
            halves = -(-cw // 32)
            for h in range(halves):
                out.append(_c("vpermt2b", dst=_P[h], a=regs[0], idx=(IP0, IP1)[h], b=regs[1]))
                out.append(_c("vpermt2b", dst=_Q[h], a=regs[2], idx=(IP0, IP1)[h], b=regs[3]))
            for q in range(-(-cw // 16)):
                out.append(_c("vpermt2b", dst=_O, a=_P[q // 2], idx=(IO0, IO1)[q % 2], b=_Q[q // 2]))
                out.append(_c("vmovdqu8_store", n=4 * min(16, cw - 16 * q), src=_O,
                              addr=dst + r * dst_stride + (n0 // 16 + q) * block_stride))
    return out


def _pack_b_bf16(rows: int, n: int, krows: int, src: int, dst: int, src_stride: int,
                 dst_stride: int, block_stride: int) -> list[Concrete]:
    """``rows`` pair rows (2 rows of K each, ``krows`` present) of an ``n``-column row-major bf16 B
    into the packed copy: per 32 columns, two row loads and per 16 columns one interleave of 2-byte
    elements (``IO_e``: byte 4j + t = row t // 2's byte 2(16e + j) + t % 2) and one store."""
    out: list[Concrete] = []
    for r in range(rows):
        present = min(2, krows - 2 * r)
        for n0 in range(0, n, 32):
            cw = min(32, n - n0)
            regs = []
            for t in range(2):
                if t < present:
                    out.append(_c("vmovdqu8_load", n=2 * cw, dst=_R[t], addr=src + (2 * r + t) * src_stride + 2 * n0))
                    regs.append(_R[t])
                else:
                    regs.append(ZR)
            for q in range(-(-cw // 16)):
                out.append(_c("vpermt2b", dst=_O, a=regs[0], idx=(IO0, IO1)[q], b=regs[1]))
                out.append(_c("vmovdqu8_store", n=4 * min(16, cw - 16 * q), src=_O,
                              addr=dst + r * dst_stride + (n0 // 16 + q) * block_stride))
    return out


GEMM_TILES_BF16 = TileOffer(block=(TILE_ROWS, TILE_BYTES, TILE_BYTES // 4), operand_blocks=6, acc_blocks=2,
                            scale_ok=_scale_ok, layouts=("", "{1,0:T(2,1)}"), one_block_to_act=False,
                            b_group=4, scratch_bytes=TILE_ROWS * TILE_BYTES,
                            operand_addr=lambda s: 2 + s, acc_addr=lambda s: s, constants=_constants,
                            prologue=_prologue, pack=_pack, load_a=_load, load_b=_load, bias=None, mul=_mul_bf16,
                            store=_store, dtype="bf16", blocked_sum=blocked_sum, sum_bound=sum_bound,
                            max_stride=STRIDE[-1], fit=_fitter())

# B stored [N, K] (``transposed_b``): tmm7 gathers a column of dwords (16 rows of B^T, 4 bytes
# each: one VNNI row's 16 columns), the operand blocks keep tmm2..tmm6; masks clear the bytes past
# K of the last group (zmm22..24: its first 1, 2, 3 bytes kept)
T_GATHER = 7
_MASKS = (22, 23, 24)


def _constants_bt(tail: Any) -> bytes:
    return _constants(tail) + struct.pack("<III", 0xFF, 0xFFFF, 0xFFFFFF)


def _prologue_bt(at: int, tail: Any) -> list[Concrete]:
    at_m = at + len(_constants(tail))
    return _prologue(at, tail) + [_c("vbroadcastss", dst=z, addr=at_m + 4 * i) for i, z in enumerate(_MASKS)]


def _pack_bt(elem: int) -> Any:
    """The ``pack_b`` of a B stored ``[N, K]`` of ``elem``-byte elements: VNNI (pair) row ``r``,
    column ``n`` is the 4 bytes at ``B + n * src_stride + 4r``, so one ``tileloadd`` of 16 rows x 4
    bytes (stride: B's row) reads 16 columns of the row and one ``tilestored`` of stride 4 writes
    them as the copy's 64-byte row. Columns past N read bytes beyond B into columns of C that are
    never stored; bytes past K in the last group are cleared (``vpandd`` with a mask). Rows shorter
    than 4 bytes (a tile load's stride is at least its row) are moved column by column."""
    group = 4 // elem                         # rows of K in one 4-byte group

    def pack(rows: int, n: int, krows: int, src: int, dst: int, src_stride: int, dst_stride: int,
             block_stride: int) -> list[Concrete]:
        out: list[Concrete] = []
        for r in range(rows):
            keep = min(group, krows - group * r) * elem          # bytes of the group inside K
            if src_stride < 4:      # B's rows shorter than a group: a tile load cannot stride them
                for c in range(n):
                    out += [_c("vmovdqu8_load", n=keep, dst=W, addr=src + c * src_stride + 4 * r),
                            _c("vmovdqu8_store", n=4, src=W,
                               addr=dst + r * dst_stride + (c // 16) * block_stride + 4 * (c % 16))]
                continue
            for n0 in range(0, n, 16):
                at = dst + r * dst_stride + (n0 // 16) * block_stride
                out += [_c("tileloadd", rows=TILE_ROWS, colsb=4, stride=src_stride, t=T_GATHER,
                           addr=src + n0 * src_stride + 4 * r),
                        _c("tilestored", rows=TILE_ROWS, colsb=4, stride=4, t=T_GATHER, addr=at)]
                if keep < 4:
                    out += [_c("vmovdqu8_load", n=64, dst=W, addr=at), _c("vpandd", dst=W, a=W, b=_MASKS[keep - 1]),
                            _c("vmovdqu8_store", n=64, src=W, addr=at)]
        return out
    return pack


#: f32 layers of bf16 operands whose weights are row-major: the program builds the pair layout
GEMM_TILES_BF16_ROWS = dataclasses.replace(GEMM_TILES_BF16, layouts=("", ""), constants=_constants_rows,
                                           prologue=_prologue_rows, pack_b=_pack_b_bf16)
GEMM_TILES_BF16_T = dataclasses.replace(GEMM_TILES_BF16, layouts=("", ""), operand_blocks=5,
                                        constants=_constants_bt, prologue=_prologue_bt, pack_b=_pack_bt(2),
                                        fit=_fitter(fit_n=False))
GEMM_TILES_BF16 = dataclasses.replace(GEMM_TILES_BF16, row_major_b=GEMM_TILES_BF16_ROWS,
                                      transposed_b=GEMM_TILES_BF16_T)

GEMM_TILES = TileOffer(block=(TILE_ROWS, TILE_BYTES, TILE_BYTES // 4), operand_blocks=6, acc_blocks=2,
                 scale_ok=_scale_ok, layouts=("", "{1,0:T(4,1)}"), one_block_to_act=False,
                 b_group=4, scratch_bytes=TILE_ROWS * TILE_BYTES,
                 operand_addr=lambda s: 2 + s, acc_addr=lambda s: s, constants=_constants, prologue=_prologue,
                 pack=_pack, load_a=_load, load_b=_load, bias=None, mul=_mul, store=_store,
                 others=(GEMM_TILES_BF16,), low_byte=True, unsigned_out=True, max_stride=STRIDE[-1], resadd=_resadd,
                 spread=_spread, transpose=_transpose, copy=_pack, fit=_fitter())

#: int8 layers whose weights are row-major (as a user keeps them): the program repacks B into the
#: VNNI layout itself (:func:`_pack_b`, counted in its cost) before the tiles read it
GEMM_TILES_ROWS = dataclasses.replace(GEMM_TILES, layouts=("", ""), constants=_constants_rows,
                                      prologue=_prologue_rows, pack_b=_pack_b)
#: int8 layers whose weights are stored [N, K] (PyTorch): the program gathers B's rows as columns
GEMM_TILES_T = dataclasses.replace(GEMM_TILES, layouts=("", ""), operand_blocks=5, constants=_constants_bt,
                                   prologue=_prologue_bt, pack_b=_pack_bt(1), fit=_fitter(fit_n=False))

#: int8 layers of unsigned activations (A u8, B s8: a quantized layer after a ReLU, oneDNN's u8s8s32):
#: the same tiles, packing and tail, the product ``tdpbusd``; B in any of the three layouts
_MUL_U8 = _mul_with("tdpbusd")
GEMM_TILES_U8 = dataclasses.replace(
    GEMM_TILES, dtype="u8", mul=_MUL_U8, others=(), resadd=None, spread=None, transpose=None, copy=None,
    row_major_b=dataclasses.replace(GEMM_TILES_ROWS, dtype="u8", mul=_MUL_U8, others=()),
    transposed_b=dataclasses.replace(GEMM_TILES_T, dtype="u8", mul=_MUL_U8, others=()))
GEMM_TILES = dataclasses.replace(GEMM_TILES, row_major_b=GEMM_TILES_ROWS, transposed_b=GEMM_TILES_T,
                                 others=(GEMM_TILES_BF16, GEMM_TILES_U8))
