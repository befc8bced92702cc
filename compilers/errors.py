"""The compiler's two exceptions and the structured reason a target cannot run a kernel.

What belongs here: :class:`Unsupported` (exit 3: valid input the target cannot run), its
:class:`Reason` (the one-line text and, where the reason is an operator no instruction computes,
that operator and its type as fields), and :class:`CompileError` (a bug: the compiler produced a
wrong program or failed inside). They sit in a module of their own so that every phase, the
middle end and :mod:`compilers.compile` raise them without importing one another.

The text "no instruction computes OP on TYPE" is written here only (:meth:`Reason.no_instruction`);
whoever needs the operator (campaign coverage, the report's "unsupported" table, benchmarks) reads
``Unsupported.op`` / ``Unsupported.type``, never the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from semantics.errors import AccvError

__all__ = ["CompileError", "Reason", "Unsupported"]


@dataclass(frozen=True)
class Reason:
    """Why a target cannot run a kernel: ``text`` (one line) and, when an operator has no
    instruction, ``op`` (its opcode) and ``type`` (its result type, e.g. ``s32[16, 6]``)."""

    text: str
    op: str | None = None
    type: str | None = None

    @classmethod
    def no_instruction(cls, op: str, dtype: str, shape: Sequence[int], *, into: str | None = None,
                       needed_by: int | None = None) -> Reason:
        """"no instruction computes OP on TYPE": ``into``, the buffer the value was needed in;
        ``needed_by``, the output index that needs it (the tiling search's wording)."""
        ty = f"{dtype}{list(shape)}"
        text = f"no instruction computes {op} on {ty}"
        if into is not None:
            text += f" (into {into})"
        if needed_by is not None:
            text += f", which output {needed_by} needs (nor any form of it the proven rewrites give)"
        return cls(text, op, ty)

    def __str__(self) -> str:
        return self.text


class Unsupported(AccvError):
    """The target cannot run this kernel (one line: why); the CLI exits 3.

    ``op`` / ``type``: the operator no instruction computes and its type, where that is the
    reason (else None); ``skipped``: rule instantiations the proof gate refused during the
    compile (no passing proof), which a user may want to prove."""

    exit_code = 3

    def __init__(self, reason: str | Reason, *, skipped: Sequence[str] = ()) -> None:
        r = reason if isinstance(reason, Reason) else Reason(str(reason))
        self.op: str | None = r.op
        self.type: str | None = r.type
        self.skipped: tuple[str, ...] = tuple(skipped)
        super().__init__(r.text)

    @property
    def why(self) -> Reason:
        """The reason as a record."""
        return Reason(self.reason, self.op, self.type)


class CompileError(AccvError):
    """The compiler produced a wrong program or failed internally (a bug); the CLI exits 1."""

    exit_code = 1
