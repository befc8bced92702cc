"""QKV's offer to the middle end: its fixed block of :data:`ROW_BLOCK` rows (the gemm unit's
64 x 64 operands, d2's 64 rows that softmax reads). Kernels with more rows are computed block by
block where they decompose exactly (:mod:`compilers.middle.rows`); nothing else is tiled."""

from __future__ import annotations

from dataclasses import dataclass

from .description import D2_ROWS

__all__ = ["ROW_BLOCK", "RowBlocks", "TILES"]

ROW_BLOCK = D2_ROWS     # rows one gemm (64 x 64) and one softmax (at most d2's 64 rows) compute


@dataclass(frozen=True)
class RowBlocks:
    """``row_block``: the rows of the block the middle end cuts a kernel into."""

    row_block: int


TILES = RowBlocks(ROW_BLOCK)
