"""The middle end's entry: a layer tiled into one program before Act's phase 1.

What belongs here: :func:`compile_tiled`, called by :func:`compilers.compile.compile` before
Act. It recognizes the layer (a convolution layer where the target runs :mod:`.conv`'s direct
tiling, else :mod:`.gemm`, whose forms include a 1x1 convolution as the GEMM of its views, and
where the target packs its operands any other convolution as the GEMM of its im2col matrix), asks the
target package for its :class:`~.schedule.TileTarget`, plans and composes the program
(:mod:`.schedule`, or :mod:`.conv`'s schedule) and returns it with its figures, or None where the middle end does not take the kernel (Act compiles it).
The sum of two products with one tail (an RNN cell's gate, :mod:`.gates`) is the GEMM of the
concatenated operands. An f32 layer of bf16 operands (:mod:`.gemm_bf16`) goes to the offer of that operand type among
``TileTarget.others`` (none: Act compiles it); its program carries the offer's numeric contract
(:func:`float_contract`: the ``blocked_sum`` model bit for bit, the reference within
``sum_bound``), since its sum has the instruction's order, not the reference's.

For a target that offers row blocks (``row_block``), it splits a kernel whose result is row-wise
in one input into blocks of rows (:mod:`.rows`), each distinct block height compiled once by
Act; first the offer's ``diagnose`` may say why the kernel is not the target's function (QKV:
a softmax that subtracts the row maximum), which exits 3 with that reason. Otherwise it takes a recognized layer unless the target leaves one block to Act
(``one_block_to_act``) and the layer is a dot of exactly one block with no bias and the
int32-clamp tail, which Act's instruction selection compiles by itself (the paper's
``gemmini_gemm``, whose program stays Act's). The residual add of two entry parameters
(:mod:`.glue`'s form, alone) is the middle end's on a target that leaves no block to Act (AMX,
whose saturating byte add is a tile-only instruction Act does not select); Gemmini's stays Act's. A layer it takes but the target cannot run raises
:class:`~.schedule.TileError` (exit 3) naming why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from semantics.dtypes import DTYPES
from semantics.ir import Graph
from semantics.types import TensorType

from ..contract import Contract
from ..isa import Accelerator
from ..program import Placement, Program
from .chain import chain_layers, chain_program, split_chain
from .conv import Conv, conv_as_gemm, conv_fits, conv_hbm_end, conv_program, layer_of
from .gates import gate_program, gate_takes, recognize_gate
from .gemm import Gemm
from .gemm_bf16 import recognize_bf16
from .glue import Residual, recognize_residual, residual_program
from .schedule import Plan, TileError, TileTarget, offer_for, plan, tile_program

__all__ = ["Tiled", "compile_tiled", "float_contract", "takes"]


@dataclass(frozen=True)
class Tiled:
    """A tiled compile: the program, the layer, the distinct micro-kernels built and the seconds."""

    program: Program
    gemm: Gemm | Conv | None
    micro_kernels: int
    tiles: int
    seconds: float


def takes(g: Gemm, t: TileTarget) -> bool:
    """Whether the middle end compiles ``g`` (module doc)."""
    exact_block = (g.m, g.k, g.n) == tuple(t.block)
    return not (t.one_block_to_act and exact_block and g.bias is None and g.tail.scale == 1.0 and not g.tail.relu
                and len(g.out_shape) <= 2)


def compile_tiled(graph: Graph, acc: Accelerator,
                  compile_block: Callable[[Graph], Program] | None = None, original: Graph | None = None) -> Tiled | None:
    """The tiled program of ``graph`` (canonical: :mod:`compilers.canon`) for ``acc``, or None
    where the middle end does not take it. ``compile_block`` compiles a row-block kernel (Act's
    driver); without it no row blocks; ``original``: the graph as given, which the row-block split
    cuts (its blocks go to Act)."""
    from ..targets import TARGETS, target_package

    if acc.name not in TARGETS:
        return None
    make = target_package(acc.name).tiles
    if make is None:
        return None
    offer = make()
    row_block = getattr(offer, "row_block", None)
    if row_block is not None:
        return _rows(original or graph, acc, offer, compile_block) if compile_block is not None else None
    t: TileTarget = offer  # type: ignore[assignment]
    layer = layer_of(graph, t)
    conv = layer if isinstance(layer, Conv) else layer.window if isinstance(layer, Gemm) else None
    if conv is not None and not conv.nhwc:      # PyTorch's layouts: moved around the NHWC program
        from .layouts import layout_program

        t0 = time.perf_counter()
        prog, built = layout_program(conv, t, acc.hbm_size, acc.name, lambda c, base: _conv_inner(c, t, acc, base))
        bm, _, bn = t.block
        return Tiled(prog, conv, built, -(-conv.m // bm) * -(-conv.o // bn), time.perf_counter() - t0)
    cv = layer if isinstance(layer, Conv) else None
    g = layer if isinstance(layer, Gemm) else recognize_bf16(graph)
    if cv is not None:
        t0 = time.perf_counter()
        prog, mk, ntiles = conv_program(cv, t, acc.hbm_size, acc.name)
        return Tiled(prog, cv, len(mk.built), ntiles, time.perf_counter() - t0)
    if g is not None and g.dtype != t.dtype:
        other = t.for_dtype(g.dtype)
        if other is None:
            return None
        t = other
    if g is None and cv is None:
        gate = recognize_gate(graph)
        if gate is not None and gate_takes(gate, t):
            t0 = time.perf_counter()
            prog, built = gate_program(gate, t, acc.hbm_size, acc.name)
            bm, _, bn = t.block
            return Tiled(prog, gate.gemm, built, -(-gate.gemm.m // bm) * -(-gate.gemm.n // bn),
                         time.perf_counter() - t0)
        links = split_chain(graph)
        layers = chain_layers(links, t) if links is not None else None
        # a chain none of whose layers the middle end would take alone (one block each, the
        # clamp tail: the paper's composite kernels) stays Act's, as its layers would
        # (the residual glue alone does not make a chain the middle end's)
        if links is not None and layers is not None and \
                any(isinstance(x, Conv) or (isinstance(x, Gemm) and takes(x, t)) for x in layers):
            t0 = time.perf_counter()
            prog, built = chain_program(links, layers, t, acc.hbm_size, acc.name)
            bm, _, bn = t.block
            ntiles = sum(-(-x.m // bm) * -(-(x.n if isinstance(x, Gemm) else x.o if isinstance(x, Conv) else x.c)
                                              // (bn if not isinstance(x, Residual) else t.block[1]))
                         for x in layers)
            return Tiled(prog, None, built, ntiles, time.perf_counter() - t0)
        rs = recognize_residual(graph) if links is None else None
        if rs is not None and not t.one_block_to_act and t.resadd is not None:
            t0 = time.perf_counter()
            prog = _residual_alone(rs, t, acc)
            return Tiled(prog, None, 1, -(-rs.m // t.block[0]) * -(-rs.c // t.block[1]), time.perf_counter() - t0)
    if g is None or not takes(g, t):
        return None
    t = offer_for(g, t).fitted(g.m, g.k_bytes, g.n)
    t0 = time.perf_counter()
    p = plan(g, t, acc.hbm_size)
    prog, mk = tile_program(p, t, acc.name)
    if g.batch > 1:
        prog = _batched(prog, p, g, t, acc.name)
    if t.blocked_sum is not None:
        prog = replace(prog, contract=float_contract(g, t, acc.name))
    bm, _, bn = t.block
    ntiles = g.batch * -(-g.m // bm) * -(-g.n // bn)
    return Tiled(prog, g, len(mk.built), ntiles, time.perf_counter() - t0)


def _residual_alone(rs: Residual, t: TileTarget, acc: Accelerator) -> Program:
    """The residual add of two entry parameters (:mod:`.glue`'s program, A placed first)."""
    nbytes = rs.m * rs.c
    prog, _ = residual_program(rs, t, acc.hbm_size, acc.name, nbytes, 0, None)
    a = Placement(rs.a, 0, TensorType(DTYPES["s8"], rs.shape))
    return replace(prog, inputs=tuple(sorted((a, *prog.inputs), key=lambda x: x.index)))


def _conv_inner(cv: Conv, t: TileTarget, acc: Accelerator, base: int) -> tuple[Program, int, int]:
    """An NHWC convolution's program from HBM ``base`` on (:mod:`.conv`'s direct tiling where the
    target runs it, else the im2col GEMM), its micro-kernels built and the end of its HBM."""
    if conv_fits(t):
        prog, mk, _ = conv_program(cv, t, acc.hbm_size, acc.name, base)
        return prog, len(mk.built), conv_hbm_end(cv, t, acc.hbm_size, base)
    g = conv_as_gemm(cv)
    tk = offer_for(g, t).fitted(g.m, g.k_bytes, g.n)
    p = plan(g, tk, acc.hbm_size, base)
    prog, mk = tile_program(p, tk, acc.name)
    return prog, len(mk.built), p.hbm_end


def _batched(first: Program, p: Plan, g: Gemm, t: TileTarget, target: str) -> Program:
    """A batched dot's program: ``first`` (slice 0) then the same schedule for each later slice,
    A, B and the result moved by one slice (the packed copies and staging reused)."""
    kb, ob = g.k_bytes, 4 if g.tail.raw else 1
    sa, sb, so = g.m * kb, g.n * kb, g.m * g.n * ob
    ins = list(first.instructions)
    for i in range(1, g.batch):
        q = replace(p, a_at=p.a_at + i * sa, b_at=p.b_at + i * sb, out_at=p.out_at + i * so)
        if t.pack is None:       # the tiles read the operands themselves
            q = replace(q, a_view=(p.a_view[0] + i * sa, p.a_view[1]), b_view=(p.b_view[0] + i * sb, p.b_view[1]))
        ins += tile_program(q, t, target)[0].instructions
    return replace(first, instructions=tuple(ins))


def float_contract(g: Gemm, t: TileTarget, target: str) -> Contract:
    """The contract of a tiled float layer: its outputs equal the offer's ``blocked_sum`` of the
    layer's operands bit for bit (which NaN is open: an add of two NaNs returns either in the
    dialect, and the hardware's are not modelled) and the reference within ``sum_bound``."""
    model, bound = t.blocked_sum, t.sum_bound
    assert model is not None and bound is not None

    def _b(xs: Sequence[np.ndarray]) -> np.ndarray:      # B as [K, N] (a B stored [N, K] transposed)
        return np.asarray(xs[g.b]).T if g.b_t else xs[g.b]

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(model(xs[g.a], _b(xs)))]

    def bounds(xs: Sequence[np.ndarray]) -> list:
        return [bound(xs[g.a], _b(xs), None)]

    return Contract(f"the {target} blocked {g.dtype} sum ({model.__module__}.{model.__name__})", run, bounds,
                    nan_bits=False)


def _rows(graph: Graph, acc: Accelerator, offer: object, compile_block: Callable[[Graph], Program]) -> Tiled | None:
    from .rows import compile_rows, row_split

    block: int = offer.row_block  # type: ignore[attr-defined]
    diagnose = getattr(offer, "diagnose", None)
    why = diagnose(graph) if diagnose is not None else None
    if why is not None:
        raise TileError(why)
    split = row_split(graph)
    if split is None or split.rows <= block:
        return None
    t0 = time.perf_counter()
    prog, kinds = compile_rows(graph, acc, split, block, offer.max_extent, compile_block)  # type: ignore[attr-defined]
    return Tiled(prog, None, kinds, -(-split.rows // block), time.perf_counter() - t0)
