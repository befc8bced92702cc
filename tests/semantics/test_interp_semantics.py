"""The reference interpreter reproduces XLA CPU's measured behaviour, one rule per test.

Every expected value below was measured on real XLA:CPU (jaxlib 0.10.2, runtime operands, not
constant-folded): see the probe notes summarised in docs/semantics.md. Graphs are written as HLO
text for readability. Float results are compared by their bit patterns (sign of zero, NaN
payloads) unless the rule is only about NaN-ness.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import pytest

from semantics.hlo_parser import parse_hlo
from semantics.interp import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BF16 = ml_dtypes.bfloat16
NP = {"pred": np.bool_, "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16, "s32": np.int32,
      "u32": np.uint32, "s64": np.int64, "u64": np.uint64, "bf16": BF16, "f16": np.float16, "f32": np.float32,
      "f64": np.float64}


def run(hlo: str, *inputs: np.ndarray) -> list[np.ndarray]:
    return evaluate(parse_hlo(hlo), list(inputs))


def arr(dt: str, values: Sequence) -> np.ndarray:
    if dt in ("bf16", "f16", "f32", "f64"):
        return np.array(values, dtype=np.float64).astype(NP[dt])
    return np.array(values, dtype=object).astype(NP[dt])


def fbits(dt: str, values: Sequence[int]) -> np.ndarray:
    """Floats from their bit patterns."""
    u = {"bf16": np.uint16, "f16": np.uint16, "f32": np.uint32, "f64": np.uint64}[dt]
    return np.array(values, dtype=u).view(NP[dt])


def bits(a: np.ndarray) -> list[int]:
    return [int(v) for v in a.view(f"u{a.dtype.itemsize}").reshape(-1)]


def binary(op: str, dt: str, a: np.ndarray, b: np.ndarray, out: str | None = None, attrs: str = "") -> np.ndarray:
    n = a.size
    hlo = f"""HloModule m
ENTRY e {{
  p0 = {dt}[{n}] parameter(0)
  p1 = {dt}[{n}] parameter(1)
  ROOT r = {out or dt}[{n}] {op}(p0, p1){attrs}
}}"""
    return run(hlo, a.reshape(n), b.reshape(n))[0]


def unary(op: str, dt: str, a: np.ndarray, out: str | None = None) -> np.ndarray:
    n = a.size
    hlo = f"""HloModule m
ENTRY e {{
  p0 = {dt}[{n}] parameter(0)
  ROOT r = {out or dt}[{n}] {op}(p0)
}}"""
    return run(hlo, a.reshape(n))[0]


def convert(src: str, dst: str, a: np.ndarray) -> np.ndarray:
    return unary("convert", src, a, out=dst)


# ---------------------------------------------------------------------------------------------
# integer arithmetic
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["s8", "s32"])
def test_signed_add_multiply_wrap(dt: str) -> None:
    lo, hi = np.iinfo(NP[dt]).min, np.iinfo(NP[dt]).max
    a = arr(dt, [hi, lo])
    assert binary("add", dt, a, arr(dt, [1, -1])).tolist() == [lo, hi]
    assert binary("multiply", dt, arr(dt, [hi, lo]), arr(dt, [2, -1])).tolist() == [-2, lo]


# (dividend, divisor) -> (quotient, remainder), per dtype: FINDINGS a.
DIVREM = {
    "s8": [((0, 0), (-1, 0)), ((127, 0), (-1, 127)), ((-128, 0), (-1, -128)), ((5, 0), (-1, 5)),
           ((-128, -1), (-128, 0)), ((7, -2), (-3, 1)), ((-7, 2), (-3, -1)), ((-7, -2), (3, -1))],
    "s32": [((7, 0), (-1, 7)), ((-2 ** 31, 0), (-1, -2 ** 31)), ((-2 ** 31, -1), (-2 ** 31, 0)),
            ((7, -2), (-3, 1)), ((-7, 2), (-3, -1))],
    "s64": [((9, 0), (-1, 9)), ((-2 ** 63, -1), (-2 ** 63, 0))],
    "u8": [((0, 0), (255, 0)), ((200, 0), (255, 200)), ((5, 3), (1, 2)), ((255, 255), (1, 0))],
    "u32": [((7, 0), (2 ** 32 - 1, 7)), ((2 ** 32 - 1, 2), (2 ** 31 - 1, 1))],
}


@pytest.mark.parametrize("dt", sorted(DIVREM))
def test_integer_divide_remainder(dt: str) -> None:
    cases = DIVREM[dt]
    a = np.array([c[0][0] for c in cases], dtype=object).astype(NP[dt])
    b = np.array([c[0][1] for c in cases], dtype=object).astype(NP[dt])
    assert binary("divide", dt, a, b).tolist() == [c[1][0] for c in cases]
    assert binary("remainder", dt, a, b).tolist() == [c[1][1] for c in cases]


def _shift_expect(kind: str, x: int, s: int, w: int, signed: bool) -> int:
    """FINDINGS b, stated independently of the implementation: amount read unsigned; >= width
    gives 0 (left, logical) or the sign fill (arithmetic, also for unsigned types)."""
    mask = (1 << w) - 1
    ux, us = x & mask, s & mask
    top = ux >> (w - 1)
    if us >= w:
        r = 0 if kind != "ashr" else (mask if top else 0)
    elif kind == "shl":
        r = (ux << us) & mask
    elif kind == "lshr":
        r = ux >> us
    else:
        r = ((ux | (mask << w if top else 0)) >> us) & mask
    return r - (1 << w) if signed and r >> (w - 1) else r


@pytest.mark.parametrize("dt", ["s8", "s32", "u8", "u32"])
@pytest.mark.parametrize("op,kind", [("shift-left", "shl"), ("shift-right-logical", "lshr"),
                                     ("shift-right-arithmetic", "ashr")])
def test_shifts_amount_range(dt: str, op: str, kind: str) -> None:
    w = np.dtype(NP[dt]).itemsize * 8
    signed = dt.startswith("s")
    amounts = [0, 1, w - 1, w, w + 1, 2 * w, -1, -w]
    xs = [1, 5, -5, -128, 0x70, -1] if signed else [1, 5, 240, 128, 0x70, 2 ** w - 1]
    pairs = [(x, s) for x in xs for s in amounts]
    a = np.array([x for x, _ in pairs], dtype=object).astype(NP[dt])
    b = np.array([s & ((1 << w) - 1) for _, s in pairs], dtype=object).astype(np.uint64).astype(
        f"u{w // 8}").view(NP[dt])
    got = binary(op, dt, a, b).tolist()
    assert got == [_shift_expect(kind, x, s, w, signed) for x, s in pairs]


def test_shift_measured_examples() -> None:
    assert binary("shift-left", "s8", arr("s8", [1]), arr("s8", [7])).tolist() == [-128]
    assert binary("shift-right-logical", "s8", arr("s8", [-128, -5]), arr("s8", [1, 1])).tolist() == [64, 125]
    assert binary("shift-right-arithmetic", "u8", arr("u8", [240, 128, 112]), arr("u8", [8, 1, 8])).tolist() == [
        255, 192, 0]
    assert binary("shift-right-arithmetic", "u32", arr("u32", [0x80000000]), arr("u32", [1])).tolist() == [0xC0000000]
    assert binary("shift-left", "s32", arr("s32", [1, 1]), arr("s32", [32, -1])).tolist() == [0, 0]
    assert binary("shift-right-arithmetic", "s32", arr("s32", [-7, 7]), arr("s32", [-1, 99])).tolist() == [-1, 0]


def test_abs_negate_int_min() -> None:
    assert unary("abs", "s8", arr("s8", [-128, -1, 5])).tolist() == [-128, 1, 5]
    assert unary("negate", "s8", arr("s8", [-128, 1])).tolist() == [-128, -1]
    assert unary("abs", "s32", arr("s32", [-2 ** 31])).tolist() == [-2 ** 31]
    assert unary("negate", "s32", arr("s32", [-2 ** 31])).tolist() == [-2 ** 31]


def test_integer_misc() -> None:
    assert binary("compare", "u8", arr("u8", [255, 0]), arr("u8", [1, 255]), out="pred",
                  attrs=", direction=LT".replace("direction", "direction")).tolist() == [False, True]
    assert unary("not", "s8", arr("s8", [0, -1])).tolist() == [-1, 0]
    assert binary("xor", "pred", arr("pred", [True, True, False]), arr("pred", [True, False, False])).tolist() == [
        False, True, False]


def test_add_on_pred_is_or() -> None:
    assert binary("add", "pred", arr("pred", [True, True, False]), arr("pred", [True, False, False])).tolist() == [
        True, True, False]


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------

NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize("src", ["f32", "f64", "bf16", "f16"])
def test_float_to_int_nan_saturation_truncation(src: str) -> None:
    xs = [NAN, -NAN, INF, -INF, -0.5, 2.5, -2.5, 255.75, -1.5, 3.99, 1e30 if src != "f16" else 65504.0]
    x = np.array(xs, dtype=np.float64).astype(NP[src])
    big = 1e30 if src != "f16" else 65504.0
    want = {
        "s8": [0, 0, 127, -128, 0, 2, -2, 127, -1, 3, 127],
        "u8": [0, 0, 255, 0, 0, 2, 0, 255, 0, 3, 255],
        "s32": [0, 0, 2 ** 31 - 1, -2 ** 31, 0, 2, -2, 255, -1, 3, 2 ** 31 - 1 if big > 2 ** 31 else int(big)],
        "u32": [0, 0, 2 ** 32 - 1, 0, 0, 2, 0, 255, 0, 3, 2 ** 32 - 1 if big > 2 ** 32 else int(big)],
        "s64": [0, 0, 2 ** 63 - 1, -2 ** 63, 0, 2, -2, 255, -1, 3, 2 ** 63 - 1 if big > 2 ** 63 else int(big)],
        "u64": [0, 0, 2 ** 64 - 1, 0, 0, 2, 0, 255, 0, 3, 2 ** 64 - 1 if big > 2 ** 64 else int(big)],
    }
    for dst, w in want.items():
        if src == "bf16":   # 255.75 is 256 in bf16
            w = list(w)
            w[7] = {"s8": 127, "u8": 255}.get(dst, 256)
        assert convert(src, dst, x).tolist() == w, dst


def test_float_to_int_bounds_exact() -> None:
    x = np.array([2147483648.0, -2147483904.0, 4294967296.0, 2147483520.0], dtype=np.float32)
    assert convert("f32", "s32", x).tolist() == [2147483647, -2147483648, 2147483647, 2147483520]
    assert convert("f32", "u32", x).tolist() == [2147483648, 0, 4294967295, 2147483520]


def test_s32_to_bf16_double_rounds_through_f32() -> None:
    # 2^24 + 2^16 + 1: a direct RNE to bf16 (8 significant bits) rounds up to 2^24 + 2^17, but the
    # f32 step first rounds to 2^24 + 2^16 (a tie, to even), which then ties to even 2^24.
    x = 2 ** 24 + 2 ** 16 + 1
    ulp = 2 ** 17                                   # bf16 spacing in [2^24, 2^25)
    assert x - 2 ** 24 > ulp // 2                   # a single RNE would give 2^24 + 2^17
    got = convert("s32", "bf16", arr("s32", [x, -x]))
    assert got.astype(np.float64).tolist() == [2.0 ** 24, -(2.0 ** 24)]
    # s32 -> f32 is a single RNE
    assert convert("s32", "f32", arr("s32", [x, 2 ** 24 + 1, 2 ** 24 + 3])).tolist() == [
        2 ** 24 + 2 ** 16, 2 ** 24, 2 ** 24 + 4]


def test_f64_to_f32_flushes_subnormal_results() -> None:
    x = np.array([1e-40, -1e-40, 7e-46, 2.0 ** -126, -(2.0 ** -126), 2.0 ** -149, 1e39, NAN], dtype=np.float64)
    got = convert("f64", "f32", x)
    assert bits(got)[:7] == [0, 0x80000000, 0, 0x00800000, 0x80800000, 0, 0x7F800000]
    assert np.isnan(got[7])
    # while f32 -> bf16 keeps subnormals (integer bit operations)
    sub = fbits("f32", [0x00400000])
    assert bits(convert("f32", "bf16", sub)) == [0x0040]


def test_f32_to_f64_reads_subnormals_as_zero() -> None:
    assert bits(convert("f32", "f64", np.array([1e-40, -1e-40, 1.5], dtype=np.float32))) == [
        0, 0x8000000000000000, 0x3FF8000000000000]


def test_float_nan_conversions() -> None:
    # f32 -> bf16: canonical quiet NaN keeping the sign
    assert bits(convert("f32", "bf16", fbits("f32", [0x7FBFFFFF, 0x7F800001, 0xFFC00123]))) == [
        0x7FC0, 0x7FC0, 0xFFC0]
    # f32 -> f16: payload kept, quiet bit set
    assert bits(convert("f32", "f16", fbits("f32", [0x7F809A03, 0x7FBFFFFF, 0x7F800001]))) == [
        0x7E04, 0x7FFF, 0x7E00]
    # f16 -> f32: quiet bit set; bf16 -> f32: bit shift
    assert bits(convert("f16", "f32", fbits("f16", [0x7C01]))) == [0x7FC02000]
    assert bits(convert("bf16", "f32", fbits("bf16", [0x7F81]))) == [0x7F810000]


# ---------------------------------------------------------------------------------------------
# floating point: DAZ/FTZ, NaN, signed zero
# ---------------------------------------------------------------------------------------------

def test_f32_daz_ftz_arithmetic() -> None:
    sub = np.array([1e-40, -1e-40], dtype=np.float32)
    assert bits(binary("add", "f32", sub, np.zeros(2, np.float32))) == [0, 0]   # -1e-40 + 0 = -0 + 0 = +0
    assert bits(binary("multiply", "f32", sub, np.ones(2, np.float32))) == [0, 0x80000000]
    # results below 2^-126 are flushed
    t = np.array([2.0 ** -100, -(2.0 ** -100)], dtype=np.float32)
    assert bits(binary("multiply", "f32", t, np.full(2, 2.0 ** -30, np.float32))) == [0, 0x80000000]
    # negate is a bit operation: subnormals survive
    assert bits(unary("negate", "f32", sub)) == bits(np.array([-1e-40, 1e-40], dtype=np.float32))


def test_f32_daz_compare_and_maximum() -> None:
    sub = np.array([1e-40, 1e-40, -1e-40], dtype=np.float32)
    z = np.array([0.0, -0.0, 0.0], dtype=np.float32)
    eq = binary("compare", "f32", sub, z, out="pred", attrs=", direction=EQ")
    gt = binary("compare", "f32", sub, z, out="pred", attrs=", direction=GT")
    assert eq.tolist() == [True, True, True] and gt.tolist() == [False, False, False]
    # maximum reads the subnormal as +0 (and returns that zero, not the subnormal)
    assert bits(binary("maximum", "f32", np.array([1e-40, 1e-40], np.float32), np.array([0.0, -1.0], np.float32))) \
        == [0, 0]
    assert bits(binary("minimum", "f32", np.array([-1e-40], np.float32), np.array([0.0], np.float32))) == [0x80000000]


@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
def test_maximum_minimum_nan_and_signed_zero(dt: str) -> None:
    a = np.array([NAN, 1.0, 0.0, -0.0], dtype=np.float64).astype(NP[dt])
    b = np.array([1.0, NAN, -0.0, 0.0], dtype=np.float64).astype(NP[dt])
    mx, mn = binary("maximum", dt, a, b), binary("minimum", dt, a, b)
    assert np.isnan(mx[:2].astype(np.float64)).all() and np.isnan(mn[:2].astype(np.float64)).all()
    neg = 1 << (np.dtype(NP[dt]).itemsize * 8 - 1)
    assert bits(mx)[2:] == [0, 0] and bits(mn)[2:] == [neg, neg]


def test_maximum_minimum_nan_bits_f32() -> None:
    a = np.array([1.0, -1.0, 1.0, -1.0], dtype=np.float32)
    b = fbits("f32", [0xFFC00456, 0xFFC00456, 0x7FC00456, 0x7FC00456])
    assert bits(binary("maximum", "f32", a, b)) == [0x7FC00456, 0xFFC00456, 0x7FC00456, 0x7FC00456]
    assert bits(binary("minimum", "f32", a, b)) == [0xFFC00456, 0xFFC00456, 0x7FC00456, 0xFFC00456]
    # a NaN first operand is returned unchanged, even a signalling one
    s = fbits("f32", [0x7F800001, 0xFFC00001])
    assert bits(binary("maximum", "f32", s, np.array([1.0, 2.0], np.float32))) == [0x7F800001, 0xFFC00001]


def test_maximum_nan_bits_bf16_canonical() -> None:
    a = np.array([1.0, -1.0], dtype=BF16)
    b = fbits("bf16", [0xFFC5, 0xFF85])
    assert bits(binary("maximum", "bf16", a, b)) == [0x7FC0, 0xFFC0]
    assert bits(binary("minimum", "bf16", a, b)) == [0xFFC0, 0xFFC0]


def test_float_divide_and_remainder_rules() -> None:
    a = np.array([1.0, -1.0, 0.0, -0.0, 0.0, 5.5, 0.0], dtype=np.float32)
    b = np.array([0.0, 0.0, 0.0, 0.0, -0.0, INF, -3.0], dtype=np.float32)
    d = binary("divide", "f32", a, b)
    assert bits(d)[:2] == [0x7F800000, 0xFF800000] and bits(d)[5:] == [0, 0x80000000]
    assert np.isnan(d[2:5]).all()
    # remainder = C fmod: sign of the dividend, exact
    a = np.array([-7.0, 5.5, -5.5, 5.5, 7.0, 1.0, INF], dtype=np.float32)
    b = np.array([0.5, INF, 2.0, -2.0, 0.0, NAN, 2.0], dtype=np.float32)
    r = binary("remainder", "f32", a, b)
    assert bits(r)[:4] == bits(np.array([-0.0, 5.5, -1.5, 1.5], dtype=np.float32))
    assert np.isnan(r[4:]).all()
    assert binary("remainder", "bf16", np.array([7.0], BF16), np.array([-2.5], BF16)).astype(float).tolist() == [2.0]


def test_abs_negate_float_bits() -> None:
    x = fbits("f32", [0x80000000, 0xFFC00001, 0x00000001])
    assert bits(unary("abs", "f32", x)) == [0, 0x7FC00001, 1]
    assert bits(unary("negate", "f32", x)) == [0, 0x7FC00001, 0x80000001]


def test_compare_default_float() -> None:
    a = np.array([NAN, NAN, 0.0, 1.0], dtype=np.float32)
    b = np.array([NAN, 1.0, -0.0, 1.0], dtype=np.float32)
    res = {d: binary("compare", "f32", a, b, out="pred", attrs=f", direction={d}").tolist()
           for d in ("EQ", "NE", "LT", "LE", "GT", "GE")}
    assert res == {"EQ": [False, False, True, True], "NE": [True, True, False, False],
                   "LT": [False, False, False, False], "LE": [False, False, True, True],
                   "GT": [False, False, False, False], "GE": [False, False, True, True]}


def test_compare_totalorder() -> None:
    order = fbits("f32", [0xFFC00000, 0xFF800000, 0xBF800000, 0x80000001, 0x80000000, 0x00000000, 0x00000001,
                          0x3F800000, 0x7F800000, 0x7FC00000])   # -NaN < -inf < -1 < -sub < -0 < +0 < ... < NaN
    n = len(order)
    a = np.repeat(order, n)
    b = np.tile(order, n)
    lt = binary("compare", "f32", a, b, out="pred", attrs=", direction=LT, type=TOTALORDER")
    eq = binary("compare", "f32", a, b, out="pred", attrs=", direction=EQ, type=TOTALORDER")
    idx = np.arange(n)
    assert lt.reshape(n, n).tolist() == (idx[:, None] < idx[None, :]).tolist()
    assert eq.reshape(n, n).tolist() == np.eye(n, dtype=bool).tolist()   # +0 != -0, NaN == NaN (same bits)


def test_clamp_rules() -> None:
    hlo = """HloModule m
ENTRY e {
  lo = s32[] parameter(0)
  x = s32[4] parameter(1)
  hi = s32[] parameter(2)
  ROOT r = s32[4] clamp(lo, x, hi)
}"""
    assert run(hlo, np.int32(5), arr("s32", [-10, 3, 4, 100]), np.int32(3))[0].tolist() == [3, 3, 3, 3]
    hlo_f = hlo.replace("s32", "f32")
    r = run(hlo_f, np.float32(0.0), np.array([NAN, 2.0, -1.0, 0.5], np.float32), np.float32(1.0))[0]
    assert np.isnan(r[0]) and r[1:].tolist() == [1.0, 0.0, 0.5]
    r = run(hlo_f, np.float32(NAN), np.array([0.5, 2.0, -1.0, 0.5], np.float32), np.float32(1.0))[0]
    assert np.isnan(r).all()


# ---------------------------------------------------------------------------------------------
# reductions and dot
# ---------------------------------------------------------------------------------------------

REDUCE = """HloModule m
add {{
  x = {dt}[] parameter(0)
  y = {dt}[] parameter(1)
  ROOT s = {dt}[] add(x, y)
}}
ENTRY e {{
  p = {dt}{shape} parameter(0)
  z = {dt}[] constant(0)
  ROOT r = {dt}{out} reduce(p, z), dimensions={dims}, to_apply=add
}}"""


def test_bf16_reduce_rounds_every_add() -> None:
    # qkv-like row sums of bf16[4,16] with bf16 accumulation: 1 + 2^-8 is a tie in bf16 (ulp 2^-7
    # at 1) and rounds back to 1, so every row whose first element is 1 stays 1; an f32
    # accumulation rounded once would give 1 + 15 * 2^-8 -> 1.0625.
    x = np.full((4, 16), 2.0 ** -8, dtype=np.float64)
    x[:, 0] = 1.0
    x[3, 0] = 0.0    # starting from 0, the small values accumulate exactly: 15 * 2^-8
    hlo = REDUCE.format(dt="bf16", shape="[4,16]", out="[4]", dims="{1}")
    got = run(hlo, x.astype(BF16))[0].astype(np.float64)
    assert got.tolist() == [1.0, 1.0, 1.0, 15 * 2.0 ** -8]
    assert float(x[0].sum().astype(np.float32).astype(BF16)) == 1.0625   # what a single rounding gives


def test_reduce_tree_order_above_32() -> None:
    # f32[64]: windows [0:32] and [32:64] are summed separately, then added.
    # Sequentially, every +1 after 2^24 is a tie that rounds back to 2^24.
    x = np.zeros(64, np.float32)
    x[0] = 2.0 ** 24
    x[32:] = 1.0
    hlo = REDUCE.format(dt="f32", shape="[64]", out="[]", dims="{0}")
    assert run(hlo, x)[0].tolist() == 2.0 ** 24 + 32
    assert float(np.cumsum(x, dtype=np.float32)[-1]) == 2.0 ** 24         # the sequential order
    # f32[40]: padded to 64 with 12 init values in front (kSame: lo = pad // 2), so the windows
    # are x[0:20] and x[20:40]
    x = np.zeros(40, np.float32)
    x[0] = 2.0 ** 24
    x[20:] = 1.0
    hlo = REDUCE.format(dt="f32", shape="[40]", out="[]", dims="{0}")
    assert run(hlo, x)[0].tolist() == 2.0 ** 24 + 20    # not + 8 (padding at the end) nor + 0


def test_reduce_at_most_32_is_sequential() -> None:
    x = np.zeros(32, np.float32)
    x[0] = 2.0 ** 24
    x[16:] = 1.0
    hlo = REDUCE.format(dt="f32", shape="[32]", out="[]", dims="{0}")
    assert run(hlo, x)[0].tolist() == 2.0 ** 24


DOT = """HloModule m
ENTRY e {{
  a = {dt}[1,{k}] parameter(0)
  b = {dt}[{k},1] parameter(1)
  ROOT d = {out}[1,1] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}"""


def test_dot_f32_fuses_multiply_add() -> None:
    # acc = -(1 + 2^-11); then fma((1+2^-12), (1+2^-12), acc) = 2^-24 exactly, whereas the rounded
    # product 1 + 2^-11 (the 2^-24 term is a tie, to even) would cancel to 0.
    e = 2.0 ** -12
    a = np.array([[1.0, 1 + e]], np.float32)
    b = np.array([[-(1 + 2 * e)], [1 + e]], np.float32)
    got = run(DOT.format(dt="f32", k=2, out="f32"), a, b)[0]
    assert got.tolist() == [[2.0 ** -24]]
    separate = np.float32(np.float32(a[0, 1] * b[1, 0]) + np.float32(a[0, 0] * b[0, 0]))
    assert separate == 0.0


def test_dot_integer_accumulates_then_wraps() -> None:
    a = np.array([[100, 100]], np.int8)
    b = np.array([[100], [100]], np.int8)
    assert run(DOT.format(dt="s8", k=2, out="s32"), a, b)[0].tolist() == [[20000]]
    assert run(DOT.format(dt="s8", k=2, out="s8"), a, b)[0].tolist() == [[20000 - 78 * 256]]   # 32
    u = np.array([[200, 200]], np.uint8)
    assert run(DOT.format(dt="u8", k=2, out="s32"), u, u.T.copy())[0].tolist() == [[80000]]
    assert run(DOT.format(dt="u8", k=2, out="u8"), u, u.T.copy())[0].tolist() == [[80000 % 256]]


def test_dot_bf16_accumulates_in_f32_rounds_once() -> None:
    a = np.array([[1.0] + [2.0 ** -8] * 15], dtype=BF16)
    b = np.ones((16, 1), dtype=BF16)
    assert run(DOT.format(dt="bf16", k=16, out="bf16"), a, b)[0].astype(float).tolist() == [[1.0625]]


# ---------------------------------------------------------------------------------------------
# data movement
# ---------------------------------------------------------------------------------------------

def test_pad_negative_and_interior() -> None:
    hlo = """HloModule m
ENTRY e {
  x = s32[4] parameter(0)
  v = s32[] parameter(1)
  ROOT r = s32[8] pad(x, v), padding=-1_2_1
}"""
    assert run(hlo, arr("s32", [1, 2, 3, 4]), np.int32(0))[0].tolist() == [0, 2, 0, 3, 0, 4, 0, 0]
    hlo2 = """HloModule m
ENTRY e {
  x = s32[2,3] parameter(0)
  v = s32[] parameter(1)
  ROOT r = s32[3,2] pad(x, v), padding=1_0_0x-2_-1_1
}"""
    x = arr("s32", [[1, 2, 3], [4, 5, 6]])
    # dim 1 with interior 1: [1,9,2,9,3] -> crop 2 low, 1 high -> [2,9]
    assert run(hlo2, x, np.int32(9))[0].tolist() == [[9, 9], [2, 9], [5, 9]]


def test_dynamic_slice_clamps_start() -> None:
    hlo = """HloModule m
ENTRY e {
  x = s32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT r = s32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}
}"""
    x = arr("s32", [0, 1, 2, 3, 4])
    assert [run(hlo, x, np.int32(i))[0].tolist() for i in (-5, 0, 2, 3, 4, 100)] == [
        [0, 1], [0, 1], [2, 3], [3, 4], [3, 4], [3, 4]]
    # an unsigned index is read unsigned: 255 clamps high
    assert run(hlo.replace("i = s32[]", "i = u8[]"), x, np.uint8(255))[0].tolist() == [3, 4]


def test_dynamic_update_slice_clamps_start() -> None:
    hlo = """HloModule m
ENTRY e {
  x = s32[2,4] parameter(0)
  u = s32[1,2] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = s32[2,4] dynamic-update-slice(x, u, i, j)
}"""
    x = np.zeros((2, 4), np.int32)
    u = arr("s32", [[7, 8]])
    assert run(hlo, x, u, np.int32(5), np.int32(3))[0].tolist() == [[0, 0, 0, 0], [0, 0, 7, 8]]
    assert run(hlo, x, u, np.int32(-1), np.int32(-9))[0].tolist() == [[7, 8, 0, 0], [0, 0, 0, 0]]


def test_iota() -> None:
    hlo = """HloModule m
ENTRY e {
  ROOT r = s32[2,3] iota(), iota_dimension=1
}"""
    assert run(hlo)[0].tolist() == [[0, 1, 2], [0, 1, 2]]
    hlo = """HloModule m
ENTRY e {
  ROOT r = bf16[300] iota(), iota_dimension=0
}"""
    r = run(hlo)[0].astype(np.float64)
    assert r[255] == 255 and r[257] == 256 and r[259] == 260   # convert(i) rounds to nearest even


def test_bitcast_convert() -> None:
    assert unary("bitcast-convert", "f32", np.array([1.0, -0.0], np.float32), out="s32").tolist() == [
        0x3F800000, -(2 ** 31)]
    assert unary("bitcast-convert", "s8", arr("s8", [-1, -128]), out="u8").tolist() == [255, 128]
    assert bits(unary("bitcast-convert", "u32", arr("u32", [0x7F800001]), out="f32")) == [0x7F800001]
    assert bits(unary("bitcast-convert", "s16", arr("s16", [0x3F80]), out="bf16")) == [0x3F80]


def test_get_tuple_element() -> None:
    hlo = """HloModule m
ENTRY e {
  a = s8[2] parameter(0)
  b = f32[] parameter(1)
  t = (s8[2], f32[]) tuple(a, b)
  g1 = f32[] get-tuple-element(t), index=1
  g0 = s8[2] get-tuple-element(t), index=0
  n = s8[2] negate(g0)
  ROOT r = (f32[], s8[2]) tuple(g1, n)
}"""
    out = run(hlo, arr("s8", [1, -128]), np.float32(2.5))
    assert out[0].tolist() == 2.5 and out[0].shape == ()
    assert out[1].tolist() == [-1, -128]
