"""The type of a rule-language node: its element type and its (symbolic) shape.

What belongs here: :func:`result_dtype` (the element type of an operator application in a rule:
the one rule both the rule-text builder and the prover's symbolic encoder read) and
:func:`node_type`, which types a pattern bottom-up. Shapes come from the operator table's own shape
rules (:attr:`semantics.ops.OpDef.shape`: the function ``infer`` uses for concrete sizes, written
in integer arithmetic so it serves a rule's z3 sizes too); nothing here restates an operator's
shape rule. The operands are taken as valid: whether a rule is well formed for every size its
preconditions admit is the prover's question (:mod:`verif.symbolic`).
"""

from __future__ import annotations

from collections.abc import Sequence

from semantics.dtypes import DTYPES, PRED, DType
from semantics.ops import REGISTRY
from semantics.types import TensorType

from .dsl import Node, Op, TVar

__all__ = ["NotTypable", "node_type", "result_dtype"]


class NotTypable(Exception):
    """An operator the rule language has no shape rule for (the message names it)."""


def result_dtype(op: Op, operands: Sequence[DType], rule_dtype: DType) -> DType:
    """The element type of ``op`` applied to operands of ``operands``' types: its own ``out_dtype``
    where it states one (convert, bitcast, constant, iota, a widening dot, a typed broadcast);
    else ``pred`` for compare, the branches' / operand's for select and clamp, the operand's for
    everything else; a leaf without one has the rule's type."""
    if op.out_dtype is not None:
        return DTYPES[op.out_dtype]
    if op.opcode == "compare":
        return PRED
    if op.opcode in ("select", "clamp"):
        return operands[1]
    return operands[0] if operands else rule_dtype


def node_type(node: Node, rule_dtype: DType) -> TensorType:
    """The type of ``node`` in a rule instantiated for ``rule_dtype``: a :class:`TensorType` whose
    shape holds ints and the rule's z3 size terms."""
    if isinstance(node, TVar):
        return TensorType(DTYPES[node.dtype] if node.dtype else rule_dtype, tuple(node.shape))
    assert isinstance(node, Op)
    args = [node_type(a, rule_dtype) for a in node.args]
    opdef = REGISTRY.get(node.opcode)
    if opdef is None or opdef.shape is None:
        raise NotTypable(f"no shape rule for {node.opcode}")
    dt = result_dtype(node, [a.dtype for a in args], rule_dtype)
    # what the node states of its result (a shape: broadcast, reshape, iota, constant; a type alone:
    # convert, bitcast-convert), as the declared type of an HLO instruction states it
    declared = None
    if node.out_shape is not None or node.out_dtype is not None:
        declared = TensorType(dt, tuple(node.out_shape) if node.out_shape is not None else None)  # type: ignore[arg-type]
    return TensorType(dt, opdef.shape(args, node.attrs, declared))
