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

__all__ = ["AttrSpec", "OpDef", "OpError", "Env", "REGISTRY", "XlaBound", "register", "get_op"]


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


@dataclass(frozen=True)
class XlaBound:
    """How far XLA:CPU's own approximation of a float operator may be from the reference
    (measured; docs/semantics.md, "XLA's approximations"): ``ulps`` per result dtype, in ulps of
    that type; ``near_one``: also an absolute bound of that many ulps of 1.0 (log near 1, whose
    result is tiny: its error is an absolute one); ``ordinary``: the bound holds for ordinary
    operands only (edge operands such as subnormals and infinities are outside it, so the random
    conformance does not send the operator to XLA: semantics.gen.NOT_SENT_TO_XLA)."""

    ulps: dict[str, int]
    near_one: int = 0
    ordinary: bool = False

    def text(self) -> str:
        """The bound in words, for the operator's ``xla`` text (docs/semantics.md)."""
        per = ", ".join(f"{d} {u}" for d, u in self.ulps.items())
        return (f"XLA:CPU uses its own approximation: conformance bound (ulps per result type) {per}"
                + (f", or {self.near_one} ulps of 1.0 absolute" if self.near_one else "")
                + (" (ordinary operands)" if self.ordinary else ""))


InferFn = Callable[[list[Type], Attrs, Type | None, Env], Type]
#: (operand types, attributes, declared result type or None) -> the result's shape
ShapeFn = Callable[[list[Any], Any, Any], tuple[Any, ...]]
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
        shape: the result's shape from the operand types, the attributes and the declared type
            (operators whose result shape only it gives), in integer arithmetic alone (``+ - *``,
            :func:`~._common.ceil_div`, :func:`~._common.size_max`), so that it serves the
            concrete sizes ``infer`` checks (``infer`` calls it) and the rule language's symbolic
            sizes (:mod:`rewrite_rules.node_types`). It assumes the operands valid (``infer``
            checks that). None for the operators the rule language does not build.
        xla_bound: where XLA:CPU computes the operator with its own approximation, how far its
            result may be from the reference (:class:`XlaBound`); the conformance comparison
            (:func:`semantics.compare.op_bound`) reads it and nothing else.
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
    shape: ShapeFn | None = None
    xla_bound: XlaBound | None = None

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
