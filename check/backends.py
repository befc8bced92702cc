"""The backend registry: which backend runs a target's programs, by (target, backend name).

A backend is a class implementing :class:`compilers.backend.BackendKind`: its ``name``, the
``targets`` it runs, what it observes (``nan_bits``: whether its NaN outputs carry the payload and
sign the reference models; the comparison rule of :mod:`check.policy` reads it),
``unavailable()`` (why it cannot run on this host, or None) and ``for_target(acc)``.
:data:`REGISTRY` holds one entry per backend; registering a new one is one entry here, with its
name added to the ``backends`` of the target packages it runs
(:class:`compilers.targets.TargetPackage`). A pair is registered when both say so;
tests/check/test_backends.py checks that they agree.

- ``sim``: the description's functional simulator (:class:`compilers.simulator.SimBackend`),
  every target; cycles are the description's estimates.
- ``stream``: Gemmini's command-stream model (:class:`compilers.targets.gemmini.backend.StreamBackend`);
  no cycles.
- ``emulated``: an AMX program's emitted C built against our emulation header
  (:class:`compilers.targets.amx.backends.EmulatedBackend`), any host with gcc; no cycles; NaN
  bits as the hardware's, which the reference does not model (``nan_bits`` False).
- ``native``: the same C built for Sapphire Rapids and run on the host's AMX unit
  (:class:`compilers.targets.amx.backends.NativeBackend`); unavailable, with the reason, on a
  host without AMX / AVX-512 in /proc/cpuinfo; ``nan_bits`` False.
- ``rtl``: the Verilated RTL (:class:`rtl_harness.runner.RtlBackend`), gemmini and qkv; cycles
  measured; unavailable, with the reason, where Verilator is missing.

This module sits above both ``compilers`` and ``rtl_harness``.
"""

from __future__ import annotations

from compilers.backend import Backend, BackendKind, BackendUnavailable
from compilers.isa import Accelerator
from compilers.simulator import SimBackend
from compilers.targets import TARGETS, target_package
from compilers.targets.amx.backends import EmulatedBackend, NativeBackend
from compilers.targets.gemmini.backend import StreamBackend
from rtl_harness.runner import RtlBackend

__all__ = ["REGISTRY", "available_backends", "backend_names", "backends_for", "get_backend", "pairs", "unavailable"]

#: every backend, by name, in the order users see them listed
REGISTRY: dict[str, BackendKind] = {k.name: k for k in (SimBackend, StreamBackend, RtlBackend, EmulatedBackend,
                                                                NativeBackend)}


def backend_names() -> tuple[str, ...]:
    """Every registered backend's name."""
    return tuple(REGISTRY)


def backends_for(target: str) -> tuple[str, ...]:
    """The backends registered for ``target``, in the order its package lists them."""
    return tuple(n for n in target_package(target).backends if n in REGISTRY and target in REGISTRY[n].targets)


def pairs() -> list[tuple[str, str]]:
    """Every registered (target, backend name)."""
    return [(t, n) for t in TARGETS for n in backends_for(t)]


def unavailable(target: str, name: str) -> str | None:
    """Why backend ``name`` cannot run programs of ``target`` here (no such pair, or a missing
    toolchain), or None when it can."""
    if name not in REGISTRY:
        return f"unknown backend '{name}' (known: {', '.join(REGISTRY)})"
    if name not in backends_for(target):
        return f"target '{target}' has no {name} backend (its backends: {', '.join(backends_for(target))})"
    why = REGISTRY[name].unavailable()
    return None if why is None else f"the {name} backend is unavailable: {why}"


def get_backend(acc: Accelerator, name: str, **options: object) -> Backend:
    """Backend ``name`` for programs of ``acc`` (``options`` go to its ``for_target``, e.g. the
    rtl backend's ``dram_latency``); raises :class:`BackendUnavailable` with the one-line reason."""
    why = unavailable(acc.name, name)
    if why is not None:
        raise BackendUnavailable(why)
    kind = REGISTRY[name]
    return kind.for_target(acc, **options) if options else kind.for_target(acc)  # type: ignore[call-arg]


def available_backends(target: str) -> list[tuple[str, str | None]]:
    """(name, None) for each backend of ``target`` that runs here, (name, reason) for the others."""
    return [(n, unavailable(target, n)) for n in backends_for(target)]

