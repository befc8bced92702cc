"""Byte images of tensors: bflat and its inverse, honouring XLA layouts (seed 000 Def. 7, §9 case 3).

``bflat(t)`` is the u8 vector a tensor occupies in memory: its elements in physical order (the
layout's minor-to-major permutation, then tiling), each element little-endian. A tiled layout
``T(t1..tk)`` tiles the k most-minor physical dimensions: each is padded up to a multiple of its
tile size (padding bytes are zero), the tiled shape is ``(outer dims..., tile indices..., tile
elements...)`` and each tile is contiguous. ``unbflat`` inverts it exactly (padding dropped).
"""

from __future__ import annotations

import math

import numpy as np

from .dtypes import PRED
from .errors import GraphError
from .types import Layout, TensorType

__all__ = ["bflat", "unbflat", "byte_size", "check_layout"]


def check_layout(shape: tuple[int, ...], layout: Layout) -> str | None:
    """Why ``layout`` is not valid for ``shape``, or None when it is."""
    rank = len(shape)
    if sorted(layout.minor_to_major) != list(range(rank)):
        return f"layout {layout} is not a permutation of the {rank} dimensions"
    if layout.tiles:
        if len(layout.tiles) > rank:
            return f"tile {layout.tiles} has more dimensions than the rank {rank}"
        if any(t <= 0 for t in layout.tiles):
            return f"tile sizes must be positive in {layout}"
    return None


def _physical_shape(tt: TensorType) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(major-to-minor dimension order, padded physical shape)."""
    lay = tt.effective_layout
    order = tuple(reversed(lay.minor_to_major))
    phys = [tt.shape[d] for d in order]
    k = len(lay.tiles)
    for i, t in enumerate(lay.tiles):
        j = len(phys) - k + i
        phys[j] = -(-phys[j] // t) * t
    return order, tuple(phys)


def byte_size(tt: TensorType) -> int:
    """Bytes ``bflat`` of a tensor of this type occupies (tile padding included)."""
    _, phys = _physical_shape(tt)
    return math.prod(phys) * tt.dtype.nbytes


def _tile_perm(phys: tuple[int, ...], tiles: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    k = len(tiles)
    outer = phys[: len(phys) - k]
    split: list[int] = list(outer)
    for i, t in enumerate(tiles):
        split += [phys[len(outer) + i] // t, t]
    # axes: outer..., (q0, t0), (q1, t1), ... -> outer..., q0, q1, ..., t0, t1, ...
    n = len(outer)
    perm = tuple(range(n)) + tuple(n + 2 * i for i in range(k)) + tuple(n + 2 * i + 1 for i in range(k))
    return tuple(split), perm


def bflat(value: np.ndarray, tt: TensorType) -> np.ndarray:
    """The u8 byte image of ``value`` (of type ``tt``) in memory, little-endian."""
    if value.shape != tt.shape:
        raise GraphError(f"bflat: value of shape {value.shape} does not have type {tt}")
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    a = np.asarray(value.astype(tt.dtype.np, copy=False)).transpose(order)
    if lay.tiles:
        pad = [(0, p - s) for s, p in zip(a.shape, phys, strict=True)]
        if any(hi for _, hi in pad):
            a = np.pad(a, pad)
        split, perm = _tile_perm(phys, lay.tiles)
        a = a.reshape(split).transpose(perm)
    a = np.array(a, order="C", copy=True)   # (ascontiguousarray would turn rank 0 into shape (1,))
    if tt.dtype is PRED:
        return a.astype(np.uint8).reshape(-1)
    bits = a.view(tt.dtype.uint_np).astype(tt.dtype.uint_np.newbyteorder("<"), copy=False)
    return bits.reshape(-1).view(np.uint8)


def unbflat(data: np.ndarray, tt: TensorType) -> np.ndarray:
    """Inverse of :func:`bflat`: the tensor of type ``tt`` whose byte image is ``data``."""
    need = byte_size(tt)
    data = np.asarray(data, dtype=np.uint8).reshape(-1)
    if data.size != need:
        raise GraphError(f"unbflat: {data.size} bytes given, {tt} needs {need}")
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    if tt.dtype is PRED:
        flat = data != 0
    else:
        flat = data.view(tt.dtype.uint_np.newbyteorder("<")).astype(tt.dtype.uint_np).view(tt.dtype.np)
    if lay.tiles:
        split, perm = _tile_perm(phys, lay.tiles)
        tiled_shape = tuple(split[p] for p in perm)
        a = flat.reshape(tiled_shape).transpose(np.argsort(perm)).reshape(phys)
        a = a[tuple(slice(0, tt.shape[d]) for d in order)]
    else:
        a = flat.reshape(phys)
    return np.array(a.transpose(np.argsort(order)), order="C")
