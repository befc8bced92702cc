"""The arith, minmax, compare_select, convert and gemmini rule families: well-formed entries, dtype
claims that respect the float semantics (DAZ/FTZ, signed zeros, NaN), and a sample of quick proofs.
The full proofs run with ``python -m accv prove arith minmax compare_select convert gemmini``.
"""

from __future__ import annotations

import pytest

from rewrite_rules.dsl import FLOATS
from rewrite_rules.library import load
from verif.prover import prove

FAMILIES = ("arith", "minmax", "compare_select", "convert", "gemmini")


def _rules():
    return {n: r for n, r in load().items() if r.family in FAMILIES}


def test_families_are_present_and_large_enough() -> None:
    rules = _rules()
    fams = {r.family for r in rules.values()}
    assert fams == set(FAMILIES)
    assert len(rules) >= 50


def test_every_rule_is_documented_and_valid() -> None:
    for name, r in _rules().items():
        assert r.expect == "valid"
        assert r.dtypes, name
        assert r.build.__doc__ and r.build.__doc__.strip(), f"{name}: no docstring"
        assert "=>" in name, name


@pytest.mark.parametrize("name", [
    "add(x, 0) => x", "multiply(x, 0) => 0", "subtract(0, x) => negate(x)", "subtract(x, x) => 0",
    "add(add(x, y), z) => add(x, add(y, z))", "negate(subtract(x, y)) => subtract(y, x)",
    "maximum(x, minimum(x, y)) => x", "compare(x, x, EQ) => true", "add(x, negate(x)) => 0", "not(compare(a, b, LT)) => compare(a, b, GE)",
    "dot(x, I) => x",
])
def test_float_false_rules_claim_no_float(name: str) -> None:
    assert not set(_rules()[name].dtypes) & set(FLOATS)


@pytest.mark.parametrize("name", ["multiply(x, 1) => x", "maximum(x, x) => x", "divide(x, 1) => x"])
def test_daz_rules_claim_only_f16_among_floats(name: str) -> None:
    assert set(_rules()[name].dtypes) & set(FLOATS) == {"f16"}


@pytest.mark.parametrize("name,dtype,rank", [
    ("add(add(x, y), z) => add(x, add(y, z))", "s8", 2),
    ("multiply(x, add(y, z)) => add(multiply(x, y), multiply(x, z))", "u16", 1),
    ("negate(negate(x)) => x", "f32", 1),
    ("xor(xor(x, y), y) => x", "pred", 1),
    ("maximum(x, minimum(y, z)) => minimum(maximum(x, y), maximum(x, z))", "s32", 1),
    ("add(x, negate(x)) => 0", "s8", 2),
    ("clamp(lo, x, hi) => minimum(maximum(lo, x), hi)", "f32", 1),
    ("compare(a, b, LT) => compare(b, a, GT)", "f32", 1),
    ("select(not(p), a, b) => select(p, b, a)", "bf16", 2),
    ("convert(clamp(MIN_T, convert(x, s32), MAX_T), T) => x", "s8", 1),
    ("convert(convert(x, f32), T) => x", "bf16", 1),
    ("maximum(x, -128) => x on s8 (ReLU flag off)", "s8", 2),
    ("convert_s32(x) => wrap20(convert_s32(x)) (narrow ints)", "s16", 1),
])
def test_sample_proofs(name: str, dtype: str, rank: int) -> None:
    r = _rules()[name]
    assert dtype in r.dtypes
    res = prove(r, dtype, rank, timeout_s=20.0)
    assert res.status == "proved", res.detail
    assert res.generality == "symbolic"


def test_no_rule_is_vacuous() -> None:
    """Each instantiation has a well-formed left side under its preconditions (else 'proved' would be
    vacuous: e.g. a clamp with rank-0 bounds is ill-formed for the symbolic encoder)."""
    import z3

    from verif.symbolic import Encoder
    for name, r in _rules().items():
        for d in r.dtypes:
            for k in (r.ranks or (1, 2))[:2]:
                ctx, lhs, rhs, pre = r.instantiate(d, k)
                enc = Encoder(ctx.dtype, shapes_only=True)
                enc.encode(lhs)
                s = z3.Solver()
                s.add(*pre, *enc.wf, *[n >= 1 for t in ctx.tensors.values() for n in t.shape])
                assert s.check() == z3.sat, f"{name} [{d} r{k}] has no well-formed non-empty instance"


GEMMINI_SCALE_RULES = [
    "mvin(x, scale=1.0) => x on s8",
    "convert_s8(round-nearest-even(convert_f32(x) * 1.0)) => x",
    "convert_T(round-nearest-even(convert_f32(x) * 1.0)) => x (narrow ints)",
    "convert_s8(clamp(-128, y, 127)) => mvout(y, 1.0, relu=0)",
    "maximum(convert_s8(clamp(-128, y, 127)), 0) => mvout(y, 1.0, relu=1)",
    "convert_s8(clamp(0, y, 127)) => mvout(y, 1.0, relu=1)",
    "maximum(x, 0) => mvout(convert_s32(x), 1.0, relu=1) on s8",
    "convert_s8(clamp(-128, negate(convert_s32(x)), 127)) => mvin(x, -1.0) on s8",
    "negate(maximum(x, -127)) => mvin(x, -1.0) on s8",
    "convert_s8(clamp(-128, convert_s32(x) * 2, 127)) => mvin(x, 2.0) on s8",
]


@pytest.mark.parametrize("name", GEMMINI_SCALE_RULES)
def test_gemmini_scale_rules_exhaustively(name: str) -> None:
    """The f32-scale-path rules (z3 needs > 20 s on them): every 8/16-bit input, and s32 edge values
    (int32 -> f32 rounding region included), evaluated on the reference interpreter."""
    import numpy as np

    from rewrite_rules.instantiate import emit, evaluator
    from semantics.interp import evaluate
    from verif.replay import outputs_differ

    r = _rules()[name]
    for d in r.dtypes:
        ctx, lhs, rhs, _ = r.instantiate(d, 1)
        (v,) = ctx.tensors.values()
        dt = ctx.dtype.np
        if d == "s32":
            edges = [-2**31, -2**31 + 1, -2**24 - 1, -2**24, -129, -128, -127, -1, 0, 1, 126, 127, 128, 255,
                     2**24, 2**24 + 1, 2**31 - 65, 2**31 - 64, 2**31 - 1]
            rng = np.random.default_rng(0)
            vals = np.concatenate([np.array(edges, dtype=np.int64),
                                   rng.integers(-2**31, 2**31, 4000), rng.integers(-300, 300, 600)]).astype(dt)
        else:
            info = np.iinfo(dt)
            vals = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64).astype(dt)
        gl, gr = emit(ctx.tensors, [lhs, rhs], ctx.dtype, evaluator(subst={v.shape[0]: len(vals)}), r.name)
        lo, ro = evaluate(gl, [vals])[0], evaluate(gr, [vals])[0]
        assert not outputs_differ(lo, ro), (d, vals[lo != ro][:5])
