"""The tiling's byte views (compilers/act/phase1/tiling/views.py) against the reference interpreter: the
interpreter (semantics/ops) defines what each data-movement operator does; the views restate it as
index arithmetic. Here each operator on its own, on random shapes, dtypes and attributes: the bytes
the view gathers from a random input equal the interpreter's result (test_act_amx.py checks whole
layout chains). And the operator table's data-movement operators are the ones the views read as
gathers, so an operator added to the table without a gather shows here."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compilers.act.egraph.terms import lower
from compilers.act.phase1.tiling import DC, view_of
from compilers.act.phase1.tiling.views import LAYOUT
from semantics.hlo_parser import parse_hlo
from semantics.interp import evaluate
from semantics.ops import REGISTRY

NP = {"u8": np.uint8, "s16": np.int16, "f32": np.float32, "s32": np.int32}

#: table operators that move or select data but that the views do not read as a gather of one
#: operand: index computations (dynamic-*), values made from nothing (iota, constant), tuples,
#: and the two read as gathers of several operands (concatenate, select: Views._concat, _select)
NOT_ONE_OPERAND_GATHERS = {"dynamic-slice", "dynamic-update-slice", "iota", "constant", "parameter", "tuple",
                           "get-tuple-element", "concatenate", "select",
                           # positions that depend on data (index operands; the values sorted)
                           "gather", "scatter", "sort", "topk",
                           # a reinterpretation through the operand's physical layout, which no
                           # instruction's semantics uses: the tiling does not read it
                           "bitcast"}


def _s(xs: list[int]) -> str:
    return ",".join(str(x) for x in xs)


@st.composite
def _op(draw):  # noqa: ANN202
    """(HLO body after ``p``'s parameter line, the input's dtype and shape)."""
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 4)) for _ in range(rank)]
    dt = draw(st.sampled_from(sorted(NP)))
    kind = draw(st.sampled_from(["transpose", "slice", "reverse", "broadcast", "pad", "reshape", "copy",
                                 "bitcast-convert", "concatenate", "select"]))
    t = f"{dt}[{_s(dims)}]"
    if kind == "transpose":
        perm = draw(st.permutations(list(range(rank))))
        body = f"ROOT r = {dt}[{_s([dims[p] for p in perm])}] transpose(p), dimensions={{{_s(perm)}}}"
    elif kind == "slice":
        lo = [draw(st.integers(0, d - 1)) for d in dims]
        hi = [draw(st.integers(a + 1, d)) for a, d in zip(lo, dims, strict=True)]
        step = [draw(st.integers(1, 3)) for _ in dims]
        shape = [len(range(a, b, s)) for a, b, s in zip(lo, hi, step, strict=True)]
        slc = ", ".join(f"[{a}:{b}:{c}]" for a, b, c in zip(lo, hi, step, strict=True))
        body = f"ROOT r = {dt}[{_s(shape)}] slice(p), slice={{{slc}}}"
    elif kind == "reverse":
        rdims = sorted(draw(st.sets(st.integers(0, rank - 1))))
        body = f"ROOT r = {t} reverse(p), dimensions={{{_s(rdims)}}}"
    elif kind == "broadcast":
        extra = draw(st.integers(1, 3))
        at = sorted(draw(st.permutations(list(range(rank + 1))))[:rank])
        shape = [extra] * (rank + 1)
        for i, d in enumerate(at):
            shape[d] = dims[i]
        body = f"ROOT r = {dt}[{_s(shape)}] broadcast(p), dimensions={{{_s(at)}}}"
    elif kind == "pad":
        pads = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2)), draw(st.integers(0, 2))) for _ in dims]
        shape = [lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(dims, pads, strict=True)]
        if min(shape) < 1:
            pads = [(0, 1, 0)] * rank
            shape = [n + 1 for n in dims]
        pad = "x".join(f"{a}_{b}_{c}" for a, b, c in pads)
        value = draw(st.sampled_from(["0", "7", "-3"] if dt != "u8" else ["0", "7", "255"]))
        body = f"z = {dt}[] constant({value})\n  ROOT r = {dt}[{_s(shape)}] pad(p, z), padding={pad}"
    elif kind == "reshape":
        body = f"ROOT r = {dt}[{int(np.prod(dims))}] reshape(p)"
    elif kind == "copy":
        body = f"ROOT r = {t} copy(p)"
    elif kind == "bitcast-convert":
        nb = np.dtype(NP[dt]).itemsize
        body = f"ROOT r = u8[{_s(dims + ([nb] if nb > 1 else []))}] bitcast-convert(p)"
    elif kind == "concatenate":
        d = draw(st.integers(0, rank - 1))
        shape = list(dims)
        shape[d] *= 2
        body = f"q = {t} reverse(p), dimensions={{{d}}}\n  ROOT r = {dt}[{_s(shape)}] concatenate(p, q), dimensions={{{d}}}"
    else:   # select with a constant predicate, between the input and a layout of it
        pred = draw(st.lists(st.booleans(), min_size=int(np.prod(dims)), max_size=int(np.prod(dims))))
        lit = "{" + ", ".join("true" if b else "false" for b in pred) + "}"
        if rank > 1:
            lit = _nested(pred, dims)
        body = (f"c = pred[{_s(dims)}] constant({lit})\n  q = {t} reverse(p), dimensions={{0}}\n"
                f"  ROOT r = {t} select(c, p, q)")
    return body, dt, dims


def _nested(flat: list[bool], dims: list[int]) -> str:
    """An HLO literal of shape ``dims`` from row-major ``flat``."""
    if len(dims) == 1:
        return "{" + ", ".join("true" if b else "false" for b in flat) + "}"
    n = len(flat) // dims[0]
    return "{" + ", ".join(_nested(flat[i * n:(i + 1) * n], dims[1:]) for i in range(dims[0])) + "}"


@settings(max_examples=300, deadline=None)
@given(_op(), st.integers(0, 2**31 - 1))
def test_each_data_movement_operator_gathers_what_the_interpreter_computes(case, seed: int) -> None:
    body, dt, dims = case
    g = parse_hlo(f"HloModule m\nENTRY e {{\n  p = {dt}[{_s(dims)}] parameter(0)\n  {body}\n}}")
    rng = np.random.default_rng(seed)
    nb = np.dtype(NP[dt]).itemsize
    raw = rng.integers(0, 256, size=int(np.prod(dims)) * nb, dtype=np.uint8)
    x = raw.view(NP[dt]).reshape(dims)
    want = np.asarray(evaluate(g, [x])[0]).tobytes()
    v = view_of(lower(g))
    assert not (v.idx == DC).any()
    assert v.base is None or v.base.is_param or v.base.info.kind == "input", body   # a gather of the input
    src = raw.astype(np.int64)
    got = np.where(v.idx >= 0, src[np.maximum(v.idx, 0)], -1 - v.idx).astype(np.uint8).tobytes()
    assert got == want, body


def test_the_views_read_every_data_movement_operator_of_the_table() -> None:
    """Every structural or conversion operator of the table (semantics/ops) that takes its data
    from one operand is read as a gather (views.LAYOUT), or is listed here as not one; and LAYOUT
    names only such operators."""
    movers = {n for n, d in REGISTRY.items() if d.category in ("structural", "conversion")} - {"convert"}
    assert LAYOUT <= movers
    assert movers - LAYOUT == NOT_ONE_OPERAND_GATHERS - {"select"}
