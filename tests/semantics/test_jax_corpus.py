"""The jax dump corpus (tests/corpus/jax, written by scripts/jax_dumps.py): every dump, in both
forms jax gives (pre-optimization and XLA-optimized HLO), parses and runs on the reference
interpreter, and is compared bit for bit with the XLA outputs stored next to it.

The stored outputs come from jax's default flags, so the interpreter runs in ``mode="xla-default"``
(FMA contraction, bf16 excess precision). A dump is bit-exact, or within the declared bound: it
contains an operator XLA:CPU approximates or sums in its own order (:data:`INEXACT_OPS`; their
per-operator ulp bounds are each operator table entry's XlaBound, read by semantics.compare.op_bound) and every float output
element is within ``2**-20 * max|output|`` of XLA's. None may be outside; ``EXACT_AT_LEAST`` pins
the bit-exact count. A dump with an operator whose bits are implementation-defined
(:data:`UNINTERPRETED_OPS`: ``rng-bit-generator``, in pre-optimization dumps; XLA expands it in
optimized ones) parses, and evaluating it raises an EvalError naming the instruction. The comparison needs no jax (the outputs are stored), but the test is marked
``xla`` as the conformance tests are.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from semantics.errors import EvalError
from semantics.hlo_parser import parse_file
from semantics.interp import evaluate
from semantics.npyio import load_input

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "jax"
DUMPS = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.exists() else []
#: dumps (of 2 x len(DUMPS)) bit-identical with XLA in xla-default mode (docs/semantics.md)
EXACT_AT_LEAST = 111
#: operators whose XLA:CPU result is an approximation or a sum in XLA's own order
INEXACT_OPS = frozenset({"exponential", "log", "tanh", "rsqrt", "sqrt", "divide", "erf", "logistic", "cbrt",
                         "exponential-minus-one", "log-plus-one", "atan2", "power", "dot", "reduce",
                         "convolution", "reduce-window"})
#: operators the interpreter declines to evaluate (implementation-defined bits)
UNINTERPRETED_OPS = frozenset({"rng-bit-generator"})
#: dumps that contain one (the pre-optimization rng_bits dump)
UNINTERPRETED_DUMPS = 1
#: the declared bound for a dump with such operators, relative to its largest output magnitude
REL_BOUND = 2.0 ** -20

pytestmark = pytest.mark.xla


def _load(path: Path) -> np.ndarray:
    a = np.load(path)
    return a.view(ml_dtypes.bfloat16) if a.dtype == np.dtype("V2") else a   # np.save drops bf16


def _arrays(d: Path, prefix: str) -> list[np.ndarray]:
    return [_load(p) for p in sorted(d.glob(f"{prefix}*.npy"), key=lambda p: int(p.stem[len(prefix):]))]


def run_dump(d: Path, form: str) -> str:
    """Parse and evaluate one dump: "exact", "bounded" (within the declared bound, with an inexact
    operator), "uninterpreted" (an operator of UNINTERPRETED_OPS, refused by name) or "outside"."""
    g = parse_file(d / f"{form}.hlo")
    ins = sorted(d.glob("in*.npy"), key=lambda p: int(p.stem[2:]))
    inputs = [load_input(p, t, i) for i, (p, t) in enumerate(zip(ins, g.param_types, strict=True))]  # type: ignore[arg-type]
    declined = [i.name for c in g.computations for i in c.instructions if i.opcode in UNINTERPRETED_OPS]
    if declined:
        with pytest.raises(EvalError, match="uninterpreted") as e:
            evaluate(g, inputs, mode="xla-default")
        return "uninterpreted" if f"instruction '{declined[0]}'" in str(e.value) else "outside"
    outs = evaluate(g, inputs, mode="xla-default")
    want = _arrays(d, "out")
    if len(outs) != len(want) or any(a.dtype != b.dtype or a.shape != b.shape for a, b in zip(outs, want, strict=True)):
        return "outside"
    if all(a.tobytes() == b.tobytes() for a, b in zip(outs, want, strict=True)):
        return "exact"
    if not {i.opcode for c in g.computations for i in c.instructions} & INEXACT_OPS:
        return "outside"
    for a, b in zip(outs, want, strict=True):
        if a.tobytes() == b.tobytes():
            continue
        if a.dtype.kind != "f" and a.dtype != ml_dtypes.bfloat16:
            return "outside"
        x, y = a.astype(np.float64), b.astype(np.float64)
        same_nan = np.isnan(x) & np.isnan(y)
        tol = REL_BOUND * float(np.nanmax(np.abs(y))) if y.size else 0.0
        if not np.all(same_nan | (np.abs(x - y) <= tol) | (x == y)):
            return "outside"
    return "bounded"


def test_corpus_is_complete() -> None:
    assert len(DUMPS) >= 50
    for d in DUMPS:
        assert (d / "pre.hlo").is_file() and (d / "opt.hlo").is_file() and list(d.glob("out*.npy")), d.name


def test_every_dump_agrees_bit_for_bit_or_within_its_bound() -> None:
    res = {(d.name, form): run_dump(d, form) for d in DUMPS for form in ("pre", "opt")}
    n = {k: sum(v == k for v in res.values()) for k in ("exact", "bounded", "uninterpreted", "outside")}
    print(f"\njax corpus (xla-default): {n['exact']} of {len(res)} bit-exact, {n['bounded']} within bound, "
          f"{n['uninterpreted']} uninterpreted, {n['outside']} outside")
    assert n["outside"] == 0, sorted(k for k, v in res.items() if v == "outside")
    assert n["uninterpreted"] == UNINTERPRETED_DUMPS
    assert n["exact"] >= EXACT_AT_LEAST


def test_the_bound_can_fail(tmp_path: Path) -> None:
    """A copy of a bounded dump with one output element moved past the bound is outside."""
    import shutil
    d = tmp_path / "softmax"
    shutil.copytree(CORPUS / "softmax", d)
    assert run_dump(d, "pre") == "bounded"
    want = np.load(d / "out0.npy")
    want.reshape(-1)[0] += np.float32(4 * REL_BOUND) * np.abs(want).max()
    np.save(d / "out0.npy", want)
    assert run_dump(d, "pre") == "outside"
