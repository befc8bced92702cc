"""The NaN-sign model of the SMT encoding (:func:`semantics.ops._z3util.nan_sign`) against the
reference interpreter: wherever the model says the sign of a NaN output is determined, it is the
sign bit the interpreter's output has. Random graphs of every operator (semantics/gen.py) on edge
inputs (NaNs of both signs, infinities, zeros), and the dot's product operand order directly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import z3

from semantics.gen import random_graph
from semantics.hlo_parser import parse_hlo
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.ops import _z3util as Z
from semantics.smt import concrete, encode

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _checked(graph, inputs) -> tuple[int, list[str]]:
    """(NaN outputs whose sign the model determines, mismatches against the interpreter)."""
    ref = evaluate(graph, inputs)
    with Z.exact_nan_bits():
        enc = encode(graph, [concrete(np.asarray(a), t) for a, t in zip(inputs, graph.param_types, strict=True)])
    n, bad = 0, []
    for k, (r, s) in enumerate(zip(ref, enc.outputs, strict=True)):
        if not s.type.dtype.is_float:
            continue
        rf = np.asarray(r).astype(np.float64)
        for idx in np.ndindex(rf.shape):
            if not np.isnan(rf[idx]):
                continue
            sign, det = Z.nan_sign(s.terms[idx])
            if not z3.is_true(z3.simplify(det)):
                continue
            n += 1
            want = bool(np.signbit(rf[idx]))
            got = z3.is_true(z3.simplify(sign))
            if got != want:
                bad.append(f"{graph.name} output {k}{list(idx)}: model {'-' if got else '+'}NaN, "
                           f"interpreter {'-' if want else '+'}NaN")
    return n, bad


def test_nan_sign_model_matches_the_interpreter_on_random_graphs() -> None:
    checked, bad = 0, []
    for seed in range(60):
        g = random_graph(seed, dtypes=("f32", "bf16"))
        for s in (1, 3):
            n, b = _checked(g, random_inputs(g, seed * 7 + s, edges=True))
            checked += n
            bad += b
    assert not bad, "\n".join(bad[:10])
    assert checked > 50   # the model decides many NaN outputs, not none


_DOT = """HloModule d
ENTRY main {
  a = bf16[2,2] parameter(0)
  b = bf16[2,2] parameter(1)
  ROOT d = bf16[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_dot_nan_sign_follows_the_product_operand_order() -> None:
    """Both operands of a product NaN: the dot returns the lhs operand's NaN (the interpreter and
    XLA); the model says so, so the SMT encoding keeps the product's operand order."""
    g = parse_hlo(_DOT)
    bf = ml_dtypes.bfloat16
    a = np.ones((2, 2), dtype=bf)
    b = np.ones((2, 2), dtype=bf)
    a[0, 0] = np.array(0x7FC0, dtype=np.uint16).view(bf)   # +NaN * -NaN at d[0, 0]
    b[0, 0] = np.array(0xFFC0, dtype=np.uint16).view(bf)
    a[1, 0] = np.array(0xFFC0, dtype=np.uint16).view(bf)   # -NaN * +NaN at d[1, 1]
    b[0, 1] = np.array(0x7FC0, dtype=np.uint16).view(bf)
    out = np.asarray(evaluate(g, [a, b])[0]).view(np.uint16)
    assert out[0, 0] == 0x7FC0 and out[1, 1] == 0xFFC0
    n, bad = _checked(g, [a, b])
    assert n == 4 and not bad, bad
