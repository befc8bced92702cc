"""The program runner for the rest of the project: compiled programs on the Verilated RTL.

- :func:`run_program` ``(target, program, hbm_image) -> (final memories, cycles)``: the program's
  instructions on the RTL of ``target`` (gemmini: encoded to the RoCC command stream first), HBM
  loaded with ``hbm_image``; the final memories are the HBM bytes and every on-chip buffer.
- :class:`RtlBackend`: the ``rtl`` backend of :mod:`compilers.backend` (inputs in, outputs and
  measured cycles out), used by ``accv check --backend rtl``.

Which targets have RTL: ``gemmini`` (rtl_harness/rtl/gemmini, DIM 16) and ``qkv``
(rtl_harness/rtl/qkv). AMX has none (its hardware is the host CPU: the ``native`` runs of
tests/compilers/test_amx_native.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compilers.backend import BackendUnavailable, RunResult
from compilers.isa import Accelerator
from compilers.program import Program, hbm_image, read_outputs

from . import verilate

__all__ = ["RTL_TARGETS", "RtlBackend", "rtl_cost", "run_program"]

RTL_TARGETS = ("gemmini", "qkv")


def _need(target: str) -> None:
    if target not in RTL_TARGETS:
        raise BackendUnavailable(f"target '{target}' has no RTL (RTL exists for {', '.join(RTL_TARGETS)})")
    why = verilate.available()
    if why is not None:
        raise BackendUnavailable(f"the rtl backend is unavailable: {why}")


def run_program(target: str, program: Program, hbm: np.ndarray, dram_latency: int | None = None
                ) -> tuple[dict[str, np.ndarray], int]:
    """Run ``program`` on the RTL of ``target`` from HBM bytes ``hbm``; return every final memory
    (``d0`` = HBM, then the target's on-chip buffers) and the measured cycle count.
    ``dram_latency``: cycles from a DRAM read request to its data (gemmini's testbench; default
    :data:`rtl_harness.gemmini.DRAM_LATENCY`)."""
    _need(target)
    if program.target != target:
        raise BackendUnavailable(f"program is for target '{program.target}', not '{target}'")
    if target == "gemmini":
        from compilers.gemmini_stream import encode

        from .gemmini import DRAM_LATENCY, run_commands

        state, cycles = run_commands(encode(program), hbm, latency=dram_latency or DRAM_LATENCY)
        return {"d0": state.dram, "spad": state.spad, "acc": state.acc}, cycles
    from .qkv import run_instructions

    out_hbm, d1, d2, cycles = run_instructions(program.instructions, hbm)
    return {"d0": out_hbm, "d1": d1, "d2": d2}, cycles


@dataclass
class RtlBackend:
    """The ``rtl`` backend: programs of ``acc`` run on its Verilated RTL, cycles measured."""

    acc: Accelerator
    name: str = "rtl"
    dram_latency: int | None = None

    @classmethod
    def for_target(cls, acc: Accelerator, dram_latency: int | None = None) -> RtlBackend:
        _need(acc.name)
        return cls(acc, dram_latency=dram_latency)

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        hbm = hbm_image(program, inputs, self.acc.hbm_size)
        mem, cycles = run_program(self.acc.name, program, hbm, self.dram_latency)
        outs = read_outputs(program, mem["d0"])
        return RunResult(outs, cycles, [f"{len(program.instructions)} instructions, {cycles} RTL cycles"])


def rtl_cost(acc: Accelerator, inputs: Sequence[np.ndarray], dram_latency: int | None = None):  # noqa: ANN201
    """A cost model for the compiler's candidate selection (``compile_graph(cost=...)``): the RTL
    cycles of a candidate program on ``inputs`` (the designs' timing does not depend on the data)."""
    backend = RtlBackend.for_target(acc, dram_latency=dram_latency)

    def cost(program: Program) -> float:
        cycles = backend.run(program, inputs).cycles
        assert cycles is not None
        return float(cycles)

    return cost
