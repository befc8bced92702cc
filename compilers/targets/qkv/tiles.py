"""QKV's offer to the middle end's row blocks (:mod:`compilers.middle.rows`): the block height
and the largest extent its instructions take (the gemm unit is 64 x 64, a d1 / d2 row holds 64
bf16, softmax takes rows of 64)."""

from __future__ import annotations

from dataclasses import dataclass

from .description import ROW

__all__ = ["QkvTiles", "ROW_TILES"]


@dataclass(frozen=True)
class QkvTiles:
    """``row_block``: rows per block kernel; ``max_extent``: the largest dimension a block may have."""

    row_block: int
    max_extent: int


ROW_TILES = QkvTiles(row_block=ROW, max_extent=ROW)
