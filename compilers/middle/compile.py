"""The middle end's entry: a layer tiled into one program before Act's phase 1.

What belongs here: :func:`compile_tiled`, called by :func:`compilers.act.driver.compile_graph`
first. It recognizes the layer (:mod:`.gemm`, else a convolution layer: :mod:`.conv`), asks the
target package for its :class:`~.schedule.TileTarget`, plans and composes the program (:mod:`.schedule`) and returns it
with its figures, or None where the middle end does not take the kernel (Act compiles it).

A target whose offer has a ``row_block`` (QKV's fixed 64-row blocks) gets row blocks instead
(:mod:`.rows`): a kernel with a matmul or a reduction and a dimension larger than the block is cut
into row blocks, Act compiles one block and the program repeats it per block; a kernel that does
not decompose exactly exits 3 naming the operator.

It takes a recognized layer unless the layer fits one block with no bias and the int32-clamp
tail, which Act's instruction selection compiles by itself (the paper's ``gemmini_gemm``, whose
program stays Act's). A layer it takes but the target cannot run raises
:class:`~.schedule.TileError` (exit 3) naming why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from semantics.errors import AccvError
from semantics.ir import Graph

from ..isa import Accelerator
from ..program import Program
from .conv import Conv, conv_fits, conv_program, recognize_conv
from .gemm import Gemm, recognize
from .rows import RowSplit, block_graph, row_blocks, row_program, row_split
from .schedule import TileError, TileTarget, plan, tile_program

__all__ = ["Tiled", "compile_tiled", "takes"]


@dataclass(frozen=True)
class Tiled:
    """A tiled compile: the program, the layer, the distinct micro-kernels built and the seconds."""

    program: Program
    gemm: Gemm | Conv | RowSplit
    micro_kernels: int
    tiles: int
    seconds: float


def takes(g: Gemm, t: TileTarget) -> bool:
    """Whether the middle end compiles ``g`` (module doc)."""
    bm, bk, bn = t.block
    one_block = g.m <= bm and g.k <= bk and g.n <= bn
    return not (one_block and g.bias is None and g.tail.scale == 1.0 and not g.tail.relu)


def compile_tiled(graph: Graph, acc: Accelerator,
                  compile_block: Callable[[Graph], Program] | None = None) -> Tiled | None:
    """The tiled program of ``graph`` for ``acc``, or None where the middle end does not take it.
    ``compile_block`` compiles one row block (:mod:`.rows`; the driver passes Act's compile, which
    raises an :class:`~semantics.errors.AccvError` with exit code 3 where it cannot)."""
    from ..targets import TARGETS, target_package

    if acc.name not in TARGETS:
        return None
    make = target_package(acc.name).tiles
    if make is None:
        return None
    offer = make()
    block = getattr(offer, "row_block", None)
    if block is not None:
        return _row_blocks(graph, acc, block, compile_block)
    t: TileTarget = offer  # type: ignore[assignment]
    g = recognize(graph)
    if g is None:
        cv = recognize_conv(graph)
        if cv is None or not conv_fits(t):
            return None
        t0 = time.perf_counter()
        prog, mk, ntiles = conv_program(cv, t, acc.hbm_size, acc.name)
        return Tiled(prog, cv, len(mk.built), ntiles, time.perf_counter() - t0)
    if not takes(g, t):
        return None
    t0 = time.perf_counter()
    p = plan(g, t, acc.hbm_size)
    prog, mk = tile_program(p, t, acc.name)
    bm, _, bn = t.block
    ntiles = -(-g.m // bm) * -(-g.n // bn)
    return Tiled(prog, g, len(mk.built), ntiles, time.perf_counter() - t0)


def _row_blocks(graph: Graph, acc: Accelerator, block: int,
                compile_block: Callable[[Graph], Program] | None) -> Tiled | None:
    """Row blocks of ``block`` rows (module doc), or None where the kernel fits one block or has
    no matmul or reduction (Act compiles it as it is)."""
    from semantics.types import TensorType

    ins = graph.entry.instructions
    if not any(i.opcode in ("dot", "reduce") for i in ins):
        return None
    if not any(isinstance(i.type, TensorType) and any(d > block for d in i.type.shape) for i in ins):
        return None
    t0 = time.perf_counter()
    rs = row_split(graph, block)
    if compile_block is None:
        raise TileError(f"the kernel decomposes into {block}-row blocks, but no block compiler was given")
    try:
        one = compile_block(block_graph(graph, rs, block))
    except AccvError as e:
        if e.exit_code != 3:
            raise
        raise TileError(f"the kernel decomposes into {block}-row blocks, but one block does not compile: "
                        f"{e.reason}") from None
    prog = row_program(graph, rs, block, one, acc)
    return Tiled(prog, rs, 1, len(row_blocks(rs.m, block)), time.perf_counter() - t0)
