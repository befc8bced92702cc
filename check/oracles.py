"""The graph oracles: checks of a case's graph itself, beside the compiled program's backends.

What belongs here: :data:`GRAPH_ORACLES`, :func:`split_backends` (a campaign's ``--backend`` list
split into program backends and graph oracles), :func:`graph_oracle_unavailable` and
:func:`check_xla`. ``xla`` runs the graph on XLA:CPU through jax (the ``xla`` extra;
:mod:`semantics.xla_oracle`) and compares it with the reference interpreter in the ``xla-strict``
mode, bit for bit except XLA's host-dependent operators within the bounds of
:mod:`semantics.compare` (:func:`semantics.compare.check_graph`, as the conformance test does), so
a campaign also checks our semantics, for every target, whether or not the target can compile the
graph. :func:`graph_oracle_unavailable` gives the reason when it cannot run here (jax missing) or
cannot run this graph (an accv extension operator, a tuple parameter); the case records the reason
and goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from semantics.compare import GraphCheck
from semantics.ir import Graph
from semantics.types import TupleType

from .backends import available_backends

__all__ = ["DEFAULT_GRAPH_ORACLES", "GRAPH_ORACLES", "check_xla", "graph_oracle_unavailable", "split_backends"]

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

