"""Bit-level comparison of interpreter results with an oracle's (XLA), and the conformance check.

:func:`compare` is bit-exact by default: integers and pred must be equal, floats must have the same
bit pattern (so -0.0 differs from +0.0 and NaN payloads count). It reports the first differing
element: output index, element index, both values and both bit patterns.

Two relaxations exist, used ONLY by the conformance check (:func:`check_graph`) for operators whose
XLA:CPU result depends on the host CPU (documented in the ``xla=`` texts of semantics/ops):

(a) NaN vs NaN with different bits (payload or sign) is counted separately in
    ``CompareResult.nan_diffs`` instead of as a mismatch; the conformance test still fails on it,
    except for the result of a bounded operator, whose NaN bits depend on XLA's code path, and
    for an element of an elementwise operator with two or more NaN operands (IEEE 754 leaves which
    NaN propagates open; XLA's choice follows its code generation).
(b) A :class:`Bound` per output: an ulp bound (distance in representable values of the output type)
    and/or an absolute bound per element (float dot/reduce/convolution sums whose order is host
    dependent); for a convolution, elements whose magnitude sum exceeds the type's largest value
    pass with any result (whether the sum overflows, or meets infinities of both signs, depends on
    that order). An approximated operator's bound is its operator table entry's
    :class:`~semantics.ops.XlaBound` (:func:`op_bound`): no bound is written here.

:func:`check_graph` runs a graph on both sides, the interpreter in ``mode="xla-strict"`` (the
numerics of XLA as the oracle runs it: ``--xla_allow_excess_precision=false``, which still
contracts f32/f64 multiply-add into an FMA; :mod:`semantics.xla_default`). Bit-identical outputs pass. Otherwise, if the graph
contains bounded operators, XLA is run once more returning every intermediate value, and each
instruction is re-evaluated with the interpreter on XLA's own operand values: exact operators must
match bit for bit, bounded ones within their bound (so an error is checked where it arises, not
after later operators amplify it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from .dtypes import from_numpy
from .ir import Graph, Instruction
from .types import TensorType

__all__ = ["Bound", "Mismatch", "CompareResult", "compare", "op_bound", "check_graph", "GraphCheck", "is_bounded"]


@dataclass(frozen=True)
class Bound:
    """Allowed difference for one output: ``ulps`` (in the output type) and/or ``abs_tol`` (an
    array broadcastable to the output). An element passes when either bound holds."""

    ulps: int = 0
    abs_tol: np.ndarray | None = None
    why: str = ""
    #: elements where any result passes (a sum whose order decides between overflow and not)
    anything: np.ndarray | None = None


@dataclass(frozen=True)
class Mismatch:
    output: int
    index: tuple[int, ...]
    expected: Any
    actual: Any
    expected_bits: str
    actual_bits: str

    def __str__(self) -> str:
        return (f"output {self.output} element {self.index}: expected {self.expected!r} ({self.expected_bits}), "
                f"got {self.actual!r} ({self.actual_bits})")


@dataclass
class CompareResult:
    identical: bool = True          # every bit equal
    within_bound: bool = True       # equal up to the bounds and NaN payloads
    nan_diffs: int = 0              # NaN vs NaN with other bits
    mismatches: int = 0             # elements outside the bounds
    first: Mismatch | None = None   # first element outside the bounds
    first_nan: Mismatch | None = None
    max_ulp: float = 0.0            # largest float distance seen (ulps of the output type)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.within_bound and self.nan_diffs == 0


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats -> int64 keys where adjacent representable values differ by 1 (+0 and -0 both 0)."""
    si = np.dtype(f"i{a.dtype.itemsize}")
    b = a.view(si).astype(np.int64)
    return np.where(b < 0, -(b & np.int64((1 << (8 * a.dtype.itemsize - 1)) - 1)), b)


def compare(expected: list[np.ndarray], actual: list[np.ndarray],
            bounds: list[Bound | None] | None = None) -> CompareResult:
    """Compare two flat output lists (see the module docstring); never raises on value differences."""
    res = CompareResult()
    if len(expected) != len(actual):
        res.identical = res.within_bound = False
        res.message = f"{len(expected)} outputs expected, {len(actual)} given"
        return res
    for k, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if e.dtype != a.dtype or e.shape != a.shape:
            res.identical = res.within_bound = False
            res.message = f"output {k}: expected {e.dtype}{e.shape}, got {a.dtype}{a.shape}"
            return res
        eb, ab = _bits(e).ravel(), _bits(a).ravel()
        diff = eb != ab
        if not diff.any():
            continue
        res.identical = False
        bad = diff.copy()
        if from_numpy(e.dtype).is_float:
            ef, af = e.ravel(), a.ravel()
            both_nan = np.isnan(ef.astype(np.float64)) & np.isnan(af.astype(np.float64))
            nan_d = diff & both_nan
            if nan_d.any():
                res.nan_diffs += int(nan_d.sum())
                if res.first_nan is None:
                    res.first_nan = _mismatch(k, e, a, int(np.flatnonzero(nan_d)[0]))
            bad &= ~both_nan
            fin = bad & np.isfinite(ef.astype(np.float64)) & np.isfinite(af.astype(np.float64))
            dist = np.abs(_ordered(ef) - _ordered(af)).astype(np.float64)
            if fin.any():
                res.max_ulp = max(res.max_ulp, float(dist[fin].max()))
            b = bounds[k] if bounds is not None and k < len(bounds) else None
            if b is not None:
                # ulp distance counts +-inf as the value after +-max (XLA's f64 log(inf) can be DBL_MAX)
                ok = bad & (dist <= b.ulps)
                if b.abs_tol is not None:
                    tol = np.broadcast_to(b.abs_tol, e.shape).ravel()
                    with np.errstate(all="ignore"):
                        ok |= fin & (np.abs(ef.astype(np.float64) - af.astype(np.float64)) <= tol)
                if b.anything is not None:
                    ok |= np.broadcast_to(b.anything, e.shape).ravel()
                # same-valued zeros of either sign are within any bound
                ok |= (ef.astype(np.float64) == 0) & (af.astype(np.float64) == 0) & (b.ulps > 0 or b.abs_tol is not None)
                bad &= ~ok
        else:
            b = bounds[k] if bounds is not None and k < len(bounds) else None
            if b is not None and b.anything is not None:
                # an integer output may be free too: a modelled float sum quantized downstream
                bad &= ~np.broadcast_to(b.anything, e.shape).ravel()
        if bad.any():
            res.within_bound = False
            res.mismatches += int(bad.sum())
            if res.first is None:
                res.first = _mismatch(k, e, a, int(np.flatnonzero(bad)[0]))
    if res.first is not None:
        res.message = str(res.first)
    elif res.first_nan is not None:
        res.message = f"NaN bits differ: {res.first_nan}"
    return res


def _mismatch(k: int, e: np.ndarray, a: np.ndarray, flat: int) -> Mismatch:
    idx = tuple(int(i) for i in np.unravel_index(flat, e.shape)) if e.shape else ()
    w = 2 * (1 if e.dtype == np.bool_ else e.dtype.itemsize)
    ev, av = e.reshape(-1)[flat], a.reshape(-1)[flat]
    return Mismatch(k, idx, ev.item(), av.item(), f"0x{int(_bits(e).reshape(-1)[flat]):0{w}x}",
                    f"0x{int(_bits(a).reshape(-1)[flat]):0{w}x}")


# ---------------------------------------------------------------------------------------------
# bounded operators
# ---------------------------------------------------------------------------------------------

def is_bounded(ins: Instruction, graph: Graph) -> bool:
    """True when XLA:CPU's result for ``ins`` is host dependent (see :func:`op_bound`)."""
    from .ops import REGISTRY

    t = ins.type
    if not isinstance(t, TensorType) or not t.dtype.is_float:
        return False
    op = REGISTRY.get(ins.opcode)
    if op is not None and op.xla_bound is not None:
        return True
    if ins.opcode in ("dot", "convolution"):
        return True
    if ins.opcode == "reduce":
        region = graph.computation(ins.attrs["to_apply"])
        return any(i.opcode in ("add", "multiply", "subtract") for i in region.instructions)
    return False


def op_bound(ins: Instruction, graph: Graph, operands: list[np.ndarray], ref: np.ndarray) -> Bound | None:
    """The allowed XLA-vs-reference difference of one bounded instruction, given its operand
    values and the reference result; None for an exact instruction."""
    from .ops import REGISTRY

    if not is_bounded(ins, graph):
        return None
    t = ins.type
    assert isinstance(t, TensorType)
    dt = t.dtype
    xb = REGISTRY[ins.opcode].xla_bound
    if xb is not None:
        tol = np.array(xb.near_one * 2.0 ** -dt.man_bits) if xb.near_one else None
        return Bound(ulps=xb.ulps[dt.name], abs_tol=tol,
                     why=f"{ins.opcode} approximation" + (" (ordinary operands)" if xb.ordinary else ""))
    wide = dt.bits == 64 or operands[0].dtype == np.float64
    u = 2.0 ** -53 if wide else 2.0 ** -24
    tiny = 2.0 ** -1022 if wide else 2.0 ** -126
    out_ulp = _ulp_of(ref)
    with np.errstate(all="ignore"):
        if ins.opcode == "dot":
            from .ops.contraction import _dot_operands
            A, B, shape = _dot_operands(operands[0].astype(np.float64), operands[1].astype(np.float64), ins.attrs)
            k = A.shape[2]
            s = np.matmul(np.abs(A), np.abs(B)).reshape(shape)
            tol = 2 * max(k - 1, 0) * u * s + k * tiny + out_ulp
            return Bound(ulps=0, abs_tol=tol, why=f"float dot, K={k}")
        if ins.opcode == "convolution":
            return _conv_bound(ins, operands, ref, u, tiny, out_ulp)
        dims = ins.attrs["dimensions"]
        x = np.abs(operands[0].astype(np.float64))
        n = math.prod(operands[0].shape[d] for d in dims)
        region = graph.computation(ins.attrs["to_apply"])
        init = abs(float(operands[1].astype(np.float64)))
        if any(i.opcode == "multiply" for i in region.instructions):
            p = np.prod(x, axis=tuple(dims)) * max(init, 1.0)
            tol = 2 * n * u * p + n * tiny + out_ulp
        else:
            tol = 2 * n * u * (np.sum(x, axis=tuple(dims)) + n * init) + n * tiny + out_ulp
        return Bound(ulps=0, abs_tol=tol, why=f"float reduce over {n} elements")


def _conv_bound(ins: Instruction, operands: list[np.ndarray], ref: np.ndarray, u: float, tiny: float,
                out_ulp: np.ndarray) -> Bound:
    """A float convolution: XLA:CPU sums it with Eigen in its own order (measured: 1-ulp differences
    on ordinary operands). dot's bound over the K terms of each output, and, where the sum of the
    terms' magnitudes exceeds the type's largest value, any result: whether a partial sum or a
    separately rounded product overflows (and meets an infinity of the other sign: NaN) depends
    on that order. NaN terms (NaN operands, infinity times zero) still require a NaN."""
    from .ops.window import _conv_matrices

    x, k = (np.abs(o.astype(np.float64)) for o in operands)
    mats, mask, shape, perm = _conv_matrices(x, k, ins.attrs)
    with np.errstate(all="ignore"):
        s = np.concatenate([np.matmul(np.where(mask, A, 0.0), B) for A, B in mats], axis=1)
        s = np.ascontiguousarray(np.transpose(s.reshape(shape), perm)).reshape(ref.shape)
        kk = mask.shape[1]
        tol = 2 * max(kk - 1, 0) * u * s + kk * tiny + out_ulp
    big = float(np.finfo(ref.dtype).max) if ref.dtype.kind == "f" else float(ml_dtypes.finfo(ref.dtype).max)
    return Bound(ulps=0, abs_tol=np.nan_to_num(tol, nan=0.0), anything=~np.isnan(s) & (s > big),
                 why=f"float convolution, K={kk}")


def _ulp_of(r: np.ndarray) -> np.ndarray:
    """One ulp of each element of ``r`` in its own type (as f64)."""
    f = r.astype(np.float64)
    with np.errstate(all="ignore"):
        nxt = np.nextafter(np.abs(r), np.array(np.inf, dtype=r.dtype)).astype(np.float64)
        u = np.where(np.isfinite(f), nxt - np.abs(f), 0.0)
    return np.nan_to_num(u, nan=0.0, posinf=0.0)


# ---------------------------------------------------------------------------------------------
# graph conformance
# ---------------------------------------------------------------------------------------------

@dataclass
class GraphCheck:
    """Outcome of :func:`check_graph`: ``status`` is identical, within_bound or failed."""

    status: str
    result: CompareResult
    bounded_ops: list[str] = field(default_factory=list)
    detail: str = ""
    nan_diffs: int = 0


def check_graph(graph: Graph, inputs: list[np.ndarray], mode: str = "xla-strict") -> GraphCheck:
    """Run ``graph`` with the interpreter (numeric ``mode``) and with XLA and classify the outcome
    (module docstring). The re-check instruction by instruction is strict in every mode: XLA then
    returns every intermediate value, so no multiply has the add as its only user."""
    from .interp import evaluate
    from .xla_oracle import run_xla

    ref = evaluate(graph, inputs, mode=mode)
    got = run_xla(graph, inputs)
    res = compare(ref, got)
    bounded = sorted({i.opcode for i in graph.entry.instructions if is_bounded(i, graph)})
    if res.identical:
        return GraphCheck("identical", res, bounded)
    if not bounded and not (res.within_bound and res.nan_diffs):
        return GraphCheck("failed", res, bounded, res.message, res.nan_diffs)
    return _stepwise(graph, inputs, bounded, res)


def _multi_nan(ins: Instruction, ops: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """Elements of an elementwise instruction whose result came from two or more NaN operands:
    IEEE 754 does not say which NaN propagates, and XLA's choice follows its code generation."""
    from .ops import REGISTRY

    if REGISTRY[ins.opcode].category != "elementwise":
        return None
    floats = [o for o in ops if o.shape in (shape, ()) and o.dtype.kind not in "iub"]
    if len(floats) < 2:
        return None
    count = sum(np.broadcast_to(np.isnan(o.astype(np.float64)), shape).astype(int) for o in floats)
    return np.asarray(count >= 2)


def _stepwise(graph: Graph, inputs: list[np.ndarray], bounded: list[str], whole: CompareResult) -> GraphCheck:
    from .interp import run_computation
    from .ops import REGISTRY, Env
    from .xla_oracle import run_xla_all

    vals = run_xla_all(graph, inputs)
    params = dict(zip(graph.entry.params, inputs, strict=True))
    total = CompareResult()

    def call(name: str, args: list[Any]) -> Any:
        return run_computation(graph, graph.computation(name), args, batched=True)

    for ins in graph.entry.instructions:
        if ins.opcode in ("parameter", "tuple", "get-tuple-element") or not isinstance(ins.type, TensorType):
            continue
        ops = [vals[o] if o in vals else params[o] for o in ins.operands]
        env = Env(graph=graph, call=call)
        env.extra["operand_dtypes"] = [from_numpy(o.dtype) for o in ops]
        mine = np.asarray(REGISTRY[ins.opcode].evaluate(ops, ins.attrs, ins.type, env))
        b = op_bound(ins, graph, ops, mine)
        r = compare([mine], [vals[ins.name]], [b])
        multi = _multi_nan(ins, ops, mine.shape) if r.nan_diffs and b is None else None
        if multi is not None:
            differ = (_bits(mine) != _bits(np.asarray(vals[ins.name]))) & multi
            if int(differ.sum()) == r.nan_diffs:   # every NaN difference has several NaN operands
                r.nan_diffs = 0
        if b is not None and r.nan_diffs:
            # the NaN bits a bounded operator produces depend on XLA's code path (measured: f32 log
            # of a negative gives 0xffc00000 in a 3-element unfused kernel, 0xffffffff otherwise;
            # a dot's NaN sign follows its summation order): NaN-ness must match, the bits may not
            r.nan_diffs = 0
        total.nan_diffs += r.nan_diffs
        total.max_ulp = max(total.max_ulp, r.max_ulp)
        if not r.within_bound:
            return GraphCheck("failed", r, bounded, f"instruction {ins.name} ({ins.opcode}): {r.message}",
                              total.nan_diffs)
        if r.nan_diffs and total.first_nan is None:
            total.first_nan = r.first_nan
            total.message = f"instruction {ins.name} ({ins.opcode}): NaN bits differ: {r.first_nan}"
    status = "within_bound" if total.nan_diffs == 0 else "failed"
    return GraphCheck(status, total, bounded, total.message, total.nan_diffs)
