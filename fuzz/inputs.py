"""Input sets of a campaign case and the measure of whether its outputs carry information.

:func:`input_sets` returns three named sets per case, deterministic in the seed:

- ``scaled``: ordinary values scaled as real activations are, so outputs stay finite and varied
  (:func:`semantics.informative.draw_scaled`: floats normal with standard deviation K**-0.25 for
  the longest contraction K of the graph, so an attention score has unit variance instead of
  overflowing exp; small integers; retried non-negative, then with smaller floats and wider
  integers, when the reference outputs are not all finite and varied).
- ``full``: integers uniform over the whole type (wraparound, saturation), floats over many
  binades (:func:`semantics.inputs.random_inputs`).
- ``edges``: the ``full`` values with a quarter replaced by edge values: integer bounds, NaN, +-inf,
  -0.0, subnormals and rounding ties.

:func:`informative_share` (from :mod:`semantics.informative`, which ``accv check`` uses too) is the
share of output elements that are finite and belong to an output that is not constant; a case
whose ``scaled`` outputs have share 0 is ``degenerate``, not a pass. Every set's share is recorded.
"""

from __future__ import annotations

import numpy as np

from semantics.informative import contraction_length, informative_share, scaled_inputs
from semantics.inputs import random_inputs
from semantics.ir import Graph

__all__ = ["SET_NAMES", "contraction_length", "informative_share", "input_sets", "scaled_inputs"]

SET_NAMES = ("scaled", "full", "edges")


def input_sets(graph: Graph, seed: int) -> list[tuple[str, list[np.ndarray]]]:
    """The named input sets of a case (module docstring)."""
    return [("scaled", scaled_inputs(graph, seed)), ("full", random_inputs(graph, seed)),
            ("edges", random_inputs(graph, seed + 1, edges=True))]
