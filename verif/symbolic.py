"""Symbolic-shape semantics of rule patterns: tensors as functions from index tuples to elements.

A pattern (:mod:`rewrite_rules.dsl`) is encoded for one dtype and rank with every size and
attribute a symbolic integer: an :class:`STensor` has a symbolic shape and an ``at(index)``
function giving the z3 term of the element at a symbolic index. Tensor variables are uninterpreted
functions ``Int^rank -> sort`` (floats: ``Int^rank -> bits``, read through ``fpBVToFP``, so a NaN
input keeps its sign and payload where an operator observes them, :func:`semantics.ops._z3util.ieee_bits`). Elementwise operators apply the operator table's own scalar z3
semantics (``OpDef.scalar``: the same terms the concrete SMT encoder uses), so a proof here is about
exactly the semantics the interpreter implements. Data movement (slice, pad, concatenate,
broadcast, transpose, reverse, reshape, iota, dynamic-slice, dynamic-update-slice, copy) is
index arithmetic. ``well_formed`` collects the conditions under which the pattern is a valid
graph (slice bounds, matching shapes, ...).

``dot`` and ``reduce`` over a symbolic extent have no index-function form here: a rule that
contains them is proved by the bounded prover instead (:mod:`verif.prover`), which says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from rewrite_rules.dsl import Node, Op, TVar
from rewrite_rules.node_types import result_dtype
from semantics.dtypes import DTYPES, DType
from semantics.ir import Attrs
from semantics.ops import REGISTRY
from semantics.ops import _z3util as Z
from semantics.ops.convert import convert_term

__all__ = ["STensor", "Encoder", "NotSymbolic"]

Index = Sequence[Any]


class NotSymbolic(Exception):
    """The pattern uses an operator without a symbolic-shape encoding (dot, reduce)."""


@dataclass
class STensor:
    dtype: DType
    shape: list[Any]
    at: Callable[[Index], Any]

    @property
    def rank(self) -> int:
        return len(self.shape)


def _ite_index(cond: Any, a: Index, b: Index) -> list[Any]:
    return [z3.If(cond, x, y) for x, y in zip(a, b, strict=True)]


class Encoder:
    """Encodes pattern nodes for one dtype; collects well-formedness conditions."""

    def __init__(self, dtype: DType, shapes_only: bool = False) -> None:
        self.dtype = dtype
        self.wf: list[Any] = []
        self.inputs: dict[str, tuple[TVar, Any]] = {}
        self.shapes_only = shapes_only
        self._memo: dict[int, STensor] = {}

    def req(self, *conds: Any) -> None:
        """Add well-formedness conditions (Python bools from constant attributes allowed)."""
        for c in conds:
            self.wf.append(z3.BoolVal(c) if isinstance(c, bool) else c)

    def dt(self, name: str | None) -> DType:
        return self.dtype if name is None else DTYPES[name]

    def encode(self, node: Node) -> STensor:
        key = id(node)
        if key not in self._memo:
            self._memo[key] = self._encode(node)
        return self._memo[key]

    # -- variables -----------------------------------------------------------------------------

    def _var(self, v: TVar) -> STensor:
        dt = self.dt(v.dtype)
        for n in v.shape:
            self.req(n >= 0)
        if v.name not in self.inputs:
            # a float element is fpBVToFP of its bits, so NaN inputs keep their sign and payload
            sort = z3.BitVecSort(dt.bits) if dt.is_float else Z.sort_of(dt)
            fn = z3.Function(v.name, *([z3.IntSort()] * v.rank), sort) if v.rank else z3.Const(v.name, sort)
            self.inputs[v.name] = (v, fn)
        fn = self.inputs[v.name][1]
        return STensor(dt, list(v.shape), lambda i: self.element(v.name, i))

    def element(self, name: str, index: Index) -> Any:
        """The term of input ``name``'s element at ``index`` (floats: ``fpBVToFP`` of its bits)."""
        v, fn = self.inputs[name]
        dt = self.dt(v.dtype)
        t = fn(*index) if v.rank else fn
        return z3.fpBVToFP(t, Z.fp_sort(dt)) if dt.is_float else t

    # -- operators -----------------------------------------------------------------------------

    def _encode(self, node: Node) -> STensor:
        if isinstance(node, TVar):
            return self._var(node)
        assert isinstance(node, Op)
        args = [self.encode(a) for a in node.args]
        f = getattr(self, "_op_" + node.opcode.replace("-", "_"), None)
        if f is not None:
            return f(node, args)
        opdef = REGISTRY.get(node.opcode)
        if opdef is not None and opdef.scalar is not None:
            return self._elementwise(node, args)
        raise NotSymbolic(node.opcode)

    def _same_shape(self, a: STensor, b: STensor) -> None:
        if a.rank != b.rank:
            self.req(z3.BoolVal(False))
            return
        for x, y in zip(a.shape, b.shape, strict=True):
            self.req(x == y)

    def _elementwise(self, node: Op, args: list[STensor]) -> STensor:
        opdef = REGISTRY[node.opcode]
        main = args[1] if node.opcode in ("select", "clamp") else args[0]   # select's/clamp's scalars may be rank 0
        for a in args:
            if a.rank == 0 and node.opcode in ("select", "clamp"):
                continue   # scalar predicate / bound
            self._same_shape(main, a)
        dts = [a.dtype for a in args]
        odt = result_dtype(node, dts, self.dtype)
        shape = (args[1] if node.opcode in ("select", "clamp") else args[0]).shape
        attrs = Attrs(tuple(node.attrs.items()))
        scalar = opdef.scalar
        assert scalar is not None

        def at(i: Index) -> Any:
            vals = [a.at(i) if a.rank else a.at(()) for a in args]
            return scalar(vals, attrs, dts, odt)
        return STensor(odt, list(shape), at)

    def _op_copy(self, node: Op, args: list[STensor]) -> STensor:
        return args[0]

    def _op_constant(self, node: Op, args: list[STensor]) -> STensor:
        dt = self.dt(node.out_dtype)
        term = Z.const(node.attrs["value"], dt)
        return STensor(dt, [], lambda i: term)

    def _op_convert(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        dt = self.dt(node.out_dtype)
        return STensor(dt, list(x.shape), lambda i: convert_term(x.at(i), x.dtype, dt))

    def _op_bitcast_convert(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        dt = self.dt(node.out_dtype)
        if dt.bits != x.dtype.bits:
            if not self.shapes_only:
                raise NotSymbolic("bitcast-convert between widths")
            if dt.bits > x.dtype.bits:
                self.req(x.rank > 0, x.shape[-1] == dt.bits // x.dtype.bits) if x.rank else self.req(False)
                return STensor(dt, list(x.shape[:-1]), self._no_at("bitcast-convert"))
            return STensor(dt, list(x.shape) + [x.dtype.bits // dt.bits], self._no_at("bitcast-convert"))
        from semantics.ops.convert import _bits_term, _from_bits_term
        return STensor(dt, list(x.shape), lambda i: _from_bits_term(_bits_term(x.at(i), x.dtype), dt))

    def _op_broadcast(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        dims = node.attrs["dimensions"]
        shape = list(node.out_shape or ())
        dt = x.dtype if node.out_dtype is None else self.dt(node.out_dtype)
        if len(dims) != x.rank or list(dims) != sorted(set(dims)):
            self.req(z3.BoolVal(False))   # the builder requires one increasing dimension per operand dim
        for n in shape:
            self.req(n >= 0)
        for k, d in enumerate(dims):
            self.req(z3.Or(x.shape[k] == shape[d], x.shape[k] == 1))

        def at(i: Index) -> Any:
            return x.at([z3.If(x.shape[k] == 1, 0, i[d]) for k, d in enumerate(dims)])
        return STensor(dt, shape, at)

    def _op_transpose(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        perm = node.attrs["dimensions"]
        if sorted(perm) != list(range(x.rank)):
            self.req(False)   # not a permutation of the operand's dimensions
            perm = tuple(range(x.rank))

        def at(i: Index) -> Any:
            j: list[Any] = [0] * x.rank
            for k, p in enumerate(perm):
                j[p] = i[k]
            return x.at(j)
        return STensor(x.dtype, [x.shape[p] for p in perm], at)

    def _op_reverse(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        dims = node.attrs["dimensions"]
        if any(not 0 <= d < x.rank for d in dims) or len(set(dims)) != len(dims):
            self.req(False)   # a dimension the operand lacks
        return STensor(x.dtype, list(x.shape),
                       lambda i: x.at([x.shape[k] - 1 - i[k] if k in dims else i[k] for k in range(x.rank)]))

    def _op_slice(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        sl = node.attrs["slice"]
        shape = []
        for k, (s, e, st) in enumerate(sl):
            self.req(0 <= s, s <= e, e <= x.shape[k])
            shape.append((e - s + st - 1) / st if st != 1 else e - s)
        return STensor(x.dtype, shape, lambda i: x.at([s + i[k] * st for k, (s, _, st) in enumerate(sl)]))

    def _op_pad(self, node: Op, args: list[STensor]) -> STensor:
        x, v = args
        pads = node.attrs["padding"]
        shape = []
        for k, (lo, hi, it) in enumerate(pads):
            self.req(it >= 0)
            n = x.shape[k]
            size = lo + hi + n + z3.If(n > 0, n - 1, 0) * it
            self.req(size >= 0)
            shape.append(size)

        def at(i: Index) -> Any:
            inside = []
            src = []
            for k, (lo, _, it) in enumerate(pads):
                j = i[k] - lo
                if isinstance(it, int) and it == 0:
                    inside.append(z3.And(j >= 0, j < x.shape[k]))
                    src.append(j)
                else:
                    inside.append(z3.And(j >= 0, j % (it + 1) == 0, j / (it + 1) < x.shape[k]))
                    src.append(j / (it + 1))
            return z3.If(z3.And(*inside), x.at(src), v.at(()))
        return STensor(x.dtype, shape, at)

    def _op_concatenate(self, node: Op, args: list[STensor]) -> STensor:
        (d,) = node.attrs["dimensions"]
        first = args[0]
        for a in args[1:]:
            if a.rank != first.rank:
                self.req(z3.BoolVal(False))
                continue
            for k in range(a.rank):
                if k != d:
                    self.req(a.shape[k] == first.shape[k])
        shape = list(first.shape)
        shape[d] = sum((a.shape[d] for a in args[1:]), first.shape[d])

        def at(i: Index) -> Any:
            offs = []
            o: Any = 0
            for a in args:
                offs.append(o)
                o = o + a.shape[d]
            term = args[-1].at([i[k] - offs[-1] if k == d else i[k] for k in range(len(i))])
            for a, off in zip(reversed(args[:-1]), reversed(offs[:-1]), strict=True):
                term = z3.If(i[d] < off + a.shape[d], a.at([i[k] - off if k == d else i[k] for k in range(len(i))]), term)
            return term
        return STensor(first.dtype, shape, at)

    def _op_reshape(self, node: Op, args: list[STensor]) -> STensor:
        (x,) = args
        shape = list(node.out_shape or ())
        total_in = _prod(x.shape)
        total_out = _prod(shape)
        self.req(total_in == total_out)
        for n in shape:
            self.req(n >= 0)

        def at(i: Index) -> Any:
            lin: Any = 0
            for k, n in enumerate(shape):
                lin = lin * n + i[k]
            j: list[Any] = []
            for n in reversed(x.shape):
                j.append(lin % n)
                lin = lin / n
            return x.at(list(reversed(j)))
        return STensor(x.dtype, shape, at)

    def _op_iota(self, node: Op, args: list[STensor]) -> STensor:
        dt = self.dt(node.out_dtype)
        shape = list(node.out_shape or ())
        d = node.attrs["iota_dimension"]

        def at(i: Index) -> Any:
            if dt.is_int:
                return z3.Int2BV(i[d], dt.bits)
            if dt.name == "bf16":   # int -> bf16 goes through f32: two roundings (docs/semantics.md)
                return z3.fpFPToFP(Z.RNE, z3.fpToFP(Z.RNE, z3.ToReal(i[d]), z3.Float32()), Z.fp_sort(dt))
            return z3.fpToFP(Z.RNE, z3.ToReal(i[d]), Z.fp_sort(dt))
        return STensor(dt, shape, at)

    def _start(self, term: Any, dt: DType, limit: Any) -> Any:
        v = z3.BV2Int(term, is_signed=dt.is_signed)
        return z3.If(v < 0, 0, z3.If(v > limit, limit, v))

    def _op_dynamic_slice(self, node: Op, args: list[STensor]) -> STensor:
        x, starts = args[0], args[1:]
        sizes = list(node.attrs["dynamic_slice_sizes"])
        for k, s in enumerate(sizes):
            self.req(s >= 0, s <= x.shape[k])
        st = [self._start(a.at(()), a.dtype, x.shape[k] - sizes[k]) for k, a in enumerate(starts)]
        return STensor(x.dtype, sizes, lambda i: x.at([s + i[k] for k, s in enumerate(st)]))

    def _op_dynamic_update_slice(self, node: Op, args: list[STensor]) -> STensor:
        x, u, starts = args[0], args[1], args[2:]
        for k in range(x.rank):
            self.req(u.shape[k] <= x.shape[k])
        st = [self._start(a.at(()), a.dtype, x.shape[k] - u.shape[k]) for k, a in enumerate(starts)]

        def at(i: Index) -> Any:
            inside = z3.And(*[z3.And(i[k] >= s, i[k] < s + u.shape[k]) for k, s in enumerate(st)])
            return z3.If(inside, u.at([i[k] - s for k, s in enumerate(st)]), x.at(i))
        return STensor(x.dtype, list(x.shape), at)

    def _no_at(self, what: str) -> Callable[[Index], Any]:
        def at(i: Index) -> Any:
            raise NotSymbolic(what)
        return at

    def _op_dot(self, node: Op, args: list[STensor]) -> STensor:
        if not self.shapes_only:
            raise NotSymbolic("dot")
        a, b = args
        lb, rb = node.attrs["lhs_batch_dims"], node.attrs["rhs_batch_dims"]
        lc, rc = node.attrs["lhs_contracting_dims"], node.attrs["rhs_contracting_dims"]
        for x, y in list(zip(lb, rb, strict=True)) + list(zip(lc, rc, strict=True)):
            self.req(a.shape[x] == b.shape[y])
        lf = [d for d in range(a.rank) if d not in lb + lc]
        rf = [d for d in range(b.rank) if d not in rb + rc]
        shape = [a.shape[d] for d in lb] + [a.shape[d] for d in lf] + [b.shape[d] for d in rf]
        return STensor(self.dt(node.out_dtype) if node.out_dtype else a.dtype, shape, self._no_at("dot"))

    def _op_reduce(self, node: Op, args: list[STensor]) -> STensor:
        if not self.shapes_only:
            raise NotSymbolic("reduce")
        x = args[0]
        dims = node.attrs["dimensions"]
        return STensor(x.dtype, [n for k, n in enumerate(x.shape) if k not in dims], self._no_at("reduce"))


def _prod(xs: Sequence[Any]) -> Any:
    r: Any = 1
    for x in xs:
        r = r * x
    return r
