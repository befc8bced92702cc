"""Which IR-to-IR rules a target gets (appendix C.2) and the normalization of its instruction
patterns with them (seed 000 §5.1).

What belongs here: :func:`target_rules` (the C.2 filter) and :func:`normalize` (g_θ(α) patterns
rewritten with the shrinking rules). Instantiation is :mod:`.instantiate`, matching
:mod:`.match`, and the e-graph rounds :mod:`.rewrite`.

Filtering (C.2): start from the operators of every g_θ of the description; a rule whose right side
builds only such operators (or literals) may lead to an IR-to-ISA rule, so it is kept and the
operators of its left side join the set; repeat to a fixed point.

Normalization: patterns g_θ(α) are rewritten with the rules that remove a tensor variable (e.g.
``add(y, multiply(old, 0)) => y``: accumulate = 0 ignores the old accumulator) or shrink the
term (e.g. ``mvin(x, 1.0) => x``), behind the proof gate; kernels grow toward instruction forms
with the other rules (:meth:`.rewrite.IrRules.apply`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewrite_rules.dsl import Rule
from rewrite_rules.instantiate import emit
from semantics.dtypes import DTYPES

from ...isa import Accelerator
from ..egraph.terms import Term, lower
from .instantiate import Inst, Instantiations, first_instantiation, ops_of, tvars
from .match import Binding, Matcher, TermView, evaluator_of, term_may_match

__all__ = ["target_rules", "normalize", "present"]

#: structural operators a right side may build beyond the target's (literals in another form)
_STRUCT_OK = {"constant", "broadcast", "iota"}


def _sample_alphas(ins) -> list[dict[str, int]]:  # noqa: ANN001
    doms = [ins.domain(a) for a in ins.alpha]
    picks = [dict(zip(ins.alpha, (d[0] for d in doms), strict=True)),
             dict(zip(ins.alpha, (d[-1] for d in doms), strict=True))]
    return picks


def target_rules(acc: Accelerator, lib: dict[str, Rule] | None = None) -> list[Rule]:
    """The C.2 filter: the valid library rules (``lib``, default the whole library) that can
    lead to an instruction of ``acc``, in library order of being kept."""
    if lib is None:
        from rewrite_rules.library import load

        lib = load()
    target_ops: set[str] = set()
    for ins in acc.instructions.values():
        if ins.name in acc.tile_only:
            continue
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
            rhs_ops = ops_of(i0.rhs, set()) - _STRUCT_OK
            lhs_ops = ops_of(i0.lhs, set())
            if rhs_ops <= ops:
                keep.append(r)
                new = lhs_ops - ops
                if new:
                    ops |= new
                    changed = True
    return keep


def present(root: Term) -> set[tuple[str, int]]:
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


def normalize(insts: Instantiations, ok: Callable[[Inst], bool], t: Term) -> Term:
    """Rewrite a g_θ(α) pattern with the shrinking rules of ``insts`` that pass the proof gate
    ``ok`` to a fixed point (bottom-up)."""
    done: dict[int, Term] = {}      # subterms in normal form (no rule matches in them), across passes
    for _ in range(8):
        # as in IrRules.apply: only instantiations of a dtype and rank some subterm has
        by_root = insts.by_root(insts.ordered(present(t), "shrinking"))
        new = _normalize_once(t, by_root, ok, done)
        if new is t:
            return t
        t = new
    return t


def _normalize_once(root: Term, insts: Callable[[Term], list[Inst]], gate_ok: Callable[[Inst], bool],
                    done: dict[int, Term]) -> Term:
    """One bottom-up pass. A match reads only the subterm it is rooted at (its operators,
    types, literals and sharing), so a subterm found in normal form stays so in later passes
    (``done`` keeps it alive and is checked by identity)."""
    view = TermView(root)
    memo: dict[int, Term] = {}     # keyed by id of the view's terms (alive with the view)

    def lit_of(c: int) -> Any:
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
            if not term_may_match(inst, t):
                continue
            m = Matcher(inst, view, lit_of)
            for b in m.match(inst.lhs, c, Binding()):
                if not m.finish(b) or not gate_ok(inst):
                    continue
                try:
                    ev = evaluator_of(m.facts, b)
                    (g,) = emit(inst.tensors, [inst.rhs], DTYPES[inst.dtype], ev, "rhs")
                    params = [view.terms[b.tv[nm]] if nm in b.tv else None for nm in sorted(inst.tensors)]
                    if any(p is None for p in params) and tvars(inst.rhs, set()) - set(b.tv):
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
