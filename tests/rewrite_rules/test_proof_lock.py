"""The proof lock (verif/proofs.lock, verif/lock.py): the committed lock is current, the gate
trusts a current entry under the local cache and nothing else, ``update_lock`` re-proves only
stale entries, and (slow suite) every entry proves again from scratch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewrite_rules.dsl import Rule, op, rule
from rewrite_rules.library import load
from verif.cache import ProofCache
from verif.gate import ProofGate, ProofStore
from verif.lock import ProofLock, entry, update_lock
from verif.prover import ProofResult

RULES: dict[str, Rule] = {}


@rule("lock: add(x, y) => add(y, x)", family="lock_test", dtypes=("s8",), ranks=(1,), registry=RULES)
def _comm(c):  # noqa: ANN001, ANN202
    """Commutativity (proved for real in the update test: one s8 rank-1 instantiation)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, y), op("add", y, x), []


@rule("lock: negate(negate(x)) => x", family="lock_test", dtypes=("s8",), ranks=(1,), registry=RULES)
def _neg2(c):  # noqa: ANN001, ANN202
    """Double negation (its entry stays current in the update test: never proved there)."""
    x = c.tensor("x")
    return op("negate", op("negate", x)), x, []


RULE = RULES["lock: add(x, y) => add(y, x)"]
OTHER = RULES["lock: negate(negate(x)) => x"]


def _proved(dtype: str = "s8", rank: int = 1) -> ProofResult:
    return ProofResult(RULE.name, dtype, rank, "proved", "symbolic", 0.0)


def test_the_committed_lock_is_current_and_canonical() -> None:
    lock = ProofLock()
    assert lock.path.is_file() and lock.entries, f"{lock.path}: no proof lock"
    stale = lock.stale(load())
    if stale:
        lines = [f"  {e['rule']} [{e['dtype']} r{e['rank']}]: {why}" for e, why in stale[:25]]
        more = f"\n  ... and {len(stale) - 25} more" if len(stale) > 25 else ""
        pytest.fail(f"{len(stale)} of {len(lock.entries)} proof-lock entries are stale (their proofs no longer "
                    f"key the current rule text or semantics):\n" + "\n".join(lines) + more +
                    "\nre-prove them (only the stale entries are proved again) and commit verif/proofs.lock:\n"
                    "  python -m accv prove --update-lock --jobs 2")
    text = lock.path.read_text().splitlines()
    canon = sorted(text, key=lambda ln: (lambda e: (e["rule"], e["dtype"], e["rank"], e["bound"]))(json.loads(ln)))
    assert text == canon and all(ln == json.dumps(json.loads(ln), sort_keys=True) for ln in text)
    assert all(e["status"] == "proved" for e in lock.entries.values())


class EmptyCache:
    dir = Path("/nonexistent")

    def __init__(self, rec: dict | None = None) -> None:
        self.rec = rec

    def get(self, r: Rule, dtype: str, rank: int, bound: int) -> dict | None:
        return self.rec

    def put(self, r: Rule, res: object, bound: int) -> None:
        raise AssertionError("nothing is proved here")


def test_the_gate_trusts_a_current_entry_under_the_cache(tmp_path: Path) -> None:
    lock = ProofLock(tmp_path / "proofs.lock")
    lock.write([entry(RULE, _proved(), 3)])
    lock = ProofLock(lock.path)
    assert ProofGate(store=ProofStore(EmptyCache(), lock=lock)).passes(RULE, "s8", 1)  # type: ignore[arg-type]
    assert not ProofGate(store=ProofStore(EmptyCache(), lock=lock)).passes(RULE, "s8", 2)  # type: ignore[arg-type]
    # the local cache comes first: a refutation recorded there is not overridden by the lock
    refuted = EmptyCache({"status": "refuted"})
    assert not ProofGate(store=ProofStore(refuted, lock=lock)).passes(RULE, "s8", 1)  # type: ignore[arg-type]
    # an entry whose key no longer matches the rule (edited text or semantics) is not trusted
    e = entry(RULE, _proved(), 3) | {"hash": "0" * 24, "text": "edited"}
    lock.write([e])
    assert not ProofGate(store=ProofStore(EmptyCache(), lock=lock)).passes(RULE, "s8", 1)  # type: ignore[arg-type]
    assert [why for _, why in lock.stale(RULES)] == ["rule text changed"]
    assert [why for _, why in lock.stale({})] == ["rule no longer in the library"]


def test_update_reproves_only_stale_entries(tmp_path: Path) -> None:
    lib = {RULE.name: RULE, OTHER.name: OTHER}
    lock = ProofLock(tmp_path / "proofs.lock")
    kept = entry(OTHER, ProofResult(OTHER.name, "s8", 1, "proved", "symbolic", 0.0), 3)
    stale = entry(RULE, _proved(), 3) | {"hash": "0" * 24, "text": "edited"}
    lock.write([kept, stale])
    seen: list[ProofResult] = []
    up = update_lock(lock, lib, [], bound=3, jobs=1, cache=ProofCache(tmp_path / "cache"), progress=seen.append)
    assert [(r.rule, r.verdict) for r in seen] == [(RULE.name, "proved")]     # the stale one only
    assert up.kept == 1 and up.written == 2 and not up.dropped
    assert ProofLock(lock.path).stale(lib) == []
    before = lock.path.read_bytes()
    update_lock(lock, lib, [(RULE.name, "s8", 1)], bound=3, jobs=1, cache=None)   # current: nothing to prove
    assert lock.path.read_bytes() == before


@pytest.mark.slow
def test_every_lock_entry_proves_again_from_scratch() -> None:
    """The slow suite's check that no entry is trusted without a proof: all of them, no cache."""
    from verif.run import Task, run_tasks

    lock = ProofLock()
    lib = load()
    tasks = [Task(e["rule"], e["dtype"], e["rank"]) for e in lock.entries.values()]
    results = run_tasks(lib, tasks, timeout=None, bound=3, jobs=2, cache=None)
    bad = [f"{r.rule} [{r.dtype} r{r.rank}]: {r.verdict} {r.detail[:80]}" for r in results if r.status != "proved"]
    assert not bad, "\n".join(bad)
