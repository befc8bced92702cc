"""Concrete instances of rule patterns: given values for every symbolic size and attribute, build
the two sides of a rule as ordinary graphs (:class:`semantics.ir.Graph`).

Both graphs take the rule's tensor variables as parameters in the same order (sorted by name),
so they can be evaluated on the same inputs (counterexample replay, bounded proofs) and a
compiler can match them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import z3

from semantics.dtypes import DTYPES, DType
from semantics.graph import ComputationBuilder, GraphBuilder
from semantics.ir import Graph, Literal
from semantics.ops import REGISTRY, Env
from semantics.types import TensorType

from .dsl import Node, Op, TVar

__all__ = ["emit", "evaluator", "concrete_attr"]

Eval = Callable[[Any], int]


def evaluator(model: z3.ModelRef | None = None, subst: dict[Any, int] | None = None) -> Eval:
    """An evaluator of size/attribute expressions: from a z3 model, or a substitution."""
    def ev(e: Any) -> int:
        if isinstance(e, bool):
            return int(e)
        if isinstance(e, int):
            return e
        if model is not None:
            v = model.eval(e, model_completion=True)
        else:
            pairs = [(k, z3.IntVal(v)) for k, v in (subst or {}).items()]
            v = z3.simplify(z3.substitute(e, *pairs) if pairs else e)
        if not z3.is_int_value(v):
            raise ValueError(f"expression {e} has no concrete value")
        return v.as_long()
    return ev


def concrete_attr(v: Any, ev: Eval) -> Any:
    if isinstance(v, (tuple, list)):
        return tuple(concrete_attr(x, ev) for x in v)
    if isinstance(v, str):
        return v
    return ev(v)


def _regions(nodes: list[Node]) -> set[tuple[str, str]]:
    """The region functions used by the reduces under ``nodes``."""
    out: set[tuple[str, str]] = set()
    seen: set[int] = set()

    def walk(n: Node) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        if isinstance(n, Op):
            for a in n.args:
                walk(a)
            if n.opcode == "reduce":
                out.add((n.attrs["region"], ""))
    for n in nodes:
        walk(n)
    return out


class _Emitter:
    def __init__(self, cb: ComputationBuilder, dtype: DType, ev: Eval, region_names: dict[tuple[str, str], str]):
        self.cb = cb
        self.dtype = dtype
        self.ev = ev
        self.memo: dict[int, str] = {}
        self.n = 0
        self.region_names = region_names

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base.replace('-', '_')}.{self.n}"

    def dt(self, name: str | None) -> DType:
        return self.dtype if name is None else DTYPES[name]

    def emit(self, node: Node) -> str:
        if id(node) in self.memo:
            return self.memo[id(node)]
        if isinstance(node, TVar):
            raise KeyError(node.name)  # parameters are bound before emission
        assert isinstance(node, Op)
        args = [self.emit(a) for a in node.args]
        types = [self.cb.type_of(a) for a in args]
        attrs: dict[str, Any] = {}
        declared: TensorType | None = None
        op = node.opcode
        if op == "constant":
            dt = self.dt(node.out_dtype)
            with np.errstate(all="ignore"):
                arr = np.array(node.attrs["value"]).astype(dt.np)
            attrs = {"literal": Literal.from_array(arr)}
            declared = TensorType(dt, ())
        elif op == "reduce":
            t0 = types[0]
            assert isinstance(t0, TensorType)
            attrs = {"dimensions": concrete_attr(node.attrs["dimensions"], self.ev),
                     "to_apply": self.region_names[(node.attrs["region"], t0.dtype.name)]}
        else:
            attrs = {k: concrete_attr(v, self.ev) for k, v in node.attrs.items()}
        if node.out_shape is not None and op != "constant":
            dt = self.dt(node.out_dtype) if node.out_dtype is not None or not types else self._first(types).dtype
            if op == "iota":
                dt = self.dt(node.out_dtype)
            declared = TensorType(dt, tuple(self.ev(s) for s in node.out_shape))
        elif op in ("convert", "bitcast-convert"):
            src = self._first(types)
            dt = self.dt(node.out_dtype)
            shape = src.shape
            if op == "bitcast-convert" and dt.bits != src.dtype.bits:
                shape = src.shape[:-1] if dt.bits > src.dtype.bits else src.shape + (src.dtype.bits // dt.bits,)
            declared = TensorType(dt, shape)
        elif op == "dot" and node.out_dtype is not None:
            from semantics.ir import Attrs
            inferred = REGISTRY["dot"].infer(types, Attrs(tuple(attrs.items())), None, Env())
            assert isinstance(inferred, TensorType)
            declared = TensorType(self.dt(node.out_dtype), inferred.shape)
        name = self.name(op)
        self.cb.add(name, op, args, attrs, declared)
        self.memo[id(node)] = name
        return name

    @staticmethod
    def _first(types: list[Any]) -> TensorType:
        t = types[0]
        assert isinstance(t, TensorType)
        return t


def emit(tensors: dict[str, TVar], sides: list[Node], dtype: DType, ev: Eval, name: str = "rule") -> list[Graph]:
    """One graph per pattern in ``sides``, all with the parameters ``sorted(tensors)``."""
    graphs = []
    for k, root in enumerate(sides):
        gb = GraphBuilder(f"{name}_{k}")
        region_names: dict[tuple[str, str], str] = {}
        for fn, _ in sorted(_regions([root])):
            for dt_name in _reduce_dtypes(root, dtype):
                rname = f"region_{fn}_{dt_name}"
                rc = gb.computation(rname)
                scalar = TensorType(DTYPES[dt_name], ())
                rc.add("a", "parameter", (), {"index": 0}, scalar)
                rc.add("b", "parameter", (), {"index": 1}, scalar)
                rc.add("r", fn, ["a", "b"], root=True)
                gb.add_computation(rc.build())
                region_names[(fn, dt_name)] = rname
        cb = gb.computation("main")
        em = _Emitter(cb, dtype, ev, region_names)
        for i, vname in enumerate(sorted(tensors)):
            v = tensors[vname]
            t = TensorType(em.dt(v.dtype), tuple(ev(n) for n in v.shape))
            cb.add(vname, "parameter", (), {"index": i}, t)
            em.memo[id(v)] = vname
        out = em.emit(root)
        if out in tensors:   # the side is a bare variable: copy it so the root is an instruction
            out = em.name("copy")
            cb.add(out, "copy", [em.memo[id(root)]])
        cb.set_root(out)
        gb.add_computation(cb.build(), entry=True)
        graphs.append(gb.build())
    return graphs


def _reduce_dtypes(root: Node, dtype: DType) -> set[str]:
    """Element types of the operands of every reduce under ``root`` (for region signatures)."""
    out: set[str] = set()
    seen: set[int] = set()

    def dt_of(n: Node) -> str:
        if isinstance(n, TVar):
            return n.dtype or dtype.name
        assert isinstance(n, Op)
        if n.out_dtype is not None and n.opcode not in ("compare",):
            return n.out_dtype
        if n.opcode == "compare":
            return "pred"
        if n.opcode in ("select", "clamp"):
            return dt_of(n.args[1])
        return dt_of(n.args[0]) if n.args else dtype.name

    def walk(n: Node) -> None:
        if id(n) in seen or not isinstance(n, Op):
            return
        seen.add(id(n))
        for a in n.args:
            walk(a)
        if n.opcode == "reduce":
            out.add(dt_of(n.args[0]))
    walk(root)
    return out
