"""Coverage goals of a campaign: per target, the instructions of its package and the classes of
their α values (:meth:`compilers.isa.InstrDef.alpha_class`) that the campaign's programs used,
against the whole list, with what was never hit.

What belongs here: the goal lists (read from the target description, the one definition) and
their progress over a campaign's stored coverage (``instructions`` and ``alpha_class`` of each
case, :func:`check.evaluate.coverage`). A class no value of the description's ``search`` domain
is in (e.g. Gemmini's scales other than 1.0, which the compiler never chooses) is listed apart:
no compiled program can have it, so it is not a goal a campaign can meet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .aggregates import Aggregates

__all__ = ["GoalProgress", "goal_lists", "progress", "progress_of", "summary_lines"]


def goal_lists(target: str) -> tuple[list[str], list[str], list[str]]:
    """(instructions, reachable α classes ``instr.attr:class``, classes the compiler never
    chooses) of ``target``'s package, in description order."""
    from compilers.targets import load_target

    acc = load_target(target)
    classes: list[str] = []
    unreachable: list[str] = []
    for name, d in acc.instructions.items():
        for a in d.alpha:
            for cls, ok in d.class_names(a):
                (classes if ok else unreachable).append(f"{name}.{a}:{cls}")
    return list(acc.instructions), classes, unreachable


@dataclass
class GoalProgress:
    """One target's goals over one campaign."""

    target: str
    instructions: list[str]
    classes: list[str]
    unreachable: list[str]
    hit_instructions: dict[str, int] = field(default_factory=dict)     # name -> cases using it
    hit_classes: dict[str, int] = field(default_factory=dict)          # instr.attr:class -> cases

    @property
    def missed_instructions(self) -> list[str]:
        return [n for n in self.instructions if n not in self.hit_instructions]

    @property
    def missed_classes(self) -> list[str]:
        return [c for c in self.classes if c not in self.hit_classes]

    #: the report's columns for :meth:`row`
    COLUMNS = ("target", "instructions used", "α classes hit", "never used", "α classes never hit",
               "classes the compiler never chooses")

    def row(self) -> list[str]:
        """The report table's row (:attr:`COLUMNS`)."""
        return [self.target, f"{len(self.instructions) - len(self.missed_instructions)}/{len(self.instructions)}",
                f"{len(self.classes) - len(self.missed_classes)}/{len(self.classes)}",
                ", ".join(self.missed_instructions) or "-", ", ".join(self.missed_classes) or "-",
                ", ".join(self.unreachable) or "-"]

    def line(self, most: int = 12) -> str:
        """One line: the shares and the first ``most`` of what was never hit."""
        def names(xs: list[str]) -> str:
            return ", ".join(xs[:most]) + (f", +{len(xs) - most} more" if len(xs) > most else "")

        ni, nc = len(self.instructions), len(self.classes)
        hi = ni - len(self.missed_instructions)
        hc = nc - len(self.missed_classes)
        out = f"{self.target} goals: instructions {hi}/{ni}, α classes {hc}/{nc}"
        if self.missed_instructions:
            out += f"; never used: {names(self.missed_instructions)}"
        if self.missed_classes:
            out += f"; classes never hit: {names(self.missed_classes)}"
        return out


def progress(db: str | Path, campaign: int) -> dict[str, GoalProgress]:
    """Per target of ``campaign``: its goals and what the campaign's programs hit."""
    from .store import Store

    store = Store(db)
    try:
        return progress_of(store, campaign)
    finally:
        store.close()


def progress_of(store: Aggregates, campaign: int) -> dict[str, GoalProgress]:
    """:func:`progress` over an open store (the report's read-only one)."""
    from compilers.targets import TARGETS

    out: dict[str, GoalProgress] = {}
    for t in sorted(store.outcome_counts(campaign)):
        if t in TARGETS:
            out[t] = GoalProgress(t, *goal_lists(t))
    for _, t, name, n, _uses in store.coverage_counts("instructions", [campaign]):
        if t in out:
            out[t].hit_instructions[name] = n
    for _, t, v, n in store.coverage_values("alpha_class", [campaign]):
        if t in out:
            out[t].hit_classes[v] = n
    return out


def summary_lines(db: str | Path, campaign: int) -> list[str]:
    """The campaign summary's goal lines, one per target."""
    return [g.line() for g in progress(db, campaign).values()]
