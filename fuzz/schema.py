"""The campaign database's schema and vocabulary: its tables, the columns added since their first
release, and the outcomes a case row may hold.

What belongs here: the one statement of what the database holds, imported by :mod:`fuzz.store`
(which reads and writes it) and by :mod:`reports` (which aggregates it). The outcome vocabulary is
the check's (:mod:`check.verdict`), re-exported so no reader restates it.

Tables:

- ``campaigns``: one row per campaign (``id``, the canonical ``args`` JSON, ``seed``, ``started``,
  ``finished``).
- ``cases``: one row per (campaign, target, seed), written once, when the case is complete.
  Columns: generator, graph HLO text, outcome (:data:`OUTCOMES`), stage, symptom, reason, timings
  JSON (gen, compile and its M1-M6 breakdown, each backend), cycles JSON, the share of finite
  non-constant output elements of the ``scaled`` set (``informative``) and of every set
  (``informative_sets`` JSON), coverage JSON (operators, dtypes, instructions, the operator the
  compiler gave up on), bucket signature, ``done`` (the time the row was written) and the oracles
  not run with the reason (``skipped`` JSON).
- ``buckets``: one row per failure signature (first campaign and case seen, reproducer folder,
  replay command).
- ``rtl_coverage`` (:data:`RTL_COVERAGE_SCHEMA`, present once a campaign recorded coverage): one row per (campaign, design, kind) with kind ``line`` or ``toggle``,
  ``covered`` and ``total`` points and ``files`` (per-process tallies merged;
  :mod:`fuzz.rtl_coverage`).
"""

from __future__ import annotations

from check.verdict import FAILURES, OUTCOMES

__all__ = ["SCHEMA", "RTL_COVERAGE_SCHEMA", "ADDED_COLUMNS", "REQUIRED_TABLES", "OUTCOMES", "FAILURES"]

SCHEMA = """
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

#: the table of a campaign's RTL code coverage, created when a campaign first records one (a database
#: without it has collected none)
RTL_COVERAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS rtl_coverage (
    campaign INTEGER NOT NULL,
    design TEXT NOT NULL,
    kind TEXT NOT NULL,
    covered INTEGER NOT NULL,
    total INTEGER NOT NULL,
    files INTEGER NOT NULL,
    PRIMARY KEY (campaign, design, kind)
);
"""

#: columns of ``cases`` added after its first release, with their declarations: a database without
#: one gets it (ALTER TABLE ... ADD COLUMN) when a writable Store opens it; a read-only Store migrates
#: nothing, so its readers ask for such a column first (``Store.has_case_column``)
ADDED_COLUMNS: tuple[tuple[str, str], ...] = (("informative", "REAL"), ("informative_sets", "TEXT"),
                                              ("skipped", "TEXT"), ("done", "REAL"))

#: the tables every campaign database has
REQUIRED_TABLES = ("campaigns", "cases", "buckets")
