"""Each QKV instruction (seed 000 Fig. 3) against an independent numpy model of its description,
on random machine states (bf16 edge values included)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from compilers.program import Concrete
from compilers.simulator import Machine
from compilers.targets import load_target
from semantics.dtypes import BF16
from semantics.inputs import edge_values

BF = ml_dtypes.bfloat16


def _state(seed: int) -> Machine:
    m = Machine(load_target("qkv"))
    rng = np.random.default_rng(seed)
    m.state["d0"][:] = rng.integers(0, 256, m.state["d0"].size, dtype=np.uint8)
    # the first 8 KiB of HBM: bf16 values with every edge value (NaN, inf, -0, subnormals, ties)
    vals = (rng.standard_normal(4096) * 2).astype(BF)
    ev = edge_values(BF16)
    vals[: len(ev)] = ev
    m.state["d0"][:8192] = vals.view(np.uint8)
    m.state["d1"][:] = (rng.standard_normal((128, 64))).astype(BF)
    m.state["d2"][:] = (rng.standard_normal((64, 64))).astype(BF)
    return m


def _run(m: Machine, text: str) -> None:
    name, rest = text.split("(", 1)
    attrs = tuple((k.strip(), int(v)) for k, v in (a.split("=") for a in rest.rstrip(")").split(",") if a.strip()))
    m.step(Concrete(name, attrs), 0)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_data_movement(seed: int) -> None:
    m = _state(seed)
    hbm = m.state["d0"].copy()
    _run(m, "load_rm(n=5, addr_in=256, addr_out=3)")
    assert _bits(m.state["d1"][3:8]) == _bits(hbm[256:256 + 5 * 128].view(BF).reshape(5, 64))
    _run(m, "load_cm(n=64, addr_in=1024, addr_out=64)")
    block = hbm[1024:1024 + 64 * 128].view(BF).reshape(64, 64)
    assert _bits(m.state["d1"][64:128]) == _bits(block.T)
    d1 = m.state["d1"].copy()
    _run(m, "store_rm(n=7, addr_in=10, addr_out=40000)")
    assert _bits(m.state["d0"][40000:40000 + 7 * 128]) == _bits(d1[10:17])
    _run(m, "store_cm(n=64, addr_in=64, addr_out=50000)")
    assert _bits(m.state["d0"][50000:50000 + 64 * 128]) == _bits(d1[64:128].T)
    d2 = m.state["d2"].copy()
    _run(m, "mov(n=9, addr_in=50, addr_out=100)")
    assert _bits(m.state["d1"][100:109]) == _bits(d2[50:59])


def _fma_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bf16 x bf16 products are exact in f32; accumulate in increasing k with one f32 rounding
    per step (an FMA of an exact product is one rounding), then round once to bf16."""
    a32, b32 = a.astype(np.float64), b.astype(np.float64)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float64) + np.outer(a32[:, k], b32[k])).astype(np.float32)
    return acc.astype(BF)


@pytest.mark.parametrize("seed", range(3))
def test_gemm_and_softmax(seed: int) -> None:
    m = _state(seed)
    d1 = m.state["d1"].copy()
    _run(m, "gemm(addr_1=0, addr_2=64, addr_out=0)")
    assert _bits(m.state["d2"]) == _bits(_fma_dot(d1[0:64], d1[64:128]))
    x = m.state["d2"][:20].copy()
    _run(m, "softmax(n=20, addr=0)")
    e = np.exp(x.astype(np.float64)).astype(np.float32).astype(BF)
    # the bf16 add region rounds every partial sum to bf16; 64 columns reduce in XLA's tree order:
    # 2 windows of 32, each folded from 0, then the two partials folded from 0
    w = [np.zeros(20, BF), np.zeros(20, BF)]
    for j in range(2):
        for k in range(32):
            w[j] = (w[j].astype(np.float32) + e[:, 32 * j + k].astype(np.float32)).astype(BF)
    s = (np.zeros(20, np.float32) + w[0].astype(np.float32)).astype(BF)
    s = (s.astype(np.float32) + w[1].astype(np.float32)).astype(BF)
    want = (e.astype(np.float32) / s.astype(np.float32)[:, None]).astype(BF)
    got = m.state["d2"][:20]
    ok = (_bits(got) == _bits(want))
    assert ok, np.argwhere(got.view(np.uint16) != want.view(np.uint16))[:5]
