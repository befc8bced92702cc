"""The order in which XLA:CPU visits a window's positions (reduce-window, and select-and-scatter,
which XLA:CPU expands into a variadic reduce-window followed by a scatter).

XLA:CPU emits a reduce-window through its MLIR loop emitter: a loop nest over the window
positions (one symbol per window dimension, row-major) of the operation's indexing map, the
composition of a pad (padding, base dilation) with an unpadded window. ``EmitLoopNest`` peels at
most one symbol: going from the last window dimension outwards while the product of the trip
counts seen so far is under 64, the first symbol that a constraint of the (simplified) map names,
and that no constraint names once its last value is removed, is split; the nest over the other
values runs first, then the nest for the last value. For a non-associative region the visiting
order decides the result (measured: docs/semantics.md, "Window order").

Whether a constraint names a symbol depends on XLA's ``IndexingMap::Simplify``. Per window
dimension the map has one range constraint ``stride*o + dilate*s in [L, U]`` (``o`` the output
position, ``s`` the window position; ``[L, U]`` the in-bounds part of the padded dimension) and,
with base dilation, one modulo constraint. This module models what the simplifier does with
them: substitute a variable whose range is one value, drop a constraint that interval arithmetic
proves, move constants across, fold a one-variable constraint into that variable's range, and
split a sum by the gcd of its multipliers when the range starts at 0 and the rest is irrelevant.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["window_order"]


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


class _Dim:
    """One window dimension's variables and constraints, simplified as XLA does."""

    def __init__(self, n: int, out: int, size: int, stride: int, wdil: int, bdil: int, lo: int, hi: int) -> None:
        padded = n + (n - 1) * (bdil - 1) + lo + hi if n > 0 else lo + hi
        self.L, self.U = max(0, lo), min(padded - 1, lo + (n - 1) * bdil)
        self.st, self.wd, self.bd, self.lo = stride, wdil, bdil, lo
        self.d = [0, out - 1]
        self.s = [0, size - 1]
        self.range_cons = True     # st*d + wd*s in [L, U] (or its simplified remainder)
        self.mod_cons = bdil > 1   # (st*d + wd*s - lo) mod bd == 0
        # the modulo constraint's terms: a multiplier the modulus divides drops out (as does the constant)
        self.mst = stride if stride % bdil else 0
        self.mwd = wdil if wdil % bdil else 0
        self.mc = (-lo) % bdil
        self.scale = 1             # window position = scale * symbol (after RescaleSymbols)

    def copy(self) -> _Dim:
        c = object.__new__(_Dim)
        c.__dict__.update(self.__dict__)
        c.d, c.s = list(self.d), list(self.s)
        return c

    def simplify(self) -> None:
        """``IndexingMap::Simplify``: the expression and range steps until nothing changes, then one
        merge of the modulo constraint into its variable's range."""
        for _ in range(16):
            if not (self._mod_step() | self._step()):
                break
        self._merge_mod()

    def _mod_live(self) -> list[tuple[int, str]]:
        return [(c, v) for c, v in ((self.mst, "d"), (self.mwd, "s")) if c]

    def _mod_step(self) -> bool:
        """The modulo constraint's expression: point variables become constants; with no variable
        left it is dropped; ``(k*v + c) mod bd`` whose argument stays in ``[0, bd)`` loses the mod
        and, as ``k*v + c == 0``, is folded into v's range."""
        if not self.mod_cons:
            return False
        changed = False
        for var, attr in (("d", "mst"), ("s", "mwd")):
            r = getattr(self, var)
            if getattr(self, attr) and r[0] == r[1]:
                self.mc = (self.mc + getattr(self, attr) * r[0]) % self.bd
                setattr(self, attr, 0)
                changed = True
        live = self._mod_live()
        if not live:
            self.mod_cons = False                 # satisfied (or, with a constant left, empty)
            return True
        if len(live) == 1:
            k, v = live[0]
            r = getattr(self, v)
            if 0 <= k * r[0] + self.mc and k * r[1] + self.mc < self.bd:
                if self.mc % k == 0:
                    r[0] = r[1] = -self.mc // k
                self.mod_cons = False
                return True
        return changed

    def _merge_mod(self) -> None:
        """``MergeModConstraints``: ``v mod bd == 0`` rounds v's range to multiples of bd."""
        live = self._mod_live()
        if self.mod_cons and len(live) == 1 and live[0][0] == 1 and self.mc == 0:
            r, b = getattr(self, live[0][1]), self.bd
            r[0], r[1] = _ceildiv(r[0], b) * b, _floordiv(r[1], b) * b

    def _step(self) -> bool:
        if not self.range_cons:
            return False
        # the expression's terms after substituting point variables: (coefficient, var) and a constant
        terms: list[tuple[int, str]] = []
        const = 0
        for coef, var in ((self.st, "d"), (self.wd, "s")):
            lo_v, hi_v = getattr(self, var)
            if lo_v == hi_v:
                const += coef * lo_v
            else:
                terms.append((coef, var))
        emin = const + sum(c * getattr(self, v)[0] for c, v in terms)
        emax = const + sum(c * getattr(self, v)[1] for c, v in terms)
        L, U = self.L, self.U
        if L <= emin and emax <= U:               # always satisfied: dropped
            self.range_cons = False
            return True
        L, U = L - const, U - const               # constants move to the range
        if not terms:
            self.range_cons = False               # infeasible; the map is empty (nothing visited)
            return True
        if len(terms) == 1:                       # k*v in [L, U]: folded into v's range
            k, v = terms[0]
            r = getattr(self, v)
            r[0], r[1] = max(r[0], _ceildiv(L, k)), min(r[1], _floordiv(U, k))
            self.range_cons = False
            return True
        if L != 0:
            return False
        mults = [c for c, _ in terms if c != 1]
        g = math.gcd(*mults) if mults else 1
        if g == 1:
            return False
        rest = [(c, v) for c, v in terms if c == 1]
        rmin = sum(getattr(self, v)[0] for _, v in rest)
        rmax = sum(getattr(self, v)[1] for _, v in rest)
        if _floordiv(U - rmax, g) != _floordiv(U - rmin, g):
            return False
        # the rest is irrelevant: sum(c/g * v) in [0, U // g]
        scaled = [(c // g, v) for c, v in terms if c != 1]
        self.U = _floordiv(U, g)
        self.L = 0
        if len(scaled) == 1:
            k, v = scaled[0]
            r = getattr(self, v)
            r[0], r[1] = max(r[0], 0), min(r[1], _floordiv(self.U, k))
            self.range_cons = False
            return True
        coef = {v: c for c, v in scaled}
        self.st, self.wd = coef.get("d", 0), coef.get("s", 0)
        return True

    def rescale(self) -> None:
        """XLA's ``RescaleSymbols`` (run by the reduce-window emitter): a constraint ``s mod k == 0``
        becomes ``s = k*s'``; the symbol's range is divided by k and the constraint dropped."""
        if self.mod_cons and self.mwd == 1 and not self.mst and self.mc == 0:
            k = self.bd
            self.s = [self.s[0] // k, self.s[1] // k]
            self.wd *= k
            self.scale = k
            self.mod_cons = False

    def names_symbol(self) -> bool:
        if self.s[0] >= self.s[1]:
            return False                          # one value: substituted by a constant
        if self.mod_cons and self.mwd:
            return True
        return self.range_cons and self.wd != 0


def window_order(shape: Any, out: list[int], w: Any) -> list[tuple[int, ...]]:
    """The positions of window ``w`` (a :class:`~semantics.ops.window.Window` over an operand of
    ``shape`` with output dimensions ``out``) in XLA:CPU's visiting order (see the module doc)."""
    dims = []
    for k, (n, o) in enumerate(zip(shape, out, strict=True)):
        dm = _Dim(n, o, w.size[k], w.stride[k], w.rhs_dilate[k], w.lhs_dilate[k], w.pad[k][0], w.pad[k][1])
        dm.simplify()
        dm.rescale()
        dims.append(dm)
    taps = list(np.ndindex(*w.size))
    total = 1
    for k in reversed(range(len(dims))):
        if total >= 64:
            break
        dm = dims[k]
        lo_s, hi_s = dm.s
        total *= max(0, hi_s - lo_s + 1)
        if not dm.names_symbol():
            continue
        peeled = dm.copy()
        peeled.s[1] -= 1
        peeled.simplify()
        if peeled.names_symbol():
            continue
        last = hi_s * dm.scale
        return [t for t in taps if t[k] != last] + [t for t in taps if t[k] == last]
    return taps
