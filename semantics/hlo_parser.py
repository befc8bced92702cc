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
Tokens come from :mod:`semantics.hlo_lexer`, types, literals and attribute values from
:mod:`semantics.hlo_values`; this module reads the module structure (header, tables,
computations, instructions).
``call``, ``fusion``, ``conditional`` and ``while`` are inlined by :mod:`semantics.hlo_inline`
(which also drops dead instructions). Every syntax
problem raises :class:`HloSyntaxError` with ``file:line:col``; rule violations (unknown opcode,
arity, shapes, undefined names) come from :class:`~semantics.graph.GraphBuilder` as
:class:`GraphError` carrying the instruction's location. No other exception escapes
:func:`parse_hlo`.
"""

from __future__ import annotations

from pathlib import Path

from .errors import AccvError, GraphError, HloSyntaxError, SourceLoc
from .hlo_inline import CONTROL_OPS, RawComputation, RawInstr, build_graph
from .hlo_values import CALLS, ValueParser
from .ir import Graph
from .ops import REGISTRY
from .types import TensorType

__all__ = ["parse_hlo", "parse_file", "IGNORED_ATTRS"]

#: Attributes XLA prints that carry no semantics here: their value is read and dropped (unless the
#: operator declares one of them, as rng-bit-generator does ``algorithm``).
IGNORED_ATTRS = frozenset({"metadata", "sharding", "backend_config", "frontend_attributes",
                           "operand_precision", "algorithm", "statistics", "precision_config",
                           "result_accuracy", "control-predecessors", "origin", "schedule",
                           "output_to_operand_aliasing", "indices_are_sorted", "unique_indices"})
#: The tables jaxlib prints between the HloModule line and the first computation.
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})


class _Parser(ValueParser):
    """Recursive-descent parser of the module structure (computations, instructions), on the value
    readers of :class:`~semantics.hlo_values.ValueParser`; hands the raw computations to
    :func:`~semantics.hlo_inline.build_graph`."""

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
            if (aname in IGNORED_ATTRS and not (op and op.attr_spec(aname))) or (control and aname not in CALLS and aname != "branch_computations"):
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
