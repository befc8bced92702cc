"""The dot and reduce rule families: well-formed entries, honest dtype claims (the float variants
of integer-only rules really are false, with counterexamples that replay on the interpreter), and
bounded proofs of every rule for one or two dtypes. The full proofs (every claimed dtype) run with
``python -m accv prove dot reduce`` or ``pytest --runslow``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import z3

from rewrite_rules.dsl import FLOATS, INTS, Rule
from rewrite_rules.instantiate import emit, evaluator
from rewrite_rules.library import load
from semantics.dtypes import DTYPES
from semantics.interp import evaluate
from verif.prover import prove
from verif.replay import nan_signs_differ, outputs_differ
from verif.symbolic import Encoder

FAMILIES = ("dot", "reduce")


def _rules() -> dict[str, Rule]:
    return {n: r for n, r in load().items() if r.family in FAMILIES}


def _family(f: str) -> list[str]:
    return sorted(n for n, r in load().items() if r.family == f)


def _ranks(r: Rule) -> tuple[int, ...]:
    return r.ranks or (1, 2, 3)


#: rules whose bounded-3 proof takes more than a few seconds per dtype: proved at bound 2 in the
#: fast tests, at bound 3 under --runslow
HEAVY = {
    "slice(dot(a, b), rows) => dot(slice(a, rows), b)",
    "slice(dot(a, b), cols) => dot(a, slice(b, cols))",
    "dot(concat(a1, a2, free), b) => concat(dot(a1, b), dot(a2, b))",
    "dot(a, concat(b1, b2, free)) => concat(dot(a, b1), dot(a, b2))",
    "dot(concat(a1, a2, k), concat(b1, b2, k)) => add(dot(a1, b1), dot(a2, b2))",
    "dot(a, b, batch=0) => concat(dot(a[:t], b[:t]), dot(a[t:], b[t:]), batch=0)",
    "dot(dot(a, b), c) => dot(a, dot(b, c))",
    "dot(a, b) with K = 1 => fma(broadcast(a), broadcast(b), -0.0)",   # f32 FMA queries near 20 s at N = 3
    "dot(broadcast(v), b) => broadcast(dot(v, b))",
    "reduce(concat(x, y), MIN, {0}, max) => maximum(reduce(x, MIN), reduce(y, MIN))",
    "reduce(concat(x, y), 0, {0}, add) => add(reduce(x, 0), reduce(y, 0))",
    "reduce(slice(x, kept), v, {0}) => slice(reduce(x, v, {0}))",
    "reduce(reduce(x, v, {1}, max), v, {0}, max) => reduce(x, v, {0,1}, max)",
    "reduce(concat(x, y), false, {0}, or) => or(reduce(x, false), reduce(y, false))",
}


def _sample(r: Rule) -> list[tuple[str, int]]:
    """One (dtype, rank) instantiation at the rule's highest rank: a float type if the rule claims
    one (the delicate case: FMA chains, DAZ/FTZ, signed zeros), else a narrow integer type (else
    pred). The other claimed dtypes are proved under --runslow and by ``accv prove``."""
    prefer = ("bf16", "f16", "f32", "f64", "s8", "u8", "s16", "u16", "s32")
    d = next((d for d in prefer if d in r.dtypes), r.dtypes[0])
    return [(d, max(_ranks(r)))]


SAMPLES = [(n, d, k) for n in sorted(_rules()) for d, k in _sample(_rules()[n])]


# -- the library entries -------------------------------------------------------------------------------

def test_families_are_present_and_large_enough() -> None:
    assert len(_family("dot")) >= 14
    assert len(_family("reduce")) >= 12


def test_every_rule_is_documented_and_claimed() -> None:
    for name, r in _rules().items():
        assert r.expect == "valid", name
        assert r.dtypes, name
        assert "=>" in name, name
        assert r.build.__doc__ and r.build.__doc__.strip(), f"{name}: no docstring"
        assert r.desc and r.desc != name, name


def test_no_rule_is_vacuous() -> None:
    """Every claimed instantiation has a well-formed left side under its preconditions with sizes
    <= 3 (else a bounded 'proof' would be vacuous), and one with non-empty tensors unless the rule
    is about empty ones."""
    empty_ok = {"dot(a, b) with K = 0 => zeros", "reduce(x, v, {0}) with x.shape[0] = 0 => broadcast(v)"}
    for name, r in _rules().items():
        for d in {r.dtypes[0], r.dtypes[-1]}:        # well-formedness does not depend on the dtype
            for k in _ranks(r):
                ctx, lhs, _, pre = r.instantiate(d, k)
                enc = Encoder(ctx.dtype, shapes_only=True)
                enc.encode(lhs)
                sizes = [n for t in ctx.tensors.values() for n in t.shape]
                s = z3.Solver()
                s.add(*pre, *enc.wf, *[z3.And(n >= 0, n <= 3) for n in sizes])
                if name not in empty_ok:
                    s.add(*[n >= 1 for n in sizes])
                assert s.check() == z3.sat, f"{name} [{d} r{k}] has no well-formed instance"


# -- honest claims: what is not claimed for floats is false for floats ------------------------------

FLOAT_FALSE = [
    # (rule, a float dtype where it is false, rank)
    ("dot(dot(a, b), c) => dot(a, dot(b, c))", "f32", 2),
    ("dot(a, identity) => a", "f32", 2),
    ("dot(identity, a) => a", "bf16", 2),
    ("dot(a, zeros) => zeros", "f32", 2),
    ("dot(concat(a1, a2, k), concat(b1, b2, k)) => add(dot(a1, b1), dot(a2, b2))", "f32", 2),
    ("dot(multiply(a, broadcast(s)), b) => multiply(dot(a, b), broadcast(s))", "f32", 2),
    ("dot(negate(a), b) => negate(dot(a, b))", "f32", 2),
    ("reduce(concat(x, y), 0, {0}, add) => add(reduce(x, 0), reduce(y, 0))", "f32", 1),
    ("reduce(concat(x, y), MIN, {0}, max) => maximum(reduce(x, MIN), reduce(y, MIN))", "f32", 1),
    ("reduce(reverse(x, {0}), v, {0}, add) => reduce(x, v, {0}, add)", "bf16", 1),
    ("reduce(reverse(x, {0}), v, {0}, max) => reduce(x, v, {0}, max)", "f32", 1),   # the NaN's sign
    ("reduce(transpose(x), v, {0,1}, add) => reduce(x, v, {0,1}, add)", "f32", 2),
    ("reduce(reduce(x, 0, {1}, add), 0, {0}, add) => reduce(x, 0, {0,1}, add)", "f32", 2),
    ("reduce(reduce(x, v, {1}, max), v, {0}, max) => reduce(x, v, {0,1}, max)", "f32", 2),
    ("reduce(multiply(x, broadcast(s)), 0, {0}, add) => multiply(reduce(x, 0, {0}, add), s)", "f32", 1),
]


@pytest.mark.parametrize("name,dtype,rank", FLOAT_FALSE, ids=[f"{n[:40]}-{d}" for n, d, _ in FLOAT_FALSE])
def test_integer_only_rules_are_false_for_floats(name: str, dtype: str, rank: int) -> None:
    r = _rules()[name]
    assert not set(r.dtypes) & set(FLOATS), f"{name} claims a float type"
    res = prove(dataclasses.replace(r, dtypes=(dtype,)), dtype, rank, timeout_s=20.0)
    assert res.status == "refuted", res.line()
    cex = res.counterexample
    assert cex is not None
    assert outputs_differ(cex.lhs_out, cex.rhs_out) or nan_signs_differ(cex.lhs_out, cex.rhs_out)


def test_reduce_of_reshape_is_false_for_floats_beyond_the_bound() -> None:
    """Bounded 3 cannot see XLA's 32-element windows: the f32 version of the reshape rule passes a
    bounded proof, yet differs on f32[2,40]. The library claims it for integers only."""
    name = "reduce(reshape(x, [m*n]), 0, {0}, add) => reduce(x, 0, {0,1}, add)"
    r = _rules()[name]
    assert set(r.dtypes) == set(INTS)
    f32 = dataclasses.replace(r, dtypes=("f32",))
    assert prove(f32, "f32", 2, timeout_s=20.0, bound=2).status == "proved"
    ctx, lhs, rhs, _ = r.instantiate("f32", 2)
    m, n = ctx.tensors["x"].shape
    gl, gr = emit(ctx.tensors, [lhs, rhs], DTYPES["f32"], evaluator(subst={m: 2, n: 40}))
    rng = np.random.default_rng(1)
    differ = 0
    for _ in range(10):
        x = (rng.standard_normal((2, 40)) * 10.0 ** rng.integers(-3, 4, (2, 40))).astype(np.float32)
        differ += outputs_differ(evaluate(gl, [x])[0], evaluate(gr, [x])[0])
    assert differ > 0
    # the integer version agrees at that size
    ctx, lhs, rhs, _ = r.instantiate("s32", 2)
    m, n = ctx.tensors["x"].shape
    gl, gr = emit(ctx.tensors, [lhs, rhs], DTYPES["s32"], evaluator(subst={m: 2, n: 40}))
    x = rng.integers(-2**31, 2**31, (2, 40)).astype(np.int32)
    assert not outputs_differ(evaluate(gl, [x])[0], evaluate(gr, [x])[0])


def test_reduce_of_one_element_ignores_init() -> None:
    """The semantics behind the size-1 rule and the identity-init preconditions: a reduce over one
    element does not apply the init value (XLA's reshape), a reduce over none returns it."""
    r = _rules()["reduce(x, v, {0}) with x.shape[0] = 1 => reshape(x)"]
    ctx, lhs, _, _ = r.instantiate("s32", 1)
    (n,) = ctx.tensors["x"].shape
    for size, want in ((1, 5), (0, 100), (2, 5 + 7 + 100)):
        (g,) = emit(ctx.tensors, [lhs], DTYPES["s32"], evaluator(subst={n: size}))
        x = np.array([5, 7][:size], dtype=np.int32)
        assert list(g.entry.params) == ["v", "x"]     # parameters sorted by name
        assert evaluate(g, [np.array(100, dtype=np.int32), x])[0] == want


# -- proofs -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype,rank", SAMPLES, ids=[f"{n[:50]}-{d}" for n, d, _ in SAMPLES])
def test_sample_proofs(name: str, dtype: str, rank: int) -> None:
    r = _rules()[name]
    bound = 2 if name in HEAVY else 3
    res = prove(r, dtype, rank, timeout_s=20.0, bound=bound)
    assert res.status == "proved", res.line()
    assert res.generality == f"bounded {bound}"


HEAVY_SAMPLES = [s for s in SAMPLES if s[0] in HEAVY]


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype,rank", HEAVY_SAMPLES, ids=[f"{n[:50]}-{d}" for n, d, _ in HEAVY_SAMPLES])
def test_sample_proofs_bound_3(name: str, dtype: str, rank: int) -> None:
    res = prove(_rules()[name], dtype, rank, timeout_s=20.0, bound=3)
    assert res.status == "proved", res.line()
    assert res.generality == "bounded 3"


ALL_CLAIMS = [(n, d, k) for n in sorted(_rules()) for d in _rules()[n].dtypes for k in _ranks(_rules()[n])]


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype,rank", ALL_CLAIMS, ids=[f"{n[:50]}-{d}-r{k}" for n, d, k in ALL_CLAIMS])
def test_every_claim(name: str, dtype: str, rank: int) -> None:
    res = prove(_rules()[name], dtype, rank, timeout_s=20.0, bound=3)
    assert res.status == "proved", res.line()
