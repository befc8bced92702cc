"""The index arithmetic of a convolution's window that both schedules share: the im2col packing
(:mod:`.schedule`'s GEMM of the im2col matrix) and a grouped layer's dense weights
(:mod:`.conv`). Steps are ``(shape, addresses, flags)`` for a micro-kernel, which the caller emits.

What belongs here: :func:`im2col_packs` and :func:`dense_steps` only; it imports neither the
schedule nor :mod:`.conv` (their layer, a :class:`.conv.Conv`, is read by its attributes), so
both can use it without an import cycle.
"""

from __future__ import annotations

from typing import Any

from .tiled import tiles

__all__ = ["Step", "im2col_packs", "dense_steps"]

Step = tuple[tuple, tuple, tuple]


def im2col_packs(cv: Any, x_at: int, dst: int, pitch: int) -> list[tuple[tuple, tuple, tuple]]:
    """The pack micro-kernel calls ``(shape, addresses, flags)`` that build the im2col matrix of
    ``cv`` (module doc) at ``dst`` (row pitch ``pitch`` bytes) from the input image at ``x_at``:
    per output row (n, oh) and window row kh inside the input, the pixels whose KW taps all lie
    inside the input as one run of KW * C bytes each, every other pixel's taps one by one."""
    (pt, _), (pl, _) = cv.pad
    sh, sw = cv.stride
    c = cv.c
    out: list[tuple[tuple, tuple, tuple]] = []

    def run(n: int, ih: int, oh: int, kh: int, kw: int, lo: int, hi: int, nbytes: int) -> None:
        if lo < hi:
            src = x_at + ((n * cv.h + ih) * cv.w + lo * sw + kw - pl) * c
            at = dst + ((n * cv.oh + oh) * cv.ow + lo) * pitch + (kh * cv.kw + kw) * c
            out.append(((hi - lo, nbytes), (src, at), (sw * c, pitch)))

    def span(kw: int) -> tuple[int, int]:        # the output columns whose tap kw reads inside the input
        return max(0, -(-(pl - kw) // sw)), min(cv.ow, (cv.w - 1 + pl - kw) // sw + 1)

    spans = [span(kw) for kw in range(cv.kw)]
    lo_all = max(s[0] for s in spans)
    hi_all = min(s[1] for s in spans)
    for n in range(cv.n):
        for oh in range(cv.oh):
            for kh in range(cv.kh):
                ih = oh * sh + kh - pt
                if not 0 <= ih < cv.h:
                    continue
                run(n, ih, oh, kh, 0, lo_all, hi_all, cv.kw * c)
                for kw, (lo, hi) in enumerate(spans):
                    run(n, ih, oh, kh, kw, lo, min(hi, lo_all), c)
                    run(n, ih, oh, kh, kw, max(lo, hi_all, lo_all), hi, c)
    return out




def dense_steps(cv: Any, block: tuple[int, int, int], src: int, dst: int, acc: int) -> list[tuple[str, tuple, tuple, tuple]]:
    """The ``(kernel, shape, addresses, flags)`` steps that write a grouped layer's dense weights
    (:mod:`.conv`'s doc) at ``dst`` (row-major [KH*KW*C, O], zero elsewhere: HBM starts zero) from
    the stored ``[KH, KW, C/G, O]`` at ``src``: a depthwise layer's taps by ``spread`` along the
    diagonal (each run of up to ``bm`` channels, stride C + 1), any other grouping's
    ``C/G x O/G`` blocks by ``copy`` (up to ``bm`` rows x ``bk`` bytes each)."""
    bm, bk, _ = block
    taps = cv.kh * cv.kw
    if cv.depthwise:
        return [("spread", (r,), (src + tap * cv.c + c0, dst + tap * cv.c * cv.o + c0 * (cv.o + 1), acc), (cv.o + 1,))
                for tap in range(taps) for c0, r in tiles(cv.c, bm)]
    cg, og = cv.c // cv.groups, cv.o // cv.groups
    out = []
    for tap in range(taps):
        for g in range(cv.groups):
            s0 = src + tap * cg * cv.o + g * og                     # Wt[tap, 0, g*og]
            d0 = dst + (tap * cv.c + g * cg) * cv.o + g * og        # Wd[tap, g*cg, g*og]
            for r0, r in tiles(cg, bm):
                for c0, c in tiles(og, bk):
                    out.append(("copy", (r, c), (s0 + r0 * cv.o + c0, d0 + r0 * cv.o + c0), (cv.o, cv.o)))
    return out
