"""The middle end's entry: a layer tiled into one program before Act's phase 1.

What belongs here: :func:`compile_tiled`, called by :func:`compilers.act.driver.compile_graph`
first. It recognizes the layer (:mod:`.gemm`, else a convolution layer: :mod:`.conv`), asks the target package for its
:class:`~.schedule.TileTarget`, plans and composes the program (:mod:`.schedule`) and returns it
with its figures, or None where the middle end does not take the kernel (Act compiles it).

It takes a recognized layer unless the layer fits one block with no bias and the int32-clamp
tail, which Act's instruction selection compiles by itself (the paper's ``gemmini_gemm``, whose
program stays Act's). A layer it takes but the target cannot run raises
:class:`~.schedule.TileError` (exit 3) naming why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from semantics.ir import Graph

from ..isa import Accelerator
from ..program import Program
from .conv import Conv, conv_fits, conv_program, recognize_conv
from .gemm import Gemm, recognize
from .schedule import TileTarget, plan, tile_program

__all__ = ["Tiled", "compile_tiled", "takes"]


@dataclass(frozen=True)
class Tiled:
    """A tiled compile: the program, the layer, the distinct micro-kernels built and the seconds."""

    program: Program
    gemm: Gemm | Conv
    micro_kernels: int
    tiles: int
    seconds: float


def takes(g: Gemm, t: TileTarget) -> bool:
    """Whether the middle end compiles ``g`` (module doc)."""
    bm, bk, bn = t.block
    one_block = g.m <= bm and g.k <= bk and g.n <= bn
    return not (one_block and g.bias is None and g.tail.scale == 1.0 and not g.tail.relu)


def compile_tiled(graph: Graph, acc: Accelerator) -> Tiled | None:
    """The tiled program of ``graph`` for ``acc``, or None where the middle end does not take it."""
    from ..targets import TARGETS, target_package

    if acc.name not in TARGETS:
        return None
    make = target_package(acc.name).tiles
    if make is None:
        return None
    g = recognize(graph)
    if g is None:
        cv = recognize_conv(graph)
        t_conv: TileTarget = make()  # type: ignore[assignment]
        if cv is None or not conv_fits(t_conv):
            return None
        t0 = time.perf_counter()
        prog, mk, ntiles = conv_program(cv, t_conv, acc.hbm_size, acc.name)
        return Tiled(prog, cv, len(mk.built), ntiles, time.perf_counter() - t0)
    t: TileTarget = make()  # type: ignore[assignment]
    if not takes(g, t):
        return None
    t0 = time.perf_counter()
    p = plan(g, t, acc.hbm_size)
    prog, mk = tile_program(p, t, acc.name)
    bm, _, bn = t.block
    ntiles = -(-g.m // bm) * -(-g.n // bn)
    return Tiled(prog, g, len(mk.built), ntiles, time.perf_counter() - t0)
