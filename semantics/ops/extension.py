"""accv extensions: operators that HLO has no opcode for, needed to state an instruction's
semantics exactly (category ``extension`` in docs/semantics.md).

They follow the same floating-point environment as every other operator (DAZ on input, FTZ on
output, round to nearest even), but XLA cannot run them: the random graph generator leaves them
out of its default (XLA-bound) operator set, and the XLA conformance test never sees them. The
interpreter and the SMT encoding are tested against each other (tests/semantics/test_smt_vs_interp.py).

* ``fma(a, b, c) = a * b + c`` with one rounding (IEEE fusedMultiplyAdd), f32 and f64: operands
  read with DAZ, the exact result flushed to a signed zero when its magnitude is below the smallest
  normal (tininess before rounding, as ``dot``'s FMA chain), else rounded once. x86
  ``VFMADD231PS`` under MXCSR.DAZ = MXCSR.FTZ = 1 computes exactly this. It is the very FMA step of
  ``dot``'s f32 accumulation (``contraction._fma_f32``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Attrs
from ..types import TensorType, Type
from . import _z3util as Z
from ._common import same_dtype, same_shape, tensor
from ._float import daz
from ._table import Env, OpDef, OpError, register
from .contraction import _fma_f32, _fma_f64, _z_fma_ftz

__all__: list[str] = []


def _fma_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    t = same_shape(types)
    dt = same_dtype(types)
    if dt.name not in ("f32", "f64"):
        raise OpError(f"fma is defined on f32 and f64, not on {dt}")
    return TensorType(dt, t.shape)


def _fma_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    a, b, c = (np.asarray(x) for x in args)
    prec = a.dtype
    a, b, c = (daz(x, prec) for x in (a, b, c))
    fn = _fma_f64 if prec == np.float64 else _fma_f32
    return np.asarray(fn(a, b, c)).astype(prec).reshape(a.shape)


def _fma_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    tensor(out, "result")
    return Z.elementwise(lambda x, y, z: _z_fma_ftz(Z.daz(x), Z.daz(y), Z.daz(z)), *args)


register(OpDef("fma", (3, 3), (), _fma_infer, _fma_eval, _fma_smt, "extension",
               "f32 or f64, all three operands of one type and shape; same type out",
               "accv extension (no HLO opcode; never sent to XLA): a * b + c rounded once "
               "(round-to-nearest-even), DAZ operands, FTZ on the exact result (tininess before "
               "rounding), exactly one step of dot's f32/f64 FMA chain; x86 VFMADD231PS with "
               "MXCSR.DAZ = FTZ = 1. NaN operand propagates quieted (a's, else b's, else c's)"))
