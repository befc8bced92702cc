"""Instruction tops: what each instruction's g_θ(α) computes below its layout chain, and the
per-target tables the search reads them from.

What belongs here: :class:`Top` (a pattern's top: a constant, a parameter in a buffer, or an
operator with its dtype, contraction size and operand tops) and what is decided from tops alone
(:func:`meets`, :func:`may_be_constant`, :func:`through_zero`, :func:`sizeless`);
:class:`TargetTiling`, the tiling's caches for one target description (its g_θ(α) patterns, their
byte views and tops, the α tables per dimension set), kept in the description's
:class:`~compilers.act.context.TargetContext`; :func:`alpha_tables` (per instruction its α
candidates by output, its tops, per buffer the tops of its writers). The search itself
(:mod:`.search`) and what it decides per demand (:mod:`.prune`) are elsewhere.

Patterns come from phase 1 (:class:`~compilers.act.phase1.IsaRules`), lowered and, where that
changes an instruction's tops, normalized by phase 1's proven rules; the time spent generating
them is generation time, which :meth:`TargetTiling.rule` adds to the compile's
:class:`~compilers.act.context.CompileContext` (timer ``"gen"``), less what the proof gate spent.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from semantics.dtypes import DType

from ....isa import HBM, Accelerator
from ...context import CompileContext, TargetContext
from ...egraph.terms import ELEMENTWISE, Term
from .. import IsaRule, IsaRules
from .matching import DOT_AS_FMA, DOT_AS_MULTIPLY, DOT_PADDED, is_mm
from .views import Views, nbytes

__all__ = ["Top", "TargetTiling", "AlphaTables", "Stack", "Gathers", "alpha_tables", "valued", "meets",
           "meeting", "may_be_constant", "operand_tops", "through_zero", "sizeless", "MAX_VIEW_BYTES", "MAX_RULES"]

#: past these sizes (a campaign over kernels of many shapes: each new α adds its pattern and
#: its byte views, up to tens of KB each) a compile starts by emptying its target's pattern
#: caches (:meth:`TargetTiling.trim`); the 18 paper kernels together hold 45 MB of views and
#: 1,800 patterns
MAX_VIEW_BYTES = 160 << 20
MAX_RULES = 10_000


class Top(NamedTuple):
    """What a pattern computes below its layout chain. ``kind``: "const", "param" (``buffer``:
    the parameter's) or "op" (``name``, ``dtype``; ``subs``: the operand tops of an integer
    add, whose operand ``x`` may meet a demand through ``add(0, x) => x``, else (); ``k``: the
    contraction size of a matrix product, else None; ``kids``: the operand tops of an
    elementwise operator, else None; ``args``: the operand tops of a matrix product, which
    :meth:`Matcher._dot` matches one to one against the kernel product's operands, else None)."""

    kind: str
    name: str | None = None
    dtype: DType | None = None
    subs: tuple[Top, ...] = ()
    k: int | None = None
    kids: tuple[Top, ...] | None = None
    buffer: str | None = None
    args: tuple[Top, ...] | None = None


CONST = Top("const")


def top_of(pat: Term, r: IsaRule, views: Views) -> Top:
    """``pat``'s top below its layout chain (``pat``: ``r``'s pattern or a part of it)."""
    b = views(pat).base
    if b is None:
        return CONST
    if b.is_param:
        return Top("param", buffer=r.instr.inputs[b.index].buffer)
    assert b.info is not None
    subs: tuple[Top, ...] = ()
    if b.info.name == "add" and not b.type.dtype.is_float and len(b.children) == 2:
        subs = tuple(top_of(c, r, views) for c in b.children)
    mm = b.info.name == "dot" and is_mm(b)
    k = int(b.children[0].type.shape[1]) if mm else None
    kids = None
    if b.info.name in ELEMENTWISE and b.children:
        kids = subs or tuple(top_of(c, r, views) for c in b.children)
    args = tuple(top_of(c, r, views) for c in b.children) if mm else None
    return Top("op", b.info.name, b.type.dtype, subs, k, kids, args=args)


def may_be_constant(top: Top) -> bool:
    """Whether a pattern with this top can compute a demand of constant bytes
    (:meth:`Matcher.match`): its own constants, a parameter bound to them, or an elementwise
    operator mapping a constant to itself (:meth:`Matcher._fixed_point`), each of its operands
    then demanded the same constants (as through an integer add's zero identity)."""
    if top.kind != "op":
        return True
    if top.name not in ELEMENTWISE:
        return False
    kids = operand_tops(top)
    return kids is None or all(may_be_constant(k) for k in kids)


def operand_tops(top: Top) -> tuple[Top, ...] | None:
    """The operand tops an operator top states (an integer add's always; an elementwise
    operator's per α), or None."""
    return top.kids if top.kids is not None else (top.subs or None)


def through_zero(top: Top, meets_: Any) -> bool:
    """``add(0, x) => x`` on an integer add's top (its operand tops ``top.subs``; none for other
    operators): ``meets_`` one operand while the other can be zeros (:func:`may_be_constant`)."""
    subs = top.subs
    return any(meets_(subs[s]) and may_be_constant(subs[1 - s]) for s in range(len(subs)))


def sizeless(top: Top, kids: bool = True) -> Top:
    """``top`` with no contraction size, and without ``kids`` no operand tops beyond an
    integer add's: what every α of an instruction has in common (its sizes vary with α; the
    operand tops of a store into HBM do too: a strided one's top is a select or a
    dynamic-update-slice)."""
    if top.kind != "op":
        return top
    ops = tuple(sizeless(t, kids) for t in top.kids) if kids and top.kids is not None else None
    args = tuple(sizeless(t, kids) for t in top.args) if kids and top.args is not None else None
    return top._replace(subs=tuple(sizeless(t, kids) for t in top.subs), k=None, kids=ops, args=args)


def meets(top: Top, base: Term, identity: Any) -> bool:
    """Whether the pattern operator of ``top`` can meet the kernel operator of ``base`` in
    :meth:`Matcher._op`: one of :func:`meeting`'s, and for a kernel dot what each branch
    requires of it: a matrix product (:func:`is_mm`), of the same contraction size for a
    pattern dot (:meth:`Matcher._dot` takes whole contractions; the top states the size where
    it is known), of size 1 for the one-term identities (multiply, fma: f32 only), whose rule
    passes the gate (``identity``)."""
    name, bn = top.name, base.info.name  # type: ignore[union-attr]
    if name not in meeting(bn):
        return False
    if bn != "dot":
        return True
    if not is_mm(base):
        return False
    k = base.children[0].type.shape[1]
    dt = base.type.dtype.name
    if name == "dot":
        return top.k is None or top.k == k or (top.k > k and bool(identity(DOT_PADDED, dt)))
    if name == "fma":
        return k == 1 and dt == "f32" and bool(identity(DOT_AS_FMA, "f32"))
    return k == 1 and bool(identity(DOT_AS_MULTIPLY, dt))


def meeting(kernel_op: str) -> tuple[str, ...]:
    """The pattern operators that may meet a kernel operator in :meth:`Matcher._op`: itself,
    and for a dot the multiply / fma of the one-term identities."""
    return (kernel_op, "multiply", "fma") if kernel_op == "dot" else (kernel_op,)


# --- per-target tables ---------------------------------------------------------------------------

class ConstLayouts(NamedTuple):
    """The constant bytes of some rules' patterns, one row per distinct layout
    (:meth:`TargetTiling.stack`)."""

    rules: list[IsaRule]
    layouts: np.ndarray         # per distinct layout, its code in each column of ``cols`` (0: none)
    which: np.ndarray           # per rule, its row of ``layouts``
    cols: np.ndarray            # the byte columns some rule has a constant in


class Stack(NamedTuple):
    """The α of one instruction with one output (buffer, bytes), as arrays over all of them
    (:meth:`Tiler._consistent`): their constant layouts, costs and distinct tops."""

    rules: list[IsaRule]
    layouts: np.ndarray
    which: np.ndarray
    cols: np.ndarray
    costs: np.ndarray           # per rule, its cycles + 1
    top_of: np.ndarray          # per rule, its index into ``tops``
    tops: list[Top]
    has_const: np.ndarray       # per distinct layout, whether it has a constant byte


class Gathers(NamedTuple):
    """For an instruction whose every α (with one output) only moves bytes of its one HBM operand
    and constants (:meth:`Tiler._gathers`): per rule its row (``row_of``: keyed by the id of a
    rule that ``rules`` holds), the byte codes of each pattern, and each operand's size."""

    rules: list[IsaRule]
    row_of: dict[int, int]
    codes: np.ndarray
    sizes: np.ndarray


@dataclass(slots=True)
class AlphaTables:
    """What :func:`alpha_tables` computes for one target and α domain (and normalizer), with the
    memos the search fills from it (per instruction and output: :class:`Stack`, :class:`Gathers`,
    the instruction names with an α of that output)."""

    by_out: dict[tuple[str, int], list[tuple[Any, dict[str, int]]]]
    tops: dict[str, tuple[Top, ...]]
    writers: dict[str, list[Top]]
    piece_sizes: list[int]
    min_store: float
    normed: dict[str, IsaRules | None]
    stacks: dict[tuple, Stack] = field(default_factory=dict)
    gathers: dict[tuple, Gathers | None] = field(default_factory=dict)
    names_out: dict[tuple[str, int], list[str]] = field(default_factory=dict)


_OPCODE = re.compile(r"=\s*([a-z]+[0-9]*)\[[^\]]*\]\S*\s+([a-z][a-z0-9-]*)\(")


class TargetTiling:
    """The tiling's caches for one target description, shared by its compiles: g_θ(α) patterns
    (:meth:`rule`), their byte views (:attr:`views`), tops (:meth:`top`) and constant layouts
    (:meth:`stack`), each rule's cost, the α tables per dimension set (:meth:`tables`) and the
    operators of the semantics (:attr:`ops`). Made by :meth:`of`, kept in the description's
    :class:`~compilers.act.context.TargetContext` (memo ``"tiling"``). Memos keyed by a rule's
    ``id`` hold the rule; all are emptied together past :data:`MAX_VIEW_BYTES` /
    :data:`MAX_RULES` (:meth:`trim`)."""

    __slots__ = ("acc", "views", "rules", "isas", "tops", "stacks", "tables_memo", "costs", "_ops")

    def __init__(self, acc: Accelerator) -> None:
        self.acc = acc
        self.views = Views()
        #: (instruction, α, normalizer key) -> g_θ(α) (None: the α has no pattern)
        self.rules: dict[tuple, IsaRule | None] = {}
        #: normalizer key -> the normalizer first seen with it (held: a key may hold its id)
        self.isas: dict[object, IsaRules] = {}
        self.tops: dict[int, tuple[IsaRule, Top]] = {}
        self.stacks: dict[tuple[int, ...], tuple[list[IsaRule], ConstLayouts]] = {}
        self.tables_memo: dict[tuple, AlphaTables] = {}
        self.costs: dict[int, tuple[IsaRule, float]] = {}
        self._ops: frozenset[tuple[str, Any]] | None = None

    @classmethod
    def of(cls, target: TargetContext) -> TargetTiling:
        """The tiling's caches of ``target``'s description (made on first use)."""
        m = target.memo("tiling")
        hit = m.get(cls)
        if hit is None:
            hit = m[cls] = cls(target.acc)
        return hit

    def trim(self) -> None:
        """Empties the caches when they have grown past their bounds (at a compile's start)."""
        if self.views.nbytes > MAX_VIEW_BYTES or len(self.rules) > MAX_RULES:
            self.views.clear()
            for d in (self.rules, self.isas, self.tops, self.stacks, self.tables_memo, self.costs):
                d.clear()

    def rule(self, ins: Any, alpha: dict[str, int], isa: IsaRules | None = None, gate: Any = None,
             ctx: CompileContext | None = None) -> IsaRule | None:
        """g_θ(α) lowered (constants folded, no-ops removed), and normalized as phase 1's ``isa``
        normalizes its IR-to-ISA rules where given. Its time counts as generation (``ctx``'s
        timer ``"gen"``), less what the proof ``gate`` spent proving for the normalization."""
        ikey = None if isa is None else isa.key
        key = (ins.name, tuple(alpha.items()), ikey)
        try:
            return self.rules[key]
        except KeyError:
            pass
        if isa is not None:
            self.isas.setdefault(ikey, isa)
        t0 = time.perf_counter()
        p0 = gate.seconds if gate is not None else 0.0
        # without a normalizer: phase 1's rule as lowered (IsaRules keeps none of its own here)
        r = self.rules[key] = (isa if isa is not None else IsaRules(self.acc)).rule(ins, alpha)
        if ctx is not None:
            ctx.add_time("gen", time.perf_counter() - t0 - ((gate.seconds - p0) if gate is not None else 0.0))
        return r

    def top(self, r: IsaRule) -> Top:
        """What g_θ(α) computes at the top, below its layout chain."""
        hit = self.tops.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        out = top_of(r.pattern, r, self.views)
        self.tops[id(r)] = (r, out)
        return out

    def cost(self, r: IsaRule) -> float:
        """``r``'s cycles at its α, + 1 (fewer instructions break ties)."""
        hit = self.costs.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        c = float(r.instr.cost.cycles.eval(dict(r.alpha))) + 1.0
        self.costs[id(r)] = (r, c)
        return c

    def stack(self, rules: list[IsaRule], n: int) -> ConstLayouts:
        """The constant layouts of ``rules`` (patterns of ``n`` bytes) for :meth:`Tiler._consistent`."""
        key = tuple(id(r) for r in rules) + (n,)
        hit = self.stacks.get(key)
        if hit is not None and all(x is y for x, y in zip(hit[0], rules, strict=True)):
            return hit[1]
        codes = np.stack([self.views(r.pattern).idx for r in rules]) if rules else np.zeros((0, n), np.int64)
        ccols = np.flatnonzero((codes < 0).any(axis=0))     # the columns some α has a constant in
        # only the constant bytes matter here, and many α share them (a tile load's zero padding
        # depends on its rows and colsb, not its stride): one row per distinct layout
        consts = np.where(codes[:, ccols] < 0, codes[:, ccols], 0)
        ids: dict[bytes, int] = {}
        reps: list[int] = []
        which = np.zeros(len(rules), dtype=np.int64)
        for i, row in enumerate(consts):
            j = ids.setdefault(row.tobytes(), len(ids))
            if j == len(reps):
                reps.append(i)
            which[i] = j
        out = ConstLayouts(rules, consts[reps], which, ccols)
        self.stacks[key] = (list(rules), out)
        return out

    def costs_and_tops(self, rules: list[IsaRule]) -> tuple[np.ndarray, np.ndarray, list[Top]]:
        """(each rule's cost, each rule's index into the distinct tops, the distinct tops)."""
        tops: dict[Top, int] = {}
        top_of_ = np.array([tops.setdefault(self.top(r), len(tops)) for r in rules], dtype=np.int64)
        return (np.array([self.cost(r) for r in rules], dtype=np.float64), top_of_, list(tops))

    @property
    def ops(self) -> frozenset[tuple[str, Any]]:
        """(operator, result dtype) of every operator in some instruction's semantics (layout
        operators too: a pad with a computed padding value is a base of its own,
        :class:`~.views.Views`), read from the description's HLO text (α only fills in numbers,
        so no g_θ(α) names another; lowering only removes operators): a superset of the
        operators any g_θ(α) has."""
        if self._ops is None:
            from semantics.dtypes import DTYPES

            self._ops = frozenset((op, DTYPES[dt]) for ins in self.acc.instructions.values()
                                  if ins.name not in self.acc.tile_only
                                  for dt, op in _OPCODE.findall(ins.semantics)
                                  if op not in ("parameter", "constant") and dt in DTYPES)
        return self._ops

    def tables(self, doms: set[int], isa: IsaRules | None = None, gate: Any = None,
               ctx: CompileContext | None = None) -> AlphaTables:
        """:func:`alpha_tables` for the α domain ``doms``: a pure function of the description and
        the domain (and the normalizer), shared by the kernels (and the trials) with the same
        dimensions, as the IR-to-ISA rules are per target."""
        ikey = None if isa is None else isa.key
        key = (frozenset(doms), ikey)
        hit = self.tables_memo.get(key)
        if hit is None:
            if isa is not None:
                self.isas.setdefault(ikey, isa)
            hit = self.tables_memo[key] = alpha_tables(self, doms, isa, gate, ctx)
        return hit


def valued(ins: Any) -> list[str]:
    """The α attributes that are not sizes: named in no slice start or length and no register
    shape (``config``) -- ReLU, accumulate, a scale, a rounding shift: only in the semantics."""
    named: set[str] = set()
    for spec in (*ins.inputs, ins.output):
        for e in (*spec.start, *spec.length):
            named |= e.vars()
    for _, shape in ins.config:
        for e in shape:
            named |= e.vars()
    return [a for a in ins.alpha if a not in named]


def _tops_of(tt: TargetTiling, ins: Any, alphas: list[dict[str, int]], isa: IsaRules | None, gate: Any,
             kids: bool, ctx: CompileContext | None) -> tuple[Top, ...]:
    """The distinct tops of ``ins``'s g_θ(α) for ``alphas`` (sizes left out; operand tops kept
    where ``kids``), in order."""
    out: list[Top] = []
    for alpha in alphas:
        r = tt.rule(ins, alpha, isa, gate, ctx)
        if r is not None and (t := sizeless(tt.top(r), kids=kids)) not in out:
            out.append(t)
    return tuple(out)


def alpha_tables(tt: TargetTiling, doms: set[int], isa: IsaRules | None = None, gate: Any = None,
                 ctx: CompileContext | None = None) -> AlphaTables:
    """Per instruction, its α candidates over ``doms`` grouped by (output buffer, output bytes),
    computed from the slice specs alone (g_θ(α) is generated only when a demand may use it);
    each instruction's tops (the distinct tops of one α per combination of the values of its
    attributes that are not sizes, :func:`valued`); per buffer, the distinct tops of the instructions that
    write it; the HBM output sizes, largest first; the cheapest store; and per instruction,
    whether the search reads its patterns normalized (``isa``, phase 1's IR-to-ISA rules):
    where normalization changes one of those tops (a Gemmini mvin with scale 1.0 becomes a
    move, an accumulate = 0 write loses its add), else as lowered (AMX, QKV: no top changes,
    and normalizing every α the search reads would cost seconds of generation)."""
    acc = tt.acc
    gen = IsaRules(acc)
    by_out: dict[tuple[str, int], list[tuple[Any, dict[str, int]]]] = {}
    tops: dict[str, tuple[Top, ...]] = {}
    normed: dict[str, IsaRules | None] = {}
    hbm_sizes: set[int] = set()
    min_store = math.inf
    for ins in acc.instructions.values():
        if ins.name in acc.tile_only:
            continue
        vals = valued(ins)
        reps: dict[tuple, dict[str, int]] = {}
        for alpha in gen._candidates(ins, doms):
            env = dict.fromkeys(ins.beta, 0) | alpha
            try:
                nb = nbytes(acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1]))
            except Exception:  # noqa: BLE001 - an α outside the buffer is not a candidate
                continue
            if not reps and tt.rule(ins, alpha, ctx=ctx) is None:
                continue
            reps.setdefault(tuple(alpha[a] for a in vals), alpha)
            by_out.setdefault((ins.output.buffer, nb), []).append((ins, alpha))
            if ins.output.buffer == HBM:
                hbm_sizes.add(nb)
                min_store = min(min_store, float(ins.cost.cycles.eval(alpha)) + 1.0)
        if not reps:
            continue
        kids = ins.output.buffer != HBM
        plain = _tops_of(tt, ins, list(reps.values()), None, gate, kids, ctx)
        normal = _tops_of(tt, ins, list(reps.values()), isa, gate, kids, ctx) if isa is not None else plain
        normed[ins.name] = isa if normal and normal != plain else None
        tops[ins.name] = normal if normed[ins.name] is not None else plain
    writers: dict[str, list[Top]] = {}
    for (buf, _), entries in by_out.items():
        for ins, _ in entries:
            for t in tops[ins.name]:
                if t not in writers.setdefault(buf, []):
                    writers[buf].append(t)
    return AlphaTables(by_out, tops, writers, sorted(hbm_sizes, reverse=True),
                       (min_store if min_store < math.inf else 1.0), normed)
