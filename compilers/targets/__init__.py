"""Target descriptions, one ISA per module, and the registry that loads them by name.

``load_target(name)`` builds the description and validates it (so a broken description fails
when it is loaded, naming the instruction and the field), once per process.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from ..isa import Accelerator, IsaError

__all__ = ["TARGETS", "load_target"]

TARGETS = ("qkv", "gemmini", "amx")


@cache
def load_target(name: str) -> Accelerator:
    if name not in TARGETS:
        raise IsaError(f"unknown target '{name}' (known: {', '.join(TARGETS)})")
    acc: Accelerator = import_module(f"{__name__}.{name}").build()
    acc.validate()
    return acc
