"""The ``rtl`` backend: compiled programs on the Verilated RTL, cycles measured.

:class:`RtlBackend` implements :class:`compilers.backend.Backend` for the targets with RTL:
``gemmini`` (rtl_harness/gemmini/hdl; the program is encoded to its RoCC command stream by
:func:`compilers.targets.gemmini.stream.encode`, sizes from the description) and ``qkv``
(rtl_harness/qkv/hdl; instruction words from :mod:`compilers.targets.qkv.encode`). AMX has none
(its hardware is the host CPU). It is unavailable, with the reason, where the Verilator toolchain
is missing (:func:`rtl_harness.verilate.available`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from compilers.backend import BackendUnavailable, RunResult
from compilers.isa import Accelerator
from compilers.program import Program, hbm_image, read_outputs

from . import verilate

__all__ = ["RTL_TARGETS", "RtlBackend", "build"]


def _run_gemmini(acc: Accelerator, program: Program, hbm: np.ndarray, dram_latency: int | None
                 ) -> tuple[np.ndarray, int]:
    from compilers.targets.gemmini.stream import encode

    from .gemmini.driver import DRAM_LATENCY, run_commands

    spad, accum = acc.buffers["spad"], acc.buffers["acc"]
    dim = spad.access[1]
    state, cycles = run_commands(encode(program, dim), hbm, dim=dim, sp_rows=spad.access[0],
                                 acc_rows=accum.access[0], latency=dram_latency or DRAM_LATENCY)
    return state.dram, cycles


def _run_qkv(acc: Accelerator, program: Program, hbm: np.ndarray, dram_latency: int | None
             ) -> tuple[np.ndarray, int]:
    from .qkv.driver import run_instructions

    out_hbm, _, _, cycles = run_instructions(program.instructions, hbm)
    return out_hbm, cycles


def build(target: str, cov: bool = False) -> float | None:
    """Build (or find in the build cache) the Verilated model the rtl backend runs ``target``'s
    programs on (``cov``: its coverage build), so that no program run pays for it; the seconds the
    build took here, None when it came from the cache. Raises BackendUnavailable for a target
    without RTL, the verilate errors where the toolchain is missing or the design is rejected."""
    from .gemmini import driver as gemmini
    from .qkv import driver as qkv

    if target == "gemmini":
        lib = gemmini.library(cov=cov)
    elif target == "qkv":
        lib = qkv.build(cov=cov)
    else:
        raise BackendUnavailable(f"target '{target}' has no RTL (RTL exists for {', '.join(RTL_TARGETS)})")
    return verilate.last_build_seconds(lib)


#: per target with RTL: run a program from HBM bytes to (final HBM bytes, measured cycles);
#: ``dram_latency`` is Gemmini's DRAM read latency (default :data:`rtl_harness.gemmini.DRAM_LATENCY`)
_RUNNERS = {"gemmini": _run_gemmini, "qkv": _run_qkv}
RTL_TARGETS = tuple(_RUNNERS)


@dataclass
class RtlBackend:
    """Programs of ``acc`` on its Verilated RTL, cycles measured (instruction accept to done)."""

    acc: Accelerator
    dram_latency: int | None = None
    name: ClassVar[str] = "rtl"
    title: ClassVar[str] = "RTL"
    targets: ClassVar[tuple[str, ...]] = RTL_TARGETS
    nan_bits: ClassVar[bool] = True     # the designs' NaN results follow the reference's rules (docs/rtl*.md)

    @classmethod
    def unavailable(cls) -> str | None:
        return verilate.available()

    @classmethod
    def for_target(cls, acc: Accelerator, dram_latency: int | None = None) -> RtlBackend:
        """The backend for ``acc`` (``dram_latency``: Gemmini's testbench DRAM read latency);
        raises :class:`BackendUnavailable` for a target without RTL or without the toolchain."""
        if acc.name not in cls.targets:
            raise BackendUnavailable(f"target '{acc.name}' has no RTL (RTL exists for {', '.join(cls.targets)})")
        why = cls.unavailable()
        if why is not None:
            raise BackendUnavailable(f"the rtl backend is unavailable: {why}")
        return cls(acc, dram_latency)

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        if program.target != self.acc.name:
            raise BackendUnavailable(f"program is for target '{program.target}', not '{self.acc.name}'")
        hbm = hbm_image(program, inputs, self.acc.hbm_size)
        out_hbm, cycles = _RUNNERS[self.acc.name](self.acc, program, hbm, self.dram_latency)
        outs = read_outputs(program, out_hbm)
        return RunResult(outs, cycles, [f"{len(program.instructions)} instructions, {cycles} RTL cycles"])
