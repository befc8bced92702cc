"""The f32 sum AMX's bf16 tiles compute, as numpy, and its declared bound against the reference.

What belongs here: :func:`blocked_sum` (the one definition of what a tiled ``f32[M,N] dot(bf16[M,K],
bf16[K,N])`` program computes, bit for bit) and :func:`sum_bound` (its distance to the reference
interpreter's dot, as a :class:`semantics.compare.Bound` that :func:`semantics.compare.compare`
applies). ``tiles.py``'s bf16 offer names both; a tiled program carries them as its numeric contract
(:func:`compilers.middle.compile.float_contract`), which every check applies (:mod:`check.policy`).

**The blocked sum.** K is cut into blocks of 32 (one 64-byte tile row of bf16) and zero-padded to a
multiple of 32. Per output (m, n), C starts at +0.0 (``tilezero``); for each block q in order,
TDPBF16PS runs two f32 FMA chains from +0.0, ``even`` over the block's 16 even positions
(k = 32q, 32q + 2, ...) and ``odd`` over the 16 odd ones, in increasing k, then
``C = C + (even + odd)``. Every step rounds once to nearest even, reads subnormals as zero and
flushes results below 2^-126 (tininess before rounding) to a zero of their sign: the operations
are the reference's own (``semantics.ops.contraction._fma_f32``, the interpreter's f32 ``add``).
Bit for bit means every non-NaN bit and every NaN position; which NaN comes out is not part of the
model: an add of two NaNs (even + odd, C + t) returns either one in the dialect (the reference's
numpy loops pick by the element's position) and the hardware's TDPBF16PS NaNs are not modelled
(the amx description's docstring), so a NaN matches any NaN, as every AMX check does.

**Why the zero padding computes the same sum.** A padded position has +0.0 in both A and B
(``pack`` zero-fills whole blocks; the pair layout pads K to even with zero bytes), so its product
is +0.0 and ``fma(+0, +0, acc)`` is ``acc`` exactly (no NaN: 0 x 0; no inf x 0) -- except that a
chain at -0.0 (only from a flushed negative tiny partial sum) becomes +0.0 (RNE: -0 + +0 = +0).
The model runs the padded chains, so it is bit-exact with the program by construction; against the
unpadded chains the padding can only turn a zero result's sign, which the bound below (like
:func:`semantics.compare.compare`) treats as equal. Padded rows of A and columns of B produce
outputs that are never stored.

**The bound** (|blocked - reference| per output, both finite). Write p_k = a_k b_k (exact in f64),
S = sum_k |p_k| after DAZ, u = 2^-24, tiny = 2^-126, gamma(d) = d u / (1 - d u). Each f32 step
returns (x + y)(1 + delta) or flushes (error below tiny), |delta| <= u. The reference's chain
passes each term through at most d_r = K roundings in n_r = K steps; the blocked sum through at most
d_t = min(16, ceil(K / 2)) + 1 + ceil(K / 32) (its chain, even + odd, the block adds into C; a
padded step is exact) in n_t = K + 2 ceil(K / 32) steps. Each sum is within gamma(d) S + 2 n tiny
of the exact sum (a flush error grows by at most (1 + u)^d < 2 later), so

    |blocked - reference| <= (gamma(d_t) + gamma(d_r)) S + 2 (n_t + n_r) tiny.

It holds where no partial sum can overflow: where (1 + gamma(max(d_t, d_r))) S_fin + 2 n tiny
exceeds the f32 maximum (S_fin: the sum over finite products) either side may overflow in its own
order, so any result passes there (``Bound.anything``, as the reference's convolution bound). Where
an operand is inf or NaN and the finite terms cannot overflow, both sides give the same infinity or
a NaN (NaN vs NaN counted, not bounded, by ``compare``: the NaN chosen depends on the order).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from semantics.compare import Bound
from semantics.ops._float import daz, float_op
from semantics.ops.contraction import _fma_f32

__all__ = ["BLOCK", "CHAIN", "blocked_sum", "blocked_sum_in", "sum_bound", "bound_terms", "describe_bound"]

BLOCK = 32      # bf16 per tile row (64 bytes): the contraction block of one TDPBF16PS
CHAIN = 16      # FMA steps per chain and block (the even and the odd lanes)

_U, _TINY = 2.0 ** -24, 2.0 ** -126
_F32_MAX = float(np.finfo(np.float32).max)
_add = float_op(np.add)          # the interpreter's f32 add (DAZ operands, FTZ result, RNE)


def _f32(x: np.ndarray) -> np.ndarray:
    """bf16 -> f32 (exact widening, as the reference's convert) with DAZ."""
    f = np.asarray(x).astype(np.float32)
    return daz(f, np.dtype(np.float32))


def blocked_sum(a: np.ndarray, b: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """f32[M,N]: the blocked sum (module doc) of bf16 ``a`` [M,K] and ``b`` [K,N], in blocks of
    ``block`` (even) bf16: a tile of ``block // 2`` pairs, whose chains take ``block // 2`` steps."""
    m, k = a.shape
    n = b.shape[1]
    kp = -(-k // block) * block
    A = np.zeros((m, kp), np.float32)
    B = np.zeros((kp, n), np.float32)
    A[:, :k], B[:k, :] = _f32(a), _f32(b)
    c = np.zeros((m, n), np.float32)
    for q0 in range(0, kp, block):
        even = np.zeros((m, n), np.float32)
        odd = np.zeros((m, n), np.float32)
        for i in range(block // 2):
            ke = q0 + 2 * i
            even = _fma_f32(A[:, ke:ke + 1], B[ke:ke + 1, :], even)
            odd = _fma_f32(A[:, ke + 1:ke + 2], B[ke + 1:ke + 2, :], odd)
        c = _add(c, _add(even, odd))
    return c


def blocked_sum_in(block: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The blocked sum of a program whose tiles hold ``block`` bf16 of K (a layer whose K fits in
    one tile runs it at its size: :func:`compilers.targets.amx.tiles._fitter`). Its bound is
    :func:`sum_bound`'s: with one block, the depths and steps the bound counts are the same."""
    if block == BLOCK:
        return blocked_sum

    def model(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return blocked_sum(a, b, block)
    model.__name__ = model.__qualname__ = f"blocked_sum(block={block})"
    return model


def _gamma(d: int) -> float:
    return d * _U / (1 - d * _U)


def bound_terms(k: int) -> tuple[float, float, float]:
    """(coefficient of S, absolute term, growth factor 1 + gamma(max depth)) of the bound for K = k."""
    nb = -(-k // BLOCK)
    d_t, d_r = min(CHAIN, -(-k // 2)) + 1 + nb, k
    n_t, n_r = k + 2 * nb, k
    return _gamma(d_t) + _gamma(d_r), 2 * (n_t + n_r) * _TINY, 1 + _gamma(max(d_t, d_r))


def sum_bound(a: np.ndarray, b: np.ndarray, ref: np.ndarray | None = None) -> Bound:
    """The declared bound (module doc) of the blocked sum of ``a``, ``b`` against the reference's
    dot, per output element (``ref`` is not needed: the bound depends on the operands only)."""
    k = a.shape[1]
    with np.errstate(all="ignore"):
        A, B = np.abs(_f32(a).astype(np.float64)), np.abs(_f32(b).astype(np.float64))
        s_fin = np.matmul(np.where(np.isfinite(A), A, 0.0), np.where(np.isfinite(B), B, 0.0))
        coef, absolute, grow = bound_terms(k)
        tol = coef * s_fin + absolute
        overflow = grow * s_fin + absolute > _F32_MAX
    return Bound(ulps=0, abs_tol=tol, anything=overflow,
                 why=f"AMX blocked bf16 sum vs the reference's f32 FMA chain, K={k}: "
                     f"|d| <= {coef:.3g} * sum|a*b| + {absolute:.3g}")


def describe_bound(k: int) -> str:
    """The bound for K = ``k`` in words (docs, reports)."""
    coef, absolute, _ = bound_terms(k)
    return f"{coef / _U:.2f} u * sum|a*b| + {absolute / _TINY:g} * 2^-126"

