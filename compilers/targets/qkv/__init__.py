"""The QKV accelerator of the Act paper (seed 000 Fig. 3).

- :mod:`.description`: buffers d1/d2, the seven instructions, their contracts and costs, the sizes.
- :mod:`.encode`: the 64-bit instruction words the RTL (rtl_harness/qkv/hdl) decodes.

Backends: ``sim`` (the description's functional simulator) and ``rtl`` (the Verilated qkv_top).
"""

from __future__ import annotations

from .. import TargetPackage
from .description import D1_ROWS, D2_ROWS, HBM_SIZE, ROW, build

__all__ = ["PACKAGE", "HBM_SIZE", "D1_ROWS", "D2_ROWS", "ROW", "build"]

def _tiles() -> object:
    from .tiles import ROW_TILES

    return ROW_TILES


PACKAGE = TargetPackage("qkv", build, backends=("sim", "rtl"), tiles=_tiles)
