"""Moved demands: a demand that is another's bytes moved takes that one's result moved, where the
search would repeat step for step.

What belongs here: :class:`MovedSearch`, the part of :class:`~.search.Tiler` that decides when a
search's result serves a moved demand -- on a kernel input, within the shifts over which every
bounds test of the first search comes out the same (:meth:`MovedSearch._bounds`); on a computed
value, where in addition every kernel view the matcher can read below it moves uniformly, one
shift per term (:meth:`MovedSearch._shifts`: K5's output rows after the first) -- and the pure
functions it rests on (:func:`moved`, :func:`uniform`, :func:`way_key`). Exact within the
search's work bounds; ``Tiler.CHECK_MOVED`` runs the real search beside each moved result (tests).

The kernel operands :meth:`MovedSearch._links_of` moves a demand through are those
:meth:`~.matching.Matcher._op` gathers from (elementwise operators: element i of every operand;
a matrix-product dot: rows of the left operand, columns of the right one): a new branch there
needs its line here (``tests/compilers/test_act_amx.py::test_moved_searches_keep_the_program_on_layout_chains``
and ``test_a_moved_search_gives_the_program_a_full_search_gives`` compare moved results with
the searches they stand for).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...egraph.terms import Term
from .matching import gathers_elementwise, is_mm
from .views import View, _nz, nbytes

if TYPE_CHECKING:
    from .search import Way

__all__ = ["MovedSearch", "ShiftKey", "ShiftMemos", "moved", "uniform", "way_key"]


class _Unmovable(Exception):
    """A result holds a view of a term :meth:`MovedSearch._shifts` gives no shift."""


def moved(opt: Way | None, sig: dict[Term, int], base: Term) -> Way | None:
    """``opt`` for the same demand moved: each view's bytes of a term t by ``sig[t]`` (``base``:
    the demand's, an input's offset for a leaf)."""
    if opt is None or opt.kind == "const" or not any(sig.values()):
        return opt

    def mv(v: View) -> View:
        if v.base is None:
            return v
        s = sig.get(v.base)
        if s is None:
            raise _Unmovable
        return v if s == 0 else View(v.base, np.where(v.idx >= 0, v.idx + s, v.idx))

    if opt.kind == "input":
        return replace(opt, offset=opt.offset + sig[base])
    if opt.kind == "concat":
        return replace(opt, pieces=tuple(mv(p) for p in opt.pieces))
    return replace(opt, operands=tuple(None if o is None else o._replace(demand=mv(o.demand)) for o in opt.operands))


def uniform(idx: np.ndarray, sh: int) -> tuple[bool, int | None]:
    """Whether byte p + sh of a view is byte q + s of its base wherever byte p is byte q, one
    s for all p (constant and don't-care bytes the same at p + sh as at p), over the p with
    both p and p + sh in the view; and that s (None: no base byte there)."""
    n = len(idx)
    if sh >= 0:
        a, b = idx[:max(n - sh, 0)], idx[min(sh, n):]
    else:
        a, b = idx[-sh:], idx[:max(n + sh, 0)]
    pos = a >= 0
    if _nz(pos != (b >= 0)) or _nz((a != b) & ~pos):
        return False, None
    if not _nz(pos):
        return True, None
    diff = b[pos] - a[pos]
    s = int(diff[0])
    if _nz(diff != s):
        return False, None
    return True, s


def way_key(o: Way | None) -> tuple | None:
    """A result as plain values (views as their base and bytes), for comparing two."""
    if o is None:
        return None

    def vk(v: View) -> tuple:
        return (v.base, v.idx.tobytes())

    return (o.cost, o.kind, o.instr, o.alpha, o.input_index, o.offset, o.data, o.level,
            tuple(None if x is None else (vk(x[0]), *x[1:]) for x in o.operands), tuple(vk(p) for p in o.pieces))


class ShiftKey(NamedTuple):
    """A demand as its searches are shared between shifts (:meth:`MovedSearch._shift_key`)."""

    key: tuple                          # the demand's key with its bytes relative to ``first``
    first: int                          # its first base byte
    inside: tuple[int, int] | None      # for an input, the shifts that keep its bytes inside it


@dataclass(slots=True)
class ShiftMemos:
    """One search's memos of :meth:`MovedSearch._shifts` and :meth:`MovedSearch._links`."""

    sigmas: dict[tuple, dict[Term, int] | None] = field(default_factory=dict)   # (base, shift)
    links: dict[tuple, list[tuple[Term, int]] | None] = field(default_factory=dict)   # (term, shift)


class MovedSearch:
    """The moved-demand part of :class:`~.search.Tiler` (a base class of it: it reads the
    tiler's search state ``s``, its ``forms`` and matcher ``m``, its ``shift_memos``, and calls its
    ``_produce``)."""

    # --- the same search elsewhere in its base ----------------------------------------------
    #
    # A demand whose base is a kernel input is searched the same way wherever its bytes lie in
    # the input, except where an operand would read past the input's ends (a leaf, a load). So
    # each search records, per input it read, the range of shifts of that input over which
    # every one of those bounds tests, in it and in the searches it used, comes out the same; a
    # demand that is the same bytes moved by d within that range gets the same result, moved
    # (the staging of a re-laid-out input: one 64-byte piece searched, the other 31 moved).
    #
    # A demand on a computed value moved by d bytes is searched the same way where every
    # kernel view the matcher reads below it moves uniformly (:meth:`_shifts`: each term it
    # can reach gets one shift, e.g. a row of f32[3,16] moves its row of the input A and none of
    # a broadcast vector B), the inputs' shifts lie within the ranges its search recorded, and
    # nothing in it asked whether a demand is a kernel output (:meth:`_produce`): then each of
    # its steps, and each of its sub-searches, is the original one moved (K5's output rows:
    # row 0 searched, rows 1 and 2 moved).

    #: tests set this: every moved result is compared with the search it stands for (meaningful
    #: well within the work bounds: the check's own searches count against them)
    CHECK_MOVED = False

    def _shift_key(self, dem: View, key: tuple) -> ShiftKey | None:
        """The demand relative to its first base byte (:class:`ShiftKey`) for a demand on a
        kernel input or a computed value, else None."""
        base = dem.base
        if base is None or base.info is None or base.info.kind not in ("input", "op"):
            return None
        d = dem.idx
        on = d >= 0
        if not _nz(on):
            return None
        lo, hi = int(d[on].min()), int(d[on].max())
        rel = np.where(on, d - lo, d)
        inside = (-lo, nbytes(base.type) - 1 - hi) if base.info.kind == "input" else None
        return ShiftKey((key[0], base, rel.tobytes(), *key[2:]), lo, inside)

    def _moved_from(self, base: Term, d: int, opt: Way | None,
                    rec: dict[Term, tuple[float, float]]) -> tuple[Way | None, dict] | None:
        """The result ``opt`` of a search of the same demand ``d`` bytes earlier in ``base``,
        moved, with its record of shifts; None where the search might differ here."""
        sig = self._shifts(base, d)
        if sig is None:
            return None
        for inp, (lo, hi) in rec.items():
            s = sig.get(inp)
            if s is None or not lo <= s <= hi:
                return None
        try:
            best = moved(opt, sig, base)
        except _Unmovable:
            return None
        return best, {inp: (lo - sig[inp], hi - sig[inp]) for inp, (lo, hi) in rec.items()}

    def _shifts(self, base: Term, d: int) -> dict[Term, int] | None:
        """For a demand on ``base`` moved by ``d`` bytes, the shift (bytes) of every term a
        search of it can read: ``base`` itself, the bases of its other forms' views (read by
        :meth:`Matcher.match`) and of its operands' kernel views (gathered by
        :meth:`Matcher._op`: an elementwise operator's operands element by element, a dot's
        rows of the left operand and columns of the right one), and on down. None unless each
        such view moves uniformly: byte p + s of the view is byte q + t of its base wherever
        byte p is byte q (constant and don't-care bytes staying the same), one t per term."""
        key = (base, d)
        if key in self.shift_memos.sigmas:
            return self.shift_memos.sigmas[key]
        out: dict[Term, int] | None = {base: d}
        if base.info is not None and base.info.kind == "op":
            out = self._shifts_of(base, d)
        self.shift_memos.sigmas[key] = out
        return out

    def _shifts_of(self, base: Term, d: int) -> dict[Term, int] | None:
        sig: dict[Term, int] = {base: d}
        todo = [base]
        while todo:
            t = todo.pop()
            links = self._links(t, sig[t])
            if links is None:
                return None
            for vb, s in links:
                prev = sig.get(vb)
                if prev is None:
                    sig[vb] = s
                    todo.append(vb)
                elif prev != s:
                    return None         # one term reached with two shifts
        return sig

    def _links(self, t: Term, dt: int) -> list[tuple[Term, int]] | None:
        """The (base, shift) of each view a search reads below a demand on ``t`` moved by ``dt``
        bytes (:meth:`_shifts`), once per (term, shift); None where one does not move uniformly."""
        key = (t, dt)
        if key in self.shift_memos.links:
            return self.shift_memos.links[key]
        out: list[tuple[Term, int]] | None = []
        if t.info is not None and t.info.kind == "op":      # else an input (its bounds tests are the ranges) or a literal
            out = self._links_of(t, dt)
        self.shift_memos.links[key] = out
        return out

    def _links_of(self, t: Term, dt: int) -> list[tuple[Term, int]] | None:
        nb = t.type.dtype.nbytes
        if dt % nb:
            return None     # not whole elements: _elements reads element boundaries
        k = dt // nb
        views: list[tuple[View, int]] = [(av, dt) for av in self.forms._base_form_views(t)]
        name = t.info.name  # type: ignore[union-attr]
        if gathers_elementwise(t):
            views += [(self.m.kernel_view(c), k * c.type.dtype.nbytes) for c in t.children]
        elif name == "dot" and is_mm(t):
            n_cols, n_k = t.type.shape[1], t.children[0].type.shape[1]
            if k % n_cols:
                return None         # not whole rows: the columns read would change
            a, b = t.children
            views += [(self.m.kernel_view(a), (k // n_cols) * n_k * a.type.dtype.nbytes),
                      (self.m.kernel_view(b), 0)]
        out = []
        for v, sh in views:
            ok, s = uniform(v.idx, sh) if not v.identity else (True, sh if abs(sh) < len(v) else None)
            if not ok:
                return None
            if s is not None and v.base is not None:    # else no base byte where it can move
                out.append((v.base, s))
        return out

    def _check_moved(self, key: tuple, dem: View, buf: str, part: bool, root: bool, moved: Way | None,
                     shape: tuple | None = None) -> None:
        """CHECK_MOVED: the search ``moved`` stands for, run; an AssertionError if it differs."""
        outer_span, outer_low = self.s.span_now, self.s.low
        self.s.active[key] = len(self.s.active)
        self.s.span_now, self.s.low = None, math.inf
        try:
            real = self._produce(dem, buf, part, root, shape)
        finally:
            del self.s.active[key]
            self.s.span_now, self.s.low = outer_span, outer_low
        if way_key(real) != way_key(moved):
            raise AssertionError(f"moved search differs for {buf} demand on {dem.base}: {real} != {moved}")

    def _meet(self, span: dict[Term, tuple[float, float]] | None) -> None:
        """Narrows the current search's ranges of shifts to ``span``'s (None: not movable)."""
        now = self.s.span_now
        if now is None:
            return
        if span is None:
            self.s.span_now = None
            return
        for inp, (lo, hi) in span.items():
            cur = now.get(inp)
            if cur is None:
                now[inp] = [lo, hi]
            else:
                cur[0] = max(cur[0], lo)
                cur[1] = min(cur[1], hi)

    def _bounds(self, inp: Term, o: Any, length: Any, size: int) -> None:
        """Records a bounds test: ``length`` bytes read at offset ``o`` of the input ``inp`` of
        ``size`` bytes (arrays: one test each). Its outcome is the same for the shifts d with
        o + d >= 0 and o + d + length <= size where it passes, and for those on the same side
        where it fails (never, where length > size)."""
        if self.s.span_now is None:
            return
        now = self.s.span_now.setdefault(inp, [-math.inf, math.inf])
        o = np.atleast_1d(np.asarray(o, dtype=np.int64))
        length = np.broadcast_to(np.asarray(length, dtype=np.int64), o.shape)
        fits = length <= size
        below = fits & (o < 0)
        above = fits & (o + length > size)
        ok = fits & ~below & ~above
        if _nz(ok):
            now[0] = max(now[0], float((-o[ok]).max()))
            now[1] = min(now[1], float((size - length[ok] - o[ok]).min()))
        if _nz(below):
            now[1] = min(now[1], float((-o[below] - 1).min()))
        if _nz(above):
            now[0] = max(now[0], float((size - length[above] - o[above] + 1).max()))
