"""Parser of XLA HLO text (as XLA prints it) into an immutable :class:`~semantics.ir.Graph`.

Grammar accepted (whitespace free, ``//`` and ``/* */`` comments ignored)::

    module      := 'HloModule' name (',' hattr)* table* computation*
    hattr       := 'entry_computation_layout' '=' '{' '(' types ')' '->' type '}' | name '=' value
    table       := ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') (int value)*
    computation := ['ENTRY'] ['%']name [signature] '{' instruction* '}'
    signature   := '(' [name ':' type (',' name ':' type)*] ')' '->' type
    instruction := ['ROOT'] ['%']name '=' type opcode '(' operands ')' (',' name '=' value)*
    operand     := [type] ['%']name          (older XLA prints the operand's type first)
    type        := dtype '[' dims ']' [layout] | '(' [type (',' type)*] ')'
    layout      := '{' [ints] [':' ['T' '(' ints ')'] ['S' '(' int ')']] '}'

``parameter(i)`` becomes attribute ``index=i`` and ``constant(lit)`` attribute ``literal``
(a :class:`~semantics.ir.Literal` read per the declared dtype and shape). Attribute values are
read by the operator's :class:`~semantics.ops.AttrSpec` kind, else by their name and syntax;
XLA annotations (``metadata``, ``sharding``, ``backend_config``, ...), the stack-frame tables
jaxlib prints after the header and a layout's memory space ``S(n)`` are read and dropped.
``call``, ``fusion``, ``conditional`` and ``while`` are inlined by :mod:`semantics.hlo_inline`
(which also drops dead instructions). Every syntax
problem raises :class:`HloSyntaxError` with ``file:line:col``; rule violations (unknown opcode,
arity, shapes, undefined names) come from :class:`~semantics.graph.GraphBuilder` as
:class:`GraphError` carrying the instruction's location. No other exception escapes
:func:`parse_hlo`.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any

import numpy as np

from .dtypes import DTYPES, DType
from .errors import AccvError, GraphError, HloSyntaxError, SourceLoc
from .hlo_inline import CONTROL_OPS, RawComputation, RawInstr, build_graph
from .ir import Graph, Literal
from .layout import check_layout
from .ops import REGISTRY
from .types import Layout, TensorType, TupleType, Type

__all__ = ["parse_hlo", "parse_file", "IGNORED_ATTRS"]

#: Attributes XLA prints that carry no semantics here: their value is read and dropped (unless the
#: operator declares one of them, as rng-bit-generator does ``algorithm``).
IGNORED_ATTRS = frozenset({"metadata", "sharding", "backend_config", "frontend_attributes",
                           "operand_precision", "algorithm", "statistics", "precision_config",
                           "result_accuracy", "control-predecessors", "origin", "schedule",
                           "output_to_operand_aliasing", "indices_are_sorted", "unique_indices"})
#: The tables jaxlib prints between the HloModule line and the first computation.
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
#: Attributes of the control operators that name computations.
_CALLS = {"to_apply", "calls", "condition", "body", "true_computation", "false_computation"}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_INT = re.compile(r"[-+]?[0-9]+")
_UINT = re.compile(r"[0-9]+")
_SCALAR = re.compile(r"[-+]?(?:inf|nan(?:\(0x[0-9a-fA-F]+\))?"
                     r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)|true|false")
_PADDING = re.compile(r"[-0-9_x]+")
_MAX_NESTING = 64
_MAX_DIGITS = 100


class _Cursor:
    """The text, a position in it, and the helpers that read tokens at that position."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.file = filename
        self.pos = 0
        self.n = len(text)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def loc(self, pos: int | None = None) -> SourceLoc:
        p = self.pos if pos is None else pos
        line = bisect.bisect_right(self._line_starts, p)
        return SourceLoc(self.file, line, p - self._line_starts[line - 1] + 1)

    def error(self, reason: str, pos: int | None = None) -> HloSyntaxError:
        return HloSyntaxError(reason, self.loc(pos))

    def skip(self) -> None:
        """Move past whitespace and comments."""
        t, n = self.text, self.n
        if self.pos < n:            # most calls find a token already: nothing to skip
            c = t[self.pos]
            if c != "/" and not c.isspace():
                return
        while self.pos < n:
            c = t[self.pos]
            if c.isspace():
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unexpected end of file inside a /* comment", self.n)
                self.pos = end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < self.n else ""

    def at(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def describe(self) -> str:
        """The token at the position, for error messages."""
        if self.pos >= self.n:
            return "end of file"
        m = _IDENT.match(self.text, self.pos) or _INT.match(self.text, self.pos)
        tok = m.group(0) if m else self.text[self.pos]
        return repr(tok[:20])

    def expect(self, s: str) -> None:
        if not self.accept(s):
            if self.pos >= self.n:
                raise self.error(f"unexpected end of file, expected '{s}'")
            raise self.error(f"expected '{s}', got {self.describe()}")

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if not m:
            if self.pos >= self.n:
                raise self.error(f"unexpected end of file, expected {what}")
            raise self.error(f"expected {what}, got {self.describe()}")
        self.pos = m.end()
        return m.group(0)

    def ident(self, what: str = "a name") -> str:
        return self.match(_IDENT, what)

    def name(self, what: str = "a name") -> str:
        """An instruction or computation name, with or without its '%'."""
        self.skip()
        if self.text.startswith("%", self.pos):
            self.pos += 1
        return self.ident(what)

    def integer(self, what: str = "an integer") -> int:
        self.skip()
        start = self.pos
        return self.to_int(self.match(_INT, what), start)

    def to_int(self, tok: str, pos: int) -> int:
        if len(tok) > _MAX_DIGITS:
            raise self.error(f"integer with more than {_MAX_DIGITS} digits", pos)
        return int(tok)

    def ident_ahead(self) -> tuple[str, int] | None:
        """The identifier at the position and the index just after it, without moving."""
        self.skip()
        m = _IDENT.match(self.text, self.pos)
        return (m.group(0), m.end()) if m else None


class _Parser:
    """Recursive-descent parser driving a :class:`GraphBuilder`."""

    def __init__(self, text: str, filename: str) -> None:
        self.c = _Cursor(text, filename)

    # -- types --------------------------------------------------------------------------------

    def type(self, depth: int = 0) -> Type:
        c = self.c
        if depth > _MAX_NESTING:
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
                dims.append(c.to_int(c.match(_UINT, "a dimension size"), dpos))
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
        raw = c.match(_PADDING, "a padding like 0_0x1_1")
        out: list[tuple[int, int, int]] = []
        for dim in raw.split("x"):
            parts = dim.split("_")
            if len(parts) not in (2, 3) or not all(_INT.fullmatch(p) for p in parts):
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
            elif name in _CALLS:
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
        return c.match(_SCALAR, "a literal value"), pos

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
            if not _INT.fullmatch(tok):
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

    # -- module structure ---------------------------------------------------------------------

    def module(self) -> Graph:
        c = self.c
        c.skip()
        head = c.ident_ahead()
        if head is None or head[0] != "HloModule":
            raise c.error(f"expected 'HloModule', got {c.describe()}")
        c.ident()
        module = c.name("a module name")
        while c.accept(","):
            attr = c.ident("a module attribute")
            c.expect("=")
            if attr == "entry_computation_layout":
                c.expect("{")
                self.type()
                c.expect("->")
                self.type()
                c.expect("}")
            else:
                self.skip_value()
        self.tables()
        comps: list[RawComputation] = []
        entry: str | None = None
        while c.peek() != "":
            comp, is_entry = self.computation()
            if is_entry:
                if entry is not None:
                    raise GraphError(f"two ENTRY computations: '{entry}' and '{comp.name}'", comp.loc)
                entry = comp.name
            comps.append(comp)
        return build_graph(module, comps, entry)

    def tables(self) -> None:
        """Skip jaxlib's FileNames/FunctionNames/FileLocations/StackFrames tables (rows ``N value``)."""
        c = self.c
        while True:
            ahead = c.ident_ahead()
            if ahead is None or ahead[0] not in _TABLES:
                return
            c.pos = ahead[1]
            while c.peek().isdigit():
                c.integer()
                self.skip_value()

    def computation(self) -> tuple[RawComputation, bool]:
        c = self.c
        c.skip()
        entry = False
        ahead = c.ident_ahead()
        if ahead is not None and ahead[0] == "ENTRY":
            entry = True
            c.pos = ahead[1]
        c.skip()
        loc = c.loc()
        name = c.name("a computation name")
        if c.accept("("):
            if not c.accept(")"):
                while True:
                    c.name("a parameter name")
                    c.expect(":")
                    self.type()
                    if c.accept(")"):
                        break
                    c.expect(",")
            c.expect("->")
            self.type()
        if c.peek() == ",":      # execution_thread=..., and other computation attributes
            while c.accept(","):
                c.ident("a computation attribute")
                c.expect("=")
                self.skip_value()
        c.expect("{")
        comp = RawComputation(name, loc)
        seen_root: str | None = None
        while not c.accept("}"):
            if c.pos >= c.n:
                raise c.error("unexpected end of file, expected '}'")
            start = c.pos
            ins = self.instruction()
            comp.instrs.append(ins)
            if ins.root:
                if seen_root is not None:
                    raise c.error(f"second ROOT '{ins.name}' in computation '{name}' (first '{seen_root}')",
                                  start)
                seen_root = ins.name
        if not comp.instrs:
            raise GraphError(f"computation '{name}' is empty", loc)
        return comp, entry

    def instruction(self) -> RawInstr:
        """Parse one instruction."""
        c = self.c
        c.skip()
        root = False
        ahead = c.ident_ahead()
        if ahead is not None and ahead[0] == "ROOT":
            after = ahead[1]
            c.pos = after
            if c.peek() == "=":  # an instruction that is called ROOT
                c.pos = after - 4
            else:
                root = True
        c.skip()
        loc = c.loc()
        name = c.name("an instruction name")
        c.expect("=")
        declared = self.type()
        opcode = c.ident("an opcode")
        operands: list[str] = []
        attrs: dict[str, Any] = {}
        c.expect("(")
        if opcode == "parameter":
            attrs["index"] = c.integer("a parameter number")
            c.expect(")")
        elif opcode == "constant":
            if not isinstance(declared, TensorType):
                raise c.error("tuple constants are not supported")
            attrs["literal"] = self.literal(declared)
            c.expect(")")
        elif not c.accept(")"):
            while True:
                operands.append(self.operand())
                if c.accept(")"):
                    break
                c.expect(",")
        control = opcode in CONTROL_OPS
        while c.accept(","):
            apos = c.pos
            aname = c.ident("an attribute name")
            c.expect("=")
            value = self.attr_value(opcode, aname)
            op = REGISTRY.get(opcode)
            if (aname in IGNORED_ATTRS and not (op and op.attr_spec(aname))) or (control and aname not in _CALLS and aname != "branch_computations"):
                continue
            if aname in attrs:
                raise c.error(f"attribute '{aname}' given twice", apos)
            attrs[aname] = value
        return RawInstr(name, opcode, operands, attrs, declared, loc, root)

    def operand(self) -> str:
        c = self.c
        c.skip()
        ahead = c.ident_ahead()
        if c.peek() == "(" or (ahead is not None and c.text.startswith("[", ahead[1])):
            self.type()  # older XLA prints the operand's type before its name: read and drop it
        return c.name("an operand name")


def parse_hlo(text: str, filename: str = "<string>") -> Graph:
    """Parse HLO module text into a validated :class:`Graph`.

    Raises:
        HloSyntaxError: the text does not follow the grammar (message: ``file:line:col: reason``).
        GraphError: the module breaks a construction rule (unknown opcode, arity, types, names).
    """
    p = _Parser(text, filename)
    try:
        return p.module()
    except AccvError:
        raise
    except RecursionError:
        raise p.c.error("input nested too deeply") from None
    except Exception as e:  # never let an unexpected exception type escape
        raise p.c.error(f"internal parser error: {type(e).__name__}: {e}") from e


def parse_file(path: str | Path) -> Graph:
    """Parse the HLO file at ``path`` (errors name the file). OSError propagates unchanged."""
    p = Path(path)
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        prefix = raw[: e.start]
        line = prefix.count(b"\n") + 1
        col = e.start - (prefix.rfind(b"\n") + 1) + 1
        raise HloSyntaxError("file is not valid UTF-8", SourceLoc(str(path), line, col)) from None
    return parse_hlo(text, str(path))
