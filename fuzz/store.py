"""The campaign database: SQLite in WAL mode, written by one process (the campaign's coordinator).

The schema and the outcome vocabulary are :mod:`fuzz.schema`'s; the report's aggregate reads are
:class:`fuzz.aggregates.Aggregates`'s, which :class:`Store` inherits. Nothing outside this package
reads the database but through a :class:`Store`.

A campaign started again with the same args on the same database gets the same ``campaigns`` row
back (:meth:`Store.open_campaign`) while it is unfinished: that is the resume. A case row is
written once, when the case is complete (``INSERT ... ON CONFLICT DO NOTHING``): a process killed
mid-case leaves no row for it, and a resumed campaign runs exactly the seeds without a row. A
database written before a column existed is migrated when opened for writing
(:data:`fuzz.schema.ADDED_COLUMNS`: the column is added, NULL in the old rows, which read back as
empty); old rows stay readable.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from check.verdict import Verdict
from semantics.errors import AccvError

from .aggregates import Aggregates
from .schema import ADDED_COLUMNS, FAILURES, OUTCOMES, REQUIRED_TABLES, RTL_COVERAGE_SCHEMA, SCHEMA

__all__ = ["Case", "Store", "StoreError", "OUTCOMES", "FAILURES"]


class StoreError(AccvError):
    """A database that cannot be read as a campaign database (missing, not SQLite, tables missing)."""


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


class Store(Aggregates):
    """The database at ``path``: created with its tables when missing, or with ``read_only`` opened
    as it is (never written, never migrated; :class:`StoreError` when it is not a campaign database)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only:
            self.db = self._open_read_only(self.path)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._migrate()

    @staticmethod
    def _open_read_only(path: Path) -> sqlite3.Connection:
        if not path.is_file():
            raise StoreError(f"{path}: no such file")
        db = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            db.close()
            raise StoreError(f"{path}: not an SQLite database ({e})") from None
        if not set(REQUIRED_TABLES) <= names:
            db.close()
            raise StoreError(f"{path}: not a campaign database (tables {', '.join(REQUIRED_TABLES[:-1])} and "
                             f"{REQUIRED_TABLES[-1]} expected)")
        return db

    def _migrate(self) -> None:
        """Add the columns of :data:`fuzz.schema.ADDED_COLUMNS` an older database lacks."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(cases)")}
        for name, decl in ADDED_COLUMNS:
            if name not in have:
                self.db.execute(f"ALTER TABLE cases ADD COLUMN {name} {decl}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def counts(self, campaign: int) -> dict[str, int]:
        """outcome -> cases of ``campaign``."""
        return {o: int(n) for o, n in self.db.execute("SELECT outcome, COUNT(*) FROM cases WHERE campaign = ? "
                                                     "GROUP BY outcome", (campaign,))}

    def case_graph(self, campaign: int, target: str, seed: int) -> str | None:
        """The HLO text of one case's graph (None when the case or its graph is not stored)."""
        row = self.db.execute("SELECT graph FROM cases WHERE campaign = ? AND target = ? AND seed = ?",
                              (campaign, target, seed)).fetchone()
        return row[0] if row and row[0] else None

    def case_generator(self, campaign: int, target: str, seed: int) -> str | None:
        """The generator of one case (None when the case is not stored)."""
        row = self.db.execute("SELECT generator FROM cases WHERE campaign = ? AND target = ? AND seed = ?",
                              (campaign, target, seed)).fetchone()
        return str(row[0]) if row else None

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

    # -- RTL coverage -------------------------------------------------------------------------------
    def put_rtl_coverage(self, campaign: int, figures: dict[str, dict[str, tuple[int, int]]],
                         files: dict[str, int]) -> None:
        """Store ``campaign``'s figure, design -> kind -> (covered, total), with the number of per-process
        files merged per design (replacing an earlier figure of the same campaign and design)."""
        self.db.executescript(RTL_COVERAGE_SCHEMA)
        with self.db:
            for design, kinds in figures.items():
                for kind, (covered, total) in kinds.items():
                    self.db.execute("INSERT INTO rtl_coverage (campaign, design, kind, covered, total, files) "
                                    "VALUES (?,?,?,?,?,?) ON CONFLICT(campaign, design, kind) DO UPDATE SET "
                                    "covered = excluded.covered, total = excluded.total, files = excluded.files",
                                    (campaign, design, kind, covered, total, files[design]))

    def rtl_coverage(self, campaign: int) -> dict[str, dict[str, tuple[int, int]]]:
        """The stored figure of ``campaign``: design -> kind -> (covered, total) ({} when none)."""
        if self.rtl_coverage_table(campaign) is None:
            return {}
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for design, kind, covered, total in self.db.execute(
                "SELECT design, kind, covered, total FROM rtl_coverage WHERE campaign = ? ORDER BY design, kind",
                (campaign,)):
            out.setdefault(design, {})[kind] = (int(covered), int(total))
        return out
