"""Gates: the sum of two int8 products over one output, then a tail -- an RNN cell's gate as jax
writes it (``x @ Wx + h @ Wh (+ b)``, an LSTM's or GRU's), tiled as one GEMM.

What belongs here: :class:`Gate` and :func:`recognize_gate` (the form, read off a graph),
:func:`gate_program` (its program) and :func:`gate_takes` (which gates the middle end takes).
Nothing here names a target.

The form (M, K1, K2, N >= 1; each product row-major, contracting A's last dimension with B's 0;
A of rank > 2, as jax writes a batch of sequences, is the GEMM of its ``[prod(leading), K]`` view)::

    acc = add(dot(A1', B1'), dot(A2', B2'))     A' = A s8 or convert_s32(A), as :mod:`.gemm`
    acc' = acc | add(acc, broadcast(bias s32[N], dimensions={1}))    (any association of the adds)
    out = tail(acc')                            :func:`.gemm.tail_of`'s tails

The identity it rests on: ``A1 . B1 + A2 . B2 = [A1 | A2] . [B1 ; B2]`` (a contraction over K1
and then K2 is one over K1 + K2; integer adds, so the order of the sum does not matter: the
accumulator wraps modulo 2^32 either way). The program places B1 and B2 back to back, which is
``[B1 ; B2]`` row-major with no instruction, and copies A1 and A2 side by side into ``[A1 | A2]``
with the target's ``copy`` micro-kernel (row blocks of ``bm`` rows x ``bk`` bytes), then runs
:mod:`.schedule`'s GEMM of the two over K1 + K2 (the accumulator sums both products before the
tail, as the reference does).

A gate whose two products are each one block of the target (``one_block_to_act``: Gemmini's
16 x 16 x 16) is left to Act, whose instruction selection compiles it by itself (a matmul, then
one accumulating into the same rows: the output-stationary path a campaign checks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from semantics.dtypes import DTYPES
from semantics.ir import Computation, Graph, Instruction
from semantics.types import TensorType

from ..program import Concrete, Placement, Program
from .gemm import Gemm, _dtype, _param, tail_of
from .schedule import ALIGN, MicroKernels, TileTarget, _align, check_strides, offer_for, plan, tile_program
from .tiled import tiles

__all__ = ["Gate", "recognize_gate", "gate_takes", "gate_program"]


@dataclass(frozen=True)
class Gate:
    """``tail(A1 . B1 + A2 . B2 (+ bias))``: ``a`` / ``b`` the parameter indices of A1, A2 / B1,
    B2, ``ks`` = (K1, K2), ``bias`` its index or None; ``gemm`` the concatenated GEMM (its
    parameters 0 = [A1 | A2], 1 = [B1 ; B2], 2 = the bias)."""

    a: tuple[int, int]
    b: tuple[int, int]
    ks: tuple[int, int]
    bias: int | None
    gemm: Gemm
    param_types: tuple[TensorType, ...]


def _add_tree(comp: Computation, ins: Instruction, adds: list[Instruction], terms: list[Instruction]) -> None:
    """The s32 adds of the tree rooted at ``ins`` and their operands that are not such adds."""
    if ins.opcode == "add" and _dtype(ins) == "s32":
        adds.append(ins)
        for o in ins.operands:
            _add_tree(comp, comp[o], adds, terms)
    else:
        terms.append(ins)


def recognize_gate(graph: Graph) -> Gate | None:
    """The graph as a :class:`Gate`, or None when it is not the module doc's form."""
    if len(graph.computations) != 1 or not isinstance(graph.result_type, TensorType):
        return None
    comp = graph.entry
    found = tail_of(comp, comp.root_instruction)
    if found is None or found[1].wrap or found[1].u8:
        return None
    acc, tail = found
    adds: list[Instruction] = []
    terms: list[Instruction] = []
    _add_tree(comp, acc, adds, terms)
    dots = [t for t in terms if t.opcode == "dot"]
    rest = [t for t in terms if t.opcode != "dot"]
    if len(dots) != 2 or len(rest) > 1:
        return None
    users = comp.users()
    if any(len(users[a.name]) != 1 for a in adds if a is not acc):
        return None                 # an intermediate sum read elsewhere: not one gate
    bias = None
    if rest:
        bi = rest[0]
        if bi.opcode != "broadcast" or bi.attrs.get("dimensions") != (len(acc.tensor_type.shape) - 1,):
            return None
        bias = _param(comp, bi.operands[0], "s32")
        if bias is None:
            return None
    a: list[int] = []
    b: list[int] = []
    ks: list[int] = []
    m = n = None
    for d in dots:
        rank = len(d.tensor_type.shape)
        if (_dtype(d) != "s32" or rank < 2 or d.attrs.get("lhs_contracting_dims") != (rank - 1,)
                or d.attrs.get("rhs_contracting_dims") != (0,) or d.attrs.get("lhs_batch_dims", ())
                or d.attrs.get("rhs_batch_dims", ())):
            return None
        ai, bi_ = _param(comp, d.operands[0], "s8"), _param(comp, d.operands[1], "s8")
        if ai is None or bi_ is None:
            return None
        ta, tb = comp[comp.params[ai]].tensor_type, comp[comp.params[bi_]].tensor_type
        if len(ta.shape) < 2 or len(tb.shape) != 2 or not ta.row_major or not tb.row_major:
            return None
        # leading batch / sequence dimensions of A: the GEMM of its [prod(leading), K] view
        mm, nn = math.prod(d.tensor_type.shape[:-1]), d.tensor_type.shape[-1]
        if (m, n) != (None, None) and (m, n) != (mm, nn):
            return None
        m, n = mm, nn
        a.append(ai)
        b.append(bi_)
        ks.append(ta.shape[-1])
    idx = [*a, *b] + ([bias] if bias is not None else [])
    if len(set(idx)) != len(idx) or len(comp.params) != len(idx):
        return None
    if any(len(users[p]) != 1 for p in comp.params):
        return None
    if bias is not None and comp[comp.params[bias]].tensor_type.shape != (n,):
        return None
    assert m is not None and n is not None
    k = ks[0] + ks[1]
    s8 = DTYPES["s8"]
    types = tuple(comp[p].tensor_type for p in comp.params)
    inner = (TensorType(s8, (m, k)), TensorType(s8, (k, n))) + ((types[bias],) if bias is not None else ())
    g = Gemm(m, k, n, 0, 1, 2 if bias is not None else None, tail, len(inner), inner,
             tuple(graph.result_types[0].shape))
    return Gate((a[0], a[1]), (b[0], b[1]), (ks[0], ks[1]), bias, g, types)


def gate_takes(gate: Gate, t: TileTarget) -> bool:
    """Whether the middle end takes ``gate`` on ``t``: it has the ``copy`` micro-kernel, and the
    gate is not two one-block products left to Act (module doc)."""
    if t.copy is None:
        return False
    g = gate.gemm
    one = all((g.m, k, g.n) == tuple(t.block) for k in gate.ks)
    return not (t.one_block_to_act and one)


def _a_parts(gate: Gate, a1_at: int, a2_at: int) -> list[tuple[int, int, int]]:
    """Where A1 and A2 lie, their widths, and the column of ``[A1 | A2]`` each is copied to."""
    k1, k2 = gate.ks
    return [(a1_at, k1, 0), (a2_at, k2, k1)]


def gate_program(gate: Gate, t: TileTarget, hbm_size: int, target: str) -> tuple[Program, int]:
    """The gate's program (module doc) and the micro-kernels built. Raises :class:`TileError`
    where the target cannot run it."""
    g = gate.gemm
    tk = offer_for(g, t)
    k1, k2 = gate.ks
    check_strides(t, {"gate's A": g.k})
    a1_at = _align(0) + ALIGN
    a2_at = _align(a1_at + g.m * k1)
    p = plan(g, tk, hbm_size, base=_align(a2_at + g.m * k2))
    inner, mk = tile_program(p, tk, target)      # (plan raises TileError where HBM is too small)
    copies = MicroKernels(t)
    pro: list[Concrete] = []
    bm, bk, _ = t.block
    for src, k, col in _a_parts(gate, a1_at, a2_at):
        for r0, r in tiles(g.m, bm):
            for c0, c in tiles(k, bk):
                copies.emit(pro, "copy", (r, c), (src + r0 * k + c0, p.a_at + r0 * g.k + col + c0), (k, g.k))
    at = {x.index: x for x in inner.inputs}
    ty = gate.param_types
    inputs = [Placement(gate.a[0], a1_at, ty[gate.a[0]]), Placement(gate.a[1], a2_at, ty[gate.a[1]]),
              Placement(gate.b[0], at[1].addr, ty[gate.b[0]]),
              Placement(gate.b[1], at[1].addr + k1 * g.n, ty[gate.b[1]])]
    if gate.bias is not None:
        inputs.append(Placement(gate.bias, at[2].addr, ty[gate.bias]))
    inputs.sort(key=lambda x: x.index)
    prog = replace(inner, instructions=(*pro, *inner.instructions), inputs=tuple(inputs))
    return prog, len(mk.built) + len(copies.built)

