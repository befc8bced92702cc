"""Byte images of tensors (semantics.layout): bflat / unbflat under XLA layouts.

A hand-checked tiled example, permuted minor-to-major orders, little-endian element bytes, the
byte size with tile padding, and a hypothesis round trip checked against an independent
per-element address computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics.dtypes import DTYPES, DType
from semantics.errors import GraphError
from semantics.layout import bflat, byte_size, check_layout, unbflat
from semantics.types import Layout, TensorType

S8, S32 = DTYPES["s8"], DTYPES["s32"]


def test_tiled_4x4_s8_hand_checked() -> None:
    # s8[4,4]{1,0:T(2,2)}: 2x2 tiles in row-major tile order, each tile row-major inside
    x = np.arange(16, dtype=np.int8).reshape(4, 4)          # x[i, j] = 4i + j
    t = TensorType(S8, (4, 4), Layout((1, 0), (2, 2)))
    want = [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]
    assert bflat(x, t).tolist() == want
    assert np.array_equal(unbflat(np.array(want, np.uint8), t), x)


def test_tiled_column_major_4x4() -> None:
    # {0,1:T(2,2)}: dimension 1 is major; the physical array is x.T, then tiled
    x = np.arange(16, dtype=np.int8).reshape(4, 4)
    t = TensorType(S8, (4, 4), Layout((0, 1), (2, 2)))
    assert bflat(x, t).tolist() == [0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15]


def test_tiled_with_padding_3x3() -> None:
    x = (np.arange(9, dtype=np.int8) + 1).reshape(3, 3)     # 1..9
    t = TensorType(S8, (3, 3), Layout((1, 0), (2, 2)))
    assert byte_size(t) == 16                               # padded to 4x4
    img = bflat(x, t)
    assert img.tolist() == [1, 2, 4, 5, 3, 0, 6, 0, 7, 8, 0, 0, 9, 0, 0, 0]
    assert np.array_equal(unbflat(img, t), x)


def test_one_dimensional_tile_on_2d() -> None:
    # T(4) tiles only the most minor dimension: 3 -> padded to 4
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = TensorType(S32, (2, 3), Layout((1, 0), (4,)))
    assert byte_size(t) == 2 * 4 * 4
    assert bflat(x, t).view("<i4").tolist() == [0, 1, 2, 0, 3, 4, 5, 0]


def test_permuted_minor_to_major_dense() -> None:
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    assert bflat(x, TensorType(S8, (2, 3), Layout((0, 1)))).tolist() == [0, 3, 1, 4, 2, 5]
    assert bflat(x, TensorType(S8, (2, 3))).tolist() == [0, 1, 2, 3, 4, 5]     # default row-major
    y = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    # {0,2,1}: dim 0 most minor, then 2, then 1 (major): physical = y.transpose(1, 2, 0)
    img = bflat(y, TensorType(S8, (2, 3, 4), Layout((0, 2, 1))))
    assert img.tolist() == y.transpose(1, 2, 0).reshape(-1).tolist()


def test_little_endian_elements() -> None:
    assert bflat(np.array([0x01020304], np.int32), TensorType(S32, (1,))).tolist() == [4, 3, 2, 1]
    assert bflat(np.array([1.0], np.float32), TensorType(DTYPES["f32"], (1,))).tolist() == [0, 0, 0x80, 0x3F]
    bf = np.array([0x3F80], np.uint16).view(DTYPES["bf16"].np)
    assert bflat(bf, TensorType(DTYPES["bf16"], (1,))).tolist() == [0x80, 0x3F]
    assert bflat(np.array([-2], np.int16), TensorType(DTYPES["s16"], (1,))).tolist() == [0xFE, 0xFF]
    assert bflat(np.array([1], np.uint64), TensorType(DTYPES["u64"], (1,))).tolist() == [1] + [0] * 7
    assert bflat(np.array([True, False]), TensorType(DTYPES["pred"], (2,))).tolist() == [1, 0]


def test_byte_size() -> None:
    assert byte_size(TensorType(S32, (3, 5))) == 60
    assert byte_size(TensorType(S32, ())) == 4
    assert byte_size(TensorType(S8, (0, 5))) == 0
    assert byte_size(TensorType(S8, (32, 64), Layout((1, 0), (16, 64)))) == 32 * 64
    assert byte_size(TensorType(S8, (33, 65), Layout((1, 0), (16, 64)))) == 48 * 128
    assert byte_size(TensorType(DTYPES["f32"], (5, 3), Layout((0, 1), (2, 2)))) == 4 * 6 * 4  # phys (3,5)->(4,6)
    assert byte_size(TensorType(DTYPES["bf16"], (2, 3, 5), Layout((2, 1, 0), (8,)))) == 2 * 3 * 8 * 2


def test_unbflat_wrong_size_and_bad_layout() -> None:
    t = TensorType(S8, (3, 3), Layout((1, 0), (2, 2)))
    with pytest.raises(GraphError, match="needs 16"):
        unbflat(np.zeros(9, np.uint8), t)
    with pytest.raises(GraphError):
        bflat(np.zeros((2, 2), np.int8), t)
    assert check_layout((2, 2), Layout((0, 0))) is not None
    assert check_layout((2, 2), Layout((1, 0), (2, 2, 2))) is not None
    assert check_layout((2, 2), Layout((1, 0), (0,))) is not None
    assert check_layout((2, 2), Layout((1, 0), (3,))) is None


def test_scalar_roundtrip() -> None:
    t = TensorType(S32, ())
    img = bflat(np.array(0x01020304, np.int32), t)
    assert img.tolist() == [4, 3, 2, 1]
    back = unbflat(img, t)
    assert back.shape == () and int(back) == 0x01020304


# ---------------------------------------------------------------------------------------------
# property: round trip, checked against an independent address computation
# ---------------------------------------------------------------------------------------------

def reference_bflat(x: np.ndarray, t: TensorType) -> np.ndarray:
    """bflat by computing each element's byte address (tile padding bytes stay 0)."""
    lay = t.effective_layout
    order = list(reversed(lay.minor_to_major))          # major -> minor
    phys = [t.shape[d] for d in order]
    k = len(lay.tiles)
    n = len(phys)
    padded = list(phys)
    for i, ts in enumerate(lay.tiles):
        padded[n - k + i] = -(-phys[n - k + i] // ts) * ts
    # address space: outer dims, then tile counts, then in-tile offsets (row-major)
    dims = padded[: n - k] + [padded[n - k + i] // ts for i, ts in enumerate(lay.tiles)] + list(lay.tiles)
    nb = t.dtype.nbytes
    out = np.zeros(math.prod(padded) * nb, np.uint8)
    raw = x.view(t.dtype.uint_np) if not t.dtype.is_pred else x.astype(np.uint8)
    for idx in np.ndindex(*t.shape):
        p = [idx[d] for d in order]
        coords = p[: n - k] + [p[n - k + i] // ts for i, ts in enumerate(lay.tiles)] + \
            [p[n - k + i] % ts for i, ts in enumerate(lay.tiles)]
        addr = 0
        for c, dsz in zip(coords, dims, strict=True):
            addr = addr * dsz + c
        v = int(raw[idx])
        out[addr * nb:(addr + 1) * nb] = [(v >> (8 * b)) & 0xFF for b in range(nb)]
    return out


@st.composite
def tensor_types(draw: st.DrawFn) -> TensorType:
    dt: DType = draw(st.sampled_from(list(DTYPES.values())))
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    perm = tuple(draw(st.permutations(list(range(rank)))))
    tiles: tuple[int, ...] = ()
    if rank and draw(st.booleans()):
        k = draw(st.integers(1, min(rank, 3)))
        tiles = tuple(draw(st.lists(st.integers(1, 4), min_size=k, max_size=k)))
    return TensorType(dt, shape, Layout(perm, tiles))


@settings(max_examples=300, deadline=None)
@given(t=tensor_types(), seed=st.integers(0, 2 ** 32 - 1))
def test_bflat_roundtrip_and_reference(t: TensorType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if t.dtype.is_pred:
        x = rng.integers(0, 2, t.shape).astype(bool)
    else:
        x = rng.integers(0, 256, t.size * t.dtype.nbytes, dtype=np.uint8).view(t.dtype.np).reshape(t.shape)
    img = bflat(x, t)
    assert img.dtype == np.uint8 and img.ndim == 1
    assert img.size == byte_size(t)
    assert img.tolist() == reference_bflat(x, t).tolist()
    back = unbflat(img, t)
    assert back.dtype == x.dtype and back.shape == x.shape
    if t.dtype.is_pred:
        assert np.array_equal(back, x)
    else:   # bit-exact, NaN payloads included
        assert back.view(t.dtype.uint_np).tolist() == x.view(t.dtype.uint_np).tolist()
