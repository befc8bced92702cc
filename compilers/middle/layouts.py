"""Convolutions in PyTorch's layouts: the program moves NCHW / OIHW operands into the NHWC / HWIO
layouts the schedules read, and the NHWC result back to NCHW.

What belongs here: :func:`layout_program`, which wraps a convolution program of the NHWC layouts
(:mod:`.conv`'s direct tiling or the im2col GEMM) between transposing moves written by the
target's ``transpose`` and ``copy`` micro-kernels. No target name appears here.

Supported layouts (``Conv.layouts``, dimension labels on each tensor's own dimensions): X as
``b01f`` (NHWC) or ``bf01`` (NCHW), Wt as ``01io`` (HWIO) or ``oi01`` (OIHW), the result as
``b01f`` or ``bf01`` (an int8 result: the moves are bytewise). The moves, each a bijection of
bytes, so the wrapped program computes the user's convolution exactly:

- X NCHW -> NHWC: per image the ``[C, H*W]`` matrix transposed into ``[H*W, C]``.
- Wt OIHW -> HWIO: the ``[O, I*KH*KW]`` matrix transposed into rows ``(i, tap)`` of O bytes, then
  the rows permuted to ``(tap, i)`` (a strided row copy per tap; none when I or KH*KW is 1).
- result NHWC -> NCHW: per image ``[OH*OW, O]`` transposed into ``[O, OH*OW]``.

A transpose goes in blocks of ``bm`` x ``bn`` (the target's block) with the target's ``transpose``
kernel, a copy in blocks of ``bm`` rows x ``bk`` bytes with ``copy``. The inner program's HBM
starts after the user's operands; the moves write its input placements before it runs and read
its result after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from semantics.dtypes import DTYPES
from semantics.types import TensorType

from ..program import Concrete, Placement, Program
from .conv import NHWC, Conv
from .schedule import ALIGN, MicroKernels, TileError, TileTarget, check_strides
from .tiled import tiles

__all__ = ["layout_program"]

#: the inner program of an NHWC convolution from HBM ``base`` on: (program, micro-kernels built,
#: end of its HBM)
Inner = Callable[[Conv, int], tuple[Program, int, int]]


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def _transpose(t: TileTarget, mk: MicroKernels, out: list[Concrete], rows: int, cols: int, src: int, dst: int,
               consts_at: int, src_stride: int, dst_stride: int) -> None:
    """The ``rows x cols`` byte matrix at ``src`` (rows ``src_stride`` apart) written transposed
    at ``dst`` (``cols`` rows ``dst_stride`` apart), block by block."""
    bm, _, bn = t.block
    for r0, r in tiles(rows, bm):
        for c0, c in tiles(cols, bn):
            mk.emit(out, "transpose", (r, c), (src + r0 * src_stride + c0, dst + c0 * dst_stride + r0, consts_at),
                    (src_stride, dst_stride))


def _copy(t: TileTarget, mk: MicroKernels, out: list[Concrete], rows: int, nbytes: int, src: int, dst: int,
          src_stride: int, dst_stride: int) -> None:
    bm, bk, _ = t.block
    for r0, r in tiles(rows, bm):
        for c0, c in tiles(nbytes, bk):
            mk.emit(out, "copy", (r, c), (src + r0 * src_stride + c0, dst + r0 * dst_stride + c0),
                    (src_stride, dst_stride))


def layout_program(cv: Conv, t: TileTarget, hbm_size: int, target: str, inner: Inner) -> tuple[Program, int]:
    """The program of ``cv`` in its layouts (module doc) around ``inner``'s NHWC program, and the
    micro-kernels built. Raises :class:`TileError` for a layout or result the moves do not cover."""
    x_l, w_l, o_l = cv.layouts
    if x_l not in ("b01f", "bf01") or w_l not in ("01io", "oi01") or o_l not in ("b01f", "bf01"):
        raise TileError(f"the convolution's layouts {x_l}/{w_l}->{o_l} are not NHWC or NCHW, HWIO or OIHW")
    if t.transpose is None or t.copy is None:
        raise TileError(f"a convolution in layouts {x_l}/{w_l}->{o_l} needs transposing moves, which this "
                        f"target does not offer")
    if o_l != "b01f" and cv.tail.raw:
        raise TileError("an int32 result in NCHW needs 4-byte transposes, which the moves do not do")
    taps, ci = cv.kh * cv.kw, cv.cg
    hw, ohw = cv.h * cv.w, cv.oh * cv.ow
    check_strides(t, {k: v for k, v in (("NCHW input plane", hw if x_l == "bf01" else 0),
                                        ("OIHW weight", ci * taps if w_l == "oi01" else 0),
                                        ("NCHW output plane", ohw if o_l == "bf01" else 0)) if v})
    s8 = DTYPES["s8"]
    types = list(cv.param_types)
    types[cv.x] = TensorType(s8, (cv.n, cv.h, cv.w, cv.c))
    types[cv.wt] = TensorType(s8, (cv.kh, cv.kw, ci, cv.o))
    nhwc = replace(cv, layouts=NHWC, param_types=tuple(types))
    end = _align(0) + ALIGN
    x_user = w_user = None
    if x_l != "b01f":
        x_user, end = end, _align(end + cv.n * hw * cv.c)
    if w_l != "01io":
        w_user, end = end, _align(end + cv.w_bytes)
    prog, built, end = inner(nhwc, end)
    consts_at, end = end, _align(end + len(t.transpose_constants))
    tmp = None
    if w_l != "01io" and ci > 1 and taps > 1:
        tmp, end = end, _align(end + cv.w_bytes)
    final = None
    if o_l != "b01f":
        final, end = end, _align(end + cv.n * ohw * cv.o)
    if end > hbm_size:
        raise TileError(f"the convolution and its layout moves need {end} bytes of HBM, the description has {hbm_size}")
    at = {x.index: x for x in prog.inputs}
    mk = MicroKernels(t)
    pro: list[Concrete] = []
    inputs = [x for x in prog.inputs if x.index not in (cv.x, cv.wt)]
    if x_user is not None:
        for n in range(cv.n):
            _transpose(t, mk, pro, cv.c, hw, x_user + n * cv.c * hw, at[cv.x].addr + n * hw * cv.c, consts_at,
                       hw, cv.c)
        inputs.append(Placement(cv.x, x_user, cv.param_types[cv.x]))
    else:
        inputs.append(at[cv.x])
    if w_user is not None:
        # [O, I*T] -> rows (i, t) of O bytes; then rows (t, i) (none to permute when I or T is 1)
        _transpose(t, mk, pro, cv.o, ci * taps, w_user, tmp if tmp is not None else at[cv.wt].addr, consts_at,
                   ci * taps, cv.o)
        if tmp is not None:
            for tap in range(taps):
                _copy(t, mk, pro, ci, cv.o, tmp + tap * cv.o, at[cv.wt].addr + tap * ci * cv.o, taps * cv.o, cv.o)
        inputs.append(Placement(cv.wt, w_user, cv.param_types[cv.wt]))
    else:
        inputs.append(at[cv.wt])
    epi: list[Concrete] = []
    (res,) = prog.outputs
    if final is not None:
        for n in range(cv.n):
            _transpose(t, mk, epi, ohw, cv.o, res.addr + n * ohw * cv.o, final + n * cv.o * ohw, consts_at,
                       cv.o, ohw)
        shape = dict(zip("b01f", (cv.n, cv.oh, cv.ow, cv.o), strict=True))
        res = Placement(0, final, TensorType(s8, tuple(shape[d] for d in o_l)))
    consts = list(prog.constants)
    if t.transpose_constants:
        consts.append((consts_at, t.transpose_constants))
    inputs.sort(key=lambda x: x.index)
    return Program(target, (*pro, *prog.instructions, *epi), tuple(inputs), (res,), tuple(consts)), built + len(mk.built)
