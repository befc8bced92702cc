"""The state one random-graph generation carries (:class:`_Ctx`: the random stream, the entry
builder, the values made so far) and the helpers every sampler shares (reduction regions and their
identities, factorizations of a size). :mod:`semantics.gen` draws the graph; the samplers live there
and in :mod:`semantics.gen_windows`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .dtypes import DTYPES, DType
from .graph import ComputationBuilder, GraphBuilder
from .inputs import edge_values, random_array
from .ir import Attrs, Literal
from .types import TensorType

__all__ = ["Sampler"]


_KIND_TEST: dict[str, Callable[[DType], bool]] = {
    "num": lambda d: not d.is_pred,
    "int": lambda d: d.is_int,
    "float": lambda d: d.is_float,
    "intpred": lambda d: d.is_int or d.is_pred,
    "signed": lambda d: d.is_signed or d.is_float,
    "any": lambda d: True,
}


class _Ctx:
    """The state of one generation: the random stream, the entry builder and the values so far."""

    def __init__(self, seed: int, dtypes: Sequence[str]) -> None:
        self.rng = np.random.default_rng(seed)
        self.gb = GraphBuilder(f"gen_{seed}")
        self.cb: ComputationBuilder = self.gb.computation("main")
        self.dtypes = [DTYPES[d] for d in dtypes]
        self.values: list[tuple[str, TensorType]] = []   # tensor values usable as operands
        self.nparams = 0
        self.counter = 0
        self.regions: dict[tuple[str, str], str] = {}
        self.tuple_root = False

    # -- small random helpers ------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, seq: Sequence) -> object:
        return seq[int(self.rng.integers(len(seq)))]

    def dims(self, lo: int = 1, hi: int = 5) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def shape(self, rank: int | None = None, min_rank: int = 0, long: bool = False) -> tuple[int, ...]:
        r = int(self.rng.integers(min_rank, 4)) if rank is None else rank
        s = [self.dims() for _ in range(r)]
        if s and (long or self.chance(0.08)):
            s[int(self.rng.integers(r))] = int(self.rng.integers(6, 41))
        return tuple(s)

    def dtype(self, kind: str = "any") -> DType | None:
        ok = [d for d in self.dtypes if _KIND_TEST[kind](d)]
        return self.pick(ok) if ok else None  # type: ignore[return-value]

    def name(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"

    # -- values ------------------------------------------------------------------------------------
    def add(self, opcode: str, operands: Sequence[str], declared: TensorType | None = None,
            **attrs: object) -> str:
        nm = self.name(opcode.replace("-", "_"))
        ins = self.cb.add(nm, opcode, list(operands), Attrs(tuple(attrs.items())), declared=declared)
        if isinstance(ins.type, TensorType):
            self.values.append((nm, ins.type))
        return nm

    def param(self, t: TensorType) -> str:
        nm = f"p{self.nparams}"
        self.cb.add(nm, "parameter", [], Attrs.of(index=self.nparams), declared=t)
        self.nparams += 1
        self.values.append((nm, t))
        return nm

    def const(self, t: TensorType) -> str:
        a = random_array(self.rng, t, edges=False)
        ev = edge_values(t.dtype)
        flat = a.reshape(-1)
        mask = self.rng.random(flat.size) < 0.5
        flat[mask] = ev[self.rng.integers(0, len(ev), int(mask.sum()))]
        return self.add("constant", [], literal=Literal.from_array(flat.reshape(t.shape)))

    def fresh(self, t: TensorType) -> str:
        """A new leaf of type ``t``: mostly a parameter, sometimes a constant."""
        return self.const(t) if self.chance(0.2) else self.param(t)

    def operand(self, kind: str = "any", dtype: DType | None = None, shape: tuple[int, ...] | None = None,
                min_rank: int = 0, exclude: Sequence[str] = ()) -> tuple[str, TensorType] | None:
        """An operand: a recent value fitting the constraints (preferred), else a fresh leaf."""
        fits = [(n, t) for n, t in self.values
                if n not in exclude and (dtype is None or t.dtype == dtype) and (shape is None or t.shape == shape)
                and _KIND_TEST[kind](t.dtype) and t.rank >= min_rank and t.dtype in self.dtypes]
        if fits and self.chance(0.75):
            return fits[-1] if self.chance(0.6) else self.pick(fits)  # type: ignore[return-value]
        dt = dtype or self.dtype(kind)
        if dt is None:
            return None
        t = TensorType(dt, shape if shape is not None else self.shape(min_rank=min_rank))
        return self.fresh(t), t

    def indices(self, n: int) -> list[str]:
        """``n`` scalar start indices of one integer type (XLA requires one type)."""
        dt = self.pick([d for d in DTYPES.values() if d.is_int])
        return [self.fresh(TensorType(dt, ())) for _ in range(n)]  # type: ignore[arg-type]


Sampler = Callable[[_Ctx], "str | None"]


def _factor(c: _Ctx, n: int) -> tuple[int, ...]:
    primes, k, m = [], 2, n
    while m > 1:
        while m % k == 0:
            primes.append(k)
            m //= k
        k += 1
    rank = int(c.rng.integers(max(1, min(len(primes), 1)), 4)) if n > 1 else int(c.rng.integers(0, 3))
    dims = [1] * rank
    for p in primes:
        dims[int(c.rng.integers(rank))] *= p
    return tuple(dims)


def _region(c: _Ctx, fn: str, dt: DType) -> str:
    key = (fn, dt.name)
    if key not in c.regions:
        name = f"region_{fn}_{dt.name}"
        rb = c.gb.computation(name)
        t = TensorType(dt, ())
        rb.add("x", "parameter", [], Attrs.of(index=0), declared=t)
        rb.add("y", "parameter", [], Attrs.of(index=1), declared=t)
        rb.add("r", fn, ["x", "y"], root=True)
        c.gb.add_computation(rb.build())
        c.regions[key] = name
    return c.regions[key]


def _identity(fn: str, dt: DType) -> Literal:
    if dt.is_pred:
        v: object = fn == "and"
    elif fn in ("maximum", "minimum"):
        v = (-np.inf if fn == "maximum" else np.inf) if dt.is_float else (dt.min if fn == "maximum" else dt.max)
    elif fn == "and":
        v = -1 if dt.is_signed else dt.max
    else:
        v = 1 if fn == "multiply" else 0
    return Literal.from_array(np.array(v).astype(dt.np))
