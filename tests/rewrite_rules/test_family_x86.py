"""The x86 rule family: z3 proves it (up to NaN payloads, the SMT equality), and the reference
interpreter shows both sides equal bit for bit, NaN payloads and signs included, on every f32 edge
class and 2^16 random bit patterns; the bare-VMAXPS variants are wrong and are caught."""

from __future__ import annotations

import numpy as np
import pytest

from rewrite_rules.dsl import convert, full, op, rule
from rewrite_rules.instantiate import emit, evaluator
from rewrite_rules.library import load
from rewrite_rules.x86 import _sat_u8, cvttps2dq, maxps, minps, pmovusdb
from semantics.interp import evaluate
from verif.prover import prove

RULES = {n: r for n, r in load().items() if r.family == "x86"}


def _bits() -> np.ndarray:
    edges = [0, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F000000, 0xBF000000, 0x3F7FFFFF,
             0x3F800000, 0xBF800000, 0x437F0000, 0x437F8000, 0x437FFFFF, 0x43800000, 0x4F000000, 0xCF000000,
             0x4F000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
             0xFF800001, 0x7FA12345, 0xFFBFFFFF, 0x7FFFFFFF]
    rng = np.random.default_rng(0)
    return np.concatenate([np.array(edges, np.uint32), rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64)
                           .astype(np.uint32)])


def _sides(r, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ctx, lhs, rhs, pre = r.instantiate("f32", 1)
    assert not pre
    (v,) = ctx.tensors.values()
    gl, gr = emit(ctx.tensors, [lhs, rhs], ctx.dtype, evaluator(subst={v.shape[0]: len(vals)}), r.name)
    x = vals.view(np.float32)
    return np.asarray(evaluate(gl, [x])[0]), np.asarray(evaluate(gr, [x])[0])


@pytest.mark.parametrize("name", sorted(RULES))
def test_x86_rule_is_proved(name: str) -> None:
    res = prove(RULES[name], "f32", 1, timeout_s=60.0)
    assert res.status == "proved", res.detail
    assert res.generality == "symbolic"


@pytest.mark.parametrize("name", sorted(RULES))
def test_x86_rule_is_bit_exact_on_the_interpreter(name: str) -> None:
    lo, ro = _sides(RULES[name], _bits())
    assert lo.dtype == ro.dtype
    diff = lo.view(np.uint8) != ro.view(np.uint8)
    assert not diff.any(), np.nonzero(diff)[0][:5]


def test_relu_keeps_nan_payloads() -> None:
    """XLA's maximum(+0, NaN) clears the sign and keeps the payload, unquieted; so does the rule."""
    vals = np.array([0xFFA12345, 0x7FA12345, 0xFFC00001, 0x80000000, 0x80000001], np.uint32)
    lo, ro = _sides(RULES["maximum(0, y) => pandd(maxps(0, y), 0x7fffffff)"], vals)
    assert lo.view(np.uint32).tolist() == [0x7FA12345, 0x7FA12345, 0x7FC00001, 0, 0]
    assert ro.view(np.uint32).tolist() == lo.view(np.uint32).tolist()


WRONG: dict = {}


@rule("convert_u8(clamp(0, x, 255)) => pmovusdb(cvttps2dq(minps(maxps(0, x), 255)))", family="wrong",
      dtypes=("f32",), ranks=(1,), expect="invalid", registry=WRONG)
def _w_nan_survives(c):
    """maxps with the NaN as operand b keeps it; cvttps2dq makes it 0x80000000, saturated to 255."""
    x = c.tensor("x")
    sh = x.shape
    lanes = minps(maxps(full(0.0, sh, "f32"), x), full(255.0, sh, "f32"))
    return _sat_u8(x, sh), pmovusdb(cvttps2dq(lanes, sh), sh), []


@rule("maximum(0, y) => maxps(0, y)", family="wrong", dtypes=("f32",), ranks=(1,), expect="invalid",
      registry=WRONG)
def _w_bare_relu(c):
    """VMAXPS alone gives -0.0 for y = -0.0, XLA +0.0."""
    y = c.tensor("y")
    zero = full(0.0, y.shape, "f32")
    return op("maximum", zero, y), maxps(zero, y), []


@rule("convert_u8(x) => pmovusdb(cvttps2dq(x))", family="wrong", dtypes=("f32",), ranks=(1,),
      expect="invalid", registry=WRONG)
def _w_no_clamp(c):
    """Without the clamp a negative value becomes 0x80000000 or a large u32 and saturates to 255."""
    x = c.tensor("x")
    return convert(x, "u8"), pmovusdb(cvttps2dq(x, x.shape), x.shape), []


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_x86_variants_are_refuted(name: str) -> None:
    res = prove(WRONG[name], "f32", 1, timeout_s=60.0)
    assert res.status == "refuted", res.detail
    lo, ro = _sides(WRONG[name], _bits())
    assert (lo.view(np.uint8) != ro.view(np.uint8)).any()


# --- the helpers are the AMX description's instruction semantics ------------------------------

def _helper(build, dtypes: tuple[str, ...], n: int):  # noqa: ANN001, ANN202
    """The helper applied to fresh rank-1 variables of ``dtypes``, as a graph over n lanes."""
    from rewrite_rules.dsl import RuleCtx
    from semantics.dtypes import DTYPES

    c = RuleCtx(DTYPES["f32"], 1)
    vs = [c.tensor(f"v{i}", dtype=dt) for i, dt in enumerate(dtypes)]
    (g,) = emit(c.tensors, [build(vs, vs[0].shape)], c.dtype,
                evaluator(subst={v.shape[0]: n for v in vs}), "helper")
    return g


def _instruction(name: str, ops: list[np.ndarray], out_bytes: int) -> bytes:
    """The instruction's semantics (compilers/targets/amx/description.py) over 16-lane registers: the first
    ``out_bytes`` bytes of each result register, concatenated."""
    from compilers.targets import load_target

    g = load_target("amx").instructions[name].graph({})
    n = ops[0].size
    return b"".join(np.asarray(evaluate(g, [o[i:i + 16].view(np.uint8).reshape(1, 64) for o in ops])[0])
                    .tobytes()[:out_bytes] for i in range(0, n, 16))


MASKS = (0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x0F0F0F0F, 0)


def _operands(arity: int) -> list[np.ndarray]:
    """Every pair of f32 edge patterns plus 4,096 random lanes per operand (a multiple of 16)."""
    bits = _bits()
    edges, rnd = bits[:28], bits[28:]
    if arity == 2:
        ops = [np.concatenate([np.repeat(edges, 28), rnd[:4096]]), np.concatenate([np.tile(edges, 28), rnd[4096:8192]])]
    else:
        ops = [np.concatenate([edges, rnd[:4096]])]
    n = ops[0].size - ops[0].size % 16
    return [o[:n] for o in ops]


_NP = {"f32": np.float32, "s32": np.int32}


@pytest.mark.parametrize("instr,dtypes,build,out_bytes", [
    ("vmaxps", ("f32", "f32"), lambda v, sh: maxps(v[0], v[1]), 64),
    ("vminps", ("f32", "f32"), lambda v, sh: minps(v[0], v[1]), 64),
    ("vcvttps2dq", ("f32",), lambda v, sh: cvttps2dq(v[0], sh), 64),
    ("vpmovusdb", ("s32",), lambda v, sh: pmovusdb(v[0], sh), 16),     # bytes 16..63 are zeroed
])
def test_x86_helper_is_the_amx_instruction(instr: str, dtypes: tuple[str, ...], build, out_bytes: int) -> None:  # noqa: ANN001
    """rewrite_rules/x86.py restates the instructions in the rule language; this ties each copy
    to compilers/targets/amx/description.py's semantics, bit for bit (NaN payloads included), on every pair
    of f32 edge patterns and 4,096 random lanes per operand."""
    ops = _operands(len(dtypes))
    got = np.asarray(evaluate(_helper(build, dtypes, ops[0].size),
                              [o.view(_NP[dt]) for o, dt in zip(ops, dtypes, strict=True)])[0])
    assert got.tobytes() == _instruction(instr, ops, out_bytes)


@pytest.mark.parametrize("mask", MASKS)
def test_x86_pandd_is_vpandd(mask: int) -> None:
    """pandd(a, mask) is VPANDD with the mask broadcast in the second register."""
    from rewrite_rules.x86 import pandd

    (a,) = _operands(1)
    got = np.asarray(evaluate(_helper(lambda v, sh: pandd(v[0], mask, sh), ("f32",), a.size), [a.view(np.float32)])[0])
    assert got.tobytes() == _instruction("vpandd", [a, np.full(a.size, mask, np.uint32)], 64)


def test_x86_tie_catches_a_different_helper() -> None:
    """The tie is not vacuous: VMAXPS written as XLA's maximum differs from the instruction."""
    ops = _operands(2)
    got = np.asarray(evaluate(_helper(lambda v, sh: op("maximum", v[0], v[1]), ("f32", "f32"), ops[0].size),
                              [o.view(np.float32) for o in ops])[0])
    assert got.tobytes() != _instruction("vmaxps", ops, 64)
