"""Forms: the other forms a kernel value has in the saturated e-graph (M2's proven rewrites), as
terms, and a demand read through them.

What belongs here: :class:`Forms` (per kernel value, the e-nodes of its e-class as terms; a
demand's bytes read through another form of its base; :meth:`Forms.leaf_view`, a demand read
through a form that is a kernel input, an input's layout or constant bytes). One per compile: it
owns the byte views of that compile's kernel terms (:attr:`Forms.view_of`). Nothing here
matches patterns or searches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...egraph.terms import Term
from .views import View, Views

__all__ = ["Forms"]


class Forms:
    """The other forms of a kernel value: the e-nodes of its e-class after M2's proven rewrites,
    as terms (each child is its class's representative: the kernel's own term where there is
    one, else a term built from an e-node whose children have representatives, so terms stay
    acyclic). Without an e-graph every value has only its own form."""

    def __init__(self, egraph: Any = None, snap: Any = None, memo: dict[int, tuple[Term, int]] | None = None) -> None:
        self.cls: dict[Term, int] = {}
        self.alts: dict[int, list[Term]] = {}
        self.view_of = Views()             # the views of this kernel's terms
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
        hit = [av for av in self._leaves(base) if constants or av.base is not None]
        if not hit:
            return None
        d, av = dem.idx, hit[0]
        return View(av.base, np.where(d >= 0, av.idx[np.maximum(d, 0)], d))

    def has_leaf(self, base: Term) -> bool:
        """Whether :meth:`leaf_view` reads a demand on the operator ``base`` through some form
        (an input, an input's layout or constant bytes)."""
        return self.snap is not None and bool(self._leaves(base))

    def _leaves(self, base: Term) -> list[View]:
        """The views of ``base``'s forms that are an input's bytes (first) or constant bytes."""
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
        return hit

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
