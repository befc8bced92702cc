"""The campaign's oracles and records beyond the program backends: the XLA graph oracle (a wrong
reference semantics is found; jax missing is a recorded skip), the database migration of the
per-set informative shares and skipped oracles, and the degenerate outcome."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

import check.oracles as oracles
from check.evaluate import evaluate_graph
from check.verdict import Verdict
from fuzz.campaign import CampaignArgs
from fuzz.store import Case, Store
from semantics.hlo_parser import parse_hlo
from semantics.ops import REGISTRY
from semantics.xla_oracle import available

_OK, _WHY = available()

ADD = parse_hlo("HloModule m\nENTRY e {\n  p = f32[16] parameter(0)\n  q = f32[16] parameter(1)\n"
                "  ROOT r = f32[16] add(p, q)\n}\n")


def test_xla_is_offered_for_every_target_and_off_by_default() -> None:
    assert CampaignArgs(backends=("sim", "xla")).spec("qkv", 0).backends == ("sim", "xla")
    assert oracles.split_backends("amx", ("emulated", "xla")) == (("emulated",), ("xla",))
    assert oracles.split_backends("amx", ())[1] == oracles.DEFAULT_GRAPH_ORACLES == ()


def test_a_missing_jax_is_a_recorded_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oracles, "_xla_available", lambda: "XLA oracle unavailable: cannot import jax (test)")
    v = evaluate_graph("amx", ADD, ("sim", "xla"), seed=1)
    assert v.outcome == "pass" and v.skipped == {"xla": "XLA oracle unavailable: cannot import jax (test)"}
    assert "run.xla" not in v.timings and set(v.informative_sets) == {"scaled", "full", "edges"}


@pytest.mark.xla
@pytest.mark.skipif(not _OK, reason=_WHY or "jax missing")
def test_xla_agrees_with_the_reference_and_finds_a_wrong_semantics(monkeypatch: pytest.MonkeyPatch) -> None:
    v = evaluate_graph("amx", ADD, ("xla",), seed=1)
    assert v.outcome == "pass" and v.skipped == {} and v.timings["run.xla"] > 0
    op = REGISTRY["add"]

    def wrong(args, attrs, out, env):  # type: ignore[no-untyped-def]  - the last element one bit off
        r = np.array(op.evaluate(args, attrs, out, env))
        r.view(np.uint32).reshape(-1)[-1:] ^= 1
        return r

    monkeypatch.setitem(REGISTRY, "add", dataclasses.replace(op, evaluate=wrong))
    v = evaluate_graph("amx", ADD, ("xla", "sim"), seed=1)
    assert (v.outcome, v.stage, v.backend, v.input_set) == ("mismatch", "compare.xla", "xla", "scaled")
    assert v.symptom == "xla differs on output of add" and "(15,)" in v.reason


def test_a_constant_kernel_is_degenerate_not_a_pass() -> None:
    g = parse_hlo("HloModule m\nENTRY e {\n  p = f32[16] parameter(0)\n  c = f32[] constant(3)\n"
                  "  ROOT b = f32[16] broadcast(c), dimensions={}\n}\n")
    v = evaluate_graph("amx", g, ("sim",), seed=0)
    assert v.outcome == "degenerate" and v.informative == 0.0


_OLD_CASES = """CREATE TABLE campaigns (id INTEGER PRIMARY KEY AUTOINCREMENT, args TEXT NOT NULL, seed INTEGER NOT NULL,
    started REAL NOT NULL, finished REAL);
CREATE TABLE cases (campaign INTEGER NOT NULL, target TEXT NOT NULL, seed INTEGER NOT NULL, generator TEXT NOT NULL,
    graph TEXT, outcome TEXT NOT NULL, stage TEXT, symptom TEXT, reason TEXT, timings TEXT, cycles TEXT,
    coverage TEXT, bucket TEXT, PRIMARY KEY (campaign, target, seed));
INSERT INTO campaigns (args, seed, started) VALUES ('{}', 0, 0);
INSERT INTO cases VALUES (1, 'qkv', 0, 'gen', 'HloModule x', 'pass', NULL, NULL, NULL, '{}', '{}', '{}', NULL);
"""


def test_an_older_database_is_migrated_and_stays_readable(db) -> None:
    con = sqlite3.connect(db)
    con.executescript(_OLD_CASES)      # written before the informative columns and skipped existed
    con.close()
    s = Store(db)
    old = s.cases(1)
    assert len(old) == 1 and old[0].outcome == "pass" and old[0].verdict.informative is None
    assert old[0].verdict.informative_sets == {} and old[0].verdict.skipped == {}
    new = Case("qkv", 1, "blocks", Verdict("degenerate", informative=0.0, informative_sets={"scaled": 0.0, "edges": 0.0},
                                           skipped={"xla": "no jax"}), "HloModule y")
    assert s.add_case(1, new)
    got = s.cases(1)[1].verdict
    assert (got.informative, got.informative_sets, got.skipped) == (0.0, {"scaled": 0.0, "edges": 0.0},
                                                                     {"xla": "no jax"})
    s.close()
    Store(db).close()                  # opening a migrated database again changes nothing
