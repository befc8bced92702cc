"""The search: a demand-driven, buffer-guided branch and bound over instruction α that finds a
pii graph with the identity instructions slice^H and concat^H (seed 000 §5.2.3, Fig. 36).

Identity instructions do not change the memory state; they name a data slice of another value
(slice^H) or a value made of adjacent data slices (concat^H), which lets instructions with small
fixed-size operands (a 16 x 64-byte tile, a 64-byte vector register) compute a kernel whose
tensors are larger, or laid out differently, than any single instruction's operand. The search
finds such pii graphs top-down, guided by the buffers (the shape of Fig. 37's extraction), when
the e-graph of phases M1-M3 has none: Act's completeness fallback (§4.2.3).

What belongs here: :class:`Tiler` (demands, their memo and cycles, the branch and bound over α,
HBM leaves and concat^H pieces, building the pii graph) and its result records (:class:`Way`,
:class:`Operand`). What a demand is (:mod:`.views`), how a pattern meets it (:mod:`.matching`),
the per-target tables (:mod:`.tops`), what is pruned (:mod:`.prune`) and when a result is moved
(:mod:`.moved`) are each in their own module; :class:`Tiler` takes the last two as base classes.

A demand in HBM is met by a flattened input at a fixed offset (slice^H of an input: no
instruction), by a constant (the constant section), by an instruction writing HBM, or by
concat^H of equal pieces, each demanded on its own and written at its place (output tiling: a
piece that is an input's bytes is copied there, a constant piece is the constant section at
that place). A concatenate is a gather where its operands read one base (or constants); where
they read several, a demand on bytes of one operand is that operand's demand
(:meth:`Tiler._resolve`), and one on bytes of several is met by concat^H pieces only. α values
are drawn from the description's domains restricted to the kernel's dimensions and their
multiples and divisors by 2 and 4 (as for the e-graph's IR-to-ISA rules). Nothing here names a
target.

An α is tried only if its own cycles are below the best way found so far for the demand. Two
exact shortcuts keep the search small: a value none of whose forms is an operator of some
instruction's semantics (nor has operands that are such values) is not searched for
(:meth:`~.prune.Pruning._ok`), and a demand that is another's bytes moved takes that one's
result moved (:mod:`.moved`). Both are exact while the search stays within its work bounds
(``MAX_TRIES``, ``MAX_DEMANDS``); past them, which searches are cut short depends on how many
tries were made, moved or not (a moved result is never cut).

Lifetimes: the target's patterns and tables live in its
:class:`~compilers.act.context.TargetContext` (:class:`~.tops.TargetTiling`); everything a
search keeps lives on its :class:`Tiler`, one per compile, which adds the seconds it spends
generating g_θ(α) to its :class:`~compilers.act.context.CompileContext` (timer ``"gen"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from semantics.dtypes import U8
from semantics.ir import Literal
from semantics.types import TensorType

from ....errors import CompileError, Reason
from ....isa import HBM, Accelerator
from ...context import CompileContext, TargetContext
from ...egraph.terms import Term
from .. import IsaRule, IsaRules, PiiGraph, PiiNode
from .forms import Forms
from .matching import Matcher
from .moved import MovedSearch, ShiftMemos
from .prune import PruneMemos, Pruning
from .tops import TargetTiling
from .views import View, _count_nonzero, _nz, nbytes

__all__ = ["Tiler", "Way", "Operand"]


class Operand(NamedTuple):
    """One input of an instruction in a :class:`Way`: its demand, the buffer it is demanded in,
    and the slice shape its reader takes (None in HBM)."""

    demand: View
    buffer: str
    shape: tuple | None


@dataclass(slots=True)
class Way:
    """The cheapest way found to produce a demand: ``kind`` "input" (bytes of input
    ``input_index`` at ``offset``), "const" (``data``), "pii" (instruction ``instr`` at ``alpha``
    with its ``operands``) or "concat" (``pieces``); ``cost`` in cycles (+1 per instruction)."""

    cost: float
    kind: str                                        # input | const | pii | concat
    instr: str = ""
    alpha: tuple[tuple[str, int], ...] = ()
    operands: tuple[Operand | None, ...] = ()        # per input (None: not read)
    input_index: int = -1
    offset: int = 0
    data: bytes = b""
    pieces: tuple[View, ...] = ()
    level: int = 0                                   # staging depth its operands were found at


@dataclass(slots=True)
class _Search:
    """One search's demands: their results, which are being searched, and (for :mod:`.moved`)
    the shifts each result holds for."""

    memo: dict[tuple, Way | None] = field(default_factory=dict)
    active: dict[tuple, int] = field(default_factory=dict)   # demands being produced: depth
    #: the shallowest active demand a lookup met below the current one (a result that met
    #: only the current demand itself does not depend on what else is active: memoized)
    low: float = math.inf
    #: per memoized demand, per kernel input its search read, the shifts of that input over
    #: which the search is the same (see Tiler._shift_key)
    span: dict[tuple, dict[Term, tuple[float, float]]] = field(default_factory=dict)
    span_now: dict[Term, list[float]] | None = None  # the current search's, narrowing
    shifted: dict[tuple, list[tuple[Any, int, dict[Term, tuple[float, float]]]]] = field(default_factory=dict)
    shifting: bool = True


class _OutOfBounds(Exception):
    """Building the pii graph met a demand whose search ran past the work bounds."""


class Tiler(Pruning, MovedSearch):
    """Demand-driven pii-graph search over slice^H / concat^H for one kernel and accelerator."""

    MAX_DEMANDS = 20000
    #: α tried against demands, at most: a work bound (not a clock: the same kernel always gets
    #: the same answer). The paper's AMX kernels take 258-1,219 and K1 at 48 x 48 1,514; a 4-node
    #: random kernel whose output equals an input ran ~1,000 a second for minutes without it.
    MAX_TRIES = 20000

    def __init__(self, acc: Accelerator, dims: set[int], identity: Any, inputs: list[TensorType],
                 forms: Forms | None = None, isa: IsaRules | None = None, gate: Any = None, *,
                 ctx: CompileContext | None = None) -> None:
        """``isa``: phase 1's IR-to-ISA rules, whose normalized patterns the search reads where
        normalization changes an instruction's tops (:func:`~.tops.alpha_tables`); ``gate``: the
        proof gate that normalization may prove with (its time is not generation time);
        ``ctx``: the compile's context (one is made where none is given), whose timer ``"gen"``
        gets the seconds spent generating g_θ(α)."""
        if ctx is None:
            ctx = CompileContext(TargetContext.of(acc))
        elif ctx.target.acc is not acc:
            raise CompileError(f"tiling.Tiler: the compile context is for {ctx.target.acc.name}, not {acc.name}")
        self.acc = acc
        self.ctx = ctx
        if ctx.tries is not None:       # this compile's own bound on tries (the partitioner's regions)
            self.MAX_TRIES = ctx.tries
        self.target = TargetTiling.of(ctx.target)
        self.target.trim()
        self.gate = gate
        self.forms = forms or Forms()
        self.m = Matcher(self.target.views, identity, self.forms)
        self.inputs = inputs
        doms = set(dims) | {d * k for d in dims for k in (2, 4)} | {d // k for d in dims for k in (2, 4) if d % k == 0}
        self.tables = self.target.tables(doms, isa, gate, ctx)
        self.s = _Search()
        self.prune = PruneMemos()
        self.shift_memos = ShiftMemos()
        self.demands = 0
        self.staging = 0
        self.root_keys: set[tuple] = set()
        self._roots_cache: set = set()
        self._roots_seen = 0
        self.reason: Reason | None = None   # why build() found nothing, where it knows better than the e-graph
        self.tries = 0

    def _rule(self, ins: Any, alpha: dict[str, int]) -> IsaRule | None:
        """g_θ(α) as this search reads it (normalized or not: :func:`~.tops.alpha_tables`)."""
        return self.target.rule(ins, alpha, self.tables.normed.get(ins.name), self.gate, self.ctx)

    def _cost(self, r: IsaRule) -> float:
        return self.target.cost(r)

    def produce(self, dem: View, buf: str, part: bool = False, root: bool = False,
                shape: tuple | None = None) -> Way | None:
        """The cheapest way found to have ``dem`` in ``buf``; ``part``: a piece of a concat^H
        (written in place, not a new staging area); ``root``: a kernel output, which the program
        must write at its place (an input's own bytes do not serve); ``shape``: the slice shape
        the reader takes it as, in a buffer other than HBM (a value written as 4 x 1 is not
        one read as 1 x 4 in a [rows, 16] scratchpad, though its bytes are the same)."""
        dem = self._resolve(dem, buf)
        key = (buf, dem.key, self.staging > 0, part, root, shape)
        if key in self.s.memo:
            self._meet(self.s.span.get(key))
            return self.s.memo[key]
        depth = self.s.active.get(key)
        if depth is not None:
            self.s.low = min(self.s.low, depth)    # a cycle: this way does not produce it
            return None
        self.demands += 1
        if self.demands > self.MAX_DEMANDS:
            self.s.span_now = None
            return None
        shift = self._shift_key(dem, key) if self.s.shifting else None
        if shift is not None:
            for opt, at, rec in self.s.shifted.get(shift.key, ()):
                hit = self._moved_from(dem.base, shift.first - at, opt, rec)   # type: ignore[arg-type]
                if hit is not None:     # the same search, moved
                    best, span = hit
                    if self.CHECK_MOVED:
                        self._check_moved(key, dem, buf, part, root, best, shape)
                    self.s.memo[key] = best
                    self.s.span[key] = span
                    self._meet(span)
                    return best
        depth = self.s.active[key] = len(self.s.active)
        outer_low, self.s.low = self.s.low, math.inf
        outer_span = self.s.span_now
        self.s.span_now = {} if shift is None or shift.inside is None else {dem.base: list(shift.inside)}  # type: ignore[dict-item]
        best = self._produce(dem, buf, part, root, shape)
        # memoized unless it met a demand still active above this one (then it may be found
        # another way once that one is done); meeting itself does not count: every
        # instruction costs > 0, so a way through the demand itself is never the cheapest
        canonical = self.s.low >= depth
        if canonical or best is not None:
            self.s.memo[key] = best
        span = self.s.span_now
        if not canonical or self.tries > self.MAX_TRIES or self.demands > self.MAX_DEMANDS:
            span = None
        if span is not None:
            rec = {i: (r[0], r[1]) for i, r in span.items()}
            self.s.span[key] = rec
            if shift is not None:
                self.s.shifted.setdefault(shift.key, []).append((best, shift.first, rec))
        self.s.span_now = outer_span
        self._meet(span)
        self.s.low = min(outer_low, self.s.low if self.s.low < depth else math.inf)
        del self.s.active[key]
        return best

    def _resolve(self, dem: View, buf: str) -> View:
        """A demand on a concatenate's bytes that all come from one operand (or are constants)
        is that operand's view: the same bytes, another base (concat^H read backwards). One
        that reads several operands stays as it is: it is split into pieces (:meth:`_produce_any`).
        A demand on a value that has a form of an input's layout, or in HBM of constant bytes,
        is that form's (:meth:`Forms.leaf_view`)."""
        base = dem.base
        while self._is_concat(base):
            on = dem.idx >= 0
            at = dem.idx[on]
            touched = None
            for pc in self.forms.view_of.concat_pieces(base):
                codes = pc.idx[at]
                if pc.base is None or not _nz(codes >= 0):
                    continue        # not read, or constant bytes only
                if touched is not None and touched is not pc.base:
                    return dem
                touched = pc.base
            _, img = self.forms.view_of.concat_image(base)
            idx = dem.idx.copy()
            idx[on] = img[at]
            dem = View(touched, idx)
            base = touched
        if base is None or base.info is None or base.info.kind != "op":
            return dem
        return self.forms.leaf_view(dem, buf == HBM) or dem

    @staticmethod
    def _is_concat(t: Term | None) -> bool:
        return t is not None and t.info is not None and t.info.kind == "op" and t.info.name == "concatenate"

    def _produce(self, dem: View, buf: str, part: bool, root: bool = False, shape: tuple | None = None) -> Way | None:
        if not dem.any_defined:
            return None
        cands: list[Way] = []
        staged = False
        if buf == HBM:
            leaf = self._leaf(dem)
            if leaf is not None and not ((root or part) and leaf.kind == "input"):
                return leaf         # (an output, or a piece of one, is written at its place)
            if (not part and dem.base is not None and dem.base.info is not None and dem.base.info.kind == "op"
                    and dem.base in self._root_bases()):
                # whether it is an output depends on where it lies: not movable (a value no
                # output is a view of is none wherever it lies)
                self._meet(None)
            if not part and not root and dem.key not in self.root_keys:
                # an intermediate in HBM only to re-lay out kernel inputs (staging: a whole region,
                # one level deep); computed values are not spilled and reloaded
                base = dem.base
                if (base is None or base.info is None or base.info.kind != "input" or self.staging
                        or not dem.defined.all()):
                    return None
                staged = True
                self.staging += 1
        try:
            return self._produce_any(dem, buf, cands, part, shape)
        finally:
            if staged:
                self.staging -= 1

    def _produce_any(self, dem: View, buf: str, cands: list[Way], part: bool = False,
                     shape: tuple | None = None) -> Way | None:
        n = len(dem)
        base = dem.base
        bkind = "const" if base is None else ("op" if base.info is not None and base.info.kind == "op" else "input")
        bases = self.prune.bases.get(base)       # a function of the base: the same for every demand on it
        if bases is None:
            bases = self.prune.bases[base] = [base] + self.forms.bases(dem)
        computable = not (bkind == "op" and _nz(dem.idx >= 0)) or any(self._ok(b) for b in bases)  # type: ignore[arg-type]
        if not computable and not (self._is_concat(base) and buf == HBM and not part):
            return None     # (a concatenate of several operands' bytes: concat^H pieces below)
        bound = math.inf
        fkey = (buf, n, base)
        first = self.prune.first.get(fkey) if computable else []
        if first is None:
            names = self.tables.names_out.get((buf, n))
            if names is None:       # the instructions with an α of this output, in description order
                names = self.tables.names_out[(buf, n)] = list(dict.fromkeys(i.name for i, _ in self.tables.by_out.get((buf, n), ())))
            # the instruction's tops (one α per combination of its value attributes): a move is
            # let through here (a strided store's other α have a select or dynamic-update-slice
            # top); each α is tested below.
            # _may_match is a function of the top and the base: decided once per base
            first = self.prune.first[fkey] = [name for name in names if any(
                self._may_match(t, bkind, b, moves=False, out=buf) for t in self.tables.tops[name] for b in bases)]
        for name in first:
            ins = self.acc.instructions[name]
            rs = self._consistent(ins, buf, n, dem, bound, lambda tops, name=name: self._top_mask(
                (name, buf, n, base), tops, bkind, bases))
            dead, tests = self._dead_loads(ins, buf, n, dem, rs)
            for k, (r, gone) in enumerate(zip(rs, dead, strict=True)):
                if shape is not None and tuple(r.out_type.shape) != shape:
                    continue        # another slice shape (a function of α alone: no bounds test)
                if tests is not None:
                    if self._cost(r) >= bound:
                        continue        # not tried, whatever its bounds test says (as in _try)
                    test = tests[k]
                    if test is not None:
                        self._bounds(base, *test)   # type: ignore[arg-type]
                if gone:
                    continue
                # branch and bound: an α is tried only if it could cost less than the best found
                # so far (operands cost >= 0; at equal cost the earlier candidate is kept anyway)
                opt = self._try(r, dem, bound)
                if opt is not None:
                    cands.append(opt)
                    bound = min(bound, opt.cost)
        if buf == HBM and not part:             # concat^H is not nested: a piece is not split
            bound = min((o.cost for o in cands), default=math.inf)
            for s in self.tables.piece_sizes:
                if s >= n or n % s:
                    continue
                pieces = tuple(View(dem.base, dem.idx[i:i + s]) for i in range(0, n, s))
                if sum(1 for pc in pieces if pc.any_defined) * self.tables.min_store >= bound:
                    continue                     # branch and bound: more pieces than the best costs
                total = 0.0
                for pc in pieces:
                    if not pc.any_defined:
                        continue
                    o = self.produce(pc, HBM, part=True)
                    if o is None or o.kind == "input":   # pieces are written next to each other
                        total = math.inf
                        break
                    total += o.cost
                if total < math.inf:
                    cands.append(Way(total, "concat", pieces=pieces))
                    break                        # the largest pieces that work: fewest stores
        if not cands:
            return None
        best = min(cands, key=lambda o: (o.cost, o.kind != "pii"))
        best.level = self.staging
        return best

    def _root_bases(self) -> set:
        if self._roots_seen != len(self.root_keys):
            self._roots_cache = {k[0] for k in self.root_keys}
            self._roots_seen = len(self.root_keys)
        return self._roots_cache

    def _leaf(self, dem: View) -> Way | None:
        d = dem.idx
        want = dem.defined
        dw = d[want]
        if not _count_nonzero(dw >= 0):            # constant bytes: the constant section
            data = np.where(want, -1 - d, 0).astype(np.uint8).tobytes()
            return Way(0.0, "const", data=data)
        base = dem.base
        if base is None or base.info is None or base.info.kind != "input" or _count_nonzero(dw < 0):
            return None
        off = dw - np.flatnonzero(want)
        if _count_nonzero(off != off[0]):
            return None
        o = int(off[0])
        size = nbytes(base.type)
        self._bounds(base, o, len(dem), size)
        if o < 0 or o + len(dem) > size:
            return None
        return Way(0.0, "input", input_index=int(base.info.name), offset=o)

    def _try(self, r: IsaRule, dem: View, bound: float = math.inf) -> Way | None:
        """The cheapest way found to compute ``dem`` with g_θ(α) of ``r`` that costs less than
        ``bound`` (None if there is none)."""
        cost = self._cost(r)
        if cost >= bound:
            return None
        self.tries += 1
        if self.tries > self.MAX_TRIES:
            return None
        best: Way | None = None
        for b in self.m.match(r.pattern, dem, {}):
            ops: list[Operand | None] = []
            total = cost
            for i, (spec, t) in enumerate(zip(r.instr.inputs, r.in_types, strict=True)):
                v = b.get(i)
                if v is None or not v.any_defined:
                    ops.append(None)
                    continue
                if len(v) != nbytes(t):
                    total = math.inf
                    break
                shp = None if spec.buffer == HBM else tuple(t.shape)
                o = self.produce(v, spec.buffer, shape=shp)
                if o is None:
                    total = math.inf
                    break
                total += o.cost
                ops.append(Operand(v, spec.buffer, shp))
                if total >= bound:
                    break
            if total < bound:
                best = Way(total, "pii", r.instr.name, r.alpha, tuple(ops))
                bound = total
        return best

    # --- building the pii graph -----------------------------------------------------------------

    def build(self, roots: list[View]) -> PiiGraph | None:
        g = PiiGraph()
        memo: dict[tuple, int] = {}

        def node(dem: View, buf: str, fresh: bool = False, part: bool = False, root: bool = False,
                 shape: tuple | None = None) -> int:
            key = (buf, dem.key, self.staging > 0, part, shape)
            if not fresh and key in memo:
                return memo[key]
            opt = self.produce(dem, buf, part, root, shape)
            if opt is None:
                # an operand of a moved result, searched only now, past the work bounds (below
                # them its search is the moved one's, which found it)
                raise _OutOfBounds
            saved, self.staging = self.staging, opt.level
            try:
                v = _make(dem, opt)
            finally:
                self.staging = saved
            if not fresh:
                memo[key] = v
            return v

        def _make(dem: View, opt: Way) -> int:
            if opt.kind == "input":
                n = PiiNode(len(g.nodes), "input", input_index=opt.input_index,
                            type=TensorType(U8, (len(dem),)), offset=opt.offset)
            elif opt.kind == "const":
                lit = Literal(U8, (len(opt.data),), opt.data)
                n = PiiNode(len(g.nodes), "const", literal=lit, type=TensorType(U8, (len(opt.data),)))
            elif opt.kind == "concat":
                kids, offs = [], []
                at = 0
                for pc in opt.pieces:
                    if pc.any_defined:      # each piece written at its place: equal pieces are two writes
                        kids.append(node(pc, HBM, fresh=True, part=True))
                        offs.append(at)
                    at += len(pc)
                n = PiiNode(len(g.nodes), "concat", buffer=HBM, type=TensorType(U8, (len(dem),)),
                            operands=tuple(kids), offsets=tuple(offs))
            else:
                ins = self.acc.instructions[opt.instr]
                ops: list[int | None] = []
                for i, o in enumerate(opt.operands):
                    if o is None:
                        ops.append(None)
                        continue
                    # an operand the instruction overwrites in place is not shared
                    inplace = ins.inputs[i] == ins.output
                    ops.append(node(o.demand, o.buffer, fresh=inplace, shape=o.shape))
                rule = self._rule(ins, dict(opt.alpha))
                assert rule is not None
                n = PiiNode(len(g.nodes), "pii", opt.instr, opt.alpha, ins.output.buffer, rule.out_type,
                            tuple(ops))
            g.nodes.append(n)
            return n.id

        try:
            self.root_keys |= {r.key for r in roots}
            # a root on an input would make a demand's search depend on where it lies
            self.s.shifting = not any(r.base is not None and r.base.info is not None
                                      and r.base.info.kind == "input" for r in roots)
            for i, r in enumerate(roots):
                if self.produce(r, HBM, root=True) is None:
                    leaf = self._leaf(r)
                    if self.tries > self.MAX_TRIES or self.demands > self.MAX_DEMANDS:
                        self.reason = Reason(f"no program found for output {i} within the tiling search's bounds "
                                             f"({self.MAX_TRIES:,} instruction tries, {self.MAX_DEMANDS:,} demands)")
                    elif (r.base is not None and r.base.info is not None and r.base.info.kind == "op"
                          and (u := self.uncomputed(r.base)) is not None):
                        self.reason = Reason.no_instruction(u.info.name, u.type.dtype.name,  # type: ignore[union-attr]
                                                            u.type.shape, needed_by=i)
                    elif leaf is not None and leaf.kind == "input":
                        self.reason = Reason(f"output {i} is the bytes of input {leaf.input_index} (at offset "
                                             f"{leaf.offset}) and no instruction sequence writes them to the output")
                    return None
            try:
                for r in roots:     # each output its own node, written at its place
                    g.roots.append(node(r, HBM, fresh=True, root=True))
            except _OutOfBounds:
                self.reason = Reason(f"no program found within the tiling search's bounds ({self.MAX_TRIES:,} "
                                     f"instruction tries, {self.MAX_DEMANDS:,} demands)")
                return None
            return g
        finally:
            node = _make = None     # type: ignore[assignment]  # mutually recursive closures: break the cycle
