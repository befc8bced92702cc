"""Construction of immutable graphs with validation and shape/dtype inference.

:class:`GraphBuilder` adds computations one at a time; :class:`ComputationBuilder` adds
instructions in SSA order. Every instruction is checked when it is added, against the operator
table (:mod:`semantics.ops`): the opcode exists, operands are defined, arity and attributes fit,
the inferred type equals the declared one (dtype and shape; the declared layout is kept). A
violation raises :class:`GraphError` naming the instruction, the rule and the source location.
"""

from __future__ import annotations

from typing import Any

from .errors import GraphError, SourceLoc
from .ir import Attrs, Computation, Graph, Instruction
from .layout import check_layout
from .ops import REGISTRY, Env, OpError
from .types import TupleType, Type

__all__ = ["GraphBuilder", "ComputationBuilder", "validate_type"]


def validate_type(t: Type) -> str | None:
    """Why a written type is invalid (bad layout, negative size), or None."""
    if isinstance(t, TupleType):
        for e in t.elements:
            why = validate_type(e)
            if why:
                return why
        return None
    if any(d < 0 for d in t.shape):
        return f"negative dimension in {t.short()}"
    if t.layout is not None:
        return check_layout(t.shape, t.layout)
    return None


class ComputationBuilder:
    """Adds instructions to one computation, checking each as it comes."""

    def __init__(self, graph: GraphBuilder, name: str, loc: SourceLoc | None = None) -> None:
        self._graph = graph
        self.name = name
        self.loc = loc
        self._instrs: list[Instruction] = []
        self._by_name: dict[str, Instruction] = {}
        self._params: dict[int, str] = {}
        self._root: str | None = None

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def type_of(self, name: str) -> Type:
        return self._by_name[name].type

    def add(self, name: str, opcode: str, operands: list[str] | tuple[str, ...] = (), attrs: Attrs | dict | None = None,
            declared: Type | None = None, loc: SourceLoc | None = None, root: bool = False) -> Instruction:
        """Add ``name = declared opcode(operands), attrs`` and return the instruction.

        Raises:
            GraphError: the instruction breaks a rule (message names the instruction and the rule).
        """
        where = f"instruction '{name}'"
        if isinstance(attrs, dict):
            attrs = Attrs(tuple(attrs.items()))
        attrs = attrs or Attrs()
        if name in self._by_name:
            raise GraphError(f"name '{name}' is defined twice in computation '{self.name}'", loc, where)
        op = REGISTRY.get(opcode)
        if op is None:
            raise GraphError(f"unknown operator '{opcode}'", loc, where)
        lo, hi = op.arity
        if len(operands) < lo or (hi is not None and len(operands) > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise GraphError(f"{opcode} takes {want} operands, got {len(operands)}", loc, where)
        for o in operands:
            if o not in self._by_name:
                raise GraphError(f"operand '{o}' is not defined before use", loc, where)
        given = set(attrs.keys())
        for spec in op.attrs:
            if spec.required and spec.name not in given:
                raise GraphError(f"{opcode} needs attribute '{spec.name}'", loc, where)
            if spec.choices and spec.name in given and attrs[spec.name] not in spec.choices:
                raise GraphError(f"{spec.name}={attrs[spec.name]} is not one of {', '.join(spec.choices)}", loc, where)
        unknown = given - {s.name for s in op.attrs}
        if unknown:
            raise GraphError(f"{opcode} has no attribute '{sorted(unknown)[0]}'", loc, where)
        if declared is not None:
            why = validate_type(declared)
            if why:
                raise GraphError(why, loc, where)
        types = [self._by_name[o].type for o in operands]
        env = Env(graph=self._graph.partial_graph())
        try:
            inferred = op.infer(types, attrs, declared, env)
            self._graph.check_calls(op, attrs, types)
        except OpError as e:
            raise GraphError(str(e), loc, where) from None
        if declared is not None and not inferred.same_value_type(declared):
            raise GraphError(f"declared type {declared.short()} does not match the inferred {inferred.short()}",
                             loc, where)
        if opcode == "parameter":
            idx = attrs["index"]
            if idx in self._params:
                raise GraphError(f"parameter({idx}) is declared twice (also '{self._params[idx]}')", loc, where)
            self._params[idx] = name
        ins = Instruction(name, opcode, tuple(operands), attrs, declared if declared is not None else inferred, loc)
        self._instrs.append(ins)
        self._by_name[name] = ins
        if root:
            self._root = name
        return ins

    def set_root(self, name: str) -> None:
        """Make the already-added instruction ``name`` the root (default: the last one added)."""
        if name not in self._by_name:
            raise GraphError(f"root '{name}' is not defined in computation '{self.name}'", self.loc)
        self._root = name

    def build(self) -> Computation:
        if not self._instrs:
            raise GraphError(f"computation '{self.name}' is empty", self.loc)
        n = len(self._params)
        if sorted(self._params) != list(range(n)):
            missing = min(set(range(n + 1)) - set(self._params))
            raise GraphError(f"computation '{self.name}' has parameters {sorted(self._params)} but no parameter({missing})",
                             self.loc)
        root = self._root or self._instrs[-1].name
        for user in self._instrs:
            if user.opcode == "get-tuple-element":
                continue
            for o in user.operands:
                if isinstance(self._by_name[o].type, TupleType):
                    raise GraphError(f"tuple '{o}' may be used only by get-tuple-element", user.loc,
                                     f"instruction '{user.name}'")
        return Computation(self.name, tuple(self._instrs), root, tuple(self._params[i] for i in range(n)), self.loc)


class GraphBuilder:
    """Builds a :class:`Graph`: called computations first, the entry last."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._comps: list[Computation] = []
        self._entry: str | None = None

    def computation(self, name: str, loc: SourceLoc | None = None) -> ComputationBuilder:
        if any(c.name == name for c in self._comps):
            raise GraphError(f"computation '{name}' is defined twice", loc)
        return ComputationBuilder(self, name, loc)

    def add_computation(self, comp: Computation, entry: bool = False) -> None:
        self._comps.append(comp)
        if entry:
            if self._entry is not None:
                raise GraphError(f"two ENTRY computations: '{self._entry}' and '{comp.name}'", comp.loc)
            self._entry = comp.name

    def has_computation(self, name: str) -> bool:
        return any(c.name == name for c in self._comps)

    def partial_graph(self) -> Graph:
        return Graph(self.name, tuple(self._comps), self._entry or "")

    def check_calls(self, op: Any, attrs: Attrs, types: list[Type]) -> None:
        for spec in op.attrs:
            if spec.kind == "computation" and spec.name in attrs:
                cname = attrs[spec.name]
                if not self.has_computation(cname):
                    raise OpError(f"{spec.name}={cname} names no computation defined before it")

    def build(self) -> Graph:
        if self._entry is None:
            if not self._comps:
                raise GraphError(f"module '{self.name}' has no computation")
            self._entry = self._comps[-1].name
        return Graph(self.name, tuple(self._comps), self._entry)

