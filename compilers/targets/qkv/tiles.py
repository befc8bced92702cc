"""QKV's offer to the middle end's row blocks (:mod:`compilers.middle.rows`): the block height
and the largest extent its instructions take (the gemm unit is 64 x 64, a d1 / d2 row holds 64
bf16, softmax takes rows of 64), and :func:`diagnose`, which says why a softmax written as jax
writes it is not the function of QKV's softmax instruction.

jax's ``jax.nn.softmax`` (and the hand-written ``e = exp(s - max(s)); e / sum(e)``) subtracts the
row maximum before ``exp`` and sums ``exp`` in f32 (``convert`` to f32, ``reduce`` add, ``convert``
back to bf16). QKV's ``softmax`` is ``exp(x) / sum(exp(x))`` with bf16 rounding of each ``exp`` and
a bf16 row sum, and QKV has no instruction for a row maximum, a subtraction or an f32 sum. The two
are different functions: not bit for bit (the rounding of ``exp(x)`` and of ``exp(x - m)``
differ, as do a bf16 and an f32 sum), and not within any useful bound (``exp(x)`` overflows to
infinity for x above 88.7, where jax's result is finite). So such a kernel exits 3 saying so
rather than compiling to a different function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from semantics.ir import Graph

from .description import ROW

__all__ = ["QkvTiles", "ROW_TILES", "diagnose"]


def diagnose(graph: Graph) -> str | None:
    """Why ``graph``'s softmax is not QKV's (module doc): a row maximum (a ``reduce`` whose
    computation is ``maximum``, in any computation: XLA's passes move it into a fusion) beside an
    ``exp``; None where there is no such softmax."""
    by_name = {c.name: c for c in graph.computations}
    instrs = [i for c in graph.computations for i in c.instructions]
    if not any(i.opcode == "exponential" for i in instrs):
        return None
    for ins in instrs:
        callee = by_name.get(str(ins.attrs.get("to_apply", ""))) if ins.opcode == "reduce" else None
        if callee is not None and callee.root_instruction.opcode == "maximum":
            t = ins.tensor_type
            return (f"no instruction computes reduce(maximum) on {t.dtype.name}{list(t.shape)} ('{ins.name}'): the "
                    f"softmax subtracts the row maximum before exp, as jax.nn.softmax does, and QKV's softmax "
                    f"instruction computes exp(x) / sum(exp(x)) without it and with a bf16 row sum (a different "
                    f"function: its exp overflows above x = 88.7); QKV has no max, subtract or f32-sum instruction")
    return None


@dataclass(frozen=True)
class QkvTiles:
    """``row_block``: rows per block kernel; ``max_extent``: the largest dimension a block may have;
    ``diagnose(graph)``: why the kernel cannot be QKV's (exit 3), or None."""

    row_block: int
    max_extent: int
    diagnose: Callable[[Graph], str | None] | None = None


ROW_TILES = QkvTiles(row_block=ROW, max_extent=ROW, diagnose=diagnose)
