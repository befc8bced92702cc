"""Loads every rule family module of this package, so that :data:`rewrite_rules.dsl.RULES` is the
whole library. A family is any module here other than the infrastructure (dsl, instantiate,
library); adding a file adds a family.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from pathlib import Path

from .dsl import RULES, Rule

_INFRA = {"dsl", "instantiate", "library"}

__all__ = ["families", "load", "RULES"]


def families() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name not in _INFRA and not m.name.startswith("_"))


def load() -> dict[str, Rule]:
    for fam in families():
        import_module(f"{__package__}.{fam}")
    return RULES
