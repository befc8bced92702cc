"""Typed errors of the whole project, each carrying the place it is about.

Every error a user can cause (bad HLO text, a malformed graph, bad inputs) is an
:class:`AccvError` whose ``str()`` is one line naming the place (``file:line:col``, an instruction
name, a rule name) and the reason. The CLI prints that line and exits with the error's
``exit_code`` (documented in README.md).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AccvError",
    "SourceLoc",
    "HloSyntaxError",
    "GraphError",
    "EvalError",
    "InputError",
    "SmtError",
]


@dataclass(frozen=True)
class SourceLoc:
    """A position in a source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class AccvError(Exception):
    """Base of every error raised for bad input; ``str(e)`` is a single line."""

    exit_code = 2

    def __init__(self, reason: str, loc: SourceLoc | None = None, where: str | None = None) -> None:
        self.reason = reason
        self.loc = loc
        self.where = where
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(str(self.loc))
        if self.where:
            parts.append(self.where)
        prefix = ": ".join(parts)
        line = f"{prefix}: {self.reason}" if prefix else self.reason
        return " ".join(line.split("\n"))


class HloSyntaxError(AccvError):
    """The HLO text does not follow the grammar (truncated file, bad token, bad layout, ...)."""


class GraphError(AccvError):
    """A graph breaks a construction rule: wrong arity, shape or dtype mismatch, undefined name, ..."""


class InputError(AccvError):
    """Inputs given to an evaluation do not match the graph's parameters."""


class EvalError(AccvError):
    """Evaluation failed for a reason the graph could not rule out at construction."""

    exit_code = 1


class SmtError(AccvError):
    """An operator or dtype has no SMT encoding."""
