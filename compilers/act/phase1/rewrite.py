"""Module 2's IR-to-IR rounds (seed 000 §5.1, appendix C.2): the proven rules of
:mod:`rewrite_rules`, filtered for a target, fired on e-graph snapshots.

What belongs here: :class:`IrRules`, a target's rule set behind a proof gate, with one round of
equality saturation (:meth:`IrRules.apply`: match, gate, build the right side, union) and the
normalization of instruction patterns (:meth:`IrRules.normalize`). The parts it drives live in
their own modules: instantiation (:mod:`.instantiate`), matching (:mod:`.match`), the C.2 filter
and normalization (:mod:`.normalize`), the proof gate (:mod:`verif.gate`, re-exported here as
:class:`ProofGate`).

Proof gate (invariant 3), per instantiation: a rule instantiation (dtype, rank) fires only when a
passing proof of the rule's current text for that dtype and rank is in the proof cache. The gate
is consulted at the first match, so only the instantiations a kernel actually uses are ever
proved. A match's right side is built by :func:`rewrite_rules.instantiate.emit` and lowered like
a kernel (:mod:`.terms`), then unioned with the matched class.

Lifetimes: the rule set and its instantiations are made once per target description and kept in
its :class:`~compilers.act.context.TargetContext`; the instantiations carry their own memos
(:class:`.instantiate.InstFacts`); a compile's memos (e-node attribute dicts) live in its
:class:`~compilers.act.context.CompileContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewrite_rules.dsl import Rule
from rewrite_rules.instantiate import emit
from semantics.dtypes import DTYPES
from verif.gate import ProofGate

from ...isa import Accelerator
from ..context import CompileContext, TargetContext
from ..egraph import EGraph, NodeInfo, Snapshot, class_literals
from ..egraph.seminaive import Changes
from ..egraph.terms import Term, lower
from .initialize import forms_memo, literal_forms
from .instantiate import Inst, Instantiations, facts_of, first_instantiation
from .match import Binding, Matcher, Prefilter, SnapView, View, classes_by_op, evaluator_of
from .normalize import normalize, target_rules

__all__ = ["IrRules", "Inst", "Instantiations", "ProofGate", "Matcher", "first_instantiation"]

_UNSET: Any = object()


def _insert_with(eg: EGraph, t: Term, leaves: dict[int, int], memo: dict[int, tuple[Term, int]],
                 forms: dict[NodeInfo, list[Term]] | None) -> int:
    """Insert a lowered right side; parameter ``i`` is the e-graph handle ``leaves[i]``. The memo
    keeps each term alive with its entry (literal forms are temporaries whose ids get reused)."""
    k = id(t)
    hit = memo.get(k)
    if hit is not None and hit[0] is t:
        return hit[1]
    if t.info is None:
        h = leaves[t.index]
    else:
        kids = tuple(_insert_with(eg, c, leaves, memo, forms) for c in t.children)
        fresh = eg.n_handles
        h = eg.add(t.info, kids)
        memo[k] = (t, h)
        if h >= fresh:      # an e-node added before got its literal forms then
            for f in literal_forms(t.info, forms):
                eg.union(h, _insert_with(eg, f, leaves, memo, forms))
    memo[k] = (t, h)
    return h


@dataclass
class IrRules:
    """The filtered, proven rules of a target, instantiated (dtype, rank) and indexed by the
    operator at the root of their left sides."""

    rules: list[Rule] = field(default_factory=list)
    insts: Instantiations = field(default_factory=lambda: Instantiations([]))
    max_new: int = 4000
    applied: int = 0
    gate: ProofGate = field(default_factory=ProofGate)
    #: the target's context (literal forms' memo); None: no memo kept across rounds
    target: TargetContext | None = None

    @classmethod
    def for_target(cls, acc: Accelerator, gate: ProofGate | None = None) -> IrRules:
        """The target's rules (backend generation: done once per description object, kept in
        its :class:`TargetContext`) behind ``gate`` (default: cached proofs only, nothing proved
        on the spot)."""
        tc = TargetContext.of(acc)
        memo = tc.memo("ir_rules")
        r = memo.get("generated")
        if r is None:
            keep = target_rules(acc)
            r = memo["generated"] = (keep, Instantiations(keep))
        return cls(r[0], r[1], gate=gate or ProofGate(), target=tc)

    # -- e-graph -------------------------------------------------------------------------------

    def apply(self, eg: EGraph, snap: Snapshot, ctx: CompileContext | None = None) -> int:
        """One round: every growing rule on every e-class; returns the number of unions.
        ``ctx``: the compile's context (its memo of e-node attributes).

        Semi-naive: a root is tried only where the left side's footprint (the classes within
        its depth below the root) reaches a class whose IR e-nodes changed since this e-graph's
        previous round (:class:`.seminaive.Changes`); elsewhere the match, its right side and its union
        are those of the previous round, so nothing is lost and the unions, in order, are the
        same. The first round, an instantiation the previous round did not run, and a round
        after one cut short by ``max_new`` try every root."""
        view = SnapView(eg, snap, ctx.memo("ir_attrs") if ctx is not None else None)
        rep = eg.rep_handles(snap)
        lits = class_literals(eg, snap)
        by_op = classes_by_op(eg, snap)
        present = {(dt, len(shape)) for dt, shape in snap.class_type}
        forms = forms_memo(self.target) if self.target is not None else None
        # only instantiations of a dtype and rank some e-class has (others cannot match), in the
        # rule set's order (the order unions are made in is part of the result)
        pre = Prefilter(view, snap, lits)
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
            f = facts_of(inst)
            semi = f.semi
            repeat = semi and changed.repeats(id(inst))
            m = Matcher(inst, view, lits.get, changed.fresh if repeat else None)
            for c in (changed.near(id(inst), f.depth(), cands) if semi
                      else changed.touched(id(inst), cands)):
                for b in m.match(inst.lhs, c, Binding()):
                    if repeat and not b.new:
                        continue        # only old e-nodes: an earlier round's match, applied then
                    if not m.finish(b):
                        continue
                    if not self.gate.ok(inst):
                        break
                    h = self._build(eg, inst, b, rep, view, forms)
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

    def _build(self, eg: EGraph, inst: Inst, b: Binding, rep: dict[int, int], view: View,
               forms: dict[NodeInfo, list[Term]] | None = None) -> int | None:
        f = facts_of(inst)
        names = sorted(inst.tensors)
        types = tuple(view.ctype(b.tv[nm]) for nm in names)
        key = (tuple(sorted(b.sym.items())), types)
        rhs: Term | None = f.rhs.get(key, _UNSET)
        if rhs is _UNSET:
            try:
                (g,) = emit(inst.tensors, [inst.rhs], DTYPES[inst.dtype], evaluator_of(f, b), "rhs")
                rhs = lower(g, params=[Term(None, (), i, ty) for i, ty in enumerate(types)])
            except Exception:  # noqa: BLE001 - a right side invalid at this binding does not fire
                rhs = None
            f.rhs[key] = rhs
        if rhs is None:
            return None
        leaf_handles = tuple(rep[b.tv[nm]] for nm in names)
        # the same right side over the same handles was built in an earlier round: the same
        # e-nodes (adds are hash-consed, literal forms were inserted then), so the same handle
        bkey = ((id(inst), *key), leaf_handles)
        built = eg.built.get(bkey)
        if built is not None and built[0] is inst:
            return built[1]
        h = _insert_with(eg, rhs, dict(enumerate(leaf_handles)), {}, forms)
        eg.built[bkey] = (inst, h)
        return h

    # -- patterns ------------------------------------------------------------------------------

    def normalize(self, t: Term) -> Term:
        """Rewrite a g_θ(α) pattern with the shrinking rules to a fixed point (bottom-up)."""
        return normalize(self.insts, self.gate.ok, t)

    def normalize_stored(self, name: str, t: Term) -> Term:
        """:meth:`normalize` of the pattern ``t`` named ``name`` (target, instruction, α: what
        determines ``t``), read from the disk cache of :mod:`compilers.gen_cache` where an
        earlier process stored it under the same rule set (each rule's text and module source)
        and its proof gate answers every rule it asked about as it answered then (the answers
        are stored with the pattern and asked again here: normalization is a function of the
        pattern, the rules and those answers, so the stored pattern is the one this process
        would compute, and every rewrite in it passed this gate). Else computed and stored."""
        from ...gen_cache import load, store

        text = f"{name}|{self._rules_digest()}"
        hit = load("normalized", text, "pattern", tuple)
        if hit is not None and len(hit) == 2 and isinstance(hit[0], Term) and self._same_answers(hit[1]):
            return hit[0]
        asked: dict[tuple[str, str, int], bool] = {}

        def ok(inst: Any) -> bool:
            r = self.gate.ok(inst)
            asked[(inst.rule.name, inst.dtype, inst.proof_rank)] = r
            return r

        out = normalize(self.insts, ok, t)
        store("normalized", text, "pattern", (out, tuple(sorted(asked.items()))))
        return out

    def _rules_digest(self) -> str:
        d = getattr(self, "_digest", None)
        if d is None:
            import hashlib

            h = hashlib.sha256()
            for r in self.rules:
                h.update(r.text_hash().encode() + b"\0")
            d = h.hexdigest()
            object.__setattr__(self, "_digest", d)
        return d

    def _same_answers(self, asked: Any) -> bool:
        """Whether this gate answers each (rule, dtype, proof rank) of ``asked`` as recorded."""
        by_name = getattr(self, "_by_name", None)
        if by_name is None:
            by_name = {r.name: r for r in self.rules}
            object.__setattr__(self, "_by_name", by_name)
        try:
            for (name, dtype, rank), want in asked:
                rule = by_name.get(name)
                if rule is None:
                    return False
                got = True if not self.gate.enabled else self.gate.passes(rule, dtype, rank)
                if got != want:
                    return False
        except (TypeError, ValueError):
            return False
        return True
