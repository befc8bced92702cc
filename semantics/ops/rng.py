"""``rng-bit-generator``: declared, parsed and typed, its bits left uninterpreted.

XLA's ``rng-bit-generator(state), algorithm=rng_default|rng_three_fry|rng_philox`` returns a tuple
(new state, bits). The bits are implementation-defined (``rng_default`` is whatever the backend
chooses), so accv does not compute them: the interpreter raises an error naming the instruction,
and the SMT encoding is one uninterpreted function of (algorithm, state) per result: the new
state and each output element (a function of the state bits and the element's index). XLA:CPU
expands the operator into ordinary integer operations before it runs, so optimized dumps
(``.compile().as_text()``) contain those operations instead and evaluate normally.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Attrs
from ..types import TensorType, TupleType, Type
from ._common import tensor
from ._table import AttrSpec, Env, OpDef, OpError, register

__all__: list[str] = []

ALGORITHMS = ("rng_default", "rng_three_fry", "rng_philox")


def _infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    st = tensor(types[0], "state")
    if st.rank != 1 or not (st.dtype.is_int and st.dtype.bits == 64):
        raise OpError(f"rng-bit-generator state must be a rank-1 u64/s64 array, got {st.short()}")
    if not isinstance(declared, TupleType) or len(declared.elements) != 2:
        raise OpError("rng-bit-generator needs its result type written out: (state type, bits type)")
    ds, bits = (tensor(t, "result") for t in declared.elements)
    if ds.dtype != st.dtype or ds.shape != st.shape:
        raise OpError(f"rng-bit-generator result state {ds.short()} differs from its operand {st.short()}")
    if not bits.dtype.is_int:
        raise OpError(f"rng-bit-generator bits must be an integer array, got {bits.short()}")
    return TupleType((TensorType(st.dtype, st.shape), TensorType(bits.dtype, bits.shape)))


def _eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    raise OpError(f"rng-bit-generator ({attrs['algorithm']}) is uninterpreted: its bits are "
                  "implementation-defined, so accv does not evaluate it")


def _smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    import z3
    assert isinstance(out, TupleType)
    st_t, bits_t = (tensor(t, "result") for t in out.elements)
    state = args[0].reshape(-1)
    whole = z3.Concat(*state) if state.size > 1 else state[0]
    alg = str(attrs["algorithm"])
    n = whole.size()
    nxt = z3.Function(f"rng_bit_generator_{alg}_state_{n}", z3.BitVecSort(n), z3.BitVecSort(n))(whole)
    new_state = np.empty(st_t.shape, dtype=object)
    for i in range(state.size):
        new_state[i] = z3.Extract(n - 1 - 64 * i, n - 64 - 64 * i, nxt)
    f = z3.Function(f"rng_bit_generator_{alg}_bits{bits_t.dtype.bits}_{n}", z3.BitVecSort(n), z3.BitVecSort(64),
                    z3.BitVecSort(bits_t.dtype.bits))
    bits = np.empty(bits_t.shape, dtype=object)
    flat = bits.reshape(-1)
    for i in range(flat.size):
        flat[i] = f(whole, z3.BitVecVal(i, 64))
    return new_state, bits


register(OpDef("rng-bit-generator", (1, 1), (AttrSpec("algorithm", "enum", choices=ALGORITHMS),),
               _infer, _eval, _smt, "random",
               "state: rank-1 u64 (s64) array; result (state type, integer bits array), written out",
               "bits implementation-defined (XLA:CPU expands it into integer operations before running; "
               "optimized dumps evaluate). Interpreter: an error naming the instruction. SMT: uninterpreted "
               "functions of the state (new state; each output element from the state and its index)",
               uninterpreted=True, needs_declared=True))
