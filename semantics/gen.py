"""Deterministic random graph generator for differential testing (conformance against XLA, fuzzing).

``random_graph(seed)`` builds a small HLO module with :class:`~semantics.graph.GraphBuilder`, so
every graph it returns is valid by construction (the builder checks each instruction against the
operator table). Same seed, same graph, on every machine: all randomness comes from one numpy
PCG64 stream.

Shapes are small (rank 0-3, dimensions 1-5); now and then one dimension is stretched up to 40 so
that reductions longer than XLA's 32-element window and longer dot products are exercised.

There is one sampler per opcode in :data:`SAMPLERS` (here, and in :mod:`semantics.gen_windows` for
the windowed, indexed and sorting operators; the generation state is :mod:`semantics.gen_context`) (a test checks that every opcode of
:data:`semantics.ops.REGISTRY` has one, so a new operator cannot be forgotten). A sampler adds one
instruction (plus the operands it needs: reused values, new parameters, new constants with edge
literals) and returns its name, or None when the requested opcode cannot be built under the
``dtypes`` restriction. ``ops`` restricts which opcodes the generator picks as the graph's steps;
parameters and constants are always available as operands.

With ``mul_add=p`` (the conformance run sets it; the default 0 leaves every graph as it was), each
step is, with probability p, a multiply-add chain instead: a float ``multiply`` feeding an ``add``
or ``subtract`` (either side), sometimes through a reshape, copy, slice or negate,
sometimes with the product used a second time (which stops XLA's FMA contraction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .dtypes import DTYPES, DType
from .gen_context import Sampler, _Ctx, _factor, _identity, _region
from .gen_windows import (
    _s_reduce_precision, _s_bitcast_layout, _s_reduce_window, _s_convolution, _s_select_and_scatter,
    _s_rng_bit_generator, _s_gather, _s_scatter, _s_sort, _s_topk,
)
from .graph import ComputationBuilder, GraphBuilder
from .inputs import edge_values, random_array
from .ir import Attrs, Graph, Literal
from .ops import REGISTRY
from .types import TensorType, TupleType

__all__ = ["random_graph", "SAMPLERS", "ALL_DTYPES", "xla_ops", "NOT_SENT_TO_XLA"]

ALL_DTYPES: tuple[str, ...] = tuple(DTYPES)
_ELEMENTWISE_KIND = {
    **{n: "num" for n in ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum")},
    **{n: "intpred" for n in ("and", "or", "xor")},
    **{n: "int" for n in ("shift-left", "shift-right-logical", "shift-right-arithmetic")},
    "atan2": "float", "power": "float",
}
_UNARY_KIND = {"negate": "num", "abs": "signed", "not": "intpred",
               **{n: "float" for n in ("exponential", "log", "tanh", "sqrt", "rsqrt", "round-nearest-even", "cbrt",
                                       "erf", "logistic", "exponential-minus-one", "log-plus-one", "is-finite")},
               "sign": "signed", "popcnt": "int", "count-leading-zeros": "int"}


def _s_parameter(c: _Ctx) -> str | None:
    dt = c.dtype()
    return c.param(TensorType(dt, c.shape())) if dt else None


def _s_constant(c: _Ctx) -> str | None:
    dt = c.dtype()
    return c.const(TensorType(dt, c.shape())) if dt else None


def _s_iota(c: _Ctx) -> str | None:
    dt = c.dtype("num")
    if dt is None:
        return None
    s = c.shape(min_rank=1)
    return c.add("iota", [], TensorType(dt, s), iota_dimension=int(c.rng.integers(len(s))))


def _s_broadcast(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    out_rank = min(t.rank + int(c.rng.integers(0, 3)), 4)
    dims = sorted(c.rng.choice(out_rank, t.rank, replace=False).tolist())
    shape = [c.dims(1, 4) for _ in range(out_rank)]
    for i, d in enumerate(dims):
        shape[d] = t.shape[i] if (t.shape[i] != 1 or c.chance(0.5)) else c.dims(1, 4)
    return c.add("broadcast", [x], TensorType(t.dtype, tuple(shape)), dimensions=tuple(dims))


def _s_reshape(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    return c.add("reshape", [x], TensorType(t.dtype, _factor(c, t.size)))


def _s_transpose(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    return c.add("transpose", [x], dimensions=tuple(int(p) for p in c.rng.permutation(t.rank)))


def _s_slice(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    sl = []
    for n in t.shape:
        s = int(c.rng.integers(0, n))
        e = int(c.rng.integers(s + 1, n + 1))
        sl.append((s, e, int(c.rng.integers(1, 4))))
    return c.add("slice", [x], slice=tuple(sl))


def _s_concatenate(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)
    if o is None:
        return None
    x, t = o
    d = int(c.rng.integers(t.rank))
    ops = [x]
    for _ in range(int(c.rng.integers(1, 3))):
        s = list(t.shape)
        s[d] = c.dims(1, 4)
        ops.append(c.fresh(TensorType(t.dtype, tuple(s))))
    c.rng.shuffle(ops)
    return c.add("concatenate", ops, dimensions=(d,))


def _s_reverse(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    dims = sorted(d for d in range(t.rank) if c.chance(0.6))
    return c.add("reverse", [x], dimensions=tuple(dims))


def _s_pad(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1)  # XLA's text has no spelling for a rank-0 padding config
    if o is None:
        return None
    x, t = o
    pads = []
    for n in t.shape:
        it = int(c.rng.integers(0, 3)) if c.chance(0.4) else 0
        full = n + (n - 1) * it
        lo = int(c.rng.integers(-min(2, full - 1), 4))
        hi = int(c.rng.integers(-min(2, full - 1 + min(lo, 0)), 4))
        pads.append((lo, hi, it))
    v = c.fresh(TensorType(t.dtype, ()))
    return c.add("pad", [x, v], padding=tuple(pads))


def _s_convert(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    out = c.dtype()
    return c.add("convert", [x], TensorType(out, t.shape)) if out else None


def _s_bitcast(c: _Ctx) -> str | None:
    dts = [d for d in c.dtypes if not d.is_pred]
    pairs = [(a, b) for a in dts for b in dts if a.bits == b.bits and a != b]
    if not pairs:
        return None
    a, b = c.pick(pairs)  # type: ignore[misc]
    o = c.operand(dtype=a)
    if o is None:
        return None
    return c.add("bitcast-convert", [o[0]], TensorType(b, o[1].shape))


def _s_dot(c: _Ctx) -> str | None:
    dt = c.dtype("num")
    if dt is None:
        return None
    nb, nc = int(c.rng.integers(0, 2)), int(c.rng.integers(0, 3)) if c.chance(0.3) else 1
    nl, nr = int(c.rng.integers(0, 2)), int(c.rng.integers(0, 2))
    bsz = [c.dims(1, 3) for _ in range(nb)]
    csz = [c.dims() for _ in range(nc)]
    if nc and c.chance(0.2):
        csz[0] = int(c.rng.integers(6, 41))
    lsz, rsz = [c.dims() for _ in range(nl)], [c.dims() for _ in range(nr)]

    def side(free: list[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        roles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(free))]
        perm = c.rng.permutation(len(roles))
        roles = [roles[i] for i in perm]
        size = {"b": bsz, "c": csz, "f": free}
        shape = tuple(size[r][i] for r, i in roles)
        return (shape, tuple(roles.index(("b", i)) for i in range(nb)), tuple(roles.index(("c", i)) for i in range(nc)))

    ls, lb, lc = side(lsz)
    rs, rb, rc = side(rsz)
    a = c.operand(dtype=dt, shape=ls)
    b = c.operand(dtype=dt, shape=rs)
    assert a and b
    out = dt
    wider = {"s8": "s32", "u8": "s32", "s16": "s32", "u16": "u32", "bf16": "f32", "f16": "f32"}
    if dt.name in wider and DTYPES[wider[dt.name]] in c.dtypes and c.chance(0.4):
        out = DTYPES[wider[dt.name]]
    shape = tuple(bsz) + tuple(lsz) + tuple(rsz)
    return c.add("dot", [a[0], b[0]], TensorType(out, shape), lhs_batch_dims=lb, rhs_batch_dims=rb,
                 lhs_contracting_dims=lc, rhs_contracting_dims=rc)


def _elementwise(opcode: str) -> Sampler:
    def s(c: _Ctx) -> str | None:
        kind = _ELEMENTWISE_KIND.get(opcode) or _UNARY_KIND[opcode]
        o = c.operand(kind)
        if o is None:
            return None
        x, t = o
        if opcode in _UNARY_KIND:
            return c.add(opcode, [x])
        # a binary operator applied to one value twice is folded by XLA's algebraic simplifier
        # (maximum(x, x) -> x skips the DAZ a real maximum applies; integer x - x -> 0 then makes
        # XLA's constant folder divide by zero and die with SIGFPE): docs/semantics.md, "Conformance"
        y = c.operand(dtype=t.dtype, shape=t.shape, exclude=[x])
        assert y
        return c.add(opcode, [x, y[0]] if c.chance(0.5) else [y[0], x])
    return s


def _s_clamp(c: _Ctx) -> str | None:
    o = c.operand("num")
    if o is None:
        return None
    x, t = o
    bounds = []
    for _ in range(2):
        s = () if c.chance(0.5) else t.shape
        b = c.operand(dtype=t.dtype, shape=s, exclude=[x])   # clamp(x, x, x) folds to x in XLA too
        assert b
        bounds.append(b[0])
    return c.add("clamp", [bounds[0], x, bounds[1]])


def _s_compare(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    y = c.operand(dtype=t.dtype, shape=t.shape)
    assert y
    attrs: dict[str, object] = {"direction": c.pick(("EQ", "NE", "LT", "LE", "GT", "GE"))}
    if t.dtype.is_float and c.chance(0.5):
        attrs["type"] = c.pick(("TOTALORDER", "FLOAT"))
    return c.add("compare", [x, y[0]], **attrs)


def _s_select(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    y = c.operand(dtype=t.dtype, shape=t.shape)
    assert y
    p = c.operand(dtype=DTYPES["pred"], shape=() if c.chance(0.25) else t.shape)
    if p is None:
        p_name = c.fresh(TensorType(DTYPES["pred"], t.shape))
    else:
        p_name = p[0]
    return c.add("select", [p_name, x, y[0]])


def _s_reduce(c: _Ctx) -> str | None:
    o = c.operand(min_rank=1) if c.chance(0.5) else None
    if o is None:
        dt = c.dtype()
        if dt is None:
            return None
        t = TensorType(dt, c.shape(min_rank=1, long=c.chance(0.3)))
        o = (c.fresh(t), t)
    x, t = o
    fns = ["and", "or"] if t.dtype.is_pred else (["add", "maximum", "minimum", "multiply"]
                                                 + (["and", "or"] if t.dtype.is_int else []))
    fn = str(c.pick(fns))
    dims = tuple(d for d in range(t.rank) if c.chance(0.5)) or (int(c.rng.integers(t.rank)),)
    # XLA assumes init is an identity of the region (and skips it for size-1 reductions): mostly
    # use the identity, sometimes an arbitrary value
    it = TensorType(t.dtype, ())
    init = c.add("constant", [], literal=_identity(fn, t.dtype)) if c.chance(0.85) else c.fresh(it)
    return c.add("reduce", [x, init], dimensions=dims, to_apply=_region(c, fn, t.dtype))


def _s_fma(c: _Ctx) -> str | None:
    fl = [d for d in c.dtypes if d.name in ("f32", "f64")]
    if not fl:
        return None
    dt = c.pick(fl)
    o = c.operand(dtype=dt)  # type: ignore[arg-type]
    if o is None:
        return None
    x, t = o
    ys = [c.operand(dtype=t.dtype, shape=t.shape) for _ in range(2)]
    assert ys[0] and ys[1]
    ops = [x, ys[0][0], ys[1][0]]
    c.rng.shuffle(ops)
    return c.add("fma", ops)


def _mul_add(c: _Ctx) -> str | None:
    """A multiply-add chain (module docstring); returns the add/subtract."""
    dt = c.dtype("float")
    if dt is None:
        return None
    o = c.operand(dtype=dt)
    assert o
    x, t = o
    y = c.operand(dtype=dt, shape=t.shape, exclude=[x])
    assert y
    m = c.add("multiply", [x, y[0]] if c.chance(0.5) else [y[0], x])
    v, vt = m, t
    if c.chance(0.3):
        # not transpose: XLA contracts a transpose with a unit dimension in some elements only
        step = str(c.pick(("reshape", "copy", "slice", "negate")))
        if step == "reshape":
            vt = TensorType(dt, _factor(c, t.size))
            v = c.add("reshape", [m], vt)
        elif step == "slice" and t.rank:
            sl = [(s, int(c.rng.integers(s + 1, n + 1)), 1) for n in t.shape for s in [int(c.rng.integers(0, n))]]
            v = c.add("slice", [m], slice=tuple(sl))
        else:
            v = c.add("copy" if step == "copy" else "negate", [m])
        vt = c.values[-1][1]
    if c.chance(0.25):                          # a second user of the product
        w = c.operand(dtype=dt, shape=t.shape, exclude=[m, v])
        assert w
        c.add(str(c.pick(("add", "subtract", "multiply", "maximum"))), [m, w[0]])
    z = c.operand(dtype=dt, shape=vt.shape, exclude=[v, m])
    assert z
    return c.add(str(c.pick(("add", "subtract"))), [v, z[0]] if c.chance(0.5) else [z[0], v])


def _s_copy(c: _Ctx) -> str | None:
    o = c.operand()
    return c.add("copy", [o[0]]) if o else None


def _s_tuple(c: _Ctx) -> str | None:
    c.tuple_root = True
    return _s_parameter(c) if not c.values else c.values[-1][0]


def _s_gte(c: _Ctx) -> str | None:
    a, b = c.operand(), c.operand()
    if a is None or b is None:
        return None
    nm = c.name("tuple")
    c.cb.add(nm, "tuple", [a[0], b[0]])
    return c.add("get-tuple-element", [nm], index=int(c.rng.integers(2)))


def _s_dynamic_slice(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    sizes = tuple(int(c.rng.integers(1, n + 1)) for n in t.shape)
    return c.add("dynamic-slice", [x, *c.indices(t.rank)], dynamic_slice_sizes=sizes)


def _s_dynamic_update_slice(c: _Ctx) -> str | None:
    o = c.operand()
    if o is None:
        return None
    x, t = o
    u = c.operand(dtype=t.dtype, shape=tuple(int(c.rng.integers(1, n + 1)) for n in t.shape))
    assert u
    return c.add("dynamic-update-slice", [x, u[0], *c.indices(t.rank)])


SAMPLERS: dict[str, Sampler] = {
    "parameter": _s_parameter, "constant": _s_constant, "iota": _s_iota, "broadcast": _s_broadcast,
    "reshape": _s_reshape, "transpose": _s_transpose, "slice": _s_slice, "concatenate": _s_concatenate,
    "reverse": _s_reverse, "pad": _s_pad, "convert": _s_convert, "bitcast-convert": _s_bitcast,
    "dot": _s_dot, "clamp": _s_clamp, "compare": _s_compare, "select": _s_select, "reduce": _s_reduce,
    "copy": _s_copy, "tuple": _s_tuple, "get-tuple-element": _s_gte, "dynamic-slice": _s_dynamic_slice,
    "dynamic-update-slice": _s_dynamic_update_slice, "fma": _s_fma,
    "reduce-precision": _s_reduce_precision, "bitcast": _s_bitcast_layout, "reduce-window": _s_reduce_window,
    "convolution": _s_convolution, "gather": _s_gather, "scatter": _s_scatter, "sort": _s_sort, "topk": _s_topk,
    "select-and-scatter": _s_select_and_scatter, "rng-bit-generator": _s_rng_bit_generator,
    **{op: _elementwise(op) for op in (*_ELEMENTWISE_KIND, *_UNARY_KIND)},
}
"""One sampler per opcode of :data:`semantics.ops.REGISTRY`."""


#: Opcodes the generator never sends to XLA, with the reason (the jax dump corpus covers them).
NOT_SENT_TO_XLA: dict[str, str] = {
    "rng-bit-generator": "its bits are implementation-defined: the interpreter does not evaluate it",
    "select-and-scatter": "checked against XLA on its own graphs (tests/semantics/test_conformance.py::"
                          "test_select_and_scatter_matches_xla); in the default set it would redraw every "
                          "seed's graph (the redrawn seeds 0-249 agree with XLA: 488 runs bit-identical, 12 "
                          "within bound; test_redrawn_graphs_with_select_and_scatter_match_xla pins 177 and 247)",
    "bitcast": "exists only in optimized modules after layout assignment: XLA rejects it in the modules "
               "the oracle compiles",
    **{op: "XLA's edge-value results (subnormal, infinite and NaN operands) are not matched yet; on ordinary "
           "values it stays within its operator table entry's XlaBound (the jax dump corpus checks it)"
       for op in ("cbrt", "erf", "logistic", "exponential-minus-one", "log-plus-one", "atan2", "power")},
}


def xla_ops() -> list[str]:
    """The default operator set: every registered opcode except the accv extensions (category
    ``extension``, e.g. ``fma``), which XLA cannot run, and :data:`NOT_SENT_TO_XLA`."""
    return sorted(n for n, op in REGISTRY.items() if op.category != "extension" and n not in NOT_SENT_TO_XLA)


def random_graph(seed: int, *, ops: Sequence[str] | None = None, dtypes: Sequence[str] | None = None,
                 max_ops: int = 6, mul_add: float = 0.0) -> Graph:
    """A random valid graph, deterministic in ``seed``.

    Args:
        seed: the random stream's seed.
        ops: opcodes to draw the steps from (default: :func:`xla_ops`, every registered opcode
            except the accv extensions).
        dtypes: element types the graph may use (default: all 13).
        max_ops: the most steps (sampled operators, not counting leaves).
        mul_add: the probability that a step is a multiply-add chain (module docstring); 0 draws
            nothing from the stream for it, so graphs are those of earlier releases.

    Raises:
        ValueError: an unknown opcode or dtype, or nothing buildable under the restriction.
    """
    ops = list(ops) if ops is not None else xla_ops()
    for o in ops:
        if o not in SAMPLERS:
            raise ValueError(f"no sampler for opcode '{o}'")
    c = _Ctx(seed, list(dtypes) if dtypes is not None else list(ALL_DTYPES))
    if not c.dtypes:
        raise ValueError("no dtypes to generate with")
    nsteps = int(c.rng.integers(1, max(1, max_ops) + 1))
    last: str | None = None
    for _ in range(nsteps):
        for _attempt in range(8):
            r = _mul_add(c) if mul_add and c.chance(mul_add) else SAMPLERS[str(c.pick(ops))](c)
            if r is not None:
                last = r
                break
    if last is None:
        last = _s_parameter(c) or (_ for _ in ()).throw(ValueError("no value could be generated"))
    outs = [last]
    if c.tuple_root:
        others = [n for n, _ in c.values if n != last]
        outs += [others[int(i)] for i in c.rng.choice(len(others), min(2, len(others)), replace=False)]
    if c.tuple_root:
        c.cb.add(c.name("tuple"), "tuple", outs, root=True)
    # otherwise the root is the last instruction added, which is ``last``
    c.gb.add_computation(c.cb.build(), entry=True)
    return c.gb.build()
