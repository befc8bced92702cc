"""Every use of a backend by the campaign goes through this module (the one place to swap for the
backend registry of ``accv.backends``).

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

from compilers.backend import BackendUnavailable, RunResult, get_backend
from compilers.isa import Accelerator
from compilers.program import Program

__all__ = ["BACKENDS", "available_backends", "nan_bits_checked", "run_backend"]

#: the backends each target offers, in the order a campaign runs them
BACKENDS: dict[str, tuple[str, ...]] = {
    "gemmini": ("sim", "stream", "rtl"),
    "qkv": ("sim", "rtl"),
    "amx": ("sim", "emulated", "native"),
}


@functools.cache
def _acc(target: str) -> Accelerator:
    from compilers.targets import load_target

    return load_target(target)


@functools.cache
def _availability(target: str, name: str) -> str | None:
    """None when backend ``name`` can run ``target`` here, else the reason."""
    if name not in BACKENDS.get(target, ()):
        return f"target {target} has no '{name}' backend (it has {', '.join(BACKENDS.get(target, ()))})"
    try:
        if name == "stream":
            import compilers.gemmini_stream  # noqa: F401
        elif name in ("emulated", "native"):
            from compilers.amx_run.backends import EmulatedBackend, NativeBackend

            (EmulatedBackend if name == "emulated" else NativeBackend).for_target(_acc(target))
        else:
            get_backend(name, _acc(target))
    except BackendUnavailable as e:
        return e.reason if hasattr(e, "reason") else str(e)
    except ImportError as e:
        return f"{name}: {e}"
    return None


def available_backends(target: str) -> list[tuple[str, str | None]]:
    """(name, None) for each backend of ``target`` that runs here, (name, reason) for the others."""
    return [(n, _availability(target, n)) for n in BACKENDS.get(target, ())]


def run_backend(target: str, name: str, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
    """Run ``program`` on backend ``name`` of ``target`` (raises BackendUnavailable, or whatever the
    backend raises when the program breaks it)."""
    why = _availability(target, name)
    if why is not None:
        raise BackendUnavailable(why)
    if name == "stream":
        from compilers.gemmini_stream import run_program

        _, outs = run_program(program, inputs)
        return RunResult(outs, None, ["gemmini command stream"])
    if name in ("emulated", "native"):
        from compilers.amx_run.backends import EmulatedBackend, NativeBackend

        return (EmulatedBackend if name == "emulated" else NativeBackend)(_acc(target)).run(program, inputs)
    return get_backend(name, _acc(target)).run(program, inputs)


def nan_bits_checked(target: str, name: str) -> bool:
    """False where the backend's NaN payloads are not modelled by the reference (the AMX hardware and
    its emulation: which NaN comes out of two NaN operands or TDPBF16PS): there a NaN matches any NaN."""
    return not (target == "amx" and name in ("emulated", "native"))
