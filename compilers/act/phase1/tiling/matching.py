"""Matching: which bindings of an instruction pattern g_θ(α)'s parameters make it compute a
demanded byte view.

What belongs here: :class:`Matcher` and :func:`match` (a pattern against a demand, byte by byte
and operator by operator), the three library identities it may use where the proof gate passes
them (:data:`DOT_AS_FMA`, :data:`DOT_AS_MULTIPLY`, :data:`DOT_PADDED`; ``add(0, x) => x`` on
integers), and the operator facts it reads of kernel terms (:func:`gathers_elementwise`,
:func:`is_mm`). Which α to try and in what order is the search's (:mod:`.search`); what a pattern
computes at its top, the tops' (:mod:`.tops`).

- a pattern position that is constant must be demanded as that constant (or not at all);
- a pattern parameter is bound to the view the demand induces on it (positions g_θ does not
  read stay "don't care"); a parameter read twice must be demanded consistently;
- a pattern operator meets the demanded base operator element by element: the demanded
  elements are gathered into each operand (elementwise operators and convert, the one set
  :data:`compilers.act.egraph.terms.ELEMENTWISE`: the same element of every operand; dot: the demanded
  rows of the left operand and columns of the right one, whole contractions).

This matcher is not the e-graph's: ``rewrite.py`` and ``isa_rules.match`` match terms against
e-classes (structure), this one matches byte views (which bytes of which base), so the two share
no code; both read the same operator table (``semantics.ops.REGISTRY``, evaluated here only to
test a constant fixed point) and the same elementwise set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from semantics.ir import Attrs
from semantics.ops import REGISTRY, Env
from semantics.types import TensorType

from ...egraph.terms import ELEMENTWISE, Term
from .forms import Forms
from .views import DC, View, Views, _count_nonzero, _nz, nbytes

__all__ = ["Bind", "Matcher", "match", "DOT_AS_FMA", "DOT_AS_MULTIPLY", "DOT_PADDED", "gathers_elementwise",
           "is_mm"]

Bind = dict[int, View]


def _merge(a: View, b: View) -> View | None:
    """The view demanding both; None when they conflict."""
    if len(a) != len(b):
        return None
    ua = a.base is not None and bool(_nz(a.idx >= 0))
    ub = b.base is not None and bool(_nz(b.idx >= 0))
    if ua and ub and a.base is not b.base and a.base != b.base:
        return None
    both = (a.idx != DC) & (b.idx != DC)
    if _nz(a.idx[both] != b.idx[both]):
        return None
    idx = np.where(a.idx != DC, a.idx, b.idx)
    return View(a.base if ua else (b.base if ub else None), idx)


class Matcher:
    """Matches instruction patterns against demanded views. ``identity(name, dtype)`` says
    whether the library rule ``name`` is proven for ``dtype`` (the gate for the two identities);
    ``forms`` gives the other forms of a kernel value (M2's proven rewrites). ``views`` gives
    the patterns' views, ``forms.view_of`` the kernel terms'."""

    def __init__(self, views: Views, identity: Any, forms: Forms | None = None) -> None:
        self.view_of = views
        self.identity = identity
        self.forms = forms or Forms()
        self.kernel_view = self.forms.view_of
        self._memo: dict[tuple, list[Bind]] = {}

    def match(self, pat: Term, dem: View, bind: Bind) -> Iterator[Bind]:
        """The bindings (each a new dict, never written after) under which ``pat`` computes
        ``dem``, extending ``bind``. A pure function of its arguments for one matcher (its views,
        forms and identity gate are fixed), so each answer is kept: the search asks the same
        question of the α of an instruction again and again (the α differ in their operands'
        padding, and their patterns share the operators above it), and of a shared sub-term once
        per path to it. The demand is keyed by a digest of its bytes (the views are up to a
        buffer's size)."""
        key = (pat, dem.base, _digest(dem.idx), tuple((i, v.base, _digest(v.idx)) for i, v in sorted(bind.items())))
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = list(self._match(pat, dem, bind))
        return iter(got)

    def _match(self, pat: Term, dem: View, bind: Bind) -> Iterator[Bind]:
        pv = self.view_of(pat)
        if len(pv) != len(dem):
            return
        p, d = pv.idx, dem.idx
        want = dem.defined
        const = pv.const
        cnz = _count_nonzero
        if cnz(const & want & (p != d)):
            return
        sel = want & ~const
        if not cnz(sel):
            yield bind
            return
        assert pv.base is not None
        q = np.full(nbytes(pv.base.type), DC, dtype=np.int64)
        pi, di = p[sel], d[sel]
        q[pi] = di
        if cnz(q[pi] != di):
            return                               # one byte of the pattern demanded as two things
        sub = View(dem.base if cnz(di >= 0) else None, q)
        if pv.base.is_param:
            prev = bind.get(pv.base.index)
            if prev is not None:
                merged = _merge(prev, sub)
                if merged is None:
                    return
                sub = merged
            yield {**bind, pv.base.index: sub}
            return
        yield from self._op(pv.base, sub, bind)
        name = pv.base.info.name  # type: ignore[union-attr]
        for alt in self.forms.views(sub):
            if alt.base is not None and alt.base.info is not None and alt.base.info.name == name:
                yield from self._op(pv.base, alt, bind)

    def _elements(self, p: Term, d: View) -> np.ndarray | None:
        """The demanded base element of each element of ``p`` (-1: none), or None when the
        demand does not consist of whole elements of a base of p's dtype."""
        base = d.base
        if base is None or base.is_param or base.info is None or base.info.kind != "op":
            return None
        if base.type.dtype != p.type.dtype:
            return None
        nb = p.type.dtype.nbytes
        first = d.idx[::nb]
        dc = first == DC
        e = np.where(dc, -1, first // nb)
        if _count_nonzero((first < 0) & ~dc) or _count_nonzero(np.where(dc, 0, first % nb)):
            return None         # a constant byte, or an element that does not start a base element
        if nb > 1:              # each element: DC throughout, or the nb bytes of one base element
            want = np.where(dc[:, None], DC, first[:, None] + np.arange(nb)).reshape(-1)
            if not np.array_equal(d.idx, want):
                return None
        return e

    def _gather(self, child: Term, e: np.ndarray) -> View:
        """The demand on ``child`` (shaped like its parent's elements) for parent elements ``e``."""
        cv = self.kernel_view(child)
        nb = child.type.dtype.nbytes
        m = cv.idx.reshape(-1, nb)
        out = np.where((e >= 0)[:, None], m[np.maximum(e, 0)], DC)
        return View(cv.base, out.reshape(-1))

    def _op(self, p: Term, d: View, bind: Bind) -> Iterator[Bind]:
        # the kernel operands each branch gathers from are also what Tiler._links_of moves a
        # demand through (elementwise: gathers_elementwise; a matrix-product dot: rows of the
        # left operand, columns of the right one): a new branch needs its line there
        assert p.info is not None
        e = self._elements(p, d)
        name = p.info.name
        if d.base is None and self._fixed_point(p, d):
            # a constant demanded of an elementwise operator that maps it to itself (max(c, c),
            # and(c, c), ...): demanding the same constant of every operand computes it
            yield from self._children(p.children, [d] * len(p.children), bind)
            return
        if e is not None:
            D = d.base
            assert D is not None and D.info is not None
            dn = D.info.name
            if (dn == name and gathers_elementwise(D) and D.info.attrs == p.info.attrs
                    and len(D.children) == len(p.children)
                    and all(a.type.dtype == b.type.dtype for a, b in zip(D.children, p.children, strict=True))):
                yield from self._children(p.children, [self._gather(c, e) for c in D.children], bind)
            elif dn == "dot" and name == "dot" and D.info.attrs == p.info.attrs and is_mm(D) and is_mm(p):
                yield from self._dot(p, D, e, bind)
            elif (dn == "dot" and name == "fma" and is_mm(D) and D.children[0].type.shape[1] == 1
                  and len(p.children) == 3 and D.type.dtype.name == "f32"
                  and self.identity(DOT_AS_FMA, "f32")):
                n_cols = D.type.shape[1]
                rows = np.where(e >= 0, e // n_cols, -1)
                cols = np.where(e >= 0, e % n_cols, -1)
                negzero = -1 - np.frombuffer(np.float32(-0.0).tobytes(), dtype=np.uint8).astype(np.int64)
                c = np.where((e >= 0)[:, None], negzero[None, :], DC).reshape(-1)
                yield from self._children(p.children, [self._gather(D.children[0], rows),
                                                       self._gather(D.children[1], cols), View(None, c)], bind)
            elif (dn == "dot" and name == "multiply" and is_mm(D) and D.children[0].type.shape[1] == 1
                  and self.identity(DOT_AS_MULTIPLY, D.type.dtype.name)):
                n_cols = D.type.shape[1]
                rows = np.where(e >= 0, e // n_cols, -1)
                cols = np.where(e >= 0, e % n_cols, -1)
                yield from self._children(p.children, [self._gather(D.children[0], rows),
                                                       self._gather(D.children[1], cols)], bind)
        if name == "add" and not p.type.dtype.is_float and len(p.children) == 2:
            zero = View(None, np.where(d.idx != DC, -1, DC).astype(np.int64))
            for s in (0, 1):
                rule = "add(0, x) => x" if s == 0 else "add(x, 0) => x"
                if not self.identity(rule, p.type.dtype.name):
                    continue
                for b in self.match(p.children[s], zero, bind):
                    yield from self.match(p.children[1 - s], d, b)

    @staticmethod
    def _fixed_point(p: Term, d: View) -> bool:
        """True when every demanded element is a whole constant c with p(c, ..., c) = c (bits)."""
        assert p.info is not None
        t = p.type
        if p.info.name not in ELEMENTWISE or not p.children or any(c.type != t for c in p.children):
            return False
        nb = t.dtype.nbytes
        rows = d.idx.reshape(-1, nb)
        whole = (rows != DC).all(axis=1)
        if not whole.any() or not (whole | (rows == DC).all(axis=1)).all() or (rows[whole] >= 0).any():
            return False
        data = (-1 - rows[whole]).astype(np.uint8)
        vals = data.reshape(-1).view(t.dtype.np)
        try:
            out = REGISTRY[p.info.name].evaluate([vals] * len(p.children), Attrs(p.info.attrs),
                                                  TensorType(t.dtype, (int(vals.size),)), Env())
        except Exception:  # noqa: BLE001 - an operator that cannot run on these constants
            return False
        return bool(np.asarray(out, dtype=t.dtype.np).view(np.uint8).reshape(-1).tobytes() == data.tobytes())

    def _children(self, pats: tuple[Term, ...], dems: list[View], bind: Bind) -> Iterator[Bind]:
        if not pats:
            yield bind
            return
        for b in self.match(pats[0], dems[0], bind):
            yield from self._children(pats[1:], dems[1:], b)

    def _dot(self, p: Term, D: Term, e: np.ndarray, bind: Bind) -> Iterator[Bind]:
        m, n = p.type.shape
        M, N = D.type.shape
        K, Kp = D.children[0].type.shape[1], p.children[0].type.shape[1]
        if Kp != K and not (Kp > K and self.identity(DOT_PADDED, D.type.dtype.name)):
            return          # whole contractions, or a wider one whose extra terms are 0 * anything
        # each demanded row reads one row of D and each demanded column one column (-1: none)
        e2 = e.reshape(m, n)
        ri = _one_per_line(e2 >= 0, e2 // N, 1)
        cj = _one_per_line(e2 >= 0, e2 % N, 0)
        if ri is None or cj is None:
            return
        k = np.arange(Kp)
        li = np.where((ri[:, None] >= 0) & (k[None, :] < K), ri[:, None] * K + k[None, :], -1).reshape(-1)
        rj = np.where((cj[None, :] >= 0) & (k[:, None] < K), k[:, None] * N + cj[None, :], -1).reshape(-1)
        left = self._gather(D.children[0], li)
        if Kp > K:          # the left operand's extra columns are demanded as zeros, the right's rows are free
            nb = D.children[0].type.dtype.nbytes
            z = left.idx.reshape(m, Kp, nb).copy()
            z[np.ix_(ri >= 0, k >= K)] = -1          # the constant byte 0
            left = View(left.base, z.reshape(-1))
        yield from self._children(p.children, [left, self._gather(D.children[1], rj)], bind)


def _digest(idx: np.ndarray) -> bytes:
    return hashlib.blake2b(idx.tobytes(), digest_size=16).digest()


def _one_per_line(valid: np.ndarray, v: np.ndarray, axis: int) -> np.ndarray | None:
    """Per line along ``axis`` of a 2-D array (axis 1: per row), the one value ``v`` takes at its
    ``valid`` places (-1 where none is valid), or None when a line takes two values."""
    big = np.iinfo(np.int64).max
    hi = np.where(valid, v, -1).max(axis=axis)
    lo = np.where(valid, v, big).min(axis=axis)
    any_valid = hi >= 0
    if _count_nonzero(any_valid & (lo != hi)):
        return None
    return np.where(any_valid, hi, -1)


#: the dot identities :meth:`Matcher._op` uses where their library rules pass the proof gate
DOT_AS_FMA = "dot(a, b) with K = 1 => fma(broadcast(a), broadcast(b), -0.0)"
DOT_AS_MULTIPLY = "dot(a, b) with K = 1 => multiply(broadcast(a), broadcast(b))"
DOT_PADDED = "dot(pad(a, 0, k), b) => dot(a, slice(b, k))"


def gathers_elementwise(t: Term) -> bool:
    """Whether :meth:`Matcher._op` may read a demand on the kernel operator ``t`` element by
    element from its operands (element i of every operand; :meth:`Tiler._links_of` reads the
    same): an elementwise operator whose operands all have its shape, not HLO's scalar
    operands (a select's scalar predicate, a clamp's scalar bounds), which are not gathered so."""
    return t.info.name in ELEMENTWISE and all(a.type.shape == t.type.shape for a in t.children)  # type: ignore[union-attr]


def is_mm(t: Term) -> bool:
    a = dict(t.info.attrs)  # type: ignore[union-attr]
    return (len(t.type.shape) == 2 and tuple(a.get("lhs_contracting_dims", ())) == (1,)
            and tuple(a.get("rhs_contracting_dims", ())) == (0,) and not a.get("lhs_batch_dims")
            and not a.get("rhs_batch_dims"))


def match(pat: Term, dem: View, identity: Any = lambda rule, dtype: False) -> list[Bind]:
    """All bindings of ``pat``'s parameters under which it computes the demanded view."""
    return list(Matcher(Views(), identity).match(pat, dem, {}))
