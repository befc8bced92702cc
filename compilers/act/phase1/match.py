"""Matching an IR-to-IR rule's left side (seed 000 §5.1, Module 2) on an e-graph snapshot or on a
term (a g_θ(α) pattern being normalized).

What belongs here: the views the matcher reads (:class:`SnapView`, :class:`TermView`), bindings
(:class:`Binding`), :class:`Matcher` (``match`` then ``finish``), and the root prefilters
(:class:`Prefilter` on e-graphs, :func:`term_may_match` on terms) that skip classes where the
matcher would find nothing. Instantiating rules is :mod:`.instantiate`; firing matches,
:mod:`.rewrite`.

Matching a left side binds its tensor variables to e-classes and its symbolic sizes and
attributes to integers (attributes written as expressions are checked after binding, in
:meth:`Matcher.finish`); sub-patterns without tensor variables (constants, ``full``, identity
matrices) are built concretely and compared with the literal the e-class holds. Preconditions
are evaluated on the binding.

Act has three pattern matchers, each over its own pattern language: this one (library rules,
:class:`rewrite_rules.dsl.Node`, with symbolic sizes and attributes, over e-classes), the
IR-to-ISA matcher :func:`.isa_rules.match` (lowered g_θ(α) terms with concrete types, over
e-classes, matching e-node infos by identity) and the tiling's (byte views of kernel values).
None is derived from another: their patterns differ in kind. What they share is the operator
table (:mod:`semantics.ops`) and :data:`.terms.ELEMENTWISE`, the one definition of the
elementwise operators; this matcher's prefilters are tied to the matcher itself by
tests/compilers/test_act_rewrite.py (a class a prefilter drops has no surviving match), and the
IR-to-ISA matcher's semi-naive skips to a plain run by tests/compilers/test_act_seminaive.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import z3

from rewrite_rules.dsl import Node, Op, TVar
from rewrite_rules.instantiate import emit, evaluator
from semantics.dtypes import DTYPES

from ..egraph import EGraph, NodeInfo, Snapshot
from ..egraph.terms import Term, lower
from .instantiate import Inst, InstFacts, facts_of

__all__ = ["View", "SnapView", "TermView", "Binding", "Matcher", "Prefilter", "term_may_match", "classes_by_op",
           "evaluator_of"]

#: an e-node's attributes as a dict, per info (by id, with the info: the memo keeps it alive)
AttrsMemo = dict[int, tuple[NodeInfo, dict[str, Any]]]


class View:
    """What the matcher needs: the e-nodes and type of a class, and the attributes of an e-node."""

    attrs_memo: AttrsMemo

    def nodes(self, c: int) -> Sequence[tuple[NodeInfo, tuple[int, ...]]]:
        raise NotImplementedError

    def ctype(self, c: int):  # noqa: ANN201
        raise NotImplementedError

    def op_nodes(self, c: int, name: str, arity: int) -> Sequence[tuple[int, NodeInfo, tuple[int, ...]]]:
        """(position in :meth:`nodes`, info, children) of the class's e-nodes of operator ``name``
        with ``arity`` operands, in order."""
        return [(j, info, kids) for j, (info, kids) in enumerate(self.nodes(c))
                if info.kind == "op" and info.name == name and len(kids) == arity]


class SnapView(View):
    """An e-graph snapshot. ``attrs``: the e-nodes' attribute dicts, kept across the views of one
    compile (its :class:`~compilers.act.context.CompileContext`) or made for this view."""

    def __init__(self, eg: EGraph, snap: Snapshot, attrs: AttrsMemo | None = None) -> None:
        self.eg, self.snap = eg, snap
        infos = eg.infos
        self._nodes = [[(infos[en.info], en.children) for en in cl] for cl in snap.classes]
        self._types = [infos[cl[0].info].type for cl in snap.classes]
        self._by_op: list[dict[tuple[str, int], list] | None] = [None] * len(snap.classes)
        self.attrs_memo = {} if attrs is None else attrs

    def nodes(self, c: int) -> Sequence[tuple[NodeInfo, tuple[int, ...]]]:
        return self._nodes[c]

    def ctype(self, c: int):  # noqa: ANN201
        return self._types[c]

    def op_nodes(self, c: int, name: str, arity: int) -> Sequence[tuple[int, NodeInfo, tuple[int, ...]]]:
        # per class, its operator e-nodes grouped by (name, arity), made on first use
        by = self._by_op[c]
        if by is None:
            by = self._by_op[c] = {}
            for j, (info, kids) in enumerate(self._nodes[c]):
                if info.kind == "op":
                    by.setdefault((info.name, len(kids)), []).append((j, info, kids))
        return by.get((name, arity), ())


class TermView(View):
    """A term DAG seen as an e-graph with one e-node per class (class id = index)."""

    def __init__(self, root: Term) -> None:
        self.terms: list[Term] = []
        self.index: dict[int, int] = {}
        self.attrs_memo = {}
        self._add(root)

    def _add(self, t: Term) -> int:
        k = id(t)
        if k in self.index:
            return self.index[k]
        for c in t.children:
            self._add(c)
        self.index[k] = len(self.terms)
        self.terms.append(t)
        return self.index[k]

    def nodes(self, c: int) -> Sequence[tuple[NodeInfo, tuple[int, ...]]]:
        t = self.terms[c]
        if t.info is None:
            return []
        return [(t.info, tuple(self.index[id(x)] for x in t.children))]

    def ctype(self, c: int):  # noqa: ANN201
        return self.terms[c].type


class Binding:
    """A (partial) match: tensor variables -> classes, size symbols -> integers, attribute
    expressions to check and ground sub-patterns to compare (:meth:`Matcher.finish`)."""

    __slots__ = ("tv", "sym", "deferred", "ground", "new")

    def __init__(self) -> None:
        self.tv: dict[str, int] = {}
        self.sym: dict[str, int] = {}
        # immutable, shared by copies (most bindings have none): extended by concatenation
        self.deferred: tuple[tuple[Any, Any], ...] = ()
        self.ground: tuple[tuple[Node, int], ...] = ()
        self.new = False        # the match stepped through a new e-node (semi-naive rounds)

    def copy(self) -> Binding:
        # the matcher's most frequent step: no __init__ (its empty containers would be dropped)
        b = _new_binding(Binding)
        b.tv = self.tv.copy()
        b.sym = self.sym.copy()
        b.deferred = self.deferred
        b.ground = self.ground
        b.new = self.new
        return b


_new_binding = object.__new__
_UNSET: Any = object()


def _z3_kind(f: InstFacts, pv: Any) -> tuple[str, Any]:
    """("int", value) | ("sym", name) | ("expr", None) for a z3 attribute of a pattern, memoized
    per instantiation (z3's own predicates and printer dominate matching time otherwise)."""
    hit = f.z3.get(id(pv))
    if hit is not None and hit[0] is pv:
        return hit[1], hit[2]
    if z3.is_int_value(pv):
        r: tuple[str, Any] = ("int", pv.as_long())
    elif z3.is_const(pv):
        r = ("sym", str(pv))
    else:
        r = ("expr", None)
    f.z3[id(pv)] = (pv, *r)
    return r


def _unify(f: InstFacts, b: Binding, pv: Any, cv: Any) -> bool:
    if isinstance(pv, (list, tuple)):
        if not isinstance(cv, (list, tuple)) or len(pv) != len(cv):
            return False
        return all(_unify(f, b, x, y) for x, y in zip(pv, cv, strict=True))
    if isinstance(pv, (str, bool)) or isinstance(pv, int):
        return pv == cv
    kind, val = _z3_kind(f, pv)
    if kind == "int":
        return val == cv
    if kind == "sym":
        if val in b.sym:
            return b.sym[val] == cv
        b.sym[val] = int(cv)
        return True
    b.deferred += ((pv, cv),)
    return True


def _unify_shape(f: InstFacts, b: Binding, owner: Any, pshape: Sequence[Any], cshape: Sequence[int]) -> bool:
    """:func:`_unify` of a pattern's sizes with a class's, from a plan made once per pattern
    node (``owner``): per size its kind (int, symbol, expression) without asking z3 again."""
    hit = f.plans.get(id(owner))
    if hit is None or len(hit[1]) != len(pshape):
        if any(isinstance(pv, (list, tuple)) for pv in pshape):
            return _unify(f, b, list(pshape), list(cshape))      # nested sizes: the general path
        plan = []
        for pv in pshape:
            if isinstance(pv, (str, bool)) or isinstance(pv, int):
                plan.append(("lit", pv, pv))
            else:
                kind, val = _z3_kind(f, pv)
                plan.append((kind, val, pv))
        hit = f.plans[id(owner)] = (owner, tuple(plan))
    if len(cshape) != len(hit[1]):
        return False
    sym = b.sym
    for (kind, val, pv), cv in zip(hit[1], cshape, strict=True):
        if kind == "lit" or kind == "int":
            if val != cv:
                return False
        elif kind == "sym":
            prev = sym.get(val)
            if prev is None:
                sym[val] = int(cv)
            elif prev != cv:
                return False
        else:
            b.deferred += ((pv, cv),)
    return True


def evaluator_of(f: InstFacts, b: Binding):  # noqa: ANN201
    """The evaluator of the instantiation's expressions at the binding's sizes."""
    zint = f.zint
    subst = {}
    for k, v in b.sym.items():
        z = zint.get(k)
        if z is None:
            z = zint[k] = z3.Int(k)
        subst[z] = v
    return evaluator(subst=subst)


class Matcher:
    """Matches an instantiation's left side at a class. ``fresh``: per class, per e-node (in the
    view's order), whether it is new this round (:class:`.seminaive.Changes`); bindings then
    record whether they stepped through one."""

    def __init__(self, inst: Inst, view: View, lit_of, fresh: list[list[bool]] | None = None) -> None:  # noqa: ANN001
        self.inst, self.view, self.lit_of, self.fresh = inst, view, lit_of, fresh
        self.facts = facts_of(inst)
        self._tvar = self.facts.tvar
        self._attrs = view.attrs_memo

    def _tvar_at(self, node: TVar, c: int, b: Binding) -> Binding | None:
        """The one binding a tensor variable at class ``c`` extends ``b`` to, or None."""
        t = self.view.ctype(c)
        if t.dtype.name != (node.dtype or self.inst.dtype) or len(t.shape) != len(node.shape):
            return None
        prev = b.tv.get(node.name)
        if prev is not None:
            return b if prev == c else None
        nb = b.copy()
        nb.tv[node.name] = c
        return nb if _unify_shape(self.facts, nb, node, node.shape, t.shape) else None

    def match(self, node: Node, c: int, b: Binding) -> Iterator[Binding]:
        if isinstance(node, TVar):
            nb = self._tvar_at(node, c, b)
            if nb is not None:
                yield nb
            return
        t = self.view.ctype(c)
        assert isinstance(node, Op)
        f = self.facts
        if not self._tvar[id(node)]:
            nb = b.copy()
            if node.out_shape is not None and not _unify_shape(f, nb, node, node.out_shape, t.shape):
                return
            nb.ground += ((node, c),)
            yield nb
            return
        if t.dtype.name != f.dtype(node):
            return      # e.g. a dot of s8 operands with an s32 result is not the rule's s8 dot
        fresh = self.fresh[c] if self.fresh is not None else None
        amemo = self._attrs
        for j, info, kids in self.view.op_nodes(c, node.opcode, len(node.args)):
            nb = b.copy()
            if fresh is not None and fresh[j]:
                nb.new = True
            if node.out_shape is not None and not _unify_shape(f, nb, node, node.out_shape, t.shape):
                continue
            hit = amemo.get(id(info))
            if hit is None or hit[0] is not info:
                hit = amemo[id(info)] = (info, dict(info.attrs))
            attrs = hit[1]
            ok = True
            for k, v in node.attrs.items():
                if k == "region":
                    if f"{v}(0,1)" not in str(attrs.get("to_apply", "")):
                        ok = False
                        break
                    continue
                if k in ("lhs_batch_dims", "rhs_batch_dims") and k not in attrs:
                    if tuple(v):
                        ok = False
                        break
                    continue
                if k not in attrs:
                    ok = False
                    break
                cv = attrs[k]
                if isinstance(v, (list, tuple)) and isinstance(cv, (list, tuple)):
                    good = _unify_shape(f, nb, v, v, cv)
                else:
                    good = _unify(f, nb, v, cv)
                if not good:
                    ok = False
                    break
            if not ok:
                continue
            yield from self._args(node.args, kids, 0, nb)

    def _args(self, pats: Sequence[Node], kids: Sequence[int], i: int, b: Binding) -> Iterator[Binding]:
        # tensor variables bind at most one way: taken in a loop, not a generator per argument
        n = len(pats)
        while i < n and isinstance(pats[i], TVar):
            nb = self._tvar_at(pats[i], kids[i], b)  # type: ignore[arg-type]
            if nb is None:
                return
            b = nb
            i += 1
        if i == n:
            yield b
            return
        for nb in self.match(pats[i], kids[i], b):
            yield from self._args(pats, kids, i + 1, nb)

    def finish(self, b: Binding) -> bool:
        """Whether a binding :meth:`match` yielded is a match: its attribute expressions have the
        class's values, the preconditions hold, its ground sub-patterns are the classes' literals."""
        f = self.facts
        try:
            ev = None
            sym = tuple(sorted(b.sym.items()))
            for pv, cv in b.deferred:
                # memoized per (expression, binding): an expression left without a value raises
                # with its text, which z3 prints slowly, and the same match recurs every round
                dkey = (id(pv), sym)
                val = f.deferred.get(dkey, _UNSET)
                if val is _UNSET:
                    ev = ev or evaluator_of(f, b)
                    try:
                        val = ev(pv)
                    except (ValueError, z3.Z3Exception):
                        val = None
                    f.deferred[dkey] = val
                if val is None or val != cv:
                    return False
            if b.ground:
                ev = ev or evaluator_of(f, b)
            if self.inst.pre:
                ok = f.pre.get(sym)
                if ok is None:
                    ok = f.pre[sym] = all(
                        z3.is_true(z3.simplify(z3.substitute(p, *[(z3.Int(k), z3.IntVal(v)) for k, v in sym])))
                        for p in self.inst.pre)
                if not ok:
                    return False
            for node, c in b.ground:
                lit = self.lit_of(c)
                if lit is None:
                    return False
                gkey = (id(node), sym)
                want = f.ground.get(gkey, _UNSET)
                if want is _UNSET:
                    (g,) = emit({}, [node], DTYPES[self.inst.dtype], ev, "ground")
                    w = lower(g)
                    want = f.ground[gkey] = w.info.literal if w.is_lit else None  # type: ignore[union-attr]
                if want is None or want != lit:
                    return False
        except (ValueError, KeyError, z3.Z3Exception, AssertionError, TypeError):
            return False
        return True


class Prefilter:
    """The root classes where an instantiation's left side can match, by a check of the root's
    and its children's operators, dtypes, ranks and literals (the matcher's first steps, without
    its bindings): a class it drops is one where :meth:`Matcher.match` yields nothing, so the
    unions made, and their order, are the same."""

    def __init__(self, view: SnapView, snap: Snapshot, lits: dict[int, Any]) -> None:
        self.types = [(t.dtype.name, len(t.shape)) for t in view._types]
        self.opsig = [{(i.name, len(k)) for i, k in cl if i.kind == "op"} for cl in view._nodes]
        self.lits = lits
        self.memo: dict[int, list[int]] = {}
        # (operator, arity, class dtype) -> [(class, children)], in class order: the e-nodes a
        # root requirement is checked against, without scanning the others
        index: dict[tuple, list[tuple[int, tuple[int, ...]]]] = {}
        for c, cl in enumerate(view._nodes):
            dt = self.types[c][0]
            for info, kids in cl:
                if info.kind == "op":
                    index.setdefault((info.name, len(kids), dt), []).append((c, kids))
        self.index = index

    def candidates(self, inst: Inst, classes: list[int]) -> list[int]:
        """The classes, of ``classes`` (those holding an e-node of the root's operator), where
        the root's requirements hold for some e-node, in class order."""
        f = facts_of(inst)
        key = f.req_key()    # many instantiations share their root's requirements
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        r = f.root_reqs()
        if r is None:
            out = self.memo[key] = list(dict.fromkeys(classes))
            return out
        name = inst.lhs.opcode  # type: ignore[union-attr]
        out_dtype, arity, reqs = r
        types, opsig, lits = self.types, self.opsig, self.lits
        out: list[int] = []
        last = -1
        entries = self.index.get((name, arity, out_dtype), ())
        for c, kids in entries:
            if c == last:
                continue
            for i, kind, a, b in reqs:
                k = kids[i]
                if kind == "tv":
                    if types[k] != (a, b):
                        break
                elif kind == "lit":
                    if k not in lits:
                        break
                elif a not in opsig[k] or types[k][0] != b:
                    break
            else:
                out.append(c)
                last = c
        self.memo[key] = out
        return out


def term_may_match(inst: Inst, t: Term) -> bool:
    """:class:`Prefilter`'s test on a term (one e-node per class): False only where
    :meth:`Matcher.match` yields nothing that :meth:`Matcher.finish` accepts."""
    r = facts_of(inst).root_reqs()
    if r is None:
        return True
    out_dtype, arity, reqs = r
    if len(t.children) != arity or t.type.dtype.name != out_dtype:
        return False
    for i, kind, a, b in reqs:
        k = t.children[i]
        if kind == "tv":
            if k.type.dtype.name != a or len(k.type.shape) != b:
                return False
        elif kind == "lit":
            if not k.is_lit:
                return False
        elif (k.info is None or k.info.kind != "op" or k.info.name != a[0] or len(k.children) != a[1]
              or k.type.dtype.name != b):
            return False
    return True


def classes_by_op(eg: EGraph, snap: Snapshot) -> dict[str, list[int]]:
    """Operator name -> the classes holding an e-node of it (in class order; a class once per
    e-node)."""
    by_op: dict[str, list[int]] = {}
    for c, nodes in enumerate(snap.classes):
        for en in nodes:
            info = eg.infos[en.info]
            if info.kind == "op":
                by_op.setdefault(info.name, []).append(c)
    return by_op
