"""Values of XLA HLO text: types (with layouts), integer lists, slices, paddings, literals and
attribute values. :class:`ValueParser` reads them at a :class:`~semantics.hlo_lexer.Cursor`;
:class:`semantics.hlo_parser` builds the module structure on it. Every syntax problem raises
:class:`~semantics.errors.HloSyntaxError` with ``file:line:col``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DTYPES, DType
from .hlo_lexer import INT, MAX_NESTING, PADDING, SCALAR, UINT, Cursor
from .ir import Literal
from .layout import check_layout
from .ops import REGISTRY
from .types import Layout, TensorType, TupleType, Type

__all__ = ["ValueParser", "CALLS"]

#: Attributes of the control operators that name computations.
CALLS = {"to_apply", "calls", "condition", "body", "true_computation", "false_computation"}


class ValueParser:
    """Readers of HLO values at one cursor (``self.c``)."""

    def __init__(self, text: str, filename: str) -> None:
        self.c = Cursor(text, filename)

    # -- types --------------------------------------------------------------------------------

    def type(self, depth: int = 0) -> Type:
        c = self.c
        if depth > MAX_NESTING:
            raise c.error("tuple types nested too deeply")
        if c.accept("("):
            elems: list[Type] = []
            if not c.accept(")"):
                elems.append(self.type(depth + 1))
                while c.accept(","):
                    elems.append(self.type(depth + 1))
                c.expect(")")
            return TupleType(tuple(elems))
        start = c.pos
        name = c.ident("a type")
        dt = DTYPES.get(name)
        if dt is None:
            raise c.error(f"unknown dtype '{name}'", start)
        c.expect("[")
        dims: list[int] = []
        if not c.accept("]"):
            while True:
                if c.at("<=") or c.at("?"):
                    raise c.error("unsupported dynamic dimension")
                c.skip()
                dpos = c.pos
                dims.append(c.to_int(c.match(UINT, "a dimension size"), dpos))
                if c.accept("]"):
                    break
                c.expect(",")
        shape = tuple(dims)
        if not self._layout_ahead():
            return TensorType(dt, shape)
        lay_pos = c.pos
        layout = self.layout()
        why = check_layout(shape, layout)
        if why:
            raise c.error(f"bad layout: {why}", lay_pos)
        return TensorType(dt, shape, layout)

    def _layout_ahead(self) -> bool:
        """Whether a '{' at the position opens a layout rather than a computation body (after a
        signature's result type): a layout starts with a digit, ':' or '}'."""
        c = self.c
        if c.peek() != "{":
            return False
        save = c.pos
        c.pos += 1
        nxt = c.peek()
        c.pos = save
        return nxt.isdigit() or nxt in (":", "}")

    def layout(self) -> Layout:
        c = self.c
        c.expect("{")
        m2m: list[int] = []
        if c.peek() not in ":}":
            m2m.append(c.integer("a dimension number"))
            while c.accept(","):
                m2m.append(c.integer("a dimension number"))
        tiles: tuple[int, ...] = ()
        if c.accept(":"):
            feat_pos = c.pos
            feat = c.ident_ahead()
            if feat is not None and feat[0] == "T" and c.text.startswith("(", feat[1]):
                c.pos = feat[1] + 1
                ts: list[int] = []
                while True:
                    if c.peek() == "*":
                        raise c.error("unsupported layout feature '*' in a tile")
                    ts.append(c.integer("a tile size"))
                    if c.accept(")"):
                        break
                    c.expect(",")
                tiles = tuple(ts)
                if c.peek() == "(":
                    raise c.error("unsupported layout feature: more than one tile")
                feat_pos = c.pos
                feat = c.ident_ahead()
            if feat is not None and feat[0] == "S" and c.text.startswith("(", feat[1]):
                c.pos = feat[1] + 1       # memory space: where the buffer lives, not its bytes
                c.integer("a memory space")
                c.expect(")")
                feat_pos = c.pos
                feat = c.ident_ahead()
            if c.peek() != "}":
                tok = feat[0] if feat else c.describe().strip("'")
                raise c.error(f"unsupported layout feature '{tok}'", feat_pos)
        c.expect("}")
        return Layout(tuple(m2m), tiles)

    # -- attribute values ---------------------------------------------------------------------

    def ints(self) -> tuple[int, ...]:
        c = self.c
        c.expect("{")
        out: list[int] = []
        if not c.accept("}"):
            out.append(c.integer())
            while c.accept(","):
                out.append(c.integer())
            c.expect("}")
        return tuple(out)

    def slices(self) -> tuple[tuple[int, int, int], ...]:
        c = self.c
        c.expect("{")
        out: list[tuple[int, int, int]] = []
        if c.accept("}"):
            return ()
        while True:
            c.expect("[")
            start = c.integer()
            c.expect(":")
            limit = c.integer()
            stride = c.integer() if c.accept(":") else 1
            c.expect("]")
            out.append((start, limit, stride))
            if c.accept("}"):
                return tuple(out)
            c.expect(",")

    def padding(self) -> tuple[tuple[int, int, int], ...]:
        c = self.c
        c.skip()
        start = c.pos
        raw = c.match(PADDING, "a padding like 0_0x1_1")
        out: list[tuple[int, int, int]] = []
        for dim in raw.split("x"):
            parts = dim.split("_")
            if len(parts) not in (2, 3) or not all(INT.fullmatch(p) for p in parts):
                raise c.error(f"bad padding '{raw}': each dimension is lo_hi or lo_hi_interior", start)
            vals = [c.to_int(p, start) for p in parts] + [0]
            out.append((vals[0], vals[1], vals[2]))
        return tuple(out)

    def skip_value(self) -> str:
        """Read any attribute value (balanced brackets, quoted strings, bare words) as raw text."""
        c = self.c
        c.skip()
        start = c.pos
        t = c.text
        closing = {"{": "}", "(": ")", "[": "]"}
        stack: list[str] = []
        while c.pos < c.n:
            ch = t[c.pos]
            if ch == '"':
                qstart = c.pos
                c.pos += 1
                while c.pos < c.n and t[c.pos] != '"':
                    c.pos += 2 if t[c.pos] == "\\" else 1
                if c.pos >= c.n:
                    raise c.error("unterminated string (it runs to the end of the file)", qstart)
                c.pos += 1
            elif ch in closing:
                stack.append(closing[ch])
                c.pos += 1
            elif ch in "}])":
                if not stack:
                    break
                if ch != stack[-1]:
                    raise c.error(f"unbalanced '{ch}' in attribute value")
                stack.pop()
                c.pos += 1
            elif not stack and (ch == "," or ch.isspace()):
                break
            else:
                c.pos += 1
        if stack:
            raise c.error(f"unexpected end of file, expected '{stack[-1]}'", c.n)
        if c.pos == start:
            raise c.error(f"expected an attribute value, got {c.describe()}")
        return t[start:c.pos]

    def attr_value(self, opcode: str, name: str) -> Any:
        op = REGISTRY.get(opcode)
        spec = op.attr_spec(name) if op is not None else None
        kind = spec.kind if spec is not None else None
        if kind is None:
            if name == "dimensions" or name.endswith("_dims") or name == "dynamic_slice_sizes":
                kind = "ints"
            elif name in ("slice", "padding"):
                kind = name
            elif name in CALLS:
                kind = "computation"
            elif name in ("branch_computations", "called_computations"):
                kind = "computations"
            elif name in ("index", "iota_dimension"):
                kind = "int"
        c = self.c
        if kind == "ints":
            return self.ints()
        if kind == "int":
            return c.integer()
        if kind == "slice":
            return self.slices()
        if kind == "padding":
            return self.padding()
        if kind == "enum":
            return c.ident("a value")
        if kind == "computation":
            return c.name("a computation name")
        if kind == "computations":
            c.expect("{")
            names: list[str] = []
            if not c.accept("}"):
                names.append(c.name("a computation name"))
                while c.accept(","):
                    names.append(c.name("a computation name"))
                c.expect("}")
            return tuple(names)
        return self.skip_value()

    # -- literals -----------------------------------------------------------------------------

    def literal(self, t: TensorType) -> Literal:
        dt = t.dtype
        flat: list[tuple[str, int]] = []
        if t.rank == 0:
            flat.append(self._scalar_token())
        else:
            self._literal_level(t.shape, 0, flat)
        values = [self._scalar_value(tok, pos, dt) for tok, pos in flat]
        if dt.is_float:
            arr = np.array(values, dtype=dt.uint_np).view(dt.np)
        else:
            arr = np.array(values, dtype=dt.np)
        # Literal(...) directly: Literal.from_array turns a 0-d array into shape (1,) (it calls
        # np.ascontiguousarray, which returns at least 1-d).
        return Literal(dt, t.shape, np.ascontiguousarray(arr).tobytes())

    def _literal_level(self, shape: tuple[int, ...], d: int, flat: list[tuple[str, int]]) -> None:
        c = self.c
        c.skip()
        open_pos = c.pos
        if c.at("{...}") or c.at("{ ... }"):
            raise c.error("bad literal: elided constant ({...}) cannot be read")
        c.expect("{")
        count = 0
        if not c.accept("}"):
            while True:
                if d + 1 < len(shape):
                    self._literal_level(shape, d + 1, flat)
                else:
                    flat.append(self._scalar_token())
                count += 1
                if c.accept("}"):
                    break
                c.expect(",")
        if count != shape[d]:
            raise c.error(f"bad literal: dimension {d} has {count} elements, the type says {shape[d]}",
                          open_pos)

    def _scalar_token(self) -> tuple[str, int]:
        c = self.c
        c.skip()
        pos = c.pos
        return c.match(SCALAR, "a literal value"), pos

    def _scalar_value(self, tok: str, pos: int, dt: DType) -> int | bool:
        """The element: a Python int/bool for int and pred dtypes, the bit pattern for floats."""
        c = self.c
        if dt.is_pred:
            if tok in ("true", "1"):
                return True
            if tok in ("false", "0"):
                return False
            raise c.error(f"bad literal: '{tok}' is not a pred value", pos)
        if dt.is_int:
            if not INT.fullmatch(tok):
                raise c.error(f"bad literal: '{tok}' is not an integer", pos)
            v = c.to_int(tok, pos)
            if not dt.min <= v <= dt.max:
                raise c.error(f"bad literal: {v} is out of range for {dt}", pos)
            return v
        if tok in ("true", "false"):
            raise c.error(f"bad literal: '{tok}' is not a {dt} value", pos)
        neg = tok.startswith("-")
        body = tok.lstrip("+-")
        exp_mask = ((1 << dt.exp_bits) - 1) << dt.man_bits
        sign = (1 << (dt.bits - 1)) if neg else 0
        if body.startswith("nan"):
            payload = int(body[6:-1], 16) if body != "nan" else 1 << (dt.man_bits - 1)
            if not 0 < payload < (1 << dt.man_bits):
                raise c.error(f"bad literal: NaN payload {body[4:-1]} does not fit {dt}", pos)
            return sign | exp_mask | payload
        with np.errstate(all="ignore"):
            f = np.array(float(tok), dtype=dt.np)
        return int(f.view(dt.uint_np))
