"""Byte views: a value's bytes as a gather from one base term (seed 000 §5.2.3's slice^H and
concat^H read as index arrays).

What belongs here: :class:`View` (per byte of a value, which byte of its base it is, or a constant
byte, or :data:`DC` "don't care"), :class:`Views` (a memo of the views of a DAG of terms: one per
owner -- the target's instruction patterns (:class:`~.tops.TargetTiling`), one compile's kernel
terms (:class:`~.forms.Forms`) -- never a process-wide one) and :func:`view_of` (a view with a memo
of its own). Nothing here searches or matches.

Every data-movement operator (reshape, bitcast-convert, copy, transpose, slice, broadcast, pad
with a constant, reverse; a concatenate whose operands read one base; a select with a constant
predicate) is a gather, so a chain of them, on the kernel's side or in an instruction's semantics
g_θ(α), becomes one index array. Which operator moves which byte is defined by the reference
interpreter (``semantics/ops/structural.py``, numpy); :meth:`Views._view` restates it as index
arithmetic (what the search needs: where each byte comes from, not its value). The tests that
tie the two together: ``tests/compilers/test_act_tiling_views.py`` (each operator on its own,
random shapes and attributes: the bytes the view gathers from a random input equal the
interpreter's result) and ``tests/compilers/test_act_amx.py::test_byte_view_of_a_layout_chain_is_the_interpreter``
(chains). The z3 encoding of the same operators (``semantics/smt.py``) is tied to the
interpreter by ``tests/semantics/test_smt_vs_interp.py``; the prover's symbolic index functions
(``verif/symbolic.py``) are not compared with this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.types import TensorType

from ...egraph.terms import Term

__all__ = ["DC", "View", "Views", "view_of", "nbytes", "LAYOUT"]

DC = -(1 << 40)     # a byte nobody reads ("don't care")
# codes: >= 0 is a byte of the base's image; -1 - b is the constant byte b (0..255); DC


def _nz(a: np.ndarray) -> bool:
    """``a.any()`` for a whole array, without numpy's Python-level reduction wrapper (the search
    asks it of small arrays some 10^5 times per kernel)."""
    return _count_nonzero(a) != 0


_count_nonzero = np.count_nonzero


def nbytes(t: TensorType) -> int:
    """The bytes of a value of type ``t``."""
    return int(t.size) * t.dtype.nbytes


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


#: the operators :meth:`Views._view` reads as gathers of their first operand
LAYOUT = frozenset({"reshape", "bitcast-convert", "copy", "transpose", "slice", "broadcast", "pad", "reverse"})


class Views:
    """:func:`view_of` with a memo (terms are DAGs; the memo holds its terms, so their ids stay
    theirs). Its owner decides how long it lives: the target's patterns keep one
    (:class:`~.tops.TargetTiling`), each compile's kernel terms get their own
    (:attr:`~.forms.Forms.view_of`), so a long campaign does not keep every kernel's views
    (~1 MB per AMX compile) alive."""

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
        n = nbytes(t.type)
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
        if info.kind != "op" or info.name not in LAYOUT:
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
        else:  # pragma: no cover - LAYOUT is exhaustive above
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


def view_of(t: Term) -> View:
    """The byte view of ``t`` (with a memo of its own, dropped on return: owners that ask for many
    views keep a :class:`Views`)."""
    return Views()(t)
