"""Generated Gemmini programs for tests and benchmarks: a tiled weight-stationary GEMM and the
1,000-instruction benchmark program built from it."""

from __future__ import annotations

from semantics.dtypes import DTYPES
from semantics.types import TensorType

from ...program import Concrete, Placement, Program
from .description import ACC_ROWS, DIM, ONE, SPAD_ROWS

__all__ = ["gemm_program", "bench_program"]


def gemm_program(m: int, k: int, n: int, dim: int = DIM, raw_tiles: int = 0) -> Program:
    """A tiled weight-stationary GEMM ``C = sat8(A x B)`` (A s8[m,k], B s8[k,n], C s8[m,n], all
    multiples of ``dim``): A and B tiles moved into the scratchpad, for each (output column block,
    k block) one preload_ws and m/dim matmuls accumulating in the accumulator, then one scaled
    mvout per C tile; ``raw_tiles`` extra mvout_acc_raw copy the first C tiles as int32 to a
    scratch area after C. Instruction count: mk/D^2 + kn/D^2 + (kn/D^2)(1 + m/D) + mn/D^2 + raw_tiles."""
    D = dim
    mi, kk, nj = m // D, k // D, n // D
    if mi * D != m or kk * D != k or nj * D != n:
        raise ValueError("gemm_program: m, k, n must be multiples of dim")
    if mi * nj * D > ACC_ROWS or (mi * kk + kk * nj) * D > SPAD_ROWS:
        raise ValueError("gemm_program: the tiles do not fit the scratchpad / accumulator")
    a_at, b_at = 64, 64 + m * k
    c_at = b_at + k * n
    raw_at = c_at + m * n
    out: list[Concrete] = []

    def ins(name: str, **attrs: int) -> None:
        out.append(Concrete(name, tuple(attrs.items())))

    def a_sp(i: int, q: int) -> int:
        return (i * kk + q) * D

    def b_sp(q: int, j: int) -> int:
        return (mi * kk + q * nj + j) * D

    for i in range(mi):
        for q in range(kk):
            ins("mvin_spad", rows=D, cols=D, stride=k, scale=ONE, dram=a_at + i * D * k + q * D, sp=a_sp(i, q))
    for q in range(kk):
        for j in range(nj):
            ins("mvin_spad", rows=D, cols=D, stride=n, scale=ONE, dram=b_at + q * D * n + j * D, sp=b_sp(q, j))
    for j in range(nj):
        for q in range(kk):
            ins("preload_ws", rows=D, cols=D, b=b_sp(q, j))
            for i in range(mi):
                ins("matmul_ws_acc", a_rows=D, a_cols=D, c_rows=D, c_cols=D, accumulate=int(q > 0),
                    a=a_sp(i, q), c=(i * nj + j) * D)
    for i in range(mi):
        for j in range(nj):
            ins("mvout_acc", rows=D, cols=D, stride=n, scale=ONE, relu=0, ac=(i * nj + j) * D,
                dram=c_at + i * D * n + j * D)
    for t in range(raw_tiles):
        i, j = divmod(t % (mi * nj), nj)
        ins("mvout_acc_raw", rows=D, cols=D, stride=n * 4, ac=(i * nj + j) * D, dram=raw_at + i * D * n * 4 + j * D * 4)
    s8 = DTYPES["s8"]
    return Program("gemmini", tuple(out),
                   (Placement(0, a_at, TensorType(s8, (m, k))), Placement(1, b_at, TensorType(s8, (k, n)))),
                   (Placement(0, c_at, TensorType(s8, (m, n))),))


def bench_program() -> Program:
    """The 1,000-instruction benchmark program: a tiled 64x192x192 GEMM (960 instructions) plus
    40 raw int32 mvouts of accumulator tiles."""
    p = gemm_program(64, 192, 192, raw_tiles=40)
    assert len(p) == 1000
    return p
