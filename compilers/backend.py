"""The backend interface: what runs a compiled :class:`~compilers.program.Program` on inputs and
returns its outputs (design.md: ``Backend.run(program, inputs) -> RunResult``).

What belongs here is the interface alone, so every layer can implement it: :class:`Backend` (an
object that runs programs of one target), :class:`BackendKind` (a backend class as the registry
holds it: its name, the targets it runs, why it cannot run here, and how to make one for a
target), :class:`RunResult` and :class:`BackendUnavailable`. The backends live beside what they
run: ``sim`` in :mod:`compilers.simulator`, ``stream`` in :mod:`compilers.targets.gemmini.backend`,
``emulated`` / ``native`` in :mod:`compilers.targets.amx.backends`, ``rtl`` in
:mod:`rtl_harness.runner`; the registry that maps (target, backend name) to one is
:mod:`check.backends`, above both ``compilers`` and ``rtl_harness``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from semantics.errors import AccvError

from .isa import Accelerator
from .program import Program

__all__ = ["Backend", "BackendKind", "BackendUnavailable", "RunResult", "StepRun"]


class BackendUnavailable(AccvError):
    """The backend cannot run this target here (the reason says why: no such backend for the
    target, no toolchain)."""

    exit_code = 3


@dataclass
class StepRun:
    """One step of a partitioned program's run: its index and kind, the cycles of an accelerator
    step (None where the backend has no notion of time) and the seconds of a host step."""

    index: int
    kind: str
    cycles: int | None = None
    seconds: float = 0.0


@dataclass
class RunResult:
    """A program's outputs (in index order), the cycles it took where the backend measures or
    estimates them (``None`` where it has no notion of time; for a partitioned program the sum
    over its accelerator steps), a few log lines and, for a partitioned program, each step's run
    (host work separately from the accelerator's cycles)."""

    outputs: list[np.ndarray]
    cycles: int | None
    log: list[str] = field(default_factory=list)
    steps: list[StepRun] = field(default_factory=list)


class Backend(Protocol):
    """Runs programs of one target: ``run`` places ``inputs`` (one per ``.input`` placement, in
    index order) and the constants, executes the program and reads the outputs back."""

    name: str

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult: ...


class BackendKind(Protocol):
    """A backend class as :mod:`check.backends` registers it."""

    #: the name users select it by (``accv check --backend NAME``)
    name: str
    #: what it is, in a sentence's words ("simulator", "RTL")
    title: str
    #: the targets whose programs it runs
    targets: tuple[str, ...]
    #: what it observes: whether a NaN it outputs carries the payload and sign the reference
    #: models (the comparison rule, :mod:`check.policy`, compares NaN bits only where it does)
    nan_bits: bool

    def unavailable(self) -> str | None:
        """Why it cannot run on this host (a missing toolchain), or None when it can."""
        ...

    def for_target(self, acc: Accelerator, /) -> Backend:
        """A backend for programs of ``acc`` (raises :class:`BackendUnavailable` with the reason)."""
        ...
