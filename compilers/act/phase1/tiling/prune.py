"""Pruning: necessary conditions that keep the search from trying an α (or a value) that cannot
meet a demand, each decided without matching.

What belongs here: :class:`Pruning`, the part of :class:`~.search.Tiler` that decides per value
and per demand what may be tried -- whether any instruction sequence can compute a value at all
(:meth:`Pruning._ok`, and :meth:`Pruning.uncomputed` naming the value for the exit-3 reason);
whether a pattern top may meet a kernel base (:meth:`Pruning._may_match`) and whether a buffer
can hold it (:meth:`Pruning._holds`); which α of an instruction agree with a demand's constant
bytes and cost less than the bound (:meth:`Pruning._consistent`); which loads cannot fill a
staging area (:meth:`Pruning._dead_loads`). Each is a necessary condition of
:meth:`~.matching.Matcher.match` succeeding: tests require every α it rejects to compute nothing
(``tests/compilers/test_act_amx.py::test_alphas_the_top_test_rules_out_have_no_binding``,
``test_dead_load_test_only_drops_loads_that_fail``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....isa import HBM
from ...egraph.terms import Term
from .. import IsaRule
from .tops import Gathers, Stack, Top, is_mm, may_be_constant, meeting, meets, operand_tops, through_zero
from .views import DC, View, _nz, nbytes

__all__ = ["Pruning", "PruneMemos"]


@dataclass(slots=True)
class PruneMemos:
    """One search's memos of what the necessary conditions decided."""

    ok: dict[tuple, bool] = field(default_factory=dict)          # per value (Tiler._value): computable at all
    ways: dict[tuple, list] = field(default_factory=dict)        # per value: its forms' ways (Tiler._ok)
    rep: dict[tuple, Term] = field(default_factory=dict)         # per value: a term of it
    held: dict[tuple[str, Term], bool] = field(default_factory=dict)   # (buffer, kernel op): may be put there
    value_held: dict[tuple[str, Term], bool] = field(default_factory=dict)   # (buffer, kernel value): or a form of it
    masks: dict[tuple, np.ndarray] = field(default_factory=dict)  # (instruction, buf, n, base): per top, may match
    bases: dict[Term | None, list] = field(default_factory=dict)   # a base -> it and its forms' bases
    first: dict[tuple, list[str]] = field(default_factory=dict)    # (buf, n, base) -> instructions whose tops may match


class Pruning:
    """The necessary conditions of :class:`~.search.Tiler` (a base class of it: it reads the
    tiler's ``acc``, ``target``, ``tables``, ``forms``, matcher ``m``, ``prune`` memos and
    ``staging``)."""

    def _top_mask(self, key: tuple, tops: list[Top], bkind: str, bases: list) -> np.ndarray:
        """Per distinct top of an instruction's α (``tops``), whether it may match a demand on
        one of ``bases`` (:meth:`_may_match`), once per (instruction, output, base): ``key``."""
        m = self.prune.masks.get(key)
        if m is None:
            m = self.prune.masks[key] = np.array([any(self._may_match(t, bkind, b, out=key[1]) for b in bases)
                                             for t in tops], dtype=bool)
        return m

    def _consistent(self, ins: Any, buf: str, n: int, dem: View, bound: float = math.inf,
                    top_ok: Any = None) -> list[IsaRule]:
        """The α of ``ins`` whose g_θ(α) can produce ``dem`` as far as its constant bytes go
        (the first test of :meth:`Matcher.match`), that cost less than ``bound`` and whose top
        ``top_ok`` accepts (``top_ok(tops)``: a bool per distinct top): over all α at once
        (arrays per instruction and output size, built on first use)."""
        key = (ins.name, buf, n)
        st = self.tables.stacks.get(key)
        if st is None:
            rules = self._alpha_rules(ins, buf, n)
            lay = self.target.stack(rules, n)
            st = self.tables.stacks[key] = Stack(*lay, *self.target.costs_and_tops(rules),
                                                 (lay.layouts < 0).any(axis=1))
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
        return [r for a in (a for i, a in self.tables.by_out.get((buf, n), ()) if i is ins)
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
        _, row_of, codes, psize = g
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
        size = nbytes(base.type)
        ln = psize[rows]
        dead = (n_base > 0) & (mixed | varies | (o < 0) | (o + ln > size))
        moved = ((n_base > 0) & ~mixed & ~varies).tolist()     # decided by the bounds alone
        tests = [(int(oo), int(ll), size) if m else None for oo, ll, m in zip(o.tolist(), ln.tolist(), moved, strict=True)]
        return dead.tolist(), tests

    def _gathers(self, ins: Any, buf: str, n: int) -> Gathers | None:
        """Per rule its row, the byte-code matrix and the operand sizes (:class:`~.tops.Gathers`)
        when every α of ``ins`` with output (buf, n) moves bytes of its single operand, which
        lives in HBM, and constants only; else None."""
        key = (ins.name, buf, n)
        memo = self.tables.gathers
        if key in memo:
            return memo[key]
        out = None
        if len(ins.inputs) == 1 and ins.inputs[0].buffer == HBM:
            rules = self._alpha_rules(ins, buf, n)
            views = [self.target.views(r.pattern) for r in rules]
            if rules and all(v.base is not None and v.base.is_param and v.base.index == 0 for v in views):
                out = Gathers(rules, {id(r): i for i, r in enumerate(rules)}, np.stack([v.idx for v in views]),
                              np.array([nbytes(v.base.type) for v in views], dtype=np.int64))  # type: ignore[union-attr]
        memo[key] = out
        return out

    def _value(self, t: Term) -> tuple:
        """What :meth:`_ok` decides for: ``t``'s e-class (all its forms share the answer), or
        ``t`` itself where it has none."""
        c = self.forms.cls.get(t)
        return ("t", t) if c is None else ("c", c)

    def _ok(self, base: Term) -> bool:
        """A necessary condition for any instruction sequence to compute a view of the computing
        operator ``base`` (memoized per value): one of its forms is an operator that some
        instruction's g_θ has (:attr:`TargetTiling.ops <.tops.TargetTiling.ops>`), each of whose operands is a constant, an
        input or again such a value. A way that moves ``base`` through a parameter (a load, a
        store) needs it computed first; a way that meets it inside a g_θ meets it with an
        operator of that g_θ; so a value without one is produced by nothing, and the search
        need not try the α of every instruction on it, and on every buffer (the least fixpoint
        over the values reachable from ``base``: a value is not computed by way of itself)."""
        memo = self.prune.ok
        start = self._value(base)
        hit = memo.get(start)
        if hit is not None:
            return hit
        ops = self.target.ops
        view = self.forms.view_of

        def op_base(t: Term) -> tuple | None:
            v = view(t)
            b = v.base
            if b is None or b.is_param or b.info is None or b.info.kind != "op" or not _nz(v.idx >= 0):
                return None         # constant bytes, an input or a parameter: no computing
            k = self._value(b)
            self.prune.rep.setdefault(k, b)
            return k

        self.prune.rep.setdefault(start, base)
        ways: dict[tuple, list[tuple[tuple | None, tuple | None]]] = {}
        todo = [start]
        while todo:             # (a form's own value, or None with the values of its operands)
            u = todo.pop()
            if u in ways:
                continue
            fs = ways[u] = []
            t = self.prune.rep[u]
            for f in [t, *self.forms.of(t)]:
                if view(f).base is not f:
                    b = op_base(f)
                    fs.append((b, None))            # a layout chain over another value
                    reach: tuple[tuple | None, ...] = (b,)
                elif any((p, f.type.dtype) in ops for p in meeting(f.info.name)):  # type: ignore[union-attr]
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
            self.prune.ways[u] = fs
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
            ways = self.prune.ways[u]
            if not ways:
                return self.prune.rep[u]
            for b, ch in ways:
                for v in (b,) if ch is None else ch:
                    if v is not None and v not in seen and not self.prune.ok[v]:
                        seen.add(v)
                        todo.append(v)
        return None

    def _may_match(self, top: Top, bkind: str, base: Term | None, seen: frozenset[str] = frozenset(),
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
        if top.kind == "const":
            return bkind == "const"
        if top.kind == "param":
            if top.buffer == HBM:
                return bkind != "op"
            return bkind != "op" or not moves or self._holds(top.buffer, base, seen)  # type: ignore[arg-type]
        if bkind != "op":
            return False
        assert base is not None and base.info is not None
        if top.dtype == base.type.dtype and meets(top, base, self.m.identity) \
                and self._operands_may_match(top, base, seen, moves):
            return True
        # add(0, x) => x: one operand is matched against the base itself, the other against
        # zeros (which only a constant, a parameter or an elementwise operator's fixed point
        # meets). An integer add's bytes are x's whatever the base's type: VPADDD of a zero
        # register copies an f32 register's bytes
        return through_zero(top, lambda x: not (x.kind == "param" and x.buffer == out)
                             and self._may_match(x, bkind, base, seen, moves))

    def _operands_may_match(self, top: Top, base: Term, seen: frozenset[str], moves: bool) -> bool:
        """For an elementwise operator met by the same one (:meth:`Matcher._op`'s elementwise
        branch): the kernel operator's operands are whole tensors of its shape, and each
        pattern operand that is an operator may match the demand gathered from the kernel's
        operand (its base, or a form of it). True where the top states no operand tops."""
        if top.args is not None and base.info.name == "dot" and is_mm(base):  # type: ignore[union-attr]
            # a matrix product met by one (:meth:`Matcher._dot`): operand i is gathered from the
            # kernel product's operand i (a padded contraction adds zeros beside its bytes)
            return all(self._operand_ok(kt, self.m.kernel_view(kc).base, seen, moves)
                       for kt, kc in zip(top.args, base.children, strict=True))
        kids = operand_tops(top)
        if kids is None or top.name != base.info.name:  # type: ignore[union-attr]
            return True
        if len(base.children) != len(kids) or any(c.type.shape != base.type.shape for c in base.children):
            return False
        return all(self._operand_ok(kt, self.m.kernel_view(kc).base, seen, moves)
                   for kt, kc in zip(kids, base.children, strict=True))

    def _operand_ok(self, kt: Top, kb: Term | None, seen: frozenset[str], moves: bool) -> bool:
        """Whether a pattern operand with top ``kt`` may match a demand on the kernel value
        ``kb`` (None: constant bytes). A parameter binds any demand and a constant is left to
        the byte comparison, except a parameter in HBM, which binds only what HBM may hold
        (:meth:`_in_hbm`); an operator meets constants only as a fixed point
        (:func:`~.tops.may_be_constant`), an input's bytes only through an integer add's zero
        identity, and a kernel operator as :meth:`_may_match` says for it or a form of it."""
        if kt.kind == "param":
            if kt.buffer == HBM:
                return self._in_hbm(kb)
            return not moves or self._holds_value(kt.buffer, kb)  # type: ignore[arg-type]
        if kt.kind != "op":
            return True
        if kb is None:
            return may_be_constant(kt)
        if kb.info is None or kb.info.kind != "op":
            return through_zero(kt, lambda x: self._operand_ok(x, kb, seen, moves))
        return any(self._may_match(kt, "op", b, seen, moves) for b in self.forms.base_forms(kb))

    def _in_hbm(self, kb: Term | None) -> bool:
        """Whether a demand on the kernel value ``kb`` (None: constant bytes) may be produced in
        HBM as an operand (:meth:`~.search.Tiler._produce` with neither ``root`` nor ``part``):
        constant bytes or an input's (a leaf), a value with such a form (:meth:`Forms.leaf_view`),
        a kernel output (which the program writes at its place), or a concatenate (whose bytes
        may be its operands'). A computed value is not spilled to HBM and reloaded, so any other
        operator fails there (the demand on it gets None in every search)."""
        return self._uncomputed_bytes(kb) or kb in self._root_bases()  # type: ignore[attr-defined]

    def _uncomputed_bytes(self, kb: Term | None) -> bool:
        """Whether a demand on ``kb`` may be met without computing it: constant bytes, an input,
        a concatenate (its operands' bytes) or a value with a leaf form (:meth:`Forms.leaf_view`)."""
        return (kb is None or kb.info is None or kb.info.kind != "op" or self._is_concat(kb)  # type: ignore[attr-defined]
                or self.forms.has_leaf(kb))

    def _holds_value(self, buf: str, kb: Term | None) -> bool:
        """Whether a demand in ``buf`` on bytes of the kernel value ``kb`` (an operand a pattern
        parameter binds) may be produced: constant bytes, an input's, a value with a leaf form
        (:meth:`~.search.Tiler._resolve` reads it so) or a concatenate's pass; a computed value
        needs :meth:`_holds` for it or one of its forms (the forms :meth:`_produce_any` tries).
        A value met again while its own answer is being decided (forms may reach it back) is
        taken as held: the test stays a necessary condition."""
        if self._uncomputed_bytes(kb):
            return True
        assert kb is not None
        key = (buf, kb)
        hit = self.prune.value_held.get(key)
        if hit is not None:
            return hit
        self.prune.value_held[key] = True        # while deciding: held (see above)
        out = any(b is None or self._holds(buf, b) for b in self.forms.base_forms(kb))
        self.prune.value_held[key] = out
        return out

    def _holds(self, buf: str, base: Term, seen: frozenset[str] = frozenset()) -> bool:
        """Whether some instruction writing ``buf`` may put a view of the kernel operator
        ``base`` there (:meth:`_may_match` on its top; a move from a buffer already on the
        path, ``seen``, brings nothing new): a demand on ``buf`` with that base fails
        otherwise, every instruction :meth:`_produce_any` could try for it being one of these.
        An instruction's tops are those of one α per combination of its value attributes
        (:func:`~.tops.alpha_tables`), as :meth:`_produce_any` reads them: for the instructions that
        write a buffer other than HBM every α has one of them (test_writers_of_buffers_have_their_tops)."""
        key = (buf, base)
        if not seen:
            hit = self.prune.held.get(key)
            if hit is not None:
                return hit
        if buf in seen:
            return False
        inner = seen | {buf}
        out = any(self._may_match(t, "op", base, inner) for t in self.tables.writers.get(buf, ()))
        if not seen:
            self.prune.held[key] = out
        return out
