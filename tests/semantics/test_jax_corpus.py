"""The jax dump corpus (tests/corpus/jax, written by scripts/jax_dumps.py): every dump, in both
forms jax gives (pre-optimization and XLA-optimized HLO), parses and runs on the reference
interpreter, and is compared bit for bit with the XLA outputs stored next to it.

The stored outputs come from jax's default flags (FMA contraction and bf16 excess precision on);
the interpreter computes the strict per-operation meaning, so not every dump agrees yet:
``AGREE_AT_LEAST`` pins the number that does (a drop fails the test). The comparison needs no
jax (the outputs are stored), but the test is marked ``xla`` as the conformance tests are.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from semantics.hlo_parser import parse_file
from semantics.interp import evaluate

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "jax"
DUMPS = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.exists() else []
#: dumps (of 2 x len(DUMPS)) bit-identical with XLA in the strict mode (docs/semantics.md)
AGREE_AT_LEAST = 97

pytestmark = pytest.mark.xla


def _load(path: Path) -> np.ndarray:
    a = np.load(path)
    return a.view(ml_dtypes.bfloat16) if a.dtype == np.dtype("V2") else a   # np.save drops bf16


def _arrays(d: Path, prefix: str) -> list[np.ndarray]:
    return [_load(p) for p in sorted(d.glob(f"{prefix}*.npy"), key=lambda p: int(p.stem[len(prefix):]))]


def run_dump(d: Path, form: str) -> bool:
    """Parse and evaluate one dump; True when every output is bit-identical to XLA's."""
    g = parse_file(d / f"{form}.hlo")
    outs = evaluate(g, _arrays(d, "in"))
    want = _arrays(d, "out")
    return len(outs) == len(want) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(outs, want, strict=True))


def test_corpus_is_complete() -> None:
    assert len(DUMPS) >= 50
    for d in DUMPS:
        assert (d / "pre.hlo").is_file() and (d / "opt.hlo").is_file() and list(d.glob("out*.npy")), d.name


def test_every_dump_parses_runs_and_the_agreeing_count_holds() -> None:
    agree = sum(run_dump(d, form) for d in DUMPS for form in ("pre", "opt"))
    print(f"\njax corpus: {agree} of {2 * len(DUMPS)} dumps bit-identical with XLA")
    assert agree >= AGREE_AT_LEAST
