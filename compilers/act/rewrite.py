"""Module 2's IR-to-IR rules: the proven rules of :mod:`rewrite_rules`, filtered for a target
(appendix C.2) and matched on e-graph snapshots and on instruction patterns.

Filtering (C.2): start from the operators of every g_θ of the description; a rule whose right side
builds only such operators (or literals) may lead to an IR-to-ISA rule, so it is kept and the
operators of its left side join the set; repeat to a fixed point.

Proof gate (invariant 3), per instantiation: a rule instantiation (dtype, rank) fires only when a
passing proof of the rule's current text for that dtype and rank is in the proof cache
(:class:`verif.cache.ProofCache`; a pointwise-lifted instantiation needs its rank-1 proof). The
gate is consulted at the first match, so only the instantiations a kernel actually uses are ever
proved: with ``prove_missing`` a missing proof is run on the spot (and cached for the next
compile), otherwise the instantiation is skipped and counted. An instantiation whose proof ends
refuted or unknown never fires.

Matching a rule's left side binds its tensor variables to e-classes and its symbolic sizes and
attributes to integers (attributes written as expressions are checked after binding);
sub-patterns without tensor variables (constants, ``full``, identity matrices) are built
concretely and compared with the literal the e-class holds. Preconditions are evaluated on the
binding. The right side is built by :func:`rewrite_rules.instantiate.emit` and lowered like a
kernel (:mod:`.terms`), then unioned with the matched class.

Pointwise lifting: a rule stated and proved for rank 1 whose operators are all elementwise (its
constants splats) holds at every rank, because each output element depends on the operands' same
element only; such rules are applied at the rank of the match.

Patterns g_θ(α) are normalized with the rules that remove a tensor variable (e.g.
``add(y, multiply(old, 0)) => y``: accumulate = 0 ignores the old accumulator) or shrink the
term (e.g. ``mvin(x, 1.0) => x``); kernels grow toward instruction forms with the other rules.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from rewrite_rules.dsl import Node, Op, Rule, TVar
from rewrite_rules.instantiate import emit, evaluator
from semantics.ops import REGISTRY

from ..isa import Accelerator
from .egraph import EGraph, NodeInfo, Snapshot, class_literals
from .phase1 import literal_forms
from .seminaive import Changes
from .terms import Term, lower

__all__ = ["IrRules", "Inst"]

_ELEMENTWISE = {n for n, d in REGISTRY.items() if d.category == "elementwise"} | {"convert"}
_STRUCT_OK = {"constant", "broadcast", "iota"}


def _ops(n: Node, out: set[str]) -> set[str]:
    if isinstance(n, Op):
        out.add(n.opcode)
        for a in n.args:
            _ops(a, out)
    return out


def _size(n: Node, seen: set[int] | None = None) -> int:
    seen = set() if seen is None else seen
    if id(n) in seen or not isinstance(n, Op):
        return 0
    seen.add(id(n))
    return 1 + sum(_size(a, seen) for a in n.args)


_HAS_TVAR: dict[int, tuple[Node, bool]] = {}


def _has_tvar(n: Node) -> bool:
    hit = _HAS_TVAR.get(id(n))
    if hit is not None and hit[0] is n:
        return hit[1]
    r = isinstance(n, TVar) or (isinstance(n, Op) and any(_has_tvar(a) for a in n.args))
    _HAS_TVAR[id(n)] = (n, r)
    return r


def _tvars(n: Node, out: set[str]) -> set[str]:
    if isinstance(n, TVar):
        out.add(n.name)
    elif isinstance(n, Op):
        for a in n.args:
            _tvars(a, out)
    return out


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

    @property
    def name(self) -> str:
        return f"{self.rule.name} [{self.dtype} r{self.rank}]"


class _View:
    """What the matcher needs: the e-nodes and type of a class, and literal lookup."""

    def nodes(self, c: int) -> Sequence[tuple[NodeInfo, tuple[int, ...]]]:
        raise NotImplementedError

    def ctype(self, c: int):  # noqa: ANN201
        raise NotImplementedError

    def op_nodes(self, c: int, name: str, arity: int) -> Sequence[tuple[int, NodeInfo, tuple[int, ...]]]:
        """(position in :meth:`nodes`, info, children) of the class's e-nodes of operator ``name``
        with ``arity`` operands, in order."""
        return [(j, info, kids) for j, (info, kids) in enumerate(self.nodes(c))
                if info.kind == "op" and info.name == name and len(kids) == arity]


class _SnapView(_View):
    def __init__(self, eg: EGraph, snap: Snapshot) -> None:
        self.eg, self.snap = eg, snap
        infos = eg.infos
        self._nodes = [[(infos[en.info], en.children) for en in cl] for cl in snap.classes]
        self._types = [infos[cl[0].info].type for cl in snap.classes]
        self._by_op: list[dict[tuple[str, int], list] | None] = [None] * len(snap.classes)

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


class _TermView(_View):
    """A term DAG seen as an e-graph with one e-node per class (class id = index)."""

    def __init__(self, root: Term) -> None:
        self.terms: list[Term] = []
        self.index: dict[int, int] = {}
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


class _Binding:
    __slots__ = ("tv", "sym", "deferred", "ground", "new")

    def __init__(self) -> None:
        self.tv: dict[str, int] = {}
        self.sym: dict[str, int] = {}
        # immutable, shared by copies (most bindings have none): extended by concatenation
        self.deferred: tuple[tuple[Any, Any], ...] = ()
        self.ground: tuple[tuple[Node, int], ...] = ()
        self.new = False        # the match stepped through a new e-node (semi-naive rounds)

    def copy(self) -> _Binding:
        # the matcher's most frequent step: no __init__ (its empty containers would be dropped)
        b = _new_binding(_Binding)
        b.tv = self.tv.copy()
        b.sym = self.sym.copy()
        b.deferred = self.deferred
        b.ground = self.ground
        b.new = self.new
        return b


_new_binding = object.__new__


def _unify(b: _Binding, pv: Any, cv: Any) -> bool:
    if isinstance(pv, (list, tuple)):
        if not isinstance(cv, (list, tuple)) or len(pv) != len(cv):
            return False
        return all(_unify(b, x, y) for x, y in zip(pv, cv, strict=True))
    if isinstance(pv, (str, bool)) or isinstance(pv, int):
        return pv == cv
    kind, val = _z3_kind(pv)
    if kind == "int":
        return val == cv
    if kind == "sym":
        if val in b.sym:
            return b.sym[val] == cv
        b.sym[val] = int(cv)
        return True
    b.deferred += ((pv, cv),)
    return True


_PLANS: dict[int, tuple[Any, tuple[tuple[str, Any, Any], ...]]] = {}
_ATTRS: dict[int, tuple[NodeInfo, dict[str, Any]]] = {}
_ATTRS_MAX = 1 << 14   # compiles add new infos: emptied when full (no growth over a fuzz campaign)


def _attrs_of(info: NodeInfo) -> dict[str, Any]:
    """An e-node's attributes as a dict, made once per info (infos live with their e-graph)."""
    hit = _ATTRS.get(id(info))
    if hit is None or hit[0] is not info:
        if len(_ATTRS) >= _ATTRS_MAX:
            _ATTRS.clear()
        hit = _ATTRS[id(info)] = (info, dict(info.attrs))
    return hit[1]


def _unify_shape(b: _Binding, owner: Any, pshape: Sequence[Any], cshape: Sequence[int]) -> bool:
    """:func:`_unify` of a pattern's sizes with a class's, from a plan made once per pattern
    node (``owner``): per size its kind (int, symbol, expression) without asking z3 again."""
    hit = _PLANS.get(id(owner))
    if hit is None or hit[0] is not owner or len(hit[1]) != len(pshape):
        if any(isinstance(pv, (list, tuple)) for pv in pshape):
            return _unify(b, list(pshape), list(cshape))      # nested sizes: the general path
        plan = []
        for pv in pshape:
            if isinstance(pv, (str, bool)) or isinstance(pv, int):
                plan.append(("lit", pv, pv))
            else:
                kind, val = _z3_kind(pv)
                plan.append((kind, val, pv))
        hit = _PLANS[id(owner)] = (owner, tuple(plan))
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


_Z3_KINDS: dict[int, tuple[Any, str, Any]] = {}


def _z3_kind(pv: Any) -> tuple[str, Any]:
    """("int", value) | ("sym", name) | ("expr", None) for a z3 attribute of a pattern, memoized
    (pattern objects live as long as their rule instantiation; z3's own predicates and printer
    dominate matching time otherwise)."""
    hit = _Z3_KINDS.get(id(pv))
    if hit is not None and hit[0] is pv:
        return hit[1], hit[2]
    if z3.is_int_value(pv):
        r: tuple[str, Any] = ("int", pv.as_long())
    elif z3.is_const(pv):
        r = ("sym", str(pv))
    else:
        r = ("expr", None)
    _Z3_KINDS[id(pv)] = (pv, *r)
    return r


_ZINT: dict[str, Any] = {}


def _zint(name: str) -> Any:
    z = _ZINT.get(name)
    if z is None:
        z = _ZINT[name] = z3.Int(name)
    return z


def _ev(b: _Binding):  # noqa: ANN202
    return evaluator(subst={_zint(k): v for k, v in b.sym.items()})


_PRE: dict[tuple, tuple[Any, bool]] = {}          # preconditions per (instantiation, sizes)
_DEFERRED: dict[tuple, tuple[Any, int | None]] = {}   # attribute expressions' values per sizes
_GROUND: dict[tuple, tuple[Node, Any]] = {}       # ground sub-patterns' literals per sizes


class Matcher:
    """Matches an instantiation's left side at a class. ``fresh``: per class, per e-node (in the
    view's order), whether it is new this round (:class:`.seminaive.Changes`); bindings then
    record whether they stepped through one."""

    def __init__(self, inst: Inst, view: _View, lit_of, fresh: list[list[bool]] | None = None) -> None:  # noqa: ANN001
        self.inst, self.view, self.lit_of, self.fresh = inst, view, lit_of, fresh

    def _tvar(self, node: TVar, c: int, b: _Binding) -> _Binding | None:
        """The one binding a tensor variable at class ``c`` extends ``b`` to, or None."""
        t = self.view.ctype(c)
        if t.dtype.name != (node.dtype or self.inst.dtype) or len(t.shape) != len(node.shape):
            return None
        prev = b.tv.get(node.name)
        if prev is not None:
            return b if prev == c else None
        nb = b.copy()
        nb.tv[node.name] = c
        return nb if _unify_shape(nb, node, node.shape, t.shape) else None

    def match(self, node: Node, c: int, b: _Binding) -> Iterator[_Binding]:
        if isinstance(node, TVar):
            nb = self._tvar(node, c, b)
            if nb is not None:
                yield nb
            return
        t = self.view.ctype(c)
        assert isinstance(node, Op)
        if not _has_tvar(node):
            nb = b.copy()
            if node.out_shape is not None and not _unify_shape(nb, node, node.out_shape, t.shape):
                return
            nb.ground += ((node, c),)
            yield nb
            return
        if t.dtype.name != _node_dtype(node, self.inst.dtype):
            return      # e.g. a dot of s8 operands with an s32 result is not the rule's s8 dot
        fresh = self.fresh[c] if self.fresh is not None else None
        for j, info, kids in self.view.op_nodes(c, node.opcode, len(node.args)):
            nb = b.copy()
            if fresh is not None and fresh[j]:
                nb.new = True
            if node.out_shape is not None and not _unify_shape(nb, node, node.out_shape, t.shape):
                continue
            attrs = _attrs_of(info)
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
                    good = _unify_shape(nb, v, v, cv)
                else:
                    good = _unify(nb, v, cv)
                if not good:
                    ok = False
                    break
            if not ok:
                continue
            yield from self._args(node.args, kids, 0, nb)

    def _args(self, pats: Sequence[Node], kids: Sequence[int], i: int, b: _Binding) -> Iterator[_Binding]:
        # tensor variables bind at most one way: taken in a loop, not a generator per argument
        n = len(pats)
        while i < n and isinstance(pats[i], TVar):
            nb = self._tvar(pats[i], kids[i], b)  # type: ignore[arg-type]
            if nb is None:
                return
            b = nb
            i += 1
        if i == n:
            yield b
            return
        for nb in self.match(pats[i], kids[i], b):
            yield from self._args(pats, kids, i + 1, nb)

    def finish(self, b: _Binding) -> bool:
        try:
            ev = None
            sym = tuple(sorted(b.sym.items()))
            for pv, cv in b.deferred:
                # memoized per (expression, binding): an expression left without a value raises
                # with its text, which z3 prints slowly, and the same match recurs every round
                dkey = (id(pv), sym)
                dhit = _DEFERRED.get(dkey)
                if dhit is None or dhit[0] is not pv:
                    ev = ev or _ev(b)
                    try:
                        val: int | None = ev(pv)
                    except (ValueError, z3.Z3Exception):
                        val = None
                    dhit = _DEFERRED[dkey] = (pv, val)
                if dhit[1] is None or dhit[1] != cv:
                    return False
            if b.ground:
                ev = ev or _ev(b)
            if self.inst.pre:
                key = (id(self.inst), sym)
                hit = _PRE.get(key)
                if hit is None or hit[0] is not self.inst:
                    ok = all(z3.is_true(z3.simplify(z3.substitute(p, *[(_zint(k), z3.IntVal(v)) for k, v in sym])))
                             for p in self.inst.pre)
                    hit = _PRE[key] = (self.inst, ok)
                if not hit[1]:
                    return False
            for node, c in b.ground:
                lit = self.lit_of(c)
                if lit is None:
                    return False
                gkey = (id(node), sym, self.inst.dtype)
                ghit = _GROUND.get(gkey)
                if ghit is None or ghit[0] is not node:
                    (g,) = emit({}, [node], _dt(self.inst.dtype), ev, "ground")
                    w = lower(g)
                    ghit = _GROUND[gkey] = (node, w.info.literal if w.is_lit else None)  # type: ignore[union-attr]
                if ghit[1] is None or ghit[1] != lit:
                    return False
        except (ValueError, KeyError, z3.Z3Exception, AssertionError, TypeError):
            return False
        return True


def _dt(name: str):  # noqa: ANN202
    from semantics.dtypes import DTYPES

    return DTYPES[name]


_CACHES: dict[str, tuple[float, Any]] = {}


def _shared_cache(factory: Callable[[], Any]) -> Any:
    """The proof cache, loaded once per process while its file is unchanged."""
    from verif.cache import default_cache_dir

    d = default_cache_dir()
    path = str(d)
    try:
        mtime = max((f.stat().st_mtime for f in d.iterdir()), default=0.0)
    except OSError:
        mtime = 0.0
    hit = _CACHES.get(path)
    if hit is None or hit[0] != mtime:
        hit = _CACHES[path] = (mtime, factory())
    return hit[1]


_PASSED: dict[tuple, tuple[Rule, Any]] = {}


class ProofGate:
    """Per-instantiation proof gate: :meth:`ok` is True when the instantiation's proof is cached as
    passed (proving it first when ``prove_missing``); answers are memoized per process."""

    #: z3's limit per solver call when a missing proof is run at first use. Some Gemmini rules
    #: take 40-65 s of proof on a 2-core machine; a timeout ("unknown") is not cached, but it
    #: refuses the rule for the whole run, so a loaded machine could compile a different program.
    #: A generous limit costs nothing where the proof succeeds.
    TIMEOUT_S = 300.0

    def __init__(self, prove_missing: bool = False, timeout_s: float = TIMEOUT_S, bound: int = 3,
                 log: Callable[[str], None] | None = None, enabled: bool = True) -> None:
        self.prove_missing = prove_missing
        self.timeout_s = timeout_s
        self.bound = bound
        self.log = log
        self.enabled = enabled
        self._memo: dict[tuple[str, str, int], bool] = {}
        self._cache: Any = None
        self.skipped: set[str] = set()     # instantiations refused (no passing proof)
        self.proved_now: list[str] = []
        self.seconds = 0.0                 # time spent proving on the spot

    def ok(self, inst: Inst) -> bool:
        if not self.enabled:
            return True
        key = (inst.rule.name, inst.dtype, inst.proof_rank)
        if key in self._memo:
            return self._memo[key]
        from verif.cache import ProofCache

        if self._cache is None:
            self._cache = _shared_cache(ProofCache)
        # passing proofs seen by earlier gates over the same loaded cache (hashing a rule's
        # sources costs ~0.5 ms; a compile consults a few dozen instantiations)
        pkey = (id(inst.rule), inst.dtype, inst.proof_rank, self.bound, id(self._cache))
        hit = _PASSED.get(pkey)
        if hit is not None and hit[0] is inst.rule and hit[1] is self._cache:
            self._memo[key] = True
            return True
        rec = self._cache.get(inst.rule, inst.dtype, inst.proof_rank, self.bound)
        if rec is None and self.prove_missing:
            from verif.prover import prove

            label = f"'{inst.rule.name}' for {inst.dtype} rank {inst.proof_rank}"
            if self.log:
                self.log(f"proving {label} (first use; cached under {self._cache.dir})")
            t0 = time.perf_counter()
            res = prove(inst.rule, inst.dtype, inst.proof_rank, self.timeout_s, self.bound)
            self.seconds += time.perf_counter() - t0
            self._cache.put(inst.rule, res, self.bound)
            self.proved_now.append(f"{label}: {res.status}")
            rec = {"status": res.status}
        good = rec is not None and rec.get("status") == "proved"
        if good:
            _PASSED[pkey] = (inst.rule, self._cache)
        if not good:
            self.skipped.add(f"{inst.rule.name} [{inst.dtype} r{inst.proof_rank}]")
        self._memo[key] = good
        return good


@dataclass
class IrRules:
    """The filtered, proven rules of a target, instantiated (dtype, rank) and indexed by the
    operator at the root of their left sides."""

    rules: list[Rule] = field(default_factory=list)
    insts: Instantiations = field(default_factory=lambda: Instantiations([]))
    max_new: int = 4000
    applied: int = 0
    gate: ProofGate = field(default_factory=ProofGate)

    @classmethod
    def for_target(cls, acc: Accelerator, gate: ProofGate | None = None) -> IrRules:
        """The target's rules (backend generation: done once per target and process) behind
        ``gate`` (default: cached proofs only, nothing proved on the spot)."""
        key = (acc.name, id(acc))
        if key not in _GENERATED:
            _GENERATED[key] = cls._generate(acc)
        r = _GENERATED[key]
        return cls(r.rules, r.insts, gate=gate or ProofGate())

    @classmethod
    def _generate(cls, acc: Accelerator) -> IrRules:
        from rewrite_rules.library import load

        lib = load()
        target_ops: set[str] = set()
        for ins in acc.instructions.values():
            for alpha in _sample_alphas(ins):
                try:
                    g = ins.graph(alpha)
                except Exception:  # noqa: BLE001
                    continue
                for comp in g.computations:
                    target_ops |= {i.opcode for i in comp.instructions}
        target_ops -= {"parameter"}
        keep: list[Rule] = []
        first: dict[str, Inst | None] = {}
        for r in lib.values():
            if r.expect != "valid":
                continue
            first[r.name] = first_instantiation(r)
        ops = set(target_ops)
        changed = True
        while changed:
            changed = False
            for r in lib.values():
                i0 = first.get(r.name)
                if i0 is None or r in keep:
                    continue
                rhs_ops = _ops(i0.rhs, set()) - _STRUCT_OK
                lhs_ops = _ops(i0.lhs, set())
                if rhs_ops <= ops:
                    keep.append(r)
                    new = lhs_ops - ops
                    if new:
                        ops |= new
                        changed = True
        return cls(keep, Instantiations(keep))

    # -- e-graph -------------------------------------------------------------------------------

    def apply(self, eg: EGraph, snap: Snapshot) -> int:
        """One round: every growing rule on every e-class; returns the number of unions.

        Semi-naive: a root is tried only where the left side's footprint (the classes within
        its depth below the root) reaches a class whose IR e-nodes changed since this e-graph's
        previous round (:class:`.seminaive.Changes`); elsewhere the match, its right side and its union
        are those of the previous round, so nothing is lost and the unions, in order, are the
        same. The first round, an instantiation the previous round did not run, and a round
        after one cut short by ``max_new`` try every root."""
        view = _SnapView(eg, snap)
        rep = eg.rep_handles(snap)
        lits = class_literals(eg, snap)
        by_op = _classes_by_op(eg, snap)
        present = {(dt, len(shape)) for dt, shape in snap.class_type}
        # only instantiations of a dtype and rank some e-class has (others cannot match), in the
        # rule set's order (the order unions are made in is part of the result)
        pre = _Prefilter(view, snap, lits)
        changed = Changes(eg, snap, lits, eg.ir_round, self.insts)
        insts = self.insts.ordered(present, "forward")
        ops, changed.ran, groups = self.insts.index(insts)
        # only the instantiations whose root requirement some e-node meets (the others have no
        # candidate root: passed over below anyway), still in the rule set's order
        live = sorted(j for key, js in groups.items()
                      if (by_op.get(key[1]) if key[0] == "any" else key in pre.index) for j in js)
        n = 0
        for j in live:
            inst, op = insts[j], ops[j]
            roots = by_op.get(op)
            if not roots:
                continue
            cands = pre.candidates(inst, roots)
            if not cands:
                continue        # most instantiations, in most rounds: nothing to set up
            # a ground left side steps through no e-node (it reads its root's type and literal
            # only): it is tried at the classes that changed
            semi = _has_tvar(inst.lhs)
            repeat = semi and changed.repeats(id(inst))
            m = Matcher(inst, view, lits.get, changed.fresh if repeat else None)
            for c in (changed.near(id(inst), _footprint_depth(inst), cands) if semi
                      else changed.touched(id(inst), cands)):
                for b in m.match(inst.lhs, c, _Binding()):
                    if repeat and not b.new:
                        continue        # only old e-nodes: an earlier round's match, applied then
                    if not m.finish(b):
                        continue
                    if not self.gate.ok(inst):
                        break
                    h = self._build(eg, inst, b, rep, view)
                    if h is None or (h < len(snap.handle_class) and snap.handle_class[h] == c):
                        continue
                    eg.union(h, rep[c])
                    n += 1
                    if n >= self.max_new:
                        eg.ir_round = None      # cut short: the next round tries every root
                        return n
        eg.ir_round = changed
        self.applied += n
        return n

    def _build(self, eg: EGraph, inst: Inst, b: _Binding, rep: dict[int, int], view: _View) -> int | None:
        names = sorted(inst.tensors)
        types = tuple(view.ctype(b.tv[nm]) for nm in names)
        key = (id(inst), tuple(sorted(b.sym.items())), types)
        hit = _RHS.get(key)
        if hit is None or hit[0] is not inst:
            t: Term | None
            try:
                (g,) = emit(inst.tensors, [inst.rhs], _dt(inst.dtype), _ev(b), "rhs")
                t = lower(g, params=[Term(None, (), i, ty) for i, ty in enumerate(types)])
            except Exception:  # noqa: BLE001 - a right side invalid at this binding does not fire
                t = None
            hit = _RHS[key] = (inst, t)
        if hit[1] is None:
            return None
        leaf_handles = tuple(rep[b.tv[nm]] for nm in names)
        # the same right side over the same handles was built in an earlier round: the same
        # e-nodes (adds are hash-consed, literal forms were inserted then), so the same handle
        bkey = (key, leaf_handles)
        built = eg.built.get(bkey)
        if built is not None and built[0] is inst:
            return built[1]
        h = _insert_with(eg, hit[1], dict(enumerate(leaf_handles)), {})
        eg.built[bkey] = (inst, h)
        return h

    # -- patterns ------------------------------------------------------------------------------

    def normalize(self, t: Term) -> Term:
        """Rewrite a g_θ(α) pattern with the shrinking rules to a fixed point (bottom-up)."""
        done: dict[int, Term] = {}      # subterms in normal form (no rule matches in them), across passes
        for _ in range(8):
            # as in :meth:`apply`: only instantiations of a dtype and rank some subterm has
            insts = self.insts.by_root(self.insts.ordered(_present(t), "shrinking"))
            new = self._normalize_once(t, insts, done)
            if new is t:
                return t
            t = new
        return t

    def _normalize_once(self, root: Term, insts: Callable[[Term], list[Inst]], done: dict[int, Term]) -> Term:
        """One bottom-up pass. A match reads only the subterm it is rooted at (its operators,
        types, literals and sharing), so a subterm found in normal form stays so in later passes
        (``done`` keeps it alive and is checked by identity)."""
        view = _TermView(root)
        memo: dict[int, Term] = {}     # keyed by id of the view's terms (alive with the view)

        def lit_of(c: int):  # noqa: ANN202
            x = view.terms[c]
            return x.info.literal if x.is_lit else None  # type: ignore[union-attr]

        changed = False

        def go(t: Term) -> Term:
            nonlocal changed
            k = id(t)
            if k in memo:
                return memo[k]
            if t.info is None or not t.children:
                memo[k] = t
                return t
            if done.get(k) is t:
                memo[k] = t
                return t
            c = view.index[k]
            for inst in insts(t):
                if not _term_may_match(inst, t):
                    continue
                m = Matcher(inst, view, lit_of)
                for b in m.match(inst.lhs, c, _Binding()):
                    if not m.finish(b) or not self.gate.ok(inst):
                        continue
                    try:
                        ev = _ev(b)
                        (g,) = emit(inst.tensors, [inst.rhs], _dt(inst.dtype), ev, "rhs")
                        params = [view.terms[b.tv[nm]] if nm in b.tv else None for nm in sorted(inst.tensors)]
                        if any(p is None for p in params) and _tvars(inst.rhs, set()) - set(b.tv):
                            continue
                        params = [p if p is not None else Term(None, (), -1, None) for p in params]
                        out = lower(g, params=params)  # type: ignore[arg-type]
                    except Exception:  # noqa: BLE001
                        continue
                    changed = True
                    memo[k] = out     # normalized further by the next pass (normalize loops to a fixed point)
                    return out
            kids = tuple(go(x) for x in t.children)
            same = all(a is b for a, b in zip(kids, t.children, strict=True))
            out = t if same else Term(t.info, kids)
            if same and all(x.info is None or not x.children or done.get(id(x)) is x for x in t.children):
                done[k] = t
            memo[k] = out
            return out

        new = go(root)
        go = None   # type: ignore[assignment]  # a recursive closure is a reference cycle: break it
        return new if changed else root


_GENERATED: dict[tuple, IrRules] = {}

_DEPTH: dict[int, tuple[Inst, int]] = {}


def _steps_below(n: Node, d: int) -> int:
    return max([d, *(_steps_below(a, d + 1) for a in n.args if isinstance(a, Op) and _has_tvar(a))])


def _footprint_depth(inst: Inst) -> int:
    """How deep below the root :meth:`Matcher.match` steps through e-nodes for this left side:
    an operator with tensor variables is matched against an e-node of its class (depth 0 at the
    root) and its arguments one level down; a tensor variable (its class's type and identity)
    or a ground sub-pattern (its class's literal) reads its class but no e-node of it."""
    hit = _DEPTH.get(id(inst))
    if hit is not None and hit[0] is inst:
        return hit[1]

    out = _steps_below(inst.lhs, 0)   # type: ignore[arg-type]
    _DEPTH[id(inst)] = (inst, out)
    return out


_REQS: dict[int, tuple[Inst, Any]] = {}
_REQ_KEYS: dict[int, tuple[Inst, int]] = {}
_REQ_IDS: dict[tuple, int] = {}


def _req_key(inst: Inst) -> int:
    """A small int naming (root operator, :func:`_root_reqs`): instantiations with the same root
    requirements share it (a memo key without hashing the nested tuple on every lookup)."""
    hit = _REQ_KEYS.get(id(inst))
    if hit is not None and hit[0] is inst:
        return hit[1]
    full = (inst.lhs.opcode, _root_reqs(inst))  # type: ignore[union-attr]
    k = _REQ_IDS.setdefault(full, len(_REQ_IDS))
    _REQ_KEYS[id(inst)] = (inst, k)
    return k


def _root_reqs(inst: Inst) -> tuple[str, int, tuple[tuple[int, str, Any, Any], ...]] | None:
    """What :meth:`Matcher.match` checks first at a left side's root and its children, as data:
    (root class dtype, root arity, per child (position, kind, a, b)), kind ``tv`` (class dtype
    a, rank b), ``lit`` (the class holds a literal: a ground sub-pattern is compared with it) or
    ``op`` (an e-node (opcode a, arity), class dtype b); the dtypes are :func:`_node_dtype`'s. None when the root binds
    no tensor variable (then the matcher's own path is taken)."""
    hit = _REQS.get(id(inst))
    if hit is not None and hit[0] is inst:
        return hit[1]
    root = inst.lhs
    out: Any = None
    if isinstance(root, Op) and _has_tvar(root):
        reqs = []
        for i, a in enumerate(root.args):
            if isinstance(a, TVar):
                reqs.append((i, "tv", a.dtype or inst.dtype, len(a.shape)))
            elif isinstance(a, Op) and not _has_tvar(a):
                reqs.append((i, "lit", None, None))
            elif isinstance(a, Op):
                # the dtype the matcher requires of the class (:func:`_node_dtype`)
                reqs.append((i, "op", (a.opcode, len(a.args)), _node_dtype(a, inst.dtype)))
        out = (_node_dtype(root, inst.dtype), len(root.args), tuple(reqs))
    _REQS[id(inst)] = (inst, out)
    return out


def _term_may_match(inst: Inst, t: Term) -> bool:
    """:class:`_Prefilter`'s test on a term (one e-node per class): False only where
    :meth:`Matcher.match` yields nothing that :meth:`Matcher.finish` accepts."""
    r = _root_reqs(inst)
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


class _Prefilter:
    """The root classes where an instantiation's left side can match, by a check of the root's
    and its children's operators, dtypes, ranks and literals (the matcher's first steps, without
    its bindings): a class it drops is one where :meth:`Matcher.match` yields nothing, so the
    unions made, and their order, are the same."""

    def __init__(self, view: _SnapView, snap: Snapshot, lits: dict[int, Any]) -> None:
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
        key = _req_key(inst)    # many instantiations share their root's requirements
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        r = _root_reqs(inst)
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

_RHS: dict[tuple, tuple[Inst, Term | None]] = {}   # lowered right sides per (instantiation, binding)


def _insert_with(eg: EGraph, t: Term, leaves: dict[int, int], memo: dict[int, tuple[Term, int]]) -> int:
    """Insert a lowered right side; parameter ``i`` is the e-graph handle ``leaves[i]``. The memo
    keeps each term alive with its entry (literal forms are temporaries whose ids get reused)."""
    k = id(t)
    hit = memo.get(k)
    if hit is not None and hit[0] is t:
        return hit[1]
    if t.info is None:
        h = leaves[t.index]
    else:
        kids = tuple(_insert_with(eg, c, leaves, memo) for c in t.children)
        fresh = eg.n_handles
        h = eg.add(t.info, kids)
        memo[k] = (t, h)
        if h >= fresh:      # an e-node added before got its literal forms then
            for f in literal_forms(t.info):
                eg.union(h, _insert_with(eg, f, leaves, memo))
    memo[k] = (t, h)
    return h


def _classes_by_op(eg: EGraph, snap: Snapshot) -> dict[str, list[int]]:
    """Operator name -> the classes holding an e-node of it (in class order; a class once per
    e-node)."""
    by_op: dict[str, list[int]] = {}
    for c, nodes in enumerate(snap.classes):
        for en in nodes:
            info = eg.infos[en.info]
            if info.kind == "op":
                by_op.setdefault(info.name, []).append(c)
    return by_op


def _sample_alphas(ins) -> list[dict[str, int]]:  # noqa: ANN001
    doms = [ins.domain(a) for a in ins.alpha]
    picks = [dict(zip(ins.alpha, (d[0] for d in doms), strict=True)),
             dict(zip(ins.alpha, (d[-1] for d in doms), strict=True))]
    return picks


_NODE_DTYPES: dict[tuple[int, str], tuple[Node, str]] = {}


def _node_dtype(n: Node, rule_dtype: str) -> str:
    """:func:`_dtype`, memoized per rule node (the matcher asks at every e-node it steps through)."""
    hit = _NODE_DTYPES.get((id(n), rule_dtype))
    if hit is None or hit[0] is not n:
        hit = _NODE_DTYPES[(id(n), rule_dtype)] = (n, _dtype(n, rule_dtype))
    return hit[1]


def _dtype(n: Node, rule_dtype: str) -> str:
    """The element type a rule node computes (the rule's dtype unless stated or implied)."""
    if isinstance(n, TVar):
        return n.dtype or rule_dtype
    assert isinstance(n, Op)
    if n.out_dtype is not None:
        return n.out_dtype
    if n.opcode == "compare":
        return "pred"
    if n.opcode == "select":
        return _dtype(n.args[1], rule_dtype)
    return _dtype(n.args[0], rule_dtype) if n.args else rule_dtype


def _pointwise(r: Rule, lhs: Node, rhs: Node, dtype: str = "") -> bool:
    """Only elementwise operators (a bitcast-convert between types of one width is one), and
    broadcasts only of scalar constants (splats)."""
    return _pointwise_node(lhs, dtype) and _pointwise_node(rhs, dtype)


def _pointwise_node(n: Node, dtype: str) -> bool:
    from semantics.dtypes import DTYPES

    if isinstance(n, TVar):
        return True
    assert isinstance(n, Op)
    if n.opcode == "constant":
        return True
    if n.opcode == "broadcast":
        return isinstance(n.args[0], Op) and n.args[0].opcode == "constant"
    if n.opcode == "bitcast-convert" and dtype:
        same = DTYPES[_dtype(n, dtype)].nbytes == DTYPES[_dtype(n.args[0], dtype)].nbytes
        return same and _pointwise_node(n.args[0], dtype)
    return n.opcode in _ELEMENTWISE and all(_pointwise_node(a, dtype) for a in n.args)




def _present(root: Term) -> set[tuple[str, int]]:
    """The (dtype, rank) of every subterm of a pattern."""
    out: set[tuple[str, int]] = set()
    seen: set[int] = set()
    stack = [root]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.type is not None:
            out.add((t.type.dtype.name, len(t.type.shape)))
        stack.extend(t.children)
    return out


class Instantiations:
    """The (dtype, rank) instantiations of a rule set, made on first use per (dtype, rank) (most
    kernels use a few of the ~30 pairs; instantiating all ~9,000 up front took 1.7 s) and kept
    for the process. Their order -- the rule set's order, then the rule's dtypes, then ranks, as
    the rule lists them -- is the order rules are applied in."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self._by_key: dict[tuple[str, int], list[tuple[tuple[int, int, int], Inst]]] = {}
        self._rank1: dict[tuple[int, str], Inst | None] = {}
        self._kinds: dict[tuple[str, tuple[str, int]], list[tuple[tuple[int, int, int], Inst]]] = {}
        self._ordered: dict[tuple[frozenset, str], list[Inst]] = {}    # ordered()'s answers
        self._index: dict[int, tuple[list[Inst], list[str], set[int], dict]] = {}   # index()'s answers
        self._roots: dict[int, tuple[list[Inst], dict]] = {}   # by_root()'s tables

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
                i = self._rank1_of(ri, r, d) if k == 1 and r.ranks == (1,) else _make(r, d, k)
                if i is not None:
                    out.append(((ri, di, ranks.index(k)), i))
            elif r.ranks == (1,) and k in (2, 3):
                # pointwise lifting (module doc): proved at rank 1, applied at the match's rank
                i1 = self._rank1_of(ri, r, d)
                if i1 is not None and _pointwise(r, i1.lhs, i1.rhs, d):
                    c2, l2, r2, p2 = r.instantiate(d, k)
                    out.append(((ri, di, k - 1), Inst(r, d, k, l2, r2, p2, c2.tensors, i1.shrinks, 1)))
        self._by_key[key] = out
        return out

    def _rank1_of(self, ri: int, r: Rule, d: str) -> Inst | None:
        if (ri, d) not in self._rank1:
            self._rank1[(ri, d)] = _make(r, d, 1)
        return self._rank1[(ri, d)]

    def index(self, insts: list[Inst]) -> tuple[list[str], set[int], dict[tuple, list[int]]]:
        """For a list :meth:`ordered` returned: its left sides' root operators, in order, the set
        of its members' ids, and its positions grouped by what a root e-node must be for
        :class:`_Prefilter` to find a candidate (operator, arity, class dtype), or ("any",
        operator) where it takes every class holding the operator (made once per list)."""
        hit = self._index.get(id(insts))
        if hit is None or hit[0] is not insts:
            groups: dict[tuple, list[int]] = {}
            for j, i in enumerate(insts):
                r = _root_reqs(i)
                key = ("any", i.lhs.opcode) if r is None else (i.lhs.opcode, r[1], r[0])  # type: ignore[union-attr]
                groups.setdefault(key, []).append(j)
            hit = self._index[id(insts)] = (insts, [i.lhs.opcode for i in insts],  # type: ignore[union-attr]
                                            {id(i) for i in insts}, groups)
        return hit[1], hit[2], hit[3]

    def by_root(self, insts: list[Inst]) -> Callable[[Term], list[Inst]]:
        """For a list :meth:`ordered` returned: a function giving, for a term, the members (in
        list order) whose left side is rooted at the term's operator with its arity and result
        dtype where :func:`_root_reqs` states them (the first test of :func:`_term_may_match`),
        made once per (list, operator, arity, dtype)."""
        hit = self._roots.get(id(insts))
        if hit is None or hit[0] is not insts:
            hit = self._roots[id(insts)] = (insts, {})
        table: dict[tuple[str, int, str], list[Inst]] = hit[1]

        def of(t: Term) -> list[Inst]:
            key = (t.info.name, len(t.children), t.type.dtype.name)  # type: ignore[union-attr]
            out = table.get(key)
            if out is None:
                out = table[key] = [i for i in insts if i.lhs.opcode == key[0]  # type: ignore[union-attr]
                                    and ((r := _root_reqs(i)) is None or (r[0] == key[2] and r[1] == key[1]))]
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
    above it (:func:`.phase1.constants`), whose values a pii graph then places in the constant
    section (:mod:`.fold`); so do those whose right side is one of its variables (``add(x,
    subtract(y, x)) => y``, ``select(p, a, a) => a``): they unite two existing classes and add
    no e-node (``p1 - (p1 - p0)`` is then p0's bytes, which a program copies). The others
    (``slice(concat(x, y)) inside x => slice(x)``, ``clamp(broadcast(a), x, broadcast(a)) =>
    broadcast(a)``) serve pattern normalization only: running every rule forward cost 5-10% of
    the Gemmini paper kernels' compile time with no program changed; these two kinds cost 2-5%."""
    if not i.shrinks or isinstance(i.rhs, TVar):
        return True
    kept = _tvars(i.rhs, set())
    return not kept or kept == set(i.tensors)


def _make(r: Rule, d: str, k: int) -> Inst | None:
    """The rule instantiated for dtype ``d`` and rank ``k`` (None where it has no such instance)."""
    try:
        c, lhs, rhs, pre = r.instantiate(d, k)
    except Exception:  # noqa: BLE001
        return None
    shrinks = _size(rhs) < _size(lhs) or _tvars(rhs, set()) < set(c.tensors)
    return Inst(r, d, k, lhs, rhs, pre, c.tensors, shrinks, k)


_FIRST: dict[tuple[int, str | None], tuple[Rule, Inst | None]] = {}


def first_instantiation(r: Rule, dtype: str | None = None) -> Inst | None:
    """The rule's first instantiation (of ``dtype``), dtypes then ranks in the rule's order: the
    C.2 filter reads its sides, the tiling's identity check its proof (on every tiled compile:
    made once per process, instantiating costs ~0.1 ms of z3 terms each time)."""
    hit = _FIRST.get((id(r), dtype))
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
    _FIRST[(id(r), dtype)] = (r, out)
    return out


