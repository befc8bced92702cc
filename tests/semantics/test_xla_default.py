"""The two numeric modes of the interpreter: ``strict`` (per-operation IEEE rounding) and
``xla-default`` (XLA:CPU with default flags: FMA contraction of f32/f64 multiply-add, bf16 excess
precision before a convert to f32), checked on hand-written HLO without jax and against jax itself
(the pre-optimization text, as users get it from ``jax.jit(f).lower(...).as_text(dialect="hlo")``,
run by jax with its default flags in a subprocess, since the oracle sets the strict flag)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from semantics.errors import InputError
from semantics.hlo_parser import parse_hlo
from semantics.interp import evaluate
from semantics.ops.contraction import _fma_f32
from semantics.xla_oracle import available

N = 4096
BF16 = ml_dtypes.bfloat16


def _inputs(k: int, dt: object = np.float32) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(N).astype(np.float32).astype(dt) for _ in range(k)]


def _hlo(body: str, params: str) -> str:
    return f"HloModule m\nENTRY e {{\n{params}{body}}}\n"


P3 = "".join(f"  p{i} = f32[{N}] parameter({i})\n" for i in range(3))


def test_contraction_add_and_subtract_either_side() -> None:
    a, b, c = _inputs(3)
    for root, want in (("add(m, p2)", _fma_f32(a, b, c)), ("add(p2, m)", _fma_f32(a, b, c)),
                       ("subtract(m, p2)", _fma_f32(a, b, -c)), ("subtract(p2, m)", _fma_f32(-a, b, c))):
        g = parse_hlo(_hlo(f"  m = f32[{N}] multiply(p0, p1)\n  ROOT r = f32[{N}] {root}\n", P3))
        got = evaluate(g, [a, b, c], mode="xla-default")[0]
        assert got.tobytes() == want.tobytes(), root
        strict = evaluate(g, [a, b, c])[0]
        assert (strict != got).sum() > 500          # the two meanings differ on ordinary values


def test_no_contraction_when_the_multiply_has_another_user() -> None:
    a, b, c = _inputs(3)
    g = parse_hlo(_hlo(f"  m = f32[{N}] multiply(p0, p1)\n  s = f32[{N}] add(m, p2)\n"
                       f"  ROOT t = (f32[{N}], f32[{N}]) tuple(m, s)\n", P3))
    assert evaluate(g, [a, b, c], mode="xla-default")[1].tobytes() == ((a * b) + c).tobytes()


def test_bf16_excess_precision_only_before_a_convert() -> None:
    x, y = _inputs(2, BF16)
    p = f"  x = bf16[{N}] parameter(0)\n  y = bf16[{N}] parameter(1)\n"
    g = parse_hlo(_hlo(f"  s = bf16[{N}] add(x, y)\n  ROOT c = f32[{N}] convert(s)\n", p))
    wide = x.astype(np.float32) + y.astype(np.float32)
    assert evaluate(g, [x, y], mode="xla-default")[0].tobytes() == wide.tobytes()
    assert evaluate(g, [x, y])[0].tobytes() == wide.astype(BF16).astype(np.float32).tobytes()
    g = parse_hlo(_hlo(f"  ROOT s = bf16[{N}] add(x, y)\n", p))          # no convert: rounded
    assert evaluate(g, [x, y], mode="xla-default")[0].tobytes() == wide.astype(BF16).tobytes()


def test_unknown_mode_is_an_input_error() -> None:
    g = parse_hlo(_hlo(f"  ROOT r = f32[{N}] add(p0, p1)\n", P3))
    with pytest.raises(InputError, match="unknown numeric mode"):
        evaluate(g, _inputs(3), mode="fast")


# -- against jax with its default flags -----------------------------------------------------------

CASES = {
    "mul_add": ("lambda a, b, c: a * b + c", 3, "f32"),
    "add_mul": ("lambda a, b, c: c + a * b", 3, "f32"),
    "mul_sub": ("lambda a, b, c: a * b - c", 3, "f32"),
    "sub_mul": ("lambda a, b, c: c - a * b", 3, "f32"),
    "mul_also_output": ("lambda a, b, c: (a * b, a * b + c)", 3, "f32"),
    "mul_also_reduced": ("lambda a, b, c: (jnp.sum(a * b), a * b + c)", 3, "f32"),
    "two_products": ("lambda a, b, c: a * b + c * a", 3, "f32"),
    "chain": ("lambda a, b, c: (a * b) * c + a", 3, "f32"),
    "f64_mul_add": ("lambda a, b, c: a * b + c", 3, "f64"),
    "bf16_add_convert": ("lambda a, b: (a + b).astype(jnp.float32)", 2, "bf16"),
    "bf16_chain_convert": ("lambda a, b, c: ((a + b) * c).astype(jnp.float32)", 3, "bf16"),
    "bf16_mul_add": ("lambda a, b: a * b + a", 2, "bf16"),
    "bf16_also_output": ("lambda a, b: ((a + b).astype(jnp.float32), a + b)", 2, "bf16"),
    "f16_add_convert": ("lambda a, b: (a + b).astype(jnp.float32)", 2, "f16"),
}

_SCRIPT = textwrap.dedent("""
    import json, os, sys, numpy as np
    os.environ.pop("XLA_FLAGS", None); os.environ["JAX_PLATFORMS"] = "cpu"
    import jax, jax.numpy as jnp, ml_dtypes
    jax.config.update("jax_enable_x64", True)
    cases, n, out = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dts = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
    res = {}
    for name, (src, k, dt) in cases.items():
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(n).astype(np.float32).astype(dts[dt]) for _ in range(k)]
        f = jax.jit(eval(src))
        text = f.lower(*xs).as_text(dialect="hlo")
        outs = f(*xs)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        np.savez(os.path.join(out, name + ".npz"), *[np.asarray(o) for o in outs])
        res[name] = text
    json.dump(res, open(os.path.join(out, "texts.json"), "w"))
""")


@pytest.fixture(scope="module")
def jax_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, object]:
    ok, why = available()
    if not ok:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("xd")
    subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(CASES), str(N), str(d)], check=True, timeout=600)
    return json.loads((d / "texts.json").read_text()), d


@pytest.mark.xla
@pytest.mark.parametrize("name", sorted(CASES))
def test_xla_default_matches_jax_bit_for_bit(name: str, jax_runs: tuple[dict, object]) -> None:
    texts, d = jax_runs
    _, k, dt = CASES[name]
    dts = {"f32": np.float32, "f64": np.float64, "bf16": BF16, "f16": np.float16}
    xs = [x.astype(np.float64).astype(dts[dt]) for x in _inputs(k)]
    g = parse_hlo(texts[name])
    want = np.load(d / f"{name}.npz")                                       # type: ignore[operator]
    got = evaluate(g, xs, mode="xla-default")
    for i, w in enumerate(want[f"arr_{j}"] for j in range(len(want.files))):
        if name == "mul_also_reduced" and i == 0:
            continue                                                      # a sum: its order is XLA's
        assert got[i].tobytes() == w.tobytes(), f"{name} output {i}: {(got[i] != w).sum()} elements differ"


def test_cli_run_xla_default_flag(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """``accv run --xla-default`` gives the contracted result, plain ``accv run`` the strict one."""
    from pathlib import Path

    from accv.cli import main
    d = Path(str(tmp_path))
    f = d / "muladd.hlo"
    f.write_text(_hlo(f"  m = f32[{N}] multiply(p0, p1)\n  ROOT r = f32[{N}] add(m, p2)\n", P3))
    xs = _inputs(3)
    for i, x in enumerate(xs):
        np.save(d / f"in{i}.npy", x)
    inputs = ",".join(str(d / f"in{i}.npy") for i in range(3))
    assert main(["run", str(f), "--inputs", inputs, "--out", str(d / "x"), "--xla-default"]) == 0
    assert main(["run", str(f), "--inputs", inputs, "--out", str(d / "s")]) == 0
    capsys.readouterr()
    a, b, c = xs
    assert np.load(d / "x" / "output0.npy").tobytes() == _fma_f32(a, b, c).tobytes()
    assert np.load(d / "s" / "output0.npy").tobytes() == (a * b + c).tobytes()


# -- xla-strict: XLA with --xla_allow_excess_precision=false (the conformance oracle) ------------

def test_xla_strict_contracts_but_rounds_bf16() -> None:
    a, b, c = _inputs(3)
    g = parse_hlo(_hlo(f"  m = f32[{N}] multiply(p0, p1)\n  ROOT r = f32[{N}] add(m, p2)\n", P3))
    assert evaluate(g, [a, b, c], mode="xla-strict")[0].tobytes() == _fma_f32(a, b, c).tobytes()
    x, y = _inputs(2, BF16)
    p = f"  x = bf16[{N}] parameter(0)\n  y = bf16[{N}] parameter(1)\n"
    g = parse_hlo(_hlo(f"  s = bf16[{N}] add(x, y)\n  ROOT c = f32[{N}] convert(s)\n", p))
    assert evaluate(g, [x, y], mode="xla-strict")[0].tobytes() == evaluate(g, [x, y])[0].tobytes()


def test_contraction_through_data_movement_and_negate_and_past_dead_users() -> None:
    a, b, c = _inputs(3)
    cases = {
        f"  m = f32[{N}] multiply(p0, p1)\n  q = f32[64,64] reshape(m)\n  z = f32[64,64] reshape(p2)\n"
        f"  ROOT r = f32[64,64] add(q, z)\n": _fma_f32(a, b, c).reshape(64, 64),
        f"  m = f32[{N}] multiply(p0, p1)\n  q = f32[{N}] negate(m)\n  ROOT r = f32[{N}] subtract(p2, q)\n":
            _fma_f32(a, b, c),
        f"  m = f32[{N}] multiply(p0, p1)\n  d = f32[{N}] subtract(m, p1)\n  ROOT r = f32[{N}] add(m, p2)\n":
            _fma_f32(a, b, c),                       # d is dead: XLA removes it, m has one user
    }
    for body, want in cases.items():
        g = parse_hlo(_hlo(body, P3))
        assert evaluate(g, [a, b, c], mode="xla-strict")[0].tobytes() == want.tobytes(), body


XLA_STRICT_CASES = {
    "reshape": f"  m = f32[{N}] multiply(p0, p1)\n  q = f32[64,64] reshape(m)\n  z = f32[64,64] reshape(p2)\n"
               f"  ROOT r = f32[64,64] add(q, z)\n",
    "transpose": f"  x = f32[64,64] reshape(p0)\n  y = f32[64,64] reshape(p1)\n  z = f32[64,64] reshape(p2)\n"
                 f"  m = f32[64,64] multiply(x, y)\n  t = f32[64,64] transpose(m), dimensions={{1,0}}\n"
                 f"  ROOT r = f32[64,64] add(t, z)\n",
    "copy_slice": f"  m = f32[{N}] multiply(p0, p1)\n  k = f32[{N}] copy(m)\n  q = f32[100] slice(k), slice={{[3:103]}}\n"
                  f"  z = f32[100] slice(p2), slice={{[0:100]}}\n  ROOT r = f32[100] add(q, z)\n",
    "negate": f"  m = f32[{N}] multiply(p0, p1)\n  q = f32[{N}] negate(m)\n  ROOT r = f32[{N}] add(q, p2)\n",
    "dead_user": f"  m = f32[{N}] multiply(p0, p1)\n  d = f32[{N}] subtract(m, p1)\n  ROOT r = f32[{N}] add(m, p2)\n",
    "reverse_stops": f"  m = f32[{N}] multiply(p0, p1)\n  q = f32[{N}] reverse(m), dimensions={{0}}\n"
                     f"  ROOT r = f32[{N}] add(q, p2)\n",
    "second_user_stops": f"  m = f32[{N}] multiply(p0, p1)\n  s = f32[{N}] add(m, p2)\n  ROOT t = f32[{N}] subtract(s, m)\n",
}


@pytest.mark.xla
@pytest.mark.parametrize("name", sorted(XLA_STRICT_CASES))
def test_xla_strict_matches_the_oracle_bit_for_bit(name: str) -> None:
    ok, why = available()
    if not ok:
        pytest.skip(why)
    from semantics.xla_oracle import run_xla

    a, b, c = _inputs(3)
    g = parse_hlo(_hlo(XLA_STRICT_CASES[name], P3))
    want = run_xla(g, [a, b, c])[0]
    assert evaluate(g, [a, b, c], mode="xla-strict")[0].tobytes() == want.tobytes()
    if not name.endswith("_stops"):
        assert evaluate(g, [a, b, c])[0].tobytes() != want.tobytes()      # strict differs


@pytest.mark.xla
def test_bf16_excess_precision_not_in_xla_strict_against_the_oracle() -> None:
    ok, why = available()
    if not ok:
        pytest.skip(why)
    from semantics.xla_oracle import run_xla

    x, y = _inputs(2, BF16)
    p = f"  x = bf16[{N}] parameter(0)\n  y = bf16[{N}] parameter(1)\n"
    g = parse_hlo(_hlo(f"  s = bf16[{N}] add(x, y)\n  ROOT c = f32[{N}] convert(s)\n", p))
    want = run_xla(g, [x, y])[0]
    assert evaluate(g, [x, y], mode="xla-strict")[0].tobytes() == want.tobytes()
    assert evaluate(g, [x, y], mode="xla-default")[0].tobytes() != want.tobytes()


# -- NaN signs: negate folding and the FMA's NaN propagation (measured against XLA:CPU) -------------

_NAN_FORMS = {
    "add(p,neg(q))": "n = @T negate(q)\n  ROOT r = @T add(p, n)",
    "add(neg(q),p)": "n = @T negate(q)\n  ROOT r = @T add(n, p)",
    "sub(p,neg(q))": "n = @T negate(q)\n  ROOT r = @T subtract(p, n)",
    "sub(neg(q),p)": "n = @T negate(q)\n  ROOT r = @T subtract(n, p)",
    "add(p,neg(neg(q)))": "n = @T negate(q)\n  m = @T negate(n)\n  ROOT r = @T add(p, m)",
    "mul(p,neg(q))": "n = @T negate(q)\n  ROOT r = @T multiply(p, n)",
    "add(p,neg(q*q))": "m = @T multiply(q, q)\n  n = @T negate(m)\n  ROOT r = @T add(p, n)",
}
#: sign of the result for q = [-NaN, +NaN] (p = [1.5, 2.0]), as XLA:CPU gives it in xla-strict
#: (the FMA-contracted form in f32/f64 propagates q unchanged; bf16 is computed through f32
#: converts and keeps the negate's flip)
_NAN_SIGNS = {
    "f16": {"add(p,neg(q))": "-+", "add(neg(q),p)": "-+", "sub(p,neg(q))": "-+", "sub(neg(q),p)": "+-",
            "add(p,neg(neg(q)))": "-+", "mul(p,neg(q))": "+-", "add(p,neg(q*q))": "-+"},
    "bf16": {"add(p,neg(q))": "+-", "add(neg(q),p)": "+-", "sub(p,neg(q))": "+-", "sub(neg(q),p)": "+-",
             "add(p,neg(neg(q)))": "-+", "mul(p,neg(q))": "+-", "add(p,neg(q*q))": "+-"},
}
_NAN_SIGNS["f32"] = _NAN_SIGNS["f64"] = _NAN_SIGNS["f16"]


def _nan_case(dt: str, form: str) -> tuple[object, list[np.ndarray]]:
    npdt = {"f16": np.float16, "bf16": BF16, "f32": np.float32, "f64": np.float64}[dt]
    ui = np.dtype(f"u{np.dtype(npdt).itemsize}")
    sign = ui.type(1) << ui.type(8 * ui.itemsize - 1)
    q = np.array([np.nan, np.nan], dtype=npdt).view(ui).copy()
    q[0] |= sign
    q[1] &= ~sign
    body = _NAN_FORMS[form].replace("@T", f"{dt}[2]")
    g = parse_hlo(f"HloModule m\nENTRY e {{\n  p = {dt}[2] parameter(0)\n  q = {dt}[2] parameter(1)\n  {body}\n}}\n")
    return g, [np.array([1.5, 2.0], dtype=npdt), q.view(npdt)]


def _signs(a: np.ndarray) -> str:
    return "".join("-" if np.signbit(v) else "+" for v in a.astype(np.float64))


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("form", list(_NAN_FORMS))
def test_nan_sign_after_negate_folding_and_contraction(dt: str, form: str) -> None:
    """add/subtract of a negate computes the subtract/add of the negated value (f16/f32/f64), and a
    contracted FMA returns its NaN operand unchanged: the NaN sign XLA:CPU gives."""
    g, ins = _nan_case(dt, form)
    out = evaluate(g, ins, mode="xla-strict")[0]
    assert np.isnan(out.astype(np.float64)).all()
    assert _signs(out) == _NAN_SIGNS[dt][form]


def test_fma_nan_takes_the_first_nan_operand_unchanged() -> None:
    """With several NaN operands the contracted value is the first NaN among a, b, c (measured)."""
    f = np.float32
    nan_m, nan_p = np.array([0xFFC00000, 0x7FC00000], np.uint32).view(f)
    a = np.array([nan_m, nan_p, 1.5, nan_p], f)
    b = np.array([nan_p, 2.0, nan_m, nan_m], f)
    c = np.array([0.25, nan_m, nan_p, nan_m], f)
    for op in ("add(m, c)", "subtract(m, c)", "subtract(c, m)"):
        g = parse_hlo("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
                      f"  c = f32[4] parameter(2)\n  m = f32[4] multiply(a, b)\n  ROOT r = f32[4] {op.split('(')[0]}"
                      f"({op.split('(')[1]}\n}}\n")
        assert _signs(evaluate(g, [a, b, c], mode="xla-strict")[0]) == "-+-+", op


@pytest.mark.xla
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
def test_nan_signs_are_xlas(dt: str) -> None:
    ok, why = available()
    if not ok:
        pytest.skip(why)
    from semantics.xla_oracle import run_xla

    for form in _NAN_FORMS:
        g, ins = _nan_case(dt, form)
        assert _signs(run_xla(g, ins)[0]) == _NAN_SIGNS[dt][form], form
