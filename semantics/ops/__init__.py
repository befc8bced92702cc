"""The operator table (see :mod:`semantics.ops._table`); importing this package registers every
operator family."""

from . import (contraction, convert, elementwise, elementwise_math, extension, indexing,  # noqa: F401
               rng, structural, window)
from ._table import REGISTRY, AttrSpec, Env, OpDef, OpError, get_op

__all__ = ["REGISTRY", "AttrSpec", "Env", "OpDef", "OpError", "get_op"]
