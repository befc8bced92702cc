"""The SQL aggregation of reports/query.py against the same numbers counted row by row in Python."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from fuzz.store import FAILURES, Store
from reports.query import FAILURES as REPORT_FAILURES
from reports.query import ReportError, load


def _rows(db: Path, campaign: int) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM cases WHERE campaign = ?", (campaign,))]
    con.close()
    return rows


def test_failures_match_the_store() -> None:
    assert REPORT_FAILURES == FAILURES


def test_aggregates_match_a_row_by_row_count(campaign_db: Path) -> None:
    d = load(campaign_db, cache=False)
    assert d.campaign.id == 2 and [c.id for c in d.campaigns] == [1, 2]
    rows = _rows(campaign_db, 2)
    assert d.campaign.cases == len(rows)
    outcomes = Counter((r["target"], r["outcome"]) for r in rows)
    assert {(t, o): n for t, per in d.outcomes.items() for o, n in per.items()} == dict(outcomes)
    assert d.campaign.failures == sum(r["outcome"] in FAILURES for r in rows)
    ops = Counter((r["target"], op) for r in rows for op in json.loads(r["coverage"]).get("ops", []))
    assert {(t, f"{o}:{dt}"): n for t, o, dt, n in d.ops} == dict(ops)
    instr = Counter((r["target"], k) for r in rows for k in json.loads(r["coverage"]).get("instructions", {}))
    assert {(t, k): n for t, k, n, _ in d.instructions} == dict(instr)
    alpha = Counter((r["target"], a) for r in rows for a in json.loads(r["coverage"]).get("alpha", []))
    assert {(t, f"{k}={v}"): n for t, k, v, n in d.alpha} == dict(alpha)
    # compile-time bins: every compile counted once, the seconds add up
    compiles = [(r["target"], json.loads(r["timings"]).get("compile")) for r in rows]
    compiles = [(t, c) for t, c in compiles if c is not None]
    assert sum(b["cases"] for b in d.compile_bins) == len(compiles)
    assert sum(b["total"] for b in d.compile_bins) == pytest.approx(sum(c for _, c in compiles))
    m3 = sum(json.loads(r["timings"]).get("compile.M3", 0) for r in rows)
    assert sum(b["parts"]["M3"] for b in d.compile_bins) == pytest.approx(m3)
    gem = sorted(c for t, c in compiles if t == "gemmini")
    assert d.compile_stats["gemmini"]["p50"] == gem[(len(gem) + 1) // 2 - 1]
    assert d.compile_stats["gemmini"]["max"] == gem[-1]
    # per backend: cases that ran it, and the failures charged to it
    runs = Counter((r["target"], k[4:]) for r in rows for k in json.loads(r["timings"]) if k.startswith("run."))
    assert {(b["target"], b["backend"]): b["runs"] for b in d.backends} == dict(runs)
    mism = Counter((r["target"], r["stage"][8:]) for r in rows if r["outcome"] == "mismatch")
    assert {(b["target"], b["backend"]): b["mismatch"] for b in d.backends if b["mismatch"]} == dict(mism)
    rtl = sorted(json.loads(r["cycles"])["rtl"] for r in rows if json.loads(r["cycles"]).get("rtl") is not None
                 and r["target"] == "qkv")
    qkv_rtl = next(c for c in d.cycles if c["target"] == "qkv" and c["backend"] == "rtl")
    assert (qkv_rtl["cases"], qkv_rtl["max"]) == (len(rtl), rtl[-1])
    # throughput: every case with a completion time falls in one minute
    assert sum(n for _, _, n in d.per_minute) == len(rows)
    # buckets: newest first, each with its replay command and kernel on disk
    sigs = {r["bucket"] for r in rows if r["bucket"]}
    assert {b["signature"] for b in d.buckets} == sigs
    firsts = [b["first_seen"] for b in d.buckets]
    assert firsts == sorted(firsts, reverse=True)
    assert all(b["replay"].startswith("accv fuzz --replay ") and "HloModule" in b["kernel"] for b in d.buckets)
    prev = {r["bucket"] for r in _rows(campaign_db, 1) if r["bucket"]}
    assert set(d.campaign.new) == sigs - prev and set(d.campaign.vanished) == prev - sigs


def test_the_trend_cache_gives_the_same_totals(campaign_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    shutil.copy(campaign_db, db)
    cold = load(db)
    assert Path(str(db) + ".report-cache.json").is_file()
    warm = load(db)
    for a, b in zip(cold.campaigns, warm.campaigns, strict=True):
        assert (a.cases, a.passed, a.failures, a.ops, a.instructions, a.alpha, a.buckets, a.new, a.vanished) == \
               (b.cases, b.passed, b.failures, b.ops, b.instructions, b.alpha, b.buckets, b.new, b.vanished)
    # a campaign whose rows changed (here: one deleted) is aggregated again, not read from the cache
    con = sqlite3.connect(db)
    con.execute("DELETE FROM cases WHERE campaign = 1 AND rowid = (SELECT MIN(rowid) FROM cases WHERE campaign = 1)")
    con.commit()
    con.close()
    assert load(db).campaigns[0].cases == cold.campaigns[0].cases - 1


def test_an_older_database_and_a_missing_rtl_table(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)   # the schema before cases.done
    con.executescript("""
        CREATE TABLE campaigns (id INTEGER PRIMARY KEY AUTOINCREMENT, args TEXT NOT NULL, seed INTEGER NOT NULL,
                                started REAL NOT NULL, finished REAL);
        CREATE TABLE cases (campaign INTEGER NOT NULL, target TEXT NOT NULL, seed INTEGER NOT NULL,
            generator TEXT NOT NULL, graph TEXT, outcome TEXT NOT NULL, stage TEXT, symptom TEXT, reason TEXT,
            timings TEXT, cycles TEXT, informative REAL, coverage TEXT, bucket TEXT, PRIMARY KEY (campaign, target, seed));
        CREATE TABLE buckets (signature TEXT PRIMARY KEY, campaign INTEGER NOT NULL, target TEXT NOT NULL,
            seed INTEGER NOT NULL, first_seen REAL NOT NULL, reproducer TEXT, replay TEXT);
        INSERT INTO campaigns VALUES (1, '{"targets": ["gemmini"]}', 0, 1000.0, 1060.0);
        INSERT INTO cases VALUES (1, 'gemmini', 0, 'gen', NULL, 'pass', NULL, NULL, NULL,
            '{"compile": 0.5, "compile.M1": 0.1, "run.sim": 0.01}', '{"sim": 7}', 1.0, '{"ops": ["add:s8"]}', NULL);
    """)
    con.close()
    d = load(db, cache=False)
    assert not d.has_done and d.rtl_coverage is None
    assert d.outcomes == {"gemmini": {"pass": 1}} and d.campaign.per_minute == pytest.approx(1.0)


def test_rtl_coverage_rows_when_the_table_exists(campaign_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    shutil.copy(campaign_db, db)
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE rtl_coverage (campaign INTEGER, design TEXT, kind TEXT, covered INTEGER, "
                      "total INTEGER); INSERT INTO rtl_coverage VALUES (2, 'gemmini', 'line', 812, 1040), "
                      "(2, 'gemmini', 'toggle', 3110, 9877), (1, 'qkv', 'line', 1, 2);")
    con.close()
    d = load(db, cache=False)
    assert d.rtl_coverage is not None
    assert d.rtl_coverage["rows"] == [[2, "gemmini", "line", 812, 1040], [2, "gemmini", "toggle", 3110, 9877]]


def test_bad_inputs_raise_one_line_errors(tmp_path: Path, campaign_db: Path) -> None:
    with pytest.raises(ReportError, match="no such file"):
        load(tmp_path / "nope.sqlite")
    (tmp_path / "text.sqlite").write_text("not a database at all, just text" * 20)
    with pytest.raises(ReportError, match="not an SQLite database"):
        load(tmp_path / "text.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ReportError, match="not a campaign database"):
        load(other)
    with pytest.raises(ReportError, match=r"no campaign 9 \(campaigns: 1, 2\)"):
        load(campaign_db, 9)
    empty = tmp_path / "empty.sqlite"
    Store(empty).close()
    with pytest.raises(ReportError, match="holds no campaign"):
        load(empty)
