"""Reference semantics of tensor programs: the one definition everything else stands on.

What belongs here: dtypes and layouts (bflat), the operator table (attributes, shape and dtype
rules, numpy implementation, z3 encoding, documentation), the immutable Graph and its builder, the
XLA HLO text parser and printer, the reference interpreter and the SMT encoder. Nothing here knows
about accelerators.
"""

from __future__ import annotations

from .dtypes import DTYPES, DType, dtype
from .errors import AccvError, EvalError, GraphError, HloSyntaxError, InputError, SmtError, SourceLoc
from .graph import ComputationBuilder, GraphBuilder
from .interp import evaluate
from .ir import Attrs, Computation, Graph, Instruction, Literal
from .layout import bflat, byte_size, unbflat
from .types import Layout, TensorType, TupleType

__all__ = [
    "DTYPES", "DType", "dtype", "AccvError", "EvalError", "GraphError", "HloSyntaxError", "InputError",
    "SmtError", "SourceLoc", "ComputationBuilder", "GraphBuilder", "evaluate", "Attrs", "Computation",
    "Graph", "Instruction", "Literal", "bflat", "byte_size", "unbflat", "Layout", "TensorType", "TupleType",
]
