"""Windowed operators: ``convolution``, ``reduce-window`` and ``select-and-scatter``.

Both read XLA's ``window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}``
attribute (kept as its text, parsed here by :func:`parse_window`).

* convolution (``dim_labels=b01f_01io->b01f``, ``feature_group_count``, ``batch_group_count``):
  integers accumulate exactly and wrap to the result type; floats accumulate like ``dot``: an f32
  (f64) accumulator, one fused multiply-add per contracting element in the order (kernel
  positions row-major, then input feature), DAZ/FTZ, one final rounding to bf16/f16. Padding and
  lhs dilation holes contribute no term. XLA:CPU computes convolutions with Eigen (or oneDNN),
  whose summation order is its own: the jax corpus test bounds the difference as dot's.
* reduce-window: for each output position, the region folds the init value and then the window's
  elements in XLA:CPU's window order (:mod:`semantics.ops._window_order`: row-major, except that
  one padded window dimension may be visited last); positions in the padding (or in
  base-dilation holes) are skipped, as XLA's emitter does. The same code builds z3 terms
  (object arrays).
* select-and-scatter: as XLA:CPU expands it (a variadic reduce-window selecting value and index,
  then a scatter): the output starts as the init value everywhere; for each source position in
  row-major order, the window's in-bounds elements are visited in the reduce-window's order, the
  first is selected and each later one replaces the selection when ``select(selected,
  candidate)`` is false; then ``output[sel] = scatter(output[sel], source)``.
  In SMT the selection is a chain of if-then-else terms over the window's positions.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..ir import Attrs
from ..types import TensorType, TupleType, Type
from ._common import tensor
from ._float import daz, is_float_np, op_precision
from ._table import AttrSpec, Env, OpDef, OpError, register
from ._window_order import window_order

__all__ = ["parse_window", "Window", "window_order"]

_ITEM = re.compile(r"(size|stride|pad|lhs_dilate|rhs_dilate|rhs_reversal|base_dilate|window_dilate)=(\S+)")


class Window:
    """One window attribute, per spatial dimension."""

    def __init__(self, rank: int, size: list[int], stride: list[int], pad: list[tuple[int, int]],
                 lhs_dilate: list[int], rhs_dilate: list[int], reversal: list[int]) -> None:
        self.rank, self.size, self.stride, self.pad = rank, size, stride, pad
        self.lhs_dilate, self.rhs_dilate, self.reversal = lhs_dilate, rhs_dilate, reversal


def parse_window(text: Any, rank: int) -> Window:
    """Read ``{size=3x3 stride=2x2 pad=1_1x1_1 ...}`` for ``rank`` dimensions (OpError if bad)."""
    if not isinstance(text, str) or not (text.startswith("{") and text.endswith("}")):
        raise OpError(f"window must be written {{size=... stride=... pad=...}}, got {text!r}")
    body = text[1:-1].strip()
    items = dict(_ITEM.findall(body))
    if _ITEM.sub("", body).strip():
        raise OpError(f"window has an unknown field in {text!r}")

    def ints(key: str, default: int) -> list[int]:
        if key not in items:
            return [default] * rank
        parts = items[key].split("x")
        if len(parts) != rank or not all(re.fullmatch(r"-?[0-9]+", p) for p in parts):
            raise OpError(f"window {key}={items[key]} does not give {rank} integers")
        return [int(p) for p in parts]

    if "size" not in items and rank > 0:
        raise OpError("window needs size=")
    size = ints("size", 1)
    pads: list[tuple[int, int]] = [(0, 0)] * rank
    if "pad" in items:
        parts = items["pad"].split("x")
        if len(parts) != rank or not all(re.fullmatch(r"-?[0-9]+_-?[0-9]+", p) for p in parts):
            raise OpError(f"window pad={items['pad']} does not give {rank} lo_hi pairs")
        pads = [(int(p.split("_")[0]), int(p.split("_")[1])) for p in parts]
    w = Window(rank, size, ints("stride", 1), pads,
               ints("lhs_dilate", 1) if "lhs_dilate" in items else ints("base_dilate", 1),
               ints("rhs_dilate", 1) if "rhs_dilate" in items else ints("window_dilate", 1),
               ints("rhs_reversal", 0))
    if any(v <= 0 for v in w.size + w.stride + w.lhs_dilate + w.rhs_dilate):
        raise OpError(f"window sizes, strides and dilations must be positive in {text!r}")
    return w


def _out_size(n: int, w: Window, d: int) -> int:
    dilated = (n - 1) * w.lhs_dilate[d] + 1 if n > 0 else 0
    padded = dilated + w.pad[d][0] + w.pad[d][1]
    k = (w.size[d] - 1) * w.rhs_dilate[d] + 1
    return max(0, (padded - k) // w.stride[d] + 1) if padded >= k else 0


def _positions(shape_in: list[int], out: list[int], w: Window, tap: tuple[int, ...]) -> tuple[list[np.ndarray], np.ndarray]:
    """For one window position ``tap``: per dimension the operand index read by every output
    position (broadcastable arrays) and the mask of positions that read a real element."""
    idx, valid = [], np.ones(out, bool)
    for d, o in enumerate(out):
        shp = [1] * len(out)
        shp[d] = o
        p = np.arange(o) * w.stride[d] + tap[d] * w.rhs_dilate[d] - w.pad[d][0]
        ok = (p >= 0) & (p % w.lhs_dilate[d] == 0)
        q = p // w.lhs_dilate[d]
        ok &= q < shape_in[d]
        valid = valid & ok.reshape(shp)
        idx.append(np.where(ok, q, 0).reshape(shp))
    return idx, valid


# -- reduce-window --------------------------------------------------------------------------------

def _rw_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    n = len(types) // 2
    if len(types) % 2 or n == 0:
        raise OpError("reduce-window takes N operands and N init values")
    xs = [tensor(t, f"operand {i}") for i, t in enumerate(types[:n])]
    inits = [tensor(t, f"init value {i}") for i, t in enumerate(types[n:])]
    for x, i in zip(xs, inits, strict=True):
        if x.shape != xs[0].shape:
            raise OpError("reduce-window operands have different shapes")
        if i.rank != 0 or i.dtype != x.dtype:
            raise OpError(f"reduce-window init value must be a {x.dtype} scalar, got {i.short()}")
    w = parse_window(attrs["window"], xs[0].rank)
    shape = tuple(_out_size(s, w, d) for d, s in enumerate(xs[0].shape))
    outs = tuple(TensorType(x.dtype, shape) for x in xs)
    return outs[0] if n == 1 else TupleType(outs)


def _rw_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    n = len(args) // 2
    xs, inits = args[:n], args[n:]
    w = parse_window(attrs["window"], xs[0].ndim)
    oshape = [_out_size(s, w, d) for d, s in enumerate(xs[0].shape)]
    accs = []
    for x, i in zip(xs, inits, strict=True):
        a = np.empty(oshape, dtype=x.dtype)
        a[...] = i.reshape(())[()] if x.dtype != object else i.reshape(())[()]
        accs.append(a)
    assert env.call is not None
    for tap in window_order(xs[0].shape, oshape, w):
        idx, valid = _positions(list(xs[0].shape), oshape, w, tap)
        if not valid.any():
            continue
        vals = [x[tuple(idx)] for x in xs]
        vals = [np.broadcast_to(v, oshape) for v in vals]
        r = env.call(attrs["to_apply"], [*accs, *vals])
        rs = list(r) if n > 1 else [r]
        accs = [np.where(valid, np.broadcast_to(new, oshape), a).astype(a.dtype) for new, a in zip(rs, accs, strict=True)]
    return tuple(accs) if n > 1 else accs[0]


register(OpDef("reduce-window", (2, None), (AttrSpec("window", "raw"), AttrSpec("to_apply", "computation")),
               _rw_infer, _rw_eval, _rw_eval, "contraction",
               "N operands of one shape and N scalar inits of their types; region (T..., T...) -> T...",
               "each output folds init, then the window's elements in XLA:CPU's window order (row-major, "
               "except that its loop emitter may peel one padded window dimension, visited last); padding "
               "and base-dilation holes are skipped (no init, no term); strides, padding, base and "
               "window dilation as XLA's window attribute"))


# -- select-and-scatter ---------------------------------------------------------------------------

def _sas_window(attrs: Attrs, shape: tuple[int, ...]) -> tuple[Window, list[int]]:
    w = parse_window(attrs["window"], len(shape))
    if any(v != 1 for v in w.lhs_dilate + w.rhs_dilate):
        raise OpError("select-and-scatter takes no dilation (XLA rejects it)")
    return w, [_out_size(s, w, d) for d, s in enumerate(shape)]


def _sas_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x, src, init = tensor(types[0], "operand"), tensor(types[1], "source"), tensor(types[2], "init value")
    if src.dtype != x.dtype or init.dtype != x.dtype or init.rank != 0:
        raise OpError(f"select-and-scatter source and init value must be {x.dtype} (source) and a {x.dtype} "
                      f"scalar, got {src.short()} and {init.short()}")
    w, oshape = _sas_window(attrs, x.shape)
    if tuple(oshape) != src.shape:
        raise OpError(f"select-and-scatter source shape {list(src.shape)} differs from the window's "
                      f"output shape {oshape}")
    for pos in np.ndindex(*oshape):
        if not any(_in_bounds(x.shape, w, pos, tap) for tap in np.ndindex(*w.size)):
            raise OpError(f"select-and-scatter window at source position {list(pos)} lies entirely in the "
                          "padding (XLA leaves its target undefined)")
    return TensorType(x.dtype, x.shape)


def _in_bounds(shape: tuple[int, ...], w: Window, pos: tuple[int, ...], tap: tuple[int, ...]) -> tuple[int, ...] | None:
    """The operand index window position ``tap`` of source position ``pos`` reads, or None in the padding."""
    idx = tuple(p * s + t - lo for p, s, t, (lo, _) in zip(pos, w.stride, tap, w.pad, strict=True))
    return idx if all(0 <= i < n for i, n in zip(idx, shape, strict=True)) else None


def _scalar(a: Any) -> Any:
    return np.asarray(a).reshape(())[()]


def _sas_eval(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    x, src, init = args
    symbolic = x.dtype == object
    if symbolic:
        import z3
    w, oshape = _sas_window(attrs, x.shape)
    res = np.empty(x.shape, dtype=x.dtype)
    res[...] = init.reshape(())[()]
    assert env.call is not None

    def one(v: Any) -> np.ndarray:
        a = np.empty((), dtype=x.dtype)
        a[()] = v
        return a

    order = window_order(x.shape, oshape, w)
    for pos in np.ndindex(*oshape):
        cands = [i for tap in order if (i := _in_bounds(x.shape, w, pos, tap)) is not None]
        sel_val, chosen = x[cands[0]], [True]          # chosen[k]: candidate k is the selection
        for k in range(1, len(cands)):
            keep = _scalar(env.call(attrs["select"], [one(sel_val), one(x[cands[k]])]))
            if symbolic:
                keep = keep if isinstance(keep, z3.ExprRef) else z3.BoolVal(bool(keep))
                sel_val = z3.If(keep, sel_val, x[cands[k]])
                chosen = [z3.And(keep, c) if not isinstance(c, bool) else keep for c in chosen] + [z3.Not(keep)]
            else:
                if not keep:
                    sel_val, chosen = x[cands[k]], [False] * k + [True]
                else:
                    chosen.append(False)
        for i, c in zip(cands, chosen, strict=True):
            if c is False:
                continue
            new = _scalar(env.call(attrs["scatter"], [one(res[i]), one(src[pos])]))
            res[i] = new if c is True else z3.If(c, new, res[i])
    return res


register(OpDef("select-and-scatter", (3, 3),
               (AttrSpec("window", "raw"), AttrSpec("select", "computation"), AttrSpec("scatter", "computation")),
               _sas_infer, _sas_eval, _sas_eval, "contraction",
               "operand, source (the window's output shape) and scalar init of one type; select (T, T) -> pred, "
               "scatter (T, T) -> T; result the operand's type",
               "XLA:CPU's expansion: output = init; per source position (row-major), the window's in-bounds "
               "elements in reduce-window's order, the first selected and replaced by each later one where "
               "select(selected, candidate) is false; output[selected] = scatter(output[selected], source). Window size/stride/"
               "pad, no dilation; a window entirely in the padding is rejected (XLA leaves it undefined). SMT: "
               "the selection as if-then-else terms"))


# -- convolution ----------------------------------------------------------------------------------

def _labels(attrs: Attrs, rank: int) -> tuple[tuple[int, int, list[int]], tuple[int, int, list[int]], tuple[int, int, list[int]]]:
    """(batch, feature, spatial dims) of lhs; (input feature, output feature, spatial) of rhs;
    (batch, feature, spatial) of the output, from ``dim_labels``."""
    dl = attrs["dim_labels"]
    m = re.fullmatch(r"([bf0-9]+)_([io0-9]+)->([bf0-9]+)", str(dl))
    if not m:
        raise OpError(f"dim_labels={dl} is not of the form b01f_01io->b01f")
    res = []
    for s, (a, b) in zip(m.groups(), (("b", "f"), ("i", "o"), ("b", "f")), strict=True):
        if len(s) != rank or s.count(a) != 1 or s.count(b) != 1:
            raise OpError(f"dim_labels={dl}: '{s}' must name {a}, {b} and {rank - 2} spatial dimensions once")
        sp = []
        for k in range(rank - 2):
            if s.count(str(k)) != 1:
                raise OpError(f"dim_labels={dl}: '{s}' lacks spatial dimension {k}")
            sp.append(s.index(str(k)))
        res.append((s.index(a), s.index(b), sp))
    return res[0], res[1], res[2]


def _conv_infer(types: list[Type], attrs: Attrs, declared: Type | None, env: Env) -> Type:
    x, k = tensor(types[0], "lhs"), tensor(types[1], "rhs")
    if x.dtype != k.dtype or x.dtype.is_pred:
        raise OpError(f"convolution operands must have one numeric type, got {x.dtype} and {k.dtype}")
    if x.rank != k.rank or x.rank < 2:
        raise OpError("convolution operands must have one rank >= 2")
    (lb, lf, ls), (ki, ko, ks), (ob, of, os_) = _labels(attrs, x.rank)
    w = parse_window(attrs["window"], x.rank - 2)
    g, bg = attrs.get("feature_group_count", 1), attrs.get("batch_group_count", 1)
    if bg != 1:
        raise OpError("batch_group_count other than 1 is not supported")
    if g < 1 or x.shape[lf] != k.shape[ki] * g or k.shape[ko] % g:
        raise OpError(f"feature_group_count={g}: lhs features {x.shape[lf]} must be {g} x rhs input features "
                      f"{k.shape[ki]} and rhs output features {k.shape[ko]} a multiple of {g}")
    if [k.shape[d] for d in ks] != w.size:
        raise OpError(f"window size {w.size} differs from the kernel's spatial sizes {[k.shape[d] for d in ks]}")
    shape = [0] * x.rank
    shape[ob], shape[of] = x.shape[lb], k.shape[ko]
    for d in range(x.rank - 2):
        shape[os_[d]] = _out_size(x.shape[ls[d]], w, d)
    dt = x.dtype
    if declared is not None:
        d = tensor(declared, "result").dtype
        if d != dt and (d.is_float != dt.is_float or d.is_pred):
            raise OpError(f"convolution of {dt} operands cannot produce {d}")
        dt = d
    return TensorType(dt, tuple(shape))


def _conv_matrices(x: Any, k: Any, attrs: Attrs) -> tuple[list[tuple[Any, Any]], np.ndarray, tuple[int, ...], list[int]]:
    """The convolution as one matrix product per feature group: ``[(A, B)]`` with A (rows, taps x
    input features) of patches and B (taps x input features, output features); the mask (rows,
    taps x input features) of terms that read a real element; the (N, out spatial..., O) shape
    and the permutation to the result's dimension order. Works on numeric and object arrays."""
    rank = x.ndim
    (lb, lf, ls), (ki, ko, ks), (ob, of, os_) = _labels(attrs, rank)
    w = parse_window(attrs["window"], rank - 2)
    g = attrs.get("feature_group_count", 1)
    X = np.transpose(x, [lb, lf, *ls])                 # N, C, spatial
    K = np.transpose(k, [ko, ki, *ks])                 # O, I, spatial
    for d, r in enumerate(w.reversal):
        if r:
            K = np.flip(K, 2 + d)
    n, c = X.shape[:2]
    o, ci = K.shape[:2]
    sp_in = list(X.shape[2:])
    osp = [_out_size(s, w, d) for d, s in enumerate(sp_in)]
    taps = list(np.ndindex(*w.size))
    # patches[n, out positions..., tap, c] (0 where the tap reads padding or a dilation hole)
    P = np.zeros((n, *osp, len(taps), c), dtype=X.dtype)
    valid_all = np.zeros((*osp, len(taps)), bool)
    for j, tap in enumerate(taps):
        idx, valid = _positions(sp_in, osp, w, tap)
        vals = X[(slice(None), slice(None), *idx)]                  # N, C, out...
        vals = np.moveaxis(np.broadcast_to(vals, (n, c, *osp)), 1, -1)
        P[..., j, :] = np.where(valid[None, ..., None], vals, np.zeros((), X.dtype))
        valid_all[..., j] = valid
    og = o // g
    m = math.prod(osp)
    mask = np.repeat(np.broadcast_to(valid_all.reshape(1, m, len(taps)), (n, m, len(taps))).reshape(n * m, len(taps)),
                     ci, axis=1)
    mats = []
    for gi in range(g):
        A = P[..., gi * ci:(gi + 1) * ci].reshape(n * m, len(taps) * ci)          # rows, (tap, c)
        B = np.moveaxis(K[gi * og:(gi + 1) * og], 0, -1)                           # I, spatial, O
        B = np.moveaxis(B, 0, -2).reshape(len(taps) * ci, og)                      # (tap, c), O
        mats.append((A, B))
    perm = [0] * rank
    perm[ob], perm[of] = 0, rank - 1
    for d in range(rank - 2):
        perm[os_[d]] = 1 + d
    return mats, mask, (n, *osp, o), perm


def _conv_eval(args: list[np.ndarray], attrs: Attrs, out: Type, env: Env) -> np.ndarray:
    from .contraction import _fma_f32, _fma_f64
    t = tensor(out, "result")
    mats, mask, shape, perm = _conv_matrices(args[0], args[1], attrs)
    outs = []
    for A, B in mats:
        if not is_float_np(A.dtype):
            wide = np.uint64 if t.dtype.bits == 64 and not t.dtype.is_signed else np.int64
            with np.errstate(over="ignore"):
                r = np.matmul(A.astype(wide), B.astype(wide))
            outs.append(r.astype(t.dtype.np))
            continue
        prec = op_precision(A.dtype)
        Ap = daz(A.astype(prec), prec)
        Bp = daz(B.astype(prec), prec)
        fma = _fma_f64 if prec == np.float64 else _fma_f32
        acc = np.zeros((A.shape[0], B.shape[1]), prec)
        for kk in range(A.shape[1]):
            nxt = fma(Ap[:, kk:kk + 1], Bp[kk:kk + 1, :], acc)
            acc = np.where(mask[:, kk:kk + 1], nxt, acc)
        with np.errstate(over="ignore"):
            outs.append(acc.astype(t.dtype.np))
    R = np.concatenate(outs, axis=1).reshape(shape)                                # N, out..., O
    return np.ascontiguousarray(np.transpose(R, perm)).reshape(t.shape)


def _conv_smt(args: list[Any], attrs: Attrs, out: Type, env: Env) -> Any:
    """The same sums as z3 terms: terms of padding and dilation holes are left out (as the
    interpreter's mask does), floats accumulate with dot's FMA-with-FTZ from +0.0."""
    import z3

    from . import _z3util as Z
    from .contraction import _z_fma_ftz
    from .convert import convert_term
    t = tensor(out, "result")
    src = env.extra["operand_dtypes"][0]
    mats, mask, shape, perm = _conv_matrices(args[0], args[1], attrs)
    outs = []
    for A, B in mats:
        R = np.empty((A.shape[0], B.shape[1]), dtype=object)
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                if src.is_int:
                    acc = z3.BitVecVal(0, t.dtype.bits)
                    for kk in range(A.shape[1]):
                        if mask[i, kk]:
                            acc = acc + convert_term(A[i, kk], src, t.dtype) * convert_term(B[kk, j], src, t.dtype)
                    R[i, j] = acc
                    continue
                p = Z.prec_sort(src)
                acc = z3.fpPlusZero(p)
                for kk in range(A.shape[1]):
                    if mask[i, kk]:
                        acc = _z_fma_ftz(Z.daz(Z.to_prec(A[i, kk], src)), Z.daz(Z.to_prec(B[kk, j], src)), acc)
                R[i, j] = acc if t.dtype.bits == p.ebits() + p.sbits() else z3.fpFPToFP(Z.RNE, acc, Z.sort_of(t.dtype))
        outs.append(R)
    R = np.concatenate(outs, axis=1).reshape(shape)
    return np.ascontiguousarray(np.transpose(R, perm)).reshape(t.shape)


register(OpDef("convolution", (2, 2),
               (AttrSpec("window", "raw"), AttrSpec("dim_labels", "raw"),
                AttrSpec("feature_group_count", "int", required=False, default=1),
                AttrSpec("batch_group_count", "int", required=False, default=1)),
               _conv_infer, _conv_eval, _conv_smt, "contraction",
               "operands of one numeric type; result of that type or a wider one of the same kind (s8 -> s32)",
               "dim_labels, window size/stride/pad/lhs_dilate/rhs_dilate/rhs_reversal, feature groups "
               "(batch_group_count 1). Integers: exact sum wrapped. Floats: dot's rule: f32 (f64) "
               "accumulator, one FMA per (kernel position row-major, input feature), padding and dilation "
               "holes skipped, DAZ/FTZ, one final rounding; XLA:CPU (Eigen) sums in its own order: "
               "conformance bound as dot's. SMT: the same sums (constant window, so the terms are fixed)"))
