"""What a campaign report shows, aggregated in SQL from the campaign database (fuzz/store.py).

What belongs here: reading the store (read-only) into a :class:`ReportData` of small aggregated
tables. Every query groups in SQLite (``GROUP BY`` over ``json_each`` of the JSON columns), so the
Python side only handles aggregated rows: a database of hundreds of thousands of cases is read in
well under two seconds (bench/report_scale.py). Rendering is in :mod:`reports.html` and
:mod:`reports.markdown`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semantics.errors import AccvError

__all__ = ["ReportError", "CampaignRow", "ReportData", "load", "COMPILE_PARTS", "FAILURES", "compile_bin_edges"]

#: outcomes that are failures (as fuzz.store.FAILURES; repeated so reports do not import fuzz, its sibling layer)
FAILURES = ("mismatch", "compile-crash", "backend-crash", "timeout", "crash")
#: the compile-time parts drawn as stacked bars: the modules M1-M6 with CP-SAT's share of M5 apart,
#: and the first-use work a compile does beside them (rule instantiation and pattern generation, proofs)
COMPILE_PARTS = ("M1", "M2", "M3", "M4", "M5 (CSP)", "solver", "M6", "gen", "proofs")
#: most failure buckets listed in full (the rest are counted)
MAX_BUCKETS = 200
#: most points of the cycles scatter per target (a deterministic sample by seed)
MAX_POINTS = 1500


class ReportError(AccvError):
    """The database cannot be reported on (missing file, not a campaign database, unknown campaign)."""


@dataclass
class CampaignRow:
    """One campaign with its totals (a row of the night-over-night trend)."""

    id: int
    args: dict[str, Any]
    started: float
    finished: float | None
    cases: int = 0
    passed: int = 0
    failures: int = 0
    unsupported: int = 0
    last_done: float | None = None
    ops: int = 0                 # distinct (target, operator:dtype) generated
    instructions: int = 0        # distinct (target, instruction) used
    alpha: int = 0               # distinct (target, instruction.attribute=value) used
    buckets: set[str] = field(default_factory=set)
    new: list[str] = field(default_factory=list)        # buckets not in the previous campaign
    vanished: list[str] = field(default_factory=list)   # buckets of the previous campaign not seen here

    @property
    def minutes(self) -> float | None:
        end = self.finished or self.last_done
        return (end - self.started) / 60 if end and end > self.started else None

    @property
    def per_minute(self) -> float | None:
        m = self.minutes
        return self.cases / m if m else None


@dataclass
class ReportData:
    """Everything the page and the summary show for one campaign (``campaign``) of ``db``."""

    db: str
    campaign: CampaignRow
    campaigns: list[CampaignRow]
    targets: list[str]
    has_done: bool                                   # the cases carry completion times
    per_minute: list[tuple[int, str, int]]           # (minute since start, target, cases finished)
    outcomes: dict[str, dict[str, int]]              # target -> outcome -> cases
    backends: list[dict[str, Any]]                   # target, backend, runs, seconds, mismatch, crash
    ops: list[tuple[str, str, str, int]]             # target, operator, dtype, cases
    unsupported: list[tuple[str, str, int]]          # target, operator the compiler gave up on, cases
    instructions: list[tuple[str, str, int, int]]    # target, instruction, cases, uses
    alpha: list[tuple[str, str, str, int]]           # target, instruction.attribute, value, cases
    rtl_coverage: dict[str, Any] | None              # {"table", "columns", "rows"} or None: not collected
    compile_bins: list[dict[str, Any]]               # target, bin, cases, total; with_parts (cases with a
    #                                                  module breakdown), their parts_total and parts -> seconds
    compile_stats: dict[str, dict[str, float]]       # target -> n, p50, p90, max, seconds
    cycles: list[dict[str, Any]]                     # target, backend, cases, p50, p90, max
    cycle_pairs: dict[str, list[tuple[int, int, int]]]   # target -> (seed, sim cycles, rtl cycles)
    buckets: list[dict[str, Any]]                    # newest first
    more_buckets: int = 0


def compile_bin_edges() -> list[float]:
    """Upper edges (seconds) of the compile-time histogram: half decades from 3 ms to 300 s."""
    return [10 ** (k / 2) for k in range(-5, 6)]


def _connect(path: str | Path) -> sqlite3.Connection:
    p = Path(path)
    if not p.is_file():
        raise ReportError(f"{path}: no such file")
    db = sqlite3.connect(f"file:{p.resolve()}?mode=ro", uri=True)
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{path}: not an SQLite database ({e})") from None
    if not {"campaigns", "cases", "buckets"} <= names:
        raise ReportError(f"{path}: not a campaign database (tables campaigns, cases and buckets expected)")
    return db


def load(path: str | Path, campaign: int | None = None) -> ReportData:
    """Aggregate campaign ``campaign`` (default: the newest) of the database at ``path``."""
    db = _connect(path)
    try:
        return _load(db, str(path), campaign)
    finally:
        db.close()


def _load(db: sqlite3.Connection, path: str, campaign: int | None) -> ReportData:
    camps = [CampaignRow(int(i), json.loads(a), float(s), f) for i, a, s, f in
             db.execute("SELECT id, args, started, finished FROM campaigns ORDER BY id")]
    if not camps:
        raise ReportError(f"{path}: the database holds no campaign")
    by_id = {c.id: c for c in camps}
    cid = campaign if campaign is not None else camps[-1].id
    if cid not in by_id:
        raise ReportError(f"{path}: no campaign {cid} (campaigns: {', '.join(str(c.id) for c in camps)})")
    has_done = "done" in {r[1] for r in db.execute("PRAGMA table_info(cases)")}
    _trend_totals(db, camps, has_done)
    ops, unsupported = _ops(db, camps, cid)
    instructions, alpha = _instructions(db, camps, cid)
    _trend_buckets(db, camps)
    cur = by_id[cid]
    outcomes: dict[str, dict[str, int]] = {}
    for t, o, n in db.execute("SELECT target, outcome, COUNT(*) FROM cases WHERE campaign = ? GROUP BY 1, 2 "
                              "ORDER BY 1, 2", (cid,)):
        outcomes.setdefault(t, {})[o] = int(n)
    targets = _target_order(cur, outcomes)
    per_minute = []
    if has_done:
        per_minute = [(int(m), t, int(n)) for m, t, n in db.execute(
            "SELECT CAST((done - ?) / 60 AS INTEGER), target, COUNT(*) FROM cases WHERE campaign = ? AND done IS NOT "
            "NULL GROUP BY 1, 2 ORDER BY 1", (cur.started, cid))]
    bins, backends = _timings(db, cid)
    cycles, pairs = _cycles(db, cid)
    buckets, more = _buckets(db, cid, camps)
    return ReportData(path, cur, camps, targets, has_done and bool(per_minute), per_minute, outcomes, backends, ops,
                      unsupported, instructions, alpha, _rtl_coverage(db, cid), bins, _compile_stats(db, cid),
                      cycles, pairs, buckets, more)


def _target_order(cur: CampaignRow, outcomes: dict[str, dict[str, int]]) -> list[str]:
    named = [t for t in cur.args.get("targets", []) if t in outcomes]
    return named + sorted(t for t in outcomes if t not in named)


def _trend_totals(db: sqlite3.Connection, camps: list[CampaignRow], has_done: bool) -> None:
    by_id = {c.id: c for c in camps}
    fail = ",".join(f"'{o}'" for o in FAILURES)
    done = "MAX(done)" if has_done else "NULL"
    for cid, n, p, f, u, last in db.execute(
            f"SELECT campaign, COUNT(*), SUM(outcome = 'pass'), SUM(outcome IN ({fail})), SUM(outcome = 'unsupported'), "
            f"{done} FROM cases GROUP BY campaign"):
        if cid in by_id:
            c = by_id[cid]
            c.cases, c.passed, c.failures, c.unsupported, c.last_done = int(n), int(p), int(f), int(u), last


def _ops(db: sqlite3.Connection, camps: list[CampaignRow], cid: int
         ) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, int]]]:
    """Operator:dtype coverage of ``cid`` and the distinct count of every campaign (one pass)."""
    by_id = {c.id: c for c in camps}
    ops: list[tuple[str, str, str, int]] = []
    for camp, t, v, n in db.execute("SELECT c.campaign, c.target, j.value, COUNT(*) FROM cases c, "
                                    "json_each(c.coverage, '$.ops') j GROUP BY 1, 2, 3"):
        if camp in by_id:
            by_id[camp].ops += 1
        if camp == cid:
            op, _, dt = str(v).partition(":")
            ops.append((t, op, dt, int(n)))
    uns = [(t, str(v), int(n)) for t, v, n in db.execute(
        "SELECT target, json_extract(coverage, '$.unsupported') u, COUNT(*) FROM cases WHERE campaign = ? AND "
        "outcome = 'unsupported' AND u IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC", (cid,))]
    return ops, uns


def _instructions(db: sqlite3.Connection, camps: list[CampaignRow], cid: int
                  ) -> tuple[list[tuple[str, str, int, int]], list[tuple[str, str, str, int]]]:
    by_id = {c.id: c for c in camps}
    instr: list[tuple[str, str, int, int]] = []
    for camp, t, k, n, uses in db.execute("SELECT c.campaign, c.target, j.key, COUNT(*), SUM(j.value) FROM cases c, "
                                          "json_each(c.coverage, '$.instructions') j GROUP BY 1, 2, 3"):
        if camp in by_id:
            by_id[camp].instructions += 1
        if camp == cid:
            instr.append((t, str(k), int(n), int(uses or 0)))
    alpha: list[tuple[str, str, str, int]] = []
    for camp, t, v, n in db.execute("SELECT c.campaign, c.target, j.value, COUNT(*) FROM cases c, "
                                    "json_each(c.coverage, '$.alpha') j GROUP BY 1, 2, 3"):
        if camp in by_id:
            by_id[camp].alpha += 1
        if camp == cid:
            key, _, val = str(v).partition("=")
            alpha.append((t, key, val, int(n)))
    return instr, alpha


def _trend_buckets(db: sqlite3.Connection, camps: list[CampaignRow]) -> None:
    by_id = {c.id: c for c in camps}
    for camp, b in db.execute("SELECT DISTINCT campaign, bucket FROM cases WHERE bucket IS NOT NULL"):
        if camp in by_id:
            by_id[camp].buckets.add(b)
    prev: CampaignRow | None = None
    for c in camps:
        if prev is not None:
            c.new = sorted(c.buckets - prev.buckets)
            c.vanished = sorted(prev.buckets - c.buckets)
        else:
            c.new = sorted(c.buckets)
        if c.finished is not None:
            prev = c


def _bin_case(col: str) -> str:
    edges = compile_bin_edges()
    arms = " ".join(f"WHEN {col} < {e!r} THEN {i}" for i, e in enumerate(edges))
    return f"CASE {arms} ELSE {len(edges)} END"


def _timings(db: sqlite3.Connection, cid: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Compile-time histogram bins with each part's seconds, and per-backend run totals (one json_each pass)."""
    rows = db.execute(
        "WITH t AS (SELECT target, stage, outcome, timings, json_extract(timings, '$.compile') AS c FROM cases "
        f"WHERE campaign = ?) SELECT t.target, {_bin_case('t.c')} AS b, j.key, COUNT(*), SUM(j.value), SUM(t.c), "
        "SUM(t.outcome = 'mismatch' AND t.stage = 'compare.' || substr(j.key, 5)), "
        "SUM(t.outcome = 'backend-crash' AND t.stage = j.key) "
        "FROM t, json_each(t.timings) j WHERE j.key = 'compile' OR j.key LIKE 'compile.%' OR j.key LIKE 'run.%' "
        "GROUP BY 1, 2, 3", (cid,)).fetchall()
    bins: dict[tuple[str, int], dict[str, Any]] = {}
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for t, b, key, n, s, ctot, mis, crash in rows:
        if key.startswith("run."):
            r = runs.setdefault((t, key[4:]), {"target": t, "backend": key[4:], "runs": 0, "seconds": 0.0,
                                               "mismatch": 0, "crash": 0})
            r["runs"] += int(n)
            r["seconds"] += float(s or 0)
            r["mismatch"] += int(mis or 0)
            r["crash"] += int(crash or 0)
            continue
        d = bins.setdefault((t, int(b)), {"target": t, "bin": int(b), "cases": 0, "parts": dict.fromkeys(COMPILE_PARTS,
                                                                                                         0.0)})
        if key == "compile":
            d["cases"] = int(n)
            d["total"] = float(s or 0)
            continue
        part = key[len("compile."):]
        if part == "M1":        # every compile that produced a program records M1 (with the other parts)
            d["with_parts"] = int(n)
            d["parts_total"] = float(ctot or 0)
        if part == "M5":
            d["parts"]["M5 (CSP)"] += float(s or 0)
        elif part == "solver":
            d["parts"]["solver"] += float(s or 0)
            d["parts"]["M5 (CSP)"] -= float(s or 0)
        elif part in d["parts"]:
            d["parts"][part] += float(s or 0)
    for d in bins.values():
        d["parts"]["M5 (CSP)"] = max(d["parts"]["M5 (CSP)"], 0.0)
    return sorted(bins.values(), key=lambda d: (d["target"], d["bin"])), sorted(runs.values(), key=lambda r: (
        r["target"], r["backend"]))


def _percentiles(db: sqlite3.Connection, expr: str, where: str, params: tuple, group: str
                 ) -> dict[str, dict[str, float]]:
    """p50, p90 and max of ``expr`` per ``group`` (window functions: SQLite sorts, Python sees three rows a group)."""
    out: dict[str, dict[str, float]] = {}
    for g, x, rn, n in db.execute(
            f"SELECT g, x, rn, n FROM (SELECT {group} AS g, {expr} AS x, ROW_NUMBER() OVER (PARTITION BY {group} "
            f"ORDER BY {expr}) AS rn, COUNT(*) OVER (PARTITION BY {group}) AS n FROM {where}) "
            "WHERE rn = (n + 1) / 2 OR rn = MAX(1, CAST(0.9 * n AS INTEGER)) OR rn = n", params):
        d = out.setdefault(g, {"n": int(n)})
        if rn == (n + 1) // 2:
            d["p50"] = float(x)
        if rn == max(1, int(0.9 * n)):
            d["p90"] = float(x)
        if rn == n:
            d["max"] = float(x)
    return out


def _compile_stats(db: sqlite3.Connection, cid: int) -> dict[str, dict[str, float]]:
    stats = _percentiles(db, "json_extract(timings, '$.compile')",
                         "cases WHERE campaign = ? AND json_extract(timings, '$.compile') IS NOT NULL", (cid,), "target")
    for t, s in db.execute("SELECT target, SUM(json_extract(timings, '$.compile')) FROM cases WHERE campaign = ? "
                           "GROUP BY 1", (cid,)):
        if t in stats:
            stats[t]["seconds"] = float(s or 0)
    return stats


def _cycles(db: sqlite3.Connection, cid: int) -> tuple[list[dict[str, Any]], dict[str, list[tuple[int, int, int]]]]:
    where = ("(SELECT c.target || ' ' || j.key AS tb, j.value AS v FROM cases c, json_each(c.cycles) j "
             "WHERE c.campaign = ? AND j.type = 'integer')")
    stats = _percentiles(db, "v", where, (cid,), "tb")
    cycles = []
    for tb, s in sorted(stats.items()):
        t, _, b = tb.partition(" ")
        cycles.append({"target": t, "backend": b, "cases": int(s["n"]), "p50": s["p50"], "p90": s["p90"],
                       "max": s["max"]})
    n_by_target = dict(db.execute("SELECT target, COUNT(*) FROM cases WHERE campaign = ? AND "
                                  "json_type(cycles, '$.rtl') = 'integer' AND json_type(cycles, '$.sim') = 'integer' "
                                  "GROUP BY 1", (cid,)).fetchall())
    pairs: dict[str, list[tuple[int, int, int]]] = {}
    for t, n in n_by_target.items():
        step = max(1, -(-int(n) // MAX_POINTS))
        pairs[t] = [(int(s), int(a), int(b)) for s, a, b in db.execute(
            "SELECT seed, json_extract(cycles, '$.sim') a, json_extract(cycles, '$.rtl') b FROM cases WHERE "
            "campaign = ? AND target = ? AND json_type(cycles, '$.rtl') = 'integer' AND "
            "json_type(cycles, '$.sim') = 'integer' AND seed % ? = 0 ORDER BY seed LIMIT ?", (cid, t, step, MAX_POINTS))]
    return cycles, pairs


def _buckets(db: sqlite3.Connection, cid: int, camps: list[CampaignRow]) -> tuple[list[dict[str, Any]], int]:
    """The buckets of campaign ``cid``, newest first, with their reduced reproducer's kernel when on disk."""
    new = set(next(c for c in camps if c.id == cid).new)
    total = db.execute("SELECT COUNT(DISTINCT bucket) FROM cases WHERE campaign = ? AND bucket IS NOT NULL",
                       (cid,)).fetchone()[0]
    rows = db.execute(
        "SELECT c.bucket, COUNT(*), MIN(c.seed), c.outcome, b.campaign, b.target, b.seed, b.first_seen, b.reproducer, "
        "b.replay, (SELECT reason FROM cases r WHERE r.campaign = c.campaign AND r.bucket = c.bucket LIMIT 1) "
        "FROM cases c LEFT JOIN buckets b ON b.signature = c.bucket WHERE c.campaign = ? AND c.bucket IS NOT NULL "
        "GROUP BY c.bucket ORDER BY b.first_seen DESC, c.bucket LIMIT ?", (cid, MAX_BUCKETS)).fetchall()
    out = []
    for sig, n, seed, outcome, bc, bt, bs, first, repro, replay, reason in rows:
        out.append({"signature": sig, "cases": int(n), "first_seed_here": int(seed), "outcome": outcome,
                    "first_campaign": bc, "target": bt, "seed": bs, "first_seen": first, "reproducer": repro,
                    "replay": replay, "reason": reason, "new": sig in new, "kernel": _kernel_text(repro)})
    return out, int(total) - len(out)


def _kernel_text(folder: str | None, limit: int = 6000) -> str | None:
    """The reduced kernel (``kernel.hlo``) of a reproducer folder, when it is on this machine."""
    if not folder:
        return None
    p = Path(folder) / "kernel.hlo"
    try:
        text = p.read_text()
    except OSError:
        return None
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters in {p})\n"


def _rtl_coverage(db: sqlite3.Connection, cid: int) -> dict[str, Any] | None:
    """The RTL code coverage rows of ``cid`` from a table named ``rtl_coverage`` (design, kind, covered, total
    per campaign, as the RTL coverage collection writes them); None when the database has no such table."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "rtl_coverage" not in names:
        return None
    cols = [r[1] for r in db.execute("PRAGMA table_info(rtl_coverage)")]
    where = " WHERE campaign = ?" if "campaign" in cols else ""
    rows = db.execute(f"SELECT * FROM rtl_coverage{where}", (cid,) if where else ()).fetchall()
    return {"table": "rtl_coverage", "columns": cols, "rows": [list(r) for r in rows]}
