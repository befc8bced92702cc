"""What a check concludes: the :class:`Verdict` record, the outcome vocabulary and the bucket
signature of a failure.

What belongs here: :data:`OUTCOMES` / :data:`FAILURES` (the one list of outcomes: the check, the
campaign's store and the report read them from here), :func:`signature` (the one writer of a
failure's bucket signature, ``target | outcome | stage | symptom``), :class:`SetReport` (one
input set's informative line) and :class:`Verdict`.

A verdict is what ``accv check``, the pytest plugin and a campaign case all conclude about a
program (or a graph the target cannot compile): ``outcome`` is one of

- ``pass``: every run agreed with the contract the program carries (``check.policy``);
- ``degenerate``: every run agreed, but no input set's outputs carried information (all NaN/inf,
  or constant), so the agreement says nothing;
- ``mismatch``: a backend's outputs differ (the first differing element is in ``reason``), or a
  graph oracle's (XLA) from the reference semantics;
- ``backend-crash``: a backend raised on the program (a run that cannot finish is a finding);
- ``unsupported``: the compiler's exit 3 (``reason`` says why; ``coverage["unsupported"]`` names
  the operator); ``compile-crash``: the compiler raised something else (a bug);

and, recorded by a campaign only (its worker cannot say them): ``timeout``, ``crash`` (the worker
process died) and ``gen-error`` (the generator gave no graph for the seed; not a failure).
:data:`STORED` names the fields a campaign's store keeps; the others (the failing inputs, the
per-set reports, the reproducer folder) live for the process that made the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FAILURES", "OUTCOMES", "STORED", "SetReport", "Verdict", "signature"]

#: every outcome, in the order reports list them
OUTCOMES = ("pass", "unsupported", "degenerate", "mismatch", "compile-crash", "backend-crash", "timeout", "crash",
            "gen-error")
#: the outcomes that are failures (bucketed by :func:`signature`, reduced to reproducers)
FAILURES = ("mismatch", "compile-crash", "backend-crash", "timeout", "crash")


def signature(target: str, outcome: str, stage: str | None, symptom: str | None) -> str | None:
    """The bucket of a failure: target, outcome, stage and symptom (the symptom names the first
    differing operator or the crashing place); None for an outcome that is not a failure."""
    if outcome not in FAILURES:
        return None
    return f"{target} | {outcome} | {stage or '-'} | {symptom or '-'}"


@dataclass
class SetReport:
    """One input set of a check: its name (``scaled``, ``edges``, ``full``, ``given``, ...), its
    seed, the informative share of the reference outputs and the line saying it
    (``informative: 100% finite, varied`` / ``DEGENERATE: all outputs NaN``, plus the distance to
    the reference where the contract allows one)."""

    kind: str
    seed: int
    share: float
    text: str


@dataclass
class Verdict:
    """A check's conclusion (module doc). Stored by a campaign: ``outcome``, ``stage``,
    ``symptom``, ``reason``, ``timings`` (seconds: ``compile``, ``compile.M1``.., ``reference``,
    ``run.BACKEND``; ``host.BACKEND``: a partitioned program's host steps within it), ``cycles`` (per backend, of the first input set; None where a backend
    measures none), ``informative`` (the first set's share), ``informative_sets``, ``coverage``
    (operators, instructions, alpha values; ``unsupported``: the operator) and ``skipped`` (graph
    oracles not run, with the reason)."""

    outcome: str = "pass"
    stage: str | None = None
    symptom: str | None = None
    reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    cycles: dict[str, int | None] = field(default_factory=dict)
    informative: float | None = None
    informative_sets: dict[str, float] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    # -- not stored ------------------------------------------------------------------------------
    backend: str | None = None                  # the failing backend
    input_set: str | None = None                # the failing input set's name
    inputs: list[np.ndarray] | None = None      # the failing input set
    expected: list[np.ndarray] | None = None    # the reference's (or the contract model's) outputs on it
    actual: list[np.ndarray] | None = None      # the backend's outputs on it
    sets: list[SetReport] = field(default_factory=list)
    contract: str = "the reference"             # what the outputs were held to (compilers.contract)
    reproducer: Path | None = None
    steps: dict[str, list[Any]] = field(default_factory=dict)   # a partitioned program's StepRuns per backend (first set)

    @property
    def ok(self) -> bool:
        """Every run agreed (``pass`` or ``degenerate``)."""
        return self.outcome in ("pass", "degenerate")

    @property
    def degenerate(self) -> bool:
        return self.outcome == "degenerate"

    @property
    def failed(self) -> bool:
        return self.outcome in FAILURES

    @property
    def message(self) -> str:
        return self.reason or ""

    @property
    def runs(self) -> int:
        """Input sets run (the failing one last)."""
        return len(self.sets)

    def signature(self, target: str) -> str | None:
        return signature(target, self.outcome, self.stage, self.symptom)

    def stored(self) -> dict[str, Any]:
        """The :data:`STORED` fields, as a campaign's store and its JSON keep them."""
        return {k: getattr(self, k) for k in STORED}

    @classmethod
    def from_stored(cls, d: dict[str, Any]) -> Verdict:
        return cls(**{k: v for k, v in d.items() if k in STORED})


#: the fields of a :class:`Verdict` a campaign keeps (module doc)
STORED: tuple[str, ...] = tuple(f.name for f in fields(Verdict))[:10]
