"""The compiler's two exceptions, in a module of their own so that every phase can raise them
without importing the driver (which imports the phases)."""

from __future__ import annotations

from semantics.errors import AccvError

__all__ = ["Unsupported", "CompileError"]


class Unsupported(AccvError):
    """The target cannot run this kernel (one line: why); the CLI exits 3."""

    exit_code = 3


class CompileError(AccvError):
    """The compiler produced a wrong program or failed internally (a bug); the CLI exits 1."""

    exit_code = 1
