"""Intel AMX (tiles, TMUL) plus the AVX-512 subset of the oneDNN kernels of the Act paper.

- :mod:`.description`: tiles and zmm registers, the instructions, their contracts and costs.
- :mod:`.emit_c`: the C translation unit (``<immintrin.h>`` intrinsics) of a program, the artifact
  ``accv compile`` writes beside the assembly; native runs compile and execute it on an AMX host.

- :mod:`.tiles`: the middle end's int8 GEMM blocks, capacities and micro-kernels (``PACKAGE.tiles``).
- :mod:`.cbuild`, :mod:`.backends`, ``emulation.h``: the C built with gcc, cached by content hash
  under build/amx, and run on an HBM image, against our emulation header (``emulated``, any host)
  or for Sapphire Rapids (``native``, a host with AMX); docs/amx.md.

Backends: ``sim`` (the description's functional simulator), ``emulated``, ``native``.
"""

from __future__ import annotations

from ...isa import Accelerator
from ...program import Program
from .. import TargetPackage
from .description import HBM_SIZE, TILE_BYTES, TILE_ROWS, TILES, ZMMS, build
from . import emit_c as _emit_c

__all__ = ["PACKAGE", "HBM_SIZE", "TILES", "TILE_ROWS", "TILE_BYTES", "ZMMS", "build", "artifacts"]


def artifacts(program: Program, acc: Accelerator, stem: str) -> dict[str, str]:
    """The emitted C unit (``.c``), its function named after ``stem``."""
    return {".c": _emit_c.emit_c(program, acc, name=stem)}


def _tiles() -> object:
    from .tiles import GEMM_TILES

    return GEMM_TILES


PACKAGE = TargetPackage("amx", build, backends=("sim", "emulated", "native"), artifacts=artifacts, tiles=_tiles)
