"""The numeric contract of a tiled program whose float sum is not the reference's order.

What belongs here: :class:`TiledContract` and :func:`tiled_contract`. This is a contract of a
whole program against the HLO kernel, not an instruction's :class:`compilers.isa.NumericContract`
(how a backend may differ from an instruction's semantics): ``tdpbf16ps`` stays exact against its
semantics; it is the composition of blocks that sums in another order. Every tiled integer program
equals the reference bit for bit; a tiled f32 layer of bf16 operands (:mod:`.gemm_bf16`) sums in
the order the target's instruction does (AMX: two FMA chains per 32-element block), which the
target's offer states as ``blocked_sum`` (the program's result, bit for bit) and ``sum_bound`` (its
declared distance to the reference's f32 chain, a :class:`semantics.compare.Bound`). A checker asks
here whether a graph compiled for a target carries such a contract, then compares the program's
outputs with the model bit for bit and with the reference within the bound
(:func:`accv.check.check_program`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from semantics.ir import Graph

from .gemm import Gemm
from .gemm_bf16 import recognize_bf16

__all__ = ["TiledContract", "tiled_contract"]


@dataclass(frozen=True)
class TiledContract:
    """``model(inputs)``: the program's outputs bit for bit (NaN positions exactly, which NaN only on
    the ``nan_bits`` backends); ``bounds(inputs)``: one
    :class:`semantics.compare.Bound` per output against the reference; ``what``: the model in words."""

    gemm: Gemm
    what: str
    model: Callable[[Sequence[np.ndarray]], list[np.ndarray]]
    bounds: Callable[[Sequence[np.ndarray]], list[object]]
    #: backends whose NaN bits the model states; on the others (all, for AMX) a NaN matches any NaN:
    #: which NaN an add of two NaNs returns is open in the dialect (the reference's numpy loops pick
    #: by position) and the hardware's TDPBF16PS NaNs are not modelled (the amx description)
    nan_bits: tuple[str, ...] = ()


def tiled_contract(graph: Graph, target: str) -> TiledContract | None:
    """The contract of ``graph``'s tiled program for ``target``, or None where the program is held
    to the reference bit for bit (every other kernel)."""
    from ..targets import TARGETS, target_package

    if target not in TARGETS:
        return None
    make = target_package(target).tiles
    if make is None:
        return None
    offer = make()
    for_dtype = getattr(offer, "for_dtype", None)
    g = recognize_bf16(graph)
    if g is None or for_dtype is None:
        return None
    t = for_dtype(g.dtype)
    if t is None or t.blocked_sum is None or t.sum_bound is None:
        return None
    model, bound = t.blocked_sum, t.sum_bound

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(model(xs[g.a], xs[g.b]))]

    def bounds(xs: Sequence[np.ndarray]) -> list[object]:
        return [bound(xs[g.a], xs[g.b], None)]

    return TiledContract(g, f"the {target} blocked bf16 sum ({model.__module__}.{model.__name__})", run, bounds)
