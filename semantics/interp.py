"""The reference interpreter: evaluates a graph on numpy arrays with the operator table's
numpy implementations. The same walker, given ``mode="smt"``, builds z3 terms (see
:mod:`semantics.smt`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import xla_default as XD
from .errors import EvalError, InputError
from .ir import Computation, Graph
from .ops import REGISTRY, Env, OpError
from .types import TensorType, TupleType

__all__ = ["evaluate", "run_computation", "check_inputs"]


def check_inputs(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Check ``inputs`` against the entry parameters (count, dtype, shape) and return them as arrays.

    Raises:
        InputError: naming the parameter and what does not match.
    """
    ptypes = graph.param_types
    if len(inputs) != len(ptypes):
        raise InputError(f"graph '{graph.name}' takes {len(ptypes)} inputs, {len(inputs)} given")
    out = []
    for i, (x, t) in enumerate(zip(inputs, ptypes, strict=True)):
        name = graph.entry.params[i]
        if not isinstance(t, TensorType):
            raise InputError(f"parameter {i} ('{name}') has tuple type {t}, which inputs cannot give")
        a = np.asarray(x)
        if a.dtype != t.dtype.np:
            raise InputError(f"input {i} for parameter '{name}' has dtype {a.dtype}, expected {t.dtype} ({t.dtype.np})")
        if a.shape != t.shape:
            raise InputError(f"input {i} for parameter '{name}' has shape {a.shape}, expected {t.shape}")
        out.append(a)
    return out


def run_computation(graph: Graph, comp: Computation, args: Sequence[Any], mode: str = "eval",
                    extra: dict[str, Any] | None = None, batched: bool = False, numerics: str = "strict") -> Any:
    """Evaluate ``comp`` on ``args`` (one value per parameter) and return the root's value.

    ``mode`` is ``"eval"`` (numpy arrays) or ``"smt"`` (object arrays of z3 terms). ``batched``
    evaluates a scalar region elementwise over arrays of one common shape (reduce calls it so).
    ``numerics`` (eval only) is one of :data:`semantics.xla_default.MODES`.
    """
    values: dict[str, Any] = {}
    dtypes: dict[str, Any] = {}
    xla = numerics != "strict" and mode == "eval"
    nusers = XD.users(comp) if xla else None

    def call(name: str, call_args: list[Any]) -> Any:
        # regions are called vectorized: scalar parameters receive arrays of a common shape
        return run_computation(graph, graph.computation(name), call_args, mode, extra, batched=True, numerics=numerics)

    for ins in comp.instructions:
        op = REGISTRY[ins.opcode]
        if ins.opcode == "parameter":
            v = args[ins.attrs["index"]]
        elif xla and (v := _xla_value(graph, comp, ins, values, nusers, call, numerics)) is not None:
            pass
        else:
            fn = op.evaluate if mode == "eval" else op.smt
            if fn is None:
                from .errors import SmtError
                raise SmtError(f"{ins.opcode} has no SMT encoding", ins.loc, f"instruction '{ins.name}'")
            env = Env(graph=graph, call=call, extra=dict(extra or {}))
            env.extra["operand_dtypes"] = [dtypes.get(o) for o in ins.operands]
            env.extra["operand_types"] = [comp.by_name[o].type for o in ins.operands]
            try:
                v = fn([values[o] for o in ins.operands], ins.attrs, ins.type, env)
            except OpError as e:
                raise EvalError(str(e), ins.loc, f"instruction '{ins.name}'") from None
        values[ins.name] = v
        if isinstance(ins.type, TensorType):
            dtypes[ins.name] = ins.type.dtype
            if mode == "eval":
                assert isinstance(v, np.ndarray) and v.dtype == ins.type.dtype.np and (
                    batched or v.shape == ins.type.shape), (
                    f"{ins.name}: {ins.opcode} produced {getattr(v, 'dtype', type(v))}{getattr(v, 'shape', '')}, "
                    f"expected {ins.type}")
    return values[comp.root]


def _xla_value(graph: Graph, comp: Computation, ins: Any, values: dict[str, Any], nusers: Any,
               call: Any, numerics: str) -> np.ndarray | None:
    """The value XLA gives ``ins`` in the ``numerics`` mode where it differs from the strict
    meaning (FMA contraction, negate folding; bf16 excess precision in ``xla-default``), else None."""
    hit = XD.contracted_multiply(comp, ins, nusers) if XD.contraction(numerics) else None
    if hit is not None:
        pos, m, chain = hit
        fma = REGISTRY["fma"]

        def f(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
            a, b, c = np.broadcast_arrays(a, b, c)
            return fma.evaluate([a, b, c], ins.attrs, ins.type, Env(graph=graph, call=call))

        def apply(step: Any, args: list[np.ndarray]) -> np.ndarray:
            types = [comp.by_name[o].type for o in step.operands]
            env = Env(graph=graph, call=call, extra={"operand_dtypes": [t.dtype for t in types], "operand_types": types})
            return np.asarray(REGISTRY[step.opcode].evaluate(args, step.attrs, step.type, env))
        a, b = XD.through_chain(chain, *[values[o] for o in m.operands], values, apply)
        other = values[ins.operands[1 - pos]]
        r = XD.fma_value(pos, [a, b], other, ins.opcode, f)
        moved = [i for i in chain if i.opcode != "negate"]
        raw = [*XD.through_chain(moved, *[values[o] for o in m.operands], values, apply),
               values[XD.under_negates(comp, ins.operands[1 - pos])]]
        return XD.fma_nan(r, raw)
    fold = XD.folded_negate(comp, ins)
    if fold is not None:
        opcode, lhs, rhs = fold
        types = [comp.by_name[lhs].type, comp.by_name[rhs].type]
        env = Env(graph=graph, call=call, extra={"operand_dtypes": [t.dtype for t in types], "operand_types": types})
        return np.asarray(REGISTRY[opcode].evaluate([values[lhs], values[rhs]], ins.attrs, ins.type, env))
    src = XD.excess_precision_source(comp, ins) if XD.excess_precision(numerics) else None
    if src is not None:
        f32 = ins.type.dtype
        ops = [values[o] for o in src.operands]
        wide = [o.astype(np.float32) if o.dtype == src.type.dtype.np else o for o in ops]
        otypes = [dataclasses.replace(comp.by_name[o].type, dtype=f32)
                  if comp.by_name[o].type.dtype == src.type.dtype else comp.by_name[o].type for o in src.operands]
        env = Env(graph=graph, call=call, extra={"operand_dtypes": [t.dtype for t in otypes], "operand_types": otypes})
        try:
            return REGISTRY[src.opcode].evaluate(wide, src.attrs, ins.type, env)
        except OpError as e:
            raise EvalError(str(e), ins.loc, f"instruction '{ins.name}'") from None
    return None


def evaluate(graph: Graph, inputs: Sequence[np.ndarray], mode: str = "strict") -> list[np.ndarray]:
    """Run the entry computation on ``inputs`` and return its outputs as a flat list
    (the root's value, or the elements of a root tuple).

    ``mode`` is ``"strict"`` (every operation rounded to its type: the operator table's meaning),
    ``"xla-default"`` (what XLA:CPU computes with its default flags, as jax runs it: FMA
    contraction of f32/f64 multiply-add, bf16 excess precision; see :mod:`semantics.xla_default`)
    or ``"xla-strict"`` (XLA:CPU with ``--xla_allow_excess_precision=false``, as the conformance
    oracle runs it: the contraction only).

    Raises:
        InputError: the inputs do not match the parameters, or ``mode`` is unknown.
    """
    if mode not in XD.MODES:
        raise InputError(f"unknown numeric mode '{mode}' (expected one of {', '.join(XD.MODES)})")
    args = check_inputs(graph, inputs)
    r = run_computation(graph, graph.entry, args, numerics=mode)
    if isinstance(graph.result_type, TupleType):
        return list(r)
    return [r]
