"""Every use of a backend or oracle by the campaign goes through this module, over the backend
registry of :mod:`accv.backends`.

:func:`available_backends` lists the backends a target offers here with the reason when one is
unavailable; :func:`run_backend` runs a program on one and returns its
:class:`~compilers.backend.RunResult` (outputs, cycles or None, log). Backends per target:
gemmini: sim, stream (the command-stream model), rtl; qkv: sim, rtl; amx: sim, emulated (the
emitted C on the emulation header), native (the host's AMX unit).

Graph oracles (:data:`GRAPH_ORACLES`) check the case's graph itself, for every target, whether or
not the target can compile it: ``xla`` runs the graph on XLA:CPU through jax (the ``xla`` extra;
:mod:`semantics.xla_oracle`) and compares it with the reference interpreter in the ``xla-strict``
mode, bit for bit except XLA's host-dependent operators within the bounds of
:mod:`semantics.compare` (:func:`semantics.compare.check_graph`, as the conformance test does), so
a campaign also checks our semantics. :func:`graph_oracle_unavailable` gives the reason when it
cannot run here (jax missing) or cannot run this graph (an accv extension operator, a tuple
parameter); the case records the reason and goes on.
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
from semantics.compare import GraphCheck
from semantics.ir import Graph
from semantics.types import TupleType

__all__ = ["BACKENDS", "DEFAULT_GRAPH_ORACLES", "GRAPH_ORACLES", "available_backends", "check_xla",
           "graph_oracle_unavailable", "nan_bits_checked", "run_backend", "split_backends"]

#: the backends each target offers (the registry's pairs), in the order a campaign runs them
BACKENDS: dict[str, tuple[str, ...]] = {t: backends_for(t) for t in TARGETS}
#: oracles that check the graph (not a compiled program), offered for every target
GRAPH_ORACLES: tuple[str, ...] = ("xla",)
#: the graph oracles a campaign runs when ``--backend`` is not given: none, as xla costs about a second
#: per case (two XLA:CPU compiles; docs/fuzzing.md), as much as the rest of a qkv case: ``--backend ...,xla``
DEFAULT_GRAPH_ORACLES: tuple[str, ...] = ()


def split_backends(target: str, names: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(program backends, graph oracles) to run for a case: ``names`` split, or when it is empty
    every backend of ``target`` available here and :data:`DEFAULT_GRAPH_ORACLES`."""
    if not names:
        return tuple(n for n, why in available_backends(target) if why is None), DEFAULT_GRAPH_ORACLES
    return tuple(n for n in names if n not in GRAPH_ORACLES), tuple(n for n in names if n in GRAPH_ORACLES)


@functools.cache
def _xla_available() -> str | None:
    from semantics.xla_oracle import available

    ok, why = available()
    return None if ok else why


def graph_oracle_unavailable(name: str, graph: Graph) -> str | None:
    """Why graph oracle ``name`` cannot check ``graph`` here, or None when it can."""
    if name != "xla":
        return f"unknown graph oracle '{name}' (known: {', '.join(GRAPH_ORACLES)})"
    why = _xla_available()
    if why is not None:
        return why
    from semantics.gen import NOT_SENT_TO_XLA, xla_ops

    ops = set(xla_ops())
    bad = sorted({i.opcode for c in graph.computations for i in c.instructions
                  if i.opcode not in ops and i.opcode not in ("parameter", "constant")})
    if bad:
        return f"XLA oracle: {bad[0]} is not sent to XLA ({NOT_SENT_TO_XLA.get(bad[0], 'an accv extension operator')})"
    if any(isinstance(t, TupleType) for t in graph.param_types):
        return "XLA oracle: tuple-typed parameters are not supported"
    return None


def check_xla(graph: Graph, inputs: Sequence[np.ndarray]) -> GraphCheck:
    """XLA:CPU against the reference interpreter (``xla-strict``) on ``inputs``: status identical,
    within_bound (host-dependent operators within their bounds) or failed."""
    from semantics.compare import check_graph

    return check_graph(graph, list(inputs), mode="xla-strict")


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
