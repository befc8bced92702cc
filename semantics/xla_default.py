"""XLA's default-flag numerics (``mode="xla-default"`` of :func:`semantics.interp.evaluate`).

The operator table gives every operator its strict per-operation IEEE meaning (each result rounded
to its type). jax runs XLA:CPU with default flags, which differs in two measured ways
(docs/semantics.md, "Strict and XLA-default numerics"):

* FMA contraction (f32, f64): an ``add`` or ``subtract`` one of whose operands is a ``multiply`` of
  the same type whose only user it is (identical multiplies counted as one value, as XLA's CSE
  merges them) computes ``a*b +- c`` with one rounding (the multiply's
  product is not rounded). When both operands qualify, the first is contracted.
  ``subtract(m, c) = fma(a, b, -c)``, ``subtract(c, m) = fma(-a, b, c)``. A multiply with another
  user (an output, a reduce, a second add) is rounded as usual.
* bf16 excess precision: ``convert`` to f32 of a bf16 result of an arithmetic elementwise
  operator (:data:`EXCESS_OPS`) returns the operator computed in f32 on its bf16 operands widened
  (not rounded to bf16). Only the operator right before the convert is affected; f16 is rounded.

This module decides, per instruction, which of the two applies; :mod:`semantics.interp` calls it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .ir import Computation, Instruction
from .types import TensorType

__all__ = ["MODES", "EXCESS_OPS", "users", "contracted_multiply", "excess_precision_source"]

#: The interpreter's numeric modes.
MODES: tuple[str, ...] = ("strict", "xla-default")

#: bf16 operators whose f32 value a following convert to f32 keeps (XLA's float normalization
#: computes them in f32 and the simplifier removes the f32->bf16->f32 convert pair).
EXCESS_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "negate", "abs", "sqrt",
    "rsqrt", "exponential", "log", "tanh", "cbrt", "erf", "logistic", "exponential-minus-one",
    "log-plus-one", "atan2", "power", "sign", "round-nearest-even", "clamp",
})


def _key(comp: Computation, name: str) -> Any:
    """Identical multiplies (same operands and type) are one value after XLA's CSE."""
    ins = comp.by_name[name]
    return ("multiply", tuple(ins.operands), ins.type) if ins.opcode == "multiply" else name


def users(comp: Computation) -> Counter:
    """How many times each value is read in ``comp`` (the root counts once more), identical
    multiplies counted as one value (XLA's CSE merges them before it emits code)."""
    n: Counter = Counter()
    for ins in comp.instructions:
        for o in ins.operands:
            n[_key(comp, o)] += 1
    n[_key(comp, comp.root)] += 1
    return n


def _float_type(t: Any, bits: tuple[int, ...]) -> bool:
    return isinstance(t, TensorType) and t.dtype.is_float and t.dtype.bits in bits and t.dtype.name != "bf16"


def contracted_multiply(comp: Computation, ins: Instruction, nusers: Counter) -> tuple[int, Instruction] | None:
    """(operand position, multiply) when ``ins`` is an add/subtract XLA:CPU contracts into an FMA."""
    if ins.opcode not in ("add", "subtract") or not _float_type(ins.type, (32, 64)):
        return None
    for pos, o in enumerate(ins.operands):
        m = comp.by_name[o]
        if m.opcode == "multiply" and nusers[_key(comp, o)] == 1 and m.type == ins.type:
            return pos, m
    return None


def excess_precision_source(comp: Computation, ins: Instruction) -> Instruction | None:
    """The bf16 operator whose f32 value ``ins`` (a convert to f32) returns, or None."""
    if ins.opcode != "convert" or not isinstance(ins.type, TensorType) or ins.type.dtype.name != "f32":
        return None
    src = comp.by_name[ins.operands[0]]
    if src.opcode not in EXCESS_OPS or not isinstance(src.type, TensorType) or src.type.dtype.name != "bf16":
        return None
    return src


def fma_value(pos: int, m_operands: list[np.ndarray], other: np.ndarray, opcode: str, fma: Any) -> np.ndarray:
    """The contracted value: ``fma`` is the table's fma evaluation on three arrays."""
    a, b = m_operands
    if opcode == "add":
        return fma(a, b, other)
    if pos == 0:                      # m - c
        return fma(a, b, -other)
    return fma(-a, b, other)          # c - m
