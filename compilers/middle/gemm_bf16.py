"""Recognition of an f32 GEMM layer of bf16 operands: the float operator the middle end tiles.

What belongs here: :func:`recognize_bf16`, which reads a :class:`~.gemm.Gemm` with ``dtype="bf16"``
(no bias, raw tail: the result is the f32 dot itself) off a graph or says (``None``) that the
graph is not one, and :func:`layer_graph_bf16`, the graph tests and benchmarks compile. Nothing
here knows about accelerators.

The form recognized (M, K, N >= 1; the dot contracts A's dimension 1 with B's dimension 0)::

    out = f32[M,N] dot(A', B')          A' = A bf16[M,K] or convert_f32(A), B' likewise

A root ``copy`` is looked through; A and B are the graph's only parameters, each read only there.
The reference's value is one f32 FMA chain per output in K order (docs/semantics.md, "Accumulation
order"); a target whose instruction sums in another order states the sum its tiled program
computes and its bound against that chain (``TileOffer.blocked_sum`` / ``sum_bound``;
:func:`.compile.float_contract`).
"""

from __future__ import annotations

from semantics.build import Builder, tensor
from semantics.ir import Computation, Graph, Instruction
from semantics.types import Layout, TensorType

from .gemm import Gemm, Tail

__all__ = ["recognize_bf16", "layer_graph_bf16", "PAIRS", "PAIR_LAYOUT"]

#: the layout of B the bf16 tiles read: K in pairs, each pair of one column contiguous
PAIR_LAYOUT = Layout((1, 0), (2, 1))
PAIRS = str(PAIR_LAYOUT)


def _dtype(ins: Instruction) -> str:
    t = ins.type
    return t.dtype.name if isinstance(t, TensorType) else ""


def _param(comp: Computation, name: str) -> int | None:
    ins = comp[name]
    if ins.opcode == "convert" and _dtype(ins) == "f32":
        ins = comp[ins.operands[0]]
    if ins.opcode == "parameter" and _dtype(ins) == "bf16":
        return int(ins.attrs["index"])
    return None


def recognize_bf16(graph: Graph) -> Gemm | None:
    """The graph as a bf16 :class:`Gemm` (module doc's form), or None."""
    if len(graph.computations) != 1 or not isinstance(graph.result_type, TensorType):
        return None
    comp = graph.entry
    cur = comp.root_instruction
    while cur.opcode == "copy":
        cur = comp[cur.operands[0]]
    if (cur.opcode != "dot" or _dtype(cur) != "f32" or len(cur.tensor_type.shape) != 2
            or cur.attrs.get("lhs_contracting_dims") != (1,) or cur.attrs.get("rhs_contracting_dims") not in ((0,), (1,))
            or cur.attrs.get("lhs_batch_dims", ()) or cur.attrs.get("rhs_batch_dims", ())):
        return None
    a, b = _param(comp, cur.operands[0]), _param(comp, cur.operands[1])
    if a is None or b is None or a == b or len(comp.params) != 2:
        return None
    users = comp.users()
    if any(len(users[p]) != 1 for p in comp.params):
        return None
    pa = comp[comp.params[a]].tensor_type.shape
    pb = comp[comp.params[b]].tensor_type.shape
    if len(pa) != 2 or len(pb) != 2:
        return None
    m, k = pa
    b_t = cur.attrs.get("rhs_contracting_dims") == (1,)      # B stored [N, K]
    n = pb[0] if b_t else pb[1]
    types = tuple(comp[p].tensor_type for p in comp.params)
    return Gemm(m, k, n, a, b, None, Tail(None), 2, types, (m, n), dtype="bf16", b_t=b_t)


def layer_graph_bf16(m: int, k: int, n: int, b_layout: Layout | None = PAIR_LAYOUT, name: str = "layer_bf16",
                     b_t: bool = False) -> Graph:
    """``f32[M,N] dot(bf16[M,K], bf16[K,N]<b_layout>)`` (module doc's form; ``b_layout`` None:
    row-major as the text leaves it), the graph tests and benchmarks compile."""
    b = Builder(name)
    b.param("a", 0, tensor("bf16", m, k))
    b.param("b", 1, TensorType(tensor("bf16", k, n).dtype, (n, k) if b_t else (k, n), None if b_t else b_layout))
    b.op("d", "dot", "a", "b", type=tensor("f32", m, n), lhs_contracting_dims=(1,), rhs_contracting_dims=(1 if b_t else 0,))
    return b.build()
