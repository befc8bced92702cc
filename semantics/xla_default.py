"""XLA's numerics (``mode="xla-default"`` and ``mode="xla-strict"`` of :func:`semantics.interp.evaluate`).

The operator table gives every operator its strict per-operation IEEE meaning (each result rounded
to its type). jax runs XLA:CPU with default flags, which differs in two measured ways
(docs/semantics.md, "Strict and XLA-default numerics"):

* FMA contraction (f32, f64): an ``add`` or ``subtract`` one of whose operands is a ``multiply`` of
  the same type whose only user it is (identical multiplies counted as one value, as XLA's CSE
  merges them; users that the root does not depend on are not counted, as XLA removes them)
  computes ``a*b +- c`` with one rounding (the multiply's
  product is not rounded). When both operands qualify, the first is contracted.
  ``subtract(m, c) = fma(a, b, -c)``, ``subtract(c, m) = fma(-a, b, c)``. A multiply with another
  user (an output, a reduce, a second add) is rounded as usual. The multiply may reach the add
  through a chain of single-user :data:`THROUGH_OPS` (data movement XLA fuses into the add's loop,
  and negate): the chain is applied to the multiply's operands (``negate`` to ``a`` only) and
  the add contracts their product. A NaN result with one NaN among a, b and c is that NaN, with
  its own sign: the hardware FMA forms (fmadd, fmsub, fnmadd, fnmsub) propagate an operand NaN
  unchanged, so the negations of the chain and of c do not flip it (measured); with several NaN
  operands, the first of a, b, c.
* bf16 excess precision: ``convert`` to f32 of a bf16 result of an arithmetic elementwise
  operator (:data:`EXCESS_OPS`) returns the operator computed in f32 on its bf16 operands widened
  (not rounded to bf16). Only the operator right before the convert is affected; f16 is rounded.

* negate folding (f16, f32, f64): ``add(a, negate(b))`` and ``add(negate(b), a)`` compute
  ``subtract(a, b)``, ``subtract(a, negate(b))`` computes ``add(a, b)`` (LLVM's canonical form,
  measured): the values are the same, but a NaN ``b`` keeps its sign instead of the negate's
  flipped one; pairs of negates cancel. ``subtract(negate(b), a)`` and bf16 (computed through f32
  converts) are unchanged.

``xla-default`` applies all three; ``xla-strict`` (XLA with ``--xla_allow_excess_precision=false``, as
the conformance oracle :mod:`semantics.xla_oracle` runs it) the contraction and the folding.

This module decides, per instruction, which applies; :mod:`semantics.interp` calls it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .ir import Computation, Instruction
from .types import TensorType

__all__ = ["MODES", "EXCESS_OPS", "THROUGH_OPS", "users", "contracted_multiply", "excess_precision_source",
           "excess_precision", "contraction", "folded_negate", "under_negates", "fma_nan"]

#: The interpreter's numeric modes.
MODES: tuple[str, ...] = ("strict", "xla-default", "xla-strict")

#: Single-operand (plus index/pad-value operands) operators through which XLA:CPU still contracts a
#: multiply into the add that reads their result (measured, f32[4096] normal operands; reverse,
#: broadcast, concatenate and select stop it; through ``pad``, and through a transpose that moves a
#: unit dimension (f32[5,1,5] -> f32[5,5,1]), XLA contracts some elements and not others, which is
#: not modelled).
THROUGH_OPS = frozenset({"reshape", "transpose", "copy", "slice", "dynamic-slice", "negate"})


def contraction(mode: str) -> bool:
    """Whether ``mode`` contracts f32/f64 multiply-add into an FMA."""
    return mode in ("xla-default", "xla-strict")


def excess_precision(mode: str) -> bool:
    """Whether ``mode`` keeps a bf16 operation's f32 value before a convert to f32."""
    return mode == "xla-default"

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
    """How many times each value is read by the live instructions of ``comp`` (those the root
    depends on: XLA removes dead code first; the root counts once more), identical multiplies
    counted as one value (XLA's CSE merges them before it emits code)."""
    live = {comp.root}
    for ins in reversed(comp.instructions):
        if ins.name in live:
            live.update(ins.operands)
    n: Counter = Counter()
    for ins in comp.instructions:
        if ins.name not in live:
            continue
        for o in ins.operands:
            n[_key(comp, o)] += 1
    n[_key(comp, comp.root)] += 1
    return n


def _float_type(t: Any, bits: tuple[int, ...]) -> bool:
    return isinstance(t, TensorType) and t.dtype.is_float and t.dtype.bits in bits and t.dtype.name != "bf16"


def contracted_multiply(comp: Computation, ins: Instruction, nusers: Counter
                        ) -> tuple[int, Instruction, list[Instruction]] | None:
    """(operand position, multiply, chain) when ``ins`` is an add/subtract XLA:CPU contracts into
    an FMA; ``chain`` lists the :data:`THROUGH_OPS` from the multiply's user to ``ins``'s operand."""
    if ins.opcode not in ("add", "subtract") or not _float_type(ins.type, (32, 64)):
        return None
    for pos, o in enumerate(ins.operands):
        chain: list[Instruction] = []
        m = comp.by_name[o]
        while m.opcode in THROUGH_OPS and nusers[_key(comp, m.name)] == 1 and m.type.dtype == ins.type.dtype:
            chain.append(m)
            m = comp.by_name[m.operands[0]]
        if m.opcode == "multiply" and nusers[_key(comp, m.name)] == 1 and m.type.dtype == ins.type.dtype:
            return pos, m, chain[::-1]
    return None


def folded_negate(comp: Computation, ins: Instruction) -> tuple[str, str, str] | None:
    """(opcode, lhs, rhs) that XLA:CPU computes for an add/subtract reading a negate of its own
    f16/f32/f64 type (module doc, "negate folding"), or None."""
    if ins.opcode not in ("add", "subtract") or not _float_type(ins.type, (16, 32, 64)):
        return None
    a, b = (comp.by_name[o] for o in ins.operands)

    def strip(x: Instruction) -> tuple[int, str]:
        """(number of negates, the value under them); LLVM cancels pairs of negations."""
        k = 0
        while x.opcode == "negate" and x.type == ins.type:
            k, x = k + 1, comp.by_name[x.operands[0]]
        return k, x.name

    kb, xb = strip(b)
    if kb:
        flip = (kb % 2 == 1) != (ins.opcode == "subtract")
        return ("subtract" if flip else "add"), a.name, xb
    ka, xa = strip(a)
    if ins.opcode == "add" and ka:
        return ("subtract", b.name, xa) if ka % 2 else ("add", xa, b.name)
    return None


def through_chain(chain: list[Instruction], a: np.ndarray, b: np.ndarray, values: dict[str, Any],
                  apply: Any) -> tuple[np.ndarray, np.ndarray]:
    """The multiply's operands carried through ``chain`` (from the multiply outwards), so that
    their elementwise product is the chain's result before rounding. ``apply(ins, operands)``
    evaluates one instruction of the table on the given operand arrays."""
    for ins in chain:
        rest = [values[o] for o in ins.operands[1:]]
        if ins.opcode == "negate":
            a = apply(ins, [a])
        else:
            a, b = apply(ins, [a, *rest]), apply(ins, [b, *rest])
    return a, b


def excess_precision_source(comp: Computation, ins: Instruction) -> Instruction | None:
    """The bf16 operator whose f32 value ``ins`` (a convert to f32) returns, or None."""
    if ins.opcode != "convert" or not isinstance(ins.type, TensorType) or ins.type.dtype.name != "f32":
        return None
    src = comp.by_name[ins.operands[0]]
    if src.opcode not in EXCESS_OPS or not isinstance(src.type, TensorType) or src.type.dtype.name != "bf16":
        return None
    return src


def under_negates(comp: Computation, name: str) -> str:
    """The value under a chain of negates of one type (``name`` itself when it is no negate)."""
    x = comp.by_name[name]
    while x.opcode == "negate" and x.type == comp.by_name[x.operands[0]].type:
        x = comp.by_name[x.operands[0]]
    return x.name


def fma_nan(r: np.ndarray, raw: list[np.ndarray]) -> np.ndarray:
    """``r`` (a contracted value) with each NaN element replaced by the first NaN among the raw
    operands ``raw`` (a, b, c before any negation), quieted, sign kept: what x86 FMA returns."""
    if not np.isnan(r).any():
        return r
    ui = np.dtype(f"u{r.dtype.itemsize}")
    quiet = ui.type(1 << (np.finfo(r.dtype).nmant - 1))
    out = r.copy()
    done = ~np.isnan(r)
    for x in raw:
        x = np.broadcast_to(np.asarray(x, dtype=r.dtype), r.shape)
        hit = ~done & np.isnan(x)
        if hit.any():
            out.view(ui)[hit] = x.view(ui)[hit] | quiet
            done |= hit
    return out


def fma_value(pos: int, m_operands: list[np.ndarray], other: np.ndarray, opcode: str, fma: Any) -> np.ndarray:
    """The contracted value: ``fma`` is the table's fma evaluation on three arrays."""
    a, b = m_operands
    if opcode == "add":
        return fma(a, b, other)
    if pos == 0:                      # m - c
        return fma(a, b, -other)
    return fma(-a, b, other)          # c - m
