"""Input sets whose outputs carry information, and the measure of how much they do.

A differential check (``accv check``, ``accv compile --check``, a fuzz campaign) compares a
program's outputs with the reference interpreter's. It tells something only where those outputs
carry information: an attention kernel fed values spread over many binades overflows exp, and
every output is NaN on both sides whatever the program computes. So beside the edge-value and
whole-range sets each check draws a ``scaled`` set, per kernel:

- floats ~ N(0, sigma^2) with ``sigma = K**-0.25`` for the longest contraction K of the graph
  (a ``dot``'s contracting dimensions or a ``reduce``'s dimensions; 1 when none): a dot of two
  such operands has unit variance, as real activations have after the 1/sqrt(d) scaling of
  attention, and exp of it stays finite; s8 in [-8, 8], u8 in [0, 16], wider integers in
  [-1000, 1000]; predicates uniform.
- When the reference outputs of that draw are not all finite and varied (an exp of an exp, a
  log of a negative, an integer clamp that saturates every small value), the draw is retried with
  the values made non-negative, then with sigma / 16 and integer ranges 16 times wider (clipped
  to the type), both signs and then non-negative; the draw with the largest informative share is kept (the
  first one on a tie). The choice is deterministic in the graph and the seed.

:func:`informative_share` is the share of output elements that are finite and belong to an
output that is not constant (a one-element output counts when finite); a set whose share is 0 is
*degenerate*: its comparison agreeing says nothing about the program. :func:`describe` says
which in one line ("informative: 100% finite, varied", "DEGENERATE: all outputs NaN").

:func:`draw` draws one set of a kind (``scaled``, or ``edges`` / ``full``:
:func:`semantics.inputs.random_inputs` with and without edge values); which sets a check runs is
the check's plan (``check.inputs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .inputs import random_inputs
from .interp import evaluate
from .ir import Graph
from .types import TensorType

__all__ = ["ScaledDraw", "contraction_length", "describe", "draw", "draw_scaled", "informative_share",
           "scaled_inputs"]

#: the retries of the ``scaled`` draw: (sigma factor (integer ranges are divided by it), non-negative)
_TRIES: tuple[tuple[float, bool], ...] = ((1.0, False), (1.0, True), (1 / 16, False), (1 / 16, True))


def contraction_length(graph: Graph) -> int:
    """The longest dot contraction or reduction of ``graph``'s entry computation (1 when none)."""
    k = 1
    for ins in graph.entry.instructions:
        if ins.opcode in ("dot", "reduce"):
            t = graph.entry[ins.operands[0]].type
            dims = ins.attrs["lhs_contracting_dims" if ins.opcode == "dot" else "dimensions"]
            if isinstance(t, TensorType):
                k = max(k, math.prod(t.shape[d] for d in dims))
    return k


def _scaled(graph: Graph, seed: int, sigma: float, positive: bool, wide: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng([seed, 1])
    out = []
    for t in graph.param_types:
        if not isinstance(t, TensorType):
            raise TypeError(f"scaled inputs: parameter type {t} is not a tensor")
        dt = t.dtype
        if dt.is_pred:
            a = rng.integers(0, 2, t.shape).astype(bool)
        elif dt.is_float:
            a = rng.normal(0.0, sigma, t.shape)
            a = np.abs(a) if positive else a
        else:
            hi = min(int(((8 if dt.is_signed else 16) if dt.bits == 8 else 1000) * wide), dt.max)
            lo = 0 if positive or not dt.is_signed else max(-hi, dt.min)
            a = rng.integers(lo, hi + 1, t.shape)
        out.append(np.asarray(a).astype(dt.np).reshape(t.shape))
    return out


@dataclass
class ScaledDraw:
    """The ``scaled`` set of a graph: the inputs, the reference outputs on them, their informative
    share, and the sigma and sign the draw settled on."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    share: float
    sigma: float
    positive: bool


def draw_scaled(graph: Graph, seed: int) -> ScaledDraw:
    """The ``scaled`` set (module docstring), with the reference outputs it was chosen by."""
    sigma0 = contraction_length(graph) ** -0.25
    best: ScaledDraw | None = None
    for factor, positive in _TRIES:
        xs = _scaled(graph, seed, sigma0 * factor, positive, wide=1 / factor)
        with np.errstate(all="ignore"):
            ys = evaluate(graph, xs)
        d = ScaledDraw(xs, ys, informative_share(ys), sigma0 * factor, positive)
        if best is None or d.share > best.share:
            best = d
        if best.share >= 1.0:
            break
    assert best is not None
    return best


def scaled_inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    """The inputs of the ``scaled`` set of ``graph`` for ``seed``."""
    return draw_scaled(graph, seed).inputs


def draw(graph: Graph, seed: int, kind: str) -> list[np.ndarray]:
    """One input set of ``kind`` (``scaled``, ``edges`` or ``full``) for ``graph``."""
    if kind == "scaled":
        return scaled_inputs(graph, seed)
    if kind in ("edges", "full"):
        return random_inputs(graph, seed, edges=kind == "edges")
    raise ValueError(f"unknown input set kind '{kind}' (known: scaled, edges, full)")


def _floats(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64).ravel()


def informative_share(outputs: list[np.ndarray]) -> float:
    """Share of output elements that are finite and in a non-constant output (a one-element output
    counts when finite); 0.0 for no elements."""
    total = good = 0
    for o in outputs:
        f = _floats(o)
        total += f.size
        if f.size == 0:
            continue
        fin = np.isfinite(f)
        if f.size > 1 and np.unique(f[fin]).size <= 1:
            continue
        good += int(fin.sum())
    return good / total if total else 0.0


def describe(outputs: list[np.ndarray]) -> tuple[float, str]:
    """(informative share, one line saying it): ``informative: 100% finite, varied``, ``informative:
    40% finite, varied (60% NaN/inf or in constant outputs)`` or ``DEGENERATE: ...`` with why."""
    share = informative_share(outputs)
    if share >= 1.0:
        return share, "informative: 100% finite, varied"
    if share > 0:
        return share, (f"informative: {math.floor(share * 100)}% finite, varied "
                       f"({100 - math.floor(share * 100)}% NaN/inf or in constant outputs)")
    flat = np.concatenate([_floats(o) for o in outputs]) if outputs else np.zeros(0)
    if flat.size == 0:
        return share, "DEGENERATE: no output elements"
    nan, inf = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
    if nan == flat.size:
        why = "all outputs NaN"
    elif nan + inf == flat.size:
        why = "all outputs NaN or infinite" if nan else "all outputs infinite"
    else:
        vals = np.unique(flat[np.isfinite(flat)])
        what = f"{vals[0]:g}" if vals.size == 1 else "one value each"
        why = f"every output constant ({what})" + (f", the rest NaN/inf" if nan + inf else "")
    return share, f"DEGENERATE: {why}"
