"""Deliberately wrong rewrite rules: the prover must refute every one with a counterexample that
replays on the reference interpreter (prove() raises ProverBug when a counterexample does not).

The rules live in a private registry (never in the library). Each is instantiated at one dtype and
rank where it is false, and the test checks that the two sides' outputs really differ
(:func:`verif.replay.outputs_differ`, or :func:`verif.replay.nan_signs_differ` for a NaN output of
another sign, which the provers compare where the reference's NaN rule is modelled), unless the
refutation is that the right side is not a valid graph at all.
"""

from __future__ import annotations

import time

import pytest

from rewrite_rules.dsl import (
    Rule,
    broadcast,
    clamp,
    compare,
    concat,
    convert,
    dot,
    dslice,
    full,
    iota,
    op,
    pad,
    reduce,
    reshape,
    reverse,
    rule,
    select,
    slice_,
    transpose,
    vadd,
    vsub,
)
from verif.prover import prove
from verif.replay import nan_signs_differ, outputs_differ

WRONG: dict[str, Rule] = {}
#: rule name -> (dtype, rank) at which it is false
WHERE: dict[str, tuple[str, int]] = {}


def wrong(name: str, dtype: str, rank: int = 1):
    def deco(fn):
        r = rule(name, family="wrong", dtypes=(dtype,), ranks=(rank,), expect="invalid", registry=WRONG)(fn)
        WHERE[name] = (dtype, rank)
        return r
    return deco


# --- data movement ---------------------------------------------------------------------------------

@wrong("slice(slice(x)) => slice(x) with limit off by one", "s32")
def _w_slice_off_by_one(c):
    x = c.tensor("x")
    s1, e1, s2, e2 = c.ints("s1"), c.ints("e1"), c.ints("s2"), c.ints("e2")
    return slice_(slice_(x, s1, e1), s2, e2), slice_(x, vadd(s1, s2), [s1[0] + e2[0] + 1]), []


@wrong("transpose(transpose(x, p), p) => x for a 3-cycle p", "f32", 3)
def _w_transpose(c):
    x = c.tensor("x")
    return transpose(transpose(x, (1, 2, 0)), (1, 2, 0)), x, []


@wrong("slice(pad(x)) => slice(x) without the inside-the-data precondition", "s8")
def _w_slice_pad(c):
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    lo, hi, s, e = c.ints("lo"), c.ints("hi"), c.ints("s"), c.ints("e")
    pre = [lo[0] >= 0, hi[0] >= 0]
    return slice_(pad(x, v, lo, hi), s, e), slice_(x, vsub(s, lo), vsub(e, lo)), pre


@wrong("concat(x, y) => concat(y, x)", "u8")
def _w_concat_order(c):
    x, y = c.tensor("x"), c.tensor("y")
    return concat(0, x, y), concat(0, y, x), []


@wrong("broadcast(v, [n, n], dims=(0,)) => broadcast(v, [n, n], dims=(1,))", "s16")
def _w_broadcast_dims(c):
    v = c.tensor("v")
    n = v.shape[0]
    return broadcast(v, [n, n], (0,)), broadcast(v, [n, n], (1,)), []


@wrong("pad(x, interior=1) => pad(x, high=n-1)", "s32")
def _w_pad_interior(c):
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    n = x.shape[0]
    return pad(x, v, [0], [0], [1]), pad(x, v, [0], [n - 1], [0]), []


@wrong("reshape(x, [b, a]) => transpose(x)", "s32", 2)
def _w_reshape_order(c):
    x = c.tensor("x")
    a, b = x.shape
    return reshape(x, [b, a]), transpose(x, (1, 0)), []


@wrong("dynamic-slice(concat(x, y), i) => dynamic-slice(x, i) (start clamping ignored)", "s32")
def _w_dslice_clamp(c):
    x, y, i = c.tensor("x"), c.tensor("y"), c.tensor("i", rank=0, dtype="s32")
    (k,) = c.ints("k")
    return dslice(concat(0, x, y), [i], [k]), dslice(x, [i], [k]), [k <= x.shape[0]]


@wrong("reverse(x) => x", "s8")
def _w_reverse(c):
    x = c.tensor("x")
    return reverse(x, (0,)), x, []


# --- selects, clamps, compares ---------------------------------------------------------------------

@wrong("select(p, a, b) => select(p, b, a)", "f32")
def _w_select_swap(c):
    a, b, p = c.tensor("a"), c.tensor("b"), c.tensor("p", dtype="pred")
    return select(p, a, b), select(p, b, a), []


@wrong("clamp(lo, x, hi) => clamp(hi, x, lo)", "s32")
def _w_clamp_swap(c):
    x, lo, hi = c.tensor("x"), c.tensor("lo"), c.tensor("hi")
    return clamp(lo, x, hi), clamp(hi, x, lo), []


@wrong("compare(x, x, EQ) => true for f32 (NaN)", "f32")
def _w_eq_refl(c):
    x = c.tensor("x")
    return compare(x, x, "EQ"), full(True, x.shape, "pred"), []


@wrong("not(compare(a, b, LT)) => compare(a, b, GE) for f32 (NaN)", "f32")
def _w_not_lt(c):
    a, b = c.tensor("a"), c.tensor("b")
    return op("not", compare(a, b, "LT")), compare(a, b, "GE"), []


@wrong("maximum(x, x) => x for f32 (DAZ)", "f32")
def _w_max_self(c):
    x = c.tensor("x")
    return op("maximum", x, x), x, []


@wrong("maximum(x, minimum(x, y)) => x for f32 (NaN y)", "f32")
def _w_absorb(c):
    x, y = c.tensor("x"), c.tensor("y")
    return op("maximum", x, op("minimum", x, y)), x, []


# --- float arithmetic ------------------------------------------------------------------------------

@wrong("add(add(x, y), z) => add(x, add(y, z)) for f32", "f32")
def _w_reassoc(c):
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return op("add", op("add", x, y), z), op("add", x, op("add", y, z)), []


@wrong("add(x, 0) => x for f32 (-0.0, DAZ)", "f32")
def _w_add_zero(c):
    x = c.tensor("x")
    return op("add", x, full(0, x.shape)), x, []


@wrong("add(x, 0) => x for bf16 (-0.0, DAZ)", "bf16")
def _w_add_zero_bf16(c):
    x = c.tensor("x")
    return op("add", x, full(0, x.shape)), x, []


@wrong("multiply(x, 1) => x for f32 (DAZ on subnormals)", "f32")
def _w_mul_one(c):
    x = c.tensor("x")
    return op("multiply", x, full(1, x.shape)), x, []


@wrong("multiply(x, 0) => 0 for f32 (NaN, inf, -0)", "f32")
def _w_mul_zero(c):
    x = c.tensor("x")
    return op("multiply", x, full(0, x.shape)), full(0, x.shape), []


@wrong("negate(subtract(a, b)) => subtract(b, a) for f32 (0 - 0)", "f32")
def _w_neg_sub(c):
    a, b = c.tensor("a"), c.tensor("b")
    return op("negate", op("subtract", a, b)), op("subtract", b, a), []


@wrong("subtract(0, x) => negate(x) for f64 (0 - 0 = +0)", "f64")
def _w_zero_sub(c):
    x = c.tensor("x")
    return op("subtract", full(0, x.shape), x), op("negate", x), []


@wrong("subtract(x, x) => 0 for f64 (inf, NaN)", "f64")
def _w_sub_self(c):
    x = c.tensor("x")
    return op("subtract", x, x), full(0, x.shape), []


@wrong("add(x, negate(x)) => 0 for f32 (inf + -inf = NaN)", "f32")
def _w_add_neg_self(c):
    x = c.tensor("x")
    return op("add", x, op("negate", x)), full(0, x.shape), []


@wrong("remainder(x, 1) => 0 for f32 (NaN, inf, -0)", "f32")
def _w_rem_one(c):
    x = c.tensor("x")
    return op("remainder", x, full(1, x.shape)), full(0, x.shape), []


@wrong("divide(x, x) => 1 for s32 (0 / 0 = -1)", "s32")
def _w_div_self(c):
    x = c.tensor("x")
    return op("divide", x, x), full(1, x.shape), []


@wrong("abs(negate(x)) => abs(x) for u8 (negate wraps)", "u8")
def _w_abs_neg_unsigned(c):
    x = c.tensor("x")
    return op("abs", op("negate", x)), op("abs", x), []


@wrong("maximum(x, y) => negate(minimum(negate(x), negate(y))) for s8 (MIN)", "s8")
def _w_max_dual_int(c):
    x, y = c.tensor("x"), c.tensor("y")
    return op("maximum", x, y), op("negate", op("minimum", op("negate", x), op("negate", y))), []


# --- conversions -----------------------------------------------------------------------------------

@wrong("convert(convert(x, bf16), f32) => x for f32", "f32")
def _w_bf16_roundtrip(c):
    x = c.tensor("x")
    return convert(convert(x, "bf16"), "f32"), x, []


@wrong("convert(convert(x, bf16), s32) => x for s32 (large values round)", "s32")
def _w_int_bf16(c):
    x = c.tensor("x")
    return convert(convert(x, "bf16"), "s32"), x, []


@wrong("convert(convert(x, f32), s32) => x for s32 (2^24 + 1)", "s32")
def _w_int_f32(c):
    x = c.tensor("x")
    return convert(convert(x, "f32"), "s32"), x, []


@wrong("convert(convert(x, f64), f32) => x for f32 (f32 -> f64 is DAZ)", "f32")
def _w_f64_roundtrip(c):
    x = c.tensor("x")
    return convert(convert(x, "f64"), "f32"), x, []


@wrong("convert(convert(x, s8), s32) => x for s32 (low bits only)", "s32")
def _w_narrow(c):
    x = c.tensor("x")
    return convert(convert(x, "s8"), "s32"), x, []


# --- Gemmini-shaped claims -------------------------------------------------------------------------

def _mvin(x, scale):
    sm = op("multiply", convert(x, "f32"), full(scale, x.shape, "f32"))
    # broadcast bounds: a clamp with rank-0 bounds is (wrongly) ill-formed for verif.symbolic
    lo, hi = full(-128.0, x.shape, "f32"), full(127.0, x.shape, "f32")
    return convert(clamp(lo, op("round-nearest-even", sm), hi), "s8")


@wrong("negate(x) => mvin(x, -1.0) for s8 (-(-128) wraps, mvin saturates)", "s8")
def _w_neg_mvin(c):
    x = c.tensor("x")
    return op("negate", x), _mvin(x, -1.0), []


@wrong("negate(x) => multiply(x, -1) for f32 (DAZ)", "f32")
def _w_neg_mul(c):
    x = c.tensor("x")
    return op("negate", x), op("multiply", x, full(-1, x.shape)), []


@wrong("convert_s32(rne(convert_f32(y) * 1.0)) => y for s32 (no saturation: rounding shows)", "s32")
def _w_mvout_nosat(c):
    y = c.tensor("y")
    sm = op("multiply", convert(y, "f32"), full(1.0, y.shape, "f32"))
    return convert(op("round-nearest-even", sm), "s32"), y, []


def _eye(k, dtype):
    return convert(compare(iota(0, [k, k], "s32"), iota(1, [k, k], "s32"), "EQ"), dtype)


@wrong("dot(x, I) => x for f32 (inf * 0 = NaN)", "f32", 2)
def _w_dot_eye(c):
    x = c.tensor("x")
    return dot(x, _eye(x.shape[1], "f32"), (1,), (0,)), x, []


@wrong("reverse(x) => dot(x, J) for f32 (inf * 0 = NaN)", "f32")
def _w_rev_dot(c):
    x = c.tensor("x")
    n = x.shape[0]
    j = convert(compare(iota(0, [n, n], "s32"), reverse(iota(1, [n, n], "s32"), (1,)), "EQ"), "f32")
    return reverse(x, (0,)), dot(x, j, (0,), (0,)), []


@wrong("reduce(x, v, add) => reduce(reverse(x), v, add) for f32 (order of the sum)", "f32")
def _w_reduce_reverse(c):
    x, v = c.tensor("x"), c.tensor("v", rank=0)
    return reduce(x, v, (0,), "add"), reduce(reverse(x, (0,)), v, (0,), "add"), []


# ---------------------------------------------------------------------------------------------------

def test_enough_wrong_rules() -> None:
    assert len(WRONG) >= 24
    assert all(r.expect == "invalid" for r in WRONG.values())


def test_wrong_rules_not_in_library() -> None:
    from rewrite_rules.library import load
    lib = load()
    assert not set(WRONG) & set(lib)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_rule_is_refuted(name: str) -> None:
    r = WRONG[name]
    dtype, rank = WHERE[name]
    t0 = time.perf_counter()
    res = prove(r, dtype, rank, timeout_s=10.0, bound=3)   # raises ProverBug if a counterexample does not replay
    assert res.status == "refuted", (res.status, res.detail)
    invalid_rhs = "not a valid graph" in res.detail
    if not invalid_rhs:
        cex = res.counterexample
        assert cex is not None
        assert outputs_differ(cex.lhs_out, cex.rhs_out) or nan_signs_differ(cex.lhs_out, cex.rhs_out), \
            cex.summary()
    assert time.perf_counter() - t0 < 30
