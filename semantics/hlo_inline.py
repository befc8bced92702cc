"""From parsed HLO computations to a :class:`~semantics.ir.Graph`: inlining of the control operators.

XLA modules (as jax dumps them) call computations four ways that the IR does not keep:

* ``call`` (``to_apply=``) and ``fusion`` (``calls=``, any ``kind``): the callee is inlined, its
  parameters bound to the call's operands;
* ``conditional`` (a pred with ``true_computation``/``false_computation``, or an s32 index with
  ``branch_computations``): a compile-time constant selector inlines the chosen branch; otherwise
  every branch is inlined and the results are chosen with ``select`` (branches are pure, so this
  is the value of the taken branch; an index out of range takes the last branch, as XLA);
* ``while``: unrolled when the condition's value is a compile-time constant at every iteration
  (constant folding over the loop state: jax's ``fori_loop`` counters); otherwise an error naming
  the loop. At most :data:`MAX_TRIPS` iterations.

Tuples are tracked symbolically (``tuple`` then ``get-tuple-element`` is the element itself); an
instruction whose value no one uses is dropped (parameters are kept). Computations referenced as
regions by real operators (``reduce``'s ``to_apply``, ...) stay computations, built on first use.
Every rule violation raises :class:`~semantics.errors.GraphError` at the instruction's location.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dtypes import DTYPES, PRED
from .errors import AccvError, GraphError, SourceLoc
from .graph import ComputationBuilder, GraphBuilder
from .ir import Attrs, Graph, Literal
from .ops import REGISTRY, Env
from .types import TensorType, TupleType, Type

__all__ = ["RawInstr", "RawComputation", "build_graph", "CONTROL_OPS", "MAX_TRIPS"]

#: Opcodes inlined here (never in a Graph).
CONTROL_OPS = frozenset({"call", "fusion", "conditional", "while"})
#: The most iterations a while loop is unrolled to.
MAX_TRIPS = 4096
_MAX_FOLD = 4096   # constant folding only evaluates values of at most this many elements


@dataclass
class RawInstr:
    name: str
    opcode: str
    operands: list[str]
    attrs: dict[str, Any]
    declared: Type
    loc: SourceLoc
    root: bool = False


@dataclass
class RawComputation:
    name: str
    loc: SourceLoc
    instrs: list[RawInstr] = field(default_factory=list)

    @property
    def root(self) -> RawInstr:
        for i in self.instrs:
            if i.root:
                return i
        return self.instrs[-1]


@dataclass(frozen=True)
class _Tuple:
    """A tuple value known element by element (names of flat instructions, or nested _Tuple)."""

    elems: tuple[Any, ...]


@dataclass
class _Flat:
    name: str
    opcode: str
    operands: list[str]
    attrs: dict[str, Any]
    declared: Type
    loc: SourceLoc | None
    root: bool = False
    top: bool = False      # written in the computation itself (never dropped), not inlined


def build_graph(module: str, comps: list[RawComputation], entry: str | None) -> Graph:
    """The graph of a parsed module: ``entry`` (or the last computation) with every control
    operator inlined; region computations kept."""
    return _Builder(module, comps).build(entry)


class _Builder:
    def __init__(self, module: str, comps: list[RawComputation]) -> None:
        self.gb = GraphBuilder(module)
        self.comps: dict[str, RawComputation] = {}
        for c in comps:
            if c.name in self.comps:
                raise GraphError(f"computation '{c.name}' is defined twice", c.loc)
            self.comps[c.name] = c
        self.built: set[str] = set()
        self.building: list[str] = []

    def build(self, entry: str | None) -> Graph:
        if not self.comps:
            raise GraphError(f"module '{self.gb.name}' has no computation")
        name = entry if entry is not None else list(self.comps)[-1]
        self._computation(name, entry=True)
        return self.gb.build()

    def comp(self, name: str, loc: SourceLoc | None, what: str) -> RawComputation:
        c = self.comps.get(name)
        if c is None:
            raise GraphError(f"{what}={name} names no computation", loc)
        return c

    def _computation(self, name: str, entry: bool = False, loc: SourceLoc | None = None) -> None:
        """Build computation ``name`` (entry or region) into the graph builder."""
        if name in self.built:
            return
        if name in self.building:
            raise GraphError(f"computation '{name}' calls itself", loc)
        self.building.append(name)
        raw = self.comp(name, loc, "computation")
        ex = _Expander(self, raw.name)
        root = ex.expand(raw, None)
        ex.finish(root, raw)
        cb = self.gb.computation(raw.name, raw.loc)
        ex.emit(cb)
        self.gb.add_computation(cb.build(), entry=entry)
        self.building.pop()
        self.built.add(name)


class _Expander:
    """Expands one computation (with everything it calls inlined) into a flat instruction list."""

    def __init__(self, owner: _Builder, comp_name: str) -> None:
        self.owner = owner
        self.comp_name = comp_name
        self.flat: list[_Flat] = []
        self.by_name: dict[str, _Flat] = {}
        self.used: set[str] = set()
        self.consts: dict[str, np.ndarray | None] = {}

    # -- names and instructions ---------------------------------------------------------------

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}.{k}"
        self.used.add(name)
        return name

    def add(self, base: str, opcode: str, operands: list[str], attrs: dict[str, Any], declared: Type,
            loc: SourceLoc | None, exact: bool = False) -> str:
        f = _Flat(base if exact else self.fresh(base), opcode, operands, attrs, declared, loc)
        self.flat.append(f)
        self.by_name[f.name] = f
        return f.name

    def type_of(self, v: Any) -> Type:
        if isinstance(v, _Tuple):
            return TupleType(tuple(self.type_of(e) for e in v.elems))
        return self.by_name[v].declared

    # -- expansion ----------------------------------------------------------------------------

    def expand(self, raw: RawComputation, args: list[Any] | None) -> Any:
        """Expand ``raw``; ``args`` binds its parameters (None: they become parameters). Returns
        the root's value (a flat name or a _Tuple)."""
        env: dict[str, Any] = {}
        if args is None:   # the computation's own names are kept as written
            self.used.update(i.name for i in raw.instrs)
        for ins in raw.instrs:
            if ins.name in env:
                raise GraphError(f"name '{ins.name}' is defined twice in computation '{raw.name}'", ins.loc,
                                 f"instruction '{ins.name}'")
            ops: list[Any] = []
            for o in ins.operands:
                if o not in env:
                    raise GraphError(f"operand '{o}' is not defined before use", ins.loc, f"instruction '{ins.name}'")
                ops.append(env[o])
            env[ins.name] = self.instruction(ins, ops, args)
        root = raw.root
        return env[root.name]

    def instruction(self, ins: RawInstr, ops: list[Any], args: list[Any] | None) -> Any:
        where = f"instruction '{ins.name}'"
        op = ins.opcode
        if op == "parameter" and args is not None:
            idx = ins.attrs.get("index")
            if not isinstance(idx, int) or not 0 <= idx < len(args):
                raise GraphError(f"parameter({idx}) has no argument (the call passes {len(args)})", ins.loc, where)
            if not _same(self.type_of(args[idx]), ins.declared):
                raise GraphError(f"parameter({idx}) is declared {ins.declared.short()}, the call passes "
                                 f"{self.type_of(args[idx]).short()}", ins.loc, where)
            return args[idx]
        top = args is None
        if op == "tuple" and not top:
            return _Tuple(tuple(ops))
        if op == "get-tuple-element" and not top and ops and not isinstance(ops[0], _Tuple) \
                and self.by_name[ops[0]].opcode == "tuple":
            ops = [_Tuple(tuple(self.by_name[ops[0]].operands))]
        if op == "get-tuple-element" and ops and isinstance(ops[0], _Tuple):
            idx = ins.attrs.get("index")
            t = ops[0]
            if not isinstance(idx, int) or not 0 <= idx < len(t.elems):
                raise GraphError(f"get-tuple-element index {idx} out of range for a tuple of {len(t.elems)}",
                                 ins.loc, where)
            return t.elems[idx]
        if op in ("call", "fusion"):
            key = "to_apply" if op == "call" else "calls"
            callee = self.callee(ins, key)
            return self.inline(ins, callee, ops)
        if op == "conditional":
            return self.conditional(ins, ops)
        if op == "custom-call" and ins.attrs.get("custom_call_target") == '"TopK"':
            t = ins.declared   # XLA's TopK custom call: (values, s32 indices) of the k largest
            if isinstance(t, TupleType) and len(t.elements) == 2 and isinstance(t.elements[0], TensorType):
                return self.add(ins.name, "topk", [self.materialize(v, ins.loc) for v in ops],
                                {"k": t.elements[0].shape[-1] if t.elements[0].rank else 0, "largest": "true"},
                                t, ins.loc)
        if op == "while":
            return self.while_loop(ins, ops)
        flat_ops = [self.materialize(v, ins.loc) for v in ops]
        for spec in (REGISTRY[op].attrs if op in REGISTRY else ()):
            if spec.kind == "computation" and spec.name in ins.attrs:
                self.owner._computation(ins.attrs[spec.name], loc=ins.loc)
        name = self.add(ins.name, op, flat_ops, ins.attrs, ins.declared, ins.loc, exact=top)
        self.by_name[name].top = top
        return name

    def callee(self, ins: RawInstr, key: str) -> RawComputation:
        name = ins.attrs.get(key)
        if not isinstance(name, str):
            raise GraphError(f"{ins.opcode} needs attribute '{key}'", ins.loc, f"instruction '{ins.name}'")
        return self.owner.comp(name, ins.loc, key)

    def inline(self, ins: RawInstr, callee: RawComputation, args: list[Any]) -> Any:
        if callee.name in self.owner.building or callee.name == self.comp_name:
            raise GraphError(f"computation '{callee.name}' calls itself", ins.loc, f"instruction '{ins.name}'")
        self.owner.building.append(callee.name)
        try:
            r = self.expand(callee, args)
        finally:
            self.owner.building.pop()
        if not _same(self.type_of(r), ins.declared):
            raise GraphError(f"{ins.opcode} is declared {ins.declared.short()}, '{callee.name}' returns "
                             f"{self.type_of(r).short()}", ins.loc, f"instruction '{ins.name}'")
        return r

    def materialize(self, v: Any, loc: SourceLoc | None) -> str:
        """A flat name for a value (a _Tuple becomes a tuple instruction)."""
        if isinstance(v, _Tuple):
            elems = [self.materialize(e, loc) for e in v.elems]
            return self.add("tuple", "tuple", elems, {}, self.type_of(v), loc)
        return v

    def elements(self, v: Any, loc: SourceLoc | None) -> _Tuple:
        """A tuple-typed value as a _Tuple (get-tuple-element instructions for a flat one)."""
        if isinstance(v, _Tuple):
            return v
        t = self.type_of(v)
        assert isinstance(t, TupleType)
        return _Tuple(tuple(self.add(f"{v}.gte{i}", "get-tuple-element", [v], {"index": i}, e, loc)
                            for i, e in enumerate(t.elements)))

    # -- conditional --------------------------------------------------------------------------

    def conditional(self, ins: RawInstr, ops: list[Any]) -> Any:
        where = f"instruction '{ins.name}'"
        if "branch_computations" in ins.attrs:
            names = list(ins.attrs["branch_computations"])
        elif "true_computation" in ins.attrs and "false_computation" in ins.attrs:
            names = [ins.attrs["true_computation"], ins.attrs["false_computation"]]
        else:
            raise GraphError("conditional needs branch_computations or true/false_computation", ins.loc, where)
        if len(ops) != len(names) + 1:
            raise GraphError(f"conditional with {len(names)} branches takes {len(names) + 1} operands, got {len(ops)}",
                             ins.loc, where)
        sel = ops[0]
        st = self.type_of(sel)
        is_pred = "true_computation" in ins.attrs
        want = PRED if is_pred else DTYPES["s32"]
        if not (isinstance(st, TensorType) and st.rank == 0 and st.dtype == want):
            raise GraphError(f"conditional selector must be {want}[], got {st.short()}", ins.loc, where)
        branches = [self.owner.comp(n, ins.loc, "branch") for n in names]
        known = self.const_value(sel)
        if known is not None:
            k = int(known.reshape(()))
            k = (0 if k else 1) if is_pred else (k if 0 <= k < len(names) else len(names) - 1)
            return self.inline(ins, branches[k], [ops[k + 1]])
        results = [self.inline(ins, b, [a]) for b, a in zip(branches, ops[1:], strict=True)]
        if is_pred:
            return self.choose(sel, results[0], results[1], ins)
        out = results[-1]
        for k in range(len(names) - 2, -1, -1):
            lit = Literal(DTYPES["s32"], (), np.array(k, np.int32).tobytes())
            kc = self.add(f"{ins.name}.k{k}", "constant", [], {"literal": lit}, TensorType(DTYPES["s32"], ()), ins.loc)
            eq = self.add(f"{ins.name}.is{k}", "compare", [sel, kc], {"direction": "EQ"},
                          TensorType(PRED, ()), ins.loc)
            out = self.choose(eq, results[k], out, ins)
        return out

    def choose(self, pred: str, a: Any, b: Any, ins: RawInstr) -> Any:
        if isinstance(self.type_of(a), TupleType):
            ea, eb = self.elements(a, ins.loc), self.elements(b, ins.loc)
            return _Tuple(tuple(self.choose(pred, x, y, ins) for x, y in zip(ea.elems, eb.elems, strict=True)))
        t = self.type_of(a)
        return self.add(f"{ins.name}.select", "select", [pred, a, b], {}, t, ins.loc)

    # -- while --------------------------------------------------------------------------------

    def while_loop(self, ins: RawInstr, ops: list[Any]) -> Any:
        where = f"instruction '{ins.name}'"
        if len(ops) != 1:
            raise GraphError(f"while takes 1 operand, got {len(ops)}", ins.loc, where)
        cond = self.callee(ins, "condition")
        body = self.callee(ins, "body")
        state = ops[0]
        for trip in range(MAX_TRIPS + 1):
            c = self.inline_value(ins, cond, [state])
            v = self.const_value(c) if isinstance(c, str) else None
            if v is None:
                raise GraphError(f"while loop '{ins.name}': its condition '{cond.name}' is not a compile-time "
                                 f"constant (iteration {trip}); only loops with a constant trip count are supported",
                                 ins.loc, where)
            if not bool(v.reshape(())):
                return state
            state = self.inline(ins, body, [state])
        raise GraphError(f"while loop '{ins.name}' runs more than {MAX_TRIPS} iterations", ins.loc, where)

    def inline_value(self, ins: RawInstr, comp: RawComputation, args: list[Any]) -> Any:
        self.owner.building.append(comp.name)
        try:
            return self.expand(comp, args)
        finally:
            self.owner.building.pop()

    # -- constant folding (for loop conditions and conditional selectors) ---------------------

    def const_value(self, name: Any) -> np.ndarray | None:
        """The value of a flat instruction when it depends on constants only (else None)."""
        if not isinstance(name, str):
            return None
        if name in self.consts:
            return self.consts[name]
        self.consts[name] = None   # guards against cycles; replaced below
        f = self.by_name[name]
        val: np.ndarray | None = None
        t = f.declared
        op = REGISTRY.get(f.opcode)
        if (op is not None and f.opcode != "parameter" and isinstance(t, TensorType) and t.size <= _MAX_FOLD
                and not any(s.kind == "computation" for s in op.attrs)):
            args = [self.const_value(o) for o in f.operands]
            if all(a is not None for a in args):
                try:
                    env = Env(graph=None, extra={"operand_dtypes": [self.by_name[o].declared.dtype  # type: ignore[union-attr]
                                                                    for o in f.operands]})
                    r = np.asarray(op.evaluate(args, Attrs(tuple(f.attrs.items())), t, env))
                    if r.dtype == t.dtype.np and r.shape == t.shape:
                        val = r
                except (AccvError, ArithmeticError, ValueError, TypeError, KeyError, IndexError):
                    val = None
        self.consts[name] = val
        return val

    # -- output -------------------------------------------------------------------------------

    def finish(self, root: Any, raw: RawComputation) -> None:
        r = self.materialize(root, raw.root.loc)
        self.by_name[r].root = True
        self.root = r

    def emit(self, cb: ComputationBuilder) -> None:
        """Add the live instructions (reachable from the root, and every parameter) to ``cb``."""
        live: set[str] = set()
        stack = [self.root]
        while stack:
            n = stack.pop()
            if n in live:
                continue
            live.add(n)
            stack.extend(self.by_name[n].operands)
        for f in self.flat:
            if f.name in live or f.top:
                try:
                    cb.add(f.name, f.opcode, f.operands, f.attrs, declared=f.declared, loc=f.loc, root=f.root)
                except AccvError:
                    raise
                except Exception as e:  # an operator rule failed in an unforeseen way: still a rule violation
                    raise GraphError(f"internal error while checking: {type(e).__name__}: {e}", f.loc,
                                     f"instruction '{f.name}'") from e


def _same(a: Type, b: Type) -> bool:
    return a.same_value_type(b)
