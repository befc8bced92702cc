"""The amx target (compilers/targets/amx/), its K1 program and its C emitter.

Every instruction is checked against an independent model written here from the Intel SDM
pseudocode (python loops, exact rational arithmetic with Fraction for floats), not from the HLO
semantics, on random operands and edge values (u8 0/255, s8 -128/127, s32 wraparound, bf16/f32
subnormals, NaN, infinities, signed zeros, rounding ties).

Floating-point environment of the model (docs/semantics.md, the target's docstring): operands
are read with DAZ, results whose exact value is below 2^-126 in magnitude become a zero of their
sign (FTZ), otherwise one rounding to nearest even. TDPBF16PS does this by definition; for the
AVX-512 instructions it is MXCSR.DAZ = FTZ = 1, which the emitted C sets.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from compilers.program import Concrete, parse_asm, read_asm
from compilers.simulator import Machine, SimError, simulate
from compilers.targets import load_target
from compilers.targets.amx.emit_c import EmitError, emit_c, fill, native_amx_available, tile_config
from semantics.hlo_parser import parse_file
from semantics.interp import evaluate
from tests.paths import PAPER

ROOT = Path(__file__).resolve().parents[2]
K1_ASM = ROOT / "compilers" / "programs" / "amx_k1.asm"
K1_HLO = PAPER / "amx_k1.hlo"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def acc():
    return load_target("amx")


def run1(acc, name: str, state: dict[str, np.ndarray] | None = None, **attrs: int) -> Machine:
    """One instruction on a machine whose buffers start as ``state``."""
    m = Machine(acc)
    for k, v in (state or {}).items():
        m.state[k][...] = v
    m.step(Concrete(name, tuple(attrs.items())), 0)
    return m


# ---------------------------------------------------------------------------------------------
# the description
# ---------------------------------------------------------------------------------------------

EXPECTED = ["tilezero", "tileloadd", "tilestored", "tdpbusd", "tdpbf16ps", "vmovups_load", "vmovups_store",
            "vpxord", "vpandd", "vbroadcastss", "vfmadd231ps", "vaddps", "vaddps_mem", "vmulps", "vmaxps",
            "vminps", "vcvtdq2ps", "vcvtps2dq", "vcvttps2dq", "vpmovusdb", "vpmovusdb_store",
            "vmovdqu8_load", "vmovdqu8_store", "vpaddd", "vpsubd", "vpmulld", "vpminsd", "vpmaxsd",
            "vpaddb", "vpsubb", "vpminsb", "vpmaxsb", "vpminub", "vpmaxub", "tdpbssd", "vpermt2b", "vpmovdb",
            "vpaddsb"]


def test_description_validates(acc) -> None:
    acc.validate(samples=6, seed=3)
    assert list(acc.instructions) == EXPECTED
    assert acc.buffers["tiles"].shape == (8, 16, 64) and acc.buffers["zmm"].shape == (32, 64)
    text = acc.describe()
    assert "tdpbusd(m, k, n | c, a, b)" in text and "stride >= colsb" in text


# ---------------------------------------------------------------------------------------------
# independent models (SDM pseudocode)
# ---------------------------------------------------------------------------------------------

TINY = Fraction(1, 2 ** 126)


def f32_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def round_f32(v: Fraction, neg_zero: bool) -> int:
    """Bits of the exact value ``v`` rounded to f32: FTZ below 2^-126 (zero of v's sign), else
    round to nearest even, overflow to infinity. ``neg_zero``: the sign for v == 0."""
    if v == 0:
        return 0x80000000 if neg_zero else 0
    sign = 0x80000000 if v < 0 else 0
    a = abs(v)
    if a < TINY:
        return sign
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = a / Fraction(2) ** (e - 23)            # in [2^23, 2^24)
    n = math.floor(q)
    r = q - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n == 2 ** 24:
        n, e = n // 2, e + 1
    if e > 127:
        return sign | 0x7F800000
    return sign | ((e + 127) << 23) | (n - 2 ** 23)


def is_nan_bits(b: int) -> bool:
    return (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF) != 0


def is_inf_bits(b: int) -> bool:
    return (b & 0x7FFFFFFF) == 0x7F800000


def daz_bits(b: int) -> int:
    return b & 0x80000000 if (b & 0x7F800000) == 0 else b


def frac(b: int) -> Fraction:
    return Fraction(float(np.uint32(b).view(np.float32)))


def neg(b: int) -> bool:
    return bool(b & 0x80000000)


QNAN_DEFAULT = 0xFFC00000
ANY_NAN = -1   # the SDM leaves open which of two NaN operands is returned: any NaN is accepted


def x86_add(a: int, b: int) -> int:
    """ADDPS lane (SDM: src1 NaN -> src1 quieted, else src2 NaN quieted; inf - inf -> default NaN)."""
    a, b = daz_bits(a), daz_bits(b)
    if is_nan_bits(a) and is_nan_bits(b):
        return ANY_NAN
    if is_nan_bits(a):
        return a | 0x400000
    if is_nan_bits(b):
        return b | 0x400000
    if is_inf_bits(a) or is_inf_bits(b):
        if is_inf_bits(a) and is_inf_bits(b) and a != b:
            return QNAN_DEFAULT
        return a if is_inf_bits(a) else b
    return round_f32(frac(a) + frac(b), neg(a) and neg(b))


def x86_mul(a: int, b: int) -> int:
    a, b = daz_bits(a), daz_bits(b)
    if is_nan_bits(a) and is_nan_bits(b):
        return ANY_NAN
    if is_nan_bits(a):
        return a | 0x400000
    if is_nan_bits(b):
        return b | 0x400000
    s = neg(a) != neg(b)
    if is_inf_bits(a) or is_inf_bits(b):
        if (a & 0x7FFFFFFF) == 0 or (b & 0x7FFFFFFF) == 0:
            return QNAN_DEFAULT
        return 0xFF800000 if s else 0x7F800000
    return round_f32(frac(a) * frac(b), s)


def x86_fma(a: int, b: int, c: int) -> int:
    """a * b + c, one rounding; NaN results compared for NaN-ness only (returns a NaN)."""
    a, b, c = daz_bits(a), daz_bits(b), daz_bits(c)
    if any(is_nan_bits(x) for x in (a, b, c)):
        return QNAN_DEFAULT
    ps = neg(a) != neg(b)
    if is_inf_bits(a) or is_inf_bits(b):
        if (a & 0x7FFFFFFF) == 0 or (b & 0x7FFFFFFF) == 0:
            return QNAN_DEFAULT
        if is_inf_bits(c) and neg(c) != ps:
            return QNAN_DEFAULT
        return 0xFF800000 if ps else 0x7F800000
    if is_inf_bits(c):
        return c
    p = frac(a) * frac(b)
    return round_f32(p + frac(c), (p == 0 and ps) and neg(c))


def x86_max(a: int, b: int, is_max: bool) -> int:
    """MAXPS / MINPS lane: DAZ, then dest = src1 OP src2 ? src1 : src2 (NaN or equal -> src2)."""
    a, b = daz_bits(a), daz_bits(b)
    if is_nan_bits(a) or is_nan_bits(b):
        return b
    fa, fb = float(np.uint32(a).view(np.float32)), float(np.uint32(b).view(np.float32))
    return a if ((fa > fb) if is_max else (fa < fb)) else b


def x86_cvtps2dq(a: int) -> int:
    if is_nan_bits(a) or is_inf_bits(a):
        return 0x80000000
    v = frac(daz_bits(a))
    n = math.floor(v)
    r = v - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if not -2 ** 31 <= n < 2 ** 31:
        return 0x80000000
    return n & 0xFFFFFFFF


def x86_cvttps2dq(a: int) -> int:
    """CVTTPS2DQ lane (SDM): truncate toward zero; NaN / out of range -> 0x80000000 (integer indefinite)."""
    if is_nan_bits(a) or is_inf_bits(a):
        return 0x80000000
    v = frac(daz_bits(a))
    n = math.floor(v) if v >= 0 else math.ceil(v)
    if not -2 ** 31 <= n < 2 ** 31:
        return 0x80000000
    return n & 0xFFFFFFFF


def edge_f32(rng: np.random.Generator, n: int) -> np.ndarray:
    """n f32 bit patterns: edge values, random bits, random normals, near-ties."""
    edges = np.array([0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                      0x7F800001, 0xFFA00001, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000,
                      0x7F7FFFFF, 0xFF7FFFFF, 0x4B000001, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000,
                      0xC0200000, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x3F800001], dtype=np.uint32)
    pick = rng.random(n)
    out = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    out = np.where(pick < 0.35, edges[rng.integers(0, len(edges), n)], out)
    normal = f32_bits((np.exp2(rng.uniform(-10, 10, n)) * rng.choice([-1.0, 1.0], n)).astype(np.float32))
    out = np.where(pick > 0.65, normal, out)
    halves = f32_bits((rng.integers(-40, 40, n) + 0.5).astype(np.float32))
    return np.where((pick > 0.6) & (pick <= 0.65), halves, out).astype(np.uint32)


def zmm_state(*lanes: np.ndarray) -> np.ndarray:
    z = np.zeros((32, 64), np.uint8)
    for r, v in enumerate(lanes):
        z[r] = np.asarray(v, dtype=np.uint32).view(np.uint8)
    return z


def lanes32(m: Machine, r: int) -> np.ndarray:
    return m.state["zmm"][r].view(np.uint32)


def assert_lanes(got: np.ndarray, want: list[int], nan_any: bool = False) -> None:
    for i, (g, w) in enumerate(zip(got.tolist(), want, strict=True)):
        if w == ANY_NAN or (nan_any and is_nan_bits(w)):
            assert is_nan_bits(g), f"lane {i}: got 0x{g:08x}, want a NaN"
        else:
            assert g == w, f"lane {i}: got 0x{g:08x}, want 0x{w:08x}"


# ---------------------------------------------------------------------------------------------
# AMX
# ---------------------------------------------------------------------------------------------

def model_tileloadd(hbm: np.ndarray, addr: int, rows: int, colsb: int, stride: int) -> np.ndarray:
    t = np.zeros((16, 64), np.uint8)
    for r in range(rows):
        for j in range(colsb):
            t[r, j] = hbm[addr + r * stride + j]
    return t


@pytest.mark.parametrize("seed", range(6))
def test_tileloadd_tilestored_tilezero(acc, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, colsb = int(rng.integers(1, 17)), 4 * int(rng.integers(1, 17))
    stride = colsb + int(rng.integers(0, 80)) if seed else 64
    hbm = rng.integers(0, 256, acc.hbm_size, dtype=np.uint8)
    tiles = rng.integers(0, 256, (8, 16, 64), dtype=np.uint8)
    addr, t = int(rng.integers(0, 4096)), int(rng.integers(0, 8))
    m = run1(acc, "tileloadd", {"d0": hbm, "tiles": tiles}, rows=rows, colsb=colsb, stride=stride, t=t, addr=addr)
    want = tiles.copy()
    want[t] = model_tileloadd(hbm, addr, rows, colsb, stride)
    assert np.array_equal(m.state["tiles"], want)
    assert np.array_equal(m.state["d0"], hbm)
    # tilestored: colsb bytes of each row at addr + r*stride, everything else unchanged
    m = run1(acc, "tilestored", {"d0": hbm, "tiles": tiles}, rows=rows, colsb=colsb, stride=stride, t=t, addr=addr)
    want_h = hbm.copy()
    for r in range(rows):
        for j in range(colsb):
            want_h[addr + r * stride + j] = tiles[t, r, j]
    assert np.array_equal(m.state["d0"], want_h)
    assert np.array_equal(m.state["tiles"], tiles)
    m = run1(acc, "tilezero", {"tiles": tiles}, t=t)
    want = tiles.copy()
    want[t] = 0
    assert np.array_equal(m.state["tiles"], want)


def model_tdpbusd(C: np.ndarray, A: np.ndarray, B: np.ndarray, M: int, K: int, N: int) -> np.ndarray:
    """SDM TDPBUSD on 16 x 64-byte tiles (C.rows = A.rows = M, A.colsb = 4K = 4 B.rows, C.colsb = 4N)."""
    c32 = C.view(np.int32).reshape(16, 16)
    out = np.zeros((16, 16), np.int64)
    for m in range(M):
        for n in range(N):
            acc = int(c32[m, n])
            for k in range(K):
                for i in range(4):
                    acc += int(A[m, 4 * k + i]) * int(np.int8(B[k, 4 * n + i].view(np.int8)))
            acc &= 0xFFFFFFFF
            out[m, n] = acc - (1 << 32) if acc >= 1 << 31 else acc
    return out.astype(np.int32).view(np.uint8).reshape(16, 64)


def _tiles_for_dp(rng: np.random.Generator, kind: str, edges: bool) -> np.ndarray:
    tiles = rng.integers(0, 256, (8, 16, 64), dtype=np.uint8)
    if edges:
        pick = rng.random((8, 16, 64))
        tiles = np.where(pick < 0.3, np.uint8(255), tiles)
        tiles = np.where((pick > 0.3) & (pick < 0.45), np.uint8(0x80), tiles)    # s8 -128
        tiles = np.where((pick > 0.45) & (pick < 0.55), np.uint8(0x7F), tiles)   # s8 127
        tiles = np.where((pick > 0.55) & (pick < 0.6), np.uint8(0), tiles).astype(np.uint8)
        if kind == "int":   # accumulators near the int32 limits: the sums wrap
            c = rng.choice(np.array([2 ** 31 - 1, -2 ** 31, 2 ** 31 - 100000, -2 ** 31 + 5], np.int64), (8, 16, 16))
            tiles[:2] = c[:2].astype(np.int32).view(np.uint8).reshape(2, 16, 64)
    return tiles


@pytest.mark.parametrize("seed", range(8))
def test_tdpbusd(acc, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    M, K, N = (16, 16, 16) if seed < 3 else (int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 17)))
    tiles = _tiles_for_dp(rng, "int", edges=seed % 2 == 1)
    c, a, b = (int(x) for x in rng.permutation(8)[:3]) if seed else (0, 4, 6)
    if seed == 1:
        c, a, b = 0, 2, 3
    m = run1(acc, "tdpbusd", {"tiles": tiles}, m=M, k=K, n=N, c=c, a=a, b=b)
    want = tiles.copy()
    want[c] = model_tdpbusd(tiles[c], tiles[a], tiles[b], M, K, N)
    assert np.array_equal(m.state["tiles"], want)


def test_tdpbusd_extremes(acc) -> None:
    """u8 255 x s8 -128 over 64 bytes, C = INT_MIN: wraps; 255 x 127 with C = INT_MAX: wraps."""
    for av, bv, cv in ((255, 0x80, -2 ** 31), (255, 0x7F, 2 ** 31 - 1), (0, 0x80, 7)):
        tiles = np.zeros((8, 16, 64), np.uint8)
        tiles[0] = np.full((16, 16), cv, np.int32).view(np.uint8).reshape(16, 64)
        tiles[1], tiles[2] = av, bv
        m = run1(acc, "tdpbusd", {"tiles": tiles}, m=16, k=16, n=16, c=0, a=1, b=2)
        got = m.state["tiles"][0].view(np.int32)
        s8 = bv - 256 if bv >= 128 else bv
        want = (cv + 64 * av * s8 + 2 ** 31) % 2 ** 32 - 2 ** 31
        assert (got == want).all()


def bf16_bits(rng: np.random.Generator, shape: tuple[int, ...], edges: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-3, 4, shape))).astype(ml_dtypes.bfloat16).view(np.uint16)
    if edges:
        ev = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0040, 0x0080, 0x8080, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1,
                       0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x3F81, 0x4000, 0x0081], np.uint16)
        pick = rng.random(shape)
        x = np.where(pick < 0.25, ev[rng.integers(0, len(ev), shape)], x).astype(np.uint16)
    return x


def model_tdpbf16ps(C: np.ndarray, A: np.ndarray, B: np.ndarray, M: int, K: int, N: int) -> list[list[int | None]]:
    """SDM TDPBF16PS: temp1[2n], temp1[2n+1] (from +0.0) accumulate the even and the odd products
    over k with FP32 FMA (DAZ, FTZ, RNE); then C[m][n] + (temp1[2n] + temp1[2n+1]). Returns the
    f32 bits per (m, n); a NaN result is returned as QNAN_DEFAULT (only NaN-ness is compared)."""
    cb = C.view(np.uint32).reshape(16, 16)
    ab = A.view(np.uint16).reshape(16, 32)
    bb = B.view(np.uint16).reshape(16, 32)
    out = [[0] * 16 for _ in range(16)]
    for m in range(M):
        for n in range(N):
            temp = [0, 0]                       # +0.0
            for k in range(K):
                for q in (0, 1):
                    x = int(ab[m, 2 * k + q]) << 16
                    y = int(bb[k, 2 * n + q]) << 16
                    temp[q] = x86_fma(x, y, temp[q])
            s = x86_add(temp[0], temp[1])
            s = QNAN_DEFAULT if s == ANY_NAN else s
            out[m][n] = x86_add(int(cb[m, n]), s)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_tdpbf16ps(acc, seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    M, K, N = (16, 16, 16) if seed < 2 else (int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 17)))
    if seed == 7:
        K = 1   # a one-term chain still starts from +0.0
    edges = seed % 2 == 1
    tiles = np.zeros((8, 16, 64), np.uint8)
    for t in range(8):
        tiles[t] = bf16_bits(rng, (16, 32), edges).view(np.uint8).reshape(16, 64)
    tiles[0] = edge_f32(rng, 256).view(np.uint8).reshape(16, 64) if edges else \
        (rng.standard_normal(256).astype(np.float32)).view(np.uint8).reshape(16, 64)
    if seed == 7:  # -0.0 products into a -0.0 accumulator: the chains start from +0.0
        tiles[1, :, :] = np.array([0x00, 0x80, 0x00, 0x80] * 16, np.uint8)   # bf16 -0.0, -0.0
        tiles[2, :, :] = np.array([0x80, 0x3F, 0x80, 0x3F] * 16, np.uint8)   # bf16 1.0, 1.0
        tiles[0, :8] = np.full((8, 16), 0x80000000, np.uint32).view(np.uint8).reshape(8, 64)
    m = run1(acc, "tdpbf16ps", {"tiles": tiles}, m=M, k=K, n=N, c=0, a=1, b=2)
    got = m.state["tiles"][0].view(np.uint32).reshape(16, 16)
    want = model_tdpbf16ps(tiles[0], tiles[1], tiles[2], M, K, N)
    for i in range(16):
        assert_lanes(got[i], want[i], nan_any=True)
    assert np.array_equal(m.state["tiles"][1:], tiles[1:])


def test_tdpbf16ps_ftz_and_daz(acc) -> None:
    """bf16 subnormal inputs read as zero; a product below 2^-126 is flushed (FTZ per FMA step)."""
    tiles = np.zeros((8, 16, 64), np.uint8)
    a = np.full((16, 32), 0x0001, np.uint16)               # bf16 subnormal
    a[:, 1] = 0x2000                                        # 2^-63 in the odd lane of k = 0
    b = np.full((16, 32), 0x3F80, np.uint16)               # 1.0
    b[0, 1::2] = 0x2000                                     # odd lane of k = 0: 2^-63 -> product 2^-126 (normal)
    b[0, 1::2][::2] = 0x1FFF                                # some: just below -> product < 2^-126: flushed
    tiles[1], tiles[2] = a.view(np.uint8).reshape(16, 64), b.view(np.uint8).reshape(16, 64)
    m = run1(acc, "tdpbf16ps", {"tiles": tiles}, m=16, k=16, n=16, c=0, a=1, b=2)
    got = m.state["tiles"][0].view(np.uint32).reshape(16, 16)
    want = model_tdpbf16ps(tiles[0], tiles[1], tiles[2], 16, 16, 16)
    for i in range(16):
        assert_lanes(got[i], want[i])
    assert set(np.unique(got).tolist()) == {0, 0x00800000}


def test_tdpbusd_shape_rules(acc) -> None:
    with pytest.raises(SimError, match="constraint"):
        run1(acc, "tdpbusd", m=16, k=16, n=16, c=1, a=1, b=2)
    with pytest.raises(SimError, match="outside its domain"):
        run1(acc, "tdpbusd", m=16, k=17, n=16, c=0, a=1, b=2)


# ---------------------------------------------------------------------------------------------
# AVX-512
# ---------------------------------------------------------------------------------------------

BINARY = {"vaddps": x86_add, "vmulps": x86_mul,
          "vmaxps": lambda a, b: x86_max(a, b, True), "vminps": lambda a, b: x86_max(a, b, False)}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("seed", range(12))
def test_avx512_binary(acc, name: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = edge_f32(rng, 16), edge_f32(rng, 16)
    if seed == 0:   # ties of add and the zero / NaN rules of max/min
        a[:8] = [0x4B000000, 0x3F800000, 0, 0x80000000, 0x7FC00001, 0x3F800000, 0x00000001, 0x80000001]
        b[:8] = [0x3F000000, 0x33800000, 0x80000000, 0, 0x3F800000, 0x7FA00000, 0x80000000, 0x00000002]
    m = run1(acc, name, {"zmm": zmm_state(a, b)}, dst=5, a=0, b=1)
    assert_lanes(lanes32(m, 5), [BINARY[name](int(x), int(y)) for x, y in zip(a, b, strict=True)])


@pytest.mark.parametrize("seed", range(12))
def test_vaddps_mem(acc, seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    a, b = edge_f32(rng, 16), edge_f32(rng, 16)
    hbm = np.zeros(acc.hbm_size, np.uint8)
    hbm[640:704] = b.view(np.uint8)
    m = run1(acc, "vaddps_mem", {"zmm": zmm_state(a), "d0": hbm}, dst=3, a=0, addr=640)
    assert_lanes(lanes32(m, 3), [x86_add(int(x), int(y)) for x, y in zip(a, b, strict=True)])


@pytest.mark.parametrize("seed", range(16))
def test_vfmadd231ps(acc, seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    a, b, c = edge_f32(rng, 16), edge_f32(rng, 16), edge_f32(rng, 16)
    if seed == 0:   # exact cancellation, -0 products, tiny results (FTZ), a tie needing one rounding
        x = np.float32(1.0000001)
        a[:6] = f32_bits(np.array([x, -0.0, 1e-20, 3.0, 1.5, 2.0 ** -63], np.float32))
        b[:6] = f32_bits(np.array([x, 5.0, 1e-20, 1.0, 2.0 ** -64, 2.0 ** -63], np.float32))
        c[:6] = f32_bits(np.array([-(np.float64(x) ** 2), -0.0, 0.0, -3.0, 2.0 ** -126, -0.0], np.float32))
    m = run1(acc, "vfmadd231ps", {"zmm": zmm_state(a, b, c)}, dst=2, a=0, b=1)
    assert_lanes(lanes32(m, 2), [x86_fma(int(x), int(y), int(z)) for x, y, z in zip(a, b, c, strict=True)],
                 nan_any=True)


@pytest.mark.parametrize("seed", range(8))
def test_conversions(acc, seed: int) -> None:
    rng = np.random.default_rng(400 + seed)
    f = edge_f32(rng, 16)
    if seed == 0:
        f[:10] = f32_bits(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.0 ** 31, -2.0 ** 31, 2147483520.0,
                                    -2147483904.0, 1e-45], np.float32))
    m = run1(acc, "vcvtps2dq", {"zmm": zmm_state(f)}, dst=1, src=0)
    assert_lanes(lanes32(m, 1), [x86_cvtps2dq(int(x)) for x in f])
    m = run1(acc, "vcvttps2dq", {"zmm": zmm_state(f)}, dst=1, src=0)
    assert_lanes(lanes32(m, 1), [x86_cvttps2dq(int(x)) for x in f])
    i = rng.integers(-2 ** 31, 2 ** 31, 16, dtype=np.int64).astype(np.int32)
    i[:6] = [2 ** 31 - 1, -2 ** 31, 16777217, -16777219, 0, 2 ** 24 + 3]
    m = run1(acc, "vcvtdq2ps", {"zmm": zmm_state(i.view(np.uint32))}, dst=1, src=0)
    assert_lanes(lanes32(m, 1), [round_f32(Fraction(int(v)), False) for v in i])
    u = rng.integers(0, 2 ** 32, 16, dtype=np.uint64).astype(np.uint32)
    u[:6] = [0, 255, 256, 2 ** 32 - 1, 0x80000000, 254]
    z = zmm_state(u)
    z[7] = 0xAB
    m = run1(acc, "vpmovusdb", {"zmm": z}, dst=7, src=0)
    want = np.zeros(64, np.uint8)
    want[:16] = [min(int(v), 255) for v in u]
    assert np.array_equal(m.state["zmm"][7], want)
    hbm = np.full(acc.hbm_size, 0xCD, np.uint8)
    m = run1(acc, "vpmovusdb_store", {"zmm": z, "d0": hbm}, src=0, addr=100)
    assert np.array_equal(m.state["d0"][100:116], want[:16])
    assert (m.state["d0"][:100] == 0xCD).all() and (m.state["d0"][116:] == 0xCD).all()


def test_moves_broadcast_xor(acc) -> None:
    rng = np.random.default_rng(9)
    hbm = rng.integers(0, 256, acc.hbm_size, dtype=np.uint8)
    z = rng.integers(0, 256, (32, 64), dtype=np.uint8)
    m = run1(acc, "vmovups_load", {"d0": hbm, "zmm": z}, dst=31, addr=1001)
    assert np.array_equal(m.state["zmm"][31], hbm[1001:1065]) and np.array_equal(m.state["zmm"][:31], z[:31])
    m = run1(acc, "vmovups_store", {"d0": hbm, "zmm": z}, src=4, addr=77)
    want = hbm.copy()
    want[77:141] = z[4]
    assert np.array_equal(m.state["d0"], want)
    m = run1(acc, "vbroadcastss", {"d0": hbm, "zmm": z}, dst=2, addr=13)
    assert np.array_equal(m.state["zmm"][2], np.tile(hbm[13:17], 16))
    m = run1(acc, "vpxord", {"zmm": z}, dst=9, a=3, b=8)
    assert np.array_equal(m.state["zmm"][9], z[3] ^ z[8])
    m = run1(acc, "vpxord", {"zmm": z}, dst=9, a=9, b=9)
    assert (m.state["zmm"][9] == 0).all()
    m = run1(acc, "vpandd", {"zmm": z}, dst=9, a=3, b=8)
    assert np.array_equal(m.state["zmm"][9], z[3] & z[8]) and np.array_equal(m.state["zmm"][10:], z[10:])



# integer lanes, from the SDM: VPADD / VPSUB / VPMULL keep the low bits of the exact result;
# VPMINS / VPMAXS compare signed lanes, VPMINU / VPMAXU unsigned ones
_INT_OPS = {
    "vpaddd": (4, True, lambda a, b: a + b), "vpsubd": (4, True, lambda a, b: a - b),
    "vpmulld": (4, True, lambda a, b: a * b), "vpminsd": (4, True, min), "vpmaxsd": (4, True, max),
    "vpaddb": (1, True, lambda a, b: a + b), "vpsubb": (1, True, lambda a, b: a - b),
    "vpminsb": (1, True, min), "vpmaxsb": (1, True, max), "vpminub": (1, False, min), "vpmaxub": (1, False, max),
}


def model_int_lanes(name: str, a: bytes, b: bytes) -> bytes:
    width, signed, f = _INT_OPS[name]
    out = b""
    for i in range(0, 64, width):
        x = int.from_bytes(a[i:i + width], "little", signed=signed)
        y = int.from_bytes(b[i:i + width], "little", signed=signed)
        out += (f(x, y) % (1 << 8 * width)).to_bytes(width, "little")
    return out


@pytest.mark.parametrize("name", sorted(_INT_OPS))
@pytest.mark.parametrize("seed", range(3))
def test_integer_lanes(acc, name: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 256, (32, 64), dtype=np.uint8)
    if seed == 1:       # edge lanes: 0, 1, -1, MIN, MAX of bytes and of dwords
        edges = np.array([0, 1, 255, 128, 127], np.uint8)
        z[3], z[8] = edges[rng.integers(0, 5, 64)], edges[rng.integers(0, 5, 64)]
        dw = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF], np.uint32)
        z[5, :], z[6, :] = dw[rng.integers(0, 5, 16)].view(np.uint8), dw[rng.integers(0, 5, 16)].view(np.uint8)
    for a, b in ((3, 8), (5, 6), (3, 3)):
        m = run1(acc, name, {"zmm": z}, dst=9, a=a, b=b)
        assert m.state["zmm"][9].tobytes() == model_int_lanes(name, z[a].tobytes(), z[b].tobytes()), (name, a, b)
        assert np.array_equal(m.state["zmm"][:9], z[:9]) and np.array_equal(m.state["zmm"][10:], z[10:])


@pytest.mark.parametrize("n", [1, 3, 17, 63, 64])
def test_masked_byte_moves(acc, n: int) -> None:
    """VMOVDQU8 with the mask of the low n bytes: the load reads n bytes and zeroes the rest of
    the register; the store writes n bytes and keeps the HBM bytes after them."""
    rng = np.random.default_rng(n)
    hbm = rng.integers(0, 256, acc.hbm_size, dtype=np.uint8)
    z = rng.integers(0, 256, (32, 64), dtype=np.uint8)
    m = run1(acc, "vmovdqu8_load", {"d0": hbm, "zmm": z}, dst=7, addr=1001, n=n)
    want = np.zeros(64, np.uint8)
    want[:n] = hbm[1001:1001 + n]
    assert np.array_equal(m.state["zmm"][7], want) and np.array_equal(m.state["zmm"][8:], z[8:])
    m = run1(acc, "vmovdqu8_store", {"d0": hbm, "zmm": z}, src=4, addr=77, n=n)
    want_h = hbm.copy()
    want_h[77:77 + n] = z[4, :n]
    assert np.array_equal(m.state["d0"], want_h)
    # the last n bytes of HBM load and store without reaching past it
    end = acc.hbm_size - n
    m = run1(acc, "vmovdqu8_load", {"d0": hbm, "zmm": z}, dst=7, addr=end, n=n)
    assert np.array_equal(m.state["zmm"][7][:n], hbm[end:])
    with pytest.raises(SimError, match="outside its domain"):
        run1(acc, "vmovdqu8_store", {"d0": hbm, "zmm": z}, src=4, addr=0, n=65)


# ---------------------------------------------------------------------------------------------
# K1
# ---------------------------------------------------------------------------------------------

def _k1_inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if seed == 0:
        return [np.full((32, 64), 255, np.uint8), np.full((32, 64), -128, np.int8)]
    if seed == 1:
        return [np.full((32, 64), 255, np.uint8), np.full((32, 64), 127, np.int8)]
    A = rng.integers(0, 256, (32, 64)).astype(np.uint8)
    B = rng.integers(-128, 128, (32, 64)).astype(np.int8)
    if seed == 2:
        A[::3] = 0
        B[:, ::5] = -128
    return [A, B]


@pytest.mark.parametrize("seed", range(8))
def test_k1_program_matches_reference(acc, seed: int) -> None:
    p = read_asm(K1_ASM)
    assert p.target == "amx" and len(p) == 80
    g = parse_file(K1_HLO)
    ins = _k1_inputs(seed)
    res = simulate(acc, p, ins)
    (ref,) = evaluate(g, ins)
    assert res.outputs[0].dtype == ref.dtype and np.array_equal(res.outputs[0], ref)


def test_k1_instruction_mix() -> None:
    p = read_asm(K1_ASM)
    counts: dict[str, int] = {}
    for i in p.instructions:
        counts[i.name] = counts.get(i.name, 0) + 1
    assert counts == {"tilezero": 4, "tileloadd": 36, "tilestored": 36, "tdpbusd": 4}


# ---------------------------------------------------------------------------------------------
# bad programs: one-line SimError
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,match", [
    ("tilezero(t=8)", "tiles dimension 0: \\[8, 9\\) is outside \\[0, 8\\)"),
    ("tileloadd(rows=16, colsb=64, stride=64, t=0, addr=8388000)", "d0 dimension 0"),
    ("tileloadd(rows=16, colsb=64, stride=32, t=0, addr=0)", "constraint"),
    # TILELOADD / TILESTORED raise #UD on a colsb that is not a multiple of 4 (seen on hardware)
    ("tileloadd(rows=4, colsb=2, stride=8, t=0, addr=0)", "outside its domain"),
    ("tilestored(rows=10, colsb=1, stride=1, t=0, addr=0)", "outside its domain"),
    ("tdpbusd(m=16, k=16, n=16, c=3, a=3, b=4)", "constraint"),
    ("vmovups_load(dst=32, addr=0)", "zmm dimension 0"),
    ("vmovups_store(src=0, addr=-4)", "d0 dimension 0"),
    ("vaddps(dst=0, a=1)", "attribute 'b' is missing"),
    ("tilefoo(t=0)", "unknown instruction"),
])
def test_bad_program_one_line_error(acc, line: str, match: str) -> None:
    p = parse_asm(f".target amx\n.input 0 @0 u8[64]\n{line}\n", "bad.asm")
    with pytest.raises(SimError, match=match) as ei:
        simulate(acc, p, [np.zeros(64, np.uint8)])
    assert "\n" not in str(ei.value) and "bad.asm:3" in str(ei.value)


# ---------------------------------------------------------------------------------------------
# the emitter
# ---------------------------------------------------------------------------------------------

def _gcc_sapphirerapids() -> str | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        return "gcc is not installed"
    r = subprocess.run([gcc, "-march=sapphirerapids", "-x", "c", "-c", "-o", "/dev/null", "-"],
                       input="#include <immintrin.h>\nvoid f(void){_tile_release();}\n", text=True, capture_output=True)
    return None if r.returncode == 0 else f"gcc lacks -march=sapphirerapids / AMX intrinsics: {r.stderr.strip()[:200]}"


def test_emitted_k1_compiles(tmp_path: Path) -> None:
    why = _gcc_sapphirerapids()
    if why:
        pytest.skip(why)
    src = emit_c(read_asm(K1_ASM), name="amx_k1", with_main=True)
    for needle in ("_tile_loadconfig(&accv_tilecfg)", "0x1023", "_tile_dpbusd(0, 4, 6);",
                   "_tile_loadd(7, hbm + 2048, 64);", "_tile_stored(7, hbm + 8192, 4);", ".colsb = {64, 64, 64, 64, 64, 64, 64, 4}",
                   "_tile_release();", "0x8040u"):
        assert needle in src, needle
    (tmp_path / "k1.c").write_text(src)
    r = subprocess.run(["gcc", "-O2", "-march=sapphirerapids", "-Wall", "-Werror", "-c", "k1.c", "-o", "k1.o"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "k1.o").stat().st_size > 0


def test_emitted_avx512_program_compiles(tmp_path: Path) -> None:
    why = _gcc_sapphirerapids()
    if why:
        pytest.skip(why)
    lines = [".target amx", ".input 0 @0 f32[64]", ".output 0 @4096 u8[64]", ".const @8192 0000803f"]
    for name, d in load_target("amx").instructions.items():
        if name.startswith("v"):
            attrs = {"dst": 1, "src": 2, "a": 3, "b": 4, "idx": 5, "addr": 64, "n": 17}
            lines.append(f"{name}(" + ", ".join(f"{k}={attrs[k]}" for k in d.attrs) + ")")
    src = emit_c(parse_asm("\n".join(lines) + "\n"), name="avx")
    assert "_tile" not in src.split("int accv_avx")[1]   # no AMX prologue without tile instructions
    (tmp_path / "a.c").write_text(src)
    r = subprocess.run(["gcc", "-O2", "-march=sapphirerapids", "-Wall", "-Werror", "-c", "a.c"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_templates_fail_loudly() -> None:
    with pytest.raises(EmitError, match="hole 'stride' is not filled"):
        fill("tileloadd", t=1, addr=0)
    with pytest.raises(EmitError, match="has no hole 'rows'"):
        fill("tileloadd", t=1, addr=0, stride=64, rows=16)
    with pytest.raises(EmitError, match="no template"):
        fill("tileloadx")
    assert fill("tdpbusd", c=0, a=1, b=2) == "_tile_dpbusd(0, 1, 2);"


def test_tile_config_conflict_rejected() -> None:
    p = parse_asm(".target amx\ntileloadd(rows=16, colsb=64, stride=64, t=0, addr=0)\n"
                  "tileloadd(rows=8, colsb=64, stride=64, t=0, addr=0)\n")
    with pytest.raises(EmitError, match="instruction 1 .*tmm0 used as 8 rows x 64 bytes"):
        emit_c(p)
    assert tile_config(read_asm(K1_ASM)) == [(16, 64)] * 7 + [(16, 4)]


def test_native_amx_available_reads_cpuinfo(tmp_path: Path) -> None:
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f\n")
    ok, why = native_amx_available(f)
    assert not ok and "amx_tile" in why
    f.write_text("flags\t\t: avx512f avx512bw amx_tile amx_int8 amx_bf16\n")
    ok, why = native_amx_available(f)
    assert not ok and "avx512_vbmi" in why            # the repack of row-major weights needs VPERMT2B
    f.write_text("flags\t\t: avx512f avx512bw avx512_vbmi amx_tile amx_int8 amx_bf16\n")
    assert native_amx_available(f) == (True, "")
    assert native_amx_available(tmp_path / "none")[0] is False
    ok, why = native_amx_available()
    assert isinstance(ok, bool) and (ok or why)
