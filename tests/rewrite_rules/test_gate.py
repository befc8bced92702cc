"""The proof gate (verif/gate.py): what it trusts, what it proves at first use and how it counts
that time, and that the compiler's gate is this one."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import verif.prover
from rewrite_rules.dsl import Rule, op, rule
from semantics.errors import AccvError
from verif.gate import ProofGate, ProofStore, UnprovenRule, passing

RULES: dict[str, Rule] = {}


@rule("gate: add(x, y) => add(y, x)", family="gate_test", dtypes=("s8", "s32"), ranks=(1, 2), registry=RULES)
def _comm(c):  # noqa: ANN001, ANN202
    """Commutativity (never proved here: the records are made up)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, y), op("add", y, x), []


RULE = RULES["gate: add(x, y) => add(y, x)"]


class FakeCache:
    """What the gate reads of a proof cache: records by (rule, dtype, rank, bound)."""

    def __init__(self, records: dict[tuple[str, int], str]) -> None:
        self.dir = Path("/nonexistent")
        self.records = {k: {"status": v} for k, v in records.items()}
        self.gets: list[tuple[str, int]] = []
        self.puts: list[Any] = []

    def get(self, r: Rule, dtype: str, rank: int, bound: int) -> dict[str, Any] | None:
        self.gets.append((dtype, rank))
        return self.records.get((dtype, rank))

    def put(self, r: Rule, res: Any, bound: int) -> None:
        self.puts.append(res)
        self.records[(res.dtype, res.rank)] = {"status": res.status}


@dataclass
class Inst:
    rule: Rule
    dtype: str
    proof_rank: int


def test_only_a_proved_record_passes() -> None:
    cache = FakeCache({("s8", 1): "proved", ("s8", 2): "refuted", ("s32", 1): "unknown"})
    gate = ProofGate(store=ProofStore(cache))  # type: ignore[arg-type]
    assert gate.ok(Inst(RULE, "s8", 1))
    assert not gate.ok(Inst(RULE, "s8", 2))
    assert not gate.ok(Inst(RULE, "s32", 1))
    assert not gate.ok(Inst(RULE, "s32", 2))          # no record, and nothing is proved
    assert gate.skipped == {f"{RULE.name} [s8 r2]", f"{RULE.name} [s32 r1]", f"{RULE.name} [s32 r2]"}
    assert not gate.proved_now and gate.seconds == 0.0 and not cache.puts
    assert passing({"status": "proved"}) and not passing(None) and not passing({"status": "refuted"})


def test_a_lifted_instantiation_asks_for_its_proof_rank() -> None:
    cache = FakeCache({("s8", 1): "proved"})
    gate = ProofGate(store=ProofStore(cache))  # type: ignore[arg-type]
    assert gate.ok(Inst(RULE, "s8", 1))
    assert cache.gets == [("s8", 1)]


def test_a_missing_proof_is_run_once_at_first_use_and_timed(monkeypatch) -> None:  # noqa: ANN001
    calls = []

    @dataclass
    class Result:
        dtype: str
        rank: int
        status: str = "proved"

    def fake_prove(r: Rule, dtype: str, rank: int, timeout_s: float, bound: int) -> Result:
        calls.append((r.name, dtype, rank, timeout_s, bound))
        time.sleep(0.01)
        return Result(dtype, rank)

    monkeypatch.setattr(verif.prover, "prove", fake_prove)
    cache = FakeCache({})
    logged: list[str] = []
    gate = ProofGate(prove_missing=True, timeout_s=7.0, bound=2, log=logged.append,
                     store=ProofStore(cache))  # type: ignore[arg-type]
    assert gate.ok(Inst(RULE, "s32", 2)) and gate.ok(Inst(RULE, "s32", 2))
    assert calls == [(RULE.name, "s32", 2, 7.0, 2)]
    assert gate.seconds >= 0.01 and len(cache.puts) == 1
    assert gate.proved_now == [f"'{RULE.name}' for s32 rank 2: proved"] and len(logged) == 1
    # a second gate over the same store asks the cache, which now has the record
    again = ProofGate(prove_missing=True, store=gate.store)
    assert again.ok(Inst(RULE, "s32", 2)) and len(calls) == 1


def test_a_disabled_gate_passes_everything_without_a_cache() -> None:
    gate = ProofGate(enabled=False)
    assert gate.ok(Inst(RULE, "s8", 1)) and gate.store is None


def test_proven_needs_every_claimed_instantiation() -> None:
    cache = FakeCache({("s8", 1): "proved", ("s8", 2): "proved", ("s32", 1): "proved"})
    gate = ProofGate(store=ProofStore(cache))  # type: ignore[arg-type]
    with pytest.raises(UnprovenRule, match=r"s32 rank 2") as e:
        gate.proven([RULE], rank_bound=3)
    assert isinstance(e.value, AccvError)
    assert gate.proven([RULE], rank_bound=3, strict=False) == []
    cache.records[("s32", 2)] = {"status": "proved"}
    assert ProofGate(store=ProofStore(cache)).proven([RULE], rank_bound=3) == [RULE]  # type: ignore[arg-type]


def test_the_shared_store_is_reloaded_when_the_cache_changes(tmp_path: Path) -> None:
    (tmp_path / "proofs-v0.jsonl").write_text("")
    first = ProofStore.shared(tmp_path)
    assert ProofStore.shared(tmp_path) is first
    later = time.time() + 10
    os.utime(tmp_path / "proofs-v0.jsonl", (later, later))
    assert ProofStore.shared(tmp_path) is not first


def test_the_compiler_uses_this_gate() -> None:
    from compilers.act.phase1 import rewrite
    from compilers.act.phase1.rewrite import IrRules
    from compilers.targets import load_target

    assert rewrite.ProofGate is ProofGate
    assert isinstance(IrRules.for_target(load_target("gemmini")).gate, ProofGate)
