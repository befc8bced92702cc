"""Rule instantiation for Module 2 (seed 000 §5.1, appendix C.2): a library rule made concrete for
one (dtype, rank), and what the matcher reads off an instantiation's sides.

What belongs here: :class:`Inst` (one instantiation), :class:`InstFacts` (its memos: the facts of
its left side the matcher asks for at every e-node, and the values a binding of its sizes gives),
:class:`Instantiations` (a rule set's instantiations, made on first use per (dtype, rank), in
the order rules are applied) and :func:`first_instantiation` (a rule's first instance, for the
C.2 filter and the tiling's identities). Matching itself is :mod:`.match`; which rules a target
gets, :mod:`.normalize`; firing them on an e-graph, :mod:`.rewrite`.

Pointwise lifting: a rule stated and proved for rank 1 whose operators are all elementwise
(:data:`.terms.ELEMENTWISE`; its constants splats) holds at every rank, because each output
element depends on the operands' same element only; such rules are applied at the rank of the
match, under the rank-1 proof (:attr:`Inst.proof_rank`).

Lifetimes: an :class:`Instantiations` belongs to one target's rule set (:class:`.rewrite.IrRules`,
kept in the target's :class:`~compilers.act.context.TargetContext`); each of its instantiations
carries its :class:`InstFacts`, which hold only the instantiation's own nodes as keys (by id:
the instantiation keeps them alive). :data:`LIBRARY` keeps the first instantiation per library
rule for the process (the library, ``rewrite_rules.library.load()``, is one per process).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rewrite_rules.dsl import Node, Op, Rule, TVar
from semantics.dtypes import DTYPES

from ..egraph.terms import ELEMENTWISE, Term

__all__ = ["Inst", "InstFacts", "Instantiations", "first_instantiation", "has_tvar", "dtype_of", "facts_of",
           "LIBRARY"]


def ops_of(n: Node, out: set[str]) -> set[str]:
    """The operators of a rule side (added to ``out``)."""
    if isinstance(n, Op):
        out.add(n.opcode)
        for a in n.args:
            ops_of(a, out)
    return out


def _size(n: Node, seen: set[int] | None = None) -> int:
    seen = set() if seen is None else seen
    if id(n) in seen or not isinstance(n, Op):
        return 0
    seen.add(id(n))
    return 1 + sum(_size(a, seen) for a in n.args)


def has_tvar(n: Node) -> bool:
    """Whether a rule node holds a tensor variable (the matcher reads :attr:`InstFacts.tvar`)."""
    return isinstance(n, TVar) or (isinstance(n, Op) and any(has_tvar(a) for a in n.args))


def tvars(n: Node, out: set[str]) -> set[str]:
    """The tensor variables of a rule side (added to ``out``)."""
    if isinstance(n, TVar):
        out.add(n.name)
    elif isinstance(n, Op):
        for a in n.args:
            tvars(a, out)
    return out


def dtype_of(n: Node, rule_dtype: str) -> str:
    """The element type a rule node computes (the rule's dtype unless stated or implied)."""
    if isinstance(n, TVar):
        return n.dtype or rule_dtype
    assert isinstance(n, Op)
    if n.out_dtype is not None:
        return n.out_dtype
    if n.opcode == "compare":
        return "pred"
    if n.opcode == "select":
        return dtype_of(n.args[1], rule_dtype)
    return dtype_of(n.args[0], rule_dtype) if n.args else rule_dtype


@dataclass
class Inst:
    """One rule instantiated for a (dtype, rank)."""

    rule: Rule
    dtype: str
    rank: int
    lhs: Node
    rhs: Node
    pre: list[Any]
    tensors: dict[str, TVar]
    shrinks: bool
    proof_rank: int = 0     # the rank whose proof covers this instantiation (lifted: 1)
    #: made by :func:`facts_of` (or by its :class:`Instantiations`, which shares the key table)
    facts: InstFacts | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.rule.name} [{self.dtype} r{self.rank}]"


#: the root requirements of a left side (:meth:`InstFacts.root_reqs`): (root class dtype, root
#: arity, per child (position, kind, a, b))
RootReqs = tuple[str, int, tuple[tuple[int, str, Any, Any], ...]]
_UNSET: Any = object()


class InstFacts:
    """What the matcher reads off one instantiation, made once: per left-side node whether it
    holds a tensor variable (:attr:`tvar`) and the dtype its class must have (:meth:`dtype`),
    the root requirements (:meth:`root_reqs`), the footprint depth (:meth:`depth`); and memos of
    what a binding of its sizes gives (size plans, z3 kinds, attribute expressions' values,
    preconditions, ground sub-patterns' literals, lowered right sides). Keys are ids of the
    instantiation's own nodes and expressions, which it keeps alive; ``req_ids`` is the table
    that names root requirements by a small int, shared by the instantiations of one
    :class:`Instantiations`."""

    __slots__ = ("inst", "tvar", "semi", "dtypes", "plans", "z3", "zint", "deferred", "pre", "ground", "rhs",
                 "_depth", "_reqs", "_req_key", "req_ids")

    def __init__(self, inst: Inst, req_ids: dict[tuple, int]) -> None:
        self.inst = inst
        self.tvar: dict[int, bool] = {}
        self.semi = self._mark(inst.lhs)        # the left side binds a tensor variable
        self.dtypes: dict[int, str] = {}
        self.plans: dict[int, tuple[Any, tuple[tuple[str, Any, Any], ...]]] = {}
        self.z3: dict[int, tuple[Any, str, Any]] = {}      # id(z3 term) -> (term, kind, value)
        self.zint: dict[str, Any] = {}
        self.deferred: dict[tuple, int | None] = {}     # (id(expression), sizes) -> its value
        self.pre: dict[tuple, bool] = {}                 # sizes -> the preconditions hold
        self.ground: dict[tuple, Any] = {}               # (id(node), sizes) -> its literal
        self.rhs: dict[tuple, Term | None] = {}          # (sizes, types) -> the lowered right side
        self._depth = -1
        self._reqs: Any = _UNSET
        self._req_key = -1
        self.req_ids = req_ids

    def _mark(self, n: Node) -> bool:
        k = id(n)
        hit = self.tvar.get(k)
        if hit is None:
            hit = isinstance(n, TVar)
            if isinstance(n, Op):
                for a in n.args:        # every node marked (no short cut): the matcher asks of each
                    hit = self._mark(a) or hit
            self.tvar[k] = hit
        return hit

    def dtype(self, n: Node) -> str:
        """:func:`dtype_of` a left-side node at this instantiation's dtype."""
        k = id(n)
        dt = self.dtypes.get(k)
        if dt is None:
            dt = self.dtypes[k] = dtype_of(n, self.inst.dtype)
        return dt

    def depth(self) -> int:
        """How deep below the root :meth:`.match.Matcher.match` steps through e-nodes for this
        left side: an operator with tensor variables is matched against an e-node of its class
        (depth 0 at the root) and its arguments one level down; a tensor variable (its class's
        type and identity) or a ground sub-pattern (its class's literal) reads its class but no
        e-node of it."""
        if self._depth < 0:
            self._depth = self._steps_below(self.inst.lhs, 0)   # type: ignore[arg-type]
        return self._depth

    def _steps_below(self, n: Op, d: int) -> int:
        return max([d, *(self._steps_below(a, d + 1) for a in n.args if isinstance(a, Op) and self.tvar[id(a)])])

    def root_reqs(self) -> RootReqs | None:
        """What :meth:`.match.Matcher.match` checks first at the left side's root and its
        children, as data: (root class dtype, root arity, per child (position, kind, a, b)), kind
        ``tv`` (class dtype a, rank b), ``lit`` (the class holds a literal: a ground sub-pattern
        is compared with it) or ``op`` (an e-node (opcode a, arity), class dtype b); the dtypes
        are :meth:`dtype`'s. None when the root binds no tensor variable (then the matcher's own
        path is taken)."""
        if self._reqs is _UNSET:
            root = self.inst.lhs
            out: Any = None
            if isinstance(root, Op) and self.semi:
                reqs = []
                for i, a in enumerate(root.args):
                    if isinstance(a, TVar):
                        reqs.append((i, "tv", a.dtype or self.inst.dtype, len(a.shape)))
                    elif isinstance(a, Op) and not self.tvar[id(a)]:
                        reqs.append((i, "lit", None, None))
                    elif isinstance(a, Op):
                        # the dtype the matcher requires of the class
                        reqs.append((i, "op", (a.opcode, len(a.args)), self.dtype(a)))
                out = (self.dtype(root), len(root.args), tuple(reqs))
            self._reqs = out
        return self._reqs

    def req_key(self) -> int:
        """A small int naming (root operator, :meth:`root_reqs`): instantiations with the same
        root requirements share it (a memo key without hashing the nested tuple on every lookup)."""
        if self._req_key < 0:
            full = (self.inst.lhs.opcode, self.root_reqs())  # type: ignore[union-attr]
            self._req_key = self.req_ids.setdefault(full, len(self.req_ids))
        return self._req_key


def facts_of(inst: Inst) -> InstFacts:
    """The instantiation's :class:`InstFacts` (made on first use; one made outside an
    :class:`Instantiations` names its root requirements in a table of its own)."""
    f = inst.facts
    if f is None:
        f = inst.facts = InstFacts(inst, {})
    return f


def _pointwise(lhs: Node, rhs: Node, dtype: str = "") -> bool:
    """Only elementwise operators (a bitcast-convert between types of one width is one), and
    broadcasts only of scalar constants (splats)."""
    return _pointwise_node(lhs, dtype) and _pointwise_node(rhs, dtype)


def _pointwise_node(n: Node, dtype: str) -> bool:
    if isinstance(n, TVar):
        return True
    assert isinstance(n, Op)
    if n.opcode == "constant":
        return True
    if n.opcode == "broadcast":
        return isinstance(n.args[0], Op) and n.args[0].opcode == "constant"
    if n.opcode == "bitcast-convert" and dtype:
        same = DTYPES[dtype_of(n, dtype)].nbytes == DTYPES[dtype_of(n.args[0], dtype)].nbytes
        return same and _pointwise_node(n.args[0], dtype)
    return n.opcode in ELEMENTWISE and all(_pointwise_node(a, dtype) for a in n.args)


class Instantiations:
    """The (dtype, rank) instantiations of a rule set, made on first use per (dtype, rank) (most
    kernels use a few of the ~30 pairs; instantiating all ~9,000 up front took 1.7 s) and kept
    as long as this object (one per target: :class:`.rewrite.IrRules`). Their order -- the rule
    set's order, then the rule's dtypes, then ranks, as the rule lists them -- is the order rules
    are applied in."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.req_ids: dict[tuple, int] = {}    # root requirements -> small int (InstFacts.req_key)
        self._by_key: dict[tuple[str, int], list[tuple[tuple[int, int, int], Inst]]] = {}
        self._rank1: dict[tuple[int, str], Inst | None] = {}
        self._kinds: dict[tuple[str, tuple[str, int]], list[tuple[tuple[int, int, int], Inst]]] = {}
        self._ordered: dict[tuple[frozenset, str], list[Inst]] = {}    # ordered()'s answers
        self._index: dict[int, tuple[list[Inst], list[str], set[int], dict]] = {}   # index()'s answers
        self._roots: dict[int, tuple[list[Inst], dict]] = {}   # by_root()'s tables

    def _own(self, i: Inst | None) -> Inst | None:
        if i is not None and i.facts is None:
            i.facts = InstFacts(i, self.req_ids)
        return i

    def _key(self, key: tuple[str, int]) -> list[tuple[tuple[int, int, int], Inst]]:
        hit = self._by_key.get(key)
        if hit is not None:
            return hit
        d, k = key
        out: list[tuple[tuple[int, int, int], Inst]] = []
        for ri, r in enumerate(self.rules):
            if d not in r.dtypes:
                continue
            di = r.dtypes.index(d)
            ranks = r.ranks or (1, 2, 3)
            if k in ranks:
                i = self._rank1_of(ri, r, d) if k == 1 and r.ranks == (1,) else self._own(_make(r, d, k))
                if i is not None:
                    out.append(((ri, di, ranks.index(k)), i))
            elif r.ranks == (1,) and k in (2, 3):
                # pointwise lifting (module doc): proved at rank 1, applied at the match's rank
                i1 = self._rank1_of(ri, r, d)
                if i1 is not None and _pointwise(i1.lhs, i1.rhs, d):
                    c2, l2, r2, p2 = r.instantiate(d, k)
                    lifted = Inst(r, d, k, l2, r2, p2, c2.tensors, i1.shrinks, 1)
                    out.append(((ri, di, k - 1), self._own(lifted)))   # type: ignore[arg-type]
        self._by_key[key] = out
        return out

    def _rank1_of(self, ri: int, r: Rule, d: str) -> Inst | None:
        if (ri, d) not in self._rank1:
            self._rank1[(ri, d)] = self._own(_make(r, d, 1))
        return self._rank1[(ri, d)]

    def index(self, insts: list[Inst]) -> tuple[list[str], set[int], dict[tuple, list[int]]]:
        """For a list :meth:`ordered` returned: its left sides' root operators, in order, the set
        of its members' ids, and its positions grouped by what a root e-node must be for
        :class:`.match.Prefilter` to find a candidate (operator, arity, class dtype), or ("any",
        operator) where it takes every class holding the operator (made once per list)."""
        hit = self._index.get(id(insts))
        if hit is None or hit[0] is not insts:
            groups: dict[tuple, list[int]] = {}
            for j, i in enumerate(insts):
                r = facts_of(i).root_reqs()
                key = ("any", i.lhs.opcode) if r is None else (i.lhs.opcode, r[1], r[0])  # type: ignore[union-attr]
                groups.setdefault(key, []).append(j)
            hit = self._index[id(insts)] = (insts, [i.lhs.opcode for i in insts],  # type: ignore[union-attr]
                                            {id(i) for i in insts}, groups)
        return hit[1], hit[2], hit[3]

    def by_root(self, insts: list[Inst]) -> Callable[[Term], list[Inst]]:
        """For a list :meth:`ordered` returned: a function giving, for a term, the members (in
        list order) whose left side is rooted at the term's operator with its arity and result
        dtype where :meth:`InstFacts.root_reqs` states them (the first test of
        :func:`.match.term_may_match`), made once per (list, operator, arity, dtype)."""
        hit = self._roots.get(id(insts))
        if hit is None or hit[0] is not insts:
            hit = self._roots[id(insts)] = (insts, {})
        table: dict[tuple[str, int, str], list[Inst]] = hit[1]

        def of(t: Term) -> list[Inst]:
            key = (t.info.name, len(t.children), t.type.dtype.name)  # type: ignore[union-attr]
            out = table.get(key)
            if out is None:
                out = table[key] = [i for i in insts if i.lhs.opcode == key[0]  # type: ignore[union-attr]
                                    and ((r := facts_of(i).root_reqs()) is None
                                         or (r[0] == key[2] and r[1] == key[1]))]
            return out
        return of

    def ordered(self, keys: set[tuple[str, int]], kind: str) -> list[Inst]:
        """The instantiations for ``keys`` of one kind, in rule-set order: ``forward`` (equality
        saturation's: :func:`_forward`) or ``shrinking`` (pattern normalization)."""
        okey = (frozenset(keys), kind)
        done = self._ordered.get(okey)
        if done is not None:
            return done
        items: list[tuple[tuple[int, int, int], Inst]] = []
        for key in keys:
            ck = (kind, key)
            hit = self._kinds.get(ck)
            if hit is None:
                if kind == "forward":
                    hit = [(o, i) for o, i in self._key(key) if isinstance(i.lhs, Op) and _forward(i)]
                else:
                    hit = [(o, i) for o, i in self._key(key) if i.shrinks and isinstance(i.lhs, Op)]
                self._kinds[ck] = hit
            items.extend(hit)
        items.sort(key=lambda x: x[0])
        out = self._ordered[okey] = [i for _, i in items]
        return out


def _forward(i: Inst) -> bool:
    """Whether equality saturation runs instantiation ``i`` (its left side rooted at an operator).

    Every rule that keeps its variables runs, shrinking ones included. Of the rules that drop
    a variable, those whose right side is ground run (``subtract(x, x) => 0``, ``multiply(x, 0)
    => 0``, ``dot(a, zeros) => zeros``): they make a class constant, and with it the classes
    above it (:func:`.extract.constants`), whose values a pii graph then places in the constant
    section (:mod:`.fold`); so do those whose right side is one of its variables (``add(x,
    subtract(y, x)) => y``, ``select(p, a, a) => a``): they unite two existing classes and add
    no e-node (``p1 - (p1 - p0)`` is then p0's bytes, which a program copies). The others
    (``slice(concat(x, y)) inside x => slice(x)``, ``clamp(broadcast(a), x, broadcast(a)) =>
    broadcast(a)``) serve pattern normalization only: running every rule forward cost 5-10% of
    the Gemmini paper kernels' compile time with no program changed; these two kinds cost 2-5%."""
    if not i.shrinks or isinstance(i.rhs, TVar):
        return True
    kept = tvars(i.rhs, set())
    return not kept or kept == set(i.tensors)


def _make(r: Rule, d: str, k: int) -> Inst | None:
    """The rule instantiated for dtype ``d`` and rank ``k`` (None where it has no such instance)."""
    try:
        c, lhs, rhs, pre = r.instantiate(d, k)
    except Exception:  # noqa: BLE001
        return None
    shrinks = _size(rhs) < _size(lhs) or tvars(rhs, set()) < set(c.tensors)
    return Inst(r, d, k, lhs, rhs, pre, c.tensors, shrinks, k)


class _Library:
    """Instantiation memos that depend on the rule library only: one object (:data:`LIBRARY`)
    for the process, as the library it instantiates (``rewrite_rules.library.load()``)."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: dict[tuple[int, str | None], tuple[Rule, Inst | None]] = {}


LIBRARY = _Library()


def first_instantiation(r: Rule, dtype: str | None = None) -> Inst | None:
    """The rule's first instantiation (of ``dtype``), dtypes then ranks in the rule's order: the
    C.2 filter reads its sides, the tiling's identity check its proof (on every tiled compile:
    made once per process, instantiating costs ~0.1 ms of z3 terms each time)."""
    memo = LIBRARY.first
    hit = memo.get((id(r), dtype))
    if hit is not None and hit[0] is r:
        return hit[1]
    out: Inst | None = None
    for d in r.dtypes if dtype is None else [dtype]:
        for k in r.ranks or (1, 2, 3):
            out = _make(r, d, k)
            if out is not None:
                break
        if out is not None:
            break
    memo[(id(r), dtype)] = (r, out)
    return out
