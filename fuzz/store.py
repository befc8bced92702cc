"""The campaign database: SQLite in WAL mode, written by one process (the campaign's coordinator).

Tables:

- ``campaigns``: one row per campaign (``id``, the canonical ``args`` JSON, ``seed``, ``started``,
  ``finished``). A campaign started again with the same args on the same database gets the same
  row back (:meth:`Store.open_campaign`) while it is unfinished: that is the resume.
- ``cases``: one row per (campaign, target, seed), written once, when the case is complete
  (``INSERT ... ON CONFLICT DO NOTHING``): a process killed mid-case leaves no row for it, and a
  resumed campaign runs exactly the seeds without a row. Columns: generator, graph HLO text,
  outcome (pass, unsupported, degenerate, mismatch, compile-crash, backend-crash, timeout, crash,
  gen-error), stage, symptom, reason, timings JSON (gen, compile and its M1-M6 breakdown, each
  backend), cycles JSON, the share of finite non-constant output elements of the ``scaled`` set
  (``informative``) and of every set (``informative_sets`` JSON), coverage JSON (operators, dtypes,
  instructions), bucket signature, ``done`` (the time the row was written: the report's cases per
  minute), and the oracles not run with the reason (``skipped`` JSON, e.g.
  ``{"xla": "XLA oracle unavailable: cannot import jax ..."}``).

A database written before a column existed is migrated when opened (:data:`_ADDED_COLUMNS`: the
column is added, NULL in the old rows, which read back as empty); old rows stay readable.
- ``buckets``: one row per failure signature (first campaign and case seen, reproducer folder, replay
  command).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from check.verdict import FAILURES, OUTCOMES, Verdict

__all__ = ["Case", "Store", "OUTCOMES", "FAILURES"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    args TEXT NOT NULL,
    seed INTEGER NOT NULL,
    started REAL NOT NULL,
    finished REAL
);
CREATE TABLE IF NOT EXISTS cases (
    campaign INTEGER NOT NULL REFERENCES campaigns(id),
    target TEXT NOT NULL,
    seed INTEGER NOT NULL,
    generator TEXT NOT NULL,
    graph TEXT,
    outcome TEXT NOT NULL,
    stage TEXT,
    symptom TEXT,
    reason TEXT,
    timings TEXT,
    cycles TEXT,
    informative REAL,
    coverage TEXT,
    bucket TEXT,
    done REAL,
    informative_sets TEXT,
    skipped TEXT,
    PRIMARY KEY (campaign, target, seed)
);
CREATE TABLE IF NOT EXISTS buckets (
    signature TEXT PRIMARY KEY,
    campaign INTEGER NOT NULL,
    target TEXT NOT NULL,
    seed INTEGER NOT NULL,
    first_seen REAL NOT NULL,
    reproducer TEXT,
    replay TEXT
);
"""

#: columns of ``cases`` added after its first release, with their declarations: a database without
#: one gets it (ALTER TABLE ... ADD COLUMN) when a Store opens it
_ADDED_COLUMNS: tuple[tuple[str, str], ...] = (("informative", "REAL"), ("informative_sets", "TEXT"),
                                               ("skipped", "TEXT"), ("done", "REAL"))


@dataclass
class Case:
    """One finished case: what was run (target, seed, generator, the graph's HLO text) and its
    :class:`~check.verdict.Verdict` (the row of ``cases`` less its campaign)."""

    target: str
    seed: int
    generator: str
    verdict: Verdict
    graph: str | None = None

    @property
    def outcome(self) -> str:
        return self.verdict.outcome

    @property
    def bucket(self) -> str | None:
        """The failure's bucket signature (:func:`check.verdict.signature`), None for no failure."""
        return self.verdict.signature(self.target)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "seed": self.seed, "generator": self.generator, "graph": self.graph,
                "verdict": self.verdict.stored()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Case:
        return cls(d["target"], d["seed"], d["generator"], Verdict.from_stored(d["verdict"]), d.get("graph"))


class Store:
    """The database at ``path`` (created with its tables when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Add the columns of :data:`_ADDED_COLUMNS` an older database lacks."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(cases)")}
        for name, decl in _ADDED_COLUMNS:
            if name not in have:
                self.db.execute(f"ALTER TABLE cases ADD COLUMN {name} {decl}")

    def close(self) -> None:
        self.db.close()

    # -- campaigns ---------------------------------------------------------------------------------
    def open_campaign(self, args: dict[str, Any], seed: int) -> tuple[int, bool]:
        """(campaign id, resumed): the unfinished campaign with these exact args, or a new one."""
        text = json.dumps(args, sort_keys=True)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute("SELECT id FROM campaigns WHERE args = ? AND finished IS NULL ORDER BY id DESC",
                                  (text,)).fetchone()
            if row:
                self.db.execute("COMMIT")
                return int(row[0]), True
            cur = self.db.execute("INSERT INTO campaigns (args, seed, started) VALUES (?, ?, ?)",
                                  (text, seed, time.time()))
            self.db.execute("COMMIT")
            return int(cur.lastrowid), False
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def finish_campaign(self, campaign: int) -> None:
        self.db.execute("UPDATE campaigns SET finished = ? WHERE id = ?", (time.time(), campaign))

    def previous_campaign(self, campaign: int) -> int | None:
        """The finished campaign just before ``campaign`` in this database, if any."""
        row = self.db.execute("SELECT id FROM campaigns WHERE id < ? AND finished IS NOT NULL ORDER BY id DESC",
                              (campaign,)).fetchone()
        return int(row[0]) if row else None

    # -- cases ------------------------------------------------------------------------------------------
    def done(self, campaign: int) -> set[tuple[str, int]]:
        """(target, seed) of every case already recorded for ``campaign``."""
        return {(t, int(s)) for t, s in self.db.execute("SELECT target, seed FROM cases WHERE campaign = ?",
                                                         (campaign,))}

    def add_case(self, campaign: int, c: Case) -> bool:
        """Record a finished case; False (and nothing written) when its row already exists."""
        v = c.verdict
        cur = self.db.execute(
            "INSERT INTO cases (campaign, target, seed, generator, graph, outcome, stage, symptom, reason, timings, "
            "cycles, informative, coverage, bucket, informative_sets, skipped, done) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(campaign, target, seed) DO NOTHING",
            (campaign, c.target, c.seed, c.generator, c.graph, v.outcome, v.stage, v.symptom, v.reason,
             json.dumps(v.timings), json.dumps(v.cycles), v.informative, json.dumps(v.coverage), c.bucket,
             json.dumps(v.informative_sets), json.dumps(v.skipped), time.time()))
        return cur.rowcount == 1

    def cases(self, campaign: int) -> list[Case]:
        rows = self.db.execute(
            "SELECT target, seed, generator, graph, outcome, stage, symptom, reason, timings, cycles, informative, "
            "coverage, informative_sets, skipped FROM cases WHERE campaign = ? ORDER BY target, seed",
            (campaign,)).fetchall()
        return [Case(t, s, g, Verdict(o, st, sy, r, json.loads(ti or "{}"), json.loads(cy or "{}"), inf,
                                      json.loads(isets or "{}"), json.loads(cov or "{}"), json.loads(sk or "{}")), gr)
                for t, s, g, gr, o, st, sy, r, ti, cy, inf, cov, isets, sk in rows]

    def bucket_signatures(self, campaign: int) -> set[str]:
        return {b for (b,) in self.db.execute("SELECT DISTINCT bucket FROM cases WHERE campaign = ? AND bucket IS NOT "
                                               "NULL", (campaign,))}

    # -- buckets ----------------------------------------------------------------------------------
    def add_bucket(self, signature: str, campaign: int, target: str, seed: int) -> bool:
        """Record a bucket the first time it is seen; True when it is new to this database."""
        cur = self.db.execute("INSERT INTO buckets (signature, campaign, target, seed, first_seen) VALUES (?,?,?,?,?) "
                              "ON CONFLICT(signature) DO NOTHING", (signature, campaign, target, seed, time.time()))
        return cur.rowcount == 1

    def set_reproducer(self, signature: str, folder: str, replay: str) -> None:
        self.db.execute("UPDATE buckets SET reproducer = ?, replay = ? WHERE signature = ?", (folder, replay, signature))

    def buckets(self, signatures: Iterable[str] | None = None) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT signature, campaign, target, seed, first_seen, reproducer, replay FROM buckets "
                               "ORDER BY first_seen").fetchall()
        keys = ("signature", "campaign", "target", "seed", "first_seen", "reproducer", "replay")
        want = set(signatures) if signatures is not None else None
        return [dict(zip(keys, r, strict=True)) for r in rows if want is None or r[0] in want]
