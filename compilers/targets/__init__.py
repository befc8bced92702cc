"""The target packages, one per accelerator, and the registry that loads them by name.

Each ``compilers/targets/<name>/`` package holds everything about one accelerator: its description
(buffers, instructions, numeric contracts, costs: ``description.py``), its encoders to machine
words, its emitters, and a :class:`TargetPackage` record named ``PACKAGE`` that says what the rest
of the project may ask of it: the description's builder, the names of the backends that run its
programs (``sim``, ``stream``, ``rtl``, ...; the backends themselves are registered in
:mod:`check.backends`) and the artifacts ``accv compile`` writes beside the assembly.

``load_target(name)`` builds the description and validates it (so a broken description fails
when it is loaded, naming the instruction and the field), once per process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module

from ..isa import Accelerator, IsaError
from ..program import Program

__all__ = ["TARGETS", "TargetPackage", "load_target", "target_package"]

TARGETS = ("qkv", "gemmini", "amx")


def _no_artifacts(program: Program, acc: Accelerator, stem: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class TargetPackage:
    """What one target package offers.

    - ``build``: the description (an unvalidated :class:`Accelerator`; :func:`load_target` validates).
    - ``backends``: names of the backends that run the target's programs, in the order they are
      listed to a user (``sim`` first).
    - ``artifacts(program, acc, stem)``: the files ``accv compile`` writes beside the assembly, as
      ``{suffix: text}`` in the order they are written (Gemmini: ``.stream`` command words; AMX: ``.c``).
    - ``tiles``: a function giving what the middle end may tile for it (a :class:`compilers.tile_offer.TileOffer`:
      blocks, capacities, micro-kernels; or a record with ``row_block`` and ``max_extent`` for
      :mod:`compilers.middle.rows`: QKV), or None where it offers no tiling.
    """

    name: str
    build: Callable[[], Accelerator]
    backends: tuple[str, ...]
    artifacts: Callable[[Program, Accelerator, str], dict[str, str]] = field(default=_no_artifacts)
    tiles: Callable[[], object] | None = None


@cache
def target_package(name: str) -> TargetPackage:
    """The :class:`TargetPackage` of target ``name``; raises :class:`IsaError` for an unknown one."""
    if name not in TARGETS:
        raise IsaError(f"unknown target '{name}' (known: {', '.join(TARGETS)})")
    pkg: TargetPackage = import_module(f"{__name__}.{name}").PACKAGE
    return pkg


@cache
def load_target(name: str) -> Accelerator:
    """The validated description of target ``name`` (built once per process)."""
    acc = target_package(name).build()
    acc.validate()
    return acc
