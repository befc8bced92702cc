"""Gemmini (ucb-bar/gemmini), a DIM x DIM int8 systolic array.

- :mod:`.description`: the compiler-level instructions (mvin, mvout, preload, matmul, ...), their
  exact numeric contracts and costs, and the hardware sizes (DIM, scratchpad / accumulator rows,
  HBM bytes) every other part reads.
- :mod:`.stream`: the machine level: RoCC command words (CONFIG, MVIN, MVOUT, PRELOAD, COMPUTE,
  ...), their decoder and printer, the command-stream model :class:`~.stream.StreamMachine`, and
  the encoder from compiler-level programs to command streams.
- :mod:`.backend`: the ``stream`` backend (a program's encoding run on the command-stream model).
- :mod:`.programs`: generated programs for tests and benchmarks (a tiled GEMM).
- :mod:`.tiles`: the middle end's blocks, capacities and micro-kernels (``PACKAGE.tiles``).

Backends: ``sim`` (the description's functional simulator), ``stream`` and ``rtl`` (the
Verilated gemmini_top of rtl_harness/gemmini/hdl). ``accv compile`` writes the command words
(``.stream``) beside the assembly.
"""

from __future__ import annotations

from ...isa import Accelerator
from ...program import Program
from .. import TargetPackage
from .description import (ACC_ROWS, ARRAY_BITS, DIM, HBM_SIZE, ONE, SCALES, SPAD_ROWS, WS_MATMULS, bits_f32, build,
                          f32_bits)
from .programs import bench_program, gemm_program
from .stream import encode, format_command

__all__ = ["PACKAGE", "DIM", "SPAD_ROWS", "ACC_ROWS", "HBM_SIZE", "ARRAY_BITS", "ONE", "SCALES", "WS_MATMULS",
           "bits_f32", "build", "f32_bits", "bench_program", "gemm_program", "artifacts"]


def artifacts(program: Program, acc: Accelerator, stem: str) -> dict[str, str]:
    """The program's RoCC command words (``.stream``), one printed command per line."""
    return {".stream": "".join(format_command(c) + "\n" for c in encode(program, acc.buffers["spad"].access[1]))}


def _tiles() -> object:
    from .tiles import TILES

    return TILES


PACKAGE = TargetPackage("gemmini", build, backends=("sim", "stream", "rtl"), artifacts=artifacts, tiles=_tiles)
