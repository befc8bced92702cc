"""Lexer of XLA HLO text: the token patterns and :class:`Cursor`, a position in the text with the
helpers that skip whitespace and comments and read tokens there, raising
:class:`~semantics.errors.HloSyntaxError` with ``file:line:col`` (used by
:mod:`semantics.hlo_values` and :mod:`semantics.hlo_parser`)."""

from __future__ import annotations

import bisect
import re

from .errors import HloSyntaxError, SourceLoc

__all__ = ["Cursor", "IDENT", "INT", "UINT", "SCALAR", "PADDING", "MAX_NESTING", "MAX_DIGITS"]

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
INT = re.compile(r"[-+]?[0-9]+")
UINT = re.compile(r"[0-9]+")
SCALAR = re.compile(r"[-+]?(?:inf|nan(?:\(0x[0-9a-fA-F]+\))?"
                     r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)|true|false")
PADDING = re.compile(r"[-0-9_x]+")
MAX_NESTING = 64
MAX_DIGITS = 100


class Cursor:
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
        m = IDENT.match(self.text, self.pos) or INT.match(self.text, self.pos)
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
        return self.match(IDENT, what)

    def name(self, what: str = "a name") -> str:
        """An instruction or computation name, with or without its '%'."""
        self.skip()
        if self.text.startswith("%", self.pos):
            self.pos += 1
        return self.ident(what)

    def integer(self, what: str = "an integer") -> int:
        self.skip()
        start = self.pos
        return self.to_int(self.match(INT, what), start)

    def to_int(self, tok: str, pos: int) -> int:
        if len(tok) > MAX_DIGITS:
            raise self.error(f"integer with more than {MAX_DIGITS} digits", pos)
        return int(tok)

    def ident_ahead(self) -> tuple[str, int] | None:
        """The identifier at the position and the index just after it, without moving."""
        self.skip()
        m = IDENT.match(self.text, self.pos)
        return (m.group(0), m.end()) if m else None
