"""Every use of a backend by the campaign goes through this module, over the backend registry of
:mod:`accv.backends`.

:func:`available_backends` lists the backends a target offers here with the reason when one is
unavailable; :func:`run_backend` runs a program on one and returns its
:class:`~compilers.backend.RunResult` (outputs, cycles or None, log). Backends per target:
gemmini: sim, stream (the command-stream model), rtl; qkv: sim, rtl; amx: sim, emulated (the
emitted C on the emulation header), native (the host's AMX unit).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from accv.backends import backends_for, get_backend, unavailable
from compilers.backend import BackendUnavailable, RunResult
from compilers.isa import Accelerator
from compilers.program import Program
from compilers.targets import TARGETS

__all__ = ["BACKENDS", "available_backends", "nan_bits_checked", "run_backend"]

#: the backends each target offers (the registry's pairs), in the order a campaign runs them
BACKENDS: dict[str, tuple[str, ...]] = {t: backends_for(t) for t in TARGETS}


@functools.cache
def _acc(target: str) -> Accelerator:
    from compilers.targets import load_target

    return load_target(target)


@functools.cache
def _availability(target: str, name: str) -> str | None:
    """None when backend ``name`` can run ``target`` here, else the reason (the registry's)."""
    return unavailable(target, name)


def available_backends(target: str) -> list[tuple[str, str | None]]:
    """(name, None) for each backend of ``target`` that runs here, (name, reason) for the others."""
    return [(n, _availability(target, n)) for n in BACKENDS.get(target, ())]


def run_backend(target: str, name: str, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
    """Run ``program`` on backend ``name`` of ``target`` (raises BackendUnavailable, or whatever the
    backend raises when the program breaks it)."""
    why = _availability(target, name)
    if why is not None:
        raise BackendUnavailable(why)
    return get_backend(_acc(target), name).run(program, inputs)


def nan_bits_checked(target: str, name: str) -> bool:
    """False where the backend's NaN payloads are not modelled by the reference (the AMX hardware and
    its emulation: which NaN comes out of two NaN operands or TDPBF16PS): there a NaN matches any NaN."""
    return not (target == "amx" and name in ("emulated", "native"))
