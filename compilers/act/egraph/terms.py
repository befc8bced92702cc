"""Graphs as hash-consed terms: the common form of kernels (to seed the e-graph) and of instruction
semantics g_θ(α) (the left sides of IR-to-ISA rules).

Lowering a graph (:func:`lower`) does three things, each an identity of the operator definitions:

- compile-time constants are folded: an operator whose operands are all literals becomes the
  literal it evaluates to (the reference interpreter computes it), so equal constants are one
  node whatever expression produced them (a kernel's ``broadcast(constant(-128))`` and an
  instruction's ``constant`` of the same value and type meet);
- no-op structure is removed: ``copy``, reshape/bitcast/convert to the same type, identity
  transposes, full slices, zero pads, broadcasts that add no dimension, and a
  ``dynamic-update-slice`` whose update covers the whole operand at offset 0;
- regions (``to_apply``) are named by their content, not their name.

Two memos here are process-wide, and by design: both are keyed by value, not by ``id()``, and
bounded. ``_REGIONS`` maps a region's content key to a computation with that content (any one
serves: equal keys evaluate alike), for :mod:`.fold` to evaluate a region an e-node names; and
``_lower_semantics`` memoizes g_θ(α)'s term per (frozen instruction description, α), a pure
function of its key. Every other cache of Act lives on a :mod:`.context` object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from semantics.dtypes import DTYPES, U8
from semantics.ir import Attrs, Computation, Graph, Instruction, Literal
from semantics.ops import REGISTRY, Env
from semantics.types import TensorType

from ...gen_cache import cached
from ...isa import InstrDef
from . import NodeInfo

__all__ = ["Term", "lower", "lower_semantics", "eval_op", "lit_info", "region_key", "region_of", "canon_attrs", "is_noop",
           "ELEMENTWISE"]

#: operators that map elements to elements at the same index (the operator table's elementwise
#: category, and convert): the one definition Act's matchers, rewrite lifting and tiling read
ELEMENTWISE: frozenset[str] = frozenset(
    {n for n, d in REGISTRY.items() if d.category == "elementwise"} | {"convert"})


@dataclass(frozen=True)
class Term:
    """``info(children...)``; a ``param`` term (info None) is parameter ``index`` of type ``ptype``."""

    info: NodeInfo | None
    children: tuple[Term, ...] = ()
    index: int = -1
    ptype: TensorType | None = None

    def __hash__(self) -> int:
        # cached: terms are DAGs (a value used twice), and the generated hash would walk every
        # path through them, exponential in the depth of a chain of such values; computed
        # bottom-up without recursion (an e-class representative can be a chain thousands deep)
        h = self.__dict__.get("_hash")
        if h is not None:
            return h
        stack: list[tuple[Term, bool]] = [(self, False)]
        while stack:
            t, ready = stack.pop()
            if "_hash" in t.__dict__:
                continue
            if ready:
                kids = tuple(c.__dict__["_hash"] for c in t.children)
                object.__setattr__(t, "_hash", hash((t.info, kids, t.index, t.ptype)))
            else:
                stack.append((t, True))
                stack.extend((c, False) for c in t.children if "_hash" not in c.__dict__)
        return self.__dict__["_hash"]

    def __eq__(self, other: object) -> bool:
        # structural, iterative (deep chains), each pair of shared sub-terms compared once
        if self is other:
            return True
        if not isinstance(other, Term):
            return NotImplemented
        seen: set[tuple[int, int]] = set()
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b or (id(a), id(b)) in seen:
                continue
            seen.add((id(a), id(b)))
            if (hash(a) != hash(b) or a.info != b.info or a.index != b.index or a.ptype != b.ptype
                    or len(a.children) != len(b.children)):
                return False
            stack.extend(zip(a.children, b.children, strict=True))
        return True

    def __getstate__(self) -> dict:
        # the cached hash is per process (str hashes are salted): never carried along
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def type(self) -> TensorType:
        return self.info.type if self.info is not None else self.ptype  # type: ignore[return-value]

    @property
    def is_param(self) -> bool:
        return self.info is None

    @property
    def is_lit(self) -> bool:
        return self.info is not None and self.info.kind == "lit"


def _plain(t: TensorType) -> TensorType:
    return TensorType(t.dtype, tuple(t.shape))


def lit_info(value: np.ndarray, t: TensorType) -> NodeInfo:
    return NodeInfo("lit", "literal", (), _plain(t), literal=Literal.from_array(np.asarray(value, dtype=t.dtype.np)))


def region_key(graph: Graph, name: str) -> str:
    """A region by content: its operators, operand positions and types (not its names)."""
    comp = graph.computation(name)
    pos = {ins.name: i for i, ins in enumerate(comp.instructions)}
    parts = []
    for ins in comp.instructions:
        t = ins.type
        tt = f"{t.dtype.name}" if isinstance(t, TensorType) else "?"
        if ins.opcode == "parameter":
            parts.append(f"p{ins.attrs['index']}:{tt}")
        elif ins.opcode == "constant":
            parts.append(f"c{ins.attrs['literal'].data.hex()}:{tt}")
        else:
            parts.append(f"{ins.opcode}({','.join(str(pos[o]) for o in ins.operands)}):{tt}")
    return "region[" + ";".join(parts) + f"->{pos[comp.root]}]"


_REGIONS: dict[str, tuple[Graph, str]] = {}
_REGIONS_MAX = 1 << 12     # emptied when full: no growth over a campaign of kernels


def region_of(key: str) -> tuple[Graph, str] | None:
    """A graph and the name of a computation in it whose :func:`region_key` is ``key``, for a
    region some lowering in this process named (None else): what evaluates it (:mod:`.fold`)."""
    return _REGIONS.get(key)


def canon_attrs(graph: Graph, ins: Instruction) -> tuple[tuple[str, Any], ...]:
    out = []
    for k, v in ins.attrs:
        if k == "to_apply":
            key = region_key(graph, v)
            if key not in _REGIONS:
                if len(_REGIONS) >= _REGIONS_MAX:
                    _REGIONS.clear()
                _REGIONS[key] = (graph, v)
            v = key
        if k in ("lhs_batch_dims", "rhs_batch_dims") and not v:
            continue   # the default: written or not, the same operator
        out.append((k, v))
    return tuple(sorted(out, key=lambda kv: kv[0]))


def eval_op(graph: Graph, ins: Instruction, values: Sequence[np.ndarray], dtypes: Sequence[Any]) -> np.ndarray:
    """One operator of ``graph`` on concrete operands (regions evaluated by the interpreter)."""
    from semantics.interp import run_computation

    def call(name: str, args: list[Any]) -> Any:
        return run_computation(graph, graph.computation(name), args, "eval", None, batched=True)

    env = Env(graph=graph, call=call, extra={"operand_dtypes": list(dtypes)})
    return REGISTRY[ins.opcode].evaluate(list(values), ins.attrs, ins.type, env)


def _is_noop(ins: Instruction, args: list[Term]) -> bool:
    return is_noop(ins.opcode, dict(ins.attrs), ins.type, args)


def is_noop(op: str, attrs: dict[str, Any], t: Any, args: Sequence[Term]) -> bool:
    """True when ``op(args)`` with ``attrs`` and result type ``t`` is its (first, or for a
    dynamic-update-slice its update) operand unchanged, by the operator's definition."""
    if op == "copy":
        return True
    if not args or not isinstance(t, TensorType):
        return False
    a = args[0].type
    same = a.dtype == t.dtype and tuple(a.shape) == tuple(t.shape)
    if op in ("reshape", "bitcast-convert", "convert"):
        return same
    if op == "transpose":
        return tuple(attrs["dimensions"]) == tuple(range(len(t.shape)))
    if op == "slice":
        return same and all(s == 0 and st == 1 for s, _, st in attrs["slice"])
    if op == "pad":
        return same and all(lo == 0 and hi == 0 and it == 0 for lo, hi, it in attrs["padding"])
    if op == "broadcast":
        return same and tuple(attrs["dimensions"]) == tuple(range(len(t.shape)))
    if op == "dynamic-update-slice":
        u = args[1].type
        zeros = all(x.is_lit and not np.any(x.info.literal.to_array()) for x in args[2:])  # type: ignore[union-attr]
        return tuple(u.shape) == tuple(t.shape) and zeros
    return False


def lower(graph: Graph, comp: Computation | None = None, params: Sequence[Term] | None = None,
          interned: dict[Term, Term] | None = None) -> Term:
    """The root of ``comp`` (default: the entry) as a term; parameters become ``params[i]`` when
    given, else param terms. Tuple roots are not terms: use :func:`lower_outputs`."""
    outs = lower_outputs(graph, comp, params, interned)
    if len(outs) != 1:
        raise ValueError("lower: the computation returns a tuple")
    return outs[0]


def lower_semantics(ins: InstrDef, alpha: Mapping[str, int]) -> Term:
    """g_θ(α) of ``ins`` lowered (:func:`lower` of ``ins.graph(alpha)``), once per process and
    cached on disk by content (:mod:`compilers.gen_cache`: a later process loads the term and
    parses nothing)."""
    return _lower_semantics(ins, tuple(int(alpha[a]) for a in ins.alpha))


@lru_cache(maxsize=8192)
def _lower_semantics(ins: InstrDef, key: tuple[int, ...]) -> Term:
    alpha = dict(zip(ins.alpha, key, strict=True))
    text, filename = ins.source(alpha)
    return cached("term", text, filename, lambda: lower(ins.graph(alpha)), Term)


def lower_outputs(graph: Graph, comp: Computation | None = None, params: Sequence[Term] | None = None,
                  interned: dict[Term, Term] | None = None) -> list[Term]:
    comp = comp or graph.entry
    memo = interned if interned is not None else {}

    def intern(t: Term) -> Term:
        return memo.setdefault(t, t)

    vals: dict[str, Term] = {}
    for ins in comp.instructions:
        if ins.opcode == "parameter":
            i = ins.attrs["index"]
            vals[ins.name] = params[i] if params is not None else intern(Term(None, (), i, _plain(ins.tensor_type)))
            continue
        if ins.opcode == "tuple":
            vals[ins.name] = Term(None, tuple(vals[o] for o in ins.operands), -2)
            continue
        if ins.opcode == "get-tuple-element":
            tup = vals[ins.operands[0]]
            if tup.index != -2:     # a tuple that no tuple instruction built (a tuple parameter)
                raise NotImplementedError(f"get-tuple-element of {ins.operands[0]}: only of a tuple instruction")
            vals[ins.name] = tup.children[int(ins.attrs["index"])]
            continue
        args = [vals[o] for o in ins.operands]
        t = ins.tensor_type
        if ins.opcode == "clamp" and t.shape:
            # scalar bounds broadcast implicitly: write them as full-shape literals (one form)
            args = [intern(Term(lit_info(np.broadcast_to(a.info.literal.to_array(), t.shape), TensorType(a.type.dtype, tuple(t.shape)))))  # type: ignore[union-attr]
                    if a.is_lit and not a.type.shape else a for a in args]
        if _is_noop(ins, args):
            vals[ins.name] = args[0] if ins.opcode != "dynamic-update-slice" else args[1]
            continue
        if all(a.is_lit for a in args):
            arrs = [a.info.literal.to_array() for a in args]  # type: ignore[union-attr]
            v = eval_op(graph, ins, arrs, [a.type.dtype for a in args])
            vals[ins.name] = intern(Term(lit_info(v, t)))
            continue
        info = NodeInfo("op", ins.opcode, canon_attrs(graph, ins), _plain(t))
        vals[ins.name] = intern(Term(info, tuple(args)))
    root = vals[comp.root]
    if root.index == -2:
        return list(root.children)
    return [root]


def bytes_type(n: int) -> TensorType:
    return TensorType(U8, (n,))


def mk_op(opcode: str, args: Sequence[Term], attrs: dict[str, Any], out: TensorType) -> Term:
    """A term for ``opcode(args)`` (used for the bflat chains of Module 1)."""
    return Term(NodeInfo("op", opcode, tuple(sorted(Attrs(tuple(attrs.items())).items, key=lambda kv: kv[0])),
                         _plain(out)), tuple(args))


def narrowed(info: NodeInfo) -> Term | None:
    """A wide signed-integer literal whose every value fits int8, as ``convert(literal_s8)``.

    Folding turns ``convert_s32(c_s8)`` into one s32 literal; an instruction that widens int8 data
    itself (a preload from the int8 scratchpad) needs the int8 constant it widens, so the literal's
    e-class also gets this e-node (equal by evaluation: the conversion of in-range values is exact)."""
    if info.kind != "lit" or info.literal is None or info.type.dtype.name not in ("s16", "s32", "s64"):
        return None
    if not info.type.shape:
        return None
    v = info.literal.to_array()
    if v.size == 0 or v.min() < -128 or v.max() > 127:
        return None
    t8 = TensorType(DTYPES["s8"], tuple(info.type.shape))
    return mk_op("convert", [Term(lit_info(v.astype(np.int8), t8))], {}, info.type)
