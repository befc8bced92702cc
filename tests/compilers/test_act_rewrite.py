"""M2's IR-to-IR matching on e-graphs: the root prefilter drops only classes where no match
survives, so the unions (and their order) are those of matching at every class."""

from __future__ import annotations

import pytest

from compilers.act import phase1
from compilers.act.egraph import EGraph
from compilers.act.egraph import class_literals as _class_literals
from compilers.act.phase1.match import Binding, Matcher, Prefilter, SnapView, classes_by_op
from compilers.act.phase1.rewrite import IrRules
from compilers.compile import rules_for
from compilers.targets import load_target
from semantics.hlo_parser import parse_file
from tests.paths import PAPER


def _grown(kernel: str, rounds: int):  # noqa: ANN202
    acc = load_target("gemmini")
    k = phase1.initialize(parse_file(PAPER / f"{kernel}.hlo"))
    eg = EGraph()
    for r in k.roots:
        phase1.insert(eg, r, {})
    rules = rules_for(acc)   # not the cache's state: prove at first use
    isa = phase1.IsaRules(acc, rules.normalize)
    for _ in range(rounds):
        rules.apply(eg, eg.snapshot())
        snap = eg.snapshot()
        phase1.apply_isa_rules(eg, snap, isa.rules_for(set(snap.class_type)))
    return eg, eg.snapshot(), rules


@pytest.mark.parametrize("kernel", ["gemmini_mac", "composite_add_mm"])
def test_prefilter_keeps_every_class_with_a_surviving_match(kernel: str) -> None:
    eg, snap, rules = _grown(kernel, 2)
    view = SnapView(eg, snap)
    lits = _class_literals(eg, snap)
    pre = Prefilter(view, snap, lits)
    by_op = classes_by_op(eg, snap)
    present = {(dt, len(shape)) for dt, shape in snap.class_type}
    checked = dropped = 0
    for inst in rules.insts.ordered(present, "forward"):
        roots = by_op.get(inst.lhs.opcode, [])
        kept = set(pre.candidates(inst, roots))
        assert kept <= set(roots)
        m = Matcher(inst, view, lits.get)
        for c in dict.fromkeys(roots):
            hits = [b for b in m.match(inst.lhs, c, Binding()) if m.finish(b)]
            checked += 1
            if c not in kept:
                dropped += 1
                assert not hits, f"{inst.name}: the prefilter dropped class {c}, where it matches"
    # not vacuous: the prefilter is exercised and drops most (instantiation, class) pairs
    assert checked > 500 and dropped > checked // 2


def test_term_prefilter_keeps_every_subterm_with_a_surviving_match() -> None:
    """The same on the g_θ(α) patterns that normalization rewrites (one e-node per class)."""
    from compilers.act.phase1.match import TermView, term_may_match
    from compilers.act.phase1.normalize import present
    from compilers.act.egraph.terms import lower

    acc = load_target("gemmini")
    rules = IrRules.for_target(acc)
    isa = phase1.IsaRules(acc)
    checked = dropped = 0
    for ins in acc.instructions.values():
        for alpha in list(isa._candidates(ins, {4, 16, 64}))[:6]:
            try:
                pat = lower(ins.graph(alpha))
            except Exception:  # noqa: BLE001 - an α the semantics rejects is no pattern
                continue
            view = TermView(pat)

            def lit_of(c: int, view=view):  # noqa: ANN202
                x = view.terms[c]
                return x.info.literal if x.is_lit else None

            for inst in rules.insts.ordered(present(pat), "shrinking"):
                for c, t in enumerate(view.terms):
                    if t.info is None or t.info.name != inst.lhs.opcode:
                        continue
                    checked += 1
                    if term_may_match(inst, t):
                        continue
                    dropped += 1
                    m = Matcher(inst, view, lit_of)
                    assert not [b for b in m.match(inst.lhs, c, Binding()) if m.finish(b)], (
                        f"{inst.name}: the term prefilter dropped a subterm of {ins.name}{alpha} it matches")
    assert checked > 100 and dropped > checked // 4


def test_by_root_keeps_in_order_every_instantiation_the_term_prefilter_accepts() -> None:
    """Normalization tries, at a subterm, the shrinking instantiations rooted at its operator
    with its arity and dtype (:meth:`~compilers.act.phase1.instantiate.Instantiations.by_root`), in rule order: exactly those of the
    plain operator lookup that :func:`term_may_match` accepts, so normalized patterns are
    the same (and the same as before the index)."""
    from compilers.act.phase1.match import TermView, term_may_match
    from compilers.act.phase1.normalize import present
    from compilers.act.egraph.terms import lower

    checked = 0
    for target, dims in [("gemmini", {4, 16, 64}), ("amx", {16, 64})]:
        acc = load_target(target)
        rules = IrRules.for_target(acc)
        isa = phase1.IsaRules(acc)
        for ins in acc.instructions.values():
            for alpha in list(isa._candidates(ins, dims))[:4]:
                try:
                    pat = lower(ins.graph(alpha))
                except Exception:  # noqa: BLE001 - an α the semantics rejects is no pattern
                    continue
                ordered = rules.insts.ordered(present(pat), "shrinking")
                of = rules.insts.by_root(ordered)
                for t in TermView(pat).terms:
                    if t.info is None or not t.children:
                        continue
                    plain = [i for i in ordered if i.lhs.opcode == t.info.name]
                    got = of(t)
                    assert [i for i in plain if term_may_match(i, t)] == [i for i in got if term_may_match(i, t)]
                    assert all(i in plain for i in got) and got == [i for i in plain if i in got]
                    checked += 1
    assert checked > 200


_WIDE_DOT = """HloModule wide_dot
ENTRY main {
  a = s8[1,3] parameter(0)
  b = s8[3,4] constant({ {7, 1, 126, 109}, {-15, -127, -78, -127}, {8, -128, 8, -28} })
  ROOT d = s32[1,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.mark.parametrize("source", ["wide_dot", "composite_mm_plus_mm", "gemmini_mac"])
def test_rewrites_never_unite_values_of_different_types(source: str) -> None:
    """Every e-node of an e-class has the class's type. A rule's operator whose result type the
    rule leaves implicit computes the type :func:`rewrite._dtype` infers (a dot of s8 operands:
    s8); an e-node with another result type (HLO's s8 x s8 -> s32 dot) is not a match. Before,
    the s8 instantiation of ``dot(a, b) => transpose(dot(b, a))`` matched the s32 dot and united
    it with an s8 value (found by compiling random graphs: the tiling then indexed past a byte
    view)."""
    from semantics.hlo_parser import parse_hlo

    acc = load_target("gemmini")
    g = parse_hlo(_WIDE_DOT) if source == "wide_dot" else parse_file(PAPER / f"{source}.hlo")
    k = phase1.initialize(g)
    eg = EGraph()
    for r in k.roots:
        phase1.insert(eg, r, {})
    rules = rules_for(acc)
    isa = phase1.IsaRules(acc, rules.normalize)
    for _ in range(3):
        rules.apply(eg, eg.snapshot())
        snap = eg.snapshot()
        phase1.apply_isa_rules(eg, snap, isa.rules_for(set(snap.class_type)))
    snap = eg.snapshot()
    for c, nodes in enumerate(snap.classes):
        types = {(eg.infos[en.info].type.dtype.name, eg.infos[en.info].type.shape) for en in nodes}
        assert len(types) == 1, f"class {c}: {sorted(types)}"
