"""Canonical forms before recognition: semantics-preserving rewrites that bring a graph as a front
end writes it (jax's lowering, with or without XLA's passes) to the forms the middle end and Act
recognize.

What belongs here: :func:`canonicalize` and the rewrites it applies, one forward pass over the
entry computation (operands are canonical before their users are visited) followed by the removal
of what no longer reaches the root. Parameters, their order and types, and the result type never
change, so a program compiled from the canonical graph is checked against the user's graph.

Each rewrite is either an instance of a rule of the library, fired only where the proof gate passes
that rule for the instance's dtype (as every rule Act uses), or an identity that holds for the
instance by construction, established on the instance itself with the reference interpreter:

- **scalar constants** (by construction): a rank-0 instruction of :data:`FOLDABLE` whose operands
  are constants is replaced by the constant the reference interpreter computes for it (jax writes
  clip bounds as ``convert(constant)``).
- **movement chains** (established per instance): a chain of ``reshape`` / ``broadcast`` /
  ``transpose`` / ``copy`` / same-type ``bitcast`` from a value ``S`` computes ``out[i] = S[f(i)]``
  for an index map ``f`` that depends on neither the values nor the element type. The chain is
  evaluated by the interpreter on ``S``'s iota (every element distinct), which gives ``f`` exactly;
  where one ``reshape``, ``broadcast`` or ``transpose`` of ``S`` (or ``S`` itself) evaluates to the
  same array, it has the same ``f`` and so equals the chain for every input. jax's bias
  ``reshape -> broadcast -> reshape -> broadcast`` becomes ``broadcast(bias, dimensions={1})``.
- **identity converts**: ``convert`` to the operand's own type is dropped (rule ``convert(x, T) =>
  x (same type)``).
- **clip as clamp**: ``jnp.clip``'s ``minimum(hi, maximum(lo, x))`` and the hand-written
  ``minimum(maximum(x, lo), hi)``, bounds broadcast scalar constants, become ``clamp(lo, x, hi)``:
  for integers by the rules ``minimum(hi, maximum(lo, x)) => clamp(lo, x, hi)`` and
  ``minimum(maximum(x, lo), hi) => clamp(lo, x, hi)``; for floats where every user converts the
  result to s8 (the requantizing tail), or every one to u8, by their ``convert_s8(...)`` /
  ``convert_u8(...)`` forms: the float forms differ
  from ``clamp`` only in a NaN's sign, which the conversion maps to 0 either way (rules in
  :mod:`rewrite_rules.minmax`).
- **GEMV and transposed weights**: XLA's GEMV ``dot`` of a ``[K, 1]`` lhs contracted on
  dimension 0 as the dot of its ``[1, K]`` view, and ``dot(a, transpose(b))`` as the dot
  contracting ``b``'s last dimension (rules ``dot(transpose(a), b) => dot(a, b, lc=0)`` and
  ``dot(a, transpose(b)) => dot(a, b, rc=1)`` of :mod:`rewrite_rules.dot`).
- **views after a contraction**: an elementwise op of a dot's (or convolution's) result read
  through a row-major reshape / bitcast is computed in the contraction's shape, the view moved
  after it (an elementwise op commutes with any move; the operands are the view's source,
  broadcast constants, or the other operand's own single move), as XLA's passes leave a layer of
  3-D activations or a GEMV.
- **ReLU out of the clip**: ``convert_s8(clamp(-128, maximum(x, 0), 127))`` (``jnp.maximum(y, 0)``
  before the clip) as ``maximum(convert_s8(clamp(-128, x, 127)), 0)``, the ReLU of the int8 result
  the tail recognizers read (rule of :mod:`rewrite_rules.minmax`).

Rewrites keep the replaced instruction's name, so a program's instruction names still point into
the user's text. A graph the pass does not change is returned as it is (the same object).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rewrite_rules.dsl import RULES, Rule
from rewrite_rules.library import load as load_library
from semantics.dtypes import DTYPES
from semantics.graph import ComputationBuilder, GraphBuilder
from semantics.interp import evaluate
from semantics.ir import Attrs, Computation, Graph, Instruction, Literal
from semantics.ops import REGISTRY
from semantics.types import TensorType

__all__ = ["Canonical", "FOLDABLE", "MOVES", "canonicalize"]

#: opcodes folded when every operand is a constant and the result is a scalar
FOLDABLE = frozenset({"convert", "bitcast-convert", "negate", "add", "subtract", "multiply", "divide",
                      "maximum", "minimum", "abs"})
#: opcodes that only move elements (a same-type ``bitcast`` too: :func:`_is_move`)
MOVES = frozenset({"reshape", "broadcast", "transpose", "copy", "bitcast"})
#: chains over more elements than this are left as they are (their evaluation would cost more
#: than it can save)
MAX_CHAIN_ELEMENTS = 1 << 24
_ELEMENTWISE = frozenset(n for n, d in REGISTRY.items() if d.category == "elementwise")
_INTS = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"})
_FLOATS = frozenset({"f32", "bf16"})

#: library rules the clip rewrite instantiates: (integer form, float-under-convert_s8 form,
#: float-under-convert_u8 form)
CLIP_RULES = {
    "bound_first": ("minimum(hi, maximum(lo, x)) => clamp(lo, x, hi)",
                    "convert_s8(minimum(hi, maximum(lo, x))) => convert_s8(clamp(lo, x, hi))",
                    "convert_u8(minimum(hi, maximum(lo, x))) => convert_u8(clamp(lo, x, hi))"),
    "x_first": ("minimum(maximum(x, lo), hi) => clamp(lo, x, hi)",
                "convert_s8(minimum(maximum(x, lo), hi)) => convert_s8(clamp(lo, x, hi))",
                "convert_u8(minimum(maximum(x, lo), hi)) => convert_u8(clamp(lo, x, hi))"),
}
SAME_TYPE_CONVERT = "convert(x, T) => x (same type)"
DOT_TRANSPOSED_A = "dot(transpose(a), b) => dot(a, b, lc=0)"
DOT_TRANSPOSED_B = "dot(a, transpose(b)) => dot(a, b, rc=1)"
RELU_OUT_OF_CLIP = "convert_s8(clamp(-128, maximum(x, 0), 127)) => maximum(convert_s8(clamp(-128, x, 127)), 0)"


class _Gate(Protocol):
    """What the pass asks of a proof gate: whether a rule passes for (dtype, rank)."""

    def passes(self, rule: Rule, dtype: str, rank: int) -> bool: ...


@dataclass(frozen=True)
class Canonical:
    """The canonical graph and the rewrites applied (``"kind name"`` per rewrite, in order)."""

    graph: Graph
    applied: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def canonicalize(graph: Graph, gate: _Gate | None) -> Canonical:
    """``graph`` in canonical form (module doc). ``gate``: the proof gate the rule instances ask
    (None: the rule-backed rewrites are not applied, the by-construction ones still are)."""
    p = _Pass(graph, gate)
    out = p.run()
    return Canonical(out, tuple(p.applied)) if p.applied else Canonical(graph, ())


def _dtype(ins: Instruction) -> str:
    t = ins.type
    return t.dtype.name if isinstance(t, TensorType) else ""


def _is_move(ins: Instruction, comp: Callable[[str], Instruction]) -> bool:
    if ins.opcode not in MOVES or len(ins.operands) != 1 or not isinstance(ins.type, TensorType):
        return False
    if ins.opcode == "bitcast":
        return _dtype(comp(ins.operands[0])) == _dtype(ins)
    return True


class _Pass:
    def __init__(self, graph: Graph, gate: _Gate | None) -> None:
        self.graph = graph
        self.src: Computation = graph.entry
        self.gate = gate
        self.users = self.src.users()
        self.gb = GraphBuilder(graph.name)
        for c in graph.computations:
            if c.name != graph.entry_name:
                self.gb.add_computation(c)
        self.cb: ComputationBuilder = self.gb.computation(self.src.name, self.src.loc)
        self.new: dict[str, Instruction] = {}
        self.sub: dict[str, str] = {}
        self.applied: list[str] = []
        self.sunk: set[str] = set()          # elementwise results computed in a contraction's shape

    # -- the pass --------------------------------------------------------------------------------

    def run(self) -> Graph:
        for ins in self.src.instructions:
            ops = tuple(self.sub.get(o, o) for o in ins.operands)
            done = None
            if ins.name != self.src.root:
                done = self._identity(ins, ops)
            if done is None:
                done = (self._fold(ins, ops) or self._chain(ins, ops) or self._clip(ins, ops)
                        or self._relu(ins, ops) or self._gemv(ins, ops) or self._dot_bt(ins, ops)
                        or self._sink(ins, ops))
            if done is None:
                self._emit(ins.name, ins.opcode, ops, ins.attrs, ins.type, ins)
                done = ins.name
            self.sub[ins.name] = done
        if not self.applied:
            return self.graph
        return self._live(self.sub[self.src.root])

    def _emit(self, name: str, opcode: str, ops: tuple[str, ...], attrs: Attrs, t: object,
              like: Instruction) -> str:
        self.new[name] = self.cb.add(name, opcode, ops, attrs, declared=t, loc=like.loc)  # type: ignore[arg-type]
        return name

    def _live(self, root: str) -> Graph:
        """The built computation without what does not reach ``root`` (parameters always kept)."""
        live: set[str] = set()
        stack = [root]
        while stack:
            n = stack.pop()
            if n not in live:
                live.add(n)
                stack.extend(self.new[n].operands)
        gb = GraphBuilder(self.graph.name)
        for c in self.graph.computations:
            if c.name != self.graph.entry_name:
                gb.add_computation(c)
        cb = gb.computation(self.src.name, self.src.loc)
        for ins in self.new.values():
            if ins.name in live or ins.opcode == "parameter":
                cb.add(ins.name, ins.opcode, ins.operands, ins.attrs, declared=ins.type, loc=ins.loc)
        cb.set_root(root)
        gb.add_computation(cb.build(), entry=True)
        return gb.build()

    def _passes(self, text: str, dtype: str, rank: int = 1) -> bool:
        if self.gate is None:
            return False
        if not RULES:
            load_library()
        rule = RULES.get(text)
        return rule is not None and dtype in rule.dtypes and self.gate.passes(rule, dtype, rank)

    # -- rewrites ----------------------------------------------------------------------------------

    def _identity(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """An identity convert, dropped (not the root: the result keeps its instruction)."""
        if ins.opcode == "convert" and _dtype(self.new[ops[0]]) == _dtype(ins) \
                and self._passes(SAME_TYPE_CONVERT, _dtype(ins)):
            self.applied.append(f"convert-identity {ins.name}")
            return ops[0]
        return None

    def _fold(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        t = ins.type
        if ins.opcode not in FOLDABLE or not isinstance(t, TensorType) or t.shape != () or not ops \
                or any(self.new[o].opcode != "constant" for o in ops):
            return None
        g = GraphBuilder("fold")
        cb = g.computation("fold")
        for o in ops:
            c = self.new[o]
            cb.add(o, "constant", (), c.attrs, declared=c.type)
        cb.add(ins.name, ins.opcode, ops, ins.attrs, declared=t)
        g.add_computation(cb.build(), entry=True)
        value = np.asarray(evaluate(g.build(), [])[0])
        self.applied.append(f"fold {ins.name}")
        return self._emit(ins.name, "constant", (), Attrs.of(literal=Literal.from_array(value)), t, ins)

    def _chain(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """A chain of moves ending at ``ins`` as one move (module doc), where it is one."""
        if not _is_move(ins, lambda n: self.new[n]):
            return None
        return self._moves_as_one(ins.name, ops[0], [(ins.opcode, ins.attrs, ins.type)], ins)

    def _moves_as_one(self, name: str, first: str, tail: list[tuple[str, Attrs, object]],
                      like: Instruction) -> str | None:
        """The moves ``tail`` applied to ``first`` (itself looked through the moves that make it)
        as one instruction named ``name``: the source itself, or one reshape / broadcast / transpose
        with the same value on the source's iota (module doc); None where the chain is not one."""
        chain = list(tail)
        src = first
        while _is_move(self.new[src], lambda n: self.new[n]):
            c = self.new[src]
            chain.insert(0, (c.opcode, c.attrs, c.type))
            src = c.operands[0]
        s = self.new[src].tensor_type
        out = chain[-1][2]
        assert isinstance(out, TensorType)
        if s.size > MAX_CHAIN_ELEMENTS or s.size == 0 or out.size > MAX_CHAIN_ELEMENTS:
            return None
        is_root = name == self.src.root
        opcode0 = chain[-1][0]
        if len(chain) == 1 and (is_root or opcode0 == "copy" or (out.shape != s.shape and not _adds_unit_dims(s, out))):
            return None
        # the chain's index map: evaluated on S's iota with the operands' own layouts
        index = np.arange(s.size, dtype=np.int64).reshape(s.shape)
        got = _run_moves(src, s, [(f"m{k}", op, at, t) for k, (op, at, t) in enumerate(chain)], index)
        same = out.shape == s.shape and np.array_equal(got, index) and _plain(s, out)
        if same and not is_root:
            self.applied.append(f"move-identity {name}")
            return src
        if same:       # the root keeps an instruction of its own
            self.applied.append(f"move-identity {name} (copy)")
            return self._emit(name, "copy", (src,), Attrs(), out, like)
        for opcode, attrs in _candidates(s, out, got):
            if len(chain) == 1 and opcode == opcode0:
                return None             # already the canonical single move
            if np.array_equal(_run_moves(src, s, [("m", opcode, Attrs(attrs), out)], index), got):
                self.applied.append(f"move-chain {name} ({len(chain)} -> {opcode})")
                return self._emit(name, opcode, (src,), Attrs(attrs), out, like)
        return None

    def _gemv(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """``dot(L, R)`` contracting a ``[K, 1]`` L on its dimension 0 (XLA's GEMV) as the dot of
        L's ``[1, K]`` view contracting dimension 1: rule ``dot(transpose(a), b) => dot(a, b,
        lc=0)`` read right to left, and the transpose of a ``[K, 1]`` matrix is its reshape."""
        if ins.opcode != "dot" or ins.attrs.get("lhs_contracting_dims") != (0,) \
                or ins.attrs.get("lhs_batch_dims", ()) or ins.attrs.get("rhs_batch_dims", ()):
            return None
        lhs = self.new[ops[0]]
        lt = lhs.tensor_type
        if lt.rank != 2 or lt.shape[1] != 1 or not self._passes(DOT_TRANSPOSED_A, _dtype(lhs), 2):
            return None
        view = TensorType(lt.dtype, (1, lt.shape[0]))
        a = self._moves_as_one(self._fresh(f"{ins.name}.a"), ops[0], [("reshape", Attrs(), view)], ins)
        if a is None:
            a = self._emit(self._fresh(f"{ins.name}.a"), "reshape", (ops[0],), Attrs(), view, ins)
        attrs = Attrs(tuple((k, (1,) if k == "lhs_contracting_dims" else v) for k, v in ins.attrs))
        self.applied.append(f"gemv {ins.name}")
        return self._emit(ins.name, "dot", (a, ops[1]), attrs, ins.type, ins)

    def _dot_bt(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """``dot(a, transpose(b))`` (jax's ``x @ w.T``) as the dot contracting ``b``'s last
        dimension: rule ``dot(a, transpose(b)) => dot(a, b, rc=1)``, asked of the gate at the
        dot's result type (a mixed s8 x s8 -> s32 dot is the s32 dot of its widened operands)."""
        if ins.opcode != "dot" or ins.attrs.get("rhs_contracting_dims") != (0,) \
                or ins.attrs.get("lhs_batch_dims", ()) or ins.attrs.get("rhs_batch_dims", ()):
            return None
        t = self.new[ops[1]]
        if t.opcode != "transpose" or tuple(t.attrs.get("dimensions", ())) != (1, 0) \
                or not self._passes(DOT_TRANSPOSED_B, _dtype(ins), 2):
            return None
        attrs = Attrs(tuple((k, (1,) if k == "rhs_contracting_dims" else v) for k, v in ins.attrs))
        self.applied.append(f"dot-transposed-b {ins.name}")
        return self._emit(ins.name, "dot", (ops[0], t.operands[0]), attrs, ins.type, ins)

    def _sink(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """An elementwise op of a contraction's result read through a view (XLA's bitcasts after
        a dot) computed in the contraction's shape, the view moved after it: elementwise
        operators act element by element, so they commute with any move (module doc)."""
        if not isinstance(ins.type, TensorType) or not (ins.opcode in _ELEMENTWISE or ins.opcode == "convert"):
            return None
        views = [self.new[o] for o in ops if self.new[o].opcode in ("reshape", "bitcast")
                 and _is_move(self.new[o], lambda n: self.new[n])]
        srcs = [self.new[v.operands[0]] for v in views]
        if not srcs or not all(x.name in self.sunk or x.opcode in ("dot", "convolution") for x in srcs):
            return None
        shape = srcs[0].tensor_type.shape
        if any(x.tensor_type.shape != shape for x in srcs) or not all(x.tensor_type.row_major for x in srcs) \
                or not ins.tensor_type.row_major:
            return None
        new_ops = []
        for o in ops:
            x = self.new[o]
            if x in views:
                new_ops.append(x.operands[0])
            elif x.tensor_type.rank == 0 and ins.tensor_type.rank > 0:
                new_ops.append(o)       # a clamp's scalar bound applies to any shape as it is
            elif _bcast_const(x, self.new):
                new_ops.append(self._emit(self._fresh(f"{o}.s"), "broadcast", (x.operands[0],), Attrs.of(dimensions=()),
                                          TensorType(x.tensor_type.dtype, shape), ins))
            else:
                t = TensorType(x.tensor_type.dtype, shape)
                y = self._moves_as_one(self._fresh(f"{o}.s"), o, [("reshape", Attrs(), t)], ins)
                new_ops.append(y or self._emit(self._fresh(f"{o}.s"), "reshape", (o,), Attrs(), t, ins))
        inner = self._emit(self._fresh(f"{ins.name}.s"), ins.opcode, tuple(new_ops), ins.attrs,
                           TensorType(ins.tensor_type.dtype, shape), ins)
        self.sunk.add(inner)
        self.applied.append(f"sink {ins.name}")
        return self._emit(ins.name, "reshape", (inner,), Attrs(), ins.type, ins)

    def _clip(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """``minimum``/``maximum`` with constant bounds as ``clamp`` (module doc)."""
        if ins.opcode != "minimum" or not isinstance(ins.type, TensorType) or ins.type.rank == 0:
            return None
        dt = _dtype(ins)
        if dt in _FLOATS:
            to = {_dtype(self.src[u]) if self.src[u].opcode == "convert" else "" for u in self.users[ins.name]}
            if len(to) != 1 or not to <= {"s8", "u8"}:
                return None
            which = 1 if to == {"s8"} else 2
        elif dt in _INTS:
            which = 0
        else:
            return None
        a, b = (self.new[o] for o in ops)
        for hi, m, form in ((a, b, "bound_first"), (b, a, "x_first")):
            if not _bcast_const(hi, self.new) or m.opcode != "maximum":
                continue
            p, q = (self.new[o] for o in m.operands)
            lo, x = (p, q) if form == "bound_first" else (q, p)
            if not _bcast_const(lo, self.new):
                continue
            if not self._passes(CLIP_RULES[form][which], dt):
                return None
            self.applied.append(f"clip {ins.name} ({form})")
            return self._emit(ins.name, "clamp", (lo.name, x.name, hi.name), Attrs(), ins.type, ins)
        return None

    def _fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.new or name in self.src.by_name:
            k += 1
            name = f"{base}.{k}"
        return name

    def _relu(self, ins: Instruction, ops: tuple[str, ...]) -> str | None:
        """A ReLU inside the requantizing clip moved to the int8 result (module doc)."""
        if ins.opcode != "convert" or _dtype(ins) != "s8":
            return None
        c = self.new[ops[0]]
        dt = _dtype(c)
        if c.opcode != "clamp" or dt not in _FLOATS:
            return None
        lo, m, hi = (self.new[o] for o in c.operands)
        if _const_value(lo, self.new) != -128.0 or _const_value(hi, self.new) != 127.0 or m.opcode != "maximum":
            return None
        x, z = (self.new[o] for o in m.operands)
        if _const_value(z, self.new) != 0.0 or not self._passes(RELU_OUT_OF_CLIP, dt):
            return None
        t = ins.tensor_type
        clip = self._emit(self._fresh(f"{ins.name}.clip"), "clamp", (lo.name, x.name, hi.name), Attrs(), c.type, ins)
        q = self._emit(self._fresh(f"{ins.name}.q"), "convert", (clip,), Attrs(), t, ins)
        zero = self._emit(self._fresh(f"{ins.name}.zero"), "constant", (),
                          Attrs.of(literal=Literal.from_array(np.zeros((), np.int8))), TensorType(t.dtype, ()), ins)
        zeros = self._emit(self._fresh(f"{ins.name}.zeros"), "broadcast", (zero,), Attrs.of(dimensions=()),
                           TensorType(t.dtype, t.shape), ins)
        self.applied.append(f"relu-out-of-clip {ins.name}")
        return self._emit(ins.name, "maximum", (q, zeros), Attrs(), t, ins)


def _const_value(ins: Instruction, new: dict[str, Instruction]) -> float | None:
    """The value of ``broadcast(constant of rank 0)``, else None."""
    if not _bcast_const(ins, new):
        return None
    return float(new[ins.operands[0]].attrs["literal"].to_array().reshape(-1)[0])


def _bcast_const(ins: Instruction, new: dict[str, Instruction]) -> bool:
    """Whether ``ins`` is ``broadcast(constant of rank 0), dimensions={}``."""
    return (ins.opcode == "broadcast" and tuple(ins.attrs.get("dimensions", ())) == ()
            and new[ins.operands[0]].opcode == "constant" and new[ins.operands[0]].tensor_type.rank == 0)


def _adds_unit_dims(s: TensorType, out: TensorType) -> bool:
    """``out``'s shape is ``s``'s with dimensions of size 1 inserted (a reshape that is a broadcast)."""
    return out.rank > s.rank and tuple(d for d in out.shape if d != 1) == tuple(d for d in s.shape if d != 1)


def _plain(s: TensorType, out: TensorType) -> bool:
    """The two types have the same layout (dropping the chain keeps the value's layout)."""
    return s.effective_layout == out.effective_layout


def _run_moves(src: str, s: TensorType, chain: list[tuple[str, str, Attrs, object]],
               index: np.ndarray) -> np.ndarray:
    """The reference interpreter's value of ``chain`` applied to ``index`` (an s64 tensor of
    ``s``'s shape and layout)."""
    g = GraphBuilder("moves")
    cb = g.computation("moves")
    s64 = DTYPES["s64"]
    cb.add(src, "parameter", (), Attrs.of(index=0), declared=TensorType(s64, s.shape, s.layout))
    prev = src
    for name, opcode, attrs, t in chain:
        assert isinstance(t, TensorType)
        cb.add(name, opcode, (prev,), attrs, declared=TensorType(s64, t.shape, t.layout))
        prev = name
    g.add_computation(cb.build(), entry=True)
    return np.asarray(evaluate(g.build(), [index])[0])


def _candidates(s: TensorType, out: TensorType, got: np.ndarray
                ) -> list[tuple[str, tuple[tuple[str, object], ...]]]:
    """Single moves of ``s`` that may give ``out`` (each is then evaluated and compared): a
    broadcast first (a reshape that only adds unit dimensions reads as the broadcast the
    recognizers look for), then a reshape, then the transposes."""
    cands: list[tuple[str, tuple[tuple[str, object], ...]]] = []
    if s.rank <= out.rank:
        for dims in itertools.islice(itertools.combinations(range(out.rank), s.rank), 256):
            if all(out.shape[d] == n for d, n in zip(dims, s.shape, strict=True)):
                cands.append(("broadcast", (("dimensions", dims),)))
    if s.size == out.size:
        cands.append(("reshape", ()))
        if s.rank == out.rank and sorted(s.shape) == sorted(out.shape) and s.rank <= 6:
            for perm in itertools.permutations(range(s.rank)):
                if tuple(s.shape[p] for p in perm) == out.shape and perm != tuple(range(s.rank)):
                    cands.append(("transpose", (("dimensions", perm),)))
    return cands
