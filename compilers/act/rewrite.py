"""Module 2's IR-to-IR rules: the proven rules of :mod:`rewrite_rules`, filtered to those that can
lead to an IR-to-ISA rule (appendix C.2), matched on e-graph snapshots.

(Work in progress: see issue 5.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..isa import Accelerator
from .egraph import EGraph, Snapshot
from .terms import Term

__all__ = ["IrRules"]


@dataclass
class IrRules:
    rules: list = field(default_factory=list)

    @classmethod
    def for_target(cls, acc: Accelerator) -> "IrRules":
        return cls([])

    def apply(self, eg: EGraph, snap: Snapshot) -> int:
        return 0

    def normalize(self, t: Term) -> Term:
        return t
