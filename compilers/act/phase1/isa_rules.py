"""Module 2's IR-to-ISA rules (seed 000 §5.1, appendix C.3): g_θ(α) → θ_{α,?}, generated from
each instruction's semantics for the α the kernel's types admit, and applied to the e-graph.

What belongs here: :class:`IsaRule` (one lowered, normalized pattern), :class:`IsaRules` (a
target's rules, made on demand per α with the precondition ∃β e_θ(α, β) reduced to its α-only
constraints -- the β part is phase 2's), :class:`PatternStore` (where they and their matching
facts are kept), :func:`match` (the IR-to-ISA matcher) and :func:`apply_isa_rules` (one round:
a match adds the pii θ_{α,?} to the matched e-class).

:func:`match` matches a lowered term against e-classes by e-node identity (infos) and concrete
types; it is one of Act's three matchers (:mod:`.match` says how they relate): the patterns it
reads are g_θ(α) normalized by the IR-to-IR rules (:mod:`.normalize`), whose own matcher works on
library rules with symbolic sizes instead.

Lifetimes: a :class:`PatternStore` per (target, normalizer) lives in the target's
:class:`~compilers.act.context.TargetContext` (an :class:`IsaRules` without a ``cache_key`` keeps
its own); past :data:`MAX_PATTERNS` patterns it is emptied when the next compile starts, and
refills on demand with equal patterns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from semantics.types import TensorType

from ...isa import Accelerator, InstrDef
from ..context import TargetContext
from ..egraph import EGraph, NodeInfo, Snapshot, class_literals, type_key
from ..egraph.seminaive import Changes
from ..egraph.terms import Term, lower_semantics

__all__ = ["IsaRule", "IsaRules", "PatternStore", "match", "apply_isa_rules", "MAX_PATTERNS"]


@dataclass
class IsaRule:
    """g_θ(α) → θ_{α,?}: the lowered semantics as a pattern over the instruction's parameters."""

    instr: InstrDef
    alpha: tuple[tuple[str, int], ...]
    pattern: Term
    in_types: tuple[TensorType, ...]
    out_type: TensorType

    @property
    def name(self) -> str:
        return f"{self.instr.name}{dict(self.alpha)}"


#: a campaign over kernels of many shapes generates g_θ(α) for every new α; past this many
#: kept per (target, normalizer), an :class:`IsaRules` made for a compile starts by emptying its
#: store (it refills on demand)
MAX_PATTERNS = 20_000


class PatternStore:
    """One normalizer's IR-to-ISA rules of one target, and what matching reads off them: per
    rule (by id, with the rule) its type keys, pii infos and pattern infos (:func:`_rule_keys`),
    per pattern its depth (:func:`_pattern_depth`)."""

    __slots__ = ("rules", "keys", "depths")

    def __init__(self) -> None:
        self.rules: dict[tuple, IsaRule | None | list[IsaRule]] = {}
        self.keys: dict[int, tuple] = {}
        self.depths: dict[int, tuple[Term, int]] = {}

    def clear(self) -> None:
        self.rules.clear()
        self.keys.clear()
        self.depths.clear()


class IsaRules:
    """The IR-to-ISA rules of one accelerator, generated on demand for the α values that the
    e-graph's types can use (an α's input and output slice types must be types of e-classes)."""

    MAX_ALPHA = 4096

    def __init__(self, acc: Accelerator, normalize: Callable[[Term], Term] | None = None,
                 cache_key: object = None, normalize_stored: Callable[[str, Term], Term] | None = None) -> None:
        """``normalize``: Term -> Term, the proven IR-to-IR normalization of patterns; rules
        generated with the same ``cache_key`` (the same normalizer: hashable, holding what it
        names) are kept in the target's context and shared, like a generated backend.
        ``normalize_stored``: the same normalization given the pattern's name too, which may
        read it from the disk cache (:meth:`.rewrite.IrRules.normalize_stored`)."""
        self.acc = acc
        self.normalize = normalize
        self.normalize_stored = normalize_stored
        #: what identifies the patterns this object makes (its shared store, or itself)
        self.key: object = (acc.name, id(acc), cache_key) if cache_key is not None else ("own", id(self))
        if cache_key is None:
            self.store = PatternStore()
        else:
            tc = TargetContext.of(acc)
            stores = tc.memo("isa_patterns")
            store = stores.get(cache_key)
            if store is None:
                store = stores[cache_key] = PatternStore()
            if len(store.rules) > MAX_PATTERNS:
                store.clear()
                tc.memo("pii_parts").clear()
            self.store = store
        self._cache = self.store.rules

    def _candidates(self, ins: InstrDef, dims: set[int]) -> Iterator[dict[str, int]]:
        doms = []
        for a in ins.alpha:
            dom = ins.domain(a)
            pref = ins.search_values(a)
            if pref is not None:
                doms.append(tuple(pref))
            elif len(dom) <= 8:
                doms.append(dom)
            else:
                doms.append(tuple(v for v in dom if v in dims))
        count = math.prod(len(d) for d in doms)
        if count > self.MAX_ALPHA:
            doms = [d[:8] for d in doms]
        alpha_only = [c for c in ins.constraints if c.vars() <= set(ins.alpha)] + list(ins.search_where)
        for combo in itertools.product(*doms):
            env = dict(zip(ins.alpha, combo, strict=True))
            if all(c.eval(env) for c in alpha_only):
                yield env

    def rule(self, ins: InstrDef, alpha: dict[str, int]) -> IsaRule | None:
        key = (ins.name, tuple(sorted(alpha.items())))
        if key in self._cache:
            return self._cache[key]
        r: IsaRule | None = None
        try:
            env = dict.fromkeys(ins.beta, 0) | alpha
            in_types = tuple(self.acc.buffers[s.buffer].slice_type(s.bounds(env)[1]) for s in ins.inputs)
            out_type = self.acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1])
            pat = lower_semantics(ins, alpha)
            if self.normalize_stored is not None:
                pat = self.normalize_stored(f"{self.acc.name}|{ins.name}|{sorted(alpha.items())}", pat)
            elif self.normalize is not None:
                pat = self.normalize(pat)
            r = IsaRule(ins, tuple(alpha.items()), pat, in_types, out_type)
        except Exception:  # noqa: BLE001 - an α the semantics rejects is not a candidate
            r = None
        self._cache[key] = r
        return r

    def rules_for(self, types: set[tuple[str, tuple[int, ...]]]) -> list[IsaRule]:
        """The rules whose output type is one of ``types`` (memoized per type set)."""
        key = ("_for", frozenset(types))
        hit = self._cache.get(key)  # type: ignore[call-overload]
        if hit is None:
            hit = self._cache[key] = self._rules_for(types)  # type: ignore[index]
        return list(hit)  # type: ignore[arg-type]

    def _rules_for(self, types: set[tuple[str, tuple[int, ...]]]) -> list[IsaRule]:
        dims: set[int] = set()
        for _, shape in types:
            for d in shape:
                dims.add(d)
        dims |= {a * b for a in list(dims) for b in (2, 4)}
        out = []
        for ins in self.acc.instructions.values():
            if ins.name in self.acc.tile_only:
                continue
            for alpha in self._candidates(ins, dims):
                env = dict.fromkeys(ins.beta, 0) | alpha
                try:
                    ot = self.acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1])
                except Exception:  # noqa: BLE001
                    continue
                if type_key(ot) not in types:
                    continue
                r = self.rule(ins, alpha)
                if r is not None:
                    out.append(r)
        return out


def match(snap: Snapshot, ids: dict[NodeInfo, int], pat: Term, cls: int,
          bind: dict[int, int], _meta: dict[int, tuple] | None = None) -> Iterator[dict[int, int]]:
    """All ways the pattern matches e-class ``cls`` (bindings: parameter index -> class).
    ``_meta`` memoizes each pattern node's (type key, e-node info id) for one snapshot."""
    meta = _meta if _meta is not None else {}
    m = meta.get(id(pat))
    if m is None or m[0] is not pat:
        tk = type_key(pat.type) if pat.is_param else pat.info.tkey  # type: ignore[union-attr]
        m = meta[id(pat)] = (pat, tk, None if pat.is_param else ids.get(pat.info))  # type: ignore[arg-type]
    if snap.class_type[cls] != m[1]:
        return
    if pat.is_param:
        prev = bind.get(pat.index)
        if prev is None:
            yield {**bind, pat.index: cls}
        elif prev == cls:
            yield bind
        return
    iid = m[2]
    if iid is None:
        return
    n = len(pat.children)
    for en in snap.classes[cls]:
        if en.info != iid or len(en.children) != n:
            continue
        yield from _match_children(snap, ids, pat.children, en.children, 0, bind, meta)


def _match_children(snap: Snapshot, ids: dict[NodeInfo, int], pats: Sequence[Term], kids: Sequence[int], i: int,
                    bind: dict[int, int], meta: dict[int, tuple]) -> Iterator[dict[int, int]]:
    if i == len(pats):
        yield bind
        return
    for b in match(snap, ids, pats[i], kids[i], bind, meta):
        yield from _match_children(snap, ids, pats, kids, i + 1, b, meta)


def _rule_keys(store: PatternStore, r: IsaRule) -> tuple:
    """(rule, output type key, input type keys, {unused positions: pii NodeInfo}, the pattern's
    e-node infos) of a rule, kept in ``store`` (hashing a NodeInfo costs more than matching a
    small pattern)."""
    hit = store.keys.get(id(r))
    if hit is None or hit[0] is not r:
        hit = store.keys[id(r)] = (r, type_key(r.out_type), tuple(type_key(t) for t in r.in_types), {},
                                   tuple(_pattern_infos(r.pattern, {})))
    return hit


def _pattern_infos(t: Term, out: dict[NodeInfo, None]) -> dict[NodeInfo, None]:
    """The e-node infos of a pattern (each must be in the e-graph for it to match), in order."""
    if t.info is not None and t.info not in out:
        out[t.info] = None
        for c in t.children:
            _pattern_infos(c, out)
    return out


def _depth_below(x: Term, d: int) -> int:
    return max([d, *(_depth_below(c, d + 1) for c in x.children if not c.is_param)])


def _pattern_depth(store: PatternStore, t: Term) -> int:
    """How deep below its root a pattern steps through e-nodes (a parameter reads its class's
    type and identity only), kept in ``store``."""
    hit = store.depths.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]

    out = 0 if t.is_param else _depth_below(t, 0)
    store.depths[id(t)] = (t, out)
    return out


def apply_isa_rules(egraph: EGraph, snap: Snapshot, rules: Sequence[IsaRule], owner: object = None) -> int:
    """Add θ_{α,?} to every e-class that g_θ(α) matches; returns the number of new piis.

    With ``owner`` (what keeps the rules alive, e.g. their :class:`IsaRules`), rounds are
    semi-naive (:class:`.seminaive.Changes`): a rule run in the e-graph's previous round is
    tried only at roots where its pattern can reach a new e-node; at the others every match
    adds a pii e-node that is already there. An :class:`IsaRules` owner's :class:`PatternStore`
    keeps the rules' matching facts across rounds and compiles."""
    store = owner.store if isinstance(owner, IsaRules) else PatternStore()
    rep = egraph.rep_handles(snap)
    changed = Changes(egraph, snap, class_literals(egraph, snap), egraph.isa_round if owner is not None else None,
                      owner)
    by_type: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for c, t in enumerate(snap.class_type):
        by_type.setdefault(t, []).append(c)
    infos = egraph.infos
    existing = {(en.info, en.children) for cl in snap.classes for en in cl if infos[en.info].kind == "pii"}
    new: list[tuple[int, int]] = []      # (handle, class) of the piis added
    ids = egraph.info_ids
    pat_ids = egraph.pattern_ids
    class_type, by_info = snap.class_type, snap.by_info
    meta: dict[int, tuple] = {}     # pattern node -> (node, type key, info id): the piis added below are no pattern's
    iid_of: dict[tuple[int, tuple[int, ...]], int] = {}     # (rule, unused positions) -> this e-graph's info id
    for r in rules:
        changed.ran.add(id(r))      # (a rule whose pattern cannot match anywhere has run too)
        _, out_key, in_keys, pii_infos, pat_infos = _rule_keys(store, r)
        # a pattern holding an operator (with its attributes and type) that no e-node has cannot
        # match anywhere: most patterns, in most rounds. The e-graph's info ids of the pattern's
        # infos are looked up once each (an id, once given, stays; equal infos compare slowly)
        known = pat_ids.get(id(r))
        if known is None or known[0] is not r:
            known = pat_ids[id(r)] = (r, [], [-1])
        found = known[1]
        if len(found) < len(pat_infos):
            missed = known[2]
            if missed[0] == len(infos):
                continue    # no info was added since one of this pattern's was looked up in vain
            while len(found) < len(pat_infos):
                i = ids.get(pat_infos[len(found)])
                if i is None:
                    break
                found.append(i)
            if len(found) < len(pat_infos):
                missed[0] = len(infos)
                continue
        if any(i not in by_info for i in found):
            continue
        if r.pattern.is_param:
            roots = by_type.get(out_key, [])
        else:
            # only the classes holding an e-node of the pattern's root operator (its first info)
            roots = list(dict.fromkeys(c for c, _ in by_info[found[0]]))
        for cls in changed.near(id(r), _pattern_depth(store, r.pattern), roots):
            if class_type[cls] != out_key:
                continue
            for b in match(snap, ids, r.pattern, cls, {}, meta):
                kids = []
                ok = True
                for i, tk in enumerate(in_keys):
                    c = b.get(i)
                    if c is None:
                        kids.append(-1)
                        continue
                    if class_type[c] != tk:
                        ok = False
                        break
                    kids.append(c)
                if not ok:
                    continue
                unused = tuple(i for i, c in enumerate(kids) if c < 0)
                info_id = iid_of.get((id(r), unused))
                if info_id is None:
                    info = pii_infos.get(unused)
                    if info is None:
                        info = pii_infos[unused] = NodeInfo(
                            "pii", r.instr.name, r.alpha + ((("_unused", unused),) if unused else ()),
                            r.out_type, r.instr.output.buffer, literal=None)
                    info_id = iid_of[(id(r), unused)] = egraph.info_id(info)
                real = tuple(c for c in kids if c >= 0)
                if (info_id, real) in existing:
                    continue
                existing.add((info_id, real))
                h = egraph.add(infos[info_id], tuple(rep[c] for c in real))
                egraph.union(h, rep[cls])
                new.append((h, cls))
    egraph.isa_round = changed if owner is not None else None
    if new:
        # every pii e-node is new, its (info, child classes) in no class (``existing``), and
        # united with one class: no class merges, the next snapshot is this one extended
        # (if ``snap`` was the e-graph as it was; else the next snapshot reads egglog's)
        egraph.extend(snap, new)
    return len(new)
