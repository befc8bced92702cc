"""Gemmini's offer to the middle end (a record with the attributes of the protocol
:class:`compilers.middle.schedule.TileTarget`): DIM-sized
blocks, the scratchpad and accumulator capacities in blocks, and one micro-kernel per step.

- ``load_a`` / ``load_b``: one ``mvin_spad`` (rows x cols int8 with the matrix's row pitch as
  stride, scale 1.0); a block of fewer than DIM rows or columns is padded by the array itself
  (``preload_ws`` and ``matmul_ws_*`` zero-pad their operands to DIM x DIM: identity 1 of
  :mod:`compilers.middle.tiled`).
- ``bias``: the bias row into every accumulator row of the block at once (``mvin_acc_bcast``: one
  MVIN2 with a DRAM stride of 0, the repeating bias of Gemmini's own tiled matmul; a tile-only
  instruction of the description).
- ``mul``: ``preload_ws`` of the B block (only when the weights change) then ``matmul_ws_acc``
  with the accumulate flag (bit 30): the contraction split of identity 2.
- ``store``: ``mvout_acc`` with ``acc_scale`` and ReLU (the tail in the store path) or
  ``mvout_acc_raw`` for an int32 result.
- ``resadd``: two ``mvin_acc_s8`` (the second accumulating) and ``mvout_acc`` at scale 1.0 with
  the ReLU bit: ``relu?(sat8(a + b))``, the residual add of Gemmini's ``tiled_resadd``.
- B stored ``[N, K]`` (``transposed_b``): ``load_b`` moves the block in as stored (``c`` rows of
  ``kk`` bytes) and ``mul`` preloads it with ``preload_ws_t`` (B_transpose; rows / cols as the
  array sees B, Spike's gemmini.cc).
- an s8 x s8 -> s8 dot (``wrap``): the store writes the raw int32 block to an HBM staging area,
  then per row moves its low bytes in as a column (DRAM stride 4) and out as the row.
- ``transpose`` (a convolution's NCHW / OIHW moves, :mod:`compilers.middle.layouts`): the block
  moved in, preloaded with B_transpose and multiplied by the identity; ``copy``: moved in and out.
- ``spread``: a row of int8 values moved in as a column of an accumulator block (DRAM stride 1)
  and out as a column at another stride (a depthwise layer's weights along a diagonal).

``overlap``: each kernel is whole commands on one unit (load, execute or store) and only
``preload_ws`` leaves state (the array's weights, which no move touches), so the schedule spreads
stores and the next A panel's loads between multiplies: the load, execute and store units then
find independent commands inside the command queue.

Each WS block product is at most DIM * 2^14 in magnitude (2^18 at DIM 16), inside the array's
20-bit range, so the array's wrap never changes a value; sums across blocks are the
accumulator's wrapping int32 adds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...program import Concrete
from ...tile_offer import TileOffer
from .description import ACC_ROWS, DIM, ONE, SCALES, SPAD_ROWS, STRIDES, f32_bits

__all__ = ["TILES"]



def _c(name: str, **attrs: int) -> Concrete:
    return Concrete(name, tuple(attrs.items()))


def _scale_ok(scale: float) -> str | None:
    """The store path's acc_scale takes the description's SCALES (its α domain)."""
    if f32_bits(scale) not in _SCALES:
        return "not in the description's scale domain (SCALES)"
    return None


_SCALES = frozenset(SCALES)


def _load(r: int, c: int, dram: int, sp: int, stride: int) -> list[Concrete]:
    return [_c("mvin_spad", rows=r, cols=c, stride=stride, scale=ONE, dram=dram, sp=sp)]


def _bias(r: int, c: int, dram: int, ac: int) -> list[Concrete]:
    return [_c("mvin_acc_bcast", rows=r, cols=c, accumulate=0, dram=dram, ac=ac)]


def _mul(r: int, kk: int, c: int, a: int, b: int, ac: int, accumulate: int, load_weights: int) -> list[Concrete]:
    out = [_c("preload_ws", rows=kk, cols=c, b=b)] if load_weights else []
    out.append(_c("matmul_ws_acc", a_rows=r, a_cols=kk, c_rows=r, c_cols=c, accumulate=accumulate, a=a, c=ac))
    return out


def _store(r: int, c: int, dram: int, ac: int, bias_dram: int, scratch: int, stride: int, tail: Any,
           has_bias: bool) -> list[Concrete]:
    """``tail``: the layer's ``compilers.middle.gemm.Tail`` (``raw``, ``scale``, ``relu``)."""
    if tail.raw:
        return [_c("mvout_acc_raw", rows=r, cols=c, stride=stride, ac=ac, dram=dram)]
    return [_c("mvout_acc", rows=r, cols=c, stride=stride, scale=f32_bits(tail.scale), relu=int(tail.relu),
               ac=ac, dram=dram)]


def _resadd(r: int, c: int, a: int, b: int, dst: int, ac: int, stride: int, relu: int) -> list[Concrete]:
    """The residual add as Gemmini's own library does it: both int8 blocks moved into one
    accumulator block (widened; the second accumulating), moved out at scale 1.0 (saturating) with
    the ReLU bit."""
    return [_c("mvin_acc_s8", rows=r, cols=c, stride=stride, accumulate=0, dram=a, ac=ac),
            _c("mvin_acc_s8", rows=r, cols=c, stride=stride, accumulate=1, dram=b, ac=ac),
            _c("mvout_acc", rows=r, cols=c, stride=stride, scale=ONE, relu=relu, ac=ac, dram=dst)]


def _spread(n: int, src: int, dst: int, ac: int, dst_stride: int) -> list[Concrete]:
    """``n`` int8 values in a row of HBM to ``dst`` every ``dst_stride`` bytes: read as a column
    (rows of one element, DRAM stride 1) into an accumulator block, written back as a column."""
    return [_c("mvin_acc_s8", rows=n, cols=1, stride=1, accumulate=0, dram=src, ac=ac),
            _c("mvout_acc", rows=n, cols=1, stride=dst_stride, scale=ONE, relu=0, ac=ac, dram=dst)]


def _load_bt(kk: int, c: int, dram: int, sp: int, stride: int) -> list[Concrete]:
    """B^T's block as stored ([N, K] weights: ``c`` rows of ``kk`` bytes), for ``preload_ws_t``."""
    return [_c("mvin_spad", rows=c, cols=kk, stride=stride, scale=ONE, dram=dram, sp=sp)]


def _mul_t(r: int, kk: int, c: int, a: int, b: int, ac: int, accumulate: int, load_weights: int) -> list[Concrete]:
    out = [_c("preload_ws_t", rows=kk, cols=c, b=b)] if load_weights else []
    out.append(_c("matmul_ws_acc", a_rows=r, a_cols=kk, c_rows=r, c_cols=c, accumulate=accumulate, a=a, c=ac))
    return out


TILES = TileOffer(block=(DIM, DIM, DIM), operand_blocks=SPAD_ROWS // DIM, acc_blocks=ACC_ROWS // DIM,
                   scale_ok=_scale_ok, layouts=("", ""), one_block_to_act=True, b_group=1, scratch_bytes=0,
                   operand_addr=lambda s: s * DIM, acc_addr=lambda s: s * DIM, constants=lambda tail: b"",
                   prologue=lambda at, tail: [], pack=None, load_a=_load, load_b=_load, bias=_bias, mul=_mul,
                   store=_store, overlap=True, max_stride=max(STRIDES), resadd=_resadd,
                  spread=_spread)
def _transpose(r: int, c: int, src: int, dst: int, consts_at: int, src_stride: int, dst_stride: int) -> list[Concrete]:
    """The ``r x c`` int8 block at ``src`` transposed to ``dst`` through the array: moved in as
    stored, preloaded with B_transpose (the array holds its transpose) and multiplied by the
    identity (the constant at ``consts_at``), then moved out at scale 1.0 (values of at most 127:
    exact)."""
    return [_c("mvin_spad", rows=r, cols=c, stride=src_stride, scale=ONE, dram=src, sp=0),
            _c("mvin_spad", rows=c, cols=c, stride=DIM, scale=ONE, dram=consts_at, sp=DIM),
            _c("preload_ws_t", rows=c, cols=r, b=0),
            _c("matmul_ws_acc", a_rows=c, a_cols=c, c_rows=c, c_cols=r, accumulate=0, a=DIM, c=0),
            _c("mvout_acc", rows=c, cols=r, stride=dst_stride, scale=ONE, relu=0, ac=0, dram=dst)]


def _copy(r: int, c: int, src: int, dst: int, src_stride: int, dst_stride: int) -> list[Concrete]:
    return [_c("mvin_spad", rows=r, cols=c, stride=src_stride, scale=ONE, dram=src, sp=0),
            _c("mvout_spad", rows=r, cols=c, stride=dst_stride, sp=0, dram=dst)]


#: the identity the transposing moves multiply by
IDENTITY = bytes(int(i == j) for i in range(DIM) for j in range(DIM))

#: the scratchpad block the low-byte store stages through (the last one; the wrap offer's tiles
#: use one operand block fewer)
STAGE = SPAD_ROWS - DIM


def _store_wrap(r: int, c: int, dram: int, ac: int, bias_dram: int, scratch: int, stride: int, tail: Any,
                has_bias: bool) -> list[Concrete]:
    """The low byte of each accumulator (an s8 x s8 -> s8 dot, whose sums wrap modulo 256): the raw
    int32 block to the HBM staging area, then per row its c little-endian low bytes moved in as a
    column (c rows of one byte, DRAM stride 4: each loaded byte is the int8 value, scale 1.0) and
    moved out as the row (c rows of one byte, DRAM stride 1)."""
    out = [_c("mvout_acc_raw", rows=r, cols=c, stride=4 * c, ac=ac, dram=scratch)]
    for i in range(r):
        out += [_c("mvin_spad", rows=c, cols=1, stride=4, scale=ONE, dram=scratch + 4 * c * i, sp=STAGE),
                _c("mvout_spad", rows=c, cols=1, stride=1, sp=STAGE, dram=dram + i * stride)]
    return out


#: B stored [N, K] (PyTorch's weights, ``jnp.matmul(x, w.T)``): blocks moved in as stored and
#: preloaded with B_transpose (``preload_ws_t``); an s8 x s8 -> s8 dot: the low-byte store
TILES = replace(TILES, transpose=_transpose, copy=_copy, transpose_constants=IDENTITY)
_WRAP = replace(TILES, operand_blocks=TILES.operand_blocks - 1, scratch_bytes=4 * DIM * DIM, store=_store_wrap,
                low_byte=True)
TILES = replace(TILES, transposed_b=replace(TILES, load_b=_load_bt, mul=_mul_t),
                wrap=replace(_WRAP, transposed_b=replace(_WRAP, load_b=_load_bt, mul=_mul_t)))
