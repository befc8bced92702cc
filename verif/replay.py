"""Counterexample replay: a refutation from z3 is turned into concrete sizes, attributes and input
tensors, both sides of the rule are built as graphs and run on the reference interpreter, and the
outputs must differ. If they do not, the prover (or an encoding) is wrong: :class:`ProverBug`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import z3

from rewrite_rules.dsl import Node, Rule, RuleCtx
from rewrite_rules.instantiate import emit, evaluator
from semantics.dtypes import DTYPES
from semantics.errors import AccvError
from semantics.interp import evaluate
from semantics.ir import Graph
from semantics.ops import _z3util as Z

from .results import Counterexample, ProverBug
from .symbolic import Encoder

__all__ = ["replay_symbolic", "replay_graphs", "outputs_differ", "nan_signs_differ", "hlo_text"]


def outputs_differ(a: np.ndarray, b: np.ndarray) -> bool:
    """Differ as values: shape, dtype, or bits (any NaN equals any NaN: SMT has one NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return True
    if a.dtype.kind in "biu":
        return bool((a != b).any())
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(fa) & np.isnan(fb)
    bits_a = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    bits_b = b.view(np.dtype(f"u{b.dtype.itemsize}"))
    return bool(((bits_a != bits_b) & ~nan).any())


def nan_signs_differ(a: np.ndarray, b: np.ndarray) -> bool:
    """Some element is NaN on both sides with different sign bits (what the provers check where
    :func:`semantics.ops._z3util.nan_sign` models the sign; :func:`outputs_differ` ignores it)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.dtype.kind in "biu":
        return False
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    return bool((np.isnan(fa) & np.isnan(fb) & (np.signbit(fa) != np.signbit(fb))).any())


def hlo_text(g: Graph, name: str) -> str:
    """``g`` as HLO text whose module is called ``name`` (rule names are not HLO identifiers)."""
    from semantics.hlo_printer import print_hlo

    text = print_hlo(g)
    first, _, rest = text.partition("\n")
    if first.startswith("HloModule "):
        tail = first[first.index(", entry_computation_layout"):] if ", entry_computation_layout" in first else ""
        first = f"HloModule {name}{tail}"
    return first + "\n" + rest


def replay_graphs(gl: Graph, gr: Graph, sizes: dict[str, int], inputs: list[np.ndarray] | None,
                  reason: str) -> Counterexample:
    if inputs is None:
        rng = np.random.default_rng(0)
        from semantics.inputs import random_array
        from semantics.types import TensorType
        inputs = [random_array(rng, t) for t in gl.param_types if isinstance(t, TensorType)]
    lo = evaluate(gl, inputs)[0]
    ro = evaluate(gr, inputs)[0]
    names = list(gl.entry.params)
    cex = Counterexample(dict(sizes), dict(zip(names, inputs, strict=True)), lo, ro, reason=reason,
                         lhs_hlo=hlo_text(gl, "lhs"), rhs_hlo=hlo_text(gr, "rhs"))
    if not outputs_differ(lo, ro) and not nan_signs_differ(lo, ro):
        raise ProverBug(f"counterexample does not replay ({reason}) at {sizes}: both sides give {lo.tolist()}")
    return cex


def replay_symbolic(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, dtype: str, model: z3.ModelRef,
                    enc: Encoder, idx: list[Any], structural: str = "") -> Counterexample:
    """Build the concrete instance a symbolic-proof model describes and replay it."""
    ev = evaluator(model=model)
    sizes: dict[str, int] = {}
    for t in ctx.tensors.values():
        for n in t.shape:
            sizes[str(n)] = ev(n)
    for v in ctx.symbols:
        sizes[str(v)] = ev(v)
    try:
        gl, gr = emit(ctx.tensors, [lhs, rhs], DTYPES[dtype], ev, rule.name)
    except AccvError as e:
        gl = emit(ctx.tensors, [lhs], DTYPES[dtype], ev, rule.name)[0]
        inputs = _inputs_from_model(gl, ctx, model, enc)
        lo = evaluate(gl, inputs)[0]
        return Counterexample(sizes, dict(zip(gl.entry.params, inputs, strict=True)), lo, lo,
                              reason=f"the right side is not a valid graph: {e.reason}", lhs_hlo=hlo_text(gl, "lhs"))
    inputs = _inputs_from_model(gl, ctx, model, enc)
    where = tuple(ev(i) for i in idx) if idx else None
    cex = replay_graphs(gl, gr, sizes, inputs, structural or "outputs differ")
    cex.index = where
    return cex


def _inputs_from_model(g: Graph, ctx: RuleCtx, model: z3.ModelRef, enc: Encoder) -> list[np.ndarray]:
    from semantics.types import TensorType

    out = []
    for name, t in zip(g.entry.params, g.param_types, strict=True):
        assert isinstance(t, TensorType)
        arr = np.zeros(t.shape, dtype=t.dtype.np)
        if name in enc.inputs:
            for i in np.ndindex(t.shape):
                arr[i] = Z.model_value(model, enc.element(name, [z3.IntVal(k) for k in i]), t.dtype)
        out.append(arr)
    return out
