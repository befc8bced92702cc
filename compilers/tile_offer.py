"""The record a target package fills to offer tiling to the middle end (compilers/middle): block
sizes, capacities, layouts and the micro-kernels as instruction builders.

What belongs here: :class:`TileOffer` and the :data:`Kernel` type only. It sits beside
``compilers.middle`` and ``compilers.targets`` and imports neither, so a target package fills it
without importing the middle end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .program import Concrete

__all__ = ["Kernel", "TileOffer"]

Kernel = Callable[..., list[Concrete]]


@dataclass(frozen=True)
class TileOffer:
    """What a target offers the middle end (``TargetPackage.tiles()``; the middle end calls it
    ``TileTarget``).

    ``block`` = (bm, bk, bn); ``operand_blocks`` / ``acc_blocks``: how many operand blocks (bm x bk
    or bk x bn) and accumulator blocks (bm x bn) the on-chip buffers hold; ``scales``: the f32 bit
    patterns the store path can scale by; ``layouts``: the layouts A and B must have ("" row-major);
    ``one_block_to_act``: a dot of exactly one block with the clamp tail is left to Act's selection;
    ``b_group``: bytes of K per B image row group (1 row-major; 4 for a VNNI layout, whose image has
    ceil(K / 4) rows of 4N bytes, and for bf16 pairs, ceil(K / 2) rows of 4N bytes; ``bk`` too counts
    bytes of K); ``scratch_bytes``: HBM the store path stages through;
    ``operand_addr`` / ``acc_addr``: a block slot's address in the target's units; ``constants(tail)``:
    bytes placed in the constant section; ``prologue(consts_at, tail)``: instructions run first.

    The kernels return concrete instructions; each takes the tile's shape, then addresses (which
    it may offset but not scale), then flags (strides are flags):

    - ``pack(rows, nbytes, src, dst, src_stride, dst_stride)`` (or None): copy rows into the packed
      operand copy (whole blocks, zero past the matrix: seed 004 §3.2's packing)
    - ``load_a(r, kk, dram, slot, stride)``, ``load_b(kk, c, dram, slot, stride)``
    - ``bias(r, c, dram, acc)`` (or None: the store path adds the bias)
    - ``mul(r, kk, c, a, b, acc, accumulate, load_weights)``: acc (+)= A-block x B-block; B is
      (re)loaded into the array when ``load_weights`` is true, else the previous B is reused
    - ``store(r, c, dram, acc, bias_dram, scratch, stride, tail, has_bias)``: the accumulator block
      through ``tail`` to HBM

    ``overlap``: the micro-kernels keep no state across one another except the array weights
    loaded by a ``mul`` with ``load_weights``, so the schedule may place background steps (stores,
    the next chunk's A loads) between them: a target whose load, execute and store units run
    concurrently gets independent work inside its command window (the schedule's software
    pipelining). False where kernels share registers (AMX's tiles and zmm registers).
    ``dtype``: the operands' element type the offer tiles (``s8``, or ``bf16`` for an f32 layer);
    ``others``: the target's offers for other operand types (the middle end picks by the layer's).
    ``blocked_sum`` / ``sum_bound`` (float offers): the numpy model of the f32 result the tiled
    program computes, bit for bit (``blocked_sum(a, b)``), and the declared bound of its distance to
    the reference's dot (``sum_bound(a, b, ref)``: a :class:`semantics.compare.Bound`).
    ``pack_b(rows, n, krows, src, dst, src_stride, dst_stride)`` (or None): build ``rows`` rows of
    the offer's B layout (``b_group`` rows of K interleaved) from ``krows`` row-major rows of ``n``
    bytes at ``src``, into the packed copy at ``dst``; ``row_major_b``: the offer to use where B is
    stored row-major (its ``pack_b`` repacks it in the program), where the target can.
    ``transposed_b``: the offer for a B stored ``[N, K]`` row-major and contracted on its last
    dimension (PyTorch's weights), whose ``pack_b`` reads B's rows as columns; None: such a layer
    exits 3 saying so.
    ``low_byte``: the store path can write the low byte of each accumulator (a tail with ``wrap``:
    XLA's s8 x s8 -> s8 dot); else ``wrap``, the offer whose store does (None: such a layer exits
    3 saying so).
    ``unsigned_out``: the store path can write a u8 result (a tail with ``u8``: clamped to
    0..255); else such a layer exits 3 saying so.
    ``resadd(r, c, a, b, dst, acc, stride, relu)`` (or None): ``relu?(sat8(A + B))`` of two int8
    blocks of ``r`` rows x ``c`` bytes (at most ``bm`` x ``bk``) with row stride ``stride`` into
    ``dst`` (``acc``: an accumulator slot it may use): the residual add of :mod:`compilers.middle.glue`.
    ``spread(n, src, dst, acc, dst_stride)`` (or None): the ``n`` bytes at ``src`` (n at most
    ``bm``) to ``dst + i * dst_stride`` (a depthwise convolution's dense weights, along the diagonal).
    ``transpose(r, c, src, dst, consts_at, src_stride, dst_stride)`` (or None): the ``r x c`` byte
    block at ``src`` written transposed at ``dst`` (r, c at most ``bm``, ``bn``; ``consts_at``: where
    ``transpose_constants`` lie in HBM); ``copy(r, c, src, dst, src_stride, dst_stride)``: ``r`` rows
    of ``c`` bytes (at most ``bm`` x ``bk``) moved (:mod:`compilers.middle.layouts`).
    ``fit(offer, m, kb, n)`` (or None): :meth:`fitted`'s offer for a layer of that size.
    ``max_stride``: the largest HBM row stride, in bytes, a kernel's stride flag may take (the
    description's stride domain; None: any); a layer whose rows are further apart exits 3 naming it.
    """

    block: tuple[int, int, int]
    operand_blocks: int
    acc_blocks: int
    scale_ok: Callable[[float], str | None]
    layouts: tuple[str, str]
    one_block_to_act: bool
    b_group: int
    scratch_bytes: int
    operand_addr: Callable[[int], int]
    acc_addr: Callable[[int], int]
    constants: Callable[[Any], bytes]
    prologue: Callable[[int, Any], list[Concrete]]
    pack: Kernel | None
    load_a: Kernel
    load_b: Kernel
    bias: Kernel | None
    mul: Kernel
    store: Kernel
    overlap: bool = False
    dtype: str = "s8"
    others: tuple[TileOffer, ...] = ()
    blocked_sum: Callable[[Any, Any], Any] | None = None
    sum_bound: Callable[[Any, Any, Any], Any] | None = None
    max_stride: int | None = None
    pack_b: Kernel | None = None
    row_major_b: TileOffer | None = None
    low_byte: bool = False
    unsigned_out: bool = False
    transposed_b: TileOffer | None = None
    resadd: Kernel | None = None
    spread: Kernel | None = None
    wrap: TileOffer | None = None
    transpose: Kernel | None = None
    copy: Kernel | None = None
    transpose_constants: bytes = b""
    fit: Callable[[TileOffer, int, int, int], TileOffer] | None = None

    def fitted(self, m: int, kb: int, n: int) -> TileOffer:
        """The offer for one layer of ``m`` rows, ``kb`` bytes of K and ``n`` columns: ``fit``'s
        (blocks no larger than the layer where a dimension fits in one, so that the program's
        tiles are that size rather than padded; every block of the layer then has the same
        shape), else this offer."""
        return self if self.fit is None else self.fit(self, m, kb, n)

    def for_dtype(self, dtype: str) -> TileOffer | None:
        """This offer or the one of ``others`` that tiles operands of ``dtype``, else None."""
        return next((o for o in (self, *self.others) if o.dtype == dtype), None)
