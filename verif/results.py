"""Prover results: :class:`ProofResult` (one (rule, dtype, rank) proof and its verdict),
:class:`Counterexample` (sizes, inputs and both sides' outputs, with the two sides as HLO text) and
:class:`ProverBug` (a counterexample the interpreter does not confirm).

Verdicts, what a CI reads (docs/rules.md): ``proved`` for every size, ``bounded`` (no
counterexample at sizes <= N, not a proof), ``refuted``, ``unknown`` (a query timed out or gave
up), ``error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ProofResult", "Counterexample", "ProverBug", "verdict_of", "VERDICTS"]

VERDICTS = ("proved", "bounded", "refuted", "unknown", "error")


class ProverBug(Exception):
    """A counterexample from z3 that the reference interpreter does not confirm."""


@dataclass
class Counterexample:
    sizes: dict[str, int]
    inputs: dict[str, np.ndarray]
    lhs_out: np.ndarray
    rhs_out: np.ndarray
    index: tuple[int, ...] | None = None
    reason: str = ""

    lhs_hlo: str = ""
    rhs_hlo: str = ""

    def summary(self) -> str:
        shapes = {k: list(v.shape) for k, v in self.inputs.items()}
        return f"{self.reason} sizes/attrs {self.sizes}; inputs {shapes}"

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "sizes": self.sizes,
                "inputs": {k: _bits_list(v) for k, v in self.inputs.items()},
                "lhs_out": _bits_list(self.lhs_out), "rhs_out": _bits_list(self.rhs_out),
                "lhs_hlo": self.lhs_hlo, "rhs_hlo": self.rhs_hlo}


def _bits_list(a: np.ndarray) -> Any:
    """Values as JSON: integers and bools as such, floats as ``{"dtype", "bits"}`` (NaN payloads
    and -0.0 survive)."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return {"dtype": str(a.dtype), "bits": a.view(f"u{a.dtype.itemsize}").tolist()}
    if a.dtype.kind == "V":   # bf16 (ml_dtypes)
        return {"dtype": str(a.dtype), "bits": a.view("u2").tolist()}
    return a.tolist()


@dataclass
class ProofResult:
    rule: str
    dtype: str
    rank: int
    status: str                      # proved | refuted | unknown | error
    generality: str                  # "symbolic" | "bounded N" | ""
    seconds: float
    detail: str = ""
    uninterpreted: list[str] = field(default_factory=list)
    counterexample: Counterexample | None = None

    @property
    def verdict(self) -> str:
        """What a CI reads: ``proved`` (for every size), ``bounded`` (no counterexample at sizes
        <= N, not a proof), ``refuted`` (a counterexample replayed), ``unknown`` (a query timed
        out or gave up; ``detail`` names it) or ``error`` (the prover failed)."""
        return verdict_of(self.status, self.generality)

    def tag(self) -> str:
        """``PROVED``, ``BOUNDED n<=N``, ``REFUTED``, ``UNKNOWN`` or ``ERROR``."""
        v = self.verdict
        if v == "bounded":
            return f"BOUNDED n<={self.generality.split()[-1]}"
        return v.upper()

    def line(self) -> str:
        extra = f"  ({self.detail})" if self.detail and self.verdict != "proved" else ""
        return f"[{self.tag()} {self.dtype} r{self.rank}] {self.seconds:.2f}s {self.rule}{extra}"

    def to_json(self) -> dict[str, Any]:
        d = {"rule": self.rule, "dtype": self.dtype, "rank": self.rank, "verdict": self.verdict,
             "status": self.status, "generality": self.generality, "seconds": round(self.seconds, 4),
             "detail": self.detail, "uninterpreted": self.uninterpreted}
        if self.counterexample is not None:
            d["counterexample"] = self.counterexample.to_json()
        return d


def verdict_of(status: str, generality: str) -> str:
    """The verdict of a (status, generality) pair (cache records keep both)."""
    if status == "proved":
        return "proved" if generality == "symbolic" else "bounded"
    return status
