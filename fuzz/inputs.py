"""Input sets of a campaign case and the measure of whether its outputs carry information.

:func:`input_sets` returns three named sets per case, deterministic in the seed:

- ``scaled``: ordinary values scaled as real activations are, so outputs stay finite and varied:
  floats ~ N(0, 1/sqrt(K)) with K the longest contraction (dot) or reduction of the graph (an
  attention score then has unit variance instead of overflowing exp); s8 in [-8, 8], u8 in
  [0, 16], wider integers in [-1000, 1000].
- ``full``: integers uniform over the whole type (wraparound, saturation), floats over many
  binades (:func:`semantics.inputs.random_inputs`).
- ``edges``: the ``full`` values with a quarter replaced by edge values: integer bounds, NaN, +-inf,
  -0.0, subnormals and rounding ties.

:func:`informative_share` is the share of output elements that are finite and belong to an output
that is not constant; a case whose ``scaled`` outputs have share 0 is ``degenerate``, not a pass.
"""

from __future__ import annotations

import math

import numpy as np

from semantics.inputs import random_inputs
from semantics.ir import Graph
from semantics.types import TensorType

__all__ = ["SET_NAMES", "contraction_length", "informative_share", "input_sets", "scaled_inputs"]

SET_NAMES = ("scaled", "full", "edges")


def contraction_length(graph: Graph) -> int:
    """The longest dot contraction or reduction of ``graph``'s entry (1 when none)."""
    k = 1
    for ins in graph.entry.instructions:
        if ins.opcode in ("dot", "reduce"):
            t = graph.entry[ins.operands[0]].type
            dims = ins.attrs["lhs_contracting_dims" if ins.opcode == "dot" else "dimensions"]
            if isinstance(t, TensorType):
                k = max(k, math.prod(t.shape[d] for d in dims))
    return k


def scaled_inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    """The ``scaled`` set (module docstring)."""
    rng = np.random.default_rng([seed, 1])
    sigma = 1.0 / math.sqrt(contraction_length(graph))
    out = []
    for t in graph.param_types:
        assert isinstance(t, TensorType)
        dt = t.dtype
        if dt.is_pred:
            a = rng.integers(0, 2, t.shape).astype(bool)
        elif dt.is_float:
            a = rng.normal(0.0, sigma, t.shape).astype(dt.np)
        elif dt.bits == 8:
            a = rng.integers(0 if not dt.is_signed else -8, (16 if not dt.is_signed else 8) + 1, t.shape).astype(dt.np)
        else:
            a = rng.integers(0 if not dt.is_signed else -1000, 1001, t.shape).astype(dt.np)
        out.append(np.asarray(a, dtype=dt.np).reshape(t.shape))
    return out


def input_sets(graph: Graph, seed: int) -> list[tuple[str, list[np.ndarray]]]:
    """The named input sets of a case (module docstring)."""
    return [("scaled", scaled_inputs(graph, seed)), ("full", random_inputs(graph, seed)),
            ("edges", random_inputs(graph, seed + 1, edges=True))]


def informative_share(outputs: list[np.ndarray]) -> float:
    """Share of output elements that are finite and in a non-constant output (a one-element output
    counts when finite)."""
    total = good = 0
    for o in outputs:
        a = np.asarray(o)
        n = a.size
        total += n
        if n == 0:
            continue
        f = a.astype(np.float64).ravel() if a.dtype != np.bool_ else a.ravel().astype(np.float64)
        fin = np.isfinite(f)
        if n > 1 and np.unique(f[fin]).size <= 1:
            continue
        good += int(fin.sum())
    return good / total if total else 0.0
