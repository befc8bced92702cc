"""Integer attribute expressions of ISA descriptions (slice bounds, constraints, costs).

Written with Python syntax (``n * 128``, ``addr_in + n * 128 <= 1048576``, ``min(rows, 16)``,
``a and not b``) and parsed into a small frozen AST, so that the same expression can be evaluated
(simulator), printed (docs), and later translated to solver terms (phase 2's CP-SAT model, z3)
without ``eval``. Division is floor division (``//``) and ``%`` is Python's (non-negative for a
positive divisor); the attributes are integers.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Expr", "Var", "Const", "BinOp", "Compare", "BoolOp", "Not", "Call", "parse_expr", "ExprError"]


class ExprError(ValueError):
    """A malformed expression or one that uses an unknown name or construct."""


@dataclass(frozen=True)
class Expr:
    def eval(self, env: Mapping[str, int]) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def vars(self) -> frozenset[str]:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class Var(Expr):
    name: str

    def eval(self, env: Mapping[str, int]) -> int:
        try:
            return int(env[self.name])
        except KeyError:
            raise ExprError(f"attribute '{self.name}' has no value") from None

    def vars(self) -> frozenset[str]:
        return frozenset((self.name,))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const(Expr):
    value: int

    def eval(self, env: Mapping[str, int]) -> int:
        return self.value

    def vars(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        return str(self.value)


_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.LShift: "<<",
        ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def eval(self, env: Mapping[str, int]) -> int:
        a, b = self.lhs.eval(env), self.rhs.eval(env)
        op = self.op
        if op in ("//", "%") and b == 0:
            raise ExprError(f"division by zero in {self}")
        if op in ("<<", ">>") and b < 0:
            raise ExprError(f"negative shift in {self}")
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "//":
            return a // b
        if op == "%":
            return a % b
        if op == "<<":
            return a << b
        if op == ">>":
            return a >> b
        return a & b if op == "&" else a | b

    def vars(self) -> frozenset[str]:
        return self.lhs.vars() | self.rhs.vars()

    def __str__(self) -> str:
        return f"({self.lhs} {self.op} {self.rhs})"


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def eval(self, env: Mapping[str, int]) -> int:
        a, b = self.lhs.eval(env), self.rhs.eval(env)
        return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[self.op])

    def vars(self) -> frozenset[str]:
        return self.lhs.vars() | self.rhs.vars()

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and" | "or"
    args: tuple[Expr, ...]

    def eval(self, env: Mapping[str, int]) -> int:
        vals = (a.eval(env) for a in self.args)
        return int(all(vals) if self.op == "and" else any(vals))

    def vars(self) -> frozenset[str]:
        return frozenset().union(*(a.vars() for a in self.args))

    def __str__(self) -> str:
        return "(" + f" {self.op} ".join(str(a) for a in self.args) + ")"


@dataclass(frozen=True)
class Not(Expr):
    arg: Expr

    def eval(self, env: Mapping[str, int]) -> int:
        return int(not self.arg.eval(env))

    def vars(self) -> frozenset[str]:
        return self.arg.vars()

    def __str__(self) -> str:
        return f"not {self.arg}"


@dataclass(frozen=True)
class Call(Expr):
    fn: str  # "min" | "max"
    args: tuple[Expr, ...]

    def eval(self, env: Mapping[str, int]) -> int:
        vals = [a.eval(env) for a in self.args]
        return min(vals) if self.fn == "min" else max(vals)

    def vars(self) -> frozenset[str]:
        return frozenset().union(*(a.vars() for a in self.args))

    def __str__(self) -> str:
        return f"{self.fn}(" + ", ".join(str(a) for a in self.args) + ")"


def parse_expr(text: str | int) -> Expr:
    """Parse an attribute expression; raises :class:`ExprError` naming the bad construct."""
    if isinstance(text, int):
        return Const(text)
    return _parse_text(text)


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Expr:
    # expressions are frozen: one per text (g_θ(α)'s placeholders are parsed for every α)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse expression '{text}': {e.msg}") from None
    return _conv(tree.body, text)


def _conv(n: ast.AST, src: str) -> Expr:
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, bool)):
        return Const(int(n.value))
    if isinstance(n, ast.Name):
        return Var(n.id)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return BinOp("-", Const(0), _conv(n.operand, src))
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        return Not(_conv(n.operand, src))
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        return BinOp(_BIN[type(n.op)], _conv(n.left, src), _conv(n.right, src))
    if isinstance(n, ast.Compare):
        parts: list[Expr] = []
        left = _conv(n.left, src)
        for op, right_node in zip(n.ops, n.comparators, strict=True):
            if type(op) not in _CMP:
                raise ExprError(f"unsupported comparison in '{src}'")
            right = _conv(right_node, src)
            parts.append(Compare(_CMP[type(op)], left, right))
            left = right
        return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))
    if isinstance(n, ast.BoolOp):
        return BoolOp("and" if isinstance(n.op, ast.And) else "or", tuple(_conv(v, src) for v in n.values))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max") and not n.keywords:
        return Call(n.func.id, tuple(_conv(a, src) for a in n.args))
    raise ExprError(f"unsupported construct '{ast.unparse(n)}' in expression '{src}'")
