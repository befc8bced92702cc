"""Chains of layers: a graph of several quantized GEMM or convolution layers, each reading the
previous one's result (a two-layer MLP, conv -> conv), as one program of tiled layers; the last
may be followed by a residual add of an entry parameter (a ResNet block: :mod:`.glue`).

What belongs here: :func:`split_chain` (the graph cut at each layer's input into one graph per
layer, each of :mod:`.gemm`'s forms) and :func:`chain_program` (the layers planned one after the
other in HBM, each reading the previous result where that one wrote it, so the intermediate stays
in HBM and is never copied; the programs concatenated in order).

A layer ``i > 0`` of the chain is the sub-graph from the value its dot reads as A (the previous
layer's result, which becomes the layer's parameter 0) to its result; layer 0 is the sub-graph
from the entry's parameters to layer 1's input. Every other parameter of a layer is an entry
parameter. Where the root is :mod:`.glue`'s residual add, the glue is the last link (its A the
last layer's result, its B an entry parameter, read where an earlier layer placed it if one did). The composition is exact by construction: each layer's program computes its layer's
graph from HBM bytes (checked as one program against the user's graph).
"""

from __future__ import annotations

from dataclasses import dataclass

from semantics.graph import GraphBuilder
from semantics.ir import Attrs, Computation, Graph, Instruction
from semantics.types import TensorType

from ..program import Placement, Program
from .conv import Conv, conv_hbm_end, conv_program, layer_of
from .gemm import Gemm
from .glue import Residual, recognize_residual, residual_program, residual_root
from .schedule import TileTarget, offer_for, plan, tile_program

__all__ = ["Link", "split_chain", "chain_layers", "chain_program"]

#: opcodes that begin a layer (a contraction)
_CONTRACTIONS = ("dot", "convolution")


@dataclass(frozen=True)
class Link:
    """One layer of a chain: its graph and, per parameter of it, the entry parameter it is (None:
    the previous layer's result)."""

    graph: Graph
    params: tuple[int | None, ...]


def _dtype(ins: Instruction) -> str:
    t = ins.type
    return t.dtype.name if isinstance(t, TensorType) else ""


def _a_source(comp: Computation, dot: Instruction) -> str:
    """The value the dot reads as A, looked through widening converts and views: the layer's
    input (the previous layer's s8 result in a chain)."""
    a = comp[dot.operands[0]]
    while a.opcode in ("convert", "reshape", "bitcast"):
        src = comp[a.operands[0]]
        widening = a.opcode != "convert" or (_dtype(src) == "s8" and _dtype(a) == "s32")
        if not widening or (a.opcode != "convert" and _dtype(src) != _dtype(a)):
            break
        a = src
    return a.name


def split_chain(graph: Graph) -> list[Link] | None:
    """The graph as a chain of layers (module doc), or None where it has fewer than two
    contractions or is not a chain of single-input layers."""
    if len(graph.computations) != 1:
        return None
    comp = graph.entry
    dots = [i for i in comp.instructions if i.opcode in _CONTRACTIONS]
    glue = residual_root(comp)
    if len(dots) < (1 if glue is not None else 2):
        return None
    cuts = [_a_source(comp, d) for d in dots[1:]]
    if glue is not None:
        cuts.append(glue[0])          # the last layer ends where the residual add begins
    if any(comp[c].opcode == "parameter" for c in cuts):
        return None
    links = []
    starts: list[str | None] = [None, *cuts]
    ends = [*cuts, comp.root]
    for start, end in zip(starts, ends, strict=True):
        link = _sub(graph, comp, start, end)
        if link is None:
            return None
        links.append(link)
    return links


def _sub(graph: Graph, comp: Computation, start: str | None, end: str) -> Link | None:
    """The sub-graph computing ``end`` from ``start`` (a new parameter 0) and entry parameters."""
    need: set[str] = set()
    stack = [end]
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need.add(n)
        if n != start:
            stack.extend(comp[n].operands)
    if start is not None and start not in need:
        return None
    gb = GraphBuilder(f"{graph.name}.{end}")
    cb = gb.computation(f"{graph.name}.{end}")
    params: list[int | None] = []
    if start is not None:
        cb.add(start, "parameter", (), Attrs.of(index=0), declared=comp[start].type)
        params.append(None)
    for ins in comp.instructions:
        if ins.name not in need or ins.name == start:
            continue
        if ins.opcode == "parameter":
            cb.add(ins.name, "parameter", (), Attrs.of(index=len(params)), declared=ins.type, loc=ins.loc)
            params.append(int(ins.attrs["index"]))
        else:
            cb.add(ins.name, ins.opcode, ins.operands, ins.attrs, declared=ins.type, loc=ins.loc)
    cb.set_root(end)
    gb.add_computation(cb.build(), entry=True)
    return Link(gb.build(), tuple(params))


def chain_layers(links: list[Link], t: TileTarget) -> list[Gemm | Conv | Residual] | None:
    """The chain's layers as :class:`Gemm` s or :class:`~.conv.Conv` s (where ``t`` runs
    convolutions), or None where one is not a layer of :mod:`.gemm` / :mod:`.conv` of ``t``'s
    operand type reading the previous result as its input (Act's kernel then)."""
    layers: list[Gemm | Conv | Residual] = []
    for k, link in enumerate(links):
        g: Gemm | Conv | Residual | None = layer_of(link.graph, t)
        if g is None and k == len(links) - 1 and k > 0:
            g = recognize_residual(link.graph)
        if g is None or (isinstance(g, Gemm) and g.dtype != t.dtype) or (k > 0 and _input(g) != 0):
            return None
        layers.append(g)
    return layers


def _input(g: Gemm | Conv | Residual) -> int:
    return g.x if isinstance(g, Conv) else g.a


def chain_program(links: list[Link], layers: list[Gemm | Conv | Residual], t: TileTarget, hbm_size: int,
                  target: str) -> tuple[Program, int]:
    """The chain's program (module doc) and the distinct micro-kernels built.

    Raises:
        TileError: a layer the target cannot run, or the chain does not fit in HBM."""
    instructions: list = []
    inputs: list[Placement] = []
    constants: list[tuple[int, bytes]] = []
    built = 0
    base, prev_out = 0, None
    out: Placement | None = None
    for g, link in zip(layers, links, strict=True):
        if isinstance(g, Residual):
            assert prev_out is not None
            b_src = link.params[g.b]
            b_at = next((x.addr for x in inputs if x.index == b_src), None)    # the skip, already in HBM
            prog, end = residual_program(g, t, hbm_size, target, base, prev_out, b_at)
            mk = None
        elif isinstance(g, Gemm):
            tk = offer_for(g, t)
            p = plan(g, tk, hbm_size, base, prev_out)
            prog, mk = tile_program(p, tk, target)
            end = p.hbm_end
        else:
            prog, mk, _ = conv_program(g, t, hbm_size, target, base, prev_out)
            end = conv_hbm_end(g, t, hbm_size, base, prev_out)
        built += len(mk.built) if mk is not None else 1
        instructions += prog.instructions
        constants += prog.constants
        for x in prog.inputs:
            src = link.params[x.index]
            if src is not None:
                inputs.append(Placement(src, x.addr, x.type))
        out = prog.outputs[0]
        base, prev_out = end, out.addr
    assert out is not None
    inputs.sort(key=lambda x: x.index)
    return Program(target, tuple(instructions), tuple(inputs), (out,), tuple(constants)), built
