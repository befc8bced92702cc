"""Samplers of the operators whose operands are windows, indices or orderings: reduce-precision,
bitcast, reduce-window, convolution, select-and-scatter, rng-bit-generator, gather, scatter, sort
and topk (:data:`semantics.gen.SAMPLERS` holds them with the others)."""

from __future__ import annotations

from .dtypes import DTYPES, DType
from .gen_context import _Ctx, _factor, _identity, _region
from .ir import Attrs
from .types import TensorType, TupleType


def _s_reduce_precision(c: _Ctx) -> str | None:
    o = c.operand("float")
    if o is None:
        return None
    x, t = o
    e = int(c.pick((4, 5, 8, t.dtype.exp_bits)))
    m = int(c.pick((2, 3, 7, 10, t.dtype.man_bits)))
    return c.add("reduce-precision", [x], exponent_bits=e, mantissa_bits=m)


def _s_bitcast_layout(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    return c.add("bitcast", [x], TensorType(t.dtype, _factor(c, t.size)))


def _window(c: _Ctx, shape: tuple[int, ...], dilate: str) -> tuple[str, list[int]]:
    """A random window attribute over ``shape`` and its sizes."""
    size = [int(c.rng.integers(1, min(n, 3) + 1)) for n in shape]
    stride = [int(c.rng.integers(1, 3)) for _ in shape]
    pad = [(int(c.rng.integers(0, 2)), int(c.rng.integers(0, 2))) for _ in shape]
    text = "size=" + "x".join(map(str, size)) + " stride=" + "x".join(map(str, stride))
    text += " pad=" + "x".join(f"{a}_{b}" for a, b in pad)
    if c.chance(0.2):
        text += f" {dilate}=" + "x".join(str(int(c.rng.integers(1, 3))) for _ in shape)
    return "{" + text + "}", size


def _s_reduce_window(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    fns = ["and", "or"] if t.dtype.is_pred else ["add", "maximum", "minimum"]
    fn = str(c.pick(fns))
    win, _ = _window(c, t.shape, str(c.pick(("rhs_dilate", "lhs_dilate"))))
    init = c.add("constant", [], literal=_identity(fn, t.dtype))
    return c.add("reduce-window", [x, init], window=win, to_apply=_region(c, fn, t.dtype))


def _s_convolution(c: _Ctx) -> str | None:
    dt = c.dtype("num")
    if dt is None:
        return None
    nsp = int(c.rng.integers(1, 3))
    n, ci = c.dims(1, 2), c.dims(1, 3)
    groups = ci if ci > 1 and c.chance(0.3) else 1
    o = groups * c.dims(1, 2)
    sp = [c.dims(2, 5) for _ in range(nsp)]
    win, size = _window(c, tuple(sp), "rhs_dilate")
    digits = "".join(str(i) for i in range(nsp))
    labels = f"b{digits}f_{digits}io->b{digits}f"
    lhs = c.operand(dtype=dt, shape=(n, *sp, ci))
    rhs = c.operand(dtype=dt, shape=(*size, ci // groups, o))
    assert lhs and rhs
    from .ops.window import _out_size, parse_window
    w = parse_window(win, nsp)
    osp = tuple(_out_size(s, w, d) for d, s in enumerate(sp))
    if 0 in osp:
        return None
    return c.add("convolution", [lhs[0], rhs[0]], TensorType(dt, (n, *osp, o)), window=win, dim_labels=labels,
                 feature_group_count=groups)


def _s_select_and_scatter(c: _Ctx) -> str | None:
    o = c.operand("num", min_rank=1)
    if o is None:
        return None
    x, t = o
    size = [int(c.rng.integers(1, min(n, 3) + 1)) for n in t.shape]
    stride = [int(c.rng.integers(1, 3)) for _ in t.shape]
    pad = [(int(c.rng.integers(0, k)), int(c.rng.integers(0, k))) for k in size]  # never a window of padding only
    win = ("{size=" + "x".join(map(str, size)) + " stride=" + "x".join(map(str, stride))
           + " pad=" + "x".join(f"{a}_{b}" for a, b in pad) + "}")
    from .ops.window import _out_size, parse_window
    w = parse_window(win, t.rank)
    src_shape = tuple(_out_size(n, w, d) for d, n in enumerate(t.shape))
    if 0 in src_shape:
        return None
    src = c.operand(dtype=t.dtype, shape=src_shape)
    assert src
    init = c.add("constant", [], literal=_identity("add", t.dtype))
    direction = str(c.pick(("GE", "GT", "LE", "LT")))
    name = f"select_{direction}_{t.dtype.name}"
    if ("select", name) not in c.regions:
        rb = c.gb.computation(name)
        for i in range(2):
            rb.add(f"p{i}", "parameter", [], Attrs.of(index=i), declared=TensorType(t.dtype, ()))
        rb.add("r", "compare", ["p0", "p1"], Attrs.of(direction=direction), root=True)
        c.gb.add_computation(rb.build())
        c.regions[("select", name)] = name
    fn = str(c.pick(("add", "maximum", "minimum")))
    return c.add("select-and-scatter", [x, src[0], init], window=win, select=name,
                 scatter=_region(c, fn, t.dtype))


def _s_rng_bit_generator(c: _Ctx) -> str | None:
    u64 = DTYPES["u64"]
    if u64 not in c.dtypes:
        return None
    out = c.dtype("int")
    st = c.operand(dtype=u64, shape=(2,))
    if st is None or out is None:
        return None
    nm = c.name("rng")
    c.cb.add(nm, "rng-bit-generator", [st[0]], Attrs.of(algorithm="rng_default"),
             declared=TupleType((TensorType(u64, (2,)), TensorType(out, c.shape()))))
    return c.add("get-tuple-element", [nm], index=1)


def _index_type(c: _Ctx) -> DType:
    return DTYPES[str(c.pick(("s32", "s64", "u32")))]


def _s_gather(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    sim = tuple(sorted(d for d in range(t.rank) if c.chance(0.6))) or (0,)
    sizes = [int(c.rng.integers(1, n + 1)) for n in t.shape]
    collapsed = tuple(d for d in sim if c.chance(0.5))
    for d in collapsed:
        sizes[d] = 1
    nb = c.dims(1, 3)
    idx = c.fresh(TensorType(_index_type(c), (nb, len(sim))))
    window = [s for d, s in enumerate(sizes) if d not in collapsed]
    return c.add("gather", [x, idx], offset_dims=tuple(range(1, 1 + len(window))), collapsed_slice_dims=collapsed,
                 start_index_map=sim, index_vector_dim=1, slice_sizes=tuple(sizes))


def _s_scatter(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    sd = tuple(sorted(d for d in range(t.rank) if c.chance(0.6))) or (0,)
    inserted = tuple(d for d in sd if c.chance(0.5))
    window = [1 if d in inserted else int(c.rng.integers(1, n + 1)) for d, n in enumerate(t.shape)]
    nb = c.dims(1, 3)
    idx = c.fresh(TensorType(_index_type(c), (nb, len(sd))))
    upd = c.operand(dtype=t.dtype, shape=(nb, *[w for d, w in enumerate(window) if d not in inserted]))
    assert upd
    fns = ["and", "or"] if t.dtype.is_pred else ["add", "maximum", "minimum"]
    uwd = tuple(range(1, 1 + t.rank - len(inserted)))
    return c.add("scatter", [x, idx, upd[0]], update_window_dims=uwd, inserted_window_dims=inserted,
                 scatter_dims_to_operand_dims=sd, index_vector_dim=1, to_apply=_region(c, str(c.pick(fns)), t.dtype))


def _comparator(c: _Ctx, dts: list[DType], direction: str) -> str:
    """A sort comparator over (dts[0], dts[0], dts[1], dts[1], ...) that orders by the first
    operand (TOTALORDER for floats, as jax emits)."""
    name = c.name("cmp")
    rb = c.gb.computation(name)
    for i, d in enumerate(dts):
        for j in range(2):
            rb.add(f"p{2 * i + j}", "parameter", [], Attrs.of(index=2 * i + j), declared=TensorType(d, ()))
    attrs = {"direction": direction, **({"type": "TOTALORDER"} if dts[0].is_float else {})}
    rb.add("r", "compare", ["p0", "p1"], Attrs(tuple(attrs.items())), root=True)
    c.gb.add_computation(rb.build())
    return name


def _s_sort(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    ops = [x]
    if c.chance(0.5):
        y = c.operand(shape=t.shape, exclude=[x])
        assert y
        ops.append(y[0])
    dts = [t.dtype] + ([next(tt for n, tt in c.values if n == ops[1]).dtype] if len(ops) > 1 else [])
    d = int(c.rng.integers(t.rank))
    nm = c.name("sort")
    c.cb.add(nm, "sort", ops, Attrs.of(dimensions=(d,), is_stable="true",
                                       to_apply=_comparator(c, dts, str(c.pick(("LT", "GT"))))))
    if len(ops) == 1:
        c.values.append((nm, t))
        return nm
    return c.add("get-tuple-element", [nm], index=int(c.rng.integers(2)))


def _s_topk(c: _Ctx) -> str | None:
    o = c.operand("num", min_rank=1)
    if o is None:
        return None
    x, t = o
    nm = c.name("topk")
    c.cb.add(nm, "topk", [x], Attrs.of(k=int(c.rng.integers(1, t.shape[-1] + 1)), largest="true"))
    return c.add("get-tuple-element", [nm], index=int(c.rng.integers(2)))
