"""The plain-text rule form: one rule a line, as the names read (docs/rules.md, "Rule files").

    add(x, 0) => x                          for s8 s32 u8
    subtract(x, negate(y)) => add(y, x)     for INTS f32
    reverse(reverse(x, [0]), [0]) => x      rank 1 2 3
    slice(slice(x, [a], [b]), [c], [d]) => slice(x, [a + c], [a + d])   rank 1  if a + d <= b

A line is ``LHS => RHS`` followed by optional clauses, in any order: ``for DTYPE...`` (the claim;
dtype names or the groups INTS SINTS UINTS FLOATS NUM ALL; default NUM), ``rank R...`` (default
1 2 3), ``if COND, COND...`` (preconditions over sizes and integer attributes) and
``with NAME: DTYPE, ...`` (tensor variables of a dtype other than the claimed one). ``#`` starts a
comment. Sides are Python-syntax expressions read by this module (never executed): an identifier
is a tensor variable of the instantiation's rank, operators are the operator table's (``-`` in a
name written ``_``), a number is a splat of the shape and dtype of its sibling operand (a rule
without tensor variables has the sizes ``n0, n1, ...``). Integer
attributes (slice bounds, pads, sizes) may name integer symbols; sizes are ``x.shape[k]``.

:func:`parse_rule` turns one line into a :class:`rewrite_rules.dsl.Rule`; errors are
:class:`RuleSyntaxError` with ``file:line:col``.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from semantics.dtypes import DTYPES
from semantics.errors import AccvError, SourceLoc
from semantics.ops import REGISTRY

from . import dsl
from .dsl import Node, Rule, RuleCtx, TVar
from .node_types import NotTypable, node_type

__all__ = ["RuleSyntaxError", "parse_rule", "parse_rules", "GROUPS"]

GROUPS = {"INTS": dsl.INTS, "SINTS": dsl.SINTS, "UINTS": dsl.UINTS, "FLOATS": dsl.FLOATS, "NUM": dsl.NUM,
          "ALL": dsl.ALL}
_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
_REGIONS = ("add", "maximum", "minimum", "multiply", "and", "or", "xor")
_NAMED = {"inf": math.inf, "nan": math.nan}
#: other spellings of operators: XLA's logical names (``not``/``and``/``or`` are Python keywords,
#: so the bare names do not parse) and its long names
_ALIASES = {"logical_not": "not", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
            "bitcast_convert": "bitcast"}
#: an operator name with hyphens as XLA spells it (``shift-left(x, y)``), read as ``shift_left``
_HYPHENATED = re.compile(r"(?<![\w.])([A-Za-z]+(?:-[A-Za-z]+)+)(?=\s*\()")


def _unhyphenate(code: str) -> str:
    """``code`` with every hyphenated operator name written with ``_`` (same length: columns keep)."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        known = name in REGISTRY or name.replace("-", "_") in _ALIASES
        return name.replace("-", "_") if known else name
    return _HYPHENATED.sub(sub, code)


class RuleSyntaxError(AccvError):
    """A rule file or ``--rule`` text that does not parse or does not build (``file:line:col``)."""


@dataclass
class _Splat:
    """A scalar whose shape comes from its context (a number, ``broadcast(c)``, ``iota(d)``)."""

    make: Callable[[list[Any], str], Node]    # (shape, context dtype) -> node
    dtype: str | None = None


class _Err(Exception):
    def __init__(self, node: ast.AST | None, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


class _Builder:
    """Evaluates the parsed sides for one instantiation (a :class:`RuleCtx`)."""

    def __init__(self, c: RuleCtx, var_dtypes: dict[str, str]) -> None:
        self.c = c
        self.var_dtypes = var_dtypes
        self.ints: dict[str, Any] = {}

    # -- helpers ---------------------------------------------------------------------------------

    def _shape_dtype(self, n: Node) -> tuple[list[Any], str]:
        """The shape and element type of ``n``, by the operator table's shape rules."""
        try:
            t = node_type(n, self.c.dtype)
        except NotTypable as e:
            raise _Err(None, f"cannot infer the shape of a number beside this operand: {e}") from None
        return list(t.shape), t.dtype.name

    def resolve(self, v: Node | _Splat, like: Node | None, where: ast.AST) -> Node:
        if isinstance(v, _Splat):
            if like is None:
                raise _Err(where, "cannot infer the shape of this scalar: give an operand that is a tensor")
            shape, dt = self._shape_dtype(like)
            return v.make(shape, v.dtype or dt)
        return v

    def tensor(self, e: ast.expr) -> Node | _Splat:
        if isinstance(e, ast.Name):
            if e.id in _NAMED:
                val = _NAMED[e.id]
                return _Splat(lambda shape, dt: dsl.full(val, shape, dt))
            if e.id in DTYPES or e.id in _DIRECTIONS:
                raise _Err(e, f"'{e.id}' is not a tensor here")
            if e.id in self.c.tensors:
                return self.c.tensors[e.id]
            return self.c.tensor(e.id, dtype=self.var_dtypes.get(e.id))
        num = _number(e)
        if num is not None:
            return _Splat(lambda shape, dt: dsl.full(num, shape, dt))
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            return self.call(e)
        raise _Err(e, "expected a tensor variable, a number or an operator application")

    def integer(self, e: ast.expr) -> Any:
        if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in self.c.tensors:
                raise _Err(e, f"'{e.id}' is a tensor, an integer is needed here")
            if e.id not in self.ints:
                self.ints[e.id] = self.c.int(e.id)
            return self.ints[e.id]
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return -self.integer(e.operand)
        if isinstance(e, ast.BinOp):
            a, b = self.integer(e.left), self.integer(e.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a / b if not isinstance(a, int) or not isinstance(b, int) else a // b,
                   ast.Mod: lambda: a % b}
            f = ops.get(type(e.op))
            if f is None:
                raise _Err(e, "integer expressions use + - * // %")
            return f()
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "shape":
            t = self.tensor(e.value.value)
            k = self.integer(e.slice)
            if not isinstance(t, TVar) or not isinstance(k, int):
                raise _Err(e, "sizes are written x.shape[k] with a tensor variable x and a number k")
            if not 0 <= k < t.rank:
                raise _Err(e, f"{t.name} has rank {t.rank}: no dimension {k}")
            return t.shape[k]
        raise _Err(e, "expected an integer, an integer symbol or x.shape[k]")

    def ints_list(self, e: ast.expr) -> list[Any]:
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return [self.integer(x) for x in e.elts]
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):    # [n] + shape(x)
            return self.ints_list(e.left) + self.ints_list(e.right)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "shape" and len(e.args) == 1:
            t = self.tensor(e.args[0])
            if not isinstance(t, TVar):
                raise _Err(e, "shape(x) takes a tensor variable")
            return list(t.shape)
        raise _Err(e, "expected a list of integers [a, b, ...] or shape(x)")

    def cond(self, e: ast.expr) -> Any:
        if isinstance(e, ast.BoolOp):
            parts = [self.cond(v) for v in e.values]
            return z3.And(*parts) if isinstance(e.op, ast.And) else z3.Or(*parts)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return z3.Not(self.cond(e.operand))
        if isinstance(e, ast.Compare):
            terms = [self.integer(e.left)] + [self.integer(x) for x in e.comparators]
            out = []
            for op_, a, b in zip(e.ops, terms, terms[1:], strict=False):
                f = {ast.Lt: lambda: a < b, ast.LtE: lambda: a <= b, ast.Gt: lambda: a > b, ast.GtE: lambda: a >= b,
                     ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b}.get(type(op_))
                if f is None:
                    raise _Err(e, "conditions compare with < <= > >= == !=")
                r = f()
                out.append(z3.BoolVal(r) if isinstance(r, bool) else r)
            return z3.And(*out) if len(out) > 1 else out[0]
        raise _Err(e, "expected a condition such as x.shape[0] >= 4")

    def _word(self, e: ast.expr, choices: Sequence[str], what: str) -> str:
        if isinstance(e, ast.Name) and e.id in choices:
            return e.id
        raise _Err(e, f"expected {what} ({' '.join(choices)})")

    # -- operators -------------------------------------------------------------------------------

    def call(self, e: ast.Call) -> Node | _Splat:
        assert isinstance(e.func, ast.Name)
        name = _ALIASES.get(e.func.id, e.func.id)
        kw = {k.arg: k.value for k in e.keywords if k.arg is not None}
        args = list(e.args)
        f = getattr(self, "_op_" + name, None)
        if f is not None:
            return f(e, args, kw)
        opcode = name.replace("_", "-")
        opdef = REGISTRY.get(opcode)
        if opdef is None or opdef.scalar is None or opcode in ("compare", "select", "clamp", "convert"):
            raise _Err(e.func, f"unknown operator '{name}'")
        lo, hi = opdef.arity
        if len(args) < lo or (hi is not None and len(args) > hi) or kw:
            raise _Err(e, f"{name} takes {lo} operand(s)" if lo == hi else f"{name}: wrong operands")
        return self._elementwise(e, opcode, args, {})

    def _elementwise(self, e: ast.Call, opcode: str, args: list[ast.expr], attrs: dict[str, Any],
                     scalar_ok: tuple[int, ...] = ()) -> Node | _Splat:
        vals = [self.tensor(a) for a in args]
        like = next((v for k, v in enumerate(vals) if not isinstance(v, _Splat) and k not in scalar_ok), None)
        like = like or next((v for v in vals if not isinstance(v, _Splat)), None)
        if like is None:
            raise _Err(e, f"{opcode}: at least one operand must be a tensor")
        nodes = [self.resolve(v, like, a) for v, a in zip(vals, args, strict=True)]
        return dsl.Op(opcode, tuple(nodes), attrs)

    def _op_compare(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        if len(args) not in (3, 4):
            raise _Err(e, "compare(a, b, DIRECTION[, TOTALORDER])")
        attrs: dict[str, Any] = {"direction": self._word(args[2], _DIRECTIONS, "a direction")}
        if len(args) == 4:
            attrs["type"] = self._word(args[3], ("TOTALORDER",), "a comparison type")
        return self._elementwise(e, "compare", args[:2], attrs)

    def _op_select(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        if len(args) != 3:
            raise _Err(e, "select(pred, on_true, on_false)")
        p = self.tensor(args[0])
        a, b = self.tensor(args[1]), self.tensor(args[2])
        like = next((v for v in (a, b) if not isinstance(v, _Splat)), None)
        if like is None:
            raise _Err(e, "select: on_true or on_false must be a tensor")
        a, b = self.resolve(a, like, args[1]), self.resolve(b, like, args[2])
        if isinstance(p, _Splat):
            shape, _ = self._shape_dtype(like)
            p = p.make(shape, "pred")
        return dsl.select(p, a, b)

    def _op_clamp(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        if len(args) != 3:
            raise _Err(e, "clamp(lo, x, hi)")
        return self._elementwise(e, "clamp", args, {}, scalar_ok=(0, 2))

    def _dtype_arg(self, e: ast.expr) -> str:
        if isinstance(e, ast.Name) and e.id in DTYPES:
            return e.id
        raise _Err(e, f"expected a dtype ({' '.join(DTYPES)})")

    def _unary_typed(self, e: ast.Call, args: list[ast.expr], fn: Callable[[Node, str], Node]) -> Node | _Splat:
        if len(args) != 2:
            raise _Err(e, f"{getattr(e.func, 'id', '')}(x, DTYPE)")
        dt = self._dtype_arg(args[1])
        x = self.tensor(args[0])
        if isinstance(x, _Splat):
            inner = x
            return _Splat(lambda shape, _dt: fn(inner.make(shape, inner.dtype or self.c.dtype.name), dt), dt)
        return fn(x, dt)

    def _op_convert(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        return self._unary_typed(e, args, dsl.convert)

    def _op_bitcast(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        return self._unary_typed(e, args, dsl.bitcast)

    _op_bitcast_convert = _op_bitcast

    def _op_const(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        if len(args) not in (1, 2) or _number(args[0]) is None:
            raise _Err(e, "const(NUMBER[, DTYPE])")
        num = _number(args[0])
        dt = self._dtype_arg(args[1]) if len(args) == 2 else None
        return _Splat(lambda shape, cdt: dsl.full(num, shape, cdt), dt)

    _op_full = _op_const

    def _op_broadcast(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node | _Splat:
        if not args:
            raise _Err(e, "broadcast(x[, shape=[...], dims=[...]])")
        x = self.tensor(args[0])
        if "shape" not in kw:
            if len(args) != 1 or kw:
                raise _Err(e, "broadcast(x) of a scalar, or broadcast(x, shape=[...], dims=[...])")
            if not isinstance(x, _Splat):
                shape, _ = self._shape_dtype(x)
                if shape:
                    raise _Err(e, "broadcast of a tensor needs shape=[...] and dims=[...]")
                scalar = x
                return _Splat(lambda sh, dt: dsl.broadcast(scalar, sh, ()))
            return x
        shape = self.ints_list(kw["shape"])
        dims = [self._static(d) for d in self.ints_list(kw["dims"])] if "dims" in kw else []
        if isinstance(x, _Splat):
            x = x.make([], x.dtype or self.c.dtype.name)
        return dsl.broadcast(x, shape, dims)

    def _static(self, v: Any) -> int:
        if not isinstance(v, int):
            raise _Err(None, "dimension numbers must be literal integers")
        return v

    def _static_list(self, e: ast.expr) -> list[int]:
        try:
            return [self._static(v) for v in self.ints_list(e)]
        except _Err as err:
            raise _Err(e, err.reason) from None

    def _tensor_arg(self, e: ast.Call, a: ast.expr) -> Node:
        v = self.tensor(a)
        if isinstance(v, _Splat):
            raise _Err(a, "a tensor operand is needed here (a number has no shape)")
        return v

    def _op_transpose(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 2:
            raise _Err(e, "transpose(x, [permutation])")
        return dsl.transpose(self._tensor_arg(e, args[0]), self._static_list(args[1]))

    def _op_reverse(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 2:
            raise _Err(e, "reverse(x, [dimensions])")
        return dsl.reverse(self._tensor_arg(e, args[0]), self._static_list(args[1]))

    def _op_copy(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 1:
            raise _Err(e, "copy(x)")
        return dsl.copy(self._tensor_arg(e, args[0]))

    def _op_reshape(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 2:
            raise _Err(e, "reshape(x, [sizes])")
        return dsl.reshape(self._tensor_arg(e, args[0]), self.ints_list(args[1]))

    def _op_slice(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) not in (3, 4):
            raise _Err(e, "slice(x, [starts], [limits][, [strides]])")
        x = self._tensor_arg(e, args[0])
        stride = self._static_list(args[3]) if len(args) == 4 else None
        return dsl.slice_(x, self.ints_list(args[1]), self.ints_list(args[2]), stride)

    def _op_pad(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) not in (4, 5):
            raise _Err(e, "pad(x, value, [low], [high][, [interior]])")
        x = self._tensor_arg(e, args[0])
        v = self.tensor(args[1])
        if isinstance(v, _Splat):
            v = v.make([], v.dtype or self._shape_dtype(x)[1])
        interior = self.ints_list(args[4]) if len(args) == 5 else None
        return dsl.pad(x, v, self.ints_list(args[2]), self.ints_list(args[3]), interior)

    def _op_concat(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) < 2 or "dim" not in kw:
            raise _Err(e, "concat(a, b, ..., dim=D)")
        d = self.integer(kw["dim"])
        if not isinstance(d, int):
            raise _Err(kw["dim"], "dim must be a literal integer")
        return dsl.concat(d, *[self._tensor_arg(e, a) for a in args])

    _op_concatenate = _op_concat

    def _op_iota(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> _Splat:
        if len(args) not in (1, 2):
            raise _Err(e, "iota(DIM[, DTYPE])")
        d = self.integer(args[0])
        if not isinstance(d, int):
            raise _Err(args[0], "the iota dimension must be a literal integer")
        dt = self._dtype_arg(args[1]) if len(args) == 2 else None
        return _Splat(lambda shape, cdt: dsl.iota(d, shape, dt or cdt), dt)

    def _op_dot(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 2 or not {"lc", "rc"} <= set(kw) or set(kw) - {"lc", "rc", "lb", "rb", "dtype"}:
            raise _Err(e, "dot(a, b, lc=[...], rc=[...][, lb=[...], rb=[...], dtype=DTYPE])")
        a, b = self._tensor_arg(e, args[0]), self._tensor_arg(e, args[1])
        lists = {k: self._static_list(kw[k]) if k in kw else [] for k in ("lc", "rc", "lb", "rb")}
        dt = self._dtype_arg(kw["dtype"]) if "dtype" in kw else None
        return dsl.dot(a, b, lists["lc"], lists["rc"], lists["lb"], lists["rb"], dt)

    def _op_reduce(self, e: ast.Call, args: list[ast.expr], kw: dict[str, ast.expr]) -> Node:
        if len(args) != 4:
            raise _Err(e, "reduce(x, init, [dimensions], REGION) with REGION one of " + " ".join(_REGIONS))
        x = self._tensor_arg(e, args[0])
        init = self.tensor(args[1])
        if isinstance(init, _Splat):
            init = init.make([], init.dtype or self._shape_dtype(x)[1])
        return dsl.reduce(x, init, self._static_list(args[2]), self._word(args[3], _REGIONS, "a region"))


def _number(e: ast.expr) -> float | int | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.Name) and e.id in _NAMED:
        return _NAMED[e.id]
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _number(e.operand)
        return None if v is None else -v
    return None


@dataclass
class _Piece:
    text: str
    col: int          # 0-based column of text[0] in the line


class TextBuild:
    """The build function of a text rule (a picklable object that carries its source text)."""

    def __init__(self, source: str, lhs: ast.expr, rhs: ast.expr, conds: list[ast.expr],
                 var_dtypes: dict[str, str], loc: tuple[str, int, list[int]]) -> None:
        self.source = source
        self.lhs, self.rhs, self.conds = lhs, rhs, conds
        self.var_dtypes = var_dtypes
        self.loc = loc          # file, line, column offset of each parsed piece (lhs, rhs, conds...)
        self.__qualname__ = "text rule"

    def __call__(self, c: RuleCtx) -> tuple[Node, Node, list[Any]]:
        b = _Builder(c, self.var_dtypes)
        lhs = b.tensor(self.lhs)
        rhs = b.tensor(self.rhs)
        pre: list[Any] = []
        if isinstance(lhs, _Splat) and isinstance(rhs, _Splat):
            # no tensor variable: both sides have the sizes n0, n1, ... of the instantiation's rank
            sizes = [b.integer(ast.Name(f"n{k}")) for k in range(c.rank)]
            pre += [n >= 0 for n in sizes]
            lhs_n = lhs.make(sizes, lhs.dtype or c.dtype.name)
        else:
            lhs_n = b.resolve(lhs, rhs if not isinstance(rhs, _Splat) else None, self.lhs)
        rhs_n = b.resolve(rhs, lhs_n, self.rhs)
        pre += [b.cond(e) for e in self.conds]
        return lhs_n, rhs_n, pre


def _split_clauses(body: str, col0: int) -> tuple[_Piece, dict[str, _Piece]]:
    """``RHS for ... rank ... if ... with ...`` -> the RHS and the clauses (keyword at depth 0)."""
    depth = 0
    cuts: list[tuple[int, str]] = []
    for m in re.finditer(r"[()\[\]{}]|\b(for|rank|if|with)\b", body):
        t = m.group(0)
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        elif depth == 0:
            cuts.append((m.start(), t))
    rhs_end = cuts[0][0] if cuts else len(body)
    clauses: dict[str, _Piece] = {}
    for k, (pos, kw) in enumerate(cuts):
        end = cuts[k + 1][0] if k + 1 < len(cuts) else len(body)
        if kw in clauses:
            raise _Err(None, f"clause '{kw}' given twice") from None
        start = pos + len(kw)
        clauses[kw] = _Piece(body[start:end], col0 + start)
    return _Piece(body[:rhs_end], col0), clauses


def _parse_expr(piece: _Piece, file: str, line: int) -> ast.expr:
    text = piece.text
    lead = len(text) - len(text.lstrip())
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        col = piece.col + lead + (e.offset or 1)
        raise RuleSyntaxError(e.msg, SourceLoc(file, line, col)) from None
    _shift(tree, piece.col + lead)
    return tree.body


def _shift(tree: ast.AST, by: int) -> None:
    for n in ast.walk(tree):
        if hasattr(n, "col_offset"):
            n.col_offset += by   # type: ignore[attr-defined]


def parse_rule(text: str, *, file: str = "<rule>", line: int = 1, family: str = "user",
               dtypes: Sequence[str] | None = None, registry: dict[str, Rule] | None = None) -> Rule:
    """One rule from its text form (``dtypes`` overrides the ``for`` clause)."""
    written = text.split("#", 1)[0].rstrip()
    code = _unhyphenate(written)
    if "=>" not in code:
        raise RuleSyntaxError("expected 'LHS => RHS'", SourceLoc(file, line, 1))
    arrow = code.index("=>")
    try:
        rhs_piece, clauses = _split_clauses(code[arrow + 2:], arrow + 2)
    except _Err as e:
        raise RuleSyntaxError(e.reason, SourceLoc(file, line, arrow + 3)) from None
    lhs = _parse_expr(_Piece(code[:arrow], 0), file, line)
    rhs = _parse_expr(rhs_piece, file, line)
    claim = list(dtypes) if dtypes else list(dsl.NUM)
    if "for" in clauses:
        words = clauses["for"].text.split()
        if not words:
            raise RuleSyntaxError("'for' needs dtypes", SourceLoc(file, line, clauses["for"].col))
        if not dtypes:
            claim = []
            for w in words:
                if w in GROUPS:
                    claim += [d for d in GROUPS[w] if d not in claim]
                elif w in DTYPES:
                    claim.append(w) if w not in claim else None
                else:
                    col = clauses["for"].col + clauses["for"].text.index(w) + 1
                    raise RuleSyntaxError(f"unknown dtype '{w}'", SourceLoc(file, line, col))
    ranks: tuple[int, ...] = (1, 2, 3)
    if "rank" in clauses:
        p = clauses["rank"]
        try:
            ranks = tuple(int(w) for w in p.text.replace(",", " ").split())
        except ValueError:
            raise RuleSyntaxError("'rank' takes numbers", SourceLoc(file, line, p.col + 1)) from None
        if not ranks or any(r < 0 or r > 6 for r in ranks):
            raise RuleSyntaxError("'rank' takes numbers 0..6", SourceLoc(file, line, p.col + 1))
    conds: list[ast.expr] = []
    if "if" in clauses:
        p = clauses["if"]
        tree = _parse_expr(_Piece(f"({p.text.strip()},)", p.col + len(p.text) - len(p.text.lstrip()) - 1),
                           file, line)
        assert isinstance(tree, ast.Tuple)
        conds = list(tree.elts)
    var_dtypes: dict[str, str] = {}
    if "with" in clauses:
        p = clauses["with"]
        for m in re.finditer(r"([A-Za-z_]\w*)\s*:\s*(\w+)", p.text):
            if m.group(2) not in DTYPES:
                raise RuleSyntaxError(f"unknown dtype '{m.group(2)}'", SourceLoc(file, line, p.col + m.start(2) + 1))
            var_dtypes[m.group(1)] = m.group(2)
        if not var_dtypes:
            raise RuleSyntaxError("'with' takes NAME: DTYPE, ...", SourceLoc(file, line, p.col + 1))
    name = " ".join(written.split())
    build = TextBuild(name, lhs, rhs, conds, var_dtypes, (file, line, []))
    # a dry run at the first claim reports unknown operators, arity and shape-inference errors here
    for d in claim[:1]:
        for r in ranks[:1]:
            try:
                build(RuleCtx(DTYPES[d], r))
            except _Err as e:
                col = (e.node.col_offset + 1) if e.node is not None else 1
                raise RuleSyntaxError(e.reason, SourceLoc(file, line, col)) from None
            except (ValueError, TypeError, KeyError, IndexError, z3.Z3Exception) as e:
                raise RuleSyntaxError(f"cannot build the rule: {e}", SourceLoc(file, line, 1)) from None
    reg: dict[str, Rule] = {} if registry is None else registry
    try:
        return dsl.rule(name, family=family, dtypes=claim, ranks=ranks, desc=name, registry=reg)(build)
    except ValueError as e:
        raise RuleSyntaxError(str(e), SourceLoc(file, line, 1)) from None


def parse_rules(text: str, file: str = "<rules>", family: str = "user") -> list[Rule]:
    """Every rule of a text file (blank lines and ``#`` comments skipped)."""
    out: list[Rule] = []
    reg: dict[str, Rule] = {}
    for k, line in enumerate(text.splitlines(), start=1):
        if not line.split("#", 1)[0].strip():
            continue
        out.append(parse_rule(line, file=file, line=k, family=family, registry=reg))
    return out
