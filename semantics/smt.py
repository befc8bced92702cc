"""SMT semantics: a graph encoded as z3 terms for concrete shapes.

Each tensor becomes a numpy object array of z3 terms, one per element; the operator table's
``smt`` implementations build them (data-movement operators reuse their numpy implementation on
object arrays). Representation: pred = Bool, integers = bit-vectors of their width, floats =
z3 FP sorts with round-to-nearest-even and XLA CPU's DAZ/FTZ (see :mod:`semantics.ops._z3util`).
exponential, log and tanh are uninterpreted functions: :func:`encode` reports which were used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import z3

from .interp import run_computation
from .ir import Graph
from .ops import REGISTRY
from .ops import _z3util as Z
from .types import TensorType, TupleType

__all__ = ["SymTensor", "Encoding", "symbolic_inputs", "encode", "concrete", "evaluate_smt"]


@dataclass(frozen=True)
class SymTensor:
    """An object array of z3 terms plus its tensor type."""

    terms: np.ndarray
    type: TensorType


@dataclass(frozen=True)
class Encoding:
    """The outputs of a graph as z3 terms over its input variables.

    Attributes:
        inputs: one SymTensor of fresh variables (or given terms) per parameter.
        outputs: one SymTensor per output (tuple roots flattened).
        uninterpreted: names of operators encoded as uninterpreted functions; a result that
            depends on them holds for every interpretation of those functions only.
    """

    inputs: tuple[SymTensor, ...]
    outputs: tuple[SymTensor, ...]
    uninterpreted: frozenset[str]


def symbolic_inputs(graph: Graph, prefix: str = "") -> list[SymTensor]:
    """Fresh z3 variables for every element of every entry parameter (floats: ``fpBVToFP`` of a
    bit-vector variable, so NaN inputs keep their bits; read a model with ``_z3util.model_value``)."""
    res = []
    for i, t in enumerate(graph.param_types):
        assert isinstance(t, TensorType)
        arr = np.empty(t.shape, dtype=object)
        pname = graph.entry.params[i]
        for idx in np.ndindex(t.shape):
            arr[idx] = Z.input_var(f"{prefix}{pname}{list(idx)}", t.dtype)
        res.append(SymTensor(arr, t))
    return res


def concrete(a: np.ndarray, t: TensorType) -> SymTensor:
    """A concrete array as z3 constants."""
    return SymTensor(Z.const_array(np.asarray(a), t.dtype), t)


def encode(graph: Graph, inputs: Sequence[SymTensor] | None = None) -> Encoding:
    """Encode the entry computation; ``inputs`` defaults to fresh variables."""
    ins = list(inputs) if inputs is not None else symbolic_inputs(graph)
    r = run_computation(graph, graph.entry, [s.terms for s in ins], mode="smt")
    rt = graph.result_type
    if isinstance(rt, TupleType):
        outs = tuple(SymTensor(v, t) for v, t in zip(r, rt.elements, strict=True) if isinstance(t, TensorType))
    else:
        outs = (SymTensor(r, rt),)
    used = frozenset(i.opcode for c in graph.computations for i in c.instructions if REGISTRY[i.opcode].uninterpreted)
    return Encoding(tuple(ins), outs, used)


def evaluate_smt(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Evaluate the SMT encoding on concrete inputs (z3 simplification) and return numpy arrays.

    Used to check that the encoding agrees with the interpreter.
    """
    ptypes = graph.param_types
    with Z.exact_nan_bits():
        enc = encode(graph, [concrete(np.asarray(a), t) for a, t in zip(inputs, ptypes, strict=True)])  # type: ignore[arg-type]
    outs = []
    for s in enc.outputs:
        arr = np.empty(s.type.shape, dtype=s.type.dtype.np)
        for idx in np.ndindex(s.type.shape):
            arr[idx] = Z.value_of(s.terms[idx], s.type.dtype)
        outs.append(arr)
    return outs


