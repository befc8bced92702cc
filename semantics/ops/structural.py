"""Operators that move data without arithmetic: parameter, constant, iota, broadcast, reshape,
transpose, slice, concatenate, reverse, pad, copy, tuple, get-tuple-element, dynamic-slice and
dynamic-update-slice (the paper's upslice).

Their numpy implementations index and copy only, so the same function serves the interpreter
(numeric arrays) and the SMT encoder (object arrays of z3 terms); only the dynamic ops, whose start
indices may be symbolic, have a separate SMT encoding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import z3

from ..dtypes import PRED
from ..ir import Attrs, Literal
from ..types import TensorType, TupleType, Type
from . import _z3util as Z
from ._common import ceil_div, dims_valid, need_declared, same_dtype, size_max, tensor
from ._table import AttrSpec, Env, OpDef, OpError, register

# (1) parameter -------------------------------------------------------------------------------

def _param_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    if declared is None:
        raise OpError("parameter needs its type written out")
    return declared


def _param_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    raise OpError("parameter values come from the inputs")  # the interpreter binds them


register(OpDef("parameter", (0, 0), (AttrSpec("index", "int"),), _param_infer, _param_eval, _param_eval,
               "structural", "any tensor or tuple type", "the i-th argument of the computation",
               needs_declared=True))


# (2) constant --------------------------------------------------------------------------------

def _const_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    lit: Literal = attrs["literal"]
    return TensorType(lit.dtype, lit.shape)


def _declared_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    """The result shape is the declared one (constant, iota, broadcast, reshape)."""
    return tuple(declared.shape)


def _operand_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    """The result shape is the first operand's (reverse, copy, dynamic-update-slice, convert)."""
    return tuple(types[0].shape)


def _const_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return attrs["literal"].to_array()


def _const_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    lit: Literal = attrs["literal"]
    return Z.const_array(lit.to_array(), lit.dtype)


register(OpDef("constant", (0, 0), (AttrSpec("literal", "literal"),), _const_infer, _const_eval, _const_smt,
               "structural", "any tensor type", "the literal's bits exactly (NaN payloads, -0.0 kept)",
               needs_declared=True, shape=_declared_shape))


# (3) iota ------------------------------------------------------------------------------------

def _iota_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    out = need_declared(declared, "iota")
    d = attrs["iota_dimension"]
    dims_valid((d,), out.rank, "iota_dimension")
    if out.dtype is PRED:
        raise OpError("iota is not defined on pred")
    return TensorType(out.dtype, _declared_shape(types, attrs, out))


def _iota_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    t = tensor(out, "result")
    d = attrs["iota_dimension"]
    shape = [1] * t.rank
    shape[d] = t.shape[d]
    from .convert import convert_array
    v = convert_array(np.arange(t.shape[d], dtype=np.int64).reshape(shape), t.dtype)
    return np.ascontiguousarray(np.broadcast_to(v, t.shape))


def _iota_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return Z.const_array(_iota_eval(args, attrs, out, env), tensor(out, "result").dtype)


register(OpDef("iota", (0, 0), (AttrSpec("iota_dimension", "int"),), _iota_infer, _iota_eval, _iota_smt,
               "structural", "integer or float result", "element i along the dimension is convert(i)",
               needs_declared=True, shape=_declared_shape))


# (4) broadcast -------------------------------------------------------------------------------

def _broadcast_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    out = need_declared(declared, "broadcast")
    dims = attrs["dimensions"]
    if len(dims) != x.rank:
        raise OpError(f"broadcast dimensions {list(dims)} must name one output dimension per operand "
                      f"dimension (operand rank {x.rank})")
    dims_valid(dims, out.rank, "broadcast dimensions")
    for i, d in enumerate(dims):
        if x.shape[i] != out.shape[d] and x.shape[i] != 1:
            raise OpError(f"broadcast: operand dimension {i} (size {x.shape[i]}) must equal output "
                          f"dimension {d} (size {out.shape[d]}) or be 1")
    if list(dims) != sorted(dims):
        raise OpError(f"broadcast dimensions {list(dims)} must be increasing")
    return TensorType(x.dtype, _declared_shape(types, attrs, out))


def _broadcast_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x = args[0]
    t = tensor(out, "result")
    dims = attrs["dimensions"]
    shape = [1] * t.rank
    for i, d in enumerate(dims):
        shape[d] = x.shape[i]
    return np.ascontiguousarray(np.broadcast_to(x.reshape(shape), t.shape)).reshape(t.shape)  # rank 0 stays rank 0


register(OpDef("broadcast", (1, 1), (AttrSpec("dimensions", "ints"),), _broadcast_infer, _broadcast_eval,
               _broadcast_eval, "structural", "any type, kept",
               "operand dimension i becomes output dimension dimensions[i] (a size-1 operand dimension "
               "stretches, as XLA accepts); other dimensions replicate",
               needs_declared=True, shape=_declared_shape))


# (5) reshape ---------------------------------------------------------------------------------

def _reshape_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    out = need_declared(declared, "reshape")
    if x.size != out.size:
        raise OpError(f"reshape {x.short()} -> {out.short()} changes the element count ({x.size} vs {out.size})")
    return TensorType(x.dtype, _declared_shape(types, attrs, out))


def _reshape_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return np.ascontiguousarray(args[0]).reshape(tensor(out, "result").shape)


register(OpDef("reshape", (1, 1), (), _reshape_infer, _reshape_eval, _reshape_eval, "structural",
               "any type, kept", "row-major (logical) order of elements is preserved", needs_declared=True,
               shape=_declared_shape))


# (6) transpose -------------------------------------------------------------------------------

def _transpose_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    perm = attrs["dimensions"]
    if sorted(perm) != list(range(x.rank)):
        raise OpError(f"transpose dimensions {list(perm)} is not a permutation of rank {x.rank}")
    return TensorType(x.dtype, _transpose_shape(types, attrs, declared))


def _transpose_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    return tuple(types[0].shape[p] for p in attrs["dimensions"])


def _transpose_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return np.ascontiguousarray(np.transpose(args[0], attrs["dimensions"])).reshape(tensor(out, "result").shape)


register(OpDef("transpose", (1, 1), (AttrSpec("dimensions", "ints"),), _transpose_infer, _transpose_eval,
               _transpose_eval, "structural", "any type, kept", "output dimension i is operand dimension dimensions[i]",
               shape=_transpose_shape))


# (7) slice -----------------------------------------------------------------------------------

def _slice_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    sl = attrs["slice"]
    if len(sl) != x.rank:
        raise OpError(f"slice has {len(sl)} ranges for an operand of rank {x.rank}")
    for d, (s, e, st) in enumerate(sl):
        if st <= 0:
            raise OpError(f"slice stride {st} in dimension {d} must be positive")
        if not 0 <= s <= e <= x.shape[d]:
            raise OpError(f"slice [{s}:{e}] out of bounds for dimension {d} of size {x.shape[d]}")
    return TensorType(x.dtype, _slice_shape(types, attrs, declared))


def _slice_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    return tuple(ceil_div(e - s, st) for s, e, st in attrs["slice"])


def _slice_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return np.ascontiguousarray(args[0][tuple(slice(s, e, st) for s, e, st in attrs["slice"])]).reshape(
        tensor(out, "result").shape)


register(OpDef("slice", (1, 1), (AttrSpec("slice", "slice"),), _slice_infer, _slice_eval, _slice_eval,
               "structural", "any type, kept", "static [start:limit:stride] per dimension, bounds checked",
               shape=_slice_shape))


# (8) concatenate -----------------------------------------------------------------------------

def _concat_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    ts = [tensor(t, f"operand {i}") for i, t in enumerate(types)]
    dt = same_dtype(types)
    (d,) = _one(attrs["dimensions"], "concatenate dimensions")
    dims_valid((d,), ts[0].rank, "concatenate dimensions")
    for i, t in enumerate(ts):
        if t.rank != ts[0].rank or any(a != b for k, (a, b) in enumerate(zip(t.shape, ts[0].shape, strict=True))
                                        if k != d):
            raise OpError(f"concatenate operand {i} {t.short()} differs from {ts[0].short()} outside dimension {d}")
    return TensorType(dt, _concat_shape(types, attrs, declared))


def _concat_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    (d,) = attrs["dimensions"]
    shape = list(types[0].shape)
    shape[d] = sum((t.shape[d] for t in types[1:]), types[0].shape[d])
    return tuple(shape)


def _one(dims: tuple[int, ...], what: str) -> tuple[int]:
    if len(dims) != 1:
        raise OpError(f"{what} must name exactly one dimension, got {list(dims)}")
    return (dims[0],)


def _concat_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    return np.concatenate(args, axis=attrs["dimensions"][0])


register(OpDef("concatenate", (1, None), (AttrSpec("dimensions", "ints"),), _concat_infer, _concat_eval,
               _concat_eval, "structural", "operands of one type", "joins the operands along one dimension",
               shape=_concat_shape))


# (9) reverse ---------------------------------------------------------------------------------

def _reverse_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    dims_valid(attrs["dimensions"], x.rank, "reverse dimensions")
    return TensorType(x.dtype, _operand_shape(types, attrs, declared))


def _reverse_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    dims = attrs["dimensions"]
    return np.ascontiguousarray(np.flip(args[0], axis=dims) if dims else args[0].copy()).reshape(args[0].shape)


register(OpDef("reverse", (1, 1), (AttrSpec("dimensions", "ints"),), _reverse_infer, _reverse_eval,
               _reverse_eval, "structural", "any type, kept", "reverses the order along each listed dimension",
               shape=_operand_shape))


# (10) pad ------------------------------------------------------------------------------------

def _pad_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    v = tensor(types[1], "padding value")
    if v.rank != 0:
        raise OpError(f"pad value must be a scalar, got {v.short()}")
    same_dtype(types)
    pads = attrs["padding"]
    if len(pads) != x.rank:
        raise OpError(f"padding has {len(pads)} entries for an operand of rank {x.rank}")
    for d, (lo, hi, interior) in enumerate(pads):
        if interior < 0:
            raise OpError(f"interior padding {interior} in dimension {d} must be >= 0")
    shape = _pad_shape(types, attrs, declared)
    for d, ((lo, hi, interior), size) in enumerate(zip(pads, shape, strict=True)):
        if size < 0:
            raise OpError(f"padding {lo}_{hi}_{interior} makes dimension {d} negative")
    return TensorType(x.dtype, shape)


def _pad_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    out = []
    for n, (lo, hi, interior) in zip(types[0].shape, attrs["padding"], strict=True):
        size = lo + hi + n
        if not (isinstance(interior, int) and interior == 0):
            size = size + size_max(n - 1, 0) * interior
        out.append(size)
    return tuple(out)


def _pad_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, v = args
    pads = attrs["padding"]
    # interior padding and non-negative edges first, then crop negative edges
    full = [max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * it for (lo, hi, it), n in zip(pads, x.shape, strict=True)]
    res = np.empty(full, dtype=x.dtype)
    res[...] = v[()] if x.dtype != object else v.reshape(())[()]
    if x.size:
        idx = tuple(slice(max(lo, 0), max(lo, 0) + (n - 1) * (it + 1) + 1, it + 1)
                    for (lo, _, it), n in zip(pads, x.shape, strict=True))
        res[idx] = x
    crop = tuple(slice(-lo if lo < 0 else 0, f + hi if hi < 0 else f)
                 for (lo, hi, _), f in zip(pads, full, strict=True))
    return np.ascontiguousarray(res[crop]).reshape(tensor(out, "result").shape)


register(OpDef("pad", (2, 2), (AttrSpec("padding", "padding"),), _pad_infer, _pad_eval, _pad_eval, "structural",
               "operand and scalar pad value of one type",
               "low/high edge padding (negative crops) and interior padding between elements", shape=_pad_shape))


# (11) copy -----------------------------------------------------------------------------------

def _copy_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    t = types[0]
    return t.without_layout()


register(OpDef("copy", (1, 1), (), _copy_infer, lambda a, at, o, e: np.copy(a[0]), lambda a, at, o, e: np.copy(a[0]),
               "structural", "any type, kept", "identity on values (may change the layout)", shape=_operand_shape))


# (12) tuple / get-tuple-element --------------------------------------------------------------

def _tuple_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    return TupleType(tuple(t.without_layout() for t in types))


register(OpDef("tuple", (0, None), (), _tuple_infer, lambda a, at, o, e: tuple(a), lambda a, at, o, e: tuple(a),
               "structural", "any types", "groups values; only as a root or under get-tuple-element"))


def _gte_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    t = types[0]
    if not isinstance(t, TupleType):
        raise OpError(f"get-tuple-element needs a tuple operand, got {t}")
    i = attrs["index"]
    if not 0 <= i < len(t.elements):
        raise OpError(f"get-tuple-element index {i} out of range for a {len(t.elements)}-tuple")
    return t.elements[i].without_layout()


register(OpDef("get-tuple-element", (1, 1), (AttrSpec("index", "int"),), _gte_infer,
               lambda a, at, o, e: a[0][at["index"]], lambda a, at, o, e: a[0][at["index"]],
               "structural", "element of a tuple", "selects one tuple element"))


# (13) dynamic-slice / dynamic-update-slice ----------------------------------------------------

def _check_indices(types: list[Type], rank: int, first: int) -> None:
    idx = [tensor(t, f"start index {i}") for i, t in enumerate(types[first:])]
    if len(idx) != rank:
        raise OpError(f"needs {rank} scalar start indices, got {len(idx)}")
    for i, t in enumerate(idx):
        if t.rank != 0 or not t.dtype.is_int:
            raise OpError(f"start index {i} must be an integer scalar, got {t.short()}")
        if t.dtype != idx[0].dtype:
            raise OpError(f"start indices must all have one element type (XLA): index 0 is {idx[0].dtype}, "
                          f"index {i} is {t.dtype}")


def _ds_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    _check_indices(types, x.rank, 1)
    sizes = attrs["dynamic_slice_sizes"]
    if len(sizes) != x.rank:
        raise OpError(f"dynamic_slice_sizes has {len(sizes)} entries for rank {x.rank}")
    for d, (s, n) in enumerate(zip(sizes, x.shape, strict=True)):
        if not 0 <= s <= n:
            raise OpError(f"dynamic slice size {s} exceeds dimension {d} of size {n}")
    return TensorType(x.dtype, _ds_shape(types, attrs, declared))


def _ds_shape(types: list[Any], attrs: Any, declared: Any) -> tuple[Any, ...]:
    return tuple(attrs["dynamic_slice_sizes"])


def _clamped_starts(idx: list[np.ndarray], limits: list[int]) -> list[int]:
    return [int(min(max(int(i[()]), 0), lim)) for i, lim in zip(idx, limits, strict=True)]


def _ds_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x = args[0]
    sizes = attrs["dynamic_slice_sizes"]
    starts = _clamped_starts(args[1:], [n - s for n, s in zip(x.shape, sizes, strict=True)])
    return np.ascontiguousarray(x[tuple(slice(s, s + n) for s, n in zip(starts, sizes, strict=True))]).reshape(
        tuple(sizes))


def _z_clamp_start(i: Any, dt: Any, limit: int) -> Any:
    """The clamped start as a z3 bit-vector of 65 bits (wide enough that every s64 and u64 index
    keeps its value under the signed comparisons below)."""
    w = dt.bits
    wide = z3.SignExt(65 - w, i) if dt.is_signed else z3.ZeroExt(65 - w, i)
    return z3.If(wide < 0, z3.BitVecVal(0, 65), z3.If(wide > limit, z3.BitVecVal(limit, 65), wide))


def _ds_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x = args[0]
    dts = env.extra["operand_dtypes"]
    sizes = attrs["dynamic_slice_sizes"]
    limits = [n - s for n, s in zip(x.shape, sizes, strict=True)]
    starts = [_z_clamp_start(a[()], dts[k + 1], lim) for k, (a, lim) in enumerate(zip(args[1:], limits, strict=True))]
    res = np.empty(tuple(sizes), dtype=object)
    for oidx in np.ndindex(*sizes):
        term = None
        for sidx in np.ndindex(*[lim + 1 for lim in limits]):
            val = x[tuple(o + s for o, s in zip(oidx, sidx, strict=True))]
            cond = z3.And(*[st == s for st, s in zip(starts, sidx, strict=True)]) if starts else z3.BoolVal(True)
            term = val if term is None else z3.If(cond, val, term)
        res[oidx] = term
    return res


register(OpDef("dynamic-slice", (1, None), (AttrSpec("dynamic_slice_sizes", "ints"),), _ds_infer, _ds_eval,
               _ds_smt, "structural", "operand of any type, integer scalar start indices",
               "each start index is clamped to [0, dim - size] before slicing (never out of bounds)",
               shape=_ds_shape))


def _dus_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    u = tensor(types[1], "update")
    same_dtype(types[:2])
    if u.rank != x.rank or any(a > b for a, b in zip(u.shape, x.shape, strict=True)):
        raise OpError(f"update {u.short()} does not fit in operand {x.short()}")
    _check_indices(types, x.rank, 2)
    return TensorType(x.dtype, _operand_shape(types, attrs, declared))


def _dus_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, u = args[0], args[1]
    starts = _clamped_starts(args[2:], [n - s for n, s in zip(x.shape, u.shape, strict=True)])
    res = x.copy()
    res[tuple(slice(s, s + n) for s, n in zip(starts, u.shape, strict=True))] = u
    return res


def _dus_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, u = args[0], args[1]
    dts = env.extra["operand_dtypes"]
    limits = [n - s for n, s in zip(x.shape, u.shape, strict=True)]
    starts = [_z_clamp_start(a[()], dts[k + 2], lim) for k, (a, lim) in enumerate(zip(args[2:], limits, strict=True))]
    res = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(*x.shape):
        term = x[idx]
        for sidx in np.ndindex(*[lim + 1 for lim in limits]):
            off = tuple(i - s for i, s in zip(idx, sidx, strict=True))
            if all(0 <= o < n for o, n in zip(off, u.shape, strict=True)):
                cond = z3.And(*[st == s for st, s in zip(starts, sidx, strict=True)]) if starts else z3.BoolVal(True)
                term = z3.If(cond, u[off], term)
        res[idx] = term
    return res


register(OpDef("dynamic-update-slice", (2, None), (), _dus_infer, _dus_eval, _dus_smt, "structural",
               "operand and update of one type, integer scalar start indices",
               "the paper's upslice: start indices clamped to [0, dim - update size], then overwrite",
               shape=_operand_shape))

