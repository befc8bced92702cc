"""Module 1 of Act (seed 000 §5, appendix C.1): the kernel with byte-flattened inputs and outputs,
inserted into the e-graph.

What belongs here: :func:`initialize` (each entry parameter becomes a leaf ``input i`` of type
``u8[bytes]`` in d0 followed by the unbflat chain of its layout -- reshape / bitcast / transpose,
tiles included; each output is the bflat chain of the root value: C.1, bflat is invertible, so
the chains are exact), :func:`insert` (a term into the e-graph) and :func:`literal_forms` (the
other forms a literal's class gets: its int8 narrowing and the unbflat chain of its bytes, §5.3).

The literal forms are a function of the literal; their memo lives in the target's
:class:`~compilers.act.context.TargetContext` (:func:`forms_memo`).
"""

from __future__ import annotations

from dataclasses import dataclass

from semantics.dtypes import U8, DType
from semantics.ir import Graph
from semantics.layout import _physical_shape, _tile_perm, byte_size
from semantics.types import TensorType

from ...isa import HBM
from ..context import TargetContext
from ..egraph import EGraph, NodeInfo
from ..egraph.terms import Term, is_noop, lit_info, lower_outputs, mk_op, narrowed

__all__ = ["Kernel", "initialize", "insert", "literal_forms", "forms_memo"]



def _unbflat(x: Term, tt: TensorType) -> Term:
    """The tensor of type ``tt`` whose bflat image is the byte term ``x`` (layout.unbflat as operators)."""
    dt: DType = tt.dtype
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    nb = dt.nbytes
    shape_t = phys
    if lay.tiles:
        split, perm = _tile_perm(phys, lay.tiles)
        shape_t = tuple(split[p] for p in perm)
    if nb > 1:
        v = mk_op("reshape", [x], {}, TensorType(U8, shape_t + (nb,)))
        v = mk_op("bitcast-convert", [v], {}, TensorType(dt, shape_t))
    else:
        v = mk_op("reshape", [x], {}, TensorType(U8, shape_t))
        if dt != U8:
            v = mk_op("bitcast-convert", [v], {}, TensorType(dt, shape_t))
    if lay.tiles:
        inv = tuple(int(i) for i in sorted(range(len(perm)), key=lambda i: perm[i]))
        split_shape = tuple(shape_t[i] for i in inv)
        v = mk_op("transpose", [v], {"dimensions": inv}, TensorType(dt, split_shape))
        v = mk_op("reshape", [v], {}, TensorType(dt, phys))
        logical_phys = tuple(tt.shape[d] for d in order)
        if logical_phys != phys:
            v = mk_op("slice", [v], {"slice": tuple((0, n, 1) for n in logical_phys)}, TensorType(dt, logical_phys))
    inv_order = tuple(int(i) for i in sorted(range(len(order)), key=lambda i: order[i]))
    if inv_order != tuple(range(len(order))):
        v = mk_op("transpose", [v], {"dimensions": inv_order}, TensorType(dt, tuple(tt.shape)))
    return _simplify_chain(v)


def _bflat(v: Term, tt: TensorType) -> Term:
    """The bflat byte image of ``v`` (type ``tt``) as operators."""
    dt = tt.dtype
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    nb = dt.nbytes
    cur = v
    shape = tuple(tt.shape[d] for d in order)
    if tuple(order) != tuple(range(len(order))):
        cur = mk_op("transpose", [cur], {"dimensions": tuple(order)}, TensorType(dt, shape))
    if lay.tiles:
        if shape != phys:
            raise NotImplementedError("bflat of a padded tile")
        split, perm = _tile_perm(phys, lay.tiles)
        cur = mk_op("reshape", [cur], {}, TensorType(dt, split))
        shape = tuple(split[p] for p in perm)
        cur = mk_op("transpose", [cur], {"dimensions": tuple(perm)}, TensorType(dt, shape))
    if nb > 1:
        cur = mk_op("bitcast-convert", [cur], {}, TensorType(U8, shape + (nb,)))
    elif dt != U8:
        cur = mk_op("bitcast-convert", [cur], {}, TensorType(U8, shape))
    return _simplify_chain(mk_op("reshape", [cur], {}, TensorType(U8, (byte_size(tt),))))


def _simplify_chain(t: Term, memo: dict[int, Term] | None = None) -> Term:
    """Drop no-op steps of a bflat chain (terms.is_noop, the rule terms.lower applies) and
    merge consecutive reshapes (memoized: the term below the chain is a DAG)."""
    memo = {} if memo is None else memo
    k = id(t)
    if k not in memo:
        memo[k] = _simplify_step(t, memo)
    return memo[k]


def _simplify_step(t: Term, memo: dict[int, Term]) -> Term:
    if t.is_param or t.is_lit or not t.children:
        return t
    kids = tuple(_simplify_chain(c, memo) for c in t.children)
    info = t.info
    assert info is not None
    if is_noop(info.name, dict(info.attrs), info.type, kids):
        return kids[0]
    if info.name == "reshape" and not kids[0].is_param and kids[0].info is not None and kids[0].info.name == "reshape":
        return Term(info, kids[0].children)
    return Term(info, kids)


@dataclass
class Kernel:
    """The kernel as phase 1 sees it: output byte terms, input byte types and layouts."""

    graph: Graph
    inputs: list[TensorType]
    outputs: list[TensorType]
    roots: list[Term]
    input_leaves: list[Term]


def initialize(graph: Graph) -> Kernel:
    """Module 1: the kernel with byte-flattened inputs and outputs (Fig. 9a)."""
    from semantics.types import TupleType

    ins = [t for t in graph.param_types]
    leaves: list[Term] = []
    params: list[Term] = []
    for i, t in enumerate(ins):
        assert isinstance(t, TensorType)
        leaf = Term(NodeInfo("input", str(i), (), TensorType(U8, (byte_size(t),)), HBM))
        leaves.append(leaf)
        params.append(_unbflat(leaf, t))
    outs = lower_outputs(graph, None, params)
    rt = graph.result_type
    out_types = list(rt.elements) if isinstance(rt, TupleType) else [rt]
    roots = []
    for o, t in zip(outs, out_types, strict=True):
        if o.is_lit:   # a compile-time constant output: its bytes, folded (§5.3)
            from semantics.layout import bflat

            data = bflat(o.info.literal.to_array(), t)  # type: ignore[union-attr, arg-type]
            roots.append(Term(lit_info(data, TensorType(U8, (data.size,)))))
        else:
            roots.append(_bflat(o, t))  # type: ignore[arg-type]
    return Kernel(graph, ins, out_types, roots, leaves)  # type: ignore[arg-type]


def insert(egraph: EGraph, t: Term, memo: dict[int, tuple[Term, int]],
           forms: dict[NodeInfo, list[Term]] | None = None) -> int:
    """Add a term (params not allowed) and return its handle. ``memo`` maps id(term) to the term
    and its handle: the term is kept alive with its entry, because the literal forms inserted
    here are temporary objects whose ids Python reuses once they are freed. ``forms``: the
    memo of :func:`literal_forms`."""
    k = id(t)
    hit = memo.get(k)
    if hit is not None and hit[0] is t:
        return hit[1]
    assert t.info is not None, "parameters cannot be inserted"
    kids = tuple(insert(egraph, c, memo, forms) for c in t.children)
    fresh = egraph.n_handles
    h = egraph.add(t.info, kids)
    memo[k] = (t, h)
    if h >= fresh:      # an e-node added before got its literal forms then
        for f in literal_forms(t.info, forms):
            egraph.union(h, insert(egraph, f, memo, forms))
    return h


#: a target's memo of literal forms is emptied when it holds this many (a campaign of kernels)
LIT_FORMS_MAX = 1 << 12


def literal_forms(info: NodeInfo, memo: dict[NodeInfo, list[Term]] | None = None) -> list[Term]:
    """The other e-nodes a literal's e-class gets when it is inserted: its int8 narrowing
    (:func:`.terms.narrowed`) and the unbflat chain of its bytes, so an instruction that loads
    from HBM can load the constant (its bytes are then placed in the constant section, §5.3).
    A function of the literal: ``memo`` (by value; the target's, :func:`forms_memo`) keeps them
    across compiles (a rule's right side inserts its constants in every compile)."""
    if info.kind != "lit" or info.literal is None or not info.type.shape:
        return []
    if memo is None:
        return _literal_forms(info)
    hit = memo.get(info)
    if hit is None:
        hit = memo[info] = _literal_forms(info)
    return hit


def forms_memo(target: TargetContext) -> dict[NodeInfo, list[Term]]:
    """The target's memo of :func:`literal_forms` (emptied when it holds :data:`LIT_FORMS_MAX`)."""
    return target.bounded("literal_forms", LIT_FORMS_MAX)


def _literal_forms(info: NodeInfo) -> list[Term]:
    out = []
    n = narrowed(info)
    if n is not None:
        out.append(n)
    from semantics.layout import bflat

    data = bflat(info.literal.to_array(), info.type)
    leaf = Term(lit_info(data, TensorType(U8, (data.size,))))
    chain = _unbflat(leaf, info.type)
    if chain is not leaf:
        out.append(chain)
    return out
