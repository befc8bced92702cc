"""Soundness of the prover on rules it once proved although they are false (issue 30).

* NaN bits: a rule whose truth depends on a NaN's sign or payload (``compare`` with TOTALORDER,
  ``bitcast-convert`` of a float) must be refuted with a counterexample whose NaN input replays on
  the interpreter.
* ill-formed right sides: a right side that does not type-check (operand dtypes, a dimension the
  operand lacks) is a refutation with the reason, even under a size precondition that keeps the
  quick random pre-check at small sizes away.

Every rule has the precondition n >= 4, so the pre-check (sizes <= 2) never sees an instance and
the verdict comes from the symbolic prover (the one that proved them before).
"""

from __future__ import annotations

import numpy as np

from rewrite_rules.dsl import Rule, bitcast, compare, full, op, reverse, rule, select
from semantics.interp import evaluate
from verif.prover import prove
from verif.replay import outputs_differ

BAD: dict[str, Rule] = {}


@rule("total-order compare(x, +inf, GT) => compare(x, x, NE)", family="sound", dtypes=("f32", "bf16"),
      ranks=(1,), expect="invalid", registry=BAD)
def _total_gt_inf(c):
    """False for a NaN with its sign bit set (0xFFC00000, XLA's 0/0): below -inf in total order."""
    x = c.tensor("x")
    inf = full(float("inf"), x.shape)
    return compare(x, inf, "GT", total=True), compare(x, x, "NE"), [x.shape[0] >= 4]


@rule("select(isnan(x), bitcast(x), 0) => select(isnan(x), 0x7FC00000, 0)", family="sound", dtypes=("f32",),
      ranks=(1,), expect="invalid", registry=BAD)
def _bitcast_nan(c):
    """False for every NaN but the positive quiet one."""
    x = c.tensor("x")
    isnan = compare(x, x, "NE")
    zero = full(0, x.shape, "u32")
    return (select(isnan, bitcast(x, "u32"), zero), select(isnan, full(0x7FC00000, x.shape, "u32"), zero),
            [x.shape[0] >= 4])


@rule("add(x, bitcast(y)) => add(x, y) with y: s8", family="sound", dtypes=("u8",), ranks=(1,), expect="invalid",
      registry=BAD)
def _mixed_add(c):
    """The right side adds a u8 and an s8 tensor: not a valid graph (the bits agree)."""
    x, y = c.tensor("x"), c.tensor("y", dtype="s8")
    return op("add", x, bitcast(y, "u8")), op("add", x, y), [x.shape[0] >= 4]


@rule("reverse(x, {1}) of a vector => x", family="sound", dtypes=("s32",), ranks=(1,), expect="invalid",
      registry=BAD)
def _reverse_bad_dim(c):
    """Reverses dimension 1 of a vector: not a valid graph."""
    x = c.tensor("x")
    return reverse(reverse(x, (0,)), (0,)), reverse(x, (1,)), [x.shape[0] >= 4]


def _refuted_with_nan_input(name: str, dtype: str) -> None:
    res = prove(BAD[name], dtype, 1, timeout_s=20.0)
    assert res.status == "refuted", res.line()
    cex = res.counterexample
    assert cex is not None
    x = cex.inputs["x"]
    assert np.isnan(x.astype(np.float64)).any()
    # replays on the interpreter: the interpreter's outputs differ for the model's NaN
    ctx, lhs, rhs, _ = BAD[name].instantiate(dtype, 1)
    assert outputs_differ(cex.lhs_out, cex.rhs_out)
    assert x.shape[0] >= 4


def test_total_order_compare_of_a_negative_nan_is_refuted() -> None:
    _refuted_with_nan_input("total-order compare(x, +inf, GT) => compare(x, x, NE)", "f32")
    _refuted_with_nan_input("total-order compare(x, +inf, GT) => compare(x, x, NE)", "bf16")


def test_bitcast_of_a_nan_payload_is_refuted() -> None:
    _refuted_with_nan_input("select(isnan(x), bitcast(x), 0) => select(isnan(x), 0x7FC00000, 0)", "f32")


def test_the_refutation_replays_on_the_interpreter_with_xla_nan() -> None:
    """The concrete case of issue 30: x = 0xFFC00000 vs 0x7FC00000 against +inf in total order."""
    from rewrite_rules.instantiate import emit, evaluator

    r = BAD["total-order compare(x, +inf, GT) => compare(x, x, NE)"]
    ctx, lhs, rhs, _ = r.instantiate("f32", 1)
    (n,) = ctx.tensors["x"].shape
    gl, gr = emit(ctx.tensors, [lhs, rhs], ctx.dtype, evaluator(subst={n: 4}))
    x = np.array([0xFFC00000, 0x7FC00000, 0, 0x7F800000], dtype=np.uint32).view(np.float32)
    assert evaluate(gl, [x])[0].tolist() == [False, True, False, False]
    assert evaluate(gr, [x])[0].tolist() == [True, True, False, False]


def test_right_side_with_mixed_operand_dtypes_is_refuted() -> None:
    res = prove(BAD["add(x, bitcast(y)) => add(x, y) with y: s8"], "u8", 1, timeout_s=20.0)
    assert res.status == "refuted", res.line()
    assert "right side" in res.detail and "s8" in res.detail


def test_right_side_reversing_a_missing_dimension_is_refuted() -> None:
    res = prove(BAD["reverse(x, {1}) of a vector => x"], "s32", 1, timeout_s=20.0)
    assert res.status == "refuted", res.line()
    assert "right side" in res.detail and "dimension" in res.detail


@rule("transpose(dot(a, b)) => dot(transpose(b), transpose(a)) on floats", family="sound",
      dtypes=("bf16", "f32"), ranks=(2,), expect="invalid", registry=BAD)
def _dot_transpose_float(c):
    """Every value agrees, but fma(x, y, c) returns x's NaN where x and y are both NaN: the right
    side's products have their operands swapped, so their NaN has the other operand's sign (the
    qkv fuzz finding: ``gemm(b^T, a^T)`` for ``transpose(dot(a, b))``)."""
    from rewrite_rules.dsl import dot, transpose

    a, b = c.tensor("a"), c.tensor("b")
    return (transpose(dot(a, b, (1,), (0,)), (1, 0)),
            dot(transpose(b, (1, 0)), transpose(a, (1, 0)), (1,), (0,)), [])


def test_swapping_a_float_dots_operands_is_refuted_by_the_nan_sign() -> None:
    """The SMT dot keeps each product's operand order and the provers compare NaN signs where the
    reference's rule is modelled: the rule is refuted with NaN operands of both signs, and the
    counterexample replays (the interpreter's NaN outputs differ in sign only)."""
    for dt in ("bf16", "f32"):
        res = prove(BAD["transpose(dot(a, b)) => dot(transpose(b), transpose(a)) on floats"], dt, 2,
                    timeout_s=60.0)
        assert res.status == "refuted", res.line()
        from verif.replay import nan_signs_differ

        cex = res.counterexample
        assert cex is not None
        assert nan_signs_differ(cex.lhs_out, cex.rhs_out)
        assert not outputs_differ(cex.lhs_out, cex.rhs_out)   # the values agree: NaN sign only


def test_library_claims_dot_operand_swaps_for_integers_only() -> None:
    from rewrite_rules.dsl import INTS
    from rewrite_rules.library import load

    lib = load()
    for name in ("transpose(dot(a, b)) => dot(transpose(b), transpose(a))",
                 "dot(a, b, lc=1, rc=0) => transpose(dot(b, a, lc=0, rc=1))"):
        assert tuple(lib[name].dtypes) == tuple(INTS), name
