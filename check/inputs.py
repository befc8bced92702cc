"""The one input-set plan: which inputs a check runs a program on.

What belongs here: :class:`InputSet` and :func:`input_sets`, the plan of ``accv check --check N``,
of a campaign case (N = 3, the case's seed) and of the pytest plugin (after the kernel file's own
``// accv: inputs``, :func:`given`). Set ``i`` is of kind ``KINDS[i % 3]`` drawn with seed
``seed + i``:

- ``scaled``: ordinary values scaled as real activations are, so the outputs stay finite and
  varied (:func:`semantics.informative.draw_scaled`: floats normal with standard deviation
  K**-0.25 for the graph's longest contraction K, small integers, retried non-negative and then
  narrower or wider until the reference outputs carry information);
- ``edges``: the whole range with a quarter of the elements edge values: integer bounds, NaN,
  +-inf, -0.0, subnormals and rounding ties (:func:`semantics.inputs.random_inputs`);
- ``full``: integers uniform over the type (wraparound, saturation), floats over many binades.

Whether a set's outputs carry information is measured by
:func:`semantics.informative.informative_share`; a check whose every set agreed but carried none is
``degenerate`` (:mod:`check.verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from semantics.informative import draw, draw_scaled
from semantics.ir import Graph

__all__ = ["KINDS", "InputSet", "given", "input_sets"]

#: the kinds set ``i`` cycles through
KINDS: tuple[str, ...] = ("scaled", "edges", "full")


@dataclass
class InputSet:
    """One input set: ``name`` (unique in a plan: the kind, then ``kind2``.. when it repeats),
    kind, seed, the inputs and (``scaled``) the reference outputs already computed while drawing
    it."""

    name: str
    kind: str
    seed: int
    inputs: list[np.ndarray]
    outputs: list[np.ndarray] | None = None

    @property
    def label(self) -> str:
        """How a message names it."""
        if self.kind == "given":
            return f"input set {self.name}"
        return f"input set {self.name} ({self.kind} values, seed {self.seed})"


def input_sets(graph: Graph, n: int = 3, seed: int = 0) -> list[InputSet]:
    """The ``n`` sets of the plan (module doc) for ``graph``."""
    sets = []
    for i in range(n):
        kind, s = KINDS[i % len(KINDS)], seed + i
        name = kind if i < len(KINDS) else f"{kind}{i // len(KINDS) + 1}"
        if kind == "scaled":
            d = draw_scaled(graph, s)
            sets.append(InputSet(name, kind, s, d.inputs, d.outputs))
        else:
            sets.append(InputSet(name, kind, s, draw(graph, s, kind)))
    return sets


def given(inputs: Sequence[Sequence[np.ndarray]], name: str = "given") -> list[InputSet]:
    """Input sets given as they are (a kernel file's ``// accv: inputs``, a reproducer's), named
    ``name``, ``name 1``, ..."""
    return [InputSet(name if k == 0 else f"{name} {k}", "given", 0, [np.asarray(x) for x in xs])
            for k, xs in enumerate(inputs)]
