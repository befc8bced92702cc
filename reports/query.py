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

from .cache import TrendCache

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


def load(path: str | Path, campaign: int | None = None, cache: bool = True) -> ReportData:
    """Aggregate campaign ``campaign`` (default: the newest) of the database at ``path``; with ``cache``
    the finished campaigns' trend totals are kept in (and read from) :class:`reports.cache.TrendCache`."""
    db = _connect(path)
    try:
        return _load(db, str(path), campaign, cache)
    finally:
        db.close()


def _load(db: sqlite3.Connection, path: str, campaign: int | None, use_cache: bool) -> ReportData:
    camps = [CampaignRow(int(i), json.loads(a), float(s), f) for i, a, s, f in
             db.execute("SELECT id, args, started, finished FROM campaigns ORDER BY id")]
    if not camps:
        raise ReportError(f"{path}: the database holds no campaign")
    by_id = {c.id: c for c in camps}
    cid = campaign if campaign is not None else camps[-1].id
    if cid not in by_id:
        raise ReportError(f"{path}: no campaign {cid} (campaigns: {', '.join(str(c.id) for c in camps)})")
    has_done = "done" in {r[1] for r in db.execute("PRAGMA table_info(cases)")}
    for i, n in db.execute("SELECT campaign, COUNT(*) FROM cases GROUP BY campaign"):   # the primary key's index
        if i in by_id:
            by_id[i].cases = int(n)
    cache = TrendCache(path) if use_cache else None
    fresh = [c for c in camps if c.id == cid or cache is None or not cache.fill(c)]
    ids = ",".join(str(c.id) for c in fresh)
    _trend_totals(db, fresh, has_done, ids)
    ops, instructions, alpha = _items(db, fresh, cid, ids)
    _trend_buckets(db, fresh, ids)
    _new_vanished(camps)
    if cache is not None:
        for c in fresh:
            cache.put(c)
        cache.save()
    cur = by_id[cid]
    outcomes: dict[str, dict[str, int]] = {}
    fails: dict[tuple[str, str], dict[str, int]] = {}      # (target, backend) -> outcome -> cases
    for t, o, stage, n in db.execute("SELECT target, outcome, stage, COUNT(*) FROM cases WHERE campaign = ? "
                                     "GROUP BY 1, 2, 3", (cid,)):
        outcomes.setdefault(t, {})[o] = outcomes.get(t, {}).get(o, 0) + int(n)
        if o in ("mismatch", "backend-crash") and stage:
            fails.setdefault((t, str(stage).split(".", 1)[-1]), {})[o] = int(n)
    targets = _target_order(cur, outcomes)
    per_minute = []
    if has_done:
        per_minute = [(int(m), t, int(n)) for m, t, n in db.execute(
            "SELECT CAST((done - ?) / 60 AS INTEGER), target, COUNT(*) FROM cases WHERE campaign = ? AND done IS NOT "
            "NULL GROUP BY 1, 2 ORDER BY 1", (cur.started, cid))]
    unsupported = [(t, str(v), int(n)) for t, v, n in db.execute(
        "SELECT target, json_extract(coverage, '$.unsupported') u, COUNT(*) FROM cases WHERE campaign = ? AND "
        "outcome = 'unsupported' AND u IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC", (cid,))]
    cycles, pairs = _cycles(db, cid)
    bins, backends = _timings(db, cid, fails, {(c["target"], c["backend"]) for c in cycles})
    buckets, more = _buckets(db, cid, camps)
    return ReportData(path, cur, camps, targets, has_done and bool(per_minute), per_minute, outcomes, backends, ops,
                      unsupported, instructions, alpha, _rtl_coverage(db, cid), bins, _compile_stats(db, cid, bins),
                      cycles, pairs, buckets, more)


def _target_order(cur: CampaignRow, outcomes: dict[str, dict[str, int]]) -> list[str]:
    named = [t for t in cur.args.get("targets", []) if t in outcomes]
    return named + sorted(t for t in outcomes if t not in named)


def _trend_totals(db: sqlite3.Connection, camps: list[CampaignRow], has_done: bool, ids: str) -> None:
    by_id = {c.id: c for c in camps}
    fail = ",".join(f"'{o}'" for o in FAILURES)
    done = "MAX(done)" if has_done else "NULL"
    for cid, n, p, f, u, last in db.execute(
            f"SELECT campaign, COUNT(*), SUM(outcome = 'pass'), SUM(outcome IN ({fail})), SUM(outcome = 'unsupported'), "
            f"{done} FROM cases WHERE campaign IN ({ids}) GROUP BY campaign"):
        c = by_id[cid]
        c.cases, c.passed, c.failures, c.unsupported, c.last_done = int(n), int(p), int(f), int(u), last


def _items(db: sqlite3.Connection, camps: list[CampaignRow], cid: int, ids: str
           ) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, int, int]], list[tuple[str, str, str, int]]]:
    """Coverage items of ``cid`` (operator:dtype, instruction, α value; cases each) and the distinct count of
    each kind for every campaign of ``ids`` (one grouped pass per kind)."""
    by_id = {c.id: c for c in camps}
    ops: list[tuple[str, str, str, int]] = []
    instr: list[tuple[str, str, int, int]] = []
    alpha: list[tuple[str, str, str, int]] = []
    for camp, t, v, n in db.execute("SELECT c.campaign, c.target, j.value, COUNT(*) FROM cases c, json_each(c.coverage, "
                                    f"'$.ops') j WHERE c.campaign IN ({ids}) GROUP BY 1, 2, 3"):
        by_id[camp].ops += 1
        if camp == cid:
            op, _, dt = str(v).partition(":")
            ops.append((t, op, dt, int(n)))
    for camp, t, k, n, uses in db.execute("SELECT c.campaign, c.target, j.key, COUNT(*), SUM(j.value) FROM cases c, "
                                          f"json_each(c.coverage, '$.instructions') j WHERE c.campaign IN ({ids}) "
                                          "GROUP BY 1, 2, 3"):
        by_id[camp].instructions += 1
        if camp == cid:
            instr.append((t, str(k), int(n), int(uses or 0)))
    for camp, t, v, n in db.execute("SELECT c.campaign, c.target, j.value, COUNT(*) FROM cases c, json_each(c.coverage, "
                                    f"'$.alpha') j WHERE c.campaign IN ({ids}) GROUP BY 1, 2, 3"):
        by_id[camp].alpha += 1
        if camp == cid:
            key, _, val = str(v).partition("=")
            alpha.append((t, key, val, int(n)))
    return ops, instr, alpha


def _trend_buckets(db: sqlite3.Connection, camps: list[CampaignRow], ids: str) -> None:
    by_id = {c.id: c for c in camps}
    for camp, b in db.execute(f"SELECT DISTINCT campaign, bucket FROM cases WHERE campaign IN ({ids}) AND bucket IS "
                              "NOT NULL"):
        by_id[camp].buckets.add(b)


def _new_vanished(camps: list[CampaignRow]) -> None:
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


#: the compile timing keys and the part each is drawn as (``compile.solver`` is taken out of M5)
_PART_KEYS = {"M1": "M1", "M2": "M2", "M3": "M3", "M4": "M4", "M5": "M5 (CSP)", "solver": "solver", "M6": "M6",
              "gen": "gen", "proofs": "proofs"}


def _timings(db: sqlite3.Connection, cid: int, fails: dict[tuple[str, str], dict[str, int]],
             measured: set[tuple[str, str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Compile-time histogram bins with each part's seconds, and per-backend run totals of the backends that
    reported cycles (``measured``) or failed (``fails``: a backend failing every case reports none). Named keys
    are read with json_extract (SQLite reuses one parse of a row's JSON for all of them)."""
    parts = ", ".join(f"SUM(json_extract(timings, '$.\"compile.{k}\"'))" for k in _PART_KEYS)
    rows = db.execute(
        f"WITH t AS MATERIALIZED (SELECT target, timings, json_extract(timings, '$.compile') AS c, "
        "json_extract(timings, '$.\"compile.M1\"') IS NOT NULL AS p FROM cases WHERE campaign = ?) "
        f"SELECT target, {_bin_case('c')}, COUNT(*), SUM(c), SUM(p), SUM(CASE WHEN p THEN c END), {parts} "
        "FROM t WHERE c IS NOT NULL GROUP BY 1, 2", (cid,)).fetchall()
    bins = []
    for t, b, n, tot, n_parts, parts_tot, *secs in rows:
        d = {"target": t, "bin": int(b), "cases": int(n), "total": float(tot or 0), "with_parts": int(n_parts or 0),
             "parts_total": float(parts_tot or 0), "parts": dict.fromkeys(COMPILE_PARTS, 0.0)}
        for k, v in zip(_PART_KEYS.values(), secs, strict=True):
            d["parts"][k] += float(v or 0)
        d["parts"]["M5 (CSP)"] = max(d["parts"]["M5 (CSP)"] - d["parts"]["solver"], 0.0)
        bins.append(d)
    names = measured | set(fails) | {(t, str(k)) for t, k in db.execute(   # with those that count no cycles (null)
        "SELECT DISTINCT c.target, j.key FROM cases c, json_each(c.cycles) j WHERE c.campaign = ?", (cid,))}
    runs = []
    for t in sorted({t for t, _ in names}):
        mine = sorted(b for tt, b in names if tt == t)
        cols = ", ".join(f"COUNT(json_extract(timings, '$.\"run.{b}\"')), SUM(json_extract(timings, '$.\"run.{b}\"'))"
                         for b in mine)
        row = db.execute(f"SELECT {cols} FROM cases WHERE campaign = ? AND target = ?", (cid, t)).fetchone()
        for i, b in enumerate(mine):
            f = fails.get((t, b), {})
            runs.append({"target": t, "backend": b, "runs": int(row[2 * i] or 0), "seconds": float(row[2 * i + 1] or 0),
                         "mismatch": f.get("mismatch", 0), "crash": f.get("backend-crash", 0)})
    return sorted(bins, key=lambda d: (d["target"], d["bin"])), runs


def _percentiles(db: sqlite3.Connection, source: str, params: tuple) -> dict[str, dict[str, float]]:
    """n, p50, p90 and max of ``x`` per group ``g`` of the query ``source`` (window functions: SQLite sorts,
    Python sees three rows a group)."""
    out: dict[str, dict[str, float]] = {}
    for g, x, rn, n in db.execute(
            f"WITH s AS MATERIALIZED ({source}) SELECT g, x, rn, n FROM (SELECT g, x, ROW_NUMBER() OVER (PARTITION BY g "
            "ORDER BY x) AS rn, COUNT(*) OVER (PARTITION BY g) AS n FROM s WHERE x IS NOT NULL) "
            "WHERE rn = (n + 1) / 2 OR rn = MAX(1, CAST(0.9 * n AS INTEGER)) OR rn = n", params):
        d = out.setdefault(g, {"n": int(n)})
        if rn == (n + 1) // 2:
            d["p50"] = float(x)
        if rn == max(1, int(0.9 * n)):
            d["p90"] = float(x)
        if rn == n:
            d["max"] = float(x)
    return out


def _compile_stats(db: sqlite3.Connection, cid: int, bins: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    stats = _percentiles(db, "SELECT target AS g, json_extract(timings, '$.compile') AS x FROM cases WHERE campaign = ?",
                         (cid,))
    for t, s in stats.items():
        s["seconds"] = sum(b["total"] for b in bins if b["target"] == t)
    return stats


def _cycles(db: sqlite3.Connection, cid: int) -> tuple[list[dict[str, Any]], dict[str, list[tuple[int, int, int]]]]:
    stats = _percentiles(db, "SELECT c.target || ' ' || j.key AS g, j.value AS x FROM cases c, json_each(c.cycles) j "
                             "WHERE c.campaign = ?", (cid,))    # null cycles (a backend that counts none) drop out
    cycles = []
    for tb, s in sorted(stats.items()):
        t, _, b = tb.partition(" ")
        cycles.append({"target": t, "backend": b, "cases": int(s["n"]), "p50": s["p50"], "p90": s["p90"],
                       "max": s["max"]})
    pairs: dict[str, list[tuple[int, int, int]]] = {}
    for t, n in ((c["target"], c["cases"]) for c in cycles if c["backend"] == "rtl"):
        step = max(1, -(-int(n) // MAX_POINTS))      # every step-th seed: a deterministic sample
        pairs[t] = [(int(s), int(a), int(b)) for s, a, b in db.execute(
            "SELECT seed, json_extract(cycles, '$.sim') a, json_extract(cycles, '$.rtl') b FROM cases WHERE "
            "campaign = ? AND target = ? AND json_type(cycles, '$.rtl') = 'integer' AND "
            "json_type(cycles, '$.sim') = 'integer' AND seed % ? = 0 ORDER BY seed LIMIT ?", (cid, t, step, MAX_POINTS))]
    return cycles, pairs


def _buckets(db: sqlite3.Connection, cid: int, camps: list[CampaignRow]) -> tuple[list[dict[str, Any]], int]:
    """The buckets of campaign ``cid``, newest first, with their reduced reproducer's kernel when on disk."""
    new = set(next(c for c in camps if c.id == cid).new)
    total = len(next(c for c in camps if c.id == cid).buckets)
    rows = db.execute(
        # MIN(seed) makes SQLite take the bare columns (outcome, reason) from the bucket's first case
        "SELECT c.bucket, COUNT(*), MIN(c.seed), c.outcome, b.campaign, b.target, b.seed, b.first_seen, b.reproducer, "
        "b.replay, c.reason, c.target, c.generator FROM cases c LEFT JOIN buckets b ON b.signature = c.bucket WHERE c.campaign = ? AND "
        "c.bucket IS NOT NULL GROUP BY c.bucket ORDER BY b.first_seen DESC, c.bucket LIMIT ?",
        (cid, MAX_BUCKETS)).fetchall()
    out = []
    args = next(c for c in camps if c.id == cid).args
    for sig, n, seed, outcome, bc, bt, bs, first, repro, replay, reason, target, gen in rows:
        out.append({"signature": sig, "cases": int(n), "first_seed_here": int(seed), "outcome": outcome,
                    "first_campaign": bc, "target": bt, "seed": bs, "first_seen": first, "reproducer": repro,
                    "replay": replay, "reason": reason, "new": sig in new, "kernel": _kernel_text(repro),
                    "rerun": _rerun(args, target, int(seed), gen)})
    return out, int(total) - len(out)


def _rerun(args: dict[str, Any], target: str, seed: int, generator: str) -> str:
    """The command that runs one case again exactly (same target, seed, generator and campaign options)."""
    extra = [f"--backend {','.join(args['backends'])}"] if args.get("backends") else []
    extra += [f"--max-nodes {args['max_nodes']}"] if "max_nodes" in args else []
    extra += [f"--proofs {args['proofs']}"] if "proofs" in args else []
    return " ".join(["accv fuzz", f"--target {target}", f"--seed {seed}", "--cases 1", f"--generator {generator}",
                     *extra, "--db build/fuzz/rerun.sqlite"])


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
