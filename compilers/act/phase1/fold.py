"""Values of the compile-time constants that rewrites make (seed 000 §5.3).

Lowering (:mod:`.terms`) folds every operator whose operands are literals, so the kernel and
the right sides of rules enter the e-graph with their constants already evaluated. A rewrite
can still make an e-class constant later: ``subtract(x, x) => 0`` unites x - x with a literal,
and the ``clamp`` above it then has only constant operands but no literal e-node. Module 3's
constant detection (:func:`.extract.constant_witnesses`) finds such classes bottom-up with, for
each, the e-node that made it constant; :func:`value` computes the value a pii graph places
in the constant section by evaluating those e-nodes with the reference interpreter's
operators (the same functions that fold at lowering), only for the classes a pii graph uses.

Regions (``to_apply``) are named by content in the e-graph (:func:`.terms.region_key`);
:func:`.terms.canon_attrs` records a computation of each key so that a reduce can be
evaluated here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.errors import AccvError
from semantics.ir import Attrs, Literal
from semantics.ops import REGISTRY, Env

from ..egraph import EGraph, ENode, NodeInfo, Snapshot
from ..egraph.terms import lit_info, region_of

__all__ = ["evaluate", "value"]


def evaluate(info: NodeInfo, values: list[np.ndarray], dtypes: list[Any]) -> np.ndarray | None:
    """The value of the operator e-node ``info`` on literal operands, or None when it cannot be
    evaluated here (a region this process never lowered, or operands the operator rejects)."""
    op = REGISTRY.get(info.name)
    if op is None:
        return None
    region = dict(info.attrs).get("to_apply")
    if region is not None and region_of(region) is None:
        return None
    from semantics.interp import run_computation

    def call(key: str, args: list[Any]) -> Any:
        graph, name = region_of(key)  # type: ignore[misc]
        return run_computation(graph, graph.computation(name), args, "eval", None, batched=True)

    env = Env(graph=None, call=call, extra={"operand_dtypes": list(dtypes)})
    try:
        v = op.evaluate(list(values), Attrs(tuple(info.attrs)), info.type, env)
    except (AccvError, ValueError, TypeError, IndexError, KeyError, ArithmeticError):
        return None
    v = np.asarray(v)
    if v.dtype != info.type.dtype.np or tuple(v.shape) != tuple(info.type.shape):
        return None
    return v


def value(eg: EGraph, snap: Snapshot, witness: list[ENode | None], c: int,
          memo: dict[int, Literal | None]) -> Literal | None:
    """The value of constant class ``c``: its witness e-node's literal, or the witness operator
    evaluated on its operands' values (their witnesses in turn, memoized in ``memo``); None
    where some step cannot be evaluated here."""
    if c in memo:
        return memo[c]
    stack = [c]
    while stack:        # iterative: a chain of constant operators can be long
        k = stack[-1]
        if k in memo:       # an operand met twice
            stack.pop()
            continue
        w = witness[k]
        if w is None:
            memo[k] = None
            stack.pop()
            continue
        info = eg.infos[w.info]
        if info.kind == "lit":
            memo[k] = info.literal
            stack.pop()
            continue
        todo = [x for x in w.children if x not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        kids = [memo[x] for x in w.children]
        if any(x is None for x in kids):
            memo[k] = None
            continue
        v = evaluate(info, [x.to_array() for x in kids], [x.dtype for x in kids])  # type: ignore[union-attr]
        memo[k] = None if v is None else lit_info(v, info.type).literal
    return memo[c]
