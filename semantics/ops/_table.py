"""The operator table: one :class:`OpDef` per HLO opcode.

Each entry holds everything the project knows about one operator: arity, attributes, the shape
and dtype rule (``infer``), the numpy implementation (``evaluate``), the z3 encoding (``smt``)
and the documentation of its dtype rules and the XLA behaviour they reproduce. The builder, the
interpreter, the SMT encoder and docs/semantics.md all read this table; nothing else restates an
operator's rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir import Attrs, Graph
from ..types import Type

__all__ = ["AttrSpec", "OpDef", "OpError", "Env", "REGISTRY", "register", "get_op"]


class OpError(Exception):
    """Raised by an operator's rule; the caller adds the instruction name and source location."""


@dataclass(frozen=True)
class AttrSpec:
    """An attribute an operator takes.

    ``kind`` decides how the text parser reads and the printer writes the value:
    ``ints`` ({1,0}), ``int`` (3), ``slice`` ({[0:4:1], ...}), ``padding`` (0_1_0x2_2_0),
    ``enum`` (EQ), ``computation`` (%region).
    """

    name: str
    kind: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()


@dataclass
class Env:
    """What an operator rule may look up besides its operands: the graph (for regions) and a
    callback that evaluates / encodes a called computation."""

    graph: Graph | None = None
    call: Callable[[str, list[Any]], Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


InferFn = Callable[[list[Type], Attrs, Type | None, Env], Type]
EvalFn = Callable[[list[Any], Attrs, Type, Env], Any]


@dataclass(frozen=True)
class OpDef:
    """One operator.

    Attributes:
        name: the HLO opcode.
        arity: (min, max) operand count; max None for variadic.
        attrs: attributes the operator accepts.
        infer: (operand types, attrs, declared type or None, env) -> result type; raises OpError.
        evaluate: numpy implementation: (operand arrays, attrs, result type, env) -> array.
        smt: z3 implementation over object arrays of z3 terms, same signature; None when the
            operator has no encoding.
        category: family name used in docs.
        dtypes: one line: which element types it accepts and what it returns.
        xla: the XLA CPU behaviour the implementation reproduces (edge cases, rounding).
        uninterpreted: the SMT encoding is an uninterpreted function (exp, log, tanh).
        needs_declared: the result shape can only come from the declared type (broadcast, ...).
        scalar: for elementwise operators, the z3 semantics of one element:
            (operand terms, attrs, operand dtypes, result dtype) -> term. ``smt`` maps it over
            arrays; the symbolic-shape prover (verif/) applies it at an arbitrary index.
    """

    name: str
    arity: tuple[int, int | None]
    attrs: tuple[AttrSpec, ...]
    infer: InferFn
    evaluate: EvalFn
    smt: EvalFn | None
    category: str
    dtypes: str
    xla: str
    uninterpreted: bool = False
    needs_declared: bool = False
    scalar: Callable[[list[Any], Attrs, list[Any], Any], Any] | None = None

    def attr_spec(self, name: str) -> AttrSpec | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"operator {op.name} registered twice")
    REGISTRY[op.name] = op
    return op


def get_op(name: str) -> OpDef | None:
    return REGISTRY.get(name)
