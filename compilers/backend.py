"""Backends that run a compiled :class:`~compilers.program.Program` on inputs and return its outputs
(design.md: ``Backend.run(program, inputs) -> RunResult``).

- ``sim``: the functional simulator derived from the ISA description (always available).
- ``rtl``: the Verilated SystemVerilog accelerator of ``rtl_harness`` (gemmini, qkv), with cycles
  measured on the RTL; available when the Verilator toolchain is installed.

Backends are looked up by name with :func:`get_backend`; the RTL one is imported lazily so the
compiler never depends on the RTL harness (data flows compiler -> program -> backend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from semantics.errors import AccvError

from .isa import Accelerator
from .program import Program
from .simulator import simulate

__all__ = ["BACKENDS", "Backend", "BackendUnavailable", "RunResult", "SimBackend", "get_backend"]

BACKENDS = ("sim", "rtl")


class BackendUnavailable(AccvError):
    """The backend cannot run this target here (the reason says why: no RTL, no toolchain)."""

    exit_code = 3


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    cycles: int | None
    log: list[str] = field(default_factory=list)


class Backend(Protocol):
    name: str

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult: ...


@dataclass
class SimBackend:
    """The description-derived functional simulator; cycles are the description's cost model."""

    acc: Accelerator
    name: str = "sim"

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        r = simulate(self.acc, program, inputs)
        return RunResult(r.outputs, r.cycles, [f"{r.executed} instructions, {r.hbm_bytes} HBM bytes"])


def get_backend(name: str, acc: Accelerator) -> Backend:
    """The backend ``name`` for target ``acc``; raises BackendUnavailable with the reason."""
    if name == "sim":
        return SimBackend(acc)
    if name == "rtl":
        from rtl_harness.runner import RtlBackend

        return RtlBackend.for_target(acc)
    raise BackendUnavailable(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})")
