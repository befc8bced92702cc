"""The QKV RTL's floating-point units against the reference interpreter, unit by unit
(rtl_harness/qkv/hdl/qkv_fpu_probe.sv): exp on all 65,536 bf16 inputs, the gemm lanes' FMA, the
softmax row-sum add and the divider on hundreds of thousands of operands aimed at rounding ties,
cancellation, FTZ/overflow boundaries, signed zeros, infinities and NaNs. Also: the checked-in
exp table is what the reference gives now.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from rtl_harness import verilate
from rtl_harness.qkv import driver as qkv
from rtl_harness.qkv.cases import EDGE_BF16, random_bf16
from semantics.hlo_parser import parse_hlo
from semantics.interp import evaluate

QKV_DIR = Path(qkv.__file__).resolve().parent
_NO_RTL = verilate.available()


def needs_rtl(test):  # noqa: ANN001, ANN201
    """Marks a test ``rtl`` (it needs Verilator) and skips it, with the reason, where the toolchain is absent."""
    return pytest.mark.rtl(pytest.mark.skipif(_NO_RTL is not None, reason=f"RTL toolchain: {_NO_RTL}")(test))


def _gen() -> object:
    spec = importlib.util.spec_from_file_location("gen_exp_rom", QKV_DIR / "gen_exp_rom.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_exp_table_is_the_references() -> None:
    gen = _gen()
    assert (qkv.RTL_DIR / "qkv_exp_rom.sv").read_text() == gen.render(), \
        "qkv_exp_rom.sv is stale: python rtl_harness/qkv/gen_exp_rom.py"


def _ref(text: str, *args: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        (y,) = evaluate(parse_hlo(text), list(args))
    return np.asarray(y)


def _ref_binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.size
    text = (f"HloModule r\nENTRY e {{\n  a = bf16[{n}] parameter(0)\n  b = bf16[{n}] parameter(1)\n"
            f"  ROOT y = bf16[{n}] {op}(a, b)\n}}\n")
    return _ref(text, a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16)).view(np.uint16)


def _ref_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    n = a.size
    f = [(x.astype(np.uint32) << 16).view(np.float32) for x in (a, b)]
    text = (f"HloModule r\nENTRY e {{\n  a = f32[{n}] parameter(0)\n  b = f32[{n}] parameter(1)\n"
            f"  c = f32[{n}] parameter(2)\n  ROOT y = f32[{n}] fma(a, b, c)\n}}\n")
    return _ref(text, f[0], f[1], c.view(np.float32)).view(np.uint32)


def _is_nan16(x: np.ndarray) -> np.ndarray:
    return ((x & 0x7F80) == 0x7F80) & ((x & 0x7F) != 0)


def _is_nan32(x: np.ndarray) -> np.ndarray:
    return ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0)


def _first(mask: np.ndarray, *cols: np.ndarray) -> str:
    i = int(np.flatnonzero(mask)[0])
    return f"{int(mask.sum())} differ; first at {i}: " + ", ".join(f"0x{int(c[i]):x}" for c in cols)


@pytest.fixture(scope="module")
def probe() -> qkv.FpuProbe:
    if verilate.available() is not None:
        pytest.skip(f"RTL toolchain: {verilate.available()}")
    p = qkv.FpuProbe()
    yield p
    p.close()


def _operands(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    parts = [random_bf16(rng, (n // 8,), p) for p in ("normal", "wide", "edges", "bits", "tiny", "overflow",
                                                     "sprinkle", "softmax")]
    a = np.concatenate(parts)
    b = np.concatenate([random_bf16(rng, (n // 8,), p) for p in ("normal", "wide", "edges", "bits", "tiny",
                                                                  "overflow", "normal", "edges")])
    perm = rng.permutation(a.size)
    return a, b[perm]


@needs_rtl
def test_exp_all_bf16_inputs(probe: qkv.FpuProbe) -> None:
    x = np.arange(1 << 16, dtype=np.uint16)
    _, _, _, ex = probe.eval(x, x, np.zeros(x.size, np.uint32))
    want = _gen().reference_exp_bf16()
    bad = ex != want
    assert not bad.any(), "exp: " + _first(bad, x, want, ex)


@needs_rtl
def test_fma_against_reference(probe: qkv.FpuProbe) -> None:
    """f32 fma(a, b, c) with bf16 a, b: bit-exact, except that a NaN result is the canonical
    0x7fc00000 with the reference's sign (the unit drops payloads; every consumer rounds to bf16,
    where NaNs are canonical anyway)."""
    rng = np.random.default_rng(7)
    n = 1 << 18
    a, b = _operands(rng, n)
    fa = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fb = (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = fa * fb
        kind = rng.integers(0, 6, n)
        c = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)          # 0: any bits
        neg = (-p).astype(np.float32).view(np.uint32).astype(np.int64)               # 1: cancellation
        near = (neg + rng.integers(-3, 4, n)).astype(np.uint32)
        c = np.where(kind == 1, near, c)
        shift = np.ldexp(p, rng.integers(-30, 31, n)) * rng.choice([-1.0, 1.0], n)   # 2: sticky boundaries
        c = np.where(kind == 2, shift.astype(np.float32).view(np.uint32), c)
        edge32 = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
                           0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345,
                           0x3F800000, 0xBF800000], np.uint32)
        c = np.where(kind == 3, rng.choice(edge32, n), c)
        tiny = (np.ldexp(1.0, -126) * rng.uniform(0.5, 2.5, n) - p) * rng.choice([1.0, -1.0], n)   # 4: FTZ edge
        c = np.where(kind == 4, tiny.astype(np.float32).view(np.uint32), c)
        c = np.where(kind == 5, (a.astype(np.uint32) << 16) ^ rng.integers(0, 1 << 16, n).astype(np.uint32), c)
    c = c.astype(np.uint32)
    got, _, _, _ = probe.eval(a, b, c)
    want = _ref_fma(a, b, c)
    nan_w, nan_g = _is_nan32(want), _is_nan32(got)
    assert np.array_equal(nan_w, nan_g), "fma NaN-ness: " + _first(nan_w != nan_g, a, b, c, want, got)
    canon = (want & 0x80000000) | 0x7FC00000
    bad = np.where(nan_w, got != canon, got != want)
    assert not bad.any(), "fma (a, b, c, reference, rtl): " + _first(bad, a, b, c, want, got)
    # the sample covers what it is meant to
    assert nan_w.sum() > 1000 and (want == 0).sum() + (want == 0x80000000).sum() > 1000
    assert ((want & 0x7FFFFFFF) == 0x7F800000).sum() > 1000


@needs_rtl
def test_add_against_reference(probe: qkv.FpuProbe) -> None:
    """bf16 a + b: bit-exact; where both operands are NaN the RTL returns a's (the reference's
    numpy loop may return either: docs in rtl_harness/qkv/cases.py)."""
    rng = np.random.default_rng(8)
    n = 1 << 18
    a, b = _operands(rng, n)
    k = rng.integers(0, 4, n)
    b = np.where(k == 1, a ^ 0x8000, b)                                          # exact cancellation
    b = np.where(k == 2, (a ^ 0x8000) + rng.integers(-3, 4, n).astype(np.uint16), b)   # near cancellation
    b = b.astype(np.uint16)
    _, got, _, _ = probe.eval(a, b, np.zeros(n, np.uint32))
    want = _ref_binary("add", a, b)
    both = _is_nan16(a) & _is_nan16(b)
    exp = np.where(both, (a & 0x8000) | 0x7FC0, want)
    assert np.array_equal(_is_nan16(got), _is_nan16(want))
    bad = got != exp
    assert not bad.any(), "add (a, b, reference, rtl): " + _first(bad, a, b, want, got)


@needs_rtl
def test_div_against_reference(probe: qkv.FpuProbe) -> None:
    """bf16 a / b: bit-exact (f32 division rounded to f32, FTZ, then to bf16). Random operands plus
    every significand pair at exponent differences around the FTZ and overflow limits and 0."""
    rng = np.random.default_rng(9)
    a, b = _operands(rng, 1 << 17)
    m = np.arange(128, dtype=np.uint16)
    ma, mb = (x.ravel() for x in np.meshgrid(m, m))
    grid_a, grid_b = [a], [b]
    for ea, eb in ((1, 127), (1, 128), (2, 127), (127, 127), (254, 127), (254, 126), (200, 73), (73, 200),
                   (127, 254), (128, 254)):
        sign = rng.integers(0, 2, ma.size).astype(np.uint16) << 15
        grid_a.append((sign | (ea << 7) | ma).astype(np.uint16))
        grid_b.append(((ea * 0 + eb) << 7 | mb).astype(np.uint16))
    a, b = np.concatenate(grid_a), np.concatenate(grid_b)
    _, _, got, _ = probe.eval(a, b, np.zeros(a.size, np.uint32))
    want = _ref_binary("divide", a, b)
    bad = got != want
    assert not bad.any(), "div (a, b, reference, rtl): " + _first(bad, a, b, want, got)
    assert np.isin(EDGE_BF16, a).sum() > 20
