"""Tiling with the identity instructions slice^H and concat^H (seed 000 §5.2.3, Fig. 36).

Identity instructions do not change the memory state; they name a data slice of another value
(slice^H) or a value made of adjacent data slices (concat^H), which lets instructions with small
fixed-size operands (a 16 x 64-byte tile, a 64-byte vector register) compute a kernel whose
tensors are larger, or laid out differently, than any single instruction's operand. This module
finds such pii graphs top-down, guided by the buffers (the shape of Fig. 37's extraction), when
the e-graph of phases M1-M3 has none: Act's completeness fallback (§4.2.3).

Values are *byte views*: the bytes of a value as a gather from one base term (a computing
operator, a flattened input, or a parameter of an instruction pattern), with constant bytes and
"don't care" bytes marked. Every data-movement operator (reshape, bitcast-convert, transpose,
slice, broadcast, pad with a constant, reverse, copy) is a gather, so a chain of them, on the
kernel's side or in an instruction's semantics g_θ(α), becomes one index array; comparing two
chains is comparing arrays, exactly, whatever the chain's shape. Matching g_θ(α) against a
demanded view:

- a pattern position that is constant must be demanded as that constant (or not at all);
- a pattern parameter is bound to the view the demand induces on it (positions g_θ does not
  read stay "don't care"); a parameter read twice must be demanded consistently;
- a pattern operator meets the demanded base operator element by element: the demanded
  elements are gathered into each operand (elementwise operators and convert: the same element
  of every operand; dot: the demanded rows of the left operand and columns of the right one,
  whole contractions). Identities beyond gathers are used only when the library rule that
  states them is proven for the dtype (the proof gate, :mod:`.rewrite`): a dot with a
  one-element contraction is a multiply of broadcasts (``dot(a, b) with K = 1 => multiply(...)``,
  proven for integers), or, for f32, one FMA from -0.0 (``... => fma(..., -0.0)``: how the
  semantics defines it), and on integers ``add(0, x) => x`` (an accumulating instruction
  started from a zeroed register).

A demand in HBM is met by a flattened input at a fixed offset (slice^H of an input: no
instruction), by a constant (the constant section), by an instruction writing HBM, or by
concat^H of equal pieces, each demanded on its own and written at its place (output tiling: a
piece that is an input's bytes is copied there, a constant piece is the constant section at
that place). A concatenate is a gather where its operands read one base (or constants); where
they read several, a demand on bytes of one operand is that operand's demand
(:meth:`Tiler._resolve`), and one on bytes of several is met by concat^H pieces only. α values are drawn from the
description's domains restricted to the kernel's dimensions and their multiples and divisors by
2 and 4 (as for the e-graph's IR-to-ISA rules). Nothing here names a target.

The search (:class:`Tiler`) is a branch and bound over those α: an α is tried only if its own
cycles are below the best way found so far for the demand. Two exact shortcuts keep it small: a
value none of whose forms is an operator of some instruction's semantics (nor has operands that
are such values) is not searched for (:meth:`Tiler._ok`), and a demand that is another's bytes
moved takes that one's result moved (:func:`_moved`): on a kernel input, within the shifts over
which every bounds test of that one's search comes out the same (:meth:`Tiler._bounds`); on a
computed value, where in addition every kernel view the search can read below it moves
uniformly (:meth:`Tiler._shifts`: K5's output rows after the first). Both are exact while the
search stays within its work bounds (``MAX_TRIES``, ``MAX_DEMANDS``); past them, which searches
are cut short depends on how many tries were made, moved or not (a moved result is never cut).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from semantics.ir import Attrs
from semantics.ops import REGISTRY, Env
from semantics.types import TensorType

from ..isa import HBM, Accelerator
from .phase1 import IsaRule, IsaRules, PiiGraph, PiiNode
from .terms import Term

__all__ = ["DC", "View", "view_of", "match", "Forms", "Tiler"]

DC = -(1 << 40)     # a byte nobody reads ("don't care")
# codes: >= 0 is a byte of the base's image; -1 - b is the constant byte b (0..255); DC


def _nz(a: np.ndarray) -> bool:
    """``a.any()`` for a whole array, without numpy's Python-level reduction wrapper (the search
    asks it of small arrays some 10^5 times per kernel)."""
    return _count_nonzero(a) != 0


_count_nonzero = np.count_nonzero


_NB: dict[int, tuple[TensorType, int]] = {}
_NB_MAX = 1 << 14     # each compile makes new type objects: emptied when full (a fuzz campaign's
                      # process would otherwise keep every kernel's types alive)


def _nbytes(t: TensorType) -> int:
    hit = _NB.get(id(t))        # memoized per type object (types live with their terms)
    if hit is None or hit[0] is not t:
        if len(_NB) >= _NB_MAX:
            _NB.clear()
        hit = _NB[id(t)] = (t, int(t.size) * t.dtype.nbytes)
    return hit[1]


class View:
    """The byte image of a value: ``idx[i]`` says what byte ``i`` is (see the codes above)."""

    __slots__ = ("base", "idx", "_key", "_any", "_def", "_const", "_ident")

    def __init__(self, base: Term | None, idx: np.ndarray) -> None:
        self.base = base
        self.idx = idx          # never written after construction (views share their arrays)
        self._key: tuple | None = None
        self._any: bool | None = None
        self._def: np.ndarray | None = None
        self._const: np.ndarray | None = None
        self._ident: bool | None = None

    @property
    def key(self) -> tuple:
        if self._key is None:
            self._key = (self.base, self.idx.tobytes())
        return self._key

    @property
    def defined(self) -> np.ndarray:
        """The bytes somebody reads (memoized, like the two below: the search asks them of a
        view many times; the arrays are not to be written)."""
        if self._def is None:
            self._def = self.idx != DC
        return self._def

    @property
    def any_defined(self) -> bool:
        """Whether some byte is read."""
        if self._any is None:
            self._any = bool(_nz(self.defined))
        return self._any

    @property
    def const(self) -> np.ndarray:
        """The bytes that are constants."""
        if self._const is None:
            self._const = self.idx < 0
        return self._const

    @property
    def identity(self) -> bool:
        """Whether byte i is byte i of the base, for every i (a value's own view)."""
        if self._ident is None:
            n = self.idx.size
            self._ident = bool(self.base is not None and n and self.idx[0] == 0 and self.idx[-1] == n - 1
                               and not _nz(np.diff(self.idx) != 1))
        return self._ident

    def __len__(self) -> int:
        return self.idx.size


_LAYOUT = {"reshape", "bitcast-convert", "copy", "transpose", "slice", "broadcast", "pad", "reverse"}
_ELEMENTWISE = {n for n, d in REGISTRY.items() if d.category == "elementwise"} | {"convert"}


class _Views:
    """view_of with a memo (terms are DAGs; the memo keeps its terms alive). The module's
    :data:`view_of` serves the instruction patterns, which live for the process; a kernel's
    terms get one per compile (:attr:`Forms.view_of`), so that a long campaign does not keep
    every kernel's views (~1 MB per AMX compile) alive."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Term, View]] = {}
        self.nbytes = 0                     # the memo's index arrays
        self.images: dict[int, tuple[Term, Any, np.ndarray, np.ndarray]] = {}

    def __call__(self, t: Term) -> View:
        hit = self.memo.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        v = self._view(t)
        self.memo[id(t)] = (t, v)
        self.nbytes += v.idx.nbytes
        return v

    def clear(self) -> None:
        self.memo.clear()
        self.images.clear()
        self.nbytes = 0

    def _view(self, t: Term) -> View:
        n = _nbytes(t.type)
        if t.is_param or t.info is None:
            return View(t, np.arange(n, dtype=np.int64))
        info = t.info
        if info.kind == "lit":
            data = np.frombuffer(info.literal.data, dtype=np.uint8).astype(np.int64)  # type: ignore[union-attr]
            return View(None, -1 - data)
        if info.kind == "op" and info.name == "select" and t.children[0].is_lit:
            return self._select(t, n)
        if info.kind == "op" and info.name == "concatenate":
            base, idx = self.concat_image(t)
            if base is not False:
                return View(base, idx)     # operands of one base (or constants): a gather of it
            return View(t, np.arange(n, dtype=np.int64))
        if info.kind != "op" or info.name not in _LAYOUT:
            return View(t, np.arange(n, dtype=np.int64))
        c = self(t.children[0])
        ct = t.children[0].type
        nb = ct.dtype.nbytes
        if info.name in ("reshape", "bitcast-convert", "copy"):
            if n != len(c):
                return View(t, np.arange(n, dtype=np.int64))
            return c
        attrs = dict(info.attrs)
        m = c.idx.reshape(tuple(ct.shape) + (nb,))
        if info.name == "transpose":
            perm = tuple(attrs["dimensions"]) + (len(ct.shape),)
            out = m.transpose(perm)
        elif info.name == "slice":
            out = m[tuple(slice(s, e, st) for s, e, st in attrs["slice"])]
        elif info.name == "reverse":
            out = m[tuple(slice(None, None, -1) if d in attrs["dimensions"] else slice(None)
                          for d in range(len(ct.shape)))]
        elif info.name == "broadcast":
            dims = tuple(attrs["dimensions"])
            shape = tuple(t.type.shape)
            order = sorted(range(len(dims)), key=lambda i: dims[i])
            mm = m.transpose(tuple(order) + (len(dims),))
            full = [1] * len(shape)
            for i in order:
                full[dims[i]] = ct.shape[i]
            out = np.broadcast_to(mm.reshape(tuple(full) + (nb,)), shape + (nb,))
        elif info.name == "pad":
            pv = self(t.children[1])
            if pv.base is not None and _nz(pv.idx >= 0):
                return View(t, np.arange(n, dtype=np.int64))
            shape = tuple(t.type.shape)
            out = np.empty(shape + (nb,), dtype=np.int64)
            out[...] = pv.idx.reshape(nb)
            src, dst = [], []
            for d, (lo, _hi, interior) in enumerate(attrs["padding"]):
                pos = lo + np.arange(ct.shape[d]) * (interior + 1)
                keep = (pos >= 0) & (pos < shape[d])
                src.append(np.nonzero(keep)[0])
                dst.append(pos[keep])
            out[np.ix_(*dst, np.arange(nb))] = m[np.ix_(*src, np.arange(nb))]
        else:  # pragma: no cover - _LAYOUT is exhaustive above
            raise AssertionError(info.name)
        return View(c.base, np.ascontiguousarray(out).reshape(-1))

    def concat_image(self, t: Term) -> tuple[Any, np.ndarray]:
        """A concatenate's image as its operands' views placed side by side: (the one base
        of the operands that read one, None when all are constants, False when they read
        several; per image byte, its code in that operand's view)."""
        base, idx, _ = self._concat(t)
        return base, idx

    def concat_pieces(self, t: Term) -> list[View]:
        """Per operand of concatenate ``t``, its view laid out in ``t``'s image: its own bytes
        where it lies, "don't care" elsewhere."""
        _, idx, owner = self._concat(t)
        return [View(self(c).base, np.where(owner == j, idx, DC)) for j, c in enumerate(t.children)]

    def _concat(self, t: Term) -> tuple[Any, np.ndarray, np.ndarray]:
        """:meth:`concat_image` and, per image byte, the operand it comes from (made once per
        concatenate)."""
        hit = self.images.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1], hit[2], hit[3]
        nb = t.type.dtype.nbytes
        d = int(dict(t.info.attrs)["dimensions"][0])     # type: ignore[union-attr]
        parts, owners, bases = [], [], []
        for j, c in enumerate(t.children):
            v = self(c)
            shape = tuple(c.type.shape) + (nb,)
            parts.append(v.idx.reshape(shape))
            owners.append(np.full(shape, j, dtype=np.int64))
            if v.base is not None and _nz(v.idx >= 0) and not any(v.base is b for b in bases):
                bases.append(v.base)
        idx = np.ascontiguousarray(np.concatenate(parts, axis=d)).reshape(-1)
        owner = np.ascontiguousarray(np.concatenate(owners, axis=d)).reshape(-1)
        base = bases[0] if len(bases) == 1 else (None if not bases else False)
        self.images[id(t)] = (t, base, idx, owner)
        return base, idx, owner

    def _select(self, t: Term, n: int) -> View:
        """select with a constant predicate: per element, the bytes of one of the two operands."""
        pred = t.children[0].info.literal.to_array().reshape(-1).astype(bool)  # type: ignore[union-attr]
        a, b = self(t.children[1]), self(t.children[2])
        nb = t.type.dtype.nbytes
        if pred.size == 1:          # HLO's scalar predicate: the same for every element
            pred = np.repeat(pred, n // nb)
        ua, ub = bool((a.idx[np.repeat(pred, nb)] >= 0).any()), bool((b.idx[np.repeat(~pred, nb)] >= 0).any())
        if ua and ub and a.base is not b.base:
            return View(t, np.arange(n, dtype=np.int64))
        idx = np.where(np.repeat(pred, nb), a.idx, b.idx)
        return View(a.base if ua else (b.base if ub else None), idx)


view_of = _Views()


# --- matching g_θ(α) against a demanded view ----------------------------------------------------

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


class Forms:
    """The other forms of a kernel value: the e-nodes of its e-class after M2's proven rewrites,
    as terms (each child is its class's representative: the kernel's own term where there is
    one, else a term built from an e-node whose children have representatives, so terms stay
    acyclic). Without an e-graph every value has only its own form."""

    def __init__(self, egraph: Any = None, snap: Any = None, memo: dict[int, tuple[Term, int]] | None = None) -> None:
        self.cls: dict[Term, int] = {}
        self.alts: dict[int, list[Term]] = {}
        self.view_of = _Views()             # the views of this kernel's terms
        self.snap = snap
        self.rep: dict[int, Term] = {}
        self._leafy: dict[Term, list[View]] = {}
        if snap is None or memo is None:
            return
        self.infos = egraph.infos
        for term, h in memo.values():
            c = snap.handle_class[h]
            self.cls.setdefault(term, c)
            self.rep.setdefault(c, term)
        changed = True
        while changed:                       # representatives of the classes the rewrites created
            changed = False
            for c, nodes in enumerate(snap.classes):
                if c in self.rep:
                    continue
                for en in nodes:
                    info = self.infos[en.info]
                    if info.kind in ("op", "lit") and all(ch in self.rep for ch in en.children):
                        t = Term(info, tuple(self.rep[ch] for ch in en.children))
                        self.rep[c] = t
                        self.cls.setdefault(t, c)
                        changed = True
                        break

    def of(self, t: Term) -> list[Term]:
        """The forms of ``t`` other than ``t`` (computing operators only)."""
        c = self.cls.get(t)
        if c is None:
            return []
        out = self.alts.get(c)
        if out is None:
            out = []
            for en in self.snap.classes[c]:
                info = self.infos[en.info]
                if info.kind == "op" and all(ch in self.rep for ch in en.children):
                    a = Term(info, tuple(self.rep[ch] for ch in en.children))
                    self.cls.setdefault(a, c)
                    out.append(a)
            self.alts[c] = out
        return [a for a in out if a != t]

    def _form_views(self, dem: View) -> list[View]:
        """The views of the other forms of ``dem``'s base (those with a base of their own)."""
        return self._base_form_views(dem.base)

    def _base_form_views(self, base: Term | None) -> list[View]:
        if base is None or base.info is None or base.info.kind != "op":
            return []
        return [av for a in self.of(base) if (av := self.view_of(a)).base is not None]

    def leaf_view(self, dem: View, constants: bool = True) -> View | None:
        """``dem`` read through a form of its base that is a kernel input or a layout of one (a
        value M2's proven rewrites showed equal to one: ``p1 - (p1 - p0)``; a u8[2] input is
        its own e-node in the class, a wider one a bitcast chain over its bytes) or, with
        ``constants``, constant bytes (a literal, or an operator over literals), or None: the
        same bytes, with nothing to compute (inputs are tried first). The caller allows
        constant bytes for a demand in HBM only, where the constant section is: on chip the
        demand keeps its operator forms (``convert_s32(c)`` of an int8 constant, which
        Gemmini's array widens) and still reaches the constant bytes through a load, whose
        operand is an HBM demand; read as constant bytes there, it would have no other way."""
        base = dem.base
        if base is None or base.info is None or base.info.kind != "op" or self.snap is None:
            return None
        hit = self._leafy.get(base)
        if hit is None:
            c = self.cls.get(base)
            leaves = [] if c is None else [     # an input or a literal in the class itself
                Term(info, ()) for en in self.snap.classes[c]
                if (info := self.infos[en.info]).kind in ("input", "lit")]
            forms = [self.view_of(a) for a in leaves + self.of(base)]
            hit = self._leafy[base] = (
                [av for av in forms if av.base is not None and av.base.info is not None
                 and av.base.info.kind == "input"] + [av for av in forms if av.base is None])
        hit = [av for av in hit if constants or av.base is not None]
        if not hit:
            return None
        d, av = dem.idx, hit[0]
        return View(av.base, np.where(d >= 0, av.idx[np.maximum(d, 0)], d))

    def base_forms(self, base: Term | None) -> list[Term | None]:
        """``base`` and the bases of its other forms: what a demand on ``base`` is matched
        against (:meth:`Matcher.match` reads a demand through each form)."""
        return [base] + [av.base for av in self._base_form_views(base)]

    def bases(self, dem: View) -> list[Term]:
        """The bases of :meth:`views` (without reading ``dem``'s bytes through each)."""
        return [av.base for av in self._form_views(dem)]  # type: ignore[misc]

    def views(self, dem: View) -> list[View]:
        """``dem`` read through each other form of its base (same value, so the same bytes)."""
        d = dem.idx
        return [View(av.base, np.where(d >= 0, av.idx[np.maximum(d, 0)], d)) for av in self._form_views(dem)]


class Matcher:
    """Matches instruction patterns against demanded views. ``identity(name, dtype)`` says
    whether the library rule ``name`` is proven for ``dtype`` (the gate for the two identities);
    ``forms`` gives the other forms of a kernel value (M2's proven rewrites). ``views`` gives
    the patterns' views, ``forms.view_of`` the kernel terms'."""

    def __init__(self, views: _Views, identity: Any, forms: Forms | None = None) -> None:
        self.view_of = views
        self.identity = identity
        self.forms = forms or Forms()
        self.kernel_view = self.forms.view_of

    def match(self, pat: Term, dem: View, bind: Bind) -> Iterator[Bind]:
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
        q = np.full(_nbytes(pv.base.type), DC, dtype=np.int64)
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
        # demand through (elementwise: _gathers_elementwise; a matrix-product dot: rows of the
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
            if (dn == name and _gathers_elementwise(D) and D.info.attrs == p.info.attrs
                    and len(D.children) == len(p.children)
                    and all(a.type.dtype == b.type.dtype for a, b in zip(D.children, p.children, strict=True))):
                yield from self._children(p.children, [self._gather(c, e) for c in D.children], bind)
            elif dn == "dot" and name == "dot" and D.info.attrs == p.info.attrs and _is_mm(D) and _is_mm(p):
                yield from self._dot(p, D, e, bind)
            elif (dn == "dot" and name == "fma" and _is_mm(D) and D.children[0].type.shape[1] == 1
                  and len(p.children) == 3 and D.type.dtype.name == "f32"
                  and self.identity(DOT_AS_FMA, "f32")):
                n_cols = D.type.shape[1]
                rows = np.where(e >= 0, e // n_cols, -1)
                cols = np.where(e >= 0, e % n_cols, -1)
                negzero = -1 - np.frombuffer(np.float32(-0.0).tobytes(), dtype=np.uint8).astype(np.int64)
                c = np.where((e >= 0)[:, None], negzero[None, :], DC).reshape(-1)
                yield from self._children(p.children, [self._gather(D.children[0], rows),
                                                       self._gather(D.children[1], cols), View(None, c)], bind)
            elif (dn == "dot" and name == "multiply" and _is_mm(D) and D.children[0].type.shape[1] == 1
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
        if p.info.name not in _ELEMENTWISE or not p.children or any(c.type != t for c in p.children):
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


def _meets(top: tuple, base: Term, identity: Any) -> bool:
    """Whether the pattern operator of ``top`` can meet the kernel operator of ``base`` in
    :meth:`Matcher._op`: one of :func:`_meeting`'s, and for a kernel dot what each branch
    requires of it: a matrix product (:func:`_is_mm`), of the same contraction size for a
    pattern dot (:meth:`Matcher._dot` takes whole contractions; the top states the size where
    it is known), of size 1 for the one-term identities (multiply, fma: f32 only), whose rule
    passes the gate (``identity``)."""
    name, bn = top[1], base.info.name  # type: ignore[union-attr]
    if name not in _meeting(bn):
        return False
    if bn != "dot":
        return True
    if not _is_mm(base):
        return False
    k = base.children[0].type.shape[1]
    dt = base.type.dtype.name
    if name == "dot":
        return top[4] is None or top[4] == k or (top[4] > k and bool(identity(DOT_PADDED, dt)))
    if name == "fma":
        return k == 1 and dt == "f32" and bool(identity(DOT_AS_FMA, "f32"))
    return k == 1 and bool(identity(DOT_AS_MULTIPLY, dt))


def _meeting(kernel_op: str) -> tuple[str, ...]:
    """The pattern operators that may meet a kernel operator in :meth:`Matcher._op`: itself,
    and for a dot the multiply / fma of the one-term identities."""
    return (kernel_op, "multiply", "fma") if kernel_op == "dot" else (kernel_op,)


class _OutOfBounds(Exception):
    """Building the pii graph met a demand whose search ran past the work bounds."""


class _Unmovable(Exception):
    """A result holds a view of a term :meth:`Tiler._shifts` gives no shift."""


def _moved(opt: _Opt | None, sig: dict[Term, int], base: Term) -> _Opt | None:
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
    return replace(opt, operands=tuple(None if o is None else (mv(o[0]), *o[1:]) for o in opt.operands))


def _uniform(idx: np.ndarray, sh: int) -> tuple[bool, int | None]:
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


def _opt_key(o: _Opt | None) -> tuple | None:
    """A result as plain values (views as their base and bytes), for comparing two."""
    if o is None:
        return None

    def vk(v: View) -> tuple:
        return (v.base, v.idx.tobytes())

    return (o.cost, o.kind, o.instr, o.alpha, o.input_index, o.offset, o.data, o.level,
            tuple(None if x is None else (vk(x[0]), *x[1:]) for x in o.operands), tuple(vk(p) for p in o.pieces))


def _gathers_elementwise(t: Term) -> bool:
    """Whether :meth:`Matcher._op` may read a demand on the kernel operator ``t`` element by
    element from its operands (element i of every operand; :meth:`Tiler._links_of` reads the
    same): an elementwise operator whose operands all have its shape, not HLO's scalar
    operands (a select's scalar predicate, a clamp's scalar bounds), which are not gathered so."""
    return t.info.name in _ELEMENTWISE and all(a.type.shape == t.type.shape for a in t.children)  # type: ignore[union-attr]


def _is_mm(t: Term) -> bool:
    a = dict(t.info.attrs)  # type: ignore[union-attr]
    return (len(t.type.shape) == 2 and tuple(a.get("lhs_contracting_dims", ())) == (1,)
            and tuple(a.get("rhs_contracting_dims", ())) == (0,) and not a.get("lhs_batch_dims")
            and not a.get("rhs_batch_dims"))


def match(pat: Term, dem: View, identity: Any = lambda rule, dtype: False) -> list[Bind]:
    """All bindings of ``pat``'s parameters under which it computes the demanded view."""
    return list(Matcher(view_of, identity).match(pat, dem, {}))


# --- demand-driven search ------------------------------------------------------------------------

@dataclass
class _Opt:
    cost: float
    kind: str                                        # input | const | pii | concat
    instr: str = ""
    alpha: tuple[tuple[str, int], ...] = ()
    operands: tuple[tuple[View, str, tuple | None] | None, ...] = ()   # (demand, buffer, slice shape) per input
    input_index: int = -1
    offset: int = 0
    data: bytes = b""
    pieces: tuple[View, ...] = ()
    level: int = 0                                   # staging depth its operands were found at


@dataclass
class _Search:
    memo: dict[tuple, _Opt | None] = field(default_factory=dict)
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


_TABLES: dict[tuple, tuple] = {}


def _valued(ins: Any) -> list[str]:
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


def _tops_of(acc: Accelerator, ins: Any, alphas: list[dict[str, int]], isa: IsaRules | None, gate: Any,
             kids: bool) -> tuple:
    """The distinct tops of ``ins``'s g_θ(α) for ``alphas`` (sizes left out; operand tops kept
    where ``kids``), in order."""
    out: list[tuple] = []
    for alpha in alphas:
        r = _rule(acc, ins, alpha, isa, gate)
        if r is not None and (t := _sizeless(_top(r), kids=kids)) not in out:
            out.append(t)
    return tuple(out)


def _alpha_tables(acc: Accelerator, doms: set[int], isa: IsaRules | None = None,
                  gate: Any = None) -> tuple[dict, dict, dict, list[int], float, dict]:
    """Per instruction, its α candidates over ``doms`` grouped by (output buffer, output bytes),
    computed from the slice specs alone (g_θ(α) is generated only when a demand may use it);
    each instruction's tops (the distinct tops of one α per combination of the values of its
    attributes that are not sizes, :func:`_valued`); per buffer, the distinct tops of the instructions that
    write it; the HBM output sizes, largest first; the cheapest store; and per instruction,
    whether the search reads its patterns normalized (``isa``, phase 1's IR-to-ISA rules):
    where normalization changes one of those tops (a Gemmini mvin with scale 1.0 becomes a
    move, an accumulate = 0 write loses its add), else as lowered (AMX, QKV: no top changes,
    and normalizing every α the search reads would cost seconds of generation)."""
    gen = IsaRules(acc)
    by_out: dict[tuple[str, int], list[tuple[Any, dict[str, int]]]] = {}
    tops: dict[str, tuple] = {}
    normed: dict[str, IsaRules | None] = {}
    hbm_sizes: set[int] = set()
    min_store = math.inf
    for ins in acc.instructions.values():
        valued = _valued(ins)
        reps: dict[tuple, dict[str, int]] = {}
        for alpha in gen._candidates(ins, doms):
            env = dict.fromkeys(ins.beta, 0) | alpha
            try:
                nb = _nbytes(acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1]))
            except Exception:  # noqa: BLE001 - an α outside the buffer is not a candidate
                continue
            if not reps and _rule(acc, ins, alpha) is None:
                continue
            reps.setdefault(tuple(alpha[a] for a in valued), alpha)
            by_out.setdefault((ins.output.buffer, nb), []).append((ins, alpha))
            if ins.output.buffer == HBM:
                hbm_sizes.add(nb)
                min_store = min(min_store, float(ins.cost.cycles.eval(alpha)) + 1.0)
        if not reps:
            continue
        kids = ins.output.buffer != HBM
        plain = _tops_of(acc, ins, list(reps.values()), None, gate, kids)
        normal = _tops_of(acc, ins, list(reps.values()), isa, gate, kids) if isa is not None else plain
        normed[ins.name] = isa if normal and normal != plain else None
        tops[ins.name] = normal if normed[ins.name] is not None else plain
    writers: dict[str, list[tuple]] = {}
    for (buf, _), entries in by_out.items():
        for ins, _ in entries:
            for t in tops[ins.name]:
                if t not in writers.setdefault(buf, []):
                    writers[buf].append(t)
    return by_out, tops, writers, sorted(hbm_sizes, reverse=True), (min_store if min_store < math.inf else 1.0), normed


class Tiler:
    """Demand-driven pii-graph search over slice^H / concat^H for one kernel and accelerator."""

    MAX_DEMANDS = 20000
    #: α tried against demands, at most: a work bound (not a clock: the same kernel always gets
    #: the same answer). The paper's AMX kernels take 258-1,219 and K1 at 48 x 48 1,514; a 4-node
    #: random kernel whose output equals an input ran ~1,000 a second for minutes without it.
    MAX_TRIES = 20000

    def __init__(self, acc: Accelerator, dims: set[int], identity: Any, inputs: list[TensorType],
                 forms: Forms | None = None, isa: IsaRules | None = None, gate: Any = None) -> None:
        """``isa``: phase 1's IR-to-ISA rules, whose normalized patterns the search reads where
        normalization changes an instruction's tops (:func:`_alpha_tables`); ``gate``: the
        proof gate that normalization may prove with (its time is not generation time)."""
        trim_caches()
        self.acc = acc
        self.gate = gate
        self.forms = forms or Forms()
        self.m = Matcher(view_of, identity, self.forms)
        self.inputs = inputs
        doms = set(dims) | {d * k for d in dims for k in (2, 4)} | {d // k for d in dims for k in (2, 4) if d % k == 0}
        # a pure function of the description and the α domain: shared by the kernels (and the
        # trials) of a process with the same dimensions, as the IR-to-ISA rules are per target
        key = (id(acc), frozenset(doms), None if isa is None else isa.key)
        hit = _TABLES.get(key)
        if hit is None or hit[0] is not acc:
            hit = _TABLES[key] = (acc, *_alpha_tables(acc, doms, isa, gate), {}, {})
        (_, self.by_out, self.tops, self.writers, self.piece_sizes, self.min_store, self.normed, self.stacks,
         self.names_out) = hit
        self.s = _Search()
        self.demands = 0
        self.staging = 0
        self.root_keys: set[tuple] = set()
        self._roots_cache: set = set()
        self._roots_seen = 0
        self.reason = ""        # why build() found nothing, where it knows better than the e-graph
        self.tries = 0
        self._okm: dict[tuple, bool] = {}      # per value (Tiler._value): computable at all
        self._ways: dict[tuple, list] = {}
        self._okrep: dict[tuple, Term] = {}
        self._held: dict[tuple[str, Term], bool] = {}    # (buffer, kernel op): some instruction may put it there
        self._costs: dict[int, float] = {}     # id(rule) -> its cost (:meth:`_cost`)
        self._bases: dict[Term | None, list] = {}      # a base -> it and its forms' bases
        self._first: dict[tuple, list[str]] = {}       # (buf, n, base) -> instructions whose first top may match
        self._masks: dict[tuple, np.ndarray] = {}      # (instruction, buf, n, base) -> per distinct top: may match
        self._sigmas: dict[tuple, dict[Term, int] | None] = {}   # (base, shift): Tiler._shifts
        self._link_memo: dict[tuple, list[tuple[Term, int]] | None] = {}   # (term, shift): Tiler._links

    def _rule(self, ins: Any, alpha: dict[str, int]) -> IsaRule | None:
        """g_θ(α) as this search reads it (normalized or not: :func:`_alpha_tables`)."""
        return _rule(self.acc, ins, alpha, self.normed.get(ins.name), self.gate)

    def _cost(self, r: IsaRule) -> float:
        c = self._costs.get(id(r))      # rules are cached objects (:func:`_rule`), alive while the tiler is
        if c is None:
            c = self._costs[id(r)] = float(r.instr.cost.cycles.eval(dict(r.alpha))) + 1.0   # +1: fewer instructions break ties
        return c

    def produce(self, dem: View, buf: str, part: bool = False, root: bool = False,
                shape: tuple | None = None) -> _Opt | None:
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
            for opt, at, rec in self.s.shifted.get(shift[0], ()):
                hit = self._moved_from(dem.base, shift[1] - at, opt, rec)   # type: ignore[arg-type]
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
        self.s.span_now = {} if shift is None or shift[2] is None else {dem.base: list(shift[2])}  # type: ignore[dict-item]
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
                self.s.shifted.setdefault(shift[0], []).append((best, shift[1], rec))
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

    def _shift_key(self, dem: View, key: tuple) -> tuple | None:
        """(the demand relative to its first base byte, that byte, for an input the shifts that
        keep its bytes inside the input, else None) for a demand on a kernel input or a computed
        value, else None."""
        base = dem.base
        if base is None or base.info is None or base.info.kind not in ("input", "op"):
            return None
        d = dem.idx
        on = d >= 0
        if not _nz(on):
            return None
        lo, hi = int(d[on].min()), int(d[on].max())
        rel = np.where(on, d - lo, d)
        inside = (-lo, _nbytes(base.type) - 1 - hi) if base.info.kind == "input" else None
        return ((key[0], base, rel.tobytes(), *key[2:]), lo, inside)

    def _moved_from(self, base: Term, d: int, opt: _Opt | None,
                    rec: dict[Term, tuple[float, float]]) -> tuple[_Opt | None, dict] | None:
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
            best = _moved(opt, sig, base)
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
        if key in self._sigmas:
            return self._sigmas[key]
        out: dict[Term, int] | None = {base: d}
        if base.info is not None and base.info.kind == "op":
            out = self._shifts_of(base, d)
        self._sigmas[key] = out
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
        if key in self._link_memo:
            return self._link_memo[key]
        out: list[tuple[Term, int]] | None = []
        if t.info is not None and t.info.kind == "op":      # else an input (its bounds tests are the ranges) or a literal
            out = self._links_of(t, dt)
        self._link_memo[key] = out
        return out

    def _links_of(self, t: Term, dt: int) -> list[tuple[Term, int]] | None:
        nb = t.type.dtype.nbytes
        if dt % nb:
            return None     # not whole elements: _elements reads element boundaries
        k = dt // nb
        views: list[tuple[View, int]] = [(av, dt) for av in self.forms._base_form_views(t)]
        name = t.info.name  # type: ignore[union-attr]
        if _gathers_elementwise(t):
            views += [(self.m.kernel_view(c), k * c.type.dtype.nbytes) for c in t.children]
        elif name == "dot" and _is_mm(t):
            n_cols, n_k = t.type.shape[1], t.children[0].type.shape[1]
            if k % n_cols:
                return None         # not whole rows: the columns read would change
            a, b = t.children
            views += [(self.m.kernel_view(a), (k // n_cols) * n_k * a.type.dtype.nbytes),
                      (self.m.kernel_view(b), 0)]
        out = []
        for v, sh in views:
            ok, s = _uniform(v.idx, sh) if not v.identity else (True, sh if abs(sh) < len(v) else None)
            if not ok:
                return None
            if s is not None and v.base is not None:    # else no base byte where it can move
                out.append((v.base, s))
        return out

    def _check_moved(self, key: tuple, dem: View, buf: str, part: bool, root: bool, moved: _Opt | None,
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
        if _opt_key(real) != _opt_key(moved):
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

    def _produce(self, dem: View, buf: str, part: bool, root: bool = False, shape: tuple | None = None) -> _Opt | None:
        if not dem.any_defined:
            return None
        cands: list[_Opt] = []
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

    def _produce_any(self, dem: View, buf: str, cands: list[_Opt], part: bool = False,
                     shape: tuple | None = None) -> _Opt | None:
        n = len(dem)
        base = dem.base
        bkind = "const" if base is None else ("op" if base.info is not None and base.info.kind == "op" else "input")
        bases = self._bases.get(base)       # a function of the base: the same for every demand on it
        if bases is None:
            bases = self._bases[base] = [base] + self.forms.bases(dem)
        computable = not (bkind == "op" and _nz(dem.idx >= 0)) or any(self._ok(b) for b in bases)  # type: ignore[arg-type]
        if not computable and not (self._is_concat(base) and buf == HBM and not part):
            return None     # (a concatenate of several operands' bytes: concat^H pieces below)
        bound = math.inf
        fkey = (buf, n, base)
        first = self._first.get(fkey) if computable else []
        if first is None:
            names = self.names_out.get((buf, n))
            if names is None:       # the instructions with an α of this output, in description order
                names = self.names_out[(buf, n)] = list(dict.fromkeys(i.name for i, _ in self.by_out.get((buf, n), ())))
            # the instruction's tops (one α per combination of its value attributes): a move is
            # let through here (a strided store's other α have a select or dynamic-update-slice
            # top); each α is tested below.
            # _may_match is a function of the top and the base: decided once per base
            first = self._first[fkey] = [name for name in names if any(
                self._may_match(t, bkind, b, moves=False, out=buf) for t in self.tops[name] for b in bases)]
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
            for s in self.piece_sizes:
                if s >= n or n % s:
                    continue
                pieces = tuple(View(dem.base, dem.idx[i:i + s]) for i in range(0, n, s))
                if sum(1 for pc in pieces if pc.any_defined) * self.min_store >= bound:
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
                    cands.append(_Opt(total, "concat", pieces=pieces))
                    break                        # the largest pieces that work: fewest stores
        if not cands:
            return None
        best = min(cands, key=lambda o: (o.cost, o.kind != "pii"))
        best.level = self.staging
        return best

    def _top_mask(self, key: tuple, tops: list[tuple], bkind: str, bases: list) -> np.ndarray:
        """Per distinct top of an instruction's α (``tops``), whether it may match a demand on
        one of ``bases`` (:meth:`_may_match`), once per (instruction, output, base): ``key``."""
        m = self._masks.get(key)
        if m is None:
            m = self._masks[key] = np.array([any(self._may_match(t, bkind, b, out=key[1]) for b in bases)
                                             for t in tops], dtype=bool)
        return m

    def _consistent(self, ins: Any, buf: str, n: int, dem: View, bound: float = math.inf,
                    top_ok: Any = None) -> list[IsaRule]:
        """The α of ``ins`` whose g_θ(α) can produce ``dem`` as far as its constant bytes go
        (the first test of :meth:`Matcher.match`), that cost less than ``bound`` and whose top
        ``top_ok`` accepts (``top_ok(tops)``: a bool per distinct top): over all α at once
        (arrays per instruction and output size, built on first use)."""
        key = (ins.name, buf, n)
        st = self.stacks.get(key)
        if st is None:
            rules = self._alpha_rules(ins, buf, n)
            st = _stack(rules, n)
            st = self.stacks[key] = st + _costs_and_tops(rules, self._cost) + ((st[1] < 0).any(axis=1),)
        rules, layouts, which, ccols, costs, top_of, tops, has_const = st
        if not rules or costs.min() >= bound:
            return []
        # an α fails where its pattern has a constant byte that differs from a demanded byte:
        # only the demanded columns where some α has a constant are compared
        dc = dem.idx[ccols]
        if not _nz(dc < 0):
            good = ~has_const[which]    # base bytes in all of them: an α with any constant there fails
        else:
            keep = dc != DC
            good = ~((layouts[:, keep] < 0) & (layouts[:, keep] != dc[keep])).any(axis=1)[which]
        if bound < math.inf:
            good &= costs < bound
        if top_ok is not None:
            good &= top_ok(tops)[top_of]
        if good.all():
            return rules
        return [rules[i] for i in np.flatnonzero(good)]

    def _alpha_rules(self, ins: Any, buf: str, n: int) -> list[IsaRule]:
        """g_θ(α) of ``ins`` for each of its α with output (buf, n), in candidate order."""
        return [r for a in (a for i, a in self.by_out.get((buf, n), ()) if i is ins)
                if (r := self._rule(ins, a)) is not None]

    def _dead_loads(self, ins: Any, buf: str, n: int, dem: View,
                    rs: list[IsaRule]) -> tuple[list[bool], list[tuple[int, int, int] | None] | None]:
        """For an instruction whose g_θ only gathers bytes of its one HBM operand (a load; its
        other output bytes constants), which α of ``rs`` certainly get None from :meth:`_try`
        on ``dem``, decided for all of them at once (all False where the test does not apply).
        It applies while a staging area is being filled: then an HBM demand that is not a root
        can only be a leaf (:meth:`_produce`), so an α fails exactly when the operand bytes it
        reads for ``dem`` are base bytes that are not one run of an input (a constant among
        them, a base that is not an input, offsets that vary, or out of range). :meth:`produce`
        gives the same answer one α at a time, after building each operand view (for the tile
        loads of a re-laid-out input that was most of AMX's M3).

        Also, per α, the bounds test (offset, length, input size) its answer rests on, or None
        (the list None where there is none): the caller records one (:meth:`_bounds`) only for
        an α it reaches below its bound. An α the bound passes over is not tried whatever the
        test says, so it does not narrow the shifts its search holds for (K5's staged B: the
        second 1,024-byte tile was searched again, 49 α, because loads the bound had passed over
        in the first one's search would have read past the input's end; it is now moved)."""
        keep = [False] * len(rs)
        if not self.staging or not rs:
            return keep, None
        g = self._gathers(ins, buf, n)
        if g is None:
            return keep, None
        row_of, codes, psize = g
        base = dem.base
        if base is not None and base in self._root_bases():
            return keep, None               # a root can be produced otherwise
        idx = [row_of.get(id(r)) for r in rs]
        if None in idx:
            return keep, None
        rows = np.array(idx, dtype=np.int64)
        cols = np.flatnonzero(dem.defined)
        d = dem.idx[cols]
        c = codes[np.ix_(rows, cols)]
        read = c >= 0                       # the demanded bytes each α loads
        n_base = (read & (d >= 0)[None, :]).sum(axis=1)
        if base is None or base.info is None or base.info.kind != "input":
            return (n_base > 0).tolist(), None   # base bytes of a value that is not an input: no leaf
        mixed = (read & (d < 0)[None, :]).any(axis=1)
        off = d[None, :] - c
        o = off[np.arange(len(rows)), np.argmax(read, axis=1)]
        varies = ((off != o[:, None]) & read).any(axis=1)
        size = _nbytes(base.type)
        ln = psize[rows]
        dead = (n_base > 0) & (mixed | varies | (o < 0) | (o + ln > size))
        moved = ((n_base > 0) & ~mixed & ~varies).tolist()     # decided by the bounds alone
        tests = [(int(oo), int(ll), size) if m else None for oo, ll, m in zip(o.tolist(), ln.tolist(), moved, strict=True)]
        return dead.tolist(), tests

    def _gathers(self, ins: Any, buf: str, n: int) -> tuple | None:
        """({id(rule): row}, byte-code matrix, operand sizes) when every α of ``ins`` with output (buf, n)
        moves bytes of its single operand, which lives in HBM, and constants only; else None."""
        key = ("gather", ins.name, buf, n)
        if key in self.stacks:
            return self.stacks[key]  # type: ignore[return-value]
        out = None
        if len(ins.inputs) == 1 and ins.inputs[0].buffer == HBM:
            rules = self._alpha_rules(ins, buf, n)
            views = [view_of(r.pattern) for r in rules]
            if rules and all(v.base is not None and v.base.is_param and v.base.index == 0 for v in views):
                out = ({id(r): i for i, r in enumerate(rules)}, np.stack([v.idx for v in views]),
                       np.array([_nbytes(v.base.type) for v in views], dtype=np.int64))  # type: ignore[union-attr]
        self.stacks[key] = out  # type: ignore[assignment]
        return out

    def _root_bases(self) -> set:
        if self._roots_seen != len(self.root_keys):
            self._roots_cache = {k[0] for k in self.root_keys}
            self._roots_seen = len(self.root_keys)
        return self._roots_cache

    def _value(self, t: Term) -> tuple:
        """What :meth:`_ok` decides for: ``t``'s e-class (all its forms share the answer), or
        ``t`` itself where it has none."""
        c = self.forms.cls.get(t)
        return ("t", t) if c is None else ("c", c)

    def _ok(self, base: Term) -> bool:
        """A necessary condition for any instruction sequence to compute a view of the computing
        operator ``base`` (memoized per value): one of its forms is an operator that some
        instruction's g_θ has (:func:`_computing_ops`), each of whose operands is a constant, an
        input or again such a value. A way that moves ``base`` through a parameter (a load, a
        store) needs it computed first; a way that meets it inside a g_θ meets it with an
        operator of that g_θ; so a value without one is produced by nothing, and the search
        need not try the α of every instruction on it, and on every buffer (the least fixpoint
        over the values reachable from ``base``: a value is not computed by way of itself)."""
        memo = self._okm
        start = self._value(base)
        hit = memo.get(start)
        if hit is not None:
            return hit
        ops = _computing_ops(self.acc)
        view = self.forms.view_of

        def op_base(t: Term) -> tuple | None:
            v = view(t)
            b = v.base
            if b is None or b.is_param or b.info is None or b.info.kind != "op" or not _nz(v.idx >= 0):
                return None         # constant bytes, an input or a parameter: no computing
            k = self._value(b)
            self._okrep.setdefault(k, b)
            return k

        self._okrep.setdefault(start, base)
        ways: dict[tuple, list[tuple[tuple | None, tuple | None]]] = {}
        todo = [start]
        while todo:             # (a form's own value, or None with the values of its operands)
            u = todo.pop()
            if u in ways:
                continue
            fs = ways[u] = []
            t = self._okrep[u]
            for f in [t, *self.forms.of(t)]:
                if view(f).base is not f:
                    b = op_base(f)
                    fs.append((b, None))            # a layout chain over another value
                    reach: tuple[tuple | None, ...] = (b,)
                elif any((p, f.type.dtype) in ops for p in _meeting(f.info.name)):  # type: ignore[union-attr]
                    reach = tuple(op_base(c) for c in f.children)
                    fs.append((None, reach))
                else:
                    continue
                todo.extend(b for b in reach if b is not None and b not in memo and b not in ways)
        ok: set[tuple] = set()

        def done(b: tuple | None) -> bool:
            return b is None or b in ok or memo.get(b) is True

        changed = True
        while changed:
            changed = False
            for u, fs in ways.items():
                if u not in ok and any(done(b) if ch is None else all(done(c) for c in ch) for b, ch in fs):
                    ok.add(u)
                    changed = True
        for u, fs in ways.items():
            memo[u] = u in ok
            self._ways[u] = fs
        return memo[start]

    def uncomputed(self, base: Term) -> Term | None:
        """A value that ``base`` needs (itself included) of which no form is an operator of an
        instruction's g_θ, when :meth:`_ok` says no to ``base`` (None otherwise)."""
        if self._ok(base):
            return None
        start = self._value(base)
        seen, todo = {start}, [start]
        while todo:
            u = todo.pop(0)
            ways = self._ways[u]
            if not ways:
                return self._okrep[u]
            for b, ch in ways:
                for v in (b,) if ch is None else ch:
                    if v is not None and v not in seen and not self._okm[v]:
                        seen.add(v)
                        todo.append(v)
        return None

    def _may_match(self, top: tuple, bkind: str, base: Term | None, seen: frozenset[str] = frozenset(),
                   moves: bool = True, out: str | None = None) -> bool:
        """A cheap necessary condition for g_θ(α) (top operator ``top``) to compute a view of
        ``base``: the operators meet (or one of the two identities applies), or g_θ moves a
        parameter whose buffer can hold the base. HBM holds only inputs and constants; another
        buffer holds a computed value only where an instruction that writes it may compute or
        move it there (:meth:`_holds`, read where ``moves``: a tile store of an f32 product is
        not tried on a target whose tiles compute only integer products). ``out``: the buffer
        the instruction writes, where the demand is: an integer add of zero whose other operand
        is a parameter in that same buffer is a copy of the demanded bytes from where they are
        demanded, which needs them there first and never costs less (in the search, a cycle)."""
        if top[0] == "const":
            return bkind == "const"
        if top[0] == "param":
            if top[1] == HBM:
                return bkind != "op"
            return bkind != "op" or not moves or self._holds(top[1], base, seen)  # type: ignore[arg-type]
        if bkind != "op":
            return False
        assert base is not None and base.info is not None
        if top[2] == base.type.dtype and _meets(top, base, self.m.identity) \
                and self._operands_may_match(top, base, seen, moves):
            return True
        # add(0, x) => x: one operand is matched against the base itself, the other against
        # zeros (which only a constant, a parameter or an elementwise operator's fixed point
        # meets). An integer add's bytes are x's whatever the base's type: VPADDD of a zero
        # register copies an f32 register's bytes
        return _through_zero(top, lambda x: not (x[0] == "param" and x[1] == out)
                             and self._may_match(x, bkind, base, seen, moves))

    def _operands_may_match(self, top: tuple, base: Term, seen: frozenset[str], moves: bool) -> bool:
        """For an elementwise operator met by the same one (:meth:`Matcher._op`'s elementwise
        branch): the kernel operator's operands are whole tensors of its shape, and each
        pattern operand that is an operator may match the demand gathered from the kernel's
        operand (its base, or a form of it). True where the top states no operand tops."""
        kids = _operand_tops(top)
        if kids is None or top[1] != base.info.name:  # type: ignore[union-attr]
            return True
        if len(base.children) != len(kids) or any(c.type.shape != base.type.shape for c in base.children):
            return False
        return all(self._operand_ok(kt, self.m.kernel_view(kc).base, seen, moves)
                   for kt, kc in zip(kids, base.children, strict=True))

    def _operand_ok(self, kt: tuple, kb: Term | None, seen: frozenset[str], moves: bool) -> bool:
        """Whether a pattern operand with top ``kt`` may match a demand on the kernel value
        ``kb`` (None: constant bytes). A parameter binds any demand and a constant is left to
        the byte comparison; an operator meets constants only as a fixed point
        (:func:`_may_be_constant`), an input's bytes only through an integer add's zero
        identity, and a kernel operator as :meth:`_may_match` says for it or a form of it."""
        if kt[0] != "op":
            return True
        if kb is None:
            return _may_be_constant(kt)
        if kb.info is None or kb.info.kind != "op":
            return _through_zero(kt, lambda x: self._operand_ok(x, kb, seen, moves))
        return any(self._may_match(kt, "op", b, seen, moves) for b in self.forms.base_forms(kb))

    def _holds(self, buf: str, base: Term, seen: frozenset[str] = frozenset()) -> bool:
        """Whether some instruction writing ``buf`` may put a view of the kernel operator
        ``base`` there (:meth:`_may_match` on its top; a move from a buffer already on the
        path, ``seen``, brings nothing new): a demand on ``buf`` with that base fails
        otherwise, every instruction :meth:`_produce_any` could try for it being one of these.
        An instruction's tops are those of one α per combination of its value attributes
        (:func:`_alpha_tables`), as :meth:`_produce_any` reads them: for the instructions that
        write a buffer other than HBM every α has one of them (test_writers_of_buffers_have_their_tops)."""
        key = (buf, base)
        if not seen:
            hit = self._held.get(key)
            if hit is not None:
                return hit
        if buf in seen:
            return False
        inner = seen | {buf}
        out = any(self._may_match(t, "op", base, inner) for t in self.writers.get(buf, ()))
        if not seen:
            self._held[key] = out
        return out

    def _leaf(self, dem: View) -> _Opt | None:
        d = dem.idx
        want = dem.defined
        dw = d[want]
        if not _count_nonzero(dw >= 0):            # constant bytes: the constant section
            data = np.where(want, -1 - d, 0).astype(np.uint8).tobytes()
            return _Opt(0.0, "const", data=data)
        base = dem.base
        if base is None or base.info is None or base.info.kind != "input" or _count_nonzero(dw < 0):
            return None
        off = dw - np.flatnonzero(want)
        if _count_nonzero(off != off[0]):
            return None
        o = int(off[0])
        size = _nbytes(base.type)
        self._bounds(base, o, len(dem), size)
        if o < 0 or o + len(dem) > size:
            return None
        return _Opt(0.0, "input", input_index=int(base.info.name), offset=o)

    def _try(self, r: IsaRule, dem: View, bound: float = math.inf) -> _Opt | None:
        """The cheapest way found to compute ``dem`` with g_θ(α) of ``r`` that costs less than
        ``bound`` (None if there is none)."""
        cost = self._cost(r)
        if cost >= bound:
            return None
        self.tries += 1
        if self.tries > self.MAX_TRIES:
            return None
        best: _Opt | None = None
        for b in self.m.match(r.pattern, dem, {}):
            ops: list[tuple[View, str] | None] = []
            total = cost
            for i, (spec, t) in enumerate(zip(r.instr.inputs, r.in_types, strict=True)):
                v = b.get(i)
                if v is None or not v.any_defined:
                    ops.append(None)
                    continue
                if len(v) != _nbytes(t):
                    total = math.inf
                    break
                shp = None if spec.buffer == HBM else tuple(t.shape)
                o = self.produce(v, spec.buffer, shape=shp)
                if o is None:
                    total = math.inf
                    break
                total += o.cost
                ops.append((v, spec.buffer, shp))
                if total >= bound:
                    break
            if total < bound:
                best = _Opt(total, "pii", r.instr.name, r.alpha, tuple(ops))
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

        def _make(dem: View, opt: _Opt) -> int:
            if opt.kind == "input":
                n = PiiNode(len(g.nodes), "input", input_index=opt.input_index,
                            type=TensorType(_u8(), (len(dem),)), offset=opt.offset)
            elif opt.kind == "const":
                from semantics.ir import Literal

                lit = Literal(_u8(), (len(opt.data),), opt.data)
                n = PiiNode(len(g.nodes), "const", literal=lit, type=TensorType(_u8(), (len(opt.data),)))
            elif opt.kind == "concat":
                kids, offs = [], []
                at = 0
                for pc in opt.pieces:
                    if pc.any_defined:      # each piece written at its place: equal pieces are two writes
                        kids.append(node(pc, HBM, fresh=True, part=True))
                        offs.append(at)
                    at += len(pc)
                n = PiiNode(len(g.nodes), "concat", buffer=HBM, type=TensorType(_u8(), (len(dem),)),
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
                    ops.append(node(o[0], o[1], fresh=inplace, shape=o[2]))
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
                        self.reason = (f"no program found for output {i} within the tiling search's bounds "
                                       f"({self.MAX_TRIES:,} instruction tries, {self.MAX_DEMANDS:,} demands)")
                    elif (r.base is not None and r.base.info is not None and r.base.info.kind == "op"
                          and (u := self.uncomputed(r.base)) is not None):
                        self.reason = (f"no instruction computes {u.info.name} on {u.type.dtype.name}"  # type: ignore[union-attr]
                                       f"{list(u.type.shape)}, which output {i} needs (nor any form of it "
                                       "the proven rewrites give)")
                    elif leaf is not None and leaf.kind == "input":
                        self.reason = (f"output {i} is the bytes of input {leaf.input_index} (at offset "
                                       f"{leaf.offset}) and no instruction sequence writes them to the output")
                    return None
            try:
                for r in roots:     # each output its own node, written at its place
                    g.roots.append(node(r, HBM, fresh=True, root=True))
            except _OutOfBounds:
                self.reason = (f"no program found within the tiling search's bounds ({self.MAX_TRIES:,} "
                               f"instruction tries, {self.MAX_DEMANDS:,} demands)")
                return None
            return g
        finally:
            node = _make = None     # type: ignore[assignment]  # mutually recursive closures: break the cycle


_OPS: dict[int, tuple[Accelerator, frozenset]] = {}
_OPCODE = re.compile(r"=\s*([a-z]+[0-9]*)\[[^\]]*\]\S*\s+([a-z][a-z0-9-]*)\(")


def _computing_ops(acc: Accelerator) -> frozenset[tuple[str, Any]]:
    """(operator, result dtype) of every operator in some instruction's semantics (layout
    operators too: a pad with a computed padding value is a base of its own, :class:`_Views`),
    read from the description's HLO text (α only fills in numbers, so no g_θ(α) names another;
    lowering only removes operators): a superset of the operators any g_θ(α) has."""
    hit = _OPS.get(id(acc))
    if hit is not None and hit[0] is acc:
        return hit[1]
    from semantics.dtypes import DTYPES

    out = frozenset((op, DTYPES[dt]) for ins in acc.instructions.values()
                    for dt, op in _OPCODE.findall(ins.semantics)
                    if op not in ("parameter", "constant") and dt in DTYPES)
    _OPS[id(acc)] = (acc, out)
    return out


_TOPS: dict[int, tuple[IsaRule, tuple]] = {}


def _top(r: IsaRule) -> tuple:
    """What g_θ(α) computes at the top, below its layout chain (memoized per rule)."""
    hit = _TOPS.get(id(r))
    if hit is not None and hit[0] is r:
        return hit[1]
    out = _top_of(r.pattern, r)
    _TOPS[id(r)] = (r, out)
    return out


def _top_of(pat: Term, r: IsaRule) -> tuple:
    """``pat``'s top below its layout chain: ("const",), ("param", buffer) or ("op", name,
    dtype, operand tops, contraction size); the operand tops only for an integer add, whose
    operand ``x`` may meet the demand through ``add(0, x) => x`` (:meth:`Matcher._op`), else ();
    the contraction size only for a matrix product, else None."""
    b = view_of(pat).base
    if b is None:
        return ("const",)
    if b.is_param:
        return ("param", r.instr.inputs[b.index].buffer)
    assert b.info is not None
    subs: tuple = ()
    if b.info.name == "add" and not b.type.dtype.is_float and len(b.children) == 2:
        subs = tuple(_top_of(c, r) for c in b.children)
    k = int(b.children[0].type.shape[1]) if b.info.name == "dot" and _is_mm(b) else None
    kids = None
    if b.info.name in _ELEMENTWISE and b.children:
        kids = subs or tuple(_top_of(c, r) for c in b.children)
    return ("op", b.info.name, b.type.dtype, subs, k, kids)


def _may_be_constant(top: tuple) -> bool:
    """Whether a pattern with this top can compute a demand of constant bytes
    (:meth:`Matcher.match`): its own constants, a parameter bound to them, or an elementwise
    operator mapping a constant to itself (:meth:`Matcher._fixed_point`), each of its operands
    then demanded the same constants (as through an integer add's zero identity)."""
    if top[0] != "op":
        return True
    if top[1] not in _ELEMENTWISE:
        return False
    kids = _operand_tops(top)
    return kids is None or all(_may_be_constant(k) for k in kids)


def _operand_tops(top: tuple) -> tuple | None:
    """The operand tops an operator top states (an integer add's always; an elementwise
    operator's per α), or None."""
    return top[5] if top[5] is not None else (top[3] or None)


def _through_zero(top: tuple, meets: Any) -> bool:
    """``add(0, x) => x`` on an integer add's top (its operand tops ``top[3]``; none for other
    operators): ``meets`` one operand while the other can be zeros (:func:`_may_be_constant`)."""
    subs = top[3]
    return any(meets(subs[s]) and _may_be_constant(subs[1 - s]) for s in range(len(subs)))


def _sizeless(top: tuple, kids: bool = True) -> tuple:
    """``top`` with no contraction size, and without ``kids`` no operand tops beyond an
    integer add's: what every α of an instruction has in common (its sizes vary with α; the
    operand tops of a store into HBM do too: a strided one's top is a select or a
    dynamic-update-slice)."""
    if top[0] != "op":
        return top
    ops = tuple(_sizeless(t, kids) for t in top[5]) if kids and top[5] is not None else None
    return top[:3] + (tuple(_sizeless(t, kids) for t in top[3]), None, ops)


_STACKS: dict[tuple[int, ...], tuple[list[IsaRule], tuple]] = {}


def _stack(rules: list[IsaRule], n: int) -> tuple:
    """(rules, one row per distinct constant layout, each rule's row, the columns some rule has a
    constant in) for :meth:`Tiler._consistent`; memoized per process on the rules (cached
    objects themselves, so a pure function of them)."""
    key = tuple(id(r) for r in rules) + (n,)
    hit = _STACKS.get(key)
    if hit is not None and all(x is y for x, y in zip(hit[0], rules, strict=True)):
        return hit[1]
    codes = np.stack([view_of(r.pattern).idx for r in rules]) if rules else np.zeros((0, n), np.int64)
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
    out = (rules, consts[reps], which, ccols)
    _STACKS[key] = (list(rules), out)
    return out


def _costs_and_tops(rules: list[IsaRule], cost: Any) -> tuple:
    """(each rule's cost, each rule's index into the distinct tops, the distinct tops)."""
    tops: dict[tuple, int] = {}
    top_of = np.array([tops.setdefault(_top(r), len(tops)) for r in rules], dtype=np.int64)
    return (np.array([cost(r) for r in rules], dtype=np.float64), top_of, list(tops))


_RULES: dict[tuple, IsaRule | None] = {}

#: past these sizes (a campaign over kernels of many shapes: each new α adds its pattern and
#: its byte views, up to tens of KB each) a compile starts by emptying the pattern caches; the
#: 18 paper kernels together hold 45 MB of views and 1,800 patterns
MAX_VIEW_BYTES = 160 << 20
MAX_RULES = 10_000


def trim_caches() -> None:
    """Empty the process's pattern caches when they have grown past their bounds."""
    if view_of.nbytes > MAX_VIEW_BYTES or len(_RULES) > MAX_RULES:
        view_of.clear()
        for d in (_RULES, _TOPS, _STACKS, _TABLES, _NB):
            d.clear()


def _rule(acc: Accelerator, ins: Any, alpha: dict[str, int], isa: IsaRules | None = None,
          gate: Any = None) -> IsaRule | None:
    """g_θ(α) lowered (constants folded, no-ops removed), and normalized as phase 1's ``isa``
    normalizes its IR-to-ISA rules where given; cached per process. Its time counts as
    generation, less what the proof ``gate`` spent proving for the normalization."""
    key = (acc.name, id(acc), ins.name, tuple(alpha.items()), None if isa is None else isa.key)
    if key not in _RULES:
        t0 = time.perf_counter()
        p0 = gate.seconds if gate is not None else 0.0
        r: IsaRule | None = None
        # without a normalizer: phase 1's rule as lowered (IsaRules keeps none of its own here)
        r = (isa if isa is not None else IsaRules(acc)).rule(ins, alpha)
        _RULES[key] = r
        GEN_SECONDS[0] += time.perf_counter() - t0 - ((gate.seconds - p0) if gate is not None else 0.0)
    return _RULES[key]


#: seconds this process spent generating g_θ(α) patterns in :func:`_rule` (first uses; the
#: driver reports them as backend generation, not as M3)
GEN_SECONDS = [0.0]


def _u8():  # noqa: ANN202
    from semantics.dtypes import U8

    return U8
