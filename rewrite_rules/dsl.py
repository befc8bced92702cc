"""The rule language: rewrite rules as data (patterns over IR operators with symbolic attributes).

A rule is a Python function ``build(c: RuleCtx) -> (lhs, rhs, preconditions)`` registered with
:func:`rule`. It is called once per (dtype, rank) instantiation: ``c.tensor("x")`` makes a tensor
pattern variable of the instantiation's rank whose sizes ``x.shape`` are symbolic integers (z3
``Int``s); ``c.int("s")`` / ``c.ints("s")`` make symbolic integer attributes. Operators are the
operator table's (:mod:`semantics.ops`), built with the helpers below; attribute values may be
Python ints or z3 integer expressions. Preconditions are z3 Boolean expressions over attributes
and sizes. So one definition serves the prover (symbolic encoding, :mod:`verif.symbolic`), the
counterexample replay and the compiler (concrete graphs, :mod:`rewrite_rules.instantiate`).

Example (before -> after)::

    @rule("slice(slice(x)) => slice(x)", family="slice", dtypes=ALL)
    def _(c):
        x = c.tensor("x")
        s1, e1, s2, e2 = c.ints("s1"), c.ints("e1"), c.ints("s2"), c.ints("e2")
        return slice_(slice_(x, s1, e1), s2, e2), slice_(x, vadd(s1, s2), vadd(s1, e2)), []
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from semantics.dtypes import DTYPES, DType

__all__ = [
    "Node", "TVar", "Op", "RuleCtx", "Rule", "rule", "RULES", "ALL", "INTS", "SINTS", "UINTS", "FLOATS", "NUM",
    "EXACT", "op", "slice_", "pad", "concat", "broadcast", "transpose", "reverse", "reshape", "convert", "const",
    "full", "iota", "dot", "reduce", "select", "compare", "clamp", "dslice", "dus", "copy", "vadd", "vsub",
    "bitcast",
]

INTS = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")
SINTS = ("s8", "s16", "s32", "s64")
UINTS = ("u8", "u16", "u32", "u64")
FLOATS = ("bf16", "f16", "f32", "f64")
NUM = INTS + FLOATS
ALL = ("pred",) + NUM
#: dtypes whose arithmetic is exact modular (the default claim of integer algebra rules)
EXACT = INTS


class Node:
    """A pattern node (tensor variable or operator application)."""


@dataclass(eq=False)
class TVar(Node):
    """A tensor pattern variable; ``shape`` holds its symbolic sizes."""

    name: str
    rank: int
    dtype: str | None = None            # None: the rule's dtype
    shape: list[Any] = field(default_factory=list)

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False)
class Op(Node):
    """``opcode(args...)`` with attributes; ``out_dtype``/``out_shape`` for operators whose result
    type cannot be inferred (broadcast, reshape, iota, constant, convert)."""

    opcode: str
    args: tuple[Node, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    out_dtype: str | None = None
    out_shape: tuple[Any, ...] | None = None

    def __repr__(self) -> str:
        a = ", ".join(repr(x) for x in self.args)
        return f"{self.opcode}({a})"


class RuleCtx:
    """What a rule's build function gets: the instantiation's dtype and rank, and fresh symbols."""

    def __init__(self, dtype: DType, rank: int) -> None:
        self.dtype = dtype
        self.rank = rank
        self.tensors: dict[str, TVar] = {}
        self.symbols: list[z3.ArithRef] = []

    def tensor(self, name: str, rank: int | None = None, dtype: str | None = None) -> TVar:
        if name in self.tensors:
            raise ValueError(f"tensor variable {name} defined twice")
        r = self.rank if rank is None else rank
        t = TVar(name, r, dtype, [z3.Int(f"{name}.n{k}") for k in range(r)])
        self.tensors[name] = t
        return t

    def int(self, name: str) -> z3.ArithRef:
        v = z3.Int(name)
        self.symbols.append(v)
        return v

    def ints(self, name: str, n: int | None = None) -> list[z3.ArithRef]:
        return [self.int(f"{name}{k}") for k in range(self.rank if n is None else n)]


BuildFn = Callable[[RuleCtx], tuple[Node, Node, Sequence[Any]]]


@dataclass(frozen=True)
class Rule:
    """A rewrite rule ``lhs => rhs`` under preconditions, claimed for ``dtypes``.

    ``ranks``: the ranks it is stated for (None: every rank 1..R of the prover's bound).
    ``expect``: "valid" for library rules; "invalid" for the deliberately wrong rules of the tests.
    ``note``: expected prover outcomes recorded as data (e.g. "symbolic proof times out; bounded").
    """

    name: str
    family: str
    desc: str
    dtypes: tuple[str, ...]
    build: BuildFn
    ranks: tuple[int, ...] | None = None
    expect: str = "valid"
    note: str = ""

    @property
    def source(self) -> str:
        text = getattr(self.build, "source", None)   # a build object that carries its text (rule files)
        if isinstance(text, str):
            return text
        try:
            return inspect.getsource(self.build)
        except (OSError, TypeError):  # pragma: no cover - built from a string
            return getattr(self.build, "__qualname__", type(self.build).__qualname__)

    def content_hash(self) -> str:
        """The proof cache key: the rule's name and claims, the whole source of the module that
        defines it (so a helper or constant the rule uses is covered), and the source of the
        semantics and the prover it is proved with (a change to an operator's semantics or to the
        encoding invalidates every cached proof)."""
        return _hash((*self._text_parts(), _semantics_fingerprint()))

    def text_hash(self) -> str:
        """The rule's own part of :meth:`content_hash` (name, claims, its source and its module's),
        without the semantics fingerprint: the proof lock tells which of the two changed."""
        return _hash(self._text_parts())

    def _text_parts(self) -> tuple[str, ...]:
        return (self.name, self.family, ",".join(self.dtypes), str(self.ranks), self.source,
                _module_source(self.build))

    def instantiate(self, dtype: str, rank: int) -> tuple[RuleCtx, Node, Node, list[Any]]:
        c = RuleCtx(DTYPES[dtype], rank)
        lhs, rhs, pre = self.build(c)
        return c, lhs, rhs, list(pre)


RULES: dict[str, Rule] = {}


def _hash(parts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _module_source(fn: Callable[..., Any]) -> str:
    mod = inspect.getmodule(fn)
    try:
        return inspect.getsource(mod) if mod is not None else ""
    except (OSError, TypeError):  # pragma: no cover - interactive definitions
        return ""


_FINGERPRINT: list[str] = []


def _semantics_fingerprint() -> str:
    """Hash of the sources the meaning of a proof depends on: semantics/ops and the graph SMT
    encoder, the pattern language, its typing and instantiation, and verif's encoders, prover and
    replay.
    verif's bookkeeping (the gate, the cache, the proof lock, the job runner, the solver's resource
    limits) decides which proofs run, how long they may take and where their records go, not what a
    proof shows: it is left out, so editing it keeps the cache."""
    if not _FINGERPRINT:
        from pathlib import Path

        root = Path(__file__).resolve().parents[1]
        bookkeeping = {"__init__.py", "gate.py", "cache.py", "lock.py", "run.py", "limits.py"}
        files = sorted((root / "semantics" / "ops").glob("*.py")) + [root / "semantics" / "smt.py"]
        files += sorted(f for f in (root / "verif").glob("*.py") if f.name not in bookkeeping)
        files += [root / "rewrite_rules" / n for n in ("dsl.py", "instantiate.py", "node_types.py")]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _FINGERPRINT.append(h.hexdigest()[:16])
    return _FINGERPRINT[0]


def rule(name: str, *, family: str, dtypes: Sequence[str], desc: str = "", ranks: Sequence[int] | None = None,
         expect: str = "valid", note: str = "", registry: dict[str, Rule] | None = None) -> Callable[[BuildFn], Rule]:
    """Register ``build`` as the rule ``name`` (a stable name that reads as the equation)."""
    reg = RULES if registry is None else registry

    def deco(fn: BuildFn) -> Rule:
        if name in reg:
            raise ValueError(f"rule '{name}' is defined twice")
        bad = [d for d in dtypes if d not in DTYPES]
        if bad:
            raise ValueError(f"rule '{name}': unknown dtype {bad[0]}")
        doc = (fn.__doc__ or "").strip()
        text = desc or (doc.splitlines()[0] if doc else name)
        r = Rule(name, family, text, tuple(dtypes), fn, tuple(ranks) if ranks is not None else None, expect, note)
        reg[name] = r
        return r
    return deco


# ---------------------------------------------------------------------------------------------
# operator helpers (attribute values: ints or z3 integer expressions)
# ---------------------------------------------------------------------------------------------

def vadd(a: Sequence[Any], b: Sequence[Any]) -> list[Any]:
    return [x + y for x, y in zip(a, b, strict=True)]


def vsub(a: Sequence[Any], b: Sequence[Any]) -> list[Any]:
    return [x - y for x, y in zip(a, b, strict=True)]


def op(opcode: str, *args: Node, **attrs: Any) -> Op:
    """Any elementwise operator of the table: ``op("add", a, b)``."""
    return Op(opcode, tuple(args), dict(attrs))


def copy(x: Node) -> Op:
    return Op("copy", (x,))


def slice_(x: Node, start: Sequence[Any], limit: Sequence[Any], stride: Sequence[int] | None = None) -> Op:
    st = list(stride) if stride is not None else [1] * len(start)
    return Op("slice", (x,), {"slice": tuple(zip(start, limit, st, strict=True))})


def pad(x: Node, value: Node, lo: Sequence[Any], hi: Sequence[Any], interior: Sequence[Any] | None = None) -> Op:
    it = list(interior) if interior is not None else [0] * len(lo)
    return Op("pad", (x, value), {"padding": tuple(zip(lo, hi, it, strict=True))})


def concat(dim: int, *xs: Node) -> Op:
    return Op("concatenate", tuple(xs), {"dimensions": (dim,)})


def broadcast(x: Node, shape: Sequence[Any], dims: Sequence[int], dtype: str | None = None) -> Op:
    return Op("broadcast", (x,), {"dimensions": tuple(dims)}, out_dtype=dtype, out_shape=tuple(shape))


def transpose(x: Node, perm: Sequence[int]) -> Op:
    return Op("transpose", (x,), {"dimensions": tuple(perm)})


def reverse(x: Node, dims: Sequence[int]) -> Op:
    return Op("reverse", (x,), {"dimensions": tuple(dims)})


def reshape(x: Node, shape: Sequence[Any]) -> Op:
    return Op("reshape", (x,), out_shape=tuple(shape))


def convert(x: Node, dtype: str) -> Op:
    return Op("convert", (x,), out_dtype=dtype)


def bitcast(x: Node, dtype: str) -> Op:
    return Op("bitcast-convert", (x,), out_dtype=dtype)


def const(value: Any, dtype: str | None = None) -> Op:
    """A scalar constant (the rule's dtype unless given); ``value`` a Python number."""
    return Op("constant", (), {"value": value}, out_dtype=dtype, out_shape=())


def full(value: Any, shape: Sequence[Any], dtype: str | None = None) -> Op:
    """``broadcast(constant(value))`` of the given shape."""
    return broadcast(const(value, dtype), shape, (), dtype)


def iota(dim: int, shape: Sequence[Any], dtype: str | None = None) -> Op:
    return Op("iota", (), {"iota_dimension": dim}, out_dtype=dtype, out_shape=tuple(shape))


def dot(a: Node, b: Node, lc: Sequence[int], rc: Sequence[int], lb: Sequence[int] = (), rb: Sequence[int] = (),
        dtype: str | None = None) -> Op:
    return Op("dot", (a, b), {"lhs_batch_dims": tuple(lb), "rhs_batch_dims": tuple(rb),
                              "lhs_contracting_dims": tuple(lc), "rhs_contracting_dims": tuple(rc)}, out_dtype=dtype)


def reduce(x: Node, init: Node, dims: Sequence[int], fn: str) -> Op:
    """``reduce`` with a region computing the binary operator ``fn`` (add, maximum, minimum, multiply,
    and, or, xor)."""
    return Op("reduce", (x, init), {"dimensions": tuple(dims), "region": fn})


def select(p: Node, a: Node, b: Node) -> Op:
    return Op("select", (p, a, b))


def compare(a: Node, b: Node, direction: str, total: bool = False) -> Op:
    attrs: dict[str, Any] = {"direction": direction}
    if total:
        attrs["type"] = "TOTALORDER"
    return Op("compare", (a, b), attrs)


def clamp(lo: Node, x: Node, hi: Node) -> Op:
    return Op("clamp", (lo, x, hi))


def dslice(x: Node, starts: Sequence[Node], sizes: Sequence[Any]) -> Op:
    return Op("dynamic-slice", (x, *starts), {"dynamic_slice_sizes": tuple(sizes)})


def dus(x: Node, update: Node, starts: Sequence[Node]) -> Op:
    return Op("dynamic-update-slice", (x, update, *starts))
