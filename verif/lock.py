"""The proof lock: passing proofs committed to the repository (``verif/proofs.lock``), so a fresh
clone's compiler does not prove at first use what was proved before the commit.

What belongs here: :class:`ProofLock` (the file: read, look up, find stale entries, write) and
:func:`update_lock` (prove what is stale or asked for and rewrite the file), which ``accv prove
--update-lock`` and ``scripts/lock_paper_kernels.py`` call.

- An entry is one passing (PROVED or BOUNDED) rule instantiation: the rule's name, dtype, rank and
  size bound, the rule's text hash (:meth:`rewrite_rules.dsl.Rule.text_hash`), the semantics
  fingerprint (the sources a proof's meaning depends on), the prover version, the content hash
  the proof cache keys on (text and fingerprint together) and the verdict. One JSON object a line,
  keys sorted, lines sorted by (rule, dtype, rank, bound): a re-proof that changes nothing changes
  no byte, and a diff shows which entries changed.
- The gate (:class:`verif.gate.ProofGate`) trusts an entry whose content hash and prover version
  equal the rule's current ones, after the local proof cache. An entry is never trusted without a
  proof somewhere: entries are written only from proofs (run now or read from the proof cache this
  machine filled), ``tests/rewrite_rules/test_proof_lock.py`` fails on any stale entry (naming the
  entries and the command that re-proves them) and re-proves the whole lock in the slow suite.
- Stale: the rule is gone from the library, its text changed, the fingerprint changed (an
  operator's semantics, the encoders, the prover) or the prover version did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rewrite_rules.dsl import Rule, _semantics_fingerprint

from .cache import ProofCache
from .prover import PROVER_VERSION, ProofResult

__all__ = ["ProofLock", "LockUpdate", "default_lock_path", "update_lock", "entry"]


def default_lock_path() -> Path:
    """``verif/proofs.lock`` of this checkout (``ACCV_PROOF_LOCK`` overrides; empty: no lock)."""
    env = os.environ.get("ACCV_PROOF_LOCK")
    if env is not None:
        return Path(env)
    return Path(__file__).resolve().with_name("proofs.lock")


def entry(rule: Rule, res: ProofResult, bound: int) -> dict[str, Any]:
    """The lock entry of a passing result ``res`` of ``rule``."""
    return {"rule": rule.name, "dtype": res.dtype, "rank": res.rank, "bound": bound,
            "text": rule.text_hash(), "fingerprint": _semantics_fingerprint(), "prover": PROVER_VERSION,
            "hash": rule.content_hash(), "verdict": res.verdict, "generality": res.generality,
            "status": res.status}


def _slot(e: dict[str, Any]) -> tuple[str, str, int, int]:
    return (e["rule"], e["dtype"], e["rank"], e["bound"])


class ProofLock:
    """The lock file's entries, by (rule name, dtype, rank, bound)."""

    _SHARED: ClassVar[dict[str, tuple[float, ProofLock]]] = {}

    def __init__(self, path: Path | None = None) -> None:
        self.path = default_lock_path() if path is None else path
        self.entries: dict[tuple[str, str, int, int], dict[str, Any]] = {}
        if self.path.name and self.path.is_file():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    e = json.loads(line)
                    self.entries[_slot(e)] = e

    @classmethod
    def shared(cls, path: Path | None = None) -> ProofLock:
        """The lock at ``path`` (default :func:`default_lock_path`), loaded once per process while
        the file does not change."""
        p = default_lock_path() if path is None else path
        try:
            mtime = p.stat().st_mtime
        except OSError:
            mtime = 0.0
        hit = cls._SHARED.get(str(p))
        if hit is None or hit[0] != mtime:
            hit = cls._SHARED[str(p)] = (mtime, cls(p))
        return hit[1]

    def get(self, rule: Rule, dtype: str, rank: int, bound: int) -> dict[str, Any] | None:
        """The entry of this instantiation if it is current (same content hash, same prover)."""
        e = self.entries.get((rule.name, dtype, rank, bound))
        if e is None or e["prover"] != PROVER_VERSION or e["hash"] != rule.content_hash():
            return None
        return e

    def stale(self, library: dict[str, Rule]) -> list[tuple[dict[str, Any], str]]:
        """Every entry that no longer keys a current proof, with why."""
        fp = _semantics_fingerprint()
        out = []
        for e in self.entries.values():
            r = library.get(e["rule"])
            why = []
            if r is None:
                why.append("rule no longer in the library")
            else:
                if e["text"] != r.text_hash():
                    why.append("rule text changed")
                if e["fingerprint"] != fp:
                    why.append("semantics fingerprint changed")
                if e["prover"] != PROVER_VERSION:
                    why.append(f"prover version {e['prover']} -> {PROVER_VERSION}")
                if not why and e["hash"] != r.content_hash():
                    why.append("content hash changed")
            if why:
                out.append((e, ", ".join(why)))
        return sorted(out, key=lambda p: _slot(p[0]))

    def write(self, entries: Iterable[dict[str, Any]]) -> None:
        """Replace the file's entries with ``entries`` (sorted, one JSON object a line)."""
        self.entries = {_slot(e): e for e in entries}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(self.entries[k], sort_keys=True) for k in sorted(self.entries)]
        self.path.write_text("".join(ln + "\n" for ln in lines))


@dataclass
class LockUpdate:
    """What :func:`update_lock` did: the results it proved or read (``results``), entries kept
    unchanged, dropped (rule gone or no longer passing) and the entries written."""

    results: list[ProofResult]
    kept: int
    dropped: list[str]
    written: int


def update_lock(lock: ProofLock, library: dict[str, Rule], wanted: Iterable[tuple[str, str, int]], *,
                bound: int, jobs: int, cache: ProofCache | None, timeout: float | None = None,
                rlimit: int | None = None, progress: Callable[[ProofResult], None] | None = None,
                scheduler: str | None = None) -> LockUpdate:
    """Re-prove the lock's stale entries and prove ``wanted`` (rule, dtype, rank) of ``library``
    rules that have no current entry (the proof cache first), then rewrite the lock with every
    passing result and the current entries. An entry whose rule left the library, or whose
    re-proof does not pass, is dropped."""
    from .run import Task, run_tasks

    current = {k: e for k, e in lock.entries.items()
               if e["rule"] in library and lock.get(library[e["rule"]], e["dtype"], e["rank"], e["bound"])}
    dropped = [f"{e['rule']} [{e['dtype']} r{e['rank']}]: no longer in the library"
               for e, _ in lock.stale(library) if e["rule"] not in library]
    todo: dict[tuple[str, str, int], Task] = {}
    for e, _ in lock.stale(library):
        if e["rule"] in library and e["bound"] == bound:
            todo[(e["rule"], e["dtype"], e["rank"])] = Task(e["rule"], e["dtype"], e["rank"])
    for name, dtype, rank in wanted:
        if (name, dtype, rank, bound) not in current:
            todo[(name, dtype, rank)] = Task(name, dtype, rank)
    results = run_tasks(library, list(todo.values()), timeout=timeout, rlimit=rlimit, bound=bound, jobs=jobs,
                        cache=cache, progress=progress, scheduler=scheduler) if todo else []
    new = dict(current)
    for r in results:
        if r.status == "proved":
            e = entry(library[r.rule], r, bound)
            new[_slot(e)] = e
        elif new.pop((r.rule, r.dtype, r.rank, bound), None) is not None or \
                (r.rule, r.dtype, r.rank, bound) in lock.entries:
            dropped.append(f"{r.rule} [{r.dtype} r{r.rank}]: {r.verdict} now ({r.detail[:100]})")
    lock.write(new.values())
    return LockUpdate(results, len(current), dropped, len(new))
