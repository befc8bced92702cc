"""The operator table (see :mod:`semantics.ops._table`); importing this package registers every
operator family."""

from . import contraction, convert, elementwise, extension, structural  # noqa: F401  (registration side effects)
from ._table import REGISTRY, AttrSpec, Env, OpDef, OpError, get_op

__all__ = ["REGISTRY", "AttrSpec", "Env", "OpDef", "OpError", "get_op"]
