"""Data-dependent movement and layout reinterpretation: ``gather``, ``scatter``, ``sort``, ``topk``
and ``bitcast``, as XLA defines them.

* gather / scatter follow XLA's general definitions (offset_dims, collapsed_slice_dims,
  start_index_map, index_vector_dim; update_window_dims, inserted_window_dims,
  scatter_dims_to_operand_dims). Gather clamps each start index so that the slice fits (never out
  of bounds); scatter skips an update window that does not fit entirely, and applies updates in
  row-major order of the scatter indices through its region (so repeated indices combine in that
  order).
* sort: along ``dimensions={d}``, every operand permuted by the order the comparator region
  defines (a stable sort: equal keys keep their order, as with ``is_stable=true``).
* topk: the k largest (``largest=true``) elements along the last dimension and their s32
  indices, in descending order; ties keep the lower index first; floats ordered by IEEE totalOrder
  with -0.0 == +0.0 (NaN largest).
* bitcast: a reinterpretation of the operand's buffer in the result's shape and layout; with the
  same dtype and element count it moves element i of the operand's physical order to element i of
  the result's physical order (a reshape when both layouts are row-major).

z3 encodings: gather and scatter move terms when their indices are constants and select over every
start position when they are symbolic; sort and topk are odd-even transposition sorting networks
(stable); bitcast is a fixed permutation.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..dtypes import DTYPES
from ..ir import Attrs
from ..types import TensorType, TupleType, Type
from ._common import dims_valid, need_declared, tensor
from ._table import AttrSpec, Env, OpDef, OpError, register

S32 = DTYPES["s32"]


def _ints(attrs: Attrs, name: str) -> tuple[int, ...]:
    v = attrs.get(name, ())
    return tuple(int(x) for x in v)


# -- gather ---------------------------------------------------------------------------------------

def _batch_shape(idx: TensorType, ivd: int) -> tuple[list[int], int]:
    shape = list(idx.shape)
    if ivd == len(shape):
        return shape, 1
    return shape[:ivd] + shape[ivd + 1:], shape[ivd]


def _gather_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x, idx = tensor(types[0], "operand"), tensor(types[1], "start indices")
    if not idx.dtype.is_int:
        raise OpError(f"gather start indices must be integers, got {idx.dtype}")
    offset, collapsed, sim = _ints(attrs, "offset_dims"), _ints(attrs, "collapsed_slice_dims"), _ints(attrs, "start_index_map")
    sizes, ivd = _ints(attrs, "slice_sizes"), attrs["index_vector_dim"]
    if not 0 <= ivd <= idx.rank:
        raise OpError(f"index_vector_dim={ivd} out of range for indices of rank {idx.rank}")
    batch, nvec = _batch_shape(idx, ivd)
    if len(sim) != nvec:
        raise OpError(f"start_index_map has {len(sim)} entries, the index vectors have {nvec}")
    if len(sizes) != x.rank:
        raise OpError(f"slice_sizes has {len(sizes)} entries for an operand of rank {x.rank}")
    dims_valid(sim, x.rank, "start_index_map")
    dims_valid(collapsed, x.rank, "collapsed_slice_dims")
    for d, s in enumerate(sizes):
        if not 0 <= s <= x.shape[d]:
            raise OpError(f"slice size {s} out of range for dimension {d} of size {x.shape[d]}")
    for d in collapsed:
        if sizes[d] != 1:
            raise OpError(f"collapsed slice dimension {d} must have slice size 1")
    window = [s for d, s in enumerate(sizes) if d not in collapsed]
    rank = len(batch) + len(window)
    if len(offset) != len(window):
        raise OpError(f"offset_dims has {len(offset)} entries, the slice keeps {len(window)} dimensions")
    dims_valid(offset, rank, "offset_dims")
    shape, bi, wi = [], 0, 0
    for d in range(rank):
        if d in offset:
            shape.append(window[wi])
            wi += 1
        else:
            shape.append(batch[bi])
            bi += 1
    return TensorType(x.dtype, tuple(shape))


def _gather_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, idx = args
    t = tensor(out, "result")
    offset, collapsed, sim = _ints(attrs, "offset_dims"), _ints(attrs, "collapsed_slice_dims"), _ints(attrs, "start_index_map")
    sizes, ivd = _ints(attrs, "slice_sizes"), attrs["index_vector_dim"]
    iv = idx[..., None] if ivd == idx.ndim else np.moveaxis(idx, ivd, -1)
    batch_dims = [d for d in range(t.rank) if d not in offset]
    res = np.empty(t.shape, dtype=x.dtype)
    kept = [d for d in range(x.ndim) if d not in collapsed]
    for b in np.ndindex(*iv.shape[:-1]):
        start = [0] * x.ndim
        for k, d in enumerate(sim):
            start[d] = int(min(max(int(iv[b + (k,)]), 0), x.shape[d] - sizes[d]))
        sl = x[tuple(slice(s, s + n) for s, n in zip(start, sizes, strict=True))]
        sl = sl.reshape([sizes[d] for d in kept])
        target: list[Any] = [slice(None)] * t.rank
        for k, d in enumerate(batch_dims):
            target[d] = b[k]
        res[tuple(target)] = sl[()] if sl.ndim == 0 else sl      # an object array stores a 0-d array whole
    return res


def _int_terms(idx: Any, dt: Any) -> np.ndarray | None:
    """z3 index terms as an int64 array when every one is a numeral, else None."""
    import z3
    if not all(z3.is_bv_value(v) for v in idx.reshape(-1)):
        return None
    vals = [v.as_signed_long() if dt.is_signed else v.as_long() for v in idx.reshape(-1)]
    return np.array(vals, dtype=np.int64).reshape(idx.shape)


def _wide(term: Any, dt: Any) -> Any:
    """An index term widened to 65 bits (every s64/u64 value fits), compared signed."""
    import z3
    ext = 65 - dt.bits
    return z3.SignExt(ext, term) if dt.is_signed else z3.ZeroExt(ext, term)


def _select(cands: list[tuple[Any, np.ndarray]], default: np.ndarray) -> np.ndarray:
    """Elementwise ``If(cond_0, v_0, If(cond_1, v_1, ... default))``."""
    import z3
    res = np.array(default, dtype=object, copy=True)
    for cond, v in reversed(cands):
        for e in np.ndindex(res.shape):
            res[e] = z3.If(cond, v[e], res[e])
    return res


def _gather_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    """Constant indices: the interpreter's data movement on term arrays. Symbolic indices: for
    each index vector, a select over every clamped start position (the slice sizes are static)."""
    import itertools

    import z3
    x, idx = args
    idt = env.extra["operand_dtypes"][1]
    known = _int_terms(idx, idt)
    if known is not None:
        return _gather_eval([x, known], attrs, out, env)
    t = tensor(out, "result")
    offset, collapsed, sim = _ints(attrs, "offset_dims"), _ints(attrs, "collapsed_slice_dims"), _ints(attrs, "start_index_map")
    sizes, ivd = _ints(attrs, "slice_sizes"), attrs["index_vector_dim"]
    iv = idx[..., None] if ivd == idx.ndim else np.moveaxis(idx, ivd, -1)
    batch_dims = [d for d in range(t.rank) if d not in offset]
    kept = [d for d in range(x.ndim) if d not in collapsed]
    res = np.empty(t.shape, dtype=object)
    for b in np.ndindex(*iv.shape[:-1]):
        per_dim = []
        for k, d in enumerate(sim):
            hi = x.shape[d] - sizes[d]
            w = _wide(iv[b + (k,)], idt)
            opts = []
            for v in range(hi + 1):
                if hi == 0:
                    cond = z3.BoolVal(True)
                elif v == 0:
                    cond = w <= 0
                elif v == hi:
                    cond = w >= hi
                else:
                    cond = w == v
                opts.append((d, v, cond))
            per_dim.append(opts)
        cands = []
        for combo in itertools.product(*per_dim):
            start = [0] * x.ndim
            for d, v, _ in combo:
                start[d] = v
            sl = x[tuple(slice(s, s + n) for s, n in zip(start, sizes, strict=True))].reshape([sizes[d] for d in kept])
            cands.append((z3.And(*[c for _, _, c in combo]) if combo else z3.BoolVal(True), sl))
        target: list[Any] = [slice(None)] * t.rank
        for k, d in enumerate(batch_dims):
            target[d] = b[k]
        sel = _select(cands[:-1], cands[-1][1])
        res[tuple(target)] = sel[()] if sel.ndim == 0 else sel
    return res


register(OpDef("gather", (2, 2),
               (AttrSpec("offset_dims", "ints"), AttrSpec("collapsed_slice_dims", "ints"),
                AttrSpec("start_index_map", "ints"), AttrSpec("index_vector_dim", "int"),
                AttrSpec("slice_sizes", "ints"),
                AttrSpec("operand_batching_dims", "ints", required=False, default=()),
                AttrSpec("start_indices_batching_dims", "ints", required=False, default=())),
               _gather_infer, _gather_eval, _gather_smt, "structural",
               "operand of any type, integer start indices",
               "XLA's general gather; each start index is clamped to [0, dim - slice size] (never out "
               "of bounds); batching dims unsupported. SMT: constant indices move terms; symbolic indices select "
               "over every clamped start position"))


# -- scatter --------------------------------------------------------------------------------------

def _scatter_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    if len(types) != 3:
        raise OpError("only scatter of one operand is supported")
    x, idx, upd = (tensor(t, n) for t, n in zip(types, ("operand", "scatter indices", "updates"), strict=True))
    if not idx.dtype.is_int or upd.dtype != x.dtype:
        raise OpError("scatter indices must be integers and updates of the operand's type")
    uwd, iwd, sd = _ints(attrs, "update_window_dims"), _ints(attrs, "inserted_window_dims"), _ints(attrs, "scatter_dims_to_operand_dims")
    ivd = attrs["index_vector_dim"]
    batch, nvec = _batch_shape(idx, ivd)
    if len(sd) != nvec:
        raise OpError(f"scatter_dims_to_operand_dims has {len(sd)} entries, the index vectors have {nvec}")
    if len(uwd) + len(iwd) != x.rank:
        raise OpError("update_window_dims and inserted_window_dims must together cover the operand rank")
    if upd.rank != len(batch) + len(uwd):
        raise OpError(f"updates rank {upd.rank} must be {len(batch)} scatter dims + {len(uwd)} window dims")
    return TensorType(x.dtype, x.shape)


def _scatter_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, idx, upd = args
    uwd, iwd, sd = _ints(attrs, "update_window_dims"), _ints(attrs, "inserted_window_dims"), _ints(attrs, "scatter_dims_to_operand_dims")
    ivd = attrs["index_vector_dim"]
    iv = idx[..., None] if ivd == idx.ndim else np.moveaxis(idx, ivd, -1)
    res = x.copy()
    sdims = [d for d in range(upd.ndim) if d not in uwd]
    wdims = list(uwd)
    win_shape = [upd.shape[d] for d in wdims]
    full = []          # window size per operand dimension
    wi = 0
    for d in range(x.ndim):
        if d in iwd:
            full.append(1)
        else:
            full.append(win_shape[wi])
            wi += 1
    assert env.call is not None
    for b in np.ndindex(*iv.shape[:-1]):
        start = [0] * x.ndim
        for k, d in enumerate(sd):
            start[d] = int(iv[b + (k,)])
        if any(s < 0 or s + n > x.shape[d] for d, (s, n) in enumerate(zip(start, full, strict=True))):
            continue
        sel: list[Any] = [slice(None)] * upd.ndim
        for k, d in enumerate(sdims):
            sel[d] = b[k]
        u = np.asarray(upd[tuple(sel)], dtype=upd.dtype).reshape(full)   # an object element is no array
        region = tuple(slice(s, s + n) for s, n in zip(start, full, strict=True))
        res[region] = np.asarray(env.call(attrs["to_apply"], [res[region], u])).reshape(full)
    return res


def _scatter_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    """Constant indices: the interpreter's updates on term arrays. Symbolic indices: each update,
    in order, selects between the region's result and the old window at every start position where
    the window fits (elsewhere it is skipped, as in the interpreter)."""
    import itertools

    import z3
    x, idx, upd = args
    idt = env.extra["operand_dtypes"][1]
    known = _int_terms(idx, idt)
    if known is not None:
        return _scatter_eval([x, known, upd], attrs, out, env)
    uwd, iwd, sd = _ints(attrs, "update_window_dims"), _ints(attrs, "inserted_window_dims"), _ints(attrs, "scatter_dims_to_operand_dims")
    ivd = attrs["index_vector_dim"]
    iv = idx[..., None] if ivd == idx.ndim else np.moveaxis(idx, ivd, -1)
    res = np.array(x, dtype=object, copy=True)
    sdims = [d for d in range(upd.ndim) if d not in uwd]
    win_shape = [upd.shape[d] for d in uwd]
    full, wi = [], 0
    for d in range(x.ndim):
        if d in iwd:
            full.append(1)
        else:
            full.append(win_shape[wi])
            wi += 1
    assert env.call is not None
    for b in np.ndindex(*iv.shape[:-1]):
        sel: list[Any] = [slice(None)] * upd.ndim
        for k, d in enumerate(sdims):
            sel[d] = b[k]
        u = np.asarray(upd[tuple(sel)], dtype=upd.dtype).reshape(full)   # an object element is no array
        ranges = [range(x.shape[d] - full[d] + 1) for d in range(x.ndim)]
        for start in itertools.product(*ranges):
            conds = [_wide(iv[b + (k,)], idt) == start[d] for k, d in enumerate(sd)]
            if any(start[d] != 0 for d in range(x.ndim) if d not in sd):
                continue
            region = tuple(slice(s, s + n) for s, n in zip(start, full, strict=True))
            old = res[region]
            new = np.asarray(env.call(attrs["to_apply"], [old, u])).reshape(full)
            res[region] = _select([(z3.And(*conds) if conds else z3.BoolVal(True), new)], old)
    return res


register(OpDef("scatter", (3, None),
               (AttrSpec("update_window_dims", "ints"), AttrSpec("inserted_window_dims", "ints"),
                AttrSpec("scatter_dims_to_operand_dims", "ints"), AttrSpec("index_vector_dim", "int"),
                AttrSpec("to_apply", "computation"),
                AttrSpec("input_batching_dims", "ints", required=False, default=()),
                AttrSpec("scatter_indices_batching_dims", "ints", required=False, default=())),
               _scatter_infer, _scatter_eval, _scatter_smt, "structural",
               "one operand, integer indices, updates of the operand's type; region (T, T) -> T",
               "XLA's general scatter (one operand); an update window that does not fit is skipped; "
               "updates applied in row-major order of the indices through the region. SMT: constant indices "
               "move terms; symbolic indices select per update over every start position that fits"))


# -- sort -----------------------------------------------------------------------------------------

def _sort_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    xs = [tensor(t, f"operand {i}") for i, t in enumerate(types)]
    for x in xs:
        if x.shape != xs[0].shape:
            raise OpError("sort operands have different shapes")
    (d,) = attrs["dimensions"] if len(attrs["dimensions"]) == 1 else (None,)
    if d is None:
        raise OpError("sort takes one dimension")
    dims_valid((d,), xs[0].rank, "sort dimensions")
    outs = tuple(TensorType(x.dtype, x.shape) for x in xs)
    return outs[0] if len(outs) == 1 else TupleType(outs)


def _sort_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    (d,) = attrs["dimensions"]
    region = attrs["to_apply"]
    assert env.call is not None
    call = env.call
    moved = [np.moveaxis(a, d, -1) for a in args]
    res = [m.copy() for m in moved]
    n = moved[0].shape[-1]
    for b in np.ndindex(*moved[0].shape[:-1]):
        vals = [m[b] for m in moved]

        def less(i: int, j: int, vals: list[np.ndarray] = vals) -> bool:
            ops: list[Any] = []
            for v in vals:
                ops += [np.asarray(v[i]), np.asarray(v[j])]
            return bool(call(region, ops))

        order = sorted(range(n), key=functools.cmp_to_key(lambda i, j: -1 if less(i, j) else (1 if less(j, i) else 0)))
        for r, v in zip(res, vals, strict=True):
            r[b] = v[order]
    outs = [np.ascontiguousarray(np.moveaxis(r, -1, d)) for r in res]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _network(n: int) -> list[tuple[int, int]]:
    """Odd-even transposition sort: n rounds of adjacent compare-exchanges. Exchanging only when
    the later element is strictly before the earlier one keeps it stable."""
    return [(i, i + 1) for r in range(n) for i in range(r % 2, n - 1, 2)]


def _sort_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    """A sorting network over term arrays; each exchange asks the comparator region whether the
    later element goes first. Equal to the interpreter's stable sort for a strict weak order (the
    comparators XLA and jax emit: LT/GT, TOTALORDER for floats)."""
    import z3
    (d,) = attrs["dimensions"]
    assert env.call is not None
    moved = [np.array(np.moveaxis(a, d, -1), dtype=object, copy=True) for a in args]
    n = moved[0].shape[-1]
    for b in np.ndindex(*moved[0].shape[:-1]):
        cols = [list(m[b]) for m in moved]
        for i, j in _network(n):
            ops: list[Any] = []
            for col in cols:
                ops += [np.asarray(col[j], dtype=object), np.asarray(col[i], dtype=object)]
            swap = np.asarray(env.call(attrs["to_apply"], ops)).reshape(())[()]
            for col in cols:
                col[i], col[j] = z3.If(swap, col[j], col[i]), z3.If(swap, col[i], col[j])
        for m, col in zip(moved, cols, strict=True):
            m[b] = np.array(col, dtype=object)
    outs = [np.ascontiguousarray(np.moveaxis(m, -1, d)) for m in moved]
    return outs[0] if len(outs) == 1 else tuple(outs)


register(OpDef("sort", (1, None), (AttrSpec("dimensions", "ints"), AttrSpec("to_apply", "computation"),
                                   AttrSpec("is_stable", "enum", required=False, choices=("true", "false"))),
               _sort_infer, _sort_eval, _sort_smt, "structural",
               "operands of one shape, any types; comparator region (T0, T0, T1, T1, ...) -> pred",
               "every operand permuted by the comparator's order along the dimension; stable (ties keep "
               "their order). SMT: an odd-even transposition network asking the region (equal for a strict "
               "weak order)"))


# -- topk -----------------------------------------------------------------------------------------

def _topk_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    k = attrs["k"]
    if x.rank < 1 or not 0 <= k <= x.shape[-1]:
        raise OpError(f"topk k={k} out of range for {x.short()}")
    if attrs.get("largest", "true") != "true":
        raise OpError("topk with largest=false is not supported")
    shape = x.shape[:-1] + (k,)
    return TupleType((TensorType(x.dtype, shape), TensorType(S32, shape)))


def _topk_key(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iub":
        return x.astype(np.float64) if x.dtype.kind != "b" else x.astype(np.int8)
    si = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(si).astype(np.int64)
    return np.where(bits < 0, -(bits & np.int64(np.iinfo(si).max)), bits)   # -0.0 and +0.0 both 0


def _topk_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x = args[0]
    k = attrs["k"]
    key = _topk_key(x)
    order = np.argsort(-key, axis=-1, kind="stable")[..., :k]
    return (np.take_along_axis(x, order, -1), order.astype(np.int32))


def _topk_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    """A stable descending sorting network over (value, index) pairs, cut at k. Floats: NaN is
    largest, -0.0 == +0.0, otherwise IEEE order (SMT has one NaN: a negative NaN, which the
    interpreter orders smallest, is outside what the encoding represents)."""
    import z3
    x = args[0]
    k = attrs["k"]
    dt = env.extra["operand_dtypes"][0]

    def greater(a: Any, b: Any) -> Any:
        if dt.is_float:
            return z3.If(z3.fpIsNaN(a), z3.Not(z3.fpIsNaN(b)), z3.And(z3.Not(z3.fpIsNaN(b)), z3.fpGT(a, b)))
        if dt.is_pred:
            return z3.And(a, z3.Not(b))
        return a > b if dt.is_signed else z3.UGT(a, b)

    n = x.shape[-1]
    vals = np.empty(x.shape[:-1] + (k,), dtype=object)
    inds = np.empty(x.shape[:-1] + (k,), dtype=object)
    for b in np.ndindex(*x.shape[:-1]):
        col = list(x[b])
        ix = [z3.BitVecVal(i, 32) for i in range(n)]
        for i, j in _network(n):
            sw = greater(col[j], col[i])
            col[i], col[j] = z3.If(sw, col[j], col[i]), z3.If(sw, col[i], col[j])
            ix[i], ix[j] = z3.If(sw, ix[j], ix[i]), z3.If(sw, ix[i], ix[j])
        for q in range(k):
            vals[b + (q,)], inds[b + (q,)] = col[q], ix[q]
    return (vals, inds)



register(OpDef("topk", (1, 1), (AttrSpec("k", "int"), AttrSpec("largest", "enum", required=False,
                                                              choices=("true", "false"))),
               _topk_infer, _topk_eval, _topk_smt, "structural",
               "operand of a numeric type; returns (values, s32 indices)",
               "the k largest along the last dimension, descending; ties: lower index first; floats by "
               "totalOrder with -0.0 == +0.0 (NaN largest); also read from custom-call "
               "custom_call_target=\"TopK\". SMT: a stable descending sorting network cut at k"))


# -- bitcast --------------------------------------------------------------------------------------

def _bitcast_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x = tensor(types[0], "operand")
    out = need_declared(declared, "bitcast")
    if out.dtype.bits != x.dtype.bits or out.dtype.is_pred != x.dtype.is_pred or out.size != x.size:
        raise OpError(f"bitcast {x.short()} -> {out.short()} must keep the element width and count")
    for t in (x, out):
        if t.layout is not None and t.layout.tiles:
            raise OpError("bitcast of a tiled layout is not supported")
    return TensorType(out.dtype, out.shape)


def _physical(shape: tuple[int, ...], t: TensorType) -> list[int]:
    return list(reversed(t.effective_layout.minor_to_major))


def _bitcast_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x = args[0]
    t = tensor(out, "result")
    src = env.extra.get("operand_types", [None])[0]
    src_t = src if isinstance(src, TensorType) else TensorType(t.dtype, x.shape)
    order_in = _physical(x.shape, src_t)
    flat = np.ascontiguousarray(np.transpose(x, order_in)).reshape(-1)      # physical order
    order_out = _physical(t.shape, t)
    phys_shape = [t.shape[d] for d in order_out]
    y = flat.reshape(phys_shape)
    inv = [order_out.index(d) for d in range(t.rank)]
    r = np.ascontiguousarray(np.transpose(y, inv)).reshape(t.shape)
    if r.dtype == object:
        if src is not None and isinstance(src, TensorType) and src.dtype != t.dtype:
            raise OpError("bitcast to another element type has no SMT encoding")
    elif r.dtype != t.dtype.np:
        r = r.view(t.dtype.np)
    return r


register(OpDef("bitcast", (1, 1), (), _bitcast_infer, _bitcast_eval, _bitcast_eval, "structural",
               "same element width and count, any shape and layout",
               "the operand's buffer read in the result's shape and layout: element i of the operand's "
               "physical (layout) order is element i of the result's physical order; a reshape when "
               "both layouts are row-major; another element type of the same width reinterprets the bits",
               needs_declared=True))

__all__: list[str] = []
