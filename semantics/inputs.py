"""Deterministic random inputs for graphs: same seed, same bytes, on every machine.

``random_inputs(graph, seed)`` draws each parameter from a numpy PCG64 stream. Integers are uniform
over the whole type; floats are normal values spread over many binades (or, with ``normal=True``,
standard normal values, as ordinary data is). With ``edges=True`` a fraction of elements is
replaced by edge values (integer bounds, 0, -1; float NaN, +-inf, -0.0, subnormals, the largest
finite values and rounding ties for the narrow types).

:data:`INPUT_SETS` names the input sets the conformance run draws for each graph: one edge-heavy
(``random_inputs(g, seed, edges=True)``) and one ordinary (``random_inputs(g, seed, normal=True)``).
"""

from __future__ import annotations

import numpy as np

from .dtypes import BF16, DType
from .ir import Graph
from .types import TensorType

__all__ = ["random_array", "random_inputs", "edge_values", "INPUT_SETS", "input_set"]

#: The conformance run's input sets per graph: keyword arguments of :func:`random_inputs` by name.
INPUT_SETS: dict[str, dict[str, bool]] = {"edges": {"edges": True}, "normal": {"normal": True}}


def edge_values(dt: DType) -> np.ndarray:
    """Edge values of ``dt`` as an array of that dtype."""
    if dt.is_pred:
        return np.array([False, True])
    if dt.is_int:
        vals = {dt.min, dt.max, 0, 1, dt.max - 1, dt.min + 1, 2, 7, 8, 31, 32, 63, 64}
        if dt.is_signed:
            vals |= {-1, -2, -8, -128 if dt.bits > 8 else -128, 127, 255 if dt.bits > 8 else 127}
        else:
            vals |= {127, 128, 255}
        return np.array(sorted(v for v in vals if dt.min <= v <= dt.max), dtype=object).astype(dt.np)
    fi = np.finfo(np.float32) if dt is BF16 else np.finfo(dt.np)
    tiny = float(fi.tiny) if dt is not BF16 else 2.0 ** -126
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan, -np.nan,
                tiny, -tiny, tiny / 2, -tiny / 4, tiny * 0.75]
    out = np.array(specials, dtype=np.float64).astype(dt.np)
    big = np.array([np.finfo(dt.np).max if dt is not BF16 else 3.3895313892515355e38], dtype=np.float64)
    # rounding ties of the type: 1 + half an ulp, and values halfway between two representable numbers
    eps = 2.0 ** -dt.man_bits
    ties = np.array([1 + eps / 2, 1 + 3 * eps / 2, -(1 + eps / 2), 2 ** 24 + 1.0, 127.5, -128.5, 255.5],
                    dtype=np.float64)
    with np.errstate(over="ignore"):  # 2**24 + 1 overflows f16 to inf, which is an edge value too
        return np.concatenate([out, big.astype(dt.np), ties.astype(dt.np)])


def random_array(rng: np.random.Generator, t: TensorType, edges: bool = False, normal: bool = False) -> np.ndarray:
    """One random array of type ``t`` (floats standard normal with ``normal``)."""
    dt = t.dtype
    n = t.size
    if dt.is_pred:
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.is_int:
        a = rng.integers(dt.min, dt.max, n, endpoint=True, dtype=np.int64 if dt.bits < 64 or dt.is_signed else np.uint64)
        a = a.astype(dt.np)
    elif normal:
        a = rng.standard_normal(n).astype(dt.np)
    else:
        mag = np.exp2(rng.uniform(-8, 8, n))
        sign = np.where(rng.integers(0, 2, n) == 1, -1.0, 1.0)
        a = (sign * mag * rng.uniform(1, 2, n)).astype(dt.np)
    if edges and n:
        ev = edge_values(dt)
        mask = rng.random(n) < 0.25
        a[mask] = ev[rng.integers(0, len(ev), int(mask.sum()))]
    return a.reshape(t.shape)


def random_inputs(graph: Graph, seed: int, edges: bool = False, normal: bool = False) -> list[np.ndarray]:
    """Random inputs for every entry parameter of ``graph``, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for t in graph.param_types:
        assert isinstance(t, TensorType)
        out.append(random_array(rng, t, edges, normal))
    return out


def input_set(graph: Graph, seed: int, name: str) -> list[np.ndarray]:
    """The input set ``name`` of :data:`INPUT_SETS` for ``graph``, deterministic in ``seed``."""
    return random_inputs(graph, seed, **INPUT_SETS[name])
