"""The proof gate (invariant 3 of the design): a rule instantiation is used only where a passing
proof of the rule's current text for its (dtype, rank) is in the proof cache.

What belongs here: :class:`ProofGate`, the one gate the compiler (``compilers.act``), the
benchmarks and the tests consult, and :class:`ProofStore`, what a gate trusts.

- What it trusts: a record of the proof cache (:class:`verif.cache.ProofCache`) keyed by the
  rule's content hash, dtype, rank and bound whose status is ``proved`` (:func:`passing`), and,
  where the cache has no record, a current entry of the repository's proof lock
  (:class:`verif.lock.ProofLock`, ``verif/proofs.lock``: the same key and the prover version). A
  rule whose text changed, or that was never proved, or whose proof ended refuted or unknown, does
  not pass.
- What it proves at first use: with ``prove_missing``, an instantiation with no record is proved
  on the spot (:func:`verif.prover.prove`: z3's deterministic rlimit per query, ``timeout_s`` a
  wall-clock safety stop) and the result cached for the next process; without it, the instantiation is refused and named in
  :attr:`ProofGate.skipped`. The gate is consulted at the first match, so only the
  instantiations a kernel uses are ever proved.
- Its time: :attr:`ProofGate.seconds` counts the time spent proving (:attr:`ProofGate.proved_now`
  names what); the compiler does not count it as compile time, the CLI prints it apart.

An instantiation is anything with ``rule``, ``dtype`` and ``proof_rank`` (the rank whose proof
covers it: a pointwise-lifted instantiation needs its rank-1 proof); :meth:`ProofGate.passes`
asks for a (rule, dtype, rank) directly and :meth:`ProofGate.proven` for whole rules.

Lifetimes: a gate's answers are memoized for the gate's life (one per compiler session: a CLI
run, a benchmark, ``IrRules.for_target``'s default). The loaded proof cache is shared through
:meth:`ProofStore.shared`: one store per cache directory in the process, replaced by a fresh load
when a file in the directory changes; a store also remembers which rules passed, so a new gate
over it does not hash their sources again (~0.5 ms a rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from rewrite_rules.dsl import Rule
from semantics.errors import AccvError

from .cache import ProofCache, default_cache_dir
from .lock import ProofLock

__all__ = ["ProofGate", "ProofStore", "UnprovenRule", "passing"]


class UnprovenRule(AccvError):
    """A rule was required without a passing proof of its current text (the message names it)."""


class Instantiation(Protocol):
    """What the gate reads of a rule instantiation."""

    rule: Rule
    dtype: str
    proof_rank: int


def passing(rec: dict[str, Any] | None) -> bool:
    """Whether a proof-cache record lets its rule instantiation be used."""
    return rec is not None and rec.get("status") == "proved"


class ProofStore:
    """A loaded proof cache, the proof lock under it, and the (rule, dtype, rank, bound) found
    passing in them."""

    _SHARED: ClassVar[dict[str, tuple[float, ProofStore]]] = {}

    def __init__(self, cache: ProofCache, lock: ProofLock | None = None) -> None:
        """``lock``: default the checkout's ``verif/proofs.lock`` (:meth:`ProofLock.shared`)."""
        self.cache = cache
        self.lock = ProofLock.shared() if lock is None else lock
        #: (id(rule), dtype, rank, bound) -> the rule (held: its id stays its own)
        self.passed: dict[tuple[int, str, int, int], Rule] = {}

    @classmethod
    def shared(cls, directory: Path | None = None) -> ProofStore:
        """The store of the proof cache in ``directory`` (default: :func:`default_cache_dir`),
        loaded once per process while no file in the directory changes."""
        d = directory or default_cache_dir()
        try:
            mtime = max((f.stat().st_mtime for f in d.iterdir()), default=0.0)
        except OSError:
            mtime = 0.0
        hit = cls._SHARED.get(str(d))
        if hit is None or hit[0] != mtime:
            hit = cls._SHARED[str(d)] = (mtime, cls(ProofCache(d)))
        return hit[1]


class ProofGate:
    """Per-instantiation proof gate: :meth:`ok` is True when the instantiation's proof is cached as
    passed (proving it first when ``prove_missing``); answers are memoized per gate."""

    #: the wall-clock safety stop per solver call when a missing proof is run at first use; what
    #: decides is z3's rlimit (:mod:`verif.limits`), the same as ``accv prove``'s, so a loaded
    #: machine reaches the verdict an idle one does and compiles the same program. A generous
    #: stop costs nothing where the proof succeeds.
    TIMEOUT_S = 300.0

    def __init__(self, prove_missing: bool = False, timeout_s: float = TIMEOUT_S, bound: int = 3,
                 log: Callable[[str], None] | None = None, enabled: bool = True,
                 store: ProofStore | None = None) -> None:
        """``store``: what the gate trusts (default: the shared store of the default cache
        directory, looked up at the first question); ``enabled=False`` passes everything (for
        tests of the compiler without proofs)."""
        self.prove_missing = prove_missing
        self.timeout_s = timeout_s
        self.bound = bound
        self.log = log
        self.enabled = enabled
        self.store = store
        self._memo: dict[tuple[str, str, int], bool] = {}
        self.skipped: set[str] = set()     # instantiations refused (no passing proof)
        self.proved_now: list[str] = []
        self.seconds = 0.0                 # time spent proving on the spot

    def ok(self, inst: Instantiation) -> bool:
        """Whether the instantiation may fire."""
        if not self.enabled:
            return True
        return self.passes(inst.rule, inst.dtype, inst.proof_rank)

    def passes(self, rule: Rule, dtype: str, rank: int) -> bool:
        """Whether ``rule`` has a passing proof for (``dtype``, ``rank``) (proved now if missing
        and ``prove_missing``)."""
        key = (rule.name, dtype, rank)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if self.store is None:
            self.store = ProofStore.shared()
        store = self.store
        pkey = (id(rule), dtype, rank, self.bound)
        if store.passed.get(pkey) is rule:
            self._memo[key] = True
            return True
        cache = store.cache
        rec = cache.get(rule, dtype, rank, self.bound)
        if rec is None:
            rec = store.lock.get(rule, dtype, rank, self.bound)
        if rec is None and self.prove_missing:
            from .prover import prove

            label = f"'{rule.name}' for {dtype} rank {rank}"
            if self.log:
                self.log(f"proving {label} (first use; cached under {cache.dir})")
            t0 = time.perf_counter()
            res = prove(rule, dtype, rank, self.timeout_s, self.bound)
            self.seconds += time.perf_counter() - t0
            cache.put(rule, res, self.bound)
            self.proved_now.append(f"{label}: {res.status}")
            rec = {"status": res.status}
        good = passing(rec)
        if good:
            store.passed[pkey] = rule
        else:
            self.skipped.add(f"{rule.name} [{dtype} r{rank}]")
        self._memo[key] = good
        return good

    def asked(self) -> list[tuple[str, str, int]]:
        """Every (rule name, dtype, rank) this gate was asked about, sorted."""
        return sorted(self._memo)

    def proven(self, rules: Sequence[Rule], rank_bound: int, strict: bool = True) -> list[Rule]:
        """The rules whose every claimed (dtype, rank <= ``rank_bound``) instantiation passes
        (a rule's own ``ranks`` where it states them).

        Raises:
            UnprovenRule: with ``strict``, for the first rule without such proofs (names it).
        """
        ok = []
        for r in rules:
            ranks = r.ranks or tuple(range(1, rank_bound + 1))
            missing = [(d, k) for d in r.dtypes for k in ranks if not self.passes(r, d, k)]
            if missing:
                if strict:
                    d, k = missing[0]
                    raise UnprovenRule(f"rule '{r.name}' has no passing proof for {d} rank {k} of its current "
                                       f"text (run: accv prove '{r.name}')")
                continue
            ok.append(r)
        return ok
